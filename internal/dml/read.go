package dml

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/scanexec"
)

// Target is what reading a command's target files needs of the scan the command
// planned: the scan reader (storage, version, footer cache, filter, column
// mapping), the projection the rows are read in, and the batch size and allocator
// of the reads. Package table builds it from its Scan. A Target is immutable and
// safe for concurrent use.
type Target struct {
	// Scan opens and decides the files (scanexec.Scan.OpenFile, DecideFile).
	Scan *scanexec.Scan
	// Proj is the scan's projection: the columns read (table order: the columns
	// asked for plus the filter's) and the filter's exact recheck.
	Proj *scanexec.Projection
	// BatchSize is the rows per batch read (datafile.ReadOptions.BatchSize).
	BatchSize int64
	// Mem allocates the batches read.
	Mem memory.Allocator
}

// LiveBatch is a batch of live rows of one data file, as DML commands read them: the
// rows with their file positions (what a deletion vector names).
type LiveBatch struct {
	// Rec holds the rows in the scan's read schema (table order: the columns asked
	// for plus the predicate's); nil when only positions were asked for.
	Rec arrow.RecordBatch
	// Pos[i] is the 0-based position in the data file of row i.
	Pos []int64
	// Recheck is true when the scan's predicate must still be evaluated on the rows
	// (no level proved that every row of the unit matches).
	Recheck bool
	// RG is the row group of the file the rows are in.
	RG int
}

// ReadLive reads the live rows (those del does not hold) of one planned file that
// the scan's predicate might select: row groups and pages are skipped as a scan
// skips them (scanexec.Scan.DecideFile, recorded in rec; nil records nothing), and
// fn receives every remaining live row once, in file order, with its position. With
// needValues false, units whose rows all match (no recheck) are reported by
// position alone without being read. It returns the file's physical row count (from
// the footer).
//
// The batch passed to fn is released when fn returns; fn retains what it keeps.
func (t *Target) ReadLive(ctx context.Context, task *scanexec.Task, del *dv.Deleted, needValues bool, rec scanexec.Recorder, fn func(LiveBatch) error) (int64, error) {
	f, r, err := t.Scan.OpenFile(ctx, task, datafile.ReadOptions{BatchSize: t.BatchSize, Allocator: t.Mem, Deleted: del}, nil)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	defer r.Close()
	numRows := r.NumRows()
	units := t.Scan.DecideFile(task, r, rec)
	md := r.Metadata()
	p := t.Proj
	for _, u := range units {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		base := r.RowGroupFirstRow(u.RG)
		if !u.Recheck && !needValues {
			n := md.RowGroup(u.RG).NumRows()
			ranges := u.Ranges
			if ranges == nil {
				ranges = []datafile.RowRange{{Start: 0, End: n}}
			}
			for _, rr := range ranges {
				pos := positionsIn(base+rr.Start, base+rr.End, del)
				if len(pos) == 0 {
					continue
				}
				if err := fn(LiveBatch{Pos: pos, RG: u.RG}); err != nil {
					return 0, err
				}
			}
			continue
		}
		emit := func(data arrow.RecordBatch, firstRow int64) error {
			n := int(data.NumRows())
			if n == 0 {
				return nil
			}
			rows, err := p.WithPartitions(task, data, t.Mem)
			if err != nil {
				return err
			}
			defer rows.Release()
			return fn(LiveBatch{Rec: rows, Pos: livePositions(firstRow, n, del), Recheck: u.Recheck, RG: u.RG})
		}
		if u.Ranges != nil {
			err = r.ReadRanges(ctx, p.Want, u.RG, u.Ranges, emit)
		} else {
			err = r.Read(ctx, p.Want, []int{u.RG}, emit)
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return 0, cerr
			}
			return 0, fmt.Errorf("table: reading %s: %w", task.Path, err)
		}
	}
	return numRows, nil
}

// Matching returns the positions of the rows of b the scan's predicate selects, and
// the selection (nil when every row matches).
func (t *Target) Matching(b LiveBatch) ([]int64, *expr.Selection, error) {
	if !b.Recheck || t.Proj.Recheck == nil {
		return b.Pos, nil, nil
	}
	sel, err := t.Proj.Recheck.Evaluate(b.Rec)
	if err != nil {
		return nil, nil, err
	}
	if sel.Count() == len(b.Pos) {
		return b.Pos, nil, nil
	}
	matched := make([]int64, 0, sel.Count())
	for i, p := range b.Pos {
		if sel.Contains(i) {
			matched = append(matched, p)
		}
	}
	return matched, sel, nil
}

// livePositions returns the file positions of the n rows of a batch whose first row
// read was at firstRow, once the rows del holds were removed from it (the datafile
// reader's invariants D3 and D6: a batch covers contiguous positions before deleted
// rows are dropped).
func livePositions(firstRow int64, n int, del *dv.Deleted) []int64 {
	pos := make([]int64, n)
	p := firstRow
	for i := range pos {
		for del != nil && del.Contains(uint64(p)) {
			p++
		}
		pos[i] = p
		p++
	}
	return pos
}

// positionsIn returns the positions in [start, end) that del does not hold.
func positionsIn(start, end int64, del *dv.Deleted) []int64 {
	out := make([]int64, 0, end-start)
	for p := start; p < end; p++ {
		if del == nil || !del.Contains(uint64(p)) {
			out = append(out, p)
		}
	}
	return out
}
