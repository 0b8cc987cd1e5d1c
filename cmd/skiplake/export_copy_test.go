package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"
)

// exportFooter opens an exported file and returns its row groups and whether some
// column chunk has a Bloom filter, and its codec.
func exportFooter(t *testing.T, path string) (rowGroups int, bloom bool, codec string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := file.NewParquetReader(f)
	require.NoError(t, err)
	defer r.Close()
	md := r.MetaData()
	for rg := range md.NumRowGroups() {
		for c := range md.Schema.NumColumns() {
			cc, err := md.RowGroup(rg).ColumnChunk(c)
			require.NoError(t, err)
			bloom = bloom || cc.BloomFilterOffset() > 0
			codec = cc.Compression().String()
		}
	}
	return md.NumRowGroups(), bloom, codec
}

// sortedCSV is scan --format csv of tbl with args, the header first, the rows sorted.
func sortedCSV(t *testing.T, tbl string, args ...string) []string {
	t.Helper()
	code, out, errs := cli(t, append([]string{"scan", tbl, "--format", "csv"}, args...)...)
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(lines[1:])
	return lines
}

// scan --format parquet of a whole table version whose files skiplake wrote copies
// their row groups (the table's Bloom filters and codec come along); a filter,
// a column list or a limit re-encodes. Both hold the table's rows, read back by the
// CLI itself (append of the export into a new table).
func TestScanParquetExportCopiesRowGroups(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	const n = 40000 // rows per file: row groups of 32Ki rows or more on average are copied
	for i := range 2 {
		ids := make([]int64, n)
		cs := make([]string, n)
		for j := range ids {
			ids[j] = int64(i*n + j)
			cs[j] = []string{"DE", "FR", "JP", ""}[j%4]
		}
		p := filepath.Join(dir, "in.parquet")
		writeParquet(t, p, ids, cs)
		args := []string{"append", tbl, p}
		if i == 0 {
			args = append(args, "--property", "skiplake.bloomFilter.columns=id", "--property", "delta.parquet.compression.codec=snappy")
		}
		code, _, errs := cli(t, args...)
		require.Equal(t, 0, code, errs)
	}
	want := sortedCSV(t, tbl)
	require.Len(t, want, 2*n+1)

	cases := []struct {
		name  string
		args  []string
		copy  bool
		where string // the rows' filter, for the expected rows
	}{
		{"whole version", nil, true, ""},
		{"every column in order", []string{"--columns", "id,country"}, true, ""},
		{"filter", []string{"--filter", "id >= 0"}, false, ""},
		{"filter that drops rows", []string{"--filter", "id < 1000"}, false, "id < 1000"},
		{"columns reordered", []string{"--columns", "country,id"}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".parquet")
			code, _, errs := cli(t, append([]string{"scan", tbl, "--format", "parquet", "--output", out}, tc.args...)...)
			require.Equal(t, 0, code, errs)
			rgs, bloom, codec := exportFooter(t, out)
			if tc.copy {
				require.Equal(t, 2, rgs, "the table's two row groups")
				require.True(t, bloom, "the table's Bloom filters")
				require.Equal(t, "SNAPPY", codec, "the table's codec")
			} else {
				require.False(t, bloom, "re-encoded exports have no Bloom filter")
				require.Equal(t, "ZSTD", codec)
			}
			back := filepath.Join(dir, "back-"+strings.ReplaceAll(tc.name, " ", "-"))
			code, _, errs = cli(t, "append", back, out)
			require.Equal(t, 0, code, errs)
			got := sortedCSV(t, back, "--columns", "id,country")
			exp := want
			if tc.where != "" {
				exp = sortedCSV(t, tbl, "--filter", tc.where)
			}
			require.Equal(t, exp, got)
		})
	}
}

// A data file that is missing fails the export as a scan fails (the copy falls
// back, the read names the file) and leaves no output, partial or temporary.
func TestScanParquetExportMissingFile(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	ids := make([]int64, 40000)
	cs := make([]string, len(ids))
	for i := range ids {
		ids[i] = int64(i)
	}
	p := filepath.Join(dir, "in.parquet")
	writeParquet(t, p, ids, cs)
	for range 2 {
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	parts, err := filepath.Glob(filepath.Join(tbl, "part-*.parquet"))
	require.NoError(t, err)
	require.Len(t, parts, 2)
	require.NoError(t, os.Remove(parts[1]))
	outDir := filepath.Join(dir, "out")
	require.NoError(t, os.Mkdir(outDir, 0o755))
	out := filepath.Join(outDir, "x.parquet")
	code, _, errs := cli(t, "scan", tbl, "--format", "parquet", "--output", out)
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, filepath.Base(parts[1]))
	left, err := os.ReadDir(outDir)
	require.NoError(t, err)
	require.Empty(t, left, "output left behind")
}
