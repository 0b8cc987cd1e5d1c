package goldentest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree builds a directory tree under a fresh root: each path ending in "/" is a
// directory, any other path a file. It returns the root.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestLookupDecision: with SKIPLAKE_GOLDEN set, only a non-empty directory is
// accepted and anything else is fatal (whatever ../shared/golden holds); without it,
// ../shared/golden beside the repository root is used when present and its absence
// means skip, never fail.
func TestLookupDecision(t *testing.T) {
	const repo = "repo/go.mod"
	for _, c := range []struct {
		name  string
		paths []string
		env   string // relative to the root; "" unset
		wd    string // relative to the root
		wdErr error
		want  string // the directory found, relative to the root; "" none
		fatal bool
		why   string // part of the message when none is found
	}{
		{name: "env names a missing directory", paths: []string{repo}, env: "nope", wd: "repo", fatal: true, why: "is not a directory"},
		{name: "env names a file", paths: []string{repo, "golden"}, env: "golden", wd: "repo", fatal: true, why: "is not a directory"},
		{name: "env names an empty directory", paths: []string{repo, "golden/"}, env: "golden", wd: "repo", fatal: true, why: "is empty"},
		{name: "env missing although shared/golden exists", paths: []string{repo, "shared/golden/t/"}, env: "nope", wd: "repo", fatal: true, why: "is not a directory"},
		{name: "env names a non-empty directory", paths: []string{repo, "golden/t/"}, env: "golden", wd: "repo", want: "golden"},
		{name: "unset, shared/golden absent: skip", paths: []string{repo, "repo/pkg/"}, wd: "repo/pkg", why: "not found at"},
		{name: "unset, shared/golden present", paths: []string{repo, "repo/pkg/", "shared/golden/t/"}, wd: "repo/pkg", want: "shared/golden"},
		{name: "unset, from the interop module", paths: []string{repo, "repo/interop/go.mod", "repo/interop/x/", "shared/golden/t/"}, wd: "repo/interop/x", want: "shared/golden"},
		{name: "unset, working directory unknown", paths: []string{repo, "shared/golden/t/"}, wd: "repo", wdErr: errors.New("getwd failed"), why: "getwd failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.paths...)
			env := ""
			if c.env != "" {
				env = filepath.Join(root, c.env)
			}
			dir, why, fatal := lookup(env, filepath.Join(root, c.wd), c.wdErr)
			want := ""
			if c.want != "" {
				want = filepath.Join(root, c.want)
			}
			if dir != want || fatal != c.fatal {
				t.Fatalf("lookup = (%q, %q, fatal %v), want (%q, fatal %v)", dir, why, fatal, want, c.fatal)
			}
			if want == "" && !strings.Contains(why, c.why) {
				t.Fatalf("why = %q, want it to mention %q", why, c.why)
			}
			if want != "" && why != "" {
				t.Fatalf("found %s but why = %q", dir, why)
			}
		})
	}
}

// fakeTB records Fatal and Skip instead of stopping the goroutine, so that Dir's
// reaction can be observed.
type fakeTB struct {
	testing.TB
	fatals, skips []string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.fatals = append(f.fatals, fmt.Sprint(args...)) }
func (f *fakeTB) Skip(args ...any)  { f.skips = append(f.skips, fmt.Sprint(args...)) }

// TestDirFailsOrSkips: Dir fails the test (never skips) when SKIPLAKE_GOLDEN names no
// usable directory, skips (never fails) when it is unset and the tables are absent,
// and returns the directory otherwise.
func TestDirFailsOrSkips(t *testing.T) {
	root := tree(t, "repo/go.mod", "repo/pkg/", "golden/t/", "empty/")
	t.Chdir(filepath.Join(root, "repo", "pkg"))
	for _, c := range []struct {
		name          string
		env           string
		want          string
		fatals, skips int
	}{
		{name: "set, missing", env: filepath.Join(root, "missing"), fatals: 1},
		{name: "set, empty", env: filepath.Join(root, "empty"), fatals: 1},
		{name: "set, present", env: filepath.Join(root, "golden"), want: filepath.Join(root, "golden")},
		{name: "unset, absent", skips: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SKIPLAKE_GOLDEN", c.env)
			f := &fakeTB{TB: t}
			got := Dir(f)
			if got != c.want || len(f.fatals) != c.fatals || len(f.skips) != c.skips {
				t.Fatalf("Dir = %q with Fatal %q and Skip %q; want %q with %d Fatal and %d Skip calls",
					got, f.fatals, f.skips, c.want, c.fatals, c.skips)
			}
		})
	}
}

// TestLookupRegressionsDecision: the regression tables sit beside the golden tables.
// With SKIPLAKE_GOLDEN set, a missing or empty regressions directory beside it is
// fatal; without it, ../shared/regressions is used when present and skipped when not.
func TestLookupRegressionsDecision(t *testing.T) {
	const repo = "repo/go.mod"
	for _, c := range []struct {
		name  string
		paths []string
		env   string // SKIPLAKE_GOLDEN relative to the root; "" unset
		want  string
		fatal bool
		why   string
	}{
		{name: "env set, regressions beside it", paths: []string{repo, "ci/golden/t/", "ci/regressions/r/"}, env: "ci/golden", want: "ci/regressions"},
		{name: "env set, regressions missing", paths: []string{repo, "ci/golden/t/", "shared/regressions/r/"}, env: "ci/golden", fatal: true, why: "beside SKIPLAKE_GOLDEN"},
		{name: "env set, regressions empty", paths: []string{repo, "ci/golden/t/", "ci/regressions/"}, env: "ci/golden", fatal: true, why: "missing or empty"},
		{name: "unset, shared/regressions present", paths: []string{repo, "repo/pkg/", "shared/regressions/r/"}, want: "shared/regressions"},
		{name: "unset, shared/regressions absent: skip", paths: []string{repo, "repo/pkg/"}, why: "not found at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.paths...)
			env := ""
			if c.env != "" {
				env = filepath.Join(root, c.env)
			}
			dir, why, fatal := lookupRegressions(env, filepath.Join(root, "repo"), nil)
			want := ""
			if c.want != "" {
				want = filepath.Join(root, c.want)
			}
			if filepath.Clean(dir) != filepath.Clean(want) && !(dir == "" && want == "") || fatal != c.fatal {
				t.Fatalf("lookupRegressions = (%q, %q, fatal %v), want (%q, fatal %v)", dir, why, fatal, want, c.fatal)
			}
			if want == "" && !strings.Contains(why, c.why) {
				t.Fatalf("why = %q, want it to mention %q", why, c.why)
			}
		})
	}
}
