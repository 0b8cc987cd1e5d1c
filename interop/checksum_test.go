package interop

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/table"
)

// zstdPageChecksums returns, for every data page of the Parquet file at path (found
// through its offset index), whether the page's zstd frame declares a content
// checksum (Frame_Header_Descriptor bit 2, RFC 8878).
func zstdPageChecksums(t *testing.T, path string) []bool {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	magic := []byte{0x28, 0xB5, 0x2F, 0xFD}
	var flags []bool
	for rg := 0; rg < pr.NumRowGroups(); rg++ {
		rgi, err := pr.GetPageIndexReader().RowGroup(rg)
		require.NoError(t, err)
		for c := 0; c < pr.MetaData().Schema.NumColumns(); c++ {
			oi, err := rgi.GetOffsetIndex(c)
			require.NoError(t, err)
			for _, loc := range oi.GetPageLocations() {
				page := data[loc.Offset : loc.Offset+int64(loc.CompressedPageSize)]
				at := bytes.Index(page, magic) // after the page header
				require.GreaterOrEqual(t, at, 0, "%s: row group %d column %d: page without a zstd frame", path, rg, c)
				require.Greater(t, len(page), at+4)
				flags = append(flags, page[at+4]&0x04 != 0)
			}
		}
	}
	return flags
}

// TestZstdPagesReadBothWays: skiplake's zstd pages carry frame checksums (the only
// check of page data its files have), which DuckDB reads (and verifies) to the same
// rows as skiplake; and skiplake reads DuckDB's zstd pages, which carry none.
func TestZstdPagesReadBothWays(t *testing.T) {
	mt := writeMixedTable(t, t.TempDir(), nil, seedKnob(t, 4711), rowsKnob(t, 1500), nil)
	db := openDuck(t)
	files := duckReplay(t, db, mt.dir, mt.latest)
	require.NotEmpty(t, files)
	pages := 0
	for _, f := range files {
		for _, has := range zstdPageChecksums(t, filepath.Join(mt.dir, filepath.FromSlash(f.Path))) {
			require.True(t, has, "%s: a page without a zstd checksum", f.Path)
			pages++
		}
	}
	require.Greater(t, pages, 10)
	snap, err := mt.tbl.Snapshot(bg, table.Latest())
	require.NoError(t, err)
	sc, err := snap.Scan(bg)
	require.NoError(t, err)
	tab, err := sc.ReadAll(bg)
	require.NoError(t, err)
	ours := arrowRows(t, tab)
	tab.Release()
	require.NotEmpty(t, ours)
	theirs := duckRows(t, db, duckTableSQL(t, mt.dir, mt.schema, mt.parts, files), mt.schema)
	require.NoError(t, sameMultiset(ours, theirs, 5))

	// DuckDB's zstd (libzstd) pages, read back by skiplake's reader.
	out := filepath.Join(t.TempDir(), "duck.parquet")
	_, err = db.Exec("COPY (SELECT range AS id, 'v' || (range % 97) AS s, CAST(range AS DOUBLE) * 0.5 AS d FROM range(20000)) TO " +
		sqlString(out) + " (FORMAT parquet, COMPRESSION zstd)")
	require.NoError(t, err)
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	r, err := datafile.Open(f, st.Size(), datafile.ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	var n int64
	var sum float64
	require.NoError(t, r.Read(bg, r.Schema(), nil, func(rec arrow.RecordBatch, _ int64) error {
		n += rec.NumRows()
		for _, v := range rec.Column(2).(*array.Float64).Float64Values() {
			sum += v
		}
		return nil
	}))
	require.Equal(t, int64(20000), n)
	require.Equal(t, 0.5*19999*20000/2, sum)
}
