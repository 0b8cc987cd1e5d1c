package table

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/skipping"
)

// liveBatch is a batch of live rows of one data file, as DML commands read them: the
// rows with their file positions (what a deletion vector names).
type liveBatch struct {
	// rec holds the rows in the scan's read schema (table order: the columns asked
	// for plus the predicate's); nil when only positions were asked for.
	rec arrow.RecordBatch
	// pos[i] is the 0-based position in the data file of row i.
	pos []int64
	// recheck is true when the scan's predicate must still be evaluated on the rows
	// (no level proved that every row of the unit matches).
	recheck bool
	// rg is the row group of the file the rows are in.
	rg int
}

// readLive reads the live rows (those del does not hold) of one planned file that the
// scan's predicate might select: row groups and pages are skipped as a Reader skips
// them (decideFile, recorded in rep), and fn receives every remaining live row once,
// in file order, with its position. With needValues false, units whose rows all match
// (no recheck) are reported by position alone without being read. It returns the
// file's physical row count (from the footer).
//
// The batch passed to fn is released when fn returns; fn retains what it keeps.
func (s *Scan) readLive(ctx context.Context, task *fileTask, del *dv.Deleted, needValues bool, rep *ScanReport, fn func(liveBatch) error) (int64, error) {
	f, r, err := s.openFile(ctx, task, datafile.ReadOptions{BatchSize: s.cfg.BatchSize, Allocator: s.cfg.Mem, Deleted: del})
	if err != nil {
		return 0, err
	}
	defer f.Close()
	defer r.Close()
	numRows := r.NumRows()
	units := s.decideFile(task, r, rep)
	md := r.Metadata()
	p := s.proj
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
				if err := fn(liveBatch{pos: pos, rg: u.RG}); err != nil {
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
			rec, err := p.WithPartitions(task, data, s.cfg.Mem)
			if err != nil {
				return err
			}
			defer rec.Release()
			return fn(liveBatch{rec: rec, pos: livePositions(firstRow, n, del), recheck: u.Recheck, rg: u.RG})
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

// taskFor builds the read task of a live file of the snapshot (index i of
// Snapshot.Log().Files()) outside any plan: the whole file, no recheck.
func (s *Snapshot) taskFor(i int) (*fileTask, error) {
	a := s.log.Files()[i]
	p, err := a.DecodedPath()
	if err != nil {
		return nil, fmt.Errorf("table: version %d: file %q: %w", s.Version(), a.Path, err)
	}
	t := &fileTask{Add: a, Path: p, Verdict: skipping.FileVerdict{Verdict: skipping.MightMatch, Reason: skipping.ReasonNoFilter}}
	if len(s.log.PartitionColumns()) > 0 {
		m, err := s.meta()
		if err != nil {
			return nil, err
		}
		t.PartVals = m.Parts[i]
	}
	return t, nil
}

// readTouched reads one planned file for a DML command (readLive over its live rows,
// its current deletion vector loaded): the file is recorded as read, fn gets the
// file's touched record with every batch, and the file's physical row count is kept.
func (a *dmlAttempt) readTouched(ctx context.Context, sc *Scan, task *fileTask, needValues bool, fn func(f *touchedFile, b liveBatch) error) error {
	a.markRead(task.Add)
	old, err := a.loadDV(ctx, task.Add)
	if err != nil {
		return err
	}
	f := a.file(task.Add)
	a.mu.Lock()
	f.old, f.read = old, true
	a.mu.Unlock()
	n, err := sc.readLive(ctx, task, old, needValues, a.rep, func(b liveBatch) error { return fn(f, b) })
	if err != nil {
		return err
	}
	a.mu.Lock()
	f.numRecords = n
	a.mu.Unlock()
	return nil
}

// matchingPositions returns the positions of the rows of b the scan's predicate
// selects, and the selection (nil when every row matches).
func matchingPositions(sc *Scan, b liveBatch) ([]int64, *expr.Selection, error) {
	if !b.recheck || sc.proj.Recheck == nil {
		return b.pos, nil, nil
	}
	sel, err := sc.proj.Recheck.Evaluate(b.rec)
	if err != nil {
		return nil, nil, err
	}
	if sel.Count() == len(b.pos) {
		return b.pos, nil, nil
	}
	matched := make([]int64, 0, sel.Count())
	for i, p := range b.pos {
		if sel.Contains(i) {
			matched = append(matched, p)
		}
	}
	return matched, sel, nil
}
