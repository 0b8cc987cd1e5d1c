package log

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
)

const (
	protoLine = `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`
)

func mdLine(cfg string) string {
	return `{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{` + cfg + `}}}`
}

func addLine(path string, n int) string {
	return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":%d}"}}`, path, n)
}

func ciLine(ts int64) string {
	return fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}`, ts)
}

func put(t testing.TB, s storage.Storage, path string, lines ...string) {
	t.Helper()
	if err := s.Put(context.Background(), path, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		t.Fatal(err)
	}
}

// rawLog writes commits 0..n-1: version 0 creates the table, later versions add f<v>.
func rawLog(t testing.TB, n int) storage.Storage {
	s := memStore()
	put(t, s, CommitPath(0), ciLine(1000), protoLine, mdLine(""), addLine("f0", 1))
	for v := 1; v < n; v++ {
		put(t, s, CommitPath(int64(v)), ciLine(int64(1000+v*10)), addLine(fmt.Sprintf("f%d", v), 1))
	}
	return s
}

func TestSnapshotReplay(t *testing.T) {
	ctx := context.Background()
	s := rawLog(t, 3)
	put(t, s, CommitPath(3), ciLine(1030),
		`{"remove":{"path":"f0","deletionTimestamp":5,"dataChange":true}}`,
		`{"txn":{"appId":"app","version":7}}`,
		`{"add":{"path":"f1","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"dv","offset":1,"sizeInBytes":10,"cardinality":1}}}`,
		`{"remove":{"path":"f1","dataChange":true}}`)
	l := New(s)
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != 3 {
		t.Fatalf("version %d", snap.Version())
	}
	var paths []string
	for _, f := range snap.Files() {
		paths = append(paths, f.Path+"#"+f.DeletionVector.UniqueID())
	}
	if got := strings.Join(paths, ","); got != "f1#udv@1,f2#" {
		t.Errorf("files %s: f0 removed, f1 replaced by its DV version", got)
	}
	if len(snap.Tombstones()) != 2 {
		t.Errorf("tombstones %d, want 2", len(snap.Tombstones()))
	}
	if v, ok := snap.TxnVersion("app"); !ok || v != 7 {
		t.Errorf("txn version %d %v", v, ok)
	}
	if snap.Timestamp().UnixMilli() != 1030 {
		t.Errorf("timestamp %d", snap.Timestamp().UnixMilli())
	}
	old, err := l.Snapshot(ctx, 1)
	if err != nil || old.NumFiles() != 2 {
		t.Fatalf("time travel to 1: %v", err)
	}
	if _, err := l.Snapshot(ctx, 9); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("want ErrVersionNotFound, got %v", err)
	}
	if v, err := l.LatestVersion(ctx); err != nil || v != 3 {
		t.Errorf("latest %d %v", v, err)
	}
}

func TestSnapshotBadInput(t *testing.T) {
	ctx := context.Background()
	t.Run("empty log is table not found", func(t *testing.T) {
		if _, err := New(memStore()).Snapshot(ctx, -1); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("corrupt commit line names file and line", func(t *testing.T) {
		s := rawLog(t, 5)
		put(t, s, CommitPath(5), ciLine(1), addLine("g", 1), `{"add":{"path":`)
		_, err := New(s).Snapshot(ctx, -1)
		if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "_delta_log/00000000000000000005.json line 3") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("gap names the missing version", func(t *testing.T) {
		s := rawLog(t, 5)
		if err := s.Delete(ctx, CommitPath(2)); err != nil {
			t.Fatal(err)
		}
		_, err := New(s).Snapshot(ctx, -1)
		if !errors.Is(err, ErrMissingVersion) || !strings.Contains(err.Error(), "00000000000000000002.json") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("gap after checkpoint names the missing version", func(t *testing.T) {
		s := rawLog(t, 6)
		l := New(s)
		snap, err := l.Snapshot(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Checkpoint(ctx, snap); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, CommitPath(4)); err != nil {
			t.Fatal(err)
		}
		_, err = l.Snapshot(ctx, -1)
		if !errors.Is(err, ErrMissingVersion) || !strings.Contains(err.Error(), "00000000000000000004.json") {
			t.Fatalf("got %v", err)
		}
	})
	for _, lc := range []string{"", "{not json", `{"version":99,"size":1}`, `{"version":1,"size":1}`} {
		t.Run(fmt.Sprintf("bad _last_checkpoint %q falls back", lc), func(t *testing.T) {
			s := rawLog(t, 4)
			if err := s.Put(ctx, lastCheckpointKey, []byte(lc)); err != nil {
				t.Fatal(err)
			}
			snap, err := New(s).Snapshot(ctx, -1)
			if err != nil || snap.Version() != 3 || snap.NumFiles() != 4 {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("truncated checkpoint falls back to older checkpoint", func(t *testing.T) {
		s := rawLog(t, 8)
		l := New(s)
		for _, v := range []int64{3, 6} {
			snap, err := l.Snapshot(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Checkpoint(ctx, snap); err != nil {
				t.Fatal(err)
			}
		}
		data, err := s.Get(ctx, CheckpointPath(6))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, CheckpointPath(6), data[:len(data)/2]); err != nil {
			t.Fatal(err)
		}
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		if snap.CheckpointVersion() != 3 || snap.NumFiles() != 8 {
			t.Fatalf("checkpoint %d files %d, want fallback to 3 with 8 files", snap.CheckpointVersion(), snap.NumFiles())
		}
	})
	t.Run("truncated only checkpoint falls back to JSON replay", func(t *testing.T) {
		s := rawLog(t, 5)
		l := New(s)
		snap, err := l.Snapshot(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Checkpoint(ctx, snap); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, CheckpointPath(3), []byte("PAR1garbage")); err != nil {
			t.Fatal(err)
		}
		snap, err = l.Snapshot(ctx, -1)
		if err != nil || snap.CheckpointVersion() != -1 || snap.NumFiles() != 5 {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("broken checkpoint without JSON history reports both", func(t *testing.T) {
		s := rawLog(t, 5)
		l := New(s)
		snap, _ := l.Snapshot(ctx, 3)
		if err := l.Checkpoint(ctx, snap); err != nil {
			t.Fatal(err)
		}
		_ = s.Put(ctx, CheckpointPath(3), []byte("junk"))
		_ = s.Delete(ctx, CommitPath(0))
		_, err := l.Snapshot(ctx, -1)
		if !errors.Is(err, ErrMissingVersion) || !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("no protocol action", func(t *testing.T) {
		s := memStore()
		put(t, s, CommitPath(0), mdLine(""))
		if _, err := New(s).Snapshot(ctx, -1); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unsupported reader feature", func(t *testing.T) {
		s := memStore()
		put(t, s, CommitPath(0), `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["futureThing"],"writerFeatures":["futureThing"]}}`, mdLine(""))
		_, err := New(s).Snapshot(ctx, -1)
		var ue *UnsupportedFeatureError
		if !errors.As(err, &ue) || ue.Features[0] != "futureThing" {
			t.Fatalf("got %v", err)
		}
	})
}

func TestListingIgnoresAuxiliaryFiles(t *testing.T) {
	ctx := context.Background()
	s := rawLog(t, 3)
	put(t, s, "_delta_log/00000000000000000000.00000000000000000002.compacted.json", "garbage")
	put(t, s, "_delta_log/00000000000000000001.crc", "garbage")
	put(t, s, "_delta_log/00000000000000000002.checkpoint.0000000001.0000000002.parquet", "incomplete set")
	put(t, s, "_delta_log/_sidecars/x.parquet", "x")
	put(t, s, "_delta_log/README", "x")
	snap, err := New(s).Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != 2 || snap.NumFiles() != 3 || snap.CheckpointVersion() != -1 {
		t.Fatalf("version %d files %d cp %d", snap.Version(), snap.NumFiles(), snap.CheckpointVersion())
	}
}

func TestSnapshotAsOf(t *testing.T) {
	ctx := context.Background()
	l := New(rawLog(t, 4)) // commit timestamps 1000, 1010, 1020, 1030
	cases := []struct {
		name string
		ms   int64
		want int64
	}{
		{"exact first commit", 1000, 0},
		{"between commits picks older", 1015, 1},
		{"exact later commit", 1020, 2},
		{"after latest is latest", 99999, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, err := l.SnapshotAsOf(ctx, time.UnixMilli(c.ms))
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version() != c.want {
				t.Fatalf("version %d want %d", snap.Version(), c.want)
			}
		})
	}
	if _, err := l.SnapshotAsOf(ctx, time.UnixMilli(999)); !errors.Is(err, ErrTimestampOutOfRange) {
		t.Fatalf("before first commit: got %v", err)
	}
}

func TestHistory(t *testing.T) {
	ctx := context.Background()
	l := New(rawLog(t, 5))
	h, err := l.History(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Version != 4 || h[1].Version != 3 || h[0].Operation != "WRITE" || h[0].Timestamp.UnixMilli() != 1040 {
		t.Fatalf("history %+v", h)
	}
	all, err := l.History(ctx, 0)
	if err != nil || len(all) != 5 || all[4].Version != 0 {
		t.Fatalf("full history %d %v", len(all), err)
	}
	if all[0].CommitInfo.Raw["operation"] != "WRITE" {
		t.Errorf("raw commitInfo %v", all[0].CommitInfo.Raw)
	}
}
