package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/goldentest"
)

// everyCommand lists an invocation of every command that takes a table, with the
// arguments it needs (SOURCE and QUERIES are replaced by files the test writes).
var everyCommand = [][]string{
	{"describe", "T"}, {"describe", "T", "--format", "json"}, {"describe", "T", "--layout"},
	{"scan", "T"}, {"scan", "T", "--format", "jsonl", "--filter", "k > 1"},
	{"count", "T"}, {"count", "T", "--filter", "k > 1"},
	{"files", "T"}, {"explain", "T", "--filter", "k > 1"},
	{"optimize", "T"}, {"optimize", "T", "--dry-run"}, {"optimize", "T", "--zorder-by", "k,v"},
	{"vacuum", "T"}, {"vacuum", "T", "--dry-run"},
	{"checkpoint", "T"},
	{"maintain", "T"}, {"maintain", "T", "--dry-run"},
	{"alter", "T", "--set-property", "delta.appendOnly=false"},
	{"delete", "T", "--where", "k = 40"}, {"update", "T", "--set", "v = 1", "--where", "k = 40"},
	{"merge", "T", "SOURCE", "--on", "k"},
	{"restore", "T", "--version", "2"},
	{"append", "T", "SOURCE"},
	{"advise", "T", "--queries", "QUERIES"},
}

// TestRegressionTablesEveryCommand runs every command on each regression table (a copy
// of it): each once panicked (exit status 2) on the damaged checkpoint. Every command
// must now fail with status 1 and an error naming the checkpoint file — except
// history, which reads only the JSON commits — and change nothing on disk.
func TestRegressionTablesEveryCommand(t *testing.T) {
	for name, src := range goldentest.RegressionTables(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := filepath.Join(dir, name)
			goldentest.CopyTree(t, src, tbl)
			source := filepath.Join(dir, "src.parquet")
			writeKV(t, source)
			queries := writeText(t, filepath.Join(dir, "q.txt"), "k > 1\n")
			before := goldentest.TreeState(t, tbl)
			for _, args := range append(everyCommand, []string{"history", "T"}) {
				args = replaceArgs(args, map[string]string{"T": tbl, "SOURCE": source, "QUERIES": queries})
				code, _, stderr := cli(t, args...)
				if args[0] == "history" {
					require.Equal(t, 0, code, stderr)
					continue
				}
				require.Equal(t, 1, code, "%v: %s", args, stderr)
				require.Contains(t, stderr, "00000000000000000002.checkpoint.parquet", "%v", args)
				require.Contains(t, stderr, "corrupt log entry", "%v", args)
				require.NotContains(t, stderr, "panic", "%v", args)
				require.Equal(t, before, goldentest.TreeState(t, tbl), "%v changed the table's files", args)
			}
		})
	}
}

// replaceArgs returns args with placeholders replaced.
func replaceArgs(args []string, with map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if v, ok := with[a]; ok {
			a = v
		}
		out[i] = a
	}
	return out
}

// writeKV writes a Parquet file with the regression tables' columns k and v (bigint).
func writeKV(t *testing.T, path string) {
	t.Helper()
	csv := writeText(t, path+".csv", "k,v\n40,1\n99,2\n")
	tmp := filepath.Join(filepath.Dir(path), "kv-table")
	code, _, stderr := cli(t, "append", tmp, csv, "--schema", "k bigint, v bigint")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = cli(t, "scan", tmp, "--format", "parquet", "--output", path)
	require.Equal(t, 0, code, stderr)
}

// TestDamagedCheckpointFallbackWarns damages the checkpoint of a table whose JSON
// commits are all present: every reading command answers as before (the snapshot is
// rebuilt from version 0, as Delta Spark does) and warns once, naming the checkpoint;
// `skiplake checkpoint` writes a good one and the warning goes away.
func TestDamagedCheckpointFallbackWarns(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 3; i++ {
		csv := writeText(t, filepath.Join(dir, fmt.Sprintf("in%d.csv", i)), fmt.Sprintf("k,v\n%d,%d\n%d,%d\n", 2*i, i, 2*i+1, i))
		code, _, stderr := cli(t, "append", tbl, csv, "--schema", "k bigint, v bigint")
		require.Equal(t, 0, code, stderr)
	}
	code, _, stderr := cli(t, "checkpoint", tbl)
	require.Equal(t, 0, code, stderr)
	want := scanCSV(t, tbl)
	cp := filepath.Join(tbl, "_delta_log", "00000000000000000002.checkpoint.parquet")
	b, err := os.ReadFile(cp)
	require.NoError(t, err)
	for i := 4; i < len(b)/2; i++ {
		b[i] ^= 0x5a
	}
	require.NoError(t, os.WriteFile(cp, b, 0o644))

	code, out, stderr := cli(t, "count", tbl)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "6\n", out)
	require.Equal(t, 1, strings.Count(stderr, "warning:"), stderr)
	require.Contains(t, stderr, "skiplake count: warning: log: version 2 was read from every JSON commit from version 0, because checkpoint 2 is unreadable")
	require.Contains(t, stderr, "00000000000000000002.checkpoint.parquet")
	require.Contains(t, stderr, "run 'skiplake checkpoint TABLE'")
	require.Equal(t, want, scanCSV(t, tbl))

	code, _, stderr = cli(t, "checkpoint", tbl)
	require.Equal(t, 0, code, stderr)
	code, out, stderr = cli(t, "count", tbl)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "6\n", out)
	require.Empty(t, stderr)
}

// TestRetentionBelowTheSafetyFloor: setting delta.deletedFileRetentionDuration to 0 is
// accepted with a warning; vacuum and maintain then refuse to vacuum (maintain's
// vacuum task fails, exit 4, the other tasks run) unless --force, and even forced they
// keep the files removed a moment ago (younger than the minimum age).
func TestRetentionBelowTheSafetyFloor(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 2; i++ {
		csv := writeText(t, filepath.Join(dir, fmt.Sprintf("in%d.csv", i)), fmt.Sprintf("k,v\n%d,%d\n", i, i))
		code, _, stderr := cli(t, "append", tbl, csv, "--schema", "k bigint, v bigint")
		require.Equal(t, 0, code, stderr)
	}
	code, _, stderr := cli(t, "alter", tbl, "--set-property", "delta.deletedFileRetentionDuration=interval 0 seconds")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "skiplake alter: warning: delta.deletedFileRetentionDuration=interval 0 seconds is below VACUUM's safety floor of 7 days")

	code, _, stderr = cli(t, "vacuum", tbl)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "the table's retention period, 0s (delta.deletedFileRetentionDuration), is below the safety floor of 7 days")
	require.Contains(t, stderr, "--force")
	code, _, stderr = cli(t, "vacuum", tbl, "--retain", "24h")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "--retain 24h is below the safety floor of 7 days")

	code, out, stderr := cli(t, "maintain", tbl)
	require.Equal(t, exitTaskFailed, code, stderr)
	require.Contains(t, out, "safety floor")
	code, out, stderr = cli(t, "maintain", tbl, "--force")
	require.Equal(t, 0, code, out+stderr)
	require.Contains(t, out, "compact") // the small files were compacted ...
	code, out, stderr = cli(t, "vacuum", tbl, "--force")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "kept 2 file(s) younger than 1h") // ... and their inputs kept
	require.Equal(t, []string{"k,v", "0,0", "1,1"}, scanCSV(t, tbl))
}
