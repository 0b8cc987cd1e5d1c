// Package goldentest locates the golden Delta tables (the reader conformance suite)
// for tests: $SKIPLAKE_GOLDEN when set, otherwise ../shared/golden beside the
// repository root (the directory holding go.mod). Tests that need them skip with a
// clear message when they are absent; nothing is ever copied into the repository.
package goldentest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the golden tables' directory, or skips the test (tb.Skip) saying where
// it looked when there is none.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("SKIPLAKE_GOLDEN"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		tb.Skipf("golden tables not found: SKIPLAKE_GOLDEN=%s is not a directory", d)
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
