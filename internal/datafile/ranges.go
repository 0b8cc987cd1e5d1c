package datafile

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// seekBufferBytes is the read-ahead of the streaming column reader ReadRanges seeks with:
// the most it reads beyond what a range needs at each seek.
const seekBufferBytes = 64 << 10

// RowRange is the half-open range of rows [Start, End) of one row group, counted from the
// first row of that row group.
type RowRange struct {
	// Start is the first row of the range, relative to the row group.
	Start int64
	// End is one past the last row of the range, relative to the row group.
	End int64
}

// ReadRanges reads only the given rows of row group rowGroup and emits batches that conform
// exactly to want, as [Reader.Read] does (invariant D1). ranges must be sorted, disjoint
// and within the row group, each non-empty; adjacent ranges are merged. An empty list
// reads nothing. The firstRow of each batch is its FILE position (invariant D3), so
// deletion vectors apply unchanged; batches never span a gap between ranges.
//
// When every column read is flat (no list or map anywhere in the requested fields), the
// reader seeks to each range (invariant D5): with an offset index, the pages before a range
// are neither fetched nor decoded, and reading stops at the range end, so pages wholly
// outside the ranges cost no I/O. A requested list or map column makes the reader decode
// the whole row group and slice the ranges out (same result, no I/O saved), because
// seeking a repeated column inside a page is not reliable in the Parquet library.
func (r *Reader) ReadRanges(ctx context.Context, want *arrow.Schema, rowGroup int, ranges []RowRange, emit EmitFunc) error {
	if want == nil || emit == nil {
		return fmt.Errorf("%w: nil schema or emit function", ErrInvalidArgument)
	}
	if rowGroup < 0 || rowGroup >= len(r.rgStart) {
		return fmt.Errorf("%w: row group %d not in [0,%d)", ErrInvalidArgument, rowGroup, len(r.rgStart))
	}
	nrows := r.pr.MetaData().RowGroup(rowGroup).NumRows()
	merged, err := normalizeRanges(ranges, nrows, rowGroup)
	if err != nil {
		return err
	}
	if len(merged) == 0 {
		return nil
	}
	p := r.plan(want)
	emit = r.live(emit)
	// Seeking streams through a small buffer: the most read beyond what a range needs.
	buffer := int64(seekBufferBytes)
	if !r.canSeek(p) {
		buffer = r.buffer
	}
	pr, fr, err := r.streamReaders(buffer)
	if err != nil {
		return r.named(err)
	}
	defer pr.Close()
	if !r.canSeek(p) {
		err = r.readSliced(ctx, pr, fr, want, p, rowGroup, merged, emit)
	} else {
		err = r.readSeeking(ctx, pr, fr, want, p, rowGroup, merged, emit)
	}
	return r.named(err)
}

// normalizeRanges checks ranges against a row group of nrows rows and merges adjacent ones.
func normalizeRanges(ranges []RowRange, nrows int64, rg int) ([]RowRange, error) {
	var out []RowRange
	for i, rr := range ranges {
		if rr.Start < 0 || rr.End <= rr.Start || rr.End > nrows {
			return nil, fmt.Errorf("%w: row group %d range %d [%d,%d) is empty or outside [0,%d)",
				ErrInvalidArgument, rg, i, rr.Start, rr.End, nrows)
		}
		if i > 0 && rr.Start < ranges[i-1].End {
			return nil, fmt.Errorf("%w: row group %d range %d [%d,%d) overlaps or precedes range %d [%d,%d)",
				ErrInvalidArgument, rg, i, rr.Start, rr.End, i-1, ranges[i-1].Start, ranges[i-1].End)
		}
		if n := len(out); n > 0 && out[n-1].End == rr.Start {
			out[n-1].End = rr.End
			continue
		}
		out = append(out, rr)
	}
	return out, nil
}

// canSeek reports whether every leaf the plan reads through pqarrow is unrepeated, so that
// seeking by row is exact (INT96 columns are flat by construction).
func (r *Reader) canSeek(p topPlan) bool {
	descr := r.pr.MetaData().Schema
	for _, leaf := range p.leaves {
		if descr.Column(leaf).MaxRepetitionLevel() > 0 {
			return false
		}
	}
	return true
}

// readSliced decodes the whole row group and emits only the rows inside ranges.
func (r *Reader) readSliced(ctx context.Context, pr *file.Reader, fr *pqarrow.FileReader, want *arrow.Schema, p topPlan, rg int, ranges []RowRange, emit EmitFunc) error {
	base := r.rgStart[rg]
	return r.readRowGroup(ctx, pr, fr, want, p, rg, nil, func(rec arrow.RecordBatch, firstRow int64) error {
		lo, hi := firstRow-base, firstRow-base+rec.NumRows()
		for _, rr := range ranges {
			s, e := max(rr.Start, lo), min(rr.End, hi)
			if s >= e {
				continue
			}
			if s == lo && e == hi {
				return emit(rec, firstRow)
			}
			part := rec.NewSlice(s-lo, e-lo)
			err := emit(part, base+s)
			part.Release()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// readSeeking seeks every column reader to the start of each range and reads exactly the
// rows of the range.
func (r *Reader) readSeeking(ctx context.Context, pr *file.Reader, fr *pqarrow.FileReader, want *arrow.Schema, p topPlan, rg int, ranges []RowRange, emit EmitFunc) (err error) {
	var readers []*pqarrow.ColumnReader
	if len(p.leaves) > 0 {
		if readers, err = fieldReaders(ctx, fr, p.leaves, rg); err != nil {
			return err
		}
		defer func() {
			for _, cr := range readers {
				releaseColumn(cr)
			}
		}()
		if len(readers) != len(p.regular) {
			return corruptf("row group %d: %d column readers for %d columns", rg, len(readers), len(p.regular))
		}
	}
	i96 := make([]*int96Reader, len(p.int96))
	for j, leaf := range p.int96At {
		if i96[j], err = newInt96Reader(pr, rg, leaf); err != nil {
			return err
		}
		defer i96[j].close()
	}
	cols := make([]arrow.Array, len(r.schema.Fields()))
	batch := r.batchRows(rg, p)
	for _, rr := range ranges {
		for j, cr := range readers {
			if err := seekColumn(cr, rr.Start, fmt.Sprintf("row group %d column %q", rg, r.schema.Field(p.regular[j]).Name)); err != nil {
				return err
			}
		}
		for j, ir := range i96 {
			if err := ir.seek(rr.Start); err != nil {
				return corruptf("row group %d column %q: seek to row %d: %w", rg, r.schema.Field(p.int96[j]).Name, rr.Start, err)
			}
		}
		for pos := rr.Start; pos < rr.End; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(batch, rr.End-pos)
			clear(cols)
			owned, err := r.readSeekBatch(p, rg, pos, n, readers, i96, cols)
			if err != nil {
				releaseAll(owned)
				return err
			}
			out, err := r.conformBatch(want, p, cols, n)
			releaseAll(owned)
			if err != nil {
				return err
			}
			err = emit(out, r.rgStart[rg]+pos)
			out.Release()
			if err != nil {
				return err
			}
			pos += n
		}
	}
	return nil
}

// readSeekBatch reads the next n rows of every column into cols (indexed by file
// top-level field) and returns the arrays the caller must release.
func (r *Reader) readSeekBatch(p topPlan, rg int, pos, n int64, readers []*pqarrow.ColumnReader, i96 []*int96Reader, cols []arrow.Array) (owned []arrow.Array, err error) {
	for j, cr := range readers {
		name := r.schema.Field(p.regular[j]).Name
		ch, err := nextColumnBatch(cr, n, fmt.Sprintf("row group %d column %q at row %d", rg, name, pos))
		if err != nil {
			return owned, err
		}
		var a arrow.Array
		switch chunks := ch.Chunks(); len(chunks) {
		case 0:
			err = fmt.Errorf("no data")
		case 1:
			a = chunks[0]
			a.Retain()
		default:
			a, err = array.Concatenate(chunks, r.mem)
		}
		ch.Release()
		if err != nil {
			return owned, corruptf("row group %d column %q at row %d: %w", rg, name, pos, err)
		}
		owned = append(owned, a)
		if int64(a.Len()) != n {
			return owned, corruptf("row group %d column %q: read %d rows at row %d, want %d", rg, name, a.Len(), pos, n)
		}
		cols[p.regular[j]] = a
	}
	for j, idx := range p.int96 {
		a, err := i96[j].read(r.mem, n)
		if err != nil {
			return owned, corruptf("row group %d column %q: %w", rg, r.schema.Field(idx).Name, err)
		}
		owned = append(owned, a)
		cols[idx] = a
	}
	return owned, nil
}
