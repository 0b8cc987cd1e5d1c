package interop

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
)

// TestParquetBloomFiltersReadByDuckDB writes a Parquet file through skiplake's data
// file writer with split-block Bloom filters on an int64, an int32 and a string
// column (not on a fourth column), in several row groups. DuckDB must see the
// filters in parquet_metadata, parquet_bloom_probe must never exclude the row group
// that holds a present value (same hash and layout as ours) and must exclude almost
// every row group for absent values, and equality queries must count correctly.
func TestParquetBloomFiltersReadByDuckDB(t *testing.T) {
	n := rowsKnob(t, 40000)
	// A plain Go allocator: arrow-go frees the writer's Bloom filter buffers only
	// through GC cleanups (metadata.NewBloomFilter), so a checked allocator would
	// report them as leaks (arrow-go-notes G5, writer side).
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rng := rand.New(rand.NewPCG(6, 6))
	// Distinct even keys in random order: odd keys are known to be absent.
	perm := rng.Perm(n * 4)
	keys := make([]int64, n)
	for j := range keys {
		keys[j] = int64(perm[j]) * 2
	}
	b := array.NewRecordBuilder(mem, schema)
	for _, k := range keys {
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.Int32Builder).Append(int32(k))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("key-%d", k))
		b.Field(3).(*array.Float64Builder).Append(rng.Float64())
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()

	path := filepath.Join(t.TempDir(), "bloom.parquet")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := datafile.NewWriter(f, schema, datafile.WriterOptions{
		TargetRowGroupBytes: 64 << 10,
		BloomColumns:        map[string]int64{"k": int64(n), "i": int64(n), "s": int64(n)},
		Allocator:           mem,
	})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	res, err := w.Close()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Greater(t, res.RowGroups, 1, "want several row groups")

	db := openDuck(t)
	lit := sqlString(path)

	// Row group of every row, from DuckDB's view of the footer.
	var rgStart []int64
	rs, err := db.Query(`SELECT DISTINCT row_group_id, row_group_num_rows FROM parquet_metadata(` + lit + `) ORDER BY row_group_id`)
	require.NoError(t, err)
	var acc int64
	for rs.Next() {
		var id, rows int64
		require.NoError(t, rs.Scan(&id, &rows))
		require.Equal(t, int64(len(rgStart)), id)
		rgStart = append(rgStart, acc)
		acc += rows
	}
	require.NoError(t, rs.Err())
	rs.Close()
	require.Equal(t, int64(n), acc, "rows over all row groups")
	require.Len(t, rgStart, res.RowGroups)
	rowGroupOf := func(row int) int64 {
		g := 0
		for g+1 < len(rgStart) && rgStart[g+1] <= int64(row) {
			g++
		}
		return int64(g)
	}

	// Filters are where the footer says, and only on the requested columns.
	rs, err = db.Query(`SELECT path_in_schema, bloom_filter_offset, bloom_filter_length FROM parquet_metadata(` + lit + `)`)
	require.NoError(t, err)
	for rs.Next() {
		var col string
		var off, length *int64
		require.NoError(t, rs.Scan(&col, &off, &length))
		if col == "v" {
			require.Nil(t, off, "column v has no Bloom filter")
			continue
		}
		require.NotNil(t, off, "column %s: bloom_filter_offset", col)
		require.NotNil(t, length, "column %s: bloom_filter_length", col)
		require.Positive(t, *length, "column %s: bloom_filter_length", col)
	}
	require.NoError(t, rs.Err())
	rs.Close()

	probe := func(col string, v any) map[int64]bool {
		t.Helper()
		out := map[int64]bool{}
		rs, err := db.Query(`SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(`+lit+`, '`+col+`', ?)`, v)
		require.NoError(t, err, "parquet_bloom_probe %s = %v", col, v)
		defer rs.Close()
		for rs.Next() {
			var id int64
			var ex bool
			require.NoError(t, rs.Scan(&id, &ex))
			out[id] = ex
		}
		require.NoError(t, rs.Err())
		return out
	}
	count := func(col string, v any) int64 {
		t.Helper()
		var c int64
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM read_parquet(`+lit+`) WHERE `+sqlIdent(col)+` = ?`, v).Scan(&c))
		return c
	}
	valueOf := func(col string, k int64) any {
		switch col {
		case "k":
			return k
		case "i":
			return int32(k)
		}
		return fmt.Sprintf("key-%d", k)
	}

	samples := 100
	if testing.Short() {
		samples = 30
	}
	for _, col := range []string{"k", "i", "s"} {
		excluded, probes := 0, 0
		for range samples {
			row := rng.IntN(n)
			k := keys[row]
			got := probe(col, valueOf(col, k))
			require.Len(t, got, len(rgStart), "probe %s=%v: one answer per row group", col, k)
			require.False(t, got[rowGroupOf(row)], "column %s: DuckDB's probe excludes row group %d that holds %v (false negative)", col, rowGroupOf(row), k)
			require.Equal(t, int64(1), count(col, valueOf(col, k)), "count(*) WHERE %s = %v", col, k)

			absent := int64(rng.IntN(n*4))*2 + 1
			for _, ex := range probe(col, valueOf(col, absent)) {
				probes++
				if ex {
					excluded++
				}
			}
			require.Zero(t, count(col, valueOf(col, absent)), "count(*) WHERE %s = %v (absent)", col, absent)
		}
		t.Logf("column %s: %d row groups; absent values excluded in %d of %d row-group probes", col, len(rgStart), excluded, probes)
		// FPP 0.01: well over 90% of (absent value, row group) probes are excluded.
		require.Greater(t, float64(excluded)/float64(probes), 0.9,
			"column %s: DuckDB excluded only %d of %d row groups for absent values; does it read our filters?", col, excluded, probes)
	}
}
