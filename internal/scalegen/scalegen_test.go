package scalegen_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/skiplake/skiplake/internal/scalegen"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// TestBuild builds small tables of both shapes and checks the snapshot a reader sees:
// the checkpoint is the starting point, every file is live with its partition value
// and statistics, and the trailing commits replaced the first files.
func TestBuild(t *testing.T) {
	ctx := context.Background()
	for _, part := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", part), func(t *testing.T) {
			o := scalegen.Options{Files: 2500, Partitioned: part, Commits: 3, Batch: 1000}
			store := storage.NewMemory()
			if err := scalegen.Build(ctx, store, o); err != nil {
				t.Fatal(err)
			}
			snap, err := log.New(store).Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := snap.CheckpointVersion(), scalegen.CheckpointVersion(o); got != want {
				t.Errorf("checkpoint version %d, want %d", got, want)
			}
			if got, want := snap.Version(), scalegen.CheckpointVersion(o)+int64(o.Commits); got != want {
				t.Errorf("version %d, want %d", got, want)
			}
			files := snap.Files()
			if len(files) != scalegen.Expected(o) {
				t.Fatalf("%d live files, want %d", len(files), scalegen.Expected(o))
			}
			want := map[string]*log.Add{}
			for i := o.Commits; i < o.Files+o.Commits; i++ {
				a := scalegen.File(i, part)
				want[a.Path] = a
			}
			for _, f := range files {
				w, ok := want[f.Path]
				if !ok {
					t.Fatalf("unexpected live file %s", f.Path)
				}
				if f.Stats != w.Stats || f.Size != w.Size {
					t.Fatalf("file %s: stats %q size %d, want %q %d", f.Path, f.Stats, f.Size, w.Stats, w.Size)
				}
				gotDay, _ := f.PartitionValue("day")
				wantDay, _ := w.PartitionValue("day")
				if gotDay != wantDay {
					t.Fatalf("file %s: day %q, want %q", f.Path, gotDay, wantDay)
				}
				delete(want, f.Path)
			}
			if err := scalegen.Build(ctx, store, o); err == nil {
				t.Error("building into a non-empty store succeeded")
			}
		})
	}
}

func TestFilesFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want []int
		bad  bool
	}{
		{"", []int{7}, false},
		{"10000", []int{10000}, false},
		{"10000,100000,1000000", []int{10000, 100000, 1000000}, false},
		{"10k", nil, true},
		{"1,,2", nil, true},
		{"0", nil, true},
	} {
		t.Setenv(scalegen.EnvFiles, c.env)
		got, err := scalegen.FilesFromEnv(7)
		if (err != nil) != c.bad || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: got %v, %v; want %v (error %v)", c.env, got, err, c.want, c.bad)
		}
	}
}

// TestBuildDir builds, when SKIPLAKE_SCALE_DIR is set, the tables the whole-process
// measurements of BENCHMARKS.md ("A million files") use: for every count n in
// SKIPLAKE_SCALE_FILES, <dir>/files=n (unpartitioned) and <dir>/part-files=n
// (partitioned), each a checkpoint plus 3 commits; existing tables are kept.
func TestBuildDir(t *testing.T) {
	dir := os.Getenv("SKIPLAKE_SCALE_DIR")
	if dir == "" {
		t.Skip("set SKIPLAKE_SCALE_DIR (and SKIPLAKE_SCALE_FILES) to build the scale tables there")
	}
	cases, err := scalegen.Cases(10_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if _, _, err := c.Open(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
	}
}
