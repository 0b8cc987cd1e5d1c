// Package goldentest locates the golden Delta tables (the reader conformance suite)
// for tests: $SKIPLAKE_GOLDEN when set, otherwise ../shared/golden beside the
// repository root (the directory holding go.mod). When SKIPLAKE_GOLDEN is set (CI
// sets it) a missing or empty directory fails the test: a silent skip must not hide
// a broken conformance suite. Without it, tests skip with a clear message when the
// tables are absent. Nothing is ever copied into the repository.
package goldentest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the golden tables' directory. When SKIPLAKE_GOLDEN is set and does not
// name a non-empty directory the test fails (tb.Fatal); otherwise, when there is no
// ../shared/golden, it skips (tb.Skip) saying where it looked.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("SKIPLAKE_GOLDEN"); d != "" {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			tb.Fatalf("golden tables not found: SKIPLAKE_GOLDEN=%s is not a directory", d)
		}
		if entries, err := os.ReadDir(d); err != nil || len(entries) == 0 {
			tb.Fatalf("golden tables not found: SKIPLAKE_GOLDEN=%s is empty or unreadable (%v)", d, err)
		}
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Skipf("golden tables not found: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			// interop/ is a module of its own inside the repository: keep walking up
			// past it to the repository root.
			if filepath.Base(dir) != "interop" {
				break
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("golden tables not found: no go.mod above the test directory (set SKIPLAKE_GOLDEN)")
		}
		dir = parent
	}
	g := filepath.Join(dir, "..", "shared", "golden")
	if st, err := os.Stat(g); err != nil || !st.IsDir() {
		tb.Skipf("golden tables not found at %s (set SKIPLAKE_GOLDEN to their directory)", g)
	}
	return g
}
