package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

// The CLI's output contract is kept as golden transcripts under testdata/cli at the
// repository root. A deliberate change of an output is made by re-running with
// -update and reviewing the diff (`go test ./cmd/skiplake -run TestGoldenOutputs -update`):
// scripts depend on these outputs, so the README's changelog says when one changes.
var updateGolden = flag.Bool("update", false, "rewrite the CLI golden transcripts under testdata/cli")

// cliGoldenDir is testdata/cli at the repository root.
var cliGoldenDir = filepath.Join("..", "..", "testdata", "cli")

var (
	uuidRE      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	isoTimeRE   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	epochMSKeys = regexp.MustCompile(`"(modificationTime|deletionTimestamp|timestamp|createdTime)":\s*\d{10,}`)
	elapsedKeys = regexp.MustCompile(`"(elapsedNanos)":\s*\d+`)
	timeMetrics = regexp.MustCompile(`"(executionTimeMs|scanTimeMs|rewriteTimeMs)":\s*"\d+"`)
	// progressTimes are the rate, ETA and elapsed time of a progress line on stderr.
	progressTimes = regexp.MustCompile(`(?m)^([a-z]+: [^\n]*?)(?:, [^,\n]+/s)?(?:, ETA [^,\n]+)?, elapsed [^ \n]+ \[`)
	// partSeqRE is a data file's sequence number within its commit: files of several
	// partitions are opened concurrently, so the number a partition's file gets varies.
	partSeqRE = regexp.MustCompile(`part-\d{5}-<uuid>`)
)

// normalize replaces what differs from run to run (the temp directory, UUIDs, data
// file sequence numbers, wall-clock times) with fixed placeholders, keeping everything else — sizes, counts, spacing —
// as the CLI printed it.
func normalize(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "$DIR")
	s = uuidRE.ReplaceAllString(s, "<uuid>")
	s = partSeqRE.ReplaceAllString(s, "part-<n>-<uuid>")
	s = isoTimeRE.ReplaceAllString(s, "<time>")
	s = elapsedKeys.ReplaceAllString(s, `"$1": <nanos>`)
	s = timeMetrics.ReplaceAllString(s, `"$1": "<ms>"`)
	s = progressTimes.ReplaceAllString(s, `$1, <rate>, elapsed <t> [`)
	return epochMSKeys.ReplaceAllString(s, `"$1":<epoch-ms>`)
}

// goldenTable builds the fixture every transcript runs against: a partitioned table of
// three commits whose data is fixed, so sizes and statistics are the same on every run.
func goldenTable(t *testing.T, dir string) string {
	t.Helper()
	tbl := filepath.Join(dir, "orders")
	inputs := []struct {
		ids       []int64
		countries []string
	}{
		{[]int64{1, 2, 3, 4}, []string{"DE", "FR", "DE", "JP"}},
		{[]int64{10, 11, 12}, []string{"DE", "FR", "JP"}},
		{[]int64{20, 21, 22, 23}, []string{"FR", "FR", "JP", "DE"}},
	}
	for i, in := range inputs {
		p := filepath.Join(dir, fmt.Sprintf("in%d.parquet", i))
		writeParquet(t, p, in.ids, in.countries)
		args := []string{"append", tbl, p}
		if i == 0 {
			args = append(args, "--partition-by", "country")
		}
		code, _, errs := cli(t, args...)
		require.Equal(t, 0, code, errs)
	}
	return tbl
}

// feedTable builds a table with the change data feed on (version 0) from the golden
// inputs: version 1 appends ids 1-4, version 2 updates id 2 (change data files),
// version 3 deletes id 4.
func feedTable(t *testing.T, dir string) string {
	t.Helper()
	tbl := filepath.Join(dir, "feed")
	for _, args := range [][]string{
		{"create", tbl, "--schema", "id bigint, country string", "--property", "delta.enableChangeDataFeed=true"},
		{"append", tbl, filepath.Join(dir, "in0.parquet")},
		{"update", tbl, "--set", "country = 'XX'", "--where", "id = 2"},
		{"delete", tbl, "--where", "id = 4"},
	} {
		code, _, errs := cli(t, args...)
		require.Equal(t, 0, code, errs)
	}
	return tbl
}

// smallFilesTable builds a table of two small files (one compaction bin) from the
// golden inputs.
func smallFilesTable(t *testing.T, dir, name string) string {
	t.Helper()
	tbl := filepath.Join(dir, name)
	for i := 0; i < 2; i++ {
		code, _, errs := cli(t, "append", tbl, filepath.Join(dir, fmt.Sprintf("in%d.parquet", i)))
		require.Equal(t, 0, code, errs)
	}
	return tbl
}

// damagedTable builds a table of two small files and damages one of them, so
// maintenance's compaction fails.
func damagedTable(t *testing.T, dir string) string {
	t.Helper()
	tbl := smallFilesTable(t, dir, "damaged")
	files, err := filepath.Glob(filepath.Join(tbl, "*.parquet"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	// Damage the larger file, so that the error (which names its size) is the
	// same whichever name each file got.
	if a, b := fileSize(t, files[0]), fileSize(t, files[1]); b > a {
		files[0] = files[1]
	}
	require.NoError(t, os.WriteFile(files[0], []byte("not a Parquet file"), 0o644))
	return tbl
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Size()
}

// TestGoldenOutputs compares each command's exit status, stdout and stderr with its
// transcript in testdata/cli.
func TestGoldenOutputs(t *testing.T) {
	dir := t.TempDir()
	tbl := goldenTable(t, dir)
	ev := filepath.Join(dir, "events")
	gen := filepath.Join(dir, "generated")
	feed := feedTable(t, dir)
	queries := filepath.Join(dir, "queries.sql")
	require.NoError(t, os.WriteFile(queries, []byte("3: id >= 10 AND id <= 12\ncountry = 'JP'\n"), 0o644))
	cases := []struct {
		name string
		args []string
	}{
		{"describe", []string{"describe", tbl}},
		{"describe-json", []string{"describe", tbl, "--format", "json"}},
		{"describe-version-1", []string{"describe", tbl, "--version", "1"}},
		{"history", []string{"history", tbl}},
		{"history-jsonl", []string{"history", tbl, "--format", "jsonl"}},
		{"files", []string{"files", tbl, "--filter", "id >= 10"}},
		{"files-jsonl", []string{"files", tbl, "--filter", "id >= 10 AND country = 'FR'", "--format", "jsonl"}},
		{"files-absolute", []string{"files", tbl, "--filter", "id >= 20 AND country <> 'DE'", "--absolute", "--format", "jsonl"}},
		{"scan-table", []string{"scan", tbl, "--filter", "id < 10", "--columns", "country,id"}},
		{"explain", []string{"explain", tbl, "--filter", "id >= 10 AND id <= 12"}},
		{"explain-json", []string{"explain", tbl, "--filter", "country IN ('DE', 'JP') AND id > 20", "--format", "json"}},
		{"scan-csv", []string{"scan", tbl, "--filter", "country = 'FR'", "--columns", "id,country", "--format", "csv"}},
		{"describe-layout", []string{"describe", tbl, "--layout", "--columns", "id,country"}},
		{"maintain-dry-run", []string{"maintain", tbl, "--dry-run"}},
		{"count", []string{"count", tbl, "--filter", "id >= 10"}},
		{"count-json", []string{"count", tbl, "--filter", "id > 10 AND country = 'FR'", "--format", "json"}},
		{"optimize-dry-run", []string{"optimize", tbl, "--hilbert-by", "id", "--dry-run"}},
		{"optimize-dry-run-predict", []string{"optimize", tbl, "--hilbert-by", "id", "--dry-run", "--predict-where", "id >= 10 AND id <= 12", "--predict-where", "country IN ('JP', 'FR')"}},
		{"optimize-dry-run-predict-json", []string{"optimize", tbl, "--sort-by", "id", "--where", "country = 'JP'", "--target-size", "1KiB", "--dry-run", "--queries", queries, "--format", "json"}},
		{"optimize-dry-run-predict-compaction", []string{"optimize", tbl, "--dry-run", "--queries", queries}},
		{"optimize-idle", []string{"optimize", tbl, "--target-size", "100B", "--where", "country = 'DE'"}},
		{"vacuum-dry-run", []string{"vacuum", tbl, "--dry-run"}},
		{"scan-double-quotes", []string{"scan", tbl, "--filter", `country = "JP"`}},
		// The cases below change the table, so they come last.
		// The flags that created the table may be given again when they match it.
		{"append-same-partitioning", []string{"append", tbl, filepath.Join(dir, "in0.parquet"), "--partition-by", "COUNTRY"}},
		{"alter-set", []string{"alter", tbl, "--set-property", "DELTA.ENABLEDELETIONVECTORS=true", "--set-property", "delta.targetFileSize=64mb"}},
		{"alter-add-column", []string{"alter", tbl, "--add-column", "note string", "--format", "json"}},
		{"alter-refused", []string{"alter", tbl, "--set-property", "delta.enableChangeDataFeed=true", "--set-property", "delta.nosuch=1"}},
		{"describe-after-alter", []string{"describe", tbl}},
		// DML after alter-set enabled deletion vectors (cmd/skiplake/dml.go).
		{"delete-dry-run", []string{"delete", tbl, "--where", "id = 3 OR id = 22", "--dry-run"}},
		{"delete", []string{"delete", tbl, "--where", "id = 3 OR id = 22"}},
		{"describe-layout-after-delete", []string{"describe", tbl, "--layout"}},
		{"delete-partition", []string{"delete", tbl, "--where", "country = 'JP'"}},
		{"update", []string{"update", tbl, "--set", "note = 'late', id = id + 100", "--where", "id = 11"}},
		{"merge", []string{"merge", tbl, filepath.Join(dir, "upsert.csv"), "--on", "id"}},
		{"merge-refused", []string{"merge", tbl, filepath.Join(dir, "upsert.csv"), "--on", "id", "--when-matched", "ignore", "--when-not-matched", "ignore"}},
		{"scan-after-dml", []string{"scan", tbl, "--format", "csv"}},
		{"restore", []string{"restore", tbl, "--version", "2"}},
		{"scan-after-restore", []string{"scan", tbl, "--format", "csv"}},
		{"maintain", []string{"maintain", tbl}},
		{"clustered-create", []string{"create", ev, "--schema", "id bigint, country string", "--cluster-by", "id"}},
		{"clustered-append", []string{"append", ev, filepath.Join(dir, "in0.parquet"), filepath.Join(dir, "in1.parquet")}},
		{"clustered-append-2", []string{"append", ev, filepath.Join(dir, "in2.parquet")}},
		{"clustered-optimize-dry-run", []string{"optimize", ev, "--dry-run"}},
		{"clustered-optimize-dry-run-predict", []string{"optimize", ev, "--dry-run", "--full", "--queries", queries}},
		{"clustered-optimize-zorder", []string{"optimize", ev, "--zorder-by", "country"}},
		{"clustered-maintain", []string{"maintain", ev}},
		{"clustered-describe", []string{"describe", ev}},
		{"clustered-layout", []string{"describe", ev, "--layout"}},
		{"clustered-alter", []string{"alter", ev, "--cluster-by", "country,id"}},
		{"maintain-again", []string{"maintain", tbl, "--format", "json"}},
		// A task fails (a data file the compaction must read is damaged): exit 4,
		// the report names the task and the file, the later tasks still run.
		{"maintain-task-failed", []string{"maintain", damagedTable(t, dir)}},
		// A budget spent before the first task (a nanosecond surely passes while the
		// table is inspected): the due compaction is reported skipped, nothing
		// changes (version 1 -> 1), exit 3. The library's tests spend the budget at
		// chosen points with an injected clock.
		{"maintain-max-duration-spent", []string{"maintain", smallFilesTable(t, dir, "budget"), "--max-duration", "1ns"}},
		{"describe-layout-after-maintain", []string{"describe", tbl, "--layout", "--format", "json"}},
		// DML's JSON output (Spark's metric names), MERGE's dry run and its WHEN NOT
		// MATCHED BY SOURCE clause.
		{"alter-deletion-vectors-again", []string{"alter", tbl, "--set-property", "delta.enableDeletionVectors=true"}},
		{"delete-json", []string{"delete", tbl, "--where", "id = 4", "--format", "json"}},
		{"update-json", []string{"update", tbl, "--set", "id = id + 1000", "--where", "id = 12", "--format", "json"}},
		{"merge-by-source-dry-run-json", []string{"merge", tbl, filepath.Join(dir, "sync.csv"), "--on", "id",
			"--when-not-matched-by-source", "delete", "--not-matched-by-source-condition", "country = 'FR'", "--dry-run", "--format", "json"}},
		{"merge-by-source", []string{"merge", tbl, filepath.Join(dir, "sync.csv"), "--on", "id",
			"--when-not-matched-by-source", "delete", "--not-matched-by-source-condition", "country = 'FR'"}},
		{"scan-after-merge-by-source", []string{"scan", tbl, "--format", "csv"}},
		// The change data feed of a table created with it on: version 1 appends,
		// 2 updates, 3 deletes (feedTable).
		{"changes-csv", []string{"changes", feed, "--from", "0", "--format", "csv"}},
		{"changes-jsonl-filter", []string{"changes", feed, "--from", "2", "--filter", "_change_type <> 'insert'", "--columns", "id,country,_change_type,_commit_version", "--format", "jsonl"}},
		{"changes-resume", []string{"changes", feed, "--from", "4", "--columns", "id,_change_type"}},
		// Generated and identity columns declared in create's --schema (issue 30): an
		// append leaving them out fills them; describe prints the forms create takes.
		{"generated-create", []string{"create", gen, "--schema", "id bigint GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10), " +
			"ts timestamp, amount double NOT NULL, d date GENERATED ALWAYS AS (CAST(ts AS DATE)), y int GENERATED ALWAYS AS (YEAR(ts))", "--partition-by", "d"}},
		{"generated-describe-new", []string{"describe", gen}},
		{"generated-append", []string{"append", gen, filepath.Join(dir, "events.csv")}},
		{"generated-scan", []string{"scan", gen, "--format", "csv"}},
		{"generated-describe", []string{"describe", gen, "--format", "json"}},
		// d = CAST(ts AS DATE) prunes partitions for a filter on ts (one day's slack
		// either side for a timestamp's session time zone): 2024-01-01 is skipped.
		{"generated-explain", []string{"explain", gen, "--filter", "ts >= '2024-01-03 06:00:00'"}},
		// ALTER of a column a rule depends on is refused (exit 1), naming the rule.
		{"generated-alter-rename-source-refused", []string{"alter", gen, "--rename-column", "ts=event_time"}},
		{"generated-alter-drop-identity-refused", []string{"alter", gen, "--drop-column", "id"}},
		{"generated-alter-set-type-refused", []string{"alter", gen, "--set-type", "y=bigint"}},
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "events.csv"), []byte("ts,amount\n2024-01-01 10:00:00,1.5\n2024-01-02 00:00:00,2\n2024-01-02 23:59:59.999999,3\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "upsert.csv"), []byte("id,country,note\n1,DE,merged\n30,FR,new\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sync.csv"), []byte("id,country\n2,FR\n21,FR\n40,DE\n"), 0o644))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkGolden(t, c.name, transcript(t, dir, c.args))
		})
	}
}

// transcript runs one invocation and renders it as a golden transcript: the command
// line (quoted as a shell would need it), the exit status, stdout and stderr.
func transcript(t *testing.T, dir string, args []string) string {
	t.Helper()
	code, out, errs := cli(t, args...)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return normalize(fmt.Sprintf("$ %s\nexit %d\n-- stdout --\n%s-- stderr --\n%s",
		strings.Join(append([]string{"skiplake"}, quoted...), " "), code, sortedScan(args, out), errs), dir)
}

// checkGolden compares got with testdata/cli/NAME.txt (or writes it with -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(cliGoldenDir, name+".txt")
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden transcript %s (run with -update to create it)", path)
	require.Equal(t, string(want), got, "output of %q changed; if deliberate, re-run with -update and review the diff", name)
}

// TestGoldenErrors keeps, per command, the transcripts of its usage errors (exit 2)
// and failures (exit 1): what a script sees when it calls a command wrongly. Every
// registered command must have a group here.
func TestGoldenErrors(t *testing.T) {
	dir := t.TempDir()
	tbl := goldenTable(t, dir)
	feed := feedTable(t, dir)
	missing := filepath.Join(dir, "missing")
	input := filepath.Join(dir, "in0.parquet")
	groups := map[string][][]string{
		"help": {
			{},
			{"help", "nope"},
			{"help", "scan", "extra"},
			{"nope"},
		},
		"create": {
			{"create"},
			{"create", filepath.Join(dir, "new"), "--schema", "id bigint, p string", "--partition-by", "p", "--cluster-by", "id"},
			{"create", filepath.Join(dir, "new"), "--schema", "id bigint, ok boolean", "--cluster-by", "ok"},
			{"create", filepath.Join(dir, "new"), "--schema", "id bigint, a array<struct<x int>>", "--cluster-by", "id,a.x"},
			{"create", filepath.Join(dir, "new")},
			{"create", filepath.Join(dir, "new"), "--schema", "id bigint", "--schema-from", input},
			{"create", filepath.Join(dir, "new"), "--schema", "id bigwig"},
			{"create", tbl, "--schema", "id bigint"},
			{"create", filepath.Join(dir, "new"), "--schema", "ts timestamp, d date GENERATED ALWAYS AS CAST(ts AS DATE)"},
			{"create", filepath.Join(dir, "new"), "--schema", "a bigint, h string GENERATED ALWAYS AS (sha2(a, 256))"},
			{"create", filepath.Join(dir, "new"), "--schema", "a int GENERATED BY DEFAULT AS IDENTITY"},
		},
		"append": {
			{"append", tbl},
			{"append", tbl, filepath.Join(dir, "x.txt")},
			{"append", tbl, filepath.Join(dir, "absent.parquet")},
			{"append", tbl, input, "--partition-by", "id"},
			{"append", tbl, input, "--property", "delta.appendOnly=true"},
			{"append", tbl, input, "--txn-app-id", "job"},
			{"append", tbl, "-"},
		},
		"scan": {
			{"scan"},
			{"scan", missing},
			{"scan", tbl, "--filter", "id >= AND"},
			{"scan", tbl, "--columns", "idd"},
			{"scan", tbl, "--format", "xml"},
			{"scan", tbl, "--format", "parquet"},
			{"scan", tbl, "--limit", "0"},
			{"scan", tbl, "--version", "99"},
			{"scan", tbl, "--version", "0", "--timestamp", "2020-01-01"},
			{"scan", tbl, "--nope"},
		},
		// The golden table has no change data feed; feed has it from version 0 to 3.
		"changes": {
			{"changes"},
			{"changes", tbl},
			{"changes", tbl, "--from", "0"},
			{"changes", feed, "--from", "3", "--to", "1"},
			{"changes", feed, "--from", "5"},
			{"changes", feed, "--from", "0", "--to", "9"},
			{"changes", feed, "--from", "-1"},
			{"changes", feed, "--from", "yesterday"},
			{"changes", feed, "--from", "0", "--format", "parquet"},
			{"changes", feed, "--from", "0", "--filter", "nosuch = 1"},
		},
		"count": {
			{"count"},
			{"count", tbl, "--filter", "id >"},
			{"count", tbl, "--format", "csv"},
			{"count", missing},
		},
		"describe": {
			{"describe", missing},
			{"describe", tbl, tbl},
			{"describe", tbl, "--format", "jsonl"},
			{"describe", tbl, "--columns", "id"},
			{"describe", tbl, "--layout", "--columns", "nosuch"},
		},
		"maintain": {
			{"maintain"},
			{"maintain", missing},
			{"maintain", tbl, "--max-bytes", "lots"},
			{"maintain", tbl, "--max-duration", "-5m"},
			{"maintain", tbl, "--format", "jsonl"},
		},
		"history": {
			{"history", tbl, "--limit", "0"},
			{"history", tbl, "--format", "json"},
		},
		"checkpoint": {
			{"checkpoint"},
			{"checkpoint", missing},
		},
		"files": {
			{"files", tbl, "--filter", "nosuch = 1"},
			{"files", tbl, "--format", "json"},
		},
		"explain": {
			{"explain", tbl},
			{"explain", tbl, "--filter", "id = 'x"},
		},
		"optimize": {
			{"optimize", tbl, "--where", "id > 3"},
			{"optimize", tbl, "--zorder-by", "id", "--hilbert-by", "id"},
			{"optimize", tbl, "--target-size", "big"},
			{"optimize", tbl, "--queries", "q.sql"},
			{"optimize", tbl, "--sort-by", "id", "--predict-where", "id > 3"},
			{"optimize", tbl, "--sort-by", "id", "--dry-run", "--predict-where", "id >"},
			{"optimize", tbl, "--robustness", "0.3"},
			{"optimize", tbl, "--layout", "workload"},
		},
		"advise": {
			{"advise", tbl},
			{"advise", tbl, "--queries", missing},
			{"advise", tbl, "--queries", input, "--files", "-1"},
		},
		"vacuum": {
			{"vacuum", tbl, "--retain", "0h"},
			{"vacuum", tbl, "--retain", "soon"},
			{"vacuum", tbl, "--retain", "-1h"},
		},
		"alter": {
			{"alter", tbl},
			{"alter", tbl, "--if-exists", "--set-property", "a=b"},
			{"alter", tbl, "--add-column", "note"},
			{"alter", tbl, "--cluster-by", "id"},
			{"alter", tbl, "--cluster-by", "id", "--add-column", "note string"},
			{"alter", tbl, "--add-constraint", "small=id < 23"},
			{"alter", tbl, "--add-constraint", "id > 0"},
			{"alter", tbl, "--drop-constraint", "nope"},
		},
		"bench": {
			{"bench"},
			{"bench", "skipping", "--dataset", "nope"},
		},
		"version": {
			{"version", "extra"},
			{"version", "--format", "yaml"},
		},
		"delete": {
			{"delete", tbl},
			{"delete", tbl, "--where", "nosuch = 1"},
			{"delete", tbl, "--where", "id >"},
			{"delete", tbl, "--where", "id = 1", "--isolation", "snapshot"},
		},
		"update": {
			{"update", tbl, "--where", "id = 1"},
			{"update", tbl, "--set", "id = 'x'"},
			{"update", tbl, "--set", "nosuch = 1"},
		},
		"merge": {
			{"merge", tbl, "--on", "id"},
			{"merge", tbl, filepath.Join(dir, "in0.parquet")},
			{"merge", tbl, filepath.Join(dir, "in0.parquet"), "--on", "nosuch"},
			{"merge", tbl, filepath.Join(dir, "in0.parquet"), "--on", "id", "--when-matched", "upsert"},
		},
		"restore": {
			{"restore", tbl},
			{"restore", tbl, "--version", "99"},
			{"restore", tbl, "--version", "2"},
			{"restore", tbl, "--timestamp", "2000-01-01"},
		},
	}
	for _, c := range commands {
		require.Contains(t, groups, c.name, "TestGoldenErrors has no error transcripts for command %q", c.name)
	}
	for name, invocations := range groups {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			for i, args := range invocations {
				if i > 0 {
					b.WriteString("\n")
				}
				b.WriteString(transcript(t, dir, args))
			}
			checkGolden(t, "errors-"+name, b.String())
		})
	}
}

// sortedScan sorts the data lines of a scan's output (CSV: after the header; table:
// between the header's two lines and the row count): a scan's row order across files
// is not part of the contract, the rows are.
func sortedScan(args []string, out string) string {
	if len(args) == 0 || (args[0] != "scan" && args[0] != "changes") || out == "" {
		return out
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	first, last := 2, len(lines)-1 // the table format
	switch joined := strings.Join(args, " "); {
	case strings.Contains(joined, "--format csv"):
		first, last = 1, len(lines)
	case strings.Contains(joined, "--format jsonl"):
		first, last = 0, len(lines)
	}
	if last > first {
		sort.Strings(lines[first:last])
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestGoldenParquetExport checks `scan --format parquet` by content: the file holds the
// table's Arrow schema and exactly the rows the same scan prints as CSV.
func TestGoldenParquetExport(t *testing.T) {
	dir := t.TempDir()
	tbl := goldenTable(t, dir)
	out := filepath.Join(dir, "export.parquet")
	code, _, errs := cli(t, "scan", tbl, "--filter", "id > 2", "--format", "parquet", "--output", out)
	require.Equal(t, 0, code, errs)
	code, csvOut, errs := cli(t, "scan", tbl, "--filter", "id > 2", "--format", "csv")
	require.Equal(t, 0, code, errs)

	f, err := os.Open(out)
	require.NoError(t, err)
	rdr, err := file.NewParquetReader(f)
	require.NoError(t, err)
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	require.NoError(t, err)
	tab, err := fr.ReadTable(context.Background())
	require.NoError(t, err)
	defer tab.Release()

	sch := tab.Schema()
	require.Equal(t, []string{"id", "country"}, []string{sch.Field(0).Name, sch.Field(1).Name})
	require.Equal(t, arrow.PrimitiveTypes.Int64, sch.Field(0).Type)
	require.Equal(t, arrow.BinaryTypes.String, sch.Field(1).Type)

	var rows []string
	tr := array.NewTableReader(tab, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		cs := rec.Column(1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			rows = append(rows, fmt.Sprintf("%d,%s", ids.Value(i), cs.Value(i)))
		}
	}
	want := strings.Split(strings.TrimSpace(csvOut), "\n")[1:]
	require.ElementsMatch(t, want, rows)
	require.Len(t, rows, 9)
}
