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

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/vacuum"
)

func TestVacuum(t *testing.T) {
	ctx := context.Background()
	// A table compacted once: the compacted inputs are tombstoned now.
	setup := func(t *testing.T) (*testTable, []string) {
		tt := smallTable(t, "p", ptr("a"), 4, 200)
		var inputs []string
		for _, a := range tt.snapshot(t).Files() {
			inputs = append(inputs, a.Path)
		}
		tt.optimize(t)
		// An orphan data file, a hidden file, a file in a hidden directory, an
		// unreferenced and a referenced-by-nobody index file.
		for _, p := range []string{"p=a/orphan.parquet", "p=a/_SUCCESS", "_tmp/x.parquet", ".hidden/y", "_delta_index/bloom/dead.bin"} {
			if err := tt.store.Put(ctx, p, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		return tt, inputs
	}
	t.Run("within retention nothing goes", func(t *testing.T) {
		tt, _ := setup(t)
		res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Files) != 0 {
			t.Fatalf("deleted %v inside the retention period", res.Files)
		}
	})
	t.Run("after retention tombstoned and orphan files go, hidden ones stay", func(t *testing.T) {
		tt, inputs := setup(t)
		live := tt.rows(t)
		res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: later(8 * 24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(inputs), "p=a/orphan.parquet", "_delta_index/bloom/dead.bin")
		slices.Sort(want)
		got := slices.Clone(res.Files)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("deleted %v, want %v", got, want)
		}
		left := tt.objects(t)
		for _, keep := range []string{"p=a/_SUCCESS", "_tmp/x.parquet", ".hidden/y"} {
			if !slices.Contains(left, keep) {
				t.Errorf("%s deleted", keep)
			}
		}
		if !slices.Equal(live, tt.rows(t)) {
			t.Fatal("vacuum changed live rows")
		}
	})
	t.Run("dry run lists without deleting", func(t *testing.T) {
		tt, _ := setup(t)
		n := len(tt.objects(t))
		res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{DryRun: true, Now: later(8 * 24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Files) == 0 || res.Bytes == 0 || !res.DryRun || len(tt.objects(t)) != n {
			t.Fatalf("dry run: %+v, objects %d → %d", res, n, len(tt.objects(t)))
		}
	})
	t.Run("short retention refused without force", func(t *testing.T) {
		tt, _ := setup(t)
		_, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Retention: time.Hour})
		if !errors.Is(err, vacuum.ErrRetentionTooShort) {
			t.Fatalf("got %v, want vacuum.ErrRetentionTooShort", err)
		}
		var rerr *vacuum.RetentionTooShortError
		if !errors.As(err, &rerr) || rerr.Retention != time.Hour || rerr.TableRetention != vacuum.DefaultRetention {
			t.Fatalf("got %#v, want a vacuum.RetentionTooShortError naming 1h and the table's 168h", err)
		}
		res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Retention: time.Hour, Force: true, Now: later(2 * time.Hour)})
		if err != nil || len(res.Files) == 0 {
			t.Fatalf("forced: %v, %v", res, err)
		}
	})
	t.Run("zero retention only when set", func(t *testing.T) {
		tt, _ := setup(t)
		// A zero Retention without RetentionSet is the table's period: nothing that
		// was removed a minute ago goes.
		res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Force: true, DryRun: true, Now: later(time.Minute)})
		if err != nil || len(res.Files) != 0 || res.Retention != vacuum.DefaultRetention {
			t.Fatalf("default retention: %+v, %v", res, err)
		}
		_, err = vacuum.Run(ctx, tt.lg, vacuum.Options{RetentionSet: true, Now: later(time.Minute)})
		if !errors.Is(err, vacuum.ErrRetentionTooShort) {
			t.Fatalf("zero retention without Force: %v, want vacuum.ErrRetentionTooShort", err)
		}
		// V4: forced to zero, files younger than MinUnreferencedAge still stay (a
		// write may be committing them) and are counted; older ones go.
		res, err = vacuum.Run(ctx, tt.lg, vacuum.Options{RetentionSet: true, Force: true, DryRun: true, Now: later(time.Minute)})
		if err != nil || len(res.Files) != 0 || res.KeptRecent == 0 || res.Retention != 0 {
			t.Fatalf("zero retention a minute after: %+v, %v", res, err)
		}
		res, err = vacuum.Run(ctx, tt.lg, vacuum.Options{RetentionSet: true, Force: true, Now: later(vacuum.MinUnreferencedAge + time.Minute)})
		if err != nil || len(res.Files) == 0 || res.KeptRecent != 0 || res.Retention != 0 {
			t.Fatalf("zero retention past the minimum age: %+v, %v", res, err)
		}
	})
	t.Run("table retention below the safety floor refused without force", func(t *testing.T) {
		for _, ret := range []string{"interval 0 seconds", "interval 1 day"} {
			tt := newTestTable(t, "", map[string]string{log.PropDeletedFileRetentionDuration: ret})
			if err := tt.store.Put(ctx, "orphan.parquet", []byte("x")); err != nil {
				t.Fatal(err)
			}
			_, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: later(2 * 24 * time.Hour)})
			var rerr *vacuum.RetentionTooShortError
			if !errors.As(err, &rerr) || !rerr.BelowFloor || !strings.Contains(err.Error(), "safety floor") {
				t.Fatalf("%s: got %v, want a RetentionTooShortError below the floor", ret, err)
			}
			// Asking for the floor itself is fine; forcing the table's is too.
			if _, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Retention: vacuum.SafetyFloor, DryRun: true}); err != nil {
				t.Fatalf("%s: retention at the floor: %v", ret, err)
			}
			res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Force: true, Now: later(2 * 24 * time.Hour)})
			if err != nil || !slices.Equal(res.Files, []string{"orphan.parquet"}) {
				t.Fatalf("%s forced: %+v, %v", ret, res, err)
			}
		}
	})
	t.Run("table retention property applies", func(t *testing.T) {
		tt := newTestTable(t, "", map[string]string{log.PropDeletedFileRetentionDuration: "interval 30 days"})
		if err := tt.store.Put(ctx, "orphan.parquet", []byte("x")); err != nil {
			t.Fatal(err)
		}
		res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: later(8 * 24 * time.Hour)})
		if err != nil || len(res.Files) != 0 || res.Retention != 30*24*time.Hour {
			t.Fatalf("30-day table vacuumed after 8 days: %+v %v", res, err)
		}
	})
}

func TestVacuumKeepsReferencedIndexAndDVFiles(t *testing.T) {
	ctx := context.Background()
	tt := smallTable(t, "", nil, 1, 10)
	snap := tt.snapshot(t)
	a := *snap.Files()[0]
	// Reference an index file through the bloom tag.
	a.Tags = map[string]string{bloom.TagKey: `{"v":1,"path":"_delta_index/bloom/live.bin","cols":["id"]}`}
	txn := snap.NewTransaction(logTxn())
	txn.Add(&a)
	if _, err := txn.Commit(ctx, commitWrite()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"_delta_index/bloom/live.bin", "_delta_index/bloom/dead.bin"} {
		if err := tt.store.Put(ctx, p, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(30 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Files, []string{"_delta_index/bloom/dead.bin"}) {
		t.Fatalf("deleted %v, want only the unreferenced index file", res.Files)
	}
}

func TestVacuumNeverLeavesTheRoot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside.parquet")
	if err := os.WriteFile(outside, []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "table"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewLocal(filepath.Join(dir, "table"))
	if err != nil {
		t.Fatal(err)
	}
	tt := newTestTableOn(t, store, "", nil)
	tt.write(t, []int{10}, 0, nil)
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(365 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 0 {
		t.Fatalf("deleted %v from a table whose only file is live", res.Files)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("file next to the table root was touched: %v", err)
	}
}
