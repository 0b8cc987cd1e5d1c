package optimize

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Item 9 of issue #10: OPTIMIZE (clustering and plain compaction) over a log whose
// add actions name a file that cannot be read returns an error, never panics, leaves
// no file behind and commits nothing. Paths leading outside the table root stay
// refused, with an error saying the path is invalid (not a clean path under the root)
// or an unsupported absolute URI.
func TestOptimizeUnreadableFileIsAnErrorNotAPanic(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	type setup func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add
	withPath := func(p string) func(*log.Add) *log.Add {
		return func(a *log.Add) *log.Add { c := *a; c.Path = p; return &c }
	}
	copyOut := func(t *testing.T, tt *testTable, good *log.Add) string {
		data, err := tt.store.Get(ctx, good.Path)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(outside, "stolen.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name    string
		make    setup
		outside bool // the error must say the path is not usable under the root
	}{
		{"missing file", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			return withPath("part-99999-missing.parquet")(good)
		}, false},
		{"../ out of the root", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			copyOut(t, tt, good)
			rel, _ := filepath.Rel(dir, filepath.Join(outside, "stolen.parquet"))
			return withPath(filepath.ToSlash(rel))(good)
		}, true},
		{"absolute path", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			return withPath(copyOut(t, tt, good))(good)
		}, true},
		{"absolute URI", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			return withPath("file://" + copyOut(t, tt, good))(good)
		}, true},
		{"./ prefix", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			return withPath("./" + good.Path)(good)
		}, true},
		{"symlink out of the root", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			if err := os.Symlink(copyOut(t, tt, good), filepath.Join(dir, "link.parquet")); err != nil {
				t.Skip(err)
			}
			return withPath("link.parquet")(good)
		}, false},
		{"temporary file name", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			name := ".part-1.parquet.0123456789abcdef.skiplake-tmp"
			data, _ := tt.store.Get(ctx, good.Path)
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			return withPath(name)(good)
		}, true},
		{"numRecords disagrees with the file", func(t *testing.T, tt *testTable, dir string, good *log.Add) *log.Add {
			c := *good
			c.Stats = `{"numRecords":7}`
			return &c
		}, false},
	}
	for _, variant := range []string{"hilbert", "zorder", "none", "none-copying-row-groups"} {
		curve, _ := ParseCurve(strings.TrimSuffix(variant, "-copying-row-groups"))
		for _, c := range cases {
			t.Run(variant+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				st, err := storage.NewLocal(dir)
				if err != nil {
					t.Fatal(err)
				}
				tt := newTestTableOn(t, st, "", nil)
				tt.appendFiles(t, tt.recs(3, 200), nil)
				snap := tt.snapshot(t)
				good := snap.Files()[0]
				bad := c.make(t, tt, dir, good)
				// Replace the good file's add with the bad one (same rows), written
				// as raw log actions: skiplake's own transactions refuse some of
				// these paths, other writers may not.
				data, err := log.MarshalActions([]log.Action{
					{CommitInfo: &log.CommitInfo{Operation: "WRITE"}},
					{Remove: &log.Remove{Path: good.Path, DataChange: true}},
					{Add: bad},
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := tt.store.PutIfAbsent(ctx, log.CommitPath(snap.Version()+1), data); err != nil {
					t.Fatal(err)
				}
				before := tt.objects(t)
				latest, _ := tt.lg.LatestVersion(ctx)
				opts := Options{TargetFileSize: 1 << 30}
				if strings.HasSuffix(variant, "-copying-row-groups") {
					opts.StitchMinRowGroupBytes = 1
				}
				if curve != CurveNone {
					opts.Curve, opts.ClusterBy = curve, []string{"x", "y"}
				}
				plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, opts)
				if err != nil {
					t.Fatal(err)
				}
				_, err = Execute(ctx, plan)
				if err == nil {
					t.Fatal("OPTIMIZE over an unreadable file succeeded")
				}
				if c.outside && !errors.Is(err, storage.ErrInvalidPath) && !errors.Is(err, log.ErrUnsupportedPath) {
					t.Errorf("error %v does not say the path is unusable", err)
				}
				if after := tt.objects(t); !slices.Equal(before, after) {
					t.Errorf("files left behind: before %v, after %v", before, after)
				}
				if v, _ := tt.lg.LatestVersion(ctx); v != latest {
					t.Errorf("committed version %d", v)
				}
			})
		}
	}
}
