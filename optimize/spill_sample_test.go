package optimize

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// samplePositions draws min(n, k) distinct positions in [0, n), ascending, the same
// ones on every call, spread evenly over the range.
func TestSamplePositions(t *testing.T) {
	for _, c := range []struct {
		n int64
		k int
	}{{0, 10}, {7, 10}, {10, 10}, {11, 10}, {1000, 100}, {100_000, 10_000}} {
		t.Run(fmt.Sprintf("n=%d,k=%d", c.n, c.k), func(t *testing.T) {
			got := samplePositions(c.n, c.k)
			require.Len(t, got, int(min(c.n, int64(c.k))))
			for i, p := range got {
				require.GreaterOrEqual(t, p, int64(0))
				require.Less(t, p, c.n)
				if i > 0 {
					require.Less(t, got[i-1], p, "ascending and distinct")
				}
			}
			require.Equal(t, got, samplePositions(c.n, c.k), "seeded")
			if c.k >= 10_000 {
				// Ten equal slices of the range get a tenth of the sample each,
				// within 5 standard deviations (about 30 at k = 10,000).
				var per [10]int
				for _, p := range got {
					per[p*10/c.n]++
				}
				for s, m := range per {
					require.InDelta(t, c.k/10, m, 150, "slice %d", s)
				}
			}
		})
	}
}

// The keys of a row sample taken batch by batch are the keys the whole batches
// give at those positions (the same ranks, heavy-hitter tie-breaks included), for
// every curve, with the sample sparse, dense and complete.
func TestRowSampleKeysMatchWholeBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	// Batches of an int64 column with a heavy hitter (half the rows are 7) and a
	// string column with few distinct values and NULLs.
	var batches [][]arrow.Array
	const nBatches, batchRows = 6, 1000
	for b := 0; b < nBatches; b++ {
		ib := array.NewInt64Builder(mem)
		sb := array.NewStringBuilder(mem)
		for i := 0; i < batchRows; i++ {
			r := b*batchRows + i
			if r%2 == 0 {
				ib.Append(7)
			} else {
				ib.Append(int64(r * 7919 % 5003))
			}
			if r%13 == 0 {
				sb.AppendNull()
			} else {
				sb.Append(fmt.Sprintf("v%02d", r*31%17))
			}
		}
		batches = append(batches, []arrow.Array{ib.NewArray(), sb.NewArray()})
		ib.Release()
		sb.Release()
	}
	defer func() {
		for _, cols := range batches {
			releaseAll(cols)
		}
	}()
	s := newSamplers(2)
	for _, cols := range batches {
		require.NoError(t, s.add(cols))
	}
	const total = nBatches * batchRows
	for _, curve := range []Curve{CurveHilbert, CurveZOrder, CurveLinear} {
		k, err := newKeyer(curve, s)
		require.NoError(t, err)
		var all []uint64
		for b, cols := range batches {
			out := make([]uint64, batchRows)
			_, err := k.keys(cols, int64(b*batchRows), out, nil)
			require.NoError(t, err)
			all = append(all, out...)
		}
		for _, want := range []int{50, 2000, total, 2 * total} {
			t.Run(fmt.Sprintf("curve=%v,sample=%d", curve, want), func(t *testing.T) {
				rs := &rowSample{want: samplePositions(total, want)}
				defer rs.release()
				for b, cols := range batches {
					require.NoError(t, rs.add(ctx, cols, int64(b*batchRows), mem))
				}
				got, err := rs.keys(k)
				require.NoError(t, err)
				require.Len(t, got, len(rs.want))
				for i, p := range rs.want {
					require.Equal(t, all[p], got[i], "row %d", p)
				}
			})
		}
	}
}
