package table_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// statHook is a store whose Stat of data files (paths ending in .parquet) calls
// hook with the call's number (from 1) instead of the store's.
type statHook struct {
	storage.Storage
	calls atomic.Int64
	hook  func(ctx context.Context, n int64) error
}

func (s *statHook) Stat(ctx context.Context, path string) (storage.ObjectInfo, error) {
	if !strings.HasSuffix(path, ".parquet") {
		return s.Storage.Stat(ctx, path)
	}
	if err := s.hook(ctx, s.calls.Add(1)); err != nil {
		return storage.ObjectInfo{}, err
	}
	return storage.ObjectInfo{Path: path, Size: 1}, nil
}

// restoreCheckTable returns a table (in memory, behind a statHook) whose version 1
// added 200 files and version 2 removed them, so that restoring version 1 checks
// 200 files. Only the log is written.
func restoreCheckTable(t *testing.T) (*table.Table, *statHook) {
	t.Helper()
	ctx := context.Background()
	mem := storage.NewMemory()
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := table.Create(ctx, mem, sch, table.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l := log.New(mem)
	var adds []*log.Add
	for i := range 200 {
		adds = append(adds, &log.Add{Path: fmt.Sprintf("part-%05d.parquet", i), Size: 1, ModificationTime: 1, DataChange: true})
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	tx := snap.NewTransaction(log.TxnOptions{})
	tx.Add(adds...)
	if _, err := tx.Commit(ctx, log.CommitInfo{Operation: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	if snap, err = l.Snapshot(ctx, -1); err != nil {
		t.Fatal(err)
	}
	tx = snap.NewTransaction(log.TxnOptions{})
	for _, a := range adds {
		tx.Remove(a.RemoveAction(2, true))
	}
	if _, err := tx.Commit(ctx, log.CommitInfo{Operation: "DELETE"}); err != nil {
		t.Fatal(err)
	}
	hooked := &statHook{Storage: mem}
	tb, err := table.Open(ctx, hooked)
	if err != nil {
		t.Fatal(err)
	}
	return tb, hooked
}

// blockUntilDone holds a Stat until its context ends (what a slow store does),
// returning the context's error; the fallback only keeps a broken pool from hanging
// the test.
func blockUntilDone(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return nil
	}
}

// Restore's file check stops at the first error that is not "missing": requests in
// flight are cancelled, no other starts, and the error is returned; nothing is
// committed.
func TestRestoreCheckStopsAtTheFirstError(t *testing.T) {
	tb, store := restoreCheckTable(t)
	boom := errors.New("store unavailable")
	store.hook = func(ctx context.Context, n int64) error {
		if n == 1 {
			return boom
		}
		return blockUntilDone(ctx)
	}
	_, err := tb.Restore(context.Background(), table.AtVersion(1), table.RestoreOptions{})
	if !errors.Is(err, boom) {
		t.Fatalf("Restore: %v, want the store's error", err)
	}
	if n := store.calls.Load(); n > 16 {
		t.Fatalf("%d files checked after the first failed: the check went on", n)
	}
	if snap, _ := tb.Snapshot(context.Background(), table.Latest()); snap.Version() != 2 {
		t.Fatalf("a failed restore committed version %d", snap.Version())
	}
}

// Restore's file check stops when its context ends: requests in flight see it, no
// other starts, and Restore returns the context's error; nothing is committed.
func TestRestoreCheckStopsWhenTheContextEnds(t *testing.T) {
	tb, store := restoreCheckTable(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store.hook = func(sctx context.Context, n int64) error {
		if n == 1 {
			cancel()
		}
		return blockUntilDone(sctx)
	}
	_, err := tb.Restore(ctx, table.AtVersion(1), table.RestoreOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Restore: %v, want context.Canceled", err)
	}
	if n := store.calls.Load(); n > 16 {
		t.Fatalf("%d files checked after the context ended", n)
	}
	if snap, _ := tb.Snapshot(context.Background(), table.Latest()); snap.Version() != 2 {
		t.Fatalf("a cancelled restore committed version %d", snap.Version())
	}
}
