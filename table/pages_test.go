package table_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// pageSchema has a sorted key k (the page index prunes on it), a scrambled v (it does
// not) and a string column, so a row group holds many pages of each.
var pageSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func pageV(k int64) int64 { return k * 7919 % 100_003 }

func pageBatch(k0, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, pageSchema)
	defer b.Release()
	for k := k0; k < k0+n; k++ {
		b.Field(0).(*array.Int64Builder).Append(k)
		if k%11 == 5 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(pageV(k))
		}
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row-%09d", k))
	}
	return b.NewRecordBatch()
}

// TestScanSkipsPagesAndStaysExact writes one file whose row groups have many pages and
// checks, with and without a deletion vector, that selective filters on the sorted key
// skip rows at the page level while every filter returns exactly the brute-force rows.
func TestScanSkipsPagesAndStaysExact(t *testing.T) {
	n := int64(proofEnvInt(t, "SKIPLAKE_PAGE_ROWS", 600_000))
	if testing.Short() {
		n = 300_000
	}
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, pageSchema, table.CreateOptions{})
	require.NoError(t, err)
	var recs []arrow.RecordBatch
	for k0 := int64(0); k0 < n; k0 += 100_000 {
		recs = append(recs, pageBatch(k0, min(100_000, n-k0)))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{Parallelism: 1})
	require.NoError(t, err)
	require.Equal(t, 1, res.FilesAdded, "one file: row positions equal k")

	mid := n / 2
	cases := []struct {
		name      string
		filter    string
		match     func(k int64) bool
		pageSkips bool
	}{
		{"narrow key range skips pages", fmt.Sprintf("k >= %d AND k < %d", mid, mid+100),
			func(k int64) bool { return k >= mid && k < mid+100 }, true},
		{"single key skips pages", fmt.Sprintf("k = %d", mid+12345),
			func(k int64) bool { return k == mid+12345 }, true},
		{"both ends of the key range skip the middle pages", fmt.Sprintf("k < 10 OR k >= %d", n-10),
			func(k int64) bool { return k < 10 || k >= n-10 }, true},
		{"key range and a predicate pages cannot prune", fmt.Sprintf("k >= %d AND k < %d AND v < 500", mid, mid+20000),
			func(k int64) bool { return k >= mid && k < mid+20000 && k%11 != 5 && pageV(k) < 500 }, true},
		{"scrambled column prunes nothing and stays exact", "v < 50",
			func(k int64) bool { return k%11 != 5 && pageV(k) < 50 }, false},
		{"null test on the scrambled column", fmt.Sprintf("v IS NULL AND k > %d", n-1000),
			func(k int64) bool { return k%11 == 5 && k > n-1000 }, true},
	}
	run := func(t *testing.T, deleted map[int64]bool) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, rep, _, err := proofScanIDs(t, tb, "k", table.WithFilter(tc.filter))
				require.NoError(t, err)
				var want []int64
				for k := range n {
					if tc.match(k) && !deleted[k] {
						want = append(want, k)
					}
				}
				missing, extra := proofDiffIDs(got, want)
				require.Empty(t, missing, "rows missing")
				require.Empty(t, extra, "rows that must not be returned")
				pl := rep.Level("page")
				t.Logf("%s: page level %+v", tc.filter, pl)
				if tc.pageSkips {
					require.Positive(t, pl.Skipped, "the page index must skip rows")
					require.Equal(t, pl.Total, pl.Skipped+pl.Kept)
				}
				if pl.Total > 0 {
					require.LessOrEqual(t, pl.Total, n)
				}
			})
		}
	}
	t.Run("without deletion vector", func(t *testing.T) { run(t, nil) })

	// Delete rows inside and around the selective ranges, at positions = k.
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	files := snap.Log().Files()
	require.Len(t, files, 1)
	path, err := files[0].DecodedPath()
	require.NoError(t, err)
	deleted := map[int64]bool{}
	var rows []uint64
	for k := range n {
		if (k >= mid-50 && k < mid+200 && k%3 == 0) || k == mid+12345 || k < 5 || k == n-1 ||
			(k > n-1000 && k%2 == 0) || k%9973 == 0 {
			deleted[k] = true
			rows = append(rows, uint64(k))
		}
	}
	slices.Sort(rows)
	proofDeleteRows(t, tb, st, map[string][]uint64{path: rows}, false)
	t.Run("with deletion vector", func(t *testing.T) { run(t, deleted) })
}
