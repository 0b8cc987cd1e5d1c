package dml

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/storage"
)

// The columns an updated row must keep to keep its place: a Z-order file's
// ZCUBE_ZORDER_BY columns (a nested one by its top-level column) and the partition
// columns, each once; unknown for an unclustered file or unparsable tags.
func TestLayoutColumnsOf(t *testing.T) {
	ctx := context.Background()
	v := sinkView(t, storage.NewMemory(), []string{"p"})
	l := NewLayout(v, 0, nil)
	defer l.Release()
	cube := &log.Add{Path: "a", Tags: map[string]string{optimize.TagCubeID: "c1", optimize.TagCubeColumns: `["ID","p"]`}}
	require.True(t, l.Keeps(cube))
	c := l.ColumnsOf(ctx, cube)
	require.True(t, c.OK)
	require.Equal(t, []string{"id", "p"}, c.Names)
	bad := &log.Add{Path: "b", Tags: map[string]string{optimize.TagCubeID: "c2", optimize.TagCubeColumns: `not json`}}
	require.False(t, l.ColumnsOf(ctx, bad).OK)
	plain := &log.Add{Path: "c"}
	require.False(t, l.Keeps(plain))
	require.False(t, l.ColumnsOf(ctx, plain).OK)
}

// Held rows come back for their file in position order whatever order they were
// held in (SortedHome against a sort of the positions), and nothing is held beyond
// the budget: rows that do not fit are reported not taken.
func TestLayoutHoldsHomeRowsInPositionOrder(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	v := sinkView(t, storage.NewMemory(), nil)
	l := NewLayout(v, 1<<30, nil)
	defer l.Release()
	rng := rand.New(rand.NewPCG(3, 4))
	perm := rng.Perm(300)
	want := map[int64]int64{} // position -> id
	for lo := 0; lo < len(perm); lo += 50 {
		rec := sinkRows(mem, v, lo, lo+50, 3, false)
		pos := make([]int64, 50)
		home := make([]bool, 50)
		for k := range pos {
			pos[k] = int64(perm[lo+k])
			home[k] = k%5 != 0 // every fifth row moved: not held
			if home[k] {
				want[pos[k]] = int64(lo + k)
			}
		}
		taken, err := l.HoldHome(ctx, "f", rec, pos, home, mem)
		rec.Release()
		require.NoError(t, err)
		require.Equal(t, home, taken)
	}
	require.True(t, l.HasHome("f"))
	require.False(t, l.HasHome("g"))
	h := l.TakeHome("f")
	require.False(t, l.HasHome("f"), "taken over")
	sorted, err := SortedHome(ctx, h, conform.New(v.Logical(), mem), mem)
	require.NoError(t, err)
	defer sorted.Rec.Release()
	var positions []int64
	for p := range want {
		positions = append(positions, p)
	}
	sort.Slice(positions, func(i, j int) bool { return positions[i] < positions[j] })
	require.Equal(t, positions, sorted.Pos)
	ids := sorted.Rec.Column(0).(*array.Int64)
	for i, p := range sorted.Pos {
		require.Equal(t, want[p], ids.Value(i), "row at position %d", p)
	}

	// A budget smaller than one batch holds nothing.
	tiny := NewLayout(v, layoutHomeShare*16, nil)
	defer tiny.Release()
	rec := sinkRows(mem, v, 0, 10, 3, false)
	defer rec.Release()
	all := []bool{true, true, true, true, true, true, true, true, true, true}
	taken, err := tiny.HoldHome(ctx, "f", rec, make([]int64, 10), all, mem)
	require.NoError(t, err)
	require.Equal(t, make([]bool, 10), taken)
	require.False(t, tiny.HasHome("f"))
}

func TestConcatRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	v := sinkView(t, storage.NewMemory(), nil)
	var recs []arrow.RecordBatch
	for lo := 0; lo < 30; lo += 10 {
		recs = append(recs, sinkRows(mem, v, lo, lo+10, 2, true))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	all, err := ConcatRecords(v.Logical(), recs, mem)
	require.NoError(t, err)
	defer all.Release()
	require.EqualValues(t, 30, all.NumRows())
	for i := range 30 {
		require.Equal(t, fmt.Sprint(i), all.Column(0).ValueStr(i))
	}
	require.Equal(t, 15, all.Column(1).NullN())
	none, err := ConcatRecords(v.Logical(), nil, mem)
	require.NoError(t, err)
	defer none.Release()
	require.Zero(t, none.NumRows())
}
