package interop

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/benchdata"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/table"
)

// TestDuckDBReadsCopiedExport exports a whole table version by copying its files'
// row groups (Scan.CopyParquet, what scan --format parquet does) and checks with
// DuckDB: read_parquet of the copy returns exactly, in order, the rows and column
// names and types of the re-encoded export (the CLI's other path); it has the
// table's row groups; filters count on it what they count on the re-encoded file;
// its Bloom filters are found (parquet_bloom_probe). Plain and column-mapped
// (physical names in the files, logical names in the export).
func TestDuckDBReadsCopiedExport(t *testing.T) {
	for _, mode := range []string{"none", "name"} {
		t.Run(mode, func(t *testing.T) {
			const files = 3
			rows := max(rowsKnob(t, 40000), 1<<15) * files // 32Ki rows a row group on average: copied
			dir := filepath.Join(t.TempDir(), "t")
			tbl, err := table.CreateURL(bg, dir, benchdata.Schema, table.CreateOptions{
				Properties: map[string]string{"skiplake.bloomFilter.columns": "id", "delta.columnMapping.mode": mode}})
			require.NoError(t, err)
			for _, rec := range benchdata.Batches(memory.DefaultAllocator, rows, rows/files) {
				_, err := tbl.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{})
				rec.Release()
				require.NoError(t, err)
			}
			sc, err := tbl.Scan(bg)
			require.NoError(t, err)
			var cp bytes.Buffer
			reason, err := sc.CopyParquet(bg, &cp)
			require.NoError(t, err)
			require.Empty(t, reason)
			copied := filepath.Join(t.TempDir(), "copy.parquet")
			require.NoError(t, os.WriteFile(copied, cp.Bytes(), 0o644))

			// The re-encoded export, as the CLI writes it (render's parquet format).
			var re bytes.Buffer
			w, err := datafile.NewWriter(&re, sc.Schema(), datafile.WriterOptions{})
			require.NoError(t, err)
			rd, err := sc.Read(bg)
			require.NoError(t, err)
			for rd.Next() {
				require.NoError(t, w.Write(rd.RecordBatch()))
			}
			require.NoError(t, rd.Err())
			rd.Release()
			_, err = w.Close()
			require.NoError(t, err)
			reencoded := filepath.Join(t.TempDir(), "re.parquet")
			require.NoError(t, os.WriteFile(reencoded, re.Bytes(), 0o644))

			db := openDuck(t)
			describe := func(p string) []string {
				r, err := db.Query("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(" + sqlString(p) + "))")
				require.NoError(t, err)
				defer r.Close()
				var out []string
				for r.Next() {
					var n, ty string
					require.NoError(t, r.Scan(&n, &ty))
					out = append(out, n+" "+ty)
				}
				require.NoError(t, r.Err())
				return out
			}
			require.Equal(t, describe(reencoded), describe(copied))
			require.Equal(t, "id BIGINT", describe(copied)[0])
			want := duckRows(t, db, "SELECT * FROM read_parquet("+sqlString(reencoded)+")", benchdata.Schema)
			got := duckRows(t, db, "SELECT * FROM read_parquet("+sqlString(copied)+")", benchdata.Schema)
			require.Len(t, got, rows)
			require.True(t, slices.Equal(want, got), "DuckDB reads other rows from the copied export")

			var groups, n int
			for _, f := range sc.Files() {
				require.NoError(t, db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata("+sqlString(filepath.Join(dir, f.Path))+")").Scan(&n))
				groups += n
			}
			require.NoError(t, db.QueryRow("SELECT count(DISTINCT row_group_id) FROM parquet_metadata("+sqlString(copied)+")").Scan(&n))
			require.Equal(t, groups, n, "the table's row groups")

			in, out := "read_parquet("+sqlString(reencoded)+")", "read_parquet("+sqlString(copied)+")"
			requireSameFilterCounts(t, db, in, out, rows)
			for _, id := range []int{0, rows / 3, rows - 1} {
				var c int
				q := fmt.Sprintf(`SELECT count(*) FROM parquet_bloom_probe(%s, 'id', %d) WHERE NOT bloom_filter_excludes`, sqlString(copied), id)
				require.NoError(t, db.QueryRow(q).Scan(&c))
				require.GreaterOrEqual(t, c, 1, "id %d: every row group excluded by the Bloom filters", id)
			}
			var excluded, total int
			require.NoError(t, db.QueryRow(fmt.Sprintf(`SELECT count(*) FILTER (WHERE bloom_filter_excludes), count(*) FROM parquet_bloom_probe(%s, 'id', %d)`,
				sqlString(copied), -17)).Scan(&excluded, &total))
			require.Equal(t, n, total)
			require.Greater(t, excluded, total/2, "an absent id is excluded by few row groups: filters not found at their offsets?")
		})
	}
}
