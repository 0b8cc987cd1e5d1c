package table

import (
	"context"
	"fmt"

	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
)

// changeSink is the change data files of a DML attempt on a table whose change data
// feed is on: dml.ChangeSink (which commits get change files, and what goes in
// them), plus the reads at finish of the rows it needs from the table's files —
// the deleted rows found by position alone, and the rows written before the
// attempts (a replaceWhere overwrite's) — which need the attempt's snapshot,
// touched files and deletion vectors.
type changeSink struct {
	*dml.ChangeSink
	a *dmlAttempt
}

// newChangeSink returns the change sink of an attempt on a table whose change data
// feed is on, writing with set (the command's file settings).
func newChangeSink(a *dmlAttempt, set writeset.Settings) *changeSink {
	return &changeSink{ChangeSink: dml.NewChangeSink(a.t.store, a.snap.view, set, a.mem), a: a}
}

// flushPending reads, when the commit needs change files, the deleted rows of the
// touched files not rewritten — every live row of files removed whole without being
// read, the pending positions of the others — and writes them as deletes.
func (c *changeSink) flushPending(ctx context.Context) error {
	a := c.a
	if !c.Needed() {
		return nil
	}
	idx := map[string]int{}
	for i, add := range a.snap.log.Files() {
		idx[add.Key()] = i
	}
	var tasks []*fileTask
	files := map[*fileTask]*dml.Touched{}
	for _, f := range a.touched.All() {
		k := f.Add.Key()
		if bm, done := c.Pending(k); done || (!f.Whole && bm == nil) {
			continue
		}
		i, ok := idx[k]
		if !ok {
			return fmt.Errorf("table: internal error: touched file %s not in the snapshot", f.Add.Path)
		}
		task, err := a.snap.taskFor(i)
		if err != nil {
			return err
		}
		tasks = append(tasks, task)
		files[task] = f
	}
	if len(tasks) == 0 {
		return nil
	}
	sc, err := a.snap.Scan(ctx, WithAllocator(a.mem))
	if err != nil {
		return err
	}
	tg := sc.target()
	return a.forEachTask(ctx, "changes", tasks, func(ctx context.Context, task *fileTask) error {
		f := files[task]
		old, err := a.loadDV(ctx, task.Add)
		if err != nil {
			return err
		}
		bm, _ := c.Pending(task.Add.Key())
		_, err = tg.ReadLive(ctx, task, old, true, nil, func(b dml.LiveBatch) error {
			return c.DeleteSelected(ctx, b, func(i int) bool { return f.Whole || bm.Contains(uint64(b.Pos[i])) })
		})
		return err
	})
}

// flushWritten reads, when the commit needs change files, the data files the
// command wrote before its attempts (the new rows of a replaceWhere overwrite,
// preWritten) and writes their rows as inserts: a reader takes a version's changes
// from its change files alone when it has any.
func (c *changeSink) flushWritten(ctx context.Context, adds []*log.Add) error {
	a := c.a
	if !c.Needed() || len(adds) == 0 {
		return nil
	}
	tasks := make([]*fileTask, len(adds))
	for i, ad := range adds {
		path, err := ad.DecodedPath()
		if err != nil {
			return fmt.Errorf("table: written file %q: %w", ad.Path, err)
		}
		parts, err := a.snap.view.PartitionValues(ad)
		if err != nil {
			return fmt.Errorf("table: written file %s: %w", ad.Path, err)
		}
		tasks[i] = &fileTask{Idx: -1, Add: ad, Path: path, PartVals: parts,
			Verdict: skipping.FileVerdict{Verdict: skipping.MightMatch, Level: skipping.NoLevel, Reason: skipping.ReasonNoFilter}}
	}
	sc, err := a.snap.Scan(ctx, WithAllocator(a.mem))
	if err != nil {
		return err
	}
	tg := sc.target()
	return a.forEachTask(ctx, "changes", tasks, func(ctx context.Context, task *fileTask) error {
		_, err := tg.ReadLive(ctx, task, nil, true, nil, func(b dml.LiveBatch) error {
			return c.Insert(ctx, b.Rec)
		})
		return err
	})
}
