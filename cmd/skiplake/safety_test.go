package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
)

// Transcript tests for issue #10 (no data loss from misuse, bad input or crashes).

func writeText(t *testing.T, path, content string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, args...)
	require.Equal(t, 0, code, "skiplake %s: %s", strings.Join(args, " "), errs)
	return out
}

// scanCSV returns the table's rows as sorted CSV lines (header first).
func scanCSV(t *testing.T, tbl string, extra ...string) []string {
	t.Helper()
	out := mustCLI(t, append([]string{"scan", tbl, "--format", "csv"}, extra...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	body := lines[1:]
	sortStrings(body)
	return append(lines[:1], body...)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func latestVersion(t *testing.T, tbl string) int64 {
	t.Helper()
	tb, err := table.OpenURL(context.Background(), tbl)
	require.NoError(t, err)
	v, err := tb.Log().LatestVersion(context.Background())
	require.NoError(t, err)
	return v
}

// Item 1: a failed scan never destroys a previous export, and an output path inside
// the table is refused whichever way it is spelled.
func TestScanOutputNeverDestroysFiles(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "in", "a.csv"), "id,v\n1,x\n2,y\n"))
	export := writeText(t, filepath.Join(dir, "export.csv"), "previous export\n")

	// Fails before reading (unknown column) and while reading (a data file vanished).
	code, _, _ := cli(t, "scan", tbl, "--filter", "nope = 1", "--format", "csv", "--output", export)
	require.Equal(t, 1, code)
	data, _ := os.ReadFile(export)
	require.Equal(t, "previous export\n", string(data))

	entries, err := os.ReadDir(tbl)
	require.NoError(t, err)
	var dataFile string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".parquet") {
			dataFile = filepath.Join(tbl, e.Name())
		}
	}
	require.NotEmpty(t, dataFile)
	live, err := os.ReadFile(dataFile)
	require.NoError(t, err)

	// Outputs inside the table: directly, through .., through a symlinked directory,
	// and the table directory itself.
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(tbl, link))
	for _, out := range []string{
		dataFile,
		filepath.Join(tbl, "new.parquet"),
		filepath.Join(dir, "in", "..", "t", filepath.Base(dataFile)),
		filepath.Join(link, filepath.Base(dataFile)),
		filepath.Join(link, "sub", "x.parquet"),
		tbl,
	} {
		code, _, errs := cli(t, "scan", tbl, "--format", "parquet", "--output", out)
		require.Equal(t, 2, code, "output %s: %s", out, errs)
		require.Contains(t, errs, "inside the table")
	}
	after, err := os.ReadFile(dataFile)
	require.NoError(t, err)
	require.Equal(t, live, after, "a live data file was touched")

	// A data file missing mid-scan: the scan fails, the export stays.
	require.NoError(t, os.Rename(dataFile, dataFile+".moved"))
	code, _, _ = cli(t, "scan", tbl, "--format", "csv", "--output", export)
	require.Equal(t, 1, code)
	data, _ = os.ReadFile(export)
	require.Equal(t, "previous export\n", string(data))
	require.NoError(t, os.Rename(dataFile+".moved", dataFile))

	// Success replaces it; no temporary files are left beside it.
	mustCLI(t, "scan", tbl, "--format", "csv", "--output", export)
	data, _ = os.ReadFile(export)
	require.Equal(t, "id,v\n1,x\n2,y\n", string(data))
	left, _ := filepath.Glob(filepath.Join(dir, ".export.csv.*"))
	require.Empty(t, left)
	require.Equal(t, []string{"id,v", "1,x", "2,y"}, scanCSV(t, tbl))
}

// Item 2: append/create do not turn a directory in use into a table; with the
// explicit flag they do, and VACUUM keeps what was there.
func TestAppendRefusesNonEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	in := writeText(t, filepath.Join(dir, "input.csv"), "id,v\n1,x\n")
	code, _, errs := cli(t, "append", dir, in)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "not empty")
	require.Contains(t, errs, "input.csv")
	_, err := os.Stat(filepath.Join(dir, "_delta_log"))
	require.True(t, os.IsNotExist(err))
	code, _, errs = cli(t, "create", dir, "--schema", "id bigint")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "--allow-non-empty")

	mustCLI(t, "append", dir, in, "--allow-non-empty")
	out := mustCLI(t, "vacuum", dir, "--retain", "0s", "--force")
	require.Contains(t, out, "deleted 0 files")
	require.Contains(t, out, "kept 1 file(s) older than the table")
	_, err = os.Stat(in)
	require.NoError(t, err, "VACUUM deleted the input file")
}

// Item 3: one command, one commit; a bad input commits nothing, and a retry does
// not duplicate anything.
func TestMultiFileAppendIsOneCommit(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	a := writeText(t, filepath.Join(dir, "a.csv"), "id,v\n1,a\n2,a\n")
	b := writeText(t, filepath.Join(dir, "b.csv"), "id,v\n3,b\n")
	bad := writeText(t, filepath.Join(dir, "bad.csv"), "id,v\n4,c\n5,c,extra\n")
	c := writeText(t, filepath.Join(dir, "c.csv"), "id,v\n6,c\n")

	// New table: nothing at all is left behind.
	code, _, errs := cli(t, "append", tbl, a, b, bad)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "bad.csv:3: 3 fields")
	_, err := os.Stat(tbl)
	require.True(t, os.IsNotExist(err), "a failed first append left %s behind", tbl)

	out := mustCLI(t, "append", tbl, a, b)
	require.Contains(t, out, "version 0, 3 rows")
	// Existing table: no version is added.
	code, _, _ = cli(t, "append", tbl, c, bad)
	require.Equal(t, 1, code)
	require.EqualValues(t, 0, latestVersion(t, tbl))
	require.Len(t, scanCSV(t, tbl), 4)
	out = mustCLI(t, "append", tbl, c, a)
	require.Contains(t, out, "version 1, 3 rows")
	require.Len(t, scanCSV(t, tbl), 7)
}

// Item 3: idempotent retries with Delta txn (appId, increasing version).
func TestAppendTxnIdempotent(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	a := writeText(t, filepath.Join(dir, "a.jsonl"), `{"id":1}`+"\n")
	b := writeText(t, filepath.Join(dir, "b.jsonl"), `{"id":2}`+"\n")
	out := mustCLI(t, "append", tbl, a, "--txn-app-id", "nightly", "--txn-version", "20260101")
	require.Contains(t, out, "version 0")
	out = mustCLI(t, "append", tbl, a, "--txn-app-id", "nightly", "--txn-version", "20260101")
	require.Contains(t, out, "skipped")
	out = mustCLI(t, "append", tbl, a, "--txn-app-id", "nightly", "--txn-version", "20251231")
	require.Contains(t, out, "skipped", "an older run is skipped too")
	out = mustCLI(t, "append", tbl, b, "--txn-app-id", "nightly", "--txn-version", "20260102")
	require.Contains(t, out, "version 1")
	out = mustCLI(t, "append", tbl, b, "--txn-app-id", "other", "--txn-version", "1")
	require.Contains(t, out, "version 2", "another app id is independent")
	require.Equal(t, []string{"id", "1", "2", "2"}, scanCSV(t, tbl))
	for _, bad := range [][]string{
		{"--txn-app-id", "x"}, {"--txn-version", "3"}, {"--txn-app-id", "x", "--txn-version", "-1"},
	} {
		code, _, errs := cli(t, append([]string{"append", tbl, a}, bad...)...)
		require.Equal(t, 2, code, "%v: %s", bad, errs)
	}
}

// Item 4: JSONL never silently drops data.
func TestJSONLNeverDropsData(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "a.jsonl"), `{"id":1,"v":1}`+"\n"))

	code, _, errs := cli(t, "append", tbl, writeText(t, filepath.Join(dir, "u.jsonl"), `{"id":31,"v":1}`+"\n"+`{"id":32,"v":2,"zzz":5}`+"\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "u.jsonl:2")
	require.Contains(t, errs, `"zzz" is not in the table schema`)

	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "c.jsonl"), `{"ID":37,"V":3}`+"\n"))
	require.Equal(t, []string{"id,v", "1,1", "37,3"}, scanCSV(t, tbl))

	code, _, errs = cli(t, "append", tbl, writeText(t, filepath.Join(dir, "dup.jsonl"), `{"id":38,"ID":39}`+"\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "both name")
	code, _, errs = cli(t, "append", tbl, writeText(t, filepath.Join(dir, "s.jsonl"), `{"id":"31","v":1}`+"\n"))
	require.Equal(t, 1, code, "item 15: a JSON string is not a bigint")
	require.Contains(t, errs, `cannot read "31" as bigint`)
	code, _, errs = cli(t, "append", tbl, writeText(t, filepath.Join(dir, "f.jsonl"), `{"id":31.5}`+"\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "31.5")
	// Item 10: a broken object in the middle is an error with its position, not a panic.
	code, _, errs = cli(t, "append", tbl, writeText(t, filepath.Join(dir, "broken.jsonl"), `{"id":40}`+"\n"+`{"id":41,"v":[}`+"\n"+`{"id":42}`+"\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "broken.jsonl:2:")
	require.Equal(t, []string{"id,v", "1,1", "37,3"}, scanCSV(t, tbl))
}

// Item 4: inference sees the whole input: a field first seen on line 1,001 (or in a
// later file) is a column, and lines disagreeing on a type widen it.
func TestJSONLInferenceReadsEverything(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 1500; i++ {
		switch {
		case i == 1001:
			fmt.Fprintf(&b, `{"id":%d,"late":"here"}`+"\n", i)
		case i == 1200:
			fmt.Fprintf(&b, `{"id":%d,"x":2.5}`+"\n", i)
		default:
			fmt.Fprintf(&b, `{"id":%d,"x":%d}`+"\n", i, i)
		}
	}
	tbl := filepath.Join(dir, "t")
	a := writeText(t, filepath.Join(dir, "a.jsonl"), b.String())
	b2 := writeText(t, filepath.Join(dir, "b.jsonl"), `{"id":2000,"extra":true}`+"\n")
	mustCLI(t, "append", tbl, a, b2)
	out := mustCLI(t, "describe", tbl)
	require.Regexp(t, `id\s+bigint\b`, out)
	require.Regexp(t, `x\s+double\b`, out)
	require.Regexp(t, `late\s+string\b`, out)
	require.Regexp(t, `extra\s+boolean\b`, out)
	rows := mustCLI(t, "scan", tbl, "--filter", "late = 'here' OR extra = true", "--format", "jsonl", "--columns", "id")
	require.Equal(t, `{"id":1001}`+"\n"+`{"id":2000}`+"\n", rows)

	// Standard input cannot be read twice: a new table from it needs --schema.
	code, _, errs := cliStdin(t, `{"id":1}`+"\n", "append", filepath.Join(dir, "s"), "-", "--input-format", "jsonl")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--schema")
	code, out, errs = cliStdin(t, `{"id":1}`+"\n"+`{"id":2}`+"\n", "append", filepath.Join(dir, "s"), "-", "--input-format", "jsonl", "--schema", "id bigint")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "2 rows")
}

func cliStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// Item 5: CSV inference widens and knows dates and timestamps; a failed first append
// leaves no table.
func TestCSVInference(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	in := writeText(t, filepath.Join(dir, "a.csv"), "id,amount,day,at,zip,flag,note\n"+
		"1,5,2026-01-01,2026-01-01 10:00:00,02134,true,\n"+
		"2,5.5,2026-01-02,2026-01-01T10:00:00.123456Z,10001,false,x\n"+
		"3,,2026-01-03,2026-01-02,,TRUE,NULL\n")
	mustCLI(t, "append", tbl, in)
	out := mustCLI(t, "describe", tbl)
	for _, want := range []string{`id\s+bigint\b`, `amount\s+double\b`, `day\s+date\b`, `at\s+timestamp\n`, `zip\s+string\b`, `flag\s+boolean\b`, `note\s+string\b`} {
		require.Regexp(t, want, out)
	}
	got := mustCLI(t, "scan", tbl, "--format", "jsonl", "--filter", "id = 2")
	require.Equal(t, `{"id":2,"amount":5.5,"day":"2026-01-02","at":"2026-01-01T10:00:00.123456Z","zip":"10001","flag":false,"note":"x"}`+"\n", got)

	// A first append whose second file is broken fails as a whole: nothing is left.
	tbl2 := filepath.Join(dir, "t2")
	code, _, errs := cli(t, "append", tbl2, writeText(t, filepath.Join(dir, "ok.csv"), "id,amount\n1,5\n"),
		writeText(t, filepath.Join(dir, "ragged.csv"), "id,amount\n2,6,7\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "ragged.csv:2: 3 fields, but the header has 2")
	_, err := os.Stat(tbl2)
	require.True(t, os.IsNotExist(err))

	// An explicit schema, as SQL columns or as a Delta JSON schema.
	mustCLI(t, "append", tbl2, writeText(t, filepath.Join(dir, "d.csv"), "id,amount\n1,5\n2,5.25\n"), "--schema", "id int, amount decimal(10,2)")
	require.Regexp(t, `amount\s+decimal\(10,2\)`, mustCLI(t, "describe", tbl2))
	code, _, errs = cli(t, "append", tbl2, writeText(t, filepath.Join(dir, "e.csv"), "id,amount\n3,5.125\n"))
	require.Equal(t, 1, code)
	require.Contains(t, errs, "e.csv:2:3")
	require.Contains(t, errs, "more than 2 digits after the point")
	tbl3 := filepath.Join(dir, "t3")
	mustCLI(t, "append", tbl3, writeText(t, filepath.Join(dir, "j.csv"), "x\n1\n"),
		"--schema", `{"type":"struct","fields":[{"name":"x","type":"short","nullable":true,"metadata":{}}]}`)
	require.Regexp(t, `x\s+smallint\b`, mustCLI(t, "describe", tbl3))
}

// Item 15: CSV errors say file, line and column.
func TestCSVErrorPositions(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "a.csv"), "id,name\n1,a\n"))
	cases := []struct{ content, want string }{
		{"id,name\n2,b\nabc,c\n", `x.csv:3:1: column "id": cannot read "abc" as bigint`},
		{"id,name\n2,b\n3,c,extra\n", "x.csv:3: 3 fields, but the header has 2"},
		{"id,name\n2,b\n4\n", "x.csv:3: 1 fields, but the header has 2"},
		{"name,id\n\"b,2\n", "x.csv:2:"},
		{"id,nom\n2,b\n", `column "nom" is not in the table schema`},
		{"", "x.csv: empty file"},
	}
	for _, c := range cases {
		in := writeText(t, filepath.Join(dir, "x.csv"), c.content)
		code, _, errs := cli(t, "append", tbl, in)
		require.Equal(t, 1, code, c.content)
		require.Contains(t, errs, c.want, c.content)
	}
	// Columns are matched by header name, not position.
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "r.csv"), "NAME,Id\nz,9\n"))
	require.Equal(t, []string{"id,name", "1,a", "9,z"}, scanCSV(t, tbl))
	// A nullable column the header lacks is NULL (as Spark writes a DataFrame
	// without it).
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "m.csv"), "id\n10\n"))
	require.Equal(t, []string{"id,name", "1,a", "10,", "9,z"}, scanCSV(t, tbl))
}

// Item 14: zero and negative numbers are usage errors, and so are unparseable filters.
func TestNumbersAndFiltersAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "a.csv"), "id\n1\n2\n"))
	for _, args := range [][]string{
		{"scan", tbl, "--version", "-5"},
		{"scan", tbl, "--limit", "0"},
		{"scan", tbl, "--limit", "-1"},
		{"history", tbl, "--limit", "-3"},
		{"history", tbl, "--limit", "0"},
		{"describe", tbl, "--version", "-1"},
		{"files", tbl, "--version", "-2"},
		{"explain", tbl, "--filter", "id = 1", "--version", "-1"},
		{"vacuum", tbl, "--retain", "-1h"},
		{"bench", "skipping", "--queries", "0"},
		{"bench", "skipping", "--files", "-1"},
		{"scan", tbl, "--filter", "id >"},
		{"files", tbl, "--filter", "(id = 1"},
		{"explain", tbl, "--filter", "id = = 1"},
		{"optimize", tbl, "--where", "AND"},
	} {
		code, _, errs := cli(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, errs)
	}
	require.Contains(t, mustCLI(t, "scan", tbl, "--version", "0", "--limit", "1"), "(1 row)")
}

// Item 11: concurrent first appends racing to create the same table all succeed;
// the losers append.
func TestConcurrentFirstAppendsAllLand(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	const n = 12
	var wg sync.WaitGroup
	codes := make([]int, n)
	errs := make([]string, n)
	for i := range n {
		in := writeText(t, filepath.Join(dir, "in", fmt.Sprintf("%02d.csv", i)), fmt.Sprintf("id,v\n%d,x\n%d,y\n", 2*i, 2*i+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, eb bytes.Buffer
			codes[i] = run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &eb}, []string{"append", tbl, in})
			errs[i] = eb.String()
		}()
	}
	wg.Wait()
	for i := range n {
		require.Equal(t, 0, codes[i], "writer %d: %s", i, errs[i])
	}
	require.Len(t, scanCSV(t, tbl), 2*n+1)
	require.EqualValues(t, n-1, latestVersion(t, tbl))
}
