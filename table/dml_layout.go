package table

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/stats"
)

// DML keeps the table's layout through a command with package internal/dml's Layout
// (see its doc): the attempt's methods here decide, per file, which updated rows go
// back in place and rewrite a clustered file on its own.

// writeUpdated writes the updated rows rows of file f: row k of rows replaces the
// live row oldIdx[k] of old, at position pos[k] of the file. Under copy-on-write,
// rows of a clustered file whose clustering columns and partition values did not
// change are held to be written back in place (see dml.Layout); the others go to
// the row sink as new rows.
func (a *dmlAttempt) writeUpdated(ctx context.Context, f *dml.Touched, old arrow.RecordBatch, oldIdx []int, pos []int64, rows arrow.RecordBatch) error {
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
		oi, ni := fieldIndexFold(old.Schema(), name), fieldIndexFold(rows.Schema(), name)
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
	rules, err := writeRulesOf(a.snap)
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
	out, err := dml.FilterRows(ctx, rows, moved, a.mem)
	if err != nil {
		return err
	}
	defer out.Release()
	return a.sink.Write(ctx, out)
}

// rewriteOwn rewrites one clustered file under copy-on-write into files of its
// own (dml.Layout): its live rows that the command keeps, and the updated rows held
// for it in the places of the rows they replace, in the file's order and in its
// row groups (each ends where the input's did, so row-group skipping stays as
// fine as the clustering run made it), with its directory, partition values,
// clustering tags and clusteringProvider. It returns the rows copied unchanged.
func (a *dmlAttempt) rewriteOwn(ctx context.Context, sc *Scan, task *fileTask, f *dml.Touched, old *dv.Deleted) (int64, error) {
	ws, ok := a.sink.(*dml.FileSink)
	if !ok {
		return 0, fmt.Errorf("table: internal error: rewriting %s without a file writer", f.Add.Path)
	}
	dec, err := f.Add.DecodedPath()
	if err != nil {
		return 0, fmt.Errorf("table: %w", err)
	}
	place := datafile.FileOptions{Dir: dml.PathDir(dec), LogDir: dml.PathDir(f.Add.Path), PartitionValues: f.Add.PartitionValues,
		Tags: dml.LayoutTags(f.Add), ClusteringProvider: f.Add.ClusteringProvider}
	limit := max(dml.OwnFileLimit*ws.Writer().Output().TargetFileSize(), f.Add.Size+f.Add.Size/4)
	// Row groups end where the input's end (below), never by size.
	place.RowGroupBytes = limit
	out := dml.NewOwnFiles(ws.Writer().Output(), place, limit)
	lastRG := -1
	conf := conform.New(a.snap.view.Logical(), a.mem)
	home, err := dml.SortedHome(ctx, a.layout.TakeHome(f.Add.Key()), conf, a.mem)
	if err != nil {
		return 0, err
	}
	if home != nil {
		defer home.Rec.Release()
	}
	var copied int64
	_, err = sc.target().ReadLive(ctx, task, old, true, nil, func(b dml.LiveBatch) error {
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
		rows, err := dml.ConcatRecords(rec.Schema(), parts, a.mem)
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

// newRowsOrder is the clustering DML sorts its new rows by: a clustered table's
// clustering columns on a Hilbert curve (as OPTIMIZE clusters it), else the
// columns and curve of the most recent clustering run its files' tags record;
// none (nil) on a table without either, or clustered by no columns.
func newRowsOrder(v *tableview.View) ([][]string, optimize.Curve) {
	if c, err := v.Clustering(); err == nil && c != nil {
		if len(c.Columns) == 0 {
			return nil, optimize.CurveNone
		}
		return c.Columns, optimize.CurveHilbert
	}
	names, curve := lastClustering(v.Log().Files())
	if curve == optimize.CurveNone || curve == optimize.CurveWorkload || len(names) == 0 {
		return nil, optimize.CurveNone
	}
	paths := make([][]string, 0, len(names))
	for _, n := range names {
		parts, err := stats.ParseColumnPath(n)
		if err != nil || len(parts) == 0 || v.IsPartition(parts[0]) {
			return nil, optimize.CurveNone
		}
		paths = append(paths, parts)
	}
	return paths, curve
}
