package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runLines runs a command without a terminal, a progress line for every report.
func runLines(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, progressInterval: time.Nanosecond}
	code := run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// TestLongCommandsPrintProgressLines: without a terminal, every long command prints
// optimize's line format on stderr (label, amount, rate, elapsed, [phase]), and
// --quiet prints none.
func TestLongCommandsPrintProgressLines(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	line := regexp.MustCompile(`^([a-z]+): (\d+% \(.+ of .+\)|\d+ \w+)(, \d+/\d+ (bins|files))*(, [^,]+/s)?(, ETA [^,]+)?, elapsed \S+ \[[a-z]+\]$`)
	check := func(label string, args ...string) {
		t.Helper()
		code, _, errs := runLines(t, args...)
		require.Equal(t, 0, code, errs)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		require.NotEmpty(t, lines[0], "%s printed no progress", label)
		for _, l := range lines {
			m := line.FindStringSubmatch(l)
			require.NotNil(t, m, "%s: progress line %q", label, l)
			require.Equal(t, label, m[1])
		}
		code, _, errs = runLines(t, append(args, "--quiet")...)
		require.Equal(t, 0, code, errs)
		require.Empty(t, errs, "%s --quiet", label)
	}
	for i := 0; i < 3; i++ {
		p := filepath.Join(dir, fmt.Sprintf("in%d.parquet", i))
		writeParquet(t, p, []int64{int64(i), int64(i + 10), int64(i + 20)}, []string{"DE", "FR", "JP"})
		check("append", "append", tbl, p)
	}
	check("delete", "delete", tbl, "--where", "id = 1")
	check("update", "update", tbl, "--set", "id = id + 100", "--where", "id = 2")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "up.csv"), []byte("id,country\n0,XX\n99,YY\n"), 0o644))
	check("merge", "merge", tbl, filepath.Join(dir, "up.csv"), "--on", "id")
	check("restore", "restore", tbl, "--version", "3")
	check("maintain", "maintain", tbl)
	ageFiles(t, tbl, 2*time.Hour) // VACUUM keeps unreferenced files younger than 1 hour
	check("vacuum", "vacuum", tbl, "--retain", "0h", "--force")
}

// TestOptimizePlanAndShards: --plan --format json writes the numbered bins and
// their files; --shard K/N runs one shard of the plan of --version (N runs do the
// whole plan, once); a shard without a version, or a bad K/N, is a usage error.
func TestOptimizePlanAndShards(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, fmt.Sprintf("in%d.parquet", i))
		writeParquet(t, p, []int64{int64(i), int64(i + 10), int64(i + 20), int64(i + 30)}, []string{"DE", "FR", "JP", "US"})
		code, _, errs := cli(t, "append", tbl, p, "--partition-by", "country", "--quiet")
		require.Equal(t, 0, code, errs)
	}
	code, out, errs := cli(t, "optimize", tbl, "--plan", "--version", "3", "--format", "json")
	require.Equal(t, 0, code, errs)
	var plan struct {
		Version    int64
		NumBins    int
		Partitions []struct {
			Bins []struct {
				Index int
				Files []struct{ Path string }
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Equal(t, int64(3), plan.Version)
	require.Equal(t, 4, plan.NumBins)
	var indexes []int
	for _, pp := range plan.Partitions {
		for _, b := range pp.Bins {
			indexes = append(indexes, b.Index)
			require.Len(t, b.Files, 4)
		}
	}
	require.Equal(t, []int{1, 2, 3, 4}, indexes)

	for _, bad := range [][]string{{"--shard", "0/2"}, {"--shard", "2/2", "--version", "3"}, {"--shard", "x", "--version", "3"}, {"--shard", "1/2/3", "--version", "3"}} {
		code, _, errs := cli(t, append([]string{"optimize", tbl}, bad...)...)
		require.Equal(t, 2, code, "%v: %s", bad, errs)
		require.Contains(t, errs, "--shard")
	}
	removed := 0
	for k := 0; k < 3; k++ {
		code, out, errs := cli(t, "optimize", tbl, "--version", "3", "--shard", fmt.Sprintf("%d/3", k), "--quiet")
		require.Equal(t, 0, code, errs)
		m := regexp.MustCompile(`removed (\d+) files`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		var n int
		fmt.Sscan(m[1], &n)
		removed += n
	}
	require.Equal(t, 16, removed, "the shards rewrote every planned file once")
	// A shard run again (a retried pod) finds its files committed and does nothing.
	code, out, errs = cli(t, "optimize", tbl, "--version", "3", "--shard", "1/3", "--quiet")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "committed versions [] ", "a re-run commits nothing")
	require.Contains(t, out, "removed 0 files")
	code, out, errs = cli(t, "optimize", tbl, "--quiet")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "nothing to do")
}
