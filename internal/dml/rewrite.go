package dml

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
)

// rewriteFiles copies the surviving live rows of the given files (copy-on-write):
// a clustered file's to files of its own, with the updated rows held for it
// (rewriteOwn), the others' to the row sink.
func (a *Attempt) rewriteFiles(ctx context.Context, files []*Touched, tasks []*scanexec.Task) error {
	tg, err := a.snap.Whole(ctx, a.mem)
	if err != nil {
		return err
	}
	byTask := map[*scanexec.Task]*Touched{}
	for i, t := range tasks {
		byTask[t] = files[i]
	}
	var copied int64
	var mu sync.Mutex
	err = a.forEachTask(ctx, "rewrite", tasks, func(ctx context.Context, task *scanexec.Task) error {
		f := byTask[task]
		old, err := a.loadDV(ctx, task.Add)
		if err != nil {
			return err
		}
		if a.layout.Keeps(task.Add) {
			n, err := a.rewriteOwn(ctx, tg, task, f, old)
			mu.Lock()
			copied += n
			mu.Unlock()
			return err
		}
		var n int64
		_, err = tg.ReadLive(ctx, task, old, true, nil, func(b LiveBatch) error {
			keep := make([]bool, len(b.Pos))
			any := false
			for i, p := range b.Pos {
				keep[i] = f.Keeps(p)
				any = any || keep[i]
			}
			if a.changes != nil {
				if err := a.changes.Rewritten(ctx, f.Add.Key(), b, keep); err != nil {
					return err
				}
			}
			if !any {
				return nil
			}
			out, err := FilterRows(ctx, b.Rec, keep, a.mem)
			if err != nil {
				return err
			}
			defer out.Release()
			n += out.NumRows()
			return a.sink.Write(ctx, out)
		})
		mu.Lock()
		copied += n
		mu.Unlock()
		return err
	})
	a.res.RowsCopied += copied
	return err
}

// writeUpdated writes the updated rows rows of file f: row k of rows replaces the
// live row oldIdx[k] of old, at position pos[k] of the file. Under copy-on-write,
// rows of a clustered file whose clustering columns and partition values did not
// change are held to be written back in place (Layout); the others go to the row
// sink as new rows.
func (a *Attempt) writeUpdated(ctx context.Context, f *Touched, old arrow.RecordBatch, oldIdx []int, pos []int64, rows arrow.RecordBatch) error {
	l := a.layout
	if l == nil || a.useDV || a.opts.DryRun || !l.Keeps(f.Add) || rows.NumRows() == 0 {
		return a.sink.Write(ctx, rows)
	}
	cols := l.ColumnsOf(ctx, f.Add)
	if !cols.OK {
		return a.sink.Write(ctx, rows)
	}
	n := int(rows.NumRows())
	home := make([]bool, n)
	for k := range home {
		home[k] = true
	}
	for _, name := range cols.Names {
		oi, ni := scanexec.FieldIndexFold(old.Schema(), name), scanexec.FieldIndexFold(rows.Schema(), name)
		if oi < 0 || ni < 0 {
			return a.sink.Write(ctx, rows)
		}
		oc, nc := old.Column(oi), rows.Column(ni)
		if !arrow.TypeEqual(oc.DataType(), nc.DataType()) {
			return a.sink.Write(ctx, rows)
		}
		for k := range home {
			if home[k] && !array.SliceEqual(oc, int64(oldIdx[k]), int64(oldIdx[k])+1, nc, int64(k), int64(k)+1) {
				home[k] = false
			}
		}
	}
	// The rows held for the file's own rewrite (rewriteOwn) do not pass through the
	// row sink, which checks the write rules: they are checked here.
	rules, err := a.view.WriteRules()
	if err != nil {
		return err
	}
	if err := rules.Verify(rows); err != nil {
		return err
	}
	taken, err := l.HoldHome(ctx, f.Add.Key(), rows, pos, home, a.mem)
	if err != nil {
		return err
	}
	moved := make([]bool, n)
	any := false
	for k, t := range taken {
		moved[k] = !t
		any = any || moved[k]
	}
	if !any {
		return nil
	}
	out, err := FilterRows(ctx, rows, moved, a.mem)
	if err != nil {
		return err
	}
	defer out.Release()
	return a.sink.Write(ctx, out)
}

// rewriteOwn rewrites one clustered file under copy-on-write into files of its
// own (Layout): its live rows that the command keeps, and the updated rows held
// for it in the places of the rows they replace, in the file's order and in its
// row groups (each ends where the input's did, so row-group skipping stays as
// fine as the clustering run made it), with its directory, partition values,
// clustering tags and clusteringProvider. It returns the rows copied unchanged.
func (a *Attempt) rewriteOwn(ctx context.Context, tg *Target, task *scanexec.Task, f *Touched, old *dv.Deleted) (int64, error) {
	ws, ok := a.sink.(*FileSink)
	if !ok {
		return 0, fmt.Errorf("table: internal error: rewriting %s without a file writer", f.Add.Path)
	}
	dec, err := f.Add.DecodedPath()
	if err != nil {
		return 0, fmt.Errorf("table: %w", err)
	}
	place := datafile.FileOptions{Dir: PathDir(dec), LogDir: PathDir(f.Add.Path), PartitionValues: f.Add.PartitionValues,
		Tags: LayoutTags(f.Add), ClusteringProvider: f.Add.ClusteringProvider}
	limit := max(OwnFileLimit*ws.Writer().Output().TargetFileSize(), f.Add.Size+f.Add.Size/4)
	// Row groups end where the input's end (below), never by size.
	place.RowGroupBytes = limit
	out := NewOwnFiles(ws.Writer().Output(), place, limit)
	lastRG := -1
	conf := conform.New(a.view.Logical(), a.mem)
	home, err := SortedHome(ctx, a.layout.TakeHome(f.Add.Key()), conf, a.mem)
	if err != nil {
		return 0, err
	}
	if home != nil {
		defer home.Rec.Release()
	}
	var copied int64
	_, err = tg.ReadLive(ctx, task, old, true, nil, func(b LiveBatch) error {
		if b.RG != lastRG && lastRG >= 0 {
			if err := out.EndRowGroup(); err != nil {
				return err
			}
		}
		lastRG = b.RG
		if a.changes != nil {
			// The change data feed hears of the rows this rewrite drops, as in the
			// plain copy-on-write path (rewriteFiles).
			keep := make([]bool, len(b.Pos))
			for i, p := range b.Pos {
				keep[i] = f.Keeps(p)
			}
			if err := a.changes.Rewritten(ctx, f.Add.Key(), b, keep); err != nil {
				return err
			}
		}
		rec, err := conf.Conform(ctx, b.Rec)
		if err != nil {
			return err
		}
		defer rec.Release()
		// The output in runs of consecutive rows of one source: the batch's rows
		// the command keeps, and the held rows (sorted by position, consumed in
		// order) in the places of the rows they replace.
		type run struct {
			home   bool
			lo, hi int
		}
		var runs []run
		emit := func(fromHome bool, i int) {
			if n := len(runs); n > 0 && runs[n-1].home == fromHome && runs[n-1].hi == i {
				runs[n-1].hi++
				return
			}
			runs = append(runs, run{fromHome, i, i + 1})
		}
		for i, p := range b.Pos {
			switch {
			case f.Keeps(p):
				emit(false, i)
				copied++
			case home != nil && home.Next < len(home.Pos) && home.Pos[home.Next] == p:
				emit(true, home.Next)
				home.Next++
			}
		}
		if len(runs) == 0 {
			return nil
		}
		parts := make([]arrow.RecordBatch, len(runs))
		for k, r := range runs {
			src := rec
			if r.home {
				src = home.Rec
			}
			parts[k] = src.NewSlice(int64(r.lo), int64(r.hi))
		}
		rows, err := ConcatRecords(rec.Schema(), parts, a.mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return err
		}
		defer rows.Release()
		data := ws.Writer().Project(rows)
		defer data.Release()
		return out.Write(ctx, data)
	})
	if err == nil && home != nil && home.Next != len(home.Pos) {
		err = fmt.Errorf("table: internal error: %d updated rows of %s found no place in it", len(home.Pos)-home.Next, f.Add.Path)
	}
	if err == nil {
		err = out.Close(ctx)
	}
	if err != nil {
		out.Abort()
		return 0, err
	}
	return copied, nil
}

// flushPending reads, when the commit needs change files, the deleted rows of the
// touched files not rewritten — every live row of files removed whole without being
// read, the pending positions of the others — and writes them as deletes.
func (a *Attempt) flushPending(ctx context.Context) error {
	c := a.changes
	if !c.Needed() {
		return nil
	}
	var tasks []*scanexec.Task
	files := map[*scanexec.Task]*Touched{}
	for _, f := range a.touched.All() {
		k := f.Add.Key()
		if bm, done := c.Pending(k); done || (!f.Whole && bm == nil) {
			continue
		}
		task, err := a.snap.Task(f.Add)
		if err != nil {
			return err
		}
		tasks = append(tasks, task)
		files[task] = f
	}
	if len(tasks) == 0 {
		return nil
	}
	tg, err := a.snap.Whole(ctx, a.mem)
	if err != nil {
		return err
	}
	return a.forEachTask(ctx, "changes", tasks, func(ctx context.Context, task *scanexec.Task) error {
		f := files[task]
		old, err := a.loadDV(ctx, task.Add)
		if err != nil {
			return err
		}
		bm, _ := c.Pending(task.Add.Key())
		_, err = tg.ReadLive(ctx, task, old, true, nil, func(b LiveBatch) error {
			return c.DeleteSelected(ctx, b, func(i int) bool { return f.Whole || bm.Contains(uint64(b.Pos[i])) })
		})
		return err
	})
}

// flushWritten reads, when the commit needs change files, the data files the
// command wrote before its attempts (the new rows of a replaceWhere overwrite,
// Options.Pre) and writes their rows as inserts: a reader takes a version's changes
// from its change files alone when it has any.
func (a *Attempt) flushWritten(ctx context.Context, adds []*log.Add) error {
	c := a.changes
	if !c.Needed() || len(adds) == 0 {
		return nil
	}
	tasks := make([]*scanexec.Task, len(adds))
	for i, ad := range adds {
		path, err := ad.DecodedPath()
		if err != nil {
			return fmt.Errorf("table: written file %q: %w", ad.Path, err)
		}
		parts, err := a.view.PartitionValues(ad)
		if err != nil {
			return fmt.Errorf("table: written file %s: %w", ad.Path, err)
		}
		tasks[i] = &scanexec.Task{Idx: -1, Add: ad, Path: path, PartVals: parts,
			Verdict: skipping.FileVerdict{Verdict: skipping.MightMatch, Level: skipping.NoLevel, Reason: skipping.ReasonNoFilter}}
	}
	tg, err := a.snap.Whole(ctx, a.mem)
	if err != nil {
		return err
	}
	return a.forEachTask(ctx, "changes", tasks, func(ctx context.Context, task *scanexec.Task) error {
		_, err := tg.ReadLive(ctx, task, nil, true, nil, func(b LiveBatch) error {
			return c.Insert(ctx, b.Rec)
		})
		return err
	})
}
