package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAdvise(t *testing.T) {
	dir := t.TempDir()
	tbl := appendIDTable(t, dir, 500)
	queries := filepath.Join(dir, "q.sql")
	require.NoError(t, os.WriteFile(queries, []byte("# ids\nid >= 100 AND id < 300\n3: id >= 1500 AND country = 'JP'\n"), 0o644))
	svg := filepath.Join(dir, "svg")
	code, out, errs := cli(t, "advise", tbl, "--queries", queries, "--files", "10", "--svg", svg)
	require.Equal(t, 0, code, errs)
	for _, want := range []string{"current ", "workload ", "sort(id)", "best: ", "apply: skiplake optimize " + tbl} {
		require.Contains(t, out, want)
	}
	for _, f := range []string{"files.svg", "boxes.svg"} {
		data, err := os.ReadFile(filepath.Join(svg, f))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(data), "<svg"))
	}
	code, out, errs = cli(t, "advise", tbl, "--queries", queries, "--files", "10", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"candidates": [`)

	code, _, errs = cli(t, "advise", tbl)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--queries FILE is required")

	bad := filepath.Join(dir, "bad.sql")
	require.NoError(t, os.WriteFile(bad, []byte("id > 1\nid >\n"), 0o644))
	code, _, errs = cli(t, "advise", tbl, "--queries", bad)
	require.Equal(t, 1, code)
	require.Contains(t, errs, bad+":2:5")

	unknown := filepath.Join(dir, "unknown.sql")
	require.NoError(t, os.WriteFile(unknown, []byte("nope = 1\n"), 0o644))
	code, _, errs = cli(t, "advise", tbl, "--queries", unknown)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "line 1")
}

func TestOptimizeWorkloadLayout(t *testing.T) {
	dir := t.TempDir()
	tbl := appendIDTable(t, dir, 2000)
	queries := filepath.Join(dir, "q.sql")
	require.NoError(t, os.WriteFile(queries, []byte("id >= 1000 AND id < 2000\nid >= 5000 AND id < 5500\n2: id < 500\n"), 0o644))
	code, out, errs := cli(t, "optimize", tbl, "--layout", "workload", "--queries", queries, "--target-size", "2KiB")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "workload")
	require.Contains(t, out, "tree")
	require.Contains(t, out, "build")
	code, out, errs = cli(t, "files", tbl, "--filter", "id >= 1000 AND id < 2000", "--format", "jsonl")
	require.Equal(t, 0, code, errs)
	kept := strings.Count(out, "\n")
	code, out, errs = cli(t, "files", tbl, "--format", "jsonl")
	require.Equal(t, 0, code, errs)
	require.Less(t, kept*3, strings.Count(out, "\n"), "the layout should skip most files for a workload filter")
	// New rows that double the table are routed through the stored tree (a
	// re-split); the same queries report no drift.
	p := filepath.Join(dir, "more.parquet")
	var ids []int64
	var cs []string
	for k := int64(0); k < 8400; k++ {
		ids = append(ids, (k*53)%8000)
		cs = append(cs, []string{"DE", "FR", "JP"}[k%3])
	}
	writeParquet(t, p, ids, cs)
	code, _, errs = cli(t, "append", tbl, p)
	require.Equal(t, 0, code, errs)
	code, out, errs = cli(t, "optimize", tbl, "--layout", "workload", "--queries", queries, "--target-size", "2KiB", "--dry-run")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `route through \S+: re-split [1-9]\d* subtrees, rewriting [1-9]\d* new, \d+ waiting and \d+ laid-out files; \d+ new and \d+ waiting files stay where they were appended`, out)
	require.NotContains(t, out, "move down")
	code, out, errs = cli(t, "optimize", tbl, "--layout", "workload", "--queries", queries, "--target-size", "2KiB", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"action": "route"`)
	require.Contains(t, out, `"seenWeight": 1`)
	// advise notices the table is laid out by a tree.
	code, out, errs = cli(t, "advise", tbl, "--queries", queries, "--files", "8")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "the current layout is the workload tree")
}

// appendIDTable creates table dir/t by four CLI appends of rows rows each: ids
// spread over [0, 4*rows) in a scrambled order, country cycling DE, FR, JP.
func appendIDTable(t *testing.T, dir string, rows int64) string {
	t.Helper()
	tbl := filepath.Join(dir, "t")
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, "in"+string(rune('a'+i))+".parquet")
		var ids []int64
		var cs []string
		for k := int64(0); k < rows; k++ {
			ids = append(ids, (k*37+int64(i)*11)%(4*rows))
			cs = append(cs, []string{"DE", "FR", "JP"}[k%3])
		}
		writeParquet(t, p, ids, cs)
		code, _, errs := cli(t, "append", tbl, p)
		require.Equal(t, 0, code, errs)
	}
	return tbl
}

// TestAdviseRecommendsWhatOptimizeAccepts: the command advise prints runs; on a
// clustered table (where optimize refuses curves and workload layouts) it prints
// none, says why, and warns that a rewrite would gain nothing.
func TestAdviseRecommendsWhatOptimizeAccepts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clustered bool
	}{{"plain", false}, {"clustered", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := appendIDTable(t, dir, 500)
			if tc.clustered {
				code, _, errs := cli(t, "alter", tbl, "--cluster-by", "country")
				require.Equal(t, 0, code, errs)
			}
			queries := filepath.Join(dir, "q.sql")
			require.NoError(t, os.WriteFile(queries, []byte("id >= 100 AND id < 300\n3: id >= 1500 AND id < 1600\n"), 0o644))
			code, out, errs := cli(t, "advise", tbl, "--queries", queries)
			require.Equal(t, 0, code, errs)
			var apply string
			for _, line := range strings.Split(out, "\n") {
				if cmd, ok := strings.CutPrefix(line, "apply: skiplake "); ok {
					apply = cmd
				}
			}
			if tc.clustered {
				require.Empty(t, apply, out)
				require.Contains(t, out, "note: optimize refuses ")
				require.Contains(t, out, "warning: a rewrite would gain nothing")
				return
			}
			require.NotEmpty(t, apply, out)
			code, _, errs = cli(t, strings.Fields(apply)...)
			require.Equal(t, 0, code, "%s: %s", apply, errs)
		})
	}
}
