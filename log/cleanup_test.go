package log

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// TestCleanupExpiredLog commits one version a day for 25 days (checkpoints at 10
// and 20), then cleans up on day 42 with the default 30-day retention: the cutoff
// is midnight of day 12, the newest commit before it is 12 and the checkpoint at or
// before that is 10, so the commits of versions 0-9 go and
// everything from checkpoint 10 on stays readable.
func TestCleanupExpiredLog(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemory()
	day0 := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
	now := day0
	mem.SetClock(func() time.Time { return now })
	l := New(mem).WithClock(func() time.Time { return now })
	createTable(t, l, nil, "f0")
	for v := 1; v <= 25; v++ {
		now = day0.Add(time.Duration(v) * 24 * time.Hour)
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		tx := snap.NewTransaction(TxnOptions{})
		tx.Add(newAdd(fmt.Sprintf("f%d", v), 1))
		if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
			t.Fatal(err)
		}
	}
	now = day0.Add(42 * 24 * time.Hour)
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := l.CleanupExpiredLog(ctx, snap, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.CheckpointVersion != 10 || len(dry.Files) != 10 || !dry.DryRun {
		t.Fatalf("dry run: checkpoint %d, files %v", dry.CheckpointVersion, dry.Files)
	}
	if _, err := mem.Stat(ctx, CommitPath(0)); err != nil {
		t.Fatal("a dry run deleted files")
	}
	res, err := l.CleanupExpiredLog(ctx, snap, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Files, ",") != strings.Join(dry.Files, ",") || res.Files[0] != CommitPath(0) || res.Files[9] != CommitPath(9) {
		t.Fatalf("deleted %v", res.Files)
	}
	for v := int64(10); v <= 25; v++ {
		if _, err := mem.Stat(ctx, CommitPath(v)); err != nil {
			t.Fatalf("commit %d was deleted", v)
		}
	}
	// Every version from the checkpoint on is still readable; older ones are gone.
	for v := int64(10); v <= 25; v++ {
		s, err := l.Snapshot(ctx, v)
		if err != nil || s.NumFiles() != int(v)+1 {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	if _, err := l.Snapshot(ctx, 5); err == nil {
		t.Fatal("version 5 should be gone")
	}
	// Idempotent: a second run finds nothing more.
	again, err := l.CleanupExpiredLog(ctx, snap, false)
	if err != nil || len(again.Files) != 0 {
		t.Fatalf("second run: %v %v", again.Files, err)
	}
	// Disabled by the table property.
	off := New(storage.NewMemory())
	createTable(t, off, map[string]string{PropEnableExpiredLogCleanup: "false"}, "a")
	offSnap, _ := off.Snapshot(ctx, -1)
	disabled, err := off.CleanupExpiredLog(ctx, offSnap, true)
	if err != nil || disabled.Enabled || len(disabled.Files) != 0 {
		t.Fatalf("disabled: %+v %v", disabled, err)
	}
}

// TestCleanupKeepsUncheckpointedCommits: without a checkpoint at or before the
// cutoff commit nothing is deleted, however old the commits are.
func TestCleanupKeepsUncheckpointedCommits(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemory()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	mem.SetClock(func() time.Time { return old })
	l := New(mem)
	createTable(t, l, nil, "a")
	snap, _ := l.Snapshot(ctx, -1)
	tx := snap.NewTransaction(TxnOptions{DisableCheckpoint: true})
	tx.Add(newAdd("b", 1))
	if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	res, err := l.CleanupExpiredLog(ctx, snap, false)
	if err != nil || res.CheckpointVersion != -1 || len(res.Files) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}
