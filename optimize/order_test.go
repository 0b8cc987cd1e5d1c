package optimize

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSortByClustering: the rows come back complete (a permutation), one column
// sorts plainly, and two columns on a Hilbert curve give a key order whose
// consecutive rows are close in both columns (runs of the output have narrower
// ranges than runs of the input).
func TestSortByClustering(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	recs := []arrow.RecordBatch{genRecord(3000, 0, 1), genRecord(2000, 3000, 2)}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	one, err := SortByClustering(ctx, recs, []int{1}, CurveHilbert, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Release()
	if one.NumRows() != 5000 {
		t.Fatalf("%d rows", one.NumRows())
	}
	xs := one.Column(1).(*array.Int64).Int64Values()
	ids := map[int64]bool{}
	for i, id := range one.Column(0).(*array.Int64).Int64Values() {
		ids[id] = true
		if i > 0 && xs[i] < xs[i-1] {
			t.Fatalf("row %d: x %d after %d: one column must sort plainly", i, xs[i], xs[i-1])
		}
	}
	if len(ids) != 5000 {
		t.Fatalf("%d distinct ids: rows lost or duplicated", len(ids))
	}
	two, err := SortByClustering(ctx, recs, []int{1, 2}, CurveHilbert, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer two.Release()
	spread := func(x, y []int64) float64 { // mean x+y range of runs of 100 rows
		var total float64
		for lo := 0; lo+100 <= len(x); lo += 100 {
			minX, maxX, minY, maxY := x[lo], x[lo], y[lo], y[lo]
			for i := lo; i < lo+100; i++ {
				minX, maxX, minY, maxY = min(minX, x[i]), max(maxX, x[i]), min(minY, y[i]), max(maxY, y[i])
			}
			total += float64(maxX-minX) + float64(maxY-minY)
		}
		return total
	}
	in := spread(slices.Concat(recs[0].Column(1).(*array.Int64).Int64Values(), recs[1].Column(1).(*array.Int64).Int64Values()),
		slices.Concat(recs[0].Column(2).(*array.Int64).Int64Values(), recs[1].Column(2).(*array.Int64).Int64Values()))
	out := spread(two.Column(1).(*array.Int64).Int64Values(), two.Column(2).(*array.Int64).Int64Values())
	if out > in/4 {
		t.Fatalf("Hilbert order spreads runs over %.0f, input %.0f", out, in)
	}
	if _, err := SortByClustering(ctx, recs, nil, CurveHilbert, mem); err == nil {
		t.Fatal("no columns must be refused")
	}
}
