package log

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type goldenMeta struct {
	LogReplay struct {
		Version     int64  `json:"version"`
		ActiveFiles int    `json:"active_files"`
		Rows        *int64 `json:"rows"`
	} `json:"log_replay"`
}

func goldenTables(t *testing.T, root string) []string {
	f, err := os.Open(filepath.Join(root, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for first := true; sc.Scan(); first = false {
		if first {
			continue
		}
		if d, _, ok := strings.Cut(sc.Text(), "\t"); ok && d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		t.Fatal("INDEX.tsv lists no tables")
	}
	return dirs
}

// TestGoldenLogReplay opens every golden table at its latest version and
// compares version, live files and live rows with GOLDEN_META.json.
func TestGoldenLogReplay(t *testing.T) {
	root := goldenDir(t)
	ctx := context.Background()
	for _, dir := range goldenTables(t, root) {
		t.Run(dir, func(t *testing.T) {
			var gm goldenMeta
			b, err := os.ReadFile(filepath.Join(root, dir, "GOLDEN_META.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &gm); err != nil {
				t.Fatal(err)
			}
			l := New(localStore(t, filepath.Join(root, dir, "delta")))
			snap, err := l.Snapshot(ctx, -1)
			if dir == "delta-golden/deltalog-invalid-protocol-version" {
				var ue *UnsupportedFeatureError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupportedFeature) || !ue.Reader {
					t.Fatalf("want reader UnsupportedFeatureError, got %v", err)
				}
				if !strings.Contains(err.Error(), "minReaderVersion=99") {
					t.Fatalf("error does not name minReaderVersion 99: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			if snap.Version() != gm.LogReplay.Version {
				t.Errorf("version %d, want %d", snap.Version(), gm.LogReplay.Version)
			}
			if snap.NumFiles() != gm.LogReplay.ActiveFiles {
				t.Errorf("live files %d, want %d", snap.NumFiles(), gm.LogReplay.ActiveFiles)
			}
			var rows int64
			withStats := 0
			for _, a := range snap.Files() {
				if n, ok := a.NumRecords(); ok {
					rows += n
					withStats++
				}
				if a.DeletionVector != nil {
					rows -= a.DeletionVector.Cardinality
				}
				if _, err := a.DecodedPath(); err != nil {
					t.Errorf("path %q: %v", a.Path, err)
				}
			}
			if gm.LogReplay.Rows != nil && withStats == snap.NumFiles() && rows != *gm.LogReplay.Rows {
				t.Errorf("rows %d, want %d", rows, *gm.LogReplay.Rows)
			}
			sch, err := snap.Schema()
			if err != nil {
				t.Fatalf("schema: %v", err)
			}
			if again, err := ParseSchema(sch.JSON()); err != nil || again.JSON() != sch.JSON() {
				t.Errorf("schema round trip: %v", err)
			}
			if ColumnMappingMode(snap.Metadata().Configuration) == ColumnMappingNone {
				if _, err := ToArrow(sch, ArrowOptions{}); err != nil {
					t.Errorf("ToArrow: %v", err)
				}
			}
			for _, c := range snap.PartitionColumns() {
				if sch.Field(c) == nil {
					t.Errorf("partition column %q not in schema", c)
				}
			}
			// History reads only commit files and never fails on a readable table.
			if _, err := l.History(ctx, 3); err != nil {
				t.Errorf("history: %v", err)
			}
		})
	}
}

// TestGoldenDATVersions checks every expected/vN/table_version_metadata.json
// of the DAT tables against the snapshot at that version.
func TestGoldenDATVersions(t *testing.T) {
	root := goldenDir(t)
	ctx := context.Background()
	dats, _ := filepath.Glob(filepath.Join(root, "dat", "*", "expected", "*", "table_version_metadata.json"))
	if len(dats) == 0 {
		t.Skip("no DAT tables")
	}
	sort.Strings(dats)
	for _, p := range dats {
		rel, _ := filepath.Rel(root, p)
		t.Run(rel, func(t *testing.T) {
			var want struct {
				Version          int64             `json:"version"`
				Properties       map[string]string `json:"properties"`
				MinReaderVersion int               `json:"min_reader_version"`
				MinWriterVersion int               `json:"min_writer_version"`
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			tableDir := filepath.Dir(filepath.Dir(filepath.Dir(p)))
			l := New(localStore(t, filepath.Join(tableDir, "delta")))
			version := want.Version
			if filepath.Base(filepath.Dir(p)) == "latest" {
				version = -1
			}
			snap, err := l.Snapshot(ctx, version)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version() != want.Version {
				t.Errorf("version %d, want %d", snap.Version(), want.Version)
			}
			pr := snap.Protocol()
			if pr.MinReaderVersion != want.MinReaderVersion || pr.MinWriterVersion != want.MinWriterVersion {
				t.Errorf("protocol %d/%d, want %d/%d", pr.MinReaderVersion, pr.MinWriterVersion, want.MinReaderVersion, want.MinWriterVersion)
			}
			for k, v := range want.Properties {
				if got := snap.Metadata().Configuration[k]; got != v {
					t.Errorf("property %s = %q, want %q", k, got, v)
				}
			}
			if len(snap.Metadata().Configuration) != len(want.Properties) {
				t.Errorf("properties %v, want %v", snap.Metadata().Configuration, want.Properties)
			}
		})
	}
}

// TestGoldenTimeTravel checks per-version file counts quoted by upstream tests.
func TestGoldenTimeTravel(t *testing.T) {
	root := goldenDir(t)
	ctx := context.Background()
	cases := []struct {
		name    string
		dir     string
		version int64
		files   int
	}{
		{"delta-0.2.0 v0 has two files", "delta-rs/delta-0.2.0", 0, 2},
		{"delta-0.2.0 v2 after removes", "delta-rs/delta-0.2.0", 2, 2},
		{"basic_append v0 before second append", "dat/basic_append", 0, 1},
		{"basic_append v1", "dat/basic_append", 1, 2},
		{"stale _last_checkpoint still finds v3", "delta-rs/table_failed_last_checkpoint_update", 3, 4},
		{"checkpoint without _last_checkpoint", "delta-kernel-rs/with_checkpoint_no_last_checkpoint", 3, 1},
		{"log truncated before checkpoint 3", "delta-rs/checkpoint-cdf-table", 3, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(localStore(t, filepath.Join(root, c.dir, "delta")))
			snap, err := l.Snapshot(ctx, c.version)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version() != c.version {
				t.Errorf("version %d, want %d", snap.Version(), c.version)
			}
			if c.files >= 0 && snap.NumFiles() != c.files {
				t.Errorf("files %d, want %d", snap.NumFiles(), c.files)
			}
		})
	}
	t.Run("checkpoint-cdf-table v2 is not reconstructable", func(t *testing.T) {
		l := New(localStore(t, filepath.Join(root, "delta-rs/checkpoint-cdf-table", "delta")))
		if _, err := l.Snapshot(ctx, 2); !errors.Is(err, ErrMissingVersion) {
			t.Fatalf("want ErrMissingVersion, got %v", err)
		}
	})
	t.Run("delta-0.2.0 tombstones and txn", func(t *testing.T) {
		l := New(localStore(t, filepath.Join(root, "delta-rs/delta-0.2.0", "delta")))
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(snap.Tombstones()); n != 4 {
			t.Errorf("tombstones %d, want 4", n)
		}
		var got []string
		for _, f := range snap.Files() {
			got = append(got, f.Path)
		}
		want := []string{
			"part-00000-7c2deba3-1994-4fb8-bc07-d46c948aa415-c000.snappy.parquet",
			"part-00000-cb6b150b-30b8-4662-ad28-ff32ddab96d2-c000.snappy.parquet",
			"part-00001-c373a5bd-85f0-4758-815e-7eb62007a15c-c000.snappy.parquet",
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("files %v, want %v (sorted by path)", got, want)
		}
		if snap.CheckpointVersion() != 3 {
			t.Errorf("built from checkpoint %d, want 3", snap.CheckpointVersion())
		}
	})
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !strings.Contains(rel, "_delta_log") {
			return nil // data files are not needed by the log
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoldenAppendAndCheckpointOnCopy appends to copies of golden logs
// written by Spark, checkpoints them and reads them back.
func TestGoldenAppendAndCheckpointOnCopy(t *testing.T) {
	root := goldenDir(t)
	ctx := context.Background()
	for _, dir := range []string{"dat/basic_partitioned", "delta-golden/dv-partitioned-with-checkpoint", "delta-rs/delta-0.2.0"} {
		t.Run(dir, func(t *testing.T) {
			tmp := t.TempDir()
			copyDir(t, filepath.Join(root, dir, "delta"), tmp)
			l := New(localStore(t, tmp))
			snap, err := l.Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			tx := snap.NewTransaction(TxnOptions{DisableCheckpoint: true})
			add := newAdd("skiplake-added.parquet", 7)
			for _, c := range snap.PartitionColumns() {
				add.PartitionValues[c] = nil
			}
			tx.Add(add)
			v, err := tx.Commit(ctx, CommitInfo{})
			if err != nil {
				t.Fatal(err)
			}
			after, err := l.Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if after.Version() != v || after.NumFiles() != snap.NumFiles()+1 {
				t.Fatalf("after append: version %d files %d", after.Version(), after.NumFiles())
			}
			if err := l.Checkpoint(ctx, after); err != nil {
				t.Fatal(err)
			}
			cp, err := l.Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if cp.CheckpointVersion() != v {
				t.Fatalf("not read from our checkpoint: %d", cp.CheckpointVersion())
			}
			if !reflectFilesEqual(after.Files(), cp.Files()) {
				t.Fatal("files differ after checkpoint")
			}
		})
	}
}

func reflectFilesEqual(a, b []*Add) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, _ := json.Marshal(a[i])
		y, _ := json.Marshal(b[i])
		if string(x) != string(y) {
			return false
		}
	}
	return true
}
