package optimize

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SortByClustering returns the rows of recs (batches of one schema) as one batch in
// the order a clustering run would give them: each clustering column (cols, indices
// into the schema) ranked by equal-frequency boundaries drawn from these rows, the
// ranks combined into one key on curve (Hilbert, Morton, or lexicographic for
// CurveLinear; one column is a plain sort), ties broken by the columns' values. An
// optimized write on a clustered table sorts each file's rows so. The caller keeps
// recs and owns the result; memory comes from mem (nil: the default allocator).
func SortByClustering(ctx context.Context, recs []arrow.RecordBatch, cols []int, curve Curve, mem memory.Allocator) (arrow.RecordBatch, error) {
	paths := make([][]int, len(cols))
	for i, c := range cols {
		paths[i] = []int{c}
	}
	return SortByClusteringPaths(ctx, recs, paths, curve, mem)
}

// SortByClusteringPaths is SortByClustering with clustering columns that may be
// nested in structs: each is an index path, the index of a top-level field, then
// of the field at each struct level below ({1, 0} is field 0 of the struct in
// field 1). A nested column's values are NULL wherever a struct around it is.
func SortByClusteringPaths(ctx context.Context, recs []arrow.RecordBatch, paths [][]int, curve Curve, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no batches to sort", ErrInvalidOptions)
	}
	if len(paths) == 0 || len(paths) > 8 || curve == CurveNone {
		return nil, fmt.Errorf("%w: sorting by %d clustering columns on curve %s", ErrInvalidOptions, len(paths), curve)
	}
	cols := make([]clusterCol, len(paths))
	for i, p := range paths {
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: clustering column %d has an empty index path", ErrInvalidOptions, i)
		}
		cols[i] = clusterCol(p)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	sch := recs[0].Schema()
	for i, p := range paths {
		if p[0] < 0 || p[0] >= sch.NumFields() {
			return nil, fmt.Errorf("%w: clustering column %d: no field %d in the schema", ErrInvalidOptions, i, p[0])
		}
	}
	// pick returns new references to the clustering columns (releaseAll).
	pick := func(rec arrow.RecordBatch) ([]arrow.Array, error) {
		out, err := leafColumns(rec, cols, mem)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		return out, nil
	}
	s := newSamplers(len(cols))
	var n int64
	for _, r := range recs {
		if !r.Schema().Equal(sch) {
			return nil, fmt.Errorf("%w: batches of different schemas", ErrInvalidOptions)
		}
		arrs, err := pick(r)
		if err != nil {
			return nil, err
		}
		err = s.add(arrs)
		releaseAll(arrs)
		if err != nil {
			return nil, err
		}
		n += r.NumRows()
	}
	k, err := newKeyer(curve, s)
	if err != nil {
		return nil, err
	}
	pairs := make([]keyed, n)
	var off int64
	var scratch [][]uint32
	for _, r := range recs {
		keys := make([]uint64, r.NumRows())
		arrs, err := pick(r)
		if err != nil {
			return nil, err
		}
		scratch, err = k.keys(arrs, off, keys, scratch)
		releaseAll(arrs)
		if err != nil {
			return nil, err
		}
		for i, key := range keys {
			pairs[off+int64(i)] = keyed{key, uint32(off) + uint32(i)}
		}
		off += r.NumRows()
	}
	all, err := concatRecords(ctx, sch, recs, 1, mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tb, err := pick(all)
	if err != nil {
		return nil, err
	}
	sortKeyed(ctx, pairs, tieBreak{cols: tb}, 1)
	releaseAll(tb)
	ib := array.NewUint32Builder(mem)
	defer ib.Release()
	ib.Reserve(len(pairs))
	for _, p := range pairs {
		ib.UnsafeAppend(p.pos)
	}
	idx := ib.NewArray()
	defer idx.Release()
	out := make([]arrow.Array, all.NumCols())
	tctx := compute.WithAllocator(ctx, mem)
	for c := range out {
		if out[c], err = compute.TakeArray(tctx, all.Column(c), idx); err != nil {
			for _, a := range out[:c] {
				a.Release()
			}
			return nil, fmt.Errorf("optimize: sorting rows: %w", err)
		}
	}
	res := array.NewRecordBatch(sch, out, n)
	for _, a := range out {
		a.Release()
	}
	return res, nil
}
