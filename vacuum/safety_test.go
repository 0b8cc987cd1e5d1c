package vacuum_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/vacuum"
)

// Item 2 of issue #10: files that were in the location before the table was created
// are never deleted, however old, except leftovers with skiplake's own file names.
func TestVacuumNeverDeletesFilesOlderThanTheTable(t *testing.T) {
	ctx := context.Background()
	orphan := "part-00007-" + uuid.NewString() + ".c000.zstd.parquet"
	tt, dir := localTestTable(t, map[string]time.Duration{
		"input.csv":            30 * 24 * time.Hour,
		"exports/2025.parquet": 90 * 24 * time.Hour,
		"country=DE/notes.txt": 10 * 24 * time.Hour,
		orphan:                 20 * 24 * time.Hour, // an earlier create attempt's file
		"_delta_index/bloom/x": 20 * 24 * time.Hour, // not a skiplake index name
		".git/HEAD":            20 * 24 * time.Hour,
	})
	tt.write(t, []int{50, 50}, 0, nil)
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(60 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Files, []string{orphan}) {
		t.Fatalf("deleted %v; want only the skiplake-named orphan", res.Files)
	}
	if res.KeptOlderThanTable != 4 {
		t.Fatalf("KeptOlderThanTable = %d, want 4", res.KeptOlderThanTable)
	}
	for _, p := range []string{"input.csv", "exports/2025.parquet", "country=DE/notes.txt", "_delta_index/bloom/x", ".git/HEAD"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// Files the log names are the table's own even when they are older than version 0:
// the files version 0 itself added (written before its commit), found through a
// tombstone or, once the tombstone has expired out of a checkpoint, through version 0.
func TestVacuumDeletesRemovedFilesOfVersionZero(t *testing.T) {
	ctx := context.Background()
	for _, expired := range []bool{false, true} {
		dir := t.TempDir()
		st, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		// A writer (any engine, any naming) writes its first file, then creates the
		// table with it in version 0.
		first := "spark-style-part-0000.snappy.parquet"
		if err := st.Put(ctx, first, []byte("rows")); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(dir, first), old, old); err != nil {
			t.Fatal(err)
		}
		// Metadata of a test table, then the log rebuilt with the add in version 0.
		md := newTestTableOn(t, st, "", nil).snapshot0(t)
		if err := os.RemoveAll(filepath.Join(dir, "_delta_log")); err != nil {
			t.Fatal(err)
		}
		lg := log.New(st)
		if _, err := lg.Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			[]*log.Add{{Path: first, PartitionValues: map[string]*string{}, Size: 4, ModificationTime: old.UnixMilli(), DataChange: true}}, log.CommitInfo{}); err != nil {
			t.Fatal(err)
		}
		snap, err := lg.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		del := time.Now().Add(-30 * 24 * time.Hour).UnixMilli()
		size := int64(4)
		txn := snap.NewTransaction(logTxn())
		txn.Remove(&log.Remove{Path: first, DeletionTimestamp: &del, DataChange: true, Size: &size})
		if _, err := txn.Commit(ctx, commitWrite()); err != nil {
			t.Fatal(err)
		}
		if expired {
			// A checkpoint drops the expired tombstone; only version 0 still names the file.
			last, err := lg.Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if err := lg.Checkpoint(ctx, last); err != nil {
				t.Fatal(err)
			}
			if again, _ := lg.Snapshot(ctx, -1); len(again.Tombstones()) != 0 {
				t.Fatalf("tombstone survived the checkpoint: %v", again.Tombstones())
			}
		}
		res, err := vacuum.Run(ctx, lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Files, []string{first}) || res.KeptOlderThanTable != 0 {
			t.Fatalf("expired=%v: deleted %v, kept %d older; want %s deleted", expired, res.Files, res.KeptOlderThanTable, first)
		}
	}
}

// snapshot0 returns the table's version-0 metadata.
func (tt *testTable) snapshot0(t *testing.T) log.Metadata {
	t.Helper()
	s, err := tt.lg.Snapshot(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s.Metadata()
}

// Item 7: VACUUM refuses tables with writer features it does not support, with or
// without vacuumProtocolCheck, and deletes nothing.
func TestVacuumRefusesUnsupportedWriterFeatures(t *testing.T) {
	ctx := context.Background()
	for name, proto := range map[string]string{
		"unknown writer feature": `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly","futureThing"]}}`,
		"with vacuumProtocolCheck": `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["vacuumProtocolCheck"],` +
			`"writerFeatures":["vacuumProtocolCheck","futureThing"]}}`,
	} {
		tt := newTestTable(t, "", nil)
		if err := tt.store.PutIfAbsent(ctx, log.CommitPath(1), []byte(`{"commitInfo":{"operation":"UPGRADE"}}`+"\n"+proto+"\n")); err != nil {
			t.Fatal(err)
		}
		if err := tt.store.Put(ctx, "orphan.parquet", []byte("x")); err != nil {
			t.Fatal(err)
		}
		_, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(30 * 24 * time.Hour) }})
		if !errors.Is(err, log.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "futureThing") {
			t.Errorf("%s: got %v; want a refusal naming futureThing", name, err)
		}
		if !slices.Contains(tt.objects(t), "orphan.parquet") {
			t.Errorf("%s: a refused vacuum deleted a file", name)
		}
	}
}

// Item 12: temporary files of writes killed mid-way are removed once older than the
// retention, wherever they are; young ones (a write in flight) stay.
func TestVacuumRemovesAbandonedTemporaries(t *testing.T) {
	ctx := context.Background()
	tt, dir := localTestTable(t, nil)
	tt.write(t, []int{10}, 0, nil)
	st := tt.store.(*storage.Local)
	for _, p := range []string{"part-00001-x.parquet", "_delta_log/00000000000000000009.json", "a=1/part-2.parquet"} {
		w, err := st.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(make([]byte, 2<<20)); err != nil {
			t.Fatal(err)
		}
		// abandoned: no Commit, no Abort
	}
	temps, err := st.ListTemp(ctx, "")
	if err != nil || len(temps) != 3 {
		t.Fatalf("temporaries %v %v", temps, err)
	}
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{})
	if err != nil || len(res.Temporaries) != 0 {
		t.Fatalf("young temporaries must stay: %+v %v", res, err)
	}
	res, err = vacuum.Run(ctx, tt.lg, vacuum.Options{DryRun: true, Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }})
	if err != nil || len(res.Temporaries) != 3 {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	res, err = vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }})
	if err != nil || len(res.Temporaries) != 3 || res.TemporaryBytes < 3<<20 {
		t.Fatalf("old temporaries: %+v %v", res, err)
	}
	if left, _ := st.ListTemp(ctx, ""); len(left) != 0 {
		t.Fatalf("left: %v", left)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".skiplake-tmp") {
			t.Fatalf("temporary left in the log: %s", e.Name())
		}
	}
}
