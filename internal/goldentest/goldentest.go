// Package goldentest locates the golden Delta tables (the reader conformance suite)
// for tests: $SKIPLAKE_GOLDEN when set, otherwise ../shared/golden beside the
// repository root (the directory holding go.mod). When SKIPLAKE_GOLDEN is set (CI
// sets it) a missing or empty directory fails the test: a silent skip must not hide
// a broken conformance suite. Without it, tests skip with a clear message when the
// tables are absent. Nothing is ever copied into the repository.
//
// The regression tables (tables damaged on purpose, each of which once crashed
// skiplake) are found the same way by RegressionsDir: the "regressions" directory
// beside the golden tables' directory ($SKIPLAKE_GOLDEN/../regressions when it is set,
// and then required; otherwise ../shared/regressions, skipped when absent).
package goldentest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the golden tables' directory. When SKIPLAKE_GOLDEN is set and does not
// name a non-empty directory the test fails (tb.Fatal); otherwise, when there is no
// ../shared/golden, it skips (tb.Skip) saying where it looked.
func Dir(tb testing.TB) string {
	tb.Helper()
	d, why, fatal := Lookup()
	switch {
	case d != "":
		return d
	case fatal:
		tb.Fatal(why)
	default:
		tb.Skip(why)
	}
	return ""
}

// Lookup finds the golden tables' directory as Dir does, without a testing.TB (a fuzz
// target seeds from them when they are there). When it finds none, why says where it
// looked, and fatal is true when SKIPLAKE_GOLDEN is set (a test must then fail).
func Lookup() (dir, why string, fatal bool) {
	wd, err := os.Getwd()
	return lookup(os.Getenv("SKIPLAKE_GOLDEN"), wd, err)
}

// lookup is Lookup's decision with its inputs explicit: env is $SKIPLAKE_GOLDEN ("" when
// unset), wd the working directory (or wdErr why it is unknown). It reads the file
// system only.
func lookup(env, wd string, wdErr error) (dir, why string, fatal bool) {
	if d := env; d != "" {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			return "", fmt.Sprintf("golden tables not found: SKIPLAKE_GOLDEN=%s is not a directory", d), true
		}
		if entries, err := os.ReadDir(d); err != nil || len(entries) == 0 {
			return "", fmt.Sprintf("golden tables not found: SKIPLAKE_GOLDEN=%s is empty or unreadable (%v)", d, err), true
		}
		return d, "", false
	}
	root, why := repoRoot(wd, wdErr)
	if root == "" {
		return "", "golden tables not found: " + why, false
	}
	g := filepath.Join(root, "..", "shared", "golden")
	if st, err := os.Stat(g); err != nil || !st.IsDir() {
		return "", fmt.Sprintf("golden tables not found at %s (set SKIPLAKE_GOLDEN to their directory)", g), false
	}
	return g, "", false
}

// repoRoot returns the repository root above wd: the first directory holding go.mod
// that is not the interop module's. When there is none, why says so.
func repoRoot(wd string, wdErr error) (root, why string) {
	if wdErr != nil {
		return "", wdErr.Error()
	}
	dir := wd
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			// interop/ is a module of its own inside the repository: keep walking up
			// past it to the repository root.
			if filepath.Base(dir) != "interop" {
				return dir, ""
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "no go.mod above the test directory (set SKIPLAKE_GOLDEN)"
		}
		dir = parent
	}
}

// RegressionsDir returns the regression tables' directory (see the package comment).
// When SKIPLAKE_GOLDEN is set and there is no non-empty regressions directory beside it
// the test fails (tb.Fatal); otherwise, when there is no ../shared/regressions, it
// skips (tb.Skip) saying where it looked.
func RegressionsDir(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	d, why, fatal := lookupRegressions(os.Getenv("SKIPLAKE_GOLDEN"), wd, err)
	switch {
	case d != "":
		return d
	case fatal:
		tb.Fatal(why)
	default:
		tb.Skip(why)
	}
	return ""
}

// lookupRegressions is RegressionsDir's decision with its inputs explicit: golden is
// $SKIPLAKE_GOLDEN ("" when unset), wd the working directory (or wdErr why it is
// unknown).
func lookupRegressions(golden, wd string, wdErr error) (dir, why string, fatal bool) {
	if golden != "" {
		d := filepath.Join(filepath.Dir(filepath.Clean(golden)), "regressions")
		if entries, err := os.ReadDir(d); err != nil || len(entries) == 0 {
			return "", fmt.Sprintf("regression tables not found: %s (beside SKIPLAKE_GOLDEN=%s) is missing or empty (%v)", d, golden, err), true
		}
		return d, "", false
	}
	root, why := repoRoot(wd, wdErr)
	if root == "" {
		return "", "regression tables not found: " + why, false
	}
	d := filepath.Join(root, "..", "shared", "regressions")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", fmt.Sprintf("regression tables not found at %s (set SKIPLAKE_GOLDEN to the golden tables beside them)", d), false
	}
	return d, "", false
}

// LookupRegressions finds the regression tables' directory as RegressionsDir does,
// without a testing.TB (a fuzz target seeds from them when they are there).
func LookupRegressions() (dir, why string, fatal bool) {
	wd, err := os.Getwd()
	return lookupRegressions(os.Getenv("SKIPLAKE_GOLDEN"), wd, err)
}
