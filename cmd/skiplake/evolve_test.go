package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

// writeJSONParquet writes JSON rows of schema as a Parquet file.
func writeJSONParquet(t *testing.T, path string, schema *arrow.Schema, rows string) string {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	require.NoError(t, err)
	defer rec.Release()
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return path
}

// TestGoldenEvolution keeps the transcripts of schema evolution, overwrite and
// replaceWhere, and the column ALTERs, run in order on one table.
func TestGoldenEvolution(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "sales")
	in := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	dec := func(p int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: 2} }
	create := []string{"append", tbl, in("sales.csv", "id,day,qty\n1,2024-03-01,5.00\n2,2024-03-01,7.50\n3,2024-03-02,1.25\n"),
		"--schema", "id bigint, day date, qty decimal(15,2)", "--partition-by", "day"}
	code, _, errs := cli(t, create...)
	require.Equal(t, 0, code, errs)
	wide := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true}, {Name: "qty", Type: dec(16), Nullable: true}}, nil)
	fits := writeJSONParquet(t, filepath.Join(dir, "duckdb.parquet"), wide, `[{"id":4,"day":"2024-03-02","qty":"2.00"}]`)
	big := writeJSONParquet(t, filepath.Join(dir, "big.parquet"), wide, `[{"id":5,"day":"2024-03-02","qty":"3.00"},{"id":6,"day":"2024-03-02","qty":"12345678901234.50"}]`)
	cases := []struct {
		name string
		args []string
	}{
		{"evolve-append-decimal-fits", []string{"append", tbl, fits}},
		{"evolve-append-value-does-not-fit", []string{"append", tbl, big}},
		{"evolve-append-new-column-refused", []string{"append", tbl, in("notes.csv", "id,day,qty,note\n7,2024-03-03,1.00,first\n")}},
		{"evolve-append-merge-schema", []string{"append", tbl, in("notes.csv", "id,day,qty,note\n7,2024-03-03,1.00,first\n"), "--merge-schema"}},
		{"evolve-append-missing-column", []string{"append", tbl, in("ids.csv", "id,day\n8,2024-03-03\n")}},
		{"evolve-replace-where", []string{"append", tbl, in("fix.csv", "id,day,qty,note\n2,2024-03-01,8.00,fixed\n"), "--mode", "overwrite", "--replace-where", "day = DATE '2024-03-01' AND id = 2"}},
		{"evolve-replace-where-refused", []string{"append", tbl, in("stray.csv", "id,day,qty\n9,2024-03-01,1.00\n10,2024-03-09,1.00\n"), "--mode", "overwrite", "--replace-where", "day = DATE '2024-03-01'"}},
		{"evolve-replace-where-usage", []string{"append", tbl, in("x.csv", "id\n1\n"), "--replace-where", "id = 1"}},
		{"evolve-scan", []string{"scan", tbl, "--format", "csv"}},
		{"evolve-alter-rename", []string{"alter", tbl, "--rename-column", "qty=quantity"}},
		{"evolve-alter-rename-refused", []string{"alter", tbl, "--rename-column", "note=ID"}},
		{"evolve-alter-drop-partition-refused", []string{"alter", tbl, "--drop-column", "day"}},
		{"evolve-alter-drop", []string{"alter", tbl, "--drop-column", "note"}},
		{"evolve-alter-set-type", []string{"alter", tbl, "--set-type", "quantity=decimal(20,2)"}},
		{"evolve-alter-set-type-refused", []string{"alter", tbl, "--set-type", "quantity=int"}},
		{"evolve-alter-comment", []string{"alter", tbl, "--comment", "quantity=units sold"}},
		{"evolve-describe", []string{"describe", tbl}},
		{"evolve-scan-after-alter", []string{"scan", tbl, "--format", "csv"}},
		{"evolve-scan-version-1", []string{"scan", tbl, "--version", "1", "--format", "csv"}},
		{"evolve-overwrite-schema", []string{"append", tbl, in("fresh.csv", "region,total\neu,10\nus,20\n"), "--mode", "overwrite", "--overwrite-schema", "--partition-by", "region"}},
		{"evolve-history", []string{"history", tbl}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGolden(t, c.name, transcript(t, dir, c.args))
		})
	}
}

// TestMergeSchemaCLI: merge --merge-schema adds the source's new columns; a CSV
// source's new columns are typed by inference.
func TestMergeSchemaCLI(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "a.csv"), "id,v\n1,a\n2,b\n"))
	src := writeText(t, filepath.Join(dir, "s.csv"), "id,v,score\n2,B,1.5\n3,c,2.5\n")
	code, _, errs := cli(t, "merge", tbl, src, "--on", "id")
	require.Equal(t, 1, code)
	require.Contains(t, errs, `"score" is not in the table schema`)
	mustCLI(t, "merge", tbl, src, "--on", "id", "--merge-schema")
	require.Equal(t, []string{"id,v,score", "1,a,", "2,B,1.5", "3,c,2.5"}, scanCSV(t, tbl))
	require.Regexp(t, `score\s+double`, mustCLI(t, "describe", tbl))
}
