package table

import (
	"context"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/value"
)

// changeSink records, on a table whose change data feed is on
// (View.WritesChangeData), the rows a DML command changes in change data files
// under _change_data/ (PROTOCOL.md "Change Data Files"), committed as cdc actions
// in the command's commit. The DML engine feeds it as it finds the rows (inserted,
// deleted, update pre- and postimages) and consults it at the points of finish
// where files are classified, rewritten and closed; it never changes what the
// command writes to the table.
//
// Which commits get change files follows Delta Spark, whose readers (and
// delta-kernel-rs's) read a version with cdc actions from them alone and derive the
// changes of any other version from its add and remove actions (new files: inserts;
// removed files: deletes; a file whose deletion vector grew: the newly deleted rows
// are deletes). A commit needs change files exactly when those derived rows would be
// wrong:
//
//   - it updates rows (the update is a pre- and a postimage, not a delete and an
//     insert), or
//   - it rewrites a file copy-on-write (the copied rows would read as deleted and
//     inserted again).
//
// Otherwise — rows deleted by deletion vectors or with whole files, rows inserted in
// new files — the commit records no change file, as Spark's DELETE with deletion
// vectors and its inserts-only MERGE do not. When it needs them, every row it
// changed goes into them: inserts and update images as they are produced, deleted
// rows with the values read to find them, or, for rows found by position alone (a
// DELETE reads only its predicate's columns; whole files are removed unread), read
// again from their files at finish (copy-on-write rewrites deliver them on the way);
// the new rows of a replaceWhere overwrite, written before its attempts, are read
// back from their files as inserts.
//
// Rows produced before the command knows whether it needs change files are written
// all the same and discarded (with the files) when it turns out not to.
//
// The sink is safe for concurrent use by the goroutines that read files.
type changeSink struct {
	a      *dmlAttempt
	schema *arrow.Schema // the table's logical columns and _change_type
	w      *dml.FileSink // the change data files (writeset.NewChanges)

	mu      sync.Mutex
	updates int64                        // update images recorded (pairs)
	pending map[string]*roaring64.Bitmap // by add.Key(): deleted rows whose values are not written yet
	decided bool
	needed  bool
	done    map[string]bool // files whose pending rows were written (by add.Key())
	adds    []*log.CDC      // after finish
}

// newChangeSink returns the change sink of an attempt on a table whose change data
// feed is on, writing with set (the command's file settings).
func newChangeSink(a *dmlAttempt, set writeset.Settings) *changeSink {
	v := a.snap.view
	return &changeSink{a: a, schema: writeset.ChangeSchema(v),
		w:       dml.NewChangeFileSink(a.t.store, v, set),
		pending: map[string]*roaring64.Bitmap{}, done: map[string]bool{}}
}

func (c *changeSink) start(ctx context.Context) error { return c.w.Start(ctx) }

// emit writes rows (the table's logical columns, in any batch the conformer
// accepts) with _change_type kind.
func (c *changeSink) emit(ctx context.Context, rows arrow.RecordBatch, kind string) error {
	n := rows.NumRows()
	if n == 0 {
		return nil
	}
	typ, err := datafile.ConstantColumn(value.String(kind), arrow.BinaryTypes.String, int(n), c.a.mem)
	if err != nil {
		return err
	}
	defer typ.Release()
	fields := append(append([]arrow.Field(nil), rows.Schema().Fields()...), tableview.ChangeTypeField)
	cols := append(append([]arrow.Array(nil), rows.Columns()...), typ)
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	defer rec.Release()
	return c.w.Write(ctx, rec)
}

// insert records inserted rows.
func (c *changeSink) insert(ctx context.Context, rows arrow.RecordBatch) error {
	return c.emit(ctx, rows, tableview.ChangeInsert)
}

// update records updated rows: pre holds them as they were, post as they are now
// (row i of one is row i of the other).
func (c *changeSink) update(ctx context.Context, pre, post arrow.RecordBatch) error {
	if pre.NumRows() != post.NumRows() {
		return fmt.Errorf("table: internal error: %d update preimages for %d postimages", pre.NumRows(), post.NumRows())
	}
	if err := c.emit(ctx, pre, tableview.ChangeUpdatePreimage); err != nil {
		return err
	}
	if err := c.emit(ctx, post, tableview.ChangeUpdatePostimage); err != nil {
		return err
	}
	c.mu.Lock()
	c.updates += pre.NumRows()
	c.mu.Unlock()
	return nil
}

// delete records deleted rows whose values the caller has.
func (c *changeSink) delete(ctx context.Context, rows arrow.RecordBatch) error {
	return c.emit(ctx, rows, tableview.ChangeDelete)
}

// deletedAt records that the rows at positions pos of f are deleted, their values
// to be read at finish if the commit needs change files.
func (c *changeSink) deletedAt(f *touchedFile, pos []int64) {
	if len(pos) == 0 {
		return
	}
	k := f.add.Key()
	c.mu.Lock()
	defer c.mu.Unlock()
	bm := c.pending[k]
	if bm == nil {
		bm = roaring64.New()
		c.pending[k] = bm
	}
	for _, p := range pos {
		bm.Add(uint64(p))
	}
}

// decide settles whether the commit needs change files, once finish has classified
// the touched files: rewrite are those it rewrites copy-on-write (rewriteFiles then
// hands their deleted rows to rewritten).
func (c *changeSink) decide(rewrite []*touchedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.decided = true
	c.needed = c.updates > 0 || len(rewrite) > 0
	for _, f := range rewrite {
		c.done[f.add.Key()] = true
	}
}

// rewritten takes a batch of a file being rewritten copy-on-write (keep[i]: row i
// is copied) and writes the deleted rows among the others as deletes; the rest of
// them were recorded already (update images, deletes with values).
func (c *changeSink) rewritten(ctx context.Context, f *touchedFile, b dml.LiveBatch, keep []bool) error {
	c.mu.Lock()
	needed, bm := c.needed, c.pending[f.add.Key()]
	c.mu.Unlock()
	if !needed || bm == nil {
		return nil
	}
	return c.emitPending(ctx, b, func(i int) bool { return !keep[i] && bm.Contains(uint64(b.Pos[i])) })
}

// emitPending writes the rows i of b that sel selects as deletes.
func (c *changeSink) emitPending(ctx context.Context, b dml.LiveBatch, sel func(i int) bool) error {
	mask := make([]bool, len(b.Pos))
	any := false
	for i := range mask {
		mask[i] = sel(i)
		any = any || mask[i]
	}
	if !any {
		return nil
	}
	rows, err := dml.FilterRows(ctx, b.Rec, mask, c.a.mem)
	if err != nil {
		return err
	}
	defer rows.Release()
	return c.delete(ctx, rows)
}

// flushPending reads, when the commit needs change files, the deleted rows of the
// touched files not rewritten — every live row of files removed whole without being
// read, the pending positions of the others — and writes them as deletes.
func (c *changeSink) flushPending(ctx context.Context) error {
	a := c.a
	c.mu.Lock()
	needed := c.needed
	c.mu.Unlock()
	if !needed {
		return nil
	}
	idx := map[string]int{}
	for i, add := range a.snap.log.Files() {
		idx[add.Key()] = i
	}
	var tasks []*fileTask
	files := map[*fileTask]*touchedFile{}
	for k, f := range a.touched {
		if c.done[k] || (!f.whole && c.pending[k] == nil) {
			continue
		}
		i, ok := idx[k]
		if !ok {
			return fmt.Errorf("table: internal error: touched file %s not in the snapshot", f.add.Path)
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
	return a.forEachTask(ctx, "changes", tasks, func(ctx context.Context, task *fileTask) error {
		f := files[task]
		old, err := a.loadDV(ctx, task.Add)
		if err != nil {
			return err
		}
		bm := c.pending[task.Add.Key()]
		_, err = sc.target().ReadLive(ctx, task, old, true, nil, func(b dml.LiveBatch) error {
			return c.emitPending(ctx, b, func(i int) bool { return f.whole || bm.Contains(uint64(b.Pos[i])) })
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
	c.mu.Lock()
	needed := c.needed
	c.mu.Unlock()
	if !needed || len(adds) == 0 {
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
	return a.forEachTask(ctx, "changes", tasks, func(ctx context.Context, task *fileTask) error {
		_, err := sc.target().ReadLive(ctx, task, nil, true, nil, func(b dml.LiveBatch) error {
			return c.insert(ctx, b.Rec)
		})
		return err
	})
}

// finish closes the change data files and returns their cdc actions (none when the
// commit does not need them: what was written is discarded).
func (c *changeSink) finish(ctx context.Context) ([]*log.CDC, error) {
	if !c.decided {
		return nil, fmt.Errorf("table: internal error: change data files closed before the commit's files were classified")
	}
	if !c.needed {
		c.w.Discard()
		return nil, nil
	}
	adds, err := c.w.Finish(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*log.CDC, len(adds))
	for i, ad := range adds {
		out[i] = &log.CDC{Path: ad.Path, PartitionValues: ad.PartitionValues, Size: ad.Size, Tags: ad.Tags}
	}
	c.adds = out
	return out, nil
}

// discard deletes the change data files written (best effort).
func (c *changeSink) discard() { c.w.Discard() }
