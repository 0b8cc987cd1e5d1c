package interop

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/benchdata"
	"github.com/skiplake/skiplake/table"
)

// TestDuckDBReadsStitchedCompaction compacts a table by copying its files' row
// groups and checks, with DuckDB alone: the log replay finds one file, read_parquet
// of it returns exactly the input files' rows in the bin's order, parquet_metadata
// shows the row groups expected, filters on every column count what they count on
// the input files (row-group statistics and page indexes DuckDB may skip with are
// right), equality queries on the Bloom column count right, and
// parquet_bloom_probe never excludes the row group that holds a present value
// (the native filters are found at their offsets). Two ways of copying:
//
//   - copy: OPTIMIZE with StitchMinRowGroupBytes 1 copies every row group whole
//     (no decode, no re-encode): one row group per input row group;
//   - merge: OPTIMIZE with the default threshold merges the inputs' small row
//     groups page by page (plain columns copied, dictionary and Bloom columns
//     re-encoded): fewer row groups than the inputs.
func TestDuckDBReadsStitchedCompaction(t *testing.T) {
	// (Subtest names without "=": DuckDB would read a key=value directory of the
	// temporary path as a Hive partition column.)
	t.Run("copy", func(t *testing.T) { duckReadsCompaction(t, false) })
	t.Run("merge", func(t *testing.T) { duckReadsCompaction(t, true) })
}

func duckReadsCompaction(t *testing.T, merge bool) {
	rows := rowsKnob(t, 40000)
	const files = 5
	dir := filepath.Join(t.TempDir(), "t")
	tbl, err := table.CreateURL(bg, dir, benchdata.Schema, table.CreateOptions{
		Properties: map[string]string{"skiplake.bloomFilter.columns": "id"}})
	require.NoError(t, err)
	for _, rec := range benchdata.Batches(memory.DefaultAllocator, rows, rows/files) {
		_, err := tbl.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	db := openDuck(t)
	before := duckReplay(t, db, dir, -1)
	require.Len(t, before, files)
	opts := table.OptimizeOptions{TargetFileSize: 1 << 40, StitchMinRowGroupBytes: 1}
	if merge {
		opts.StitchMinRowGroupBytes = 0 // the default threshold: far above these row groups
	}
	res, err := tbl.Optimize(bg, opts)
	require.NoError(t, err)
	if merge {
		require.Equal(t, 1, res.Metrics.NumMergedBins, "metrics %+v", res.Metrics)
	} else {
		require.Equal(t, 1, res.Metrics.NumCopiedBins, "metrics %+v", res.Metrics)
	}
	require.Equal(t, int64(rows), res.Metrics.NumRows)

	after := duckReplay(t, db, dir, -1)
	require.Len(t, after, 1)
	stitched := filepath.Join(dir, filepath.FromSlash(after[0].Path))
	// The bin's order is the inputs' modification-time order: the append order.
	var want []string
	var groups int
	var inputs []string
	for _, f := range res.Plan.Partitions[0].Bins[0].Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		inputs = append(inputs, sqlString(p))
		want = append(want, duckRows(t, db, "SELECT * FROM read_parquet("+sqlString(p)+")", benchdata.Schema)...)
		var n int
		require.NoError(t, db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata("+sqlString(p)+")").Scan(&n))
		groups += n
	}
	require.Len(t, want, rows)
	got := duckRows(t, db, "SELECT * FROM read_parquet("+sqlString(stitched)+")", benchdata.Schema)
	require.True(t, slices.Equal(want, got), "DuckDB reads other rows from the stitched file")

	var n int
	require.NoError(t, db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata("+sqlString(stitched)+")").Scan(&n))
	if merge {
		require.Less(t, n, groups, "row groups merged")
	} else {
		require.Equal(t, groups, n)
	}

	// The skiplake scan agrees with DuckDB's reading of the stitched file.
	sc, err := tbl.Scan(bg)
	require.NoError(t, err)
	rd, err := sc.Read(bg)
	require.NoError(t, err)
	ours := scanRows(t, rd.RecordReader())
	rd.Release()
	require.NoError(t, sameMultiset(ours, got, 5))

	// Filters on every column count on the new file what they count on the inputs.
	in := "read_parquet([" + strings.Join(inputs, ", ") + "])"
	out := "read_parquet(" + sqlString(stitched) + ")"
	requireSameFilterCounts(t, db, in, out, rows)

	for _, id := range []int{0, rows / 3, rows - 1} {
		var c int
		require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet(%s) WHERE id = %d", sqlString(stitched), id)).Scan(&c))
		require.Equal(t, 1, c, "id %d", id)
		// The row group holding id never excluded by its Bloom filter.
		q := fmt.Sprintf(`SELECT count(*) FROM parquet_bloom_probe(%s, 'id', %d) WHERE NOT bloom_filter_excludes`, sqlString(stitched), id)
		require.NoError(t, db.QueryRow(q).Scan(&c))
		require.GreaterOrEqual(t, c, 1, "id %d: every row group excluded by the Bloom filters", id)
	}
	var excluded, total int
	require.NoError(t, db.QueryRow(fmt.Sprintf(`SELECT count(*) FILTER (WHERE bloom_filter_excludes), count(*) FROM parquet_bloom_probe(%s, 'id', %d)`,
		sqlString(stitched), -17)).Scan(&excluded, &total))
	require.Equal(t, n, total)
	require.Greater(t, excluded, total/2, "an absent id is excluded by few row groups: filters not found at their offsets?")
}

// requireSameFilterCounts checks that, on every column of benchdata.Schema, the
// filters =, <, >= (against the value of the rows with id 0, rows/3 and rows-1) and
// IS NULL count as many rows of out as of in (two DuckDB table expressions).
func requireSameFilterCounts(t *testing.T, db *sql.DB, in, out string, rows int) {
	t.Helper()
	for _, f := range benchdata.Schema.Fields() {
		col := f.Name
		for _, at := range []int{0, rows / 3, rows - 1} {
			v := fmt.Sprintf("(SELECT %s FROM %s WHERE id = %d)", col, in, at)
			for _, pred := range []string{col + " = " + v, col + " < " + v, col + " >= " + v, col + " IS NULL"} {
				var a, b int
				require.NoError(t, db.QueryRow("SELECT count(*) FROM "+in+" WHERE "+pred).Scan(&a))
				require.NoError(t, db.QueryRow("SELECT count(*) FROM "+out+" WHERE "+pred).Scan(&b))
				require.Equal(t, a, b, "WHERE %s", pred)
			}
		}
	}
}
