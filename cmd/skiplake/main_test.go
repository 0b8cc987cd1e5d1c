package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
)

// cli runs one invocation and returns its exit status, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// ageFiles sets back by d the modification time of every file of the table tbl
// outside _delta_log/, and of the temporary files inside it: VACUUM never deletes an
// unreferenced file younger than vacuum.MinUnreferencedAge, whatever the
// retention, so a test that wants a forced --retain 0s to reclaim files it just
// orphaned ages them first.
func ageFiles(t *testing.T, tbl string, d time.Duration) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(tbl, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		// Commit files keep their times (they are the commits' timestamps); a
		// temporary file a killed commit left in _delta_log/ ages like the others.
		if rel, _ := filepath.Rel(tbl, p); strings.HasPrefix(filepath.ToSlash(rel), "_delta_log/") && !strings.HasSuffix(rel, ".skiplake-tmp") {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		return os.Chtimes(p, st.ModTime().Add(-d), st.ModTime().Add(-d))
	}))
}

func writeParquet(t *testing.T, path string, ids []int64, countries []string) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(countries, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
}

func TestTranscript(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "events")
	p1 := filepath.Join(dir, "a.parquet")
	p2 := filepath.Join(dir, "b.parquet")
	writeParquet(t, p1, []int64{1, 2, 3}, []string{"DE", "FR", "DE"})
	writeParquet(t, p2, []int64{4, 5}, []string{"JP", "DE"})

	code, out, errs := cli(t, "append", tbl, p1, "--partition-by", "country")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "appended "+p1+": version 0, 3 rows") // the table's creation carries the rows
	code, out, errs = cli(t, "append", tbl, p2)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "version 1, 2 rows")

	code, out, errs = cli(t, "scan", tbl, "--filter", "country = 'DE' AND id > 1", "--columns", "id", "--format", "csv")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "id", lines[0])
	require.ElementsMatch(t, []string{"3", "5"}, lines[1:])

	code, out, errs = cli(t, "scan", tbl, "--version", "0", "--format", "jsonl", "--columns", "country,id")
	require.Equal(t, 0, code, errs)
	require.Equal(t, 3, strings.Count(out, "\n"))
	require.Contains(t, out, `{"country":"FR","id":2}`)

	code, out, errs = cli(t, "scan", tbl, "--limit", "2")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "(2 rows)")

	outPath := filepath.Join(dir, "out.parquet")
	code, _, errs = cli(t, "scan", tbl, "--format", "parquet", "--output", outPath)
	require.Equal(t, 0, code, errs)
	st, err := os.Stat(outPath)
	require.NoError(t, err)
	require.Positive(t, st.Size())

	code, out, errs = cli(t, "describe", tbl)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "partitioned by  country")
	require.Contains(t, out, "records         5")

	code, out, errs = cli(t, "history", tbl, "--format", "jsonl")
	require.Equal(t, 0, code, errs)
	require.Equal(t, 2, strings.Count(out, "\n"))
	require.Contains(t, out, `"operation":"WRITE"`)

	code, out, errs = cli(t, "checkpoint", tbl)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "checkpoint written at version 1")
	_, err = os.Stat(filepath.Join(tbl, "_delta_log", "00000000000000000001.checkpoint.parquet"))
	require.NoError(t, err)
}

func TestErrorsAreClear(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	p := filepath.Join(dir, "a.parquet")
	writeParquet(t, p, []int64{1}, []string{"DE"})
	code, _, errs := cli(t, "append", tbl, p)
	require.Equal(t, 0, code, errs)

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", []string{"scan", tbl, "--nope"}, 2, "flag provided but not defined: -nope"},
		{"bad filter says where", []string{"scan", tbl, "--filter", "id >= AND"}, 2, "expr: at"},
		{"unknown column", []string{"scan", tbl, "--columns", "idd"}, 1, `"idd"`},
		{"missing table", []string{"scan", filepath.Join(dir, "nope")}, 1, "not a Delta table"},
		{"version out of range", []string{"scan", tbl, "--version", "99"}, 1, "99"},
		{"bad format", []string{"scan", tbl, "--format", "xml"}, 2, `--format "xml"`},
		{"version and timestamp", []string{"scan", tbl, "--version", "0", "--timestamp", "2020-01-01"}, 2, "mutually exclusive"},
		{"parquet needs output", []string{"scan", tbl, "--format", "parquet"}, 2, "--output"},
		{"append bad input", []string{"append", tbl, filepath.Join(dir, "x.txt")}, 2, "unknown input format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := cli(t, c.args...)
			require.Equal(t, c.code, code, errs)
			require.Contains(t, errs, c.want)
		})
	}
}

func TestAppendCSVAndJSONL(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	csvPath := filepath.Join(dir, "a.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte("id,name,score\n1,ann,1.5\n2,bob,\n"), 0o644))
	code, out, errs := cli(t, "append", tbl, csvPath)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "2 rows")
	jsonl := filepath.Join(dir, "b.jsonl")
	require.NoError(t, os.WriteFile(jsonl, []byte(`{"id":3,"name":"cy","score":2.5}`+"\n"), 0o644))
	code, _, errs = cli(t, "append", tbl, jsonl)
	require.Equal(t, 0, code, errs)
	code, out, errs = cli(t, "scan", tbl, "--format", "jsonl", "--filter", "score IS NULL OR score > 2")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"name":"bob"`)
	require.Contains(t, out, `"name":"cy"`)
	require.NotContains(t, out, `"name":"ann"`)
}

func TestFilesAndExplain(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i, ids := range [][]int64{{1, 2, 3}, {10, 11, 12}, {20, 21, 22}} {
		p := filepath.Join(dir, "in"+string(rune('a'+i))+".parquet")
		writeParquet(t, p, ids, []string{"DE", "FR", "JP"})
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	code, out, errs := cli(t, "files", tbl, "--filter", "id >= 10 AND id <= 12")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "(1 of 3 files kept, 2 skipped)")
	require.Contains(t, out, "must-match")

	code, out, errs = cli(t, "files", tbl, "--format", "jsonl", "--filter", "id > 2")
	require.Equal(t, 0, code, errs)
	require.Equal(t, 3, strings.Count(out, "\n"))
	require.Contains(t, out, `"verdict":"might-match"`)

	code, out, errs = cli(t, "explain", tbl, "--filter", "id = 11")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "filter: id = 11")
	require.Regexp(t, `stats\s+files\s+3\s+2\s+1`, out)
	require.Contains(t, out, "rowgroup")

	code, out, errs = cli(t, "explain", tbl, "--filter", "country = 'XX'", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"skipped": 3`)

	code, _, errs = cli(t, "explain", tbl)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--filter is required")
}

func TestBenchSkipping(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := cli(t, "bench", "skipping", "--dataset", "synthetic", "--rows", "5000", "--files", "20",
		"--layouts", "insertion,hilbert", "--workloads", "box2-1%", "--queries", "10", "--svg", dir)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "hilbert")
	require.Contains(t, out, "box2-1%")
	for _, f := range []string{"files.svg", "boxes.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Contains(t, string(data), "<svg")
	}
	code, _, errs = cli(t, "bench", "skipping", "--dataset", "nope")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "nope")
}

func TestOptimizeAndVacuum(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, "in"+string(rune('a'+i))+".parquet")
		base := int64(i * 10)
		writeParquet(t, p, []int64{base + 3, base + 1, base + 2}, []string{"DE", "FR", "JP"})
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	_, before, _ := cli(t, "scan", tbl, "--format", "csv")

	code, out, errs := cli(t, "optimize", tbl, "--hilbert-by", "id,country", "--dry-run")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "dry run")
	require.Contains(t, out, "4 files")

	code, out, errs = cli(t, "optimize", tbl, "--zorder-by", "id,country", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"numRemovedFiles": 4`)

	_, after, _ := cli(t, "scan", tbl, "--format", "csv")
	require.ElementsMatch(t, strings.Split(strings.TrimSpace(before), "\n"), strings.Split(strings.TrimSpace(after), "\n"), "O1: same rows")

	code, out, errs = cli(t, "history", tbl, "--limit", "1")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "OPTIMIZE")

	// Default retention keeps everything just removed; a zero retention needs --force.
	code, out, errs = cli(t, "vacuum", tbl, "--dry-run")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "would delete 0 files")
	code, _, errs = cli(t, "vacuum", tbl, "--retain", "0s")
	require.Equal(t, 1, code)
	require.NotEmpty(t, errs)
	// Forced to zero, the files just removed are still younger than the minimum age
	// (a write could be committing them): kept, and said so; an hour later they go.
	code, out, errs = cli(t, "vacuum", tbl, "--retain", "0s", "--force")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "deleted 0 files")
	require.Contains(t, out, "kept 4 file(s) younger than 1h")
	ageFiles(t, tbl, vacuum.MinUnreferencedAge+time.Minute)
	code, out, errs = cli(t, "vacuum", tbl, "--retain", "0s", "--force")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "deleted 4 files")
	_, final, _ := cli(t, "scan", tbl, "--format", "csv")
	require.ElementsMatch(t, strings.Split(strings.TrimSpace(before), "\n"), strings.Split(strings.TrimSpace(final), "\n"))

	code, _, errs = cli(t, "optimize", tbl, "--where", "id > 3")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "partition columns only")
	code, _, errs = cli(t, "optimize", tbl, "--zorder-by", "id", "--hilbert-by", "id")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "mutually exclusive")
}

func TestOptimizeBloomBackfill(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 3; i++ {
		p := filepath.Join(dir, "in"+string(rune('a'+i))+".parquet")
		// Overlapping id ranges: min/max cannot skip a lookup, a Bloom filter can.
		writeParquet(t, p, []int64{1 + int64(i), 100 + 3*int64(i), 200}, []string{"DE", "FR", "JP"})
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	code, out, errs := cli(t, "optimize", tbl, "--bloom", "id", "--target-size", "1KiB", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"bloomColumns"`)
	code, out, errs = cli(t, "describe", tbl)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "skiplake.bloomFilter.columns=id")
	code, out, errs = cli(t, "explain", tbl, "--filter", "id = 150", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"level": "bloom"`)
	code, out, errs = cli(t, "scan", tbl, "--filter", "id = 103", "--format", "csv")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "id,country\n103,FR\n", out)
}

func TestExplainShowsPages(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	ids := make([]int64, 200_000)
	cs := make([]string, len(ids))
	for i := range ids {
		ids[i] = int64(i)
		cs[i] = "DE"
	}
	p := filepath.Join(dir, "a.parquet")
	writeParquet(t, p, ids, cs)
	code, _, errs := cli(t, "append", tbl, p)
	require.Equal(t, 0, code, errs)
	code, out, errs := cli(t, "explain", tbl, "--filter", "id >= 1000 AND id < 1100")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `page\s+rows\s+200000\s+\d+\s+\d+\s+-\s+-\s+-\n`, out, "the page level counts rows and shows no bytes")
	require.Regexp(t, `rowgroup\s+row groups\s+\d+`, out)

	// Every figure is consistent: the row groups considered are inside the files
	// kept, so their stored bytes cannot exceed the files' bytes.
	code, out, errs = cli(t, "explain", tbl, "--filter", "id >= 1000 AND id < 1100", "--format", "json")
	require.Equal(t, 0, code, errs)
	var rep table.ScanReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	rg, pg := rep.Level("rowgroup"), rep.Level("page")
	require.Equal(t, skipping.UnitRowGroups, rg.Unit)
	require.Equal(t, skipping.UnitRows, pg.Unit)
	require.Positive(t, rg.BytesTotal)
	require.LessOrEqual(t, rg.BytesTotal, rep.Files.BytesTotal-rep.Files.BytesSkipped)
	require.Equal(t, int64(200000), pg.Total)
	require.Zero(t, pg.BytesTotal)
	code, out, errs = cli(t, "scan", tbl, "--filter", "id >= 1000 AND id < 1100", "--format", "csv")
	require.Equal(t, 0, code, errs)
	require.Equal(t, 101, strings.Count(out, "\n"))
}

// TestExplainEchoesTheFilterAsWritten: a double column compared with 500 is echoed
// as 500, not as the bound double (5e+02).
func TestExplainEchoesTheFilterAsWritten(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	in := filepath.Join(dir, "a.csv")
	require.NoError(t, os.WriteFile(in, []byte("id,amount\n1,10.5\n2,600.25\n"), 0o644))
	code, _, errs := cli(t, "append", tbl, in)
	require.Equal(t, 0, code, errs)
	for _, f := range []string{"amount > 500", "amount > 5e2 AND id IN (1, 2)", "amount >= -0.50"} {
		code, out, errs := cli(t, "explain", tbl, "--filter", f)
		require.Equal(t, 0, code, errs)
		require.Contains(t, out, "filter: "+f+"\n")
	}
}

// TestScanNullEmptyAndNewlines: CSV tells NULL (empty, unquoted) from the empty
// string (""), --null picks another NULL spelling, and the table format keeps each
// row on one line.
func TestScanNullEmptyAndNewlines(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	in := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"id":1,"s":null}`+"\n"+`{"id":2,"s":""}`+"\n"+`{"id":3,"s":"two\nlines"}`+"\n"), 0o644))
	code, _, errs := cli(t, "append", tbl, in)
	require.Equal(t, 0, code, errs)
	code, out, errs := cli(t, "scan", tbl, "--format", "csv")
	require.Equal(t, 0, code, errs)
	lines := strings.SplitAfter(out, "\n")
	require.Equal(t, "id,s\n", lines[0])
	require.ElementsMatch(t, []string{"1,\n", "2,\"\"\n", "3,\"two\nlines\"\n"}, []string{lines[1], lines[2], lines[3] + lines[4]})
	code, out, errs = cli(t, "scan", tbl, "--format", "csv", "--null", `\N`, "--filter", "id = 1")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "id,s\n1,\\N\n", out)
	code, out, errs = cli(t, "scan", tbl, "--filter", "id = 3")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "id | s\n---+-----------\n3  | two\\nlines\n(1 row)\n", out)
	code, _, errs = cli(t, "scan", tbl, "--format", "jsonl", "--null", "x")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--null applies to --format csv and table")
}

// TestOptimizeReportsPlanProgressAndIdleRuns: the plan comes first; without a
// terminal, progress is plain lines on stderr (--quiet: none); a re-run that has
// nothing to do says why and what to run.
func TestOptimizeReportsPlanProgressAndIdleRuns(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, "in"+string(rune('a'+i))+".parquet")
		writeParquet(t, p, []int64{int64(i), int64(i + 10)}, []string{"DE", "FR"})
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, progressInterval: time.Nanosecond}
	code := run(context.Background(), e, []string{"optimize", tbl, "--zorder-by", "id,country"})
	require.Equal(t, 0, code, errb.String())
	require.Regexp(t, `^plan +version 3, zorder on id, country, target file size 128\.0 MiB, 1 bins, 4 files, \d+ bytes\n  bin 1 +\(table\) cluster: 4 files, \d+ bytes, 8 rows\ndone +committed versions \[4\]`, out.String())
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2, "progress lines: %q", errb.String())
	for _, l := range lines {
		require.Regexp(t, `^optimize: \d+% \(.+ of .+\), .*elapsed .* \[(read|spill|write|commit)\]$`, l)
	}
	require.Contains(t, lines[len(lines)-1], "100%")
	require.Contains(t, lines[len(lines)-1], ", 1/1 bins, 4/4 files, ")

	// The table is one finished cluster now: a new target size alone changes nothing.
	code, stdout, errs := cli(t, "optimize", tbl, "--zorder-by", "id,country", "--target-size", "256MiB", "--quiet")
	require.Equal(t, 0, code, errs)
	require.Empty(t, errs, "--quiet prints no progress")
	require.Contains(t, stdout, "nothing to do: every partition is already one cluster by zorder on id, country; to re-cluster it run: skiplake optimize "+tbl+" --zorder-by id,country --target-size 256MiB --quiet --full\n")
	code, stdout, errs = cli(t, "optimize", tbl, "--zorder-by", "id,country", "--target-size", "256MiB", "--quiet", "--full")
	require.Equal(t, 0, code, errs)
	require.Contains(t, stdout, "committed versions [5]")

	code, stdout, errs = cli(t, "optimize", tbl, "--format", "json", "--quiet")
	require.Equal(t, 0, code, errs)
	var res struct {
		NothingToDo string `json:"nothingToDo"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Contains(t, res.NothingToDo, "it does not split or resize larger ones")
}

// TestOptimizeProgressLinesCountBinsAndFiles: without a terminal, a real OPTIMIZE
// of several bins prints plain progress lines whose bins and files only grow and
// reach the plan's totals (the last line shows them all done); --quiet prints
// none, even with the line interval that makes every report a line.
func TestOptimizeProgressLinesCountBinsAndFiles(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 5; i++ {
		p := filepath.Join(dir, fmt.Sprintf("in%d.parquet", i))
		writeParquet(t, p, []int64{int64(i), int64(i + 10), int64(i + 20)}, []string{"DE", "FR", "JP"})
		code, _, errs := cli(t, "append", tbl, p, "--partition-by", "country")
		require.Equal(t, 0, code, errs)
	}
	optimizeRun := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, progressInterval: time.Nanosecond}
		code := run(context.Background(), e, append([]string{"optimize", tbl}, args...))
		require.Equal(t, 0, code, errb.String())
		return out.String(), errb.String()
	}
	// Three partitions of five small files each: three compaction bins, fifteen files.
	out, errs := optimizeRun()
	require.Regexp(t, `^plan +version 4, compaction, target file size 128\.0 MiB, 3 bins, 15 files, \d+ bytes\n`, out)
	require.Contains(t, out, "removed 15 files")
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	require.GreaterOrEqual(t, len(lines), 3, "progress lines: %q", errs)
	line := regexp.MustCompile(`^optimize: \d+% \(.+ of .+\), (\d+)/3 bins, (\d+)/15 files, .*elapsed .* \[(write|commit)\]$`)
	var bins, files int
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "progress line %q", l)
		b, _ := strconv.Atoi(m[1])
		f, _ := strconv.Atoi(m[2])
		require.True(t, b >= bins && f >= files, "counts went back: %q after %d bins, %d files", l, bins, files)
		bins, files = b, f
	}
	require.Equal(t, 3, bins, "last line %q", lines[len(lines)-1])
	require.Equal(t, 15, files, "last line %q", lines[len(lines)-1])
	require.Contains(t, lines[len(lines)-1], "100% (")

	// The same work with --quiet: no progress at all.
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("more%d.parquet", i))
		writeParquet(t, p, []int64{int64(100 + i)}, []string{"DE"})
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	out, errs = optimizeRun("--quiet")
	require.Contains(t, out, "removed 3 files")
	require.Empty(t, errs, "--quiet prints no progress")
}

func TestNothingToDoNamesTheCommand(t *testing.T) {
	p := &optimize.Plan{Curve: optimize.CurveHilbert, ClusterBy: []string{"a", "b"}, FinishedCubeFiles: 12, MinCubeSize: 100 << 30, TargetFileSize: 1 << 30}
	got := nothingToDo(p, true, []string{"skiplake", "optimize", "s3://b/t", "--hilbert-by", "a,b", "--where", "day = '2026-01-01'", "--target-size", "1GiB"})
	require.Equal(t, "12 files are already clustered by hilbert on a, b in finished clusters (of at least 100.0 GiB), which OPTIMIZE leaves alone (a new --target-size applies only to files it rewrites); "+
		"to re-cluster them run: skiplake optimize s3://b/t --hilbert-by a,b --where 'day = '\\''2026-01-01'\\''' --target-size 1GiB --full", got)
}

// TestCSVRoundTripKeepsNullAndEmpty: what scan --format csv writes, append reads
// back to the same values: NULL stays NULL, the empty string and the string NULL stay
// strings; in a number column an empty quoted field is NULL (there is no empty number).
func TestCSVRoundTripKeepsNullAndEmpty(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	in := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"id":1,"s":null,"n":null}`+"\n"+`{"id":2,"s":"","n":5}`+"\n"+`{"id":3,"s":"NULL","n":6}`+"\n"+`{"id":4,"s":"a,\"b\"\nc","n":7}`+"\n"), 0o644))
	code, _, errs := cli(t, "append", src, in)
	require.Equal(t, 0, code, errs)
	code, csvOut, errs := cli(t, "scan", src, "--format", "csv")
	require.Equal(t, 0, code, errs)
	exported := filepath.Join(dir, "export.csv")
	require.NoError(t, os.WriteFile(exported, []byte(csvOut), 0o644))
	dst := filepath.Join(dir, "dst")
	code, _, errs = cli(t, "append", dst, exported, "--schema", "id bigint, s string, n bigint")
	require.Equal(t, 0, code, errs)
	_, before, _ := cli(t, "scan", src, "--format", "jsonl")
	_, after, _ := cli(t, "scan", dst, "--format", "jsonl")
	require.ElementsMatch(t, strings.Split(strings.TrimSpace(before), "\n"), strings.Split(strings.TrimSpace(after), "\n"))

	quotedNumbers := filepath.Join(dir, "q.csv")
	require.NoError(t, os.WriteFile(quotedNumbers, []byte("id,s,n\n\"9\",\"\",\"\"\n"), 0o644))
	code, _, errs = cli(t, "append", dst, quotedNumbers)
	require.Equal(t, 0, code, errs)
	_, out, _ := cli(t, "scan", dst, "--format", "jsonl", "--filter", "id = 9")
	require.Equal(t, `{"id":9,"s":"","n":null}`+"\n", out)
}
