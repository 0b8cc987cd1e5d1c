package log

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCreateAndAppend(t *testing.T) {
	ctx := context.Background()
	s := memStore()
	l := New(s)
	createTable(t, l, nil, "a.parquet")
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	tx := snap.NewTransaction(TxnOptions{})
	tx.Add(newAdd("b.parquet", 5))
	v, err := tx.Commit(ctx, CommitInfo{Operation: "WRITE", OperationParameters: map[string]string{"mode": `"Append"`}})
	if err != nil || v != 1 {
		t.Fatalf("commit %d %v", v, err)
	}
	if _, err := tx.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) {
		t.Errorf("second commit of a transaction: got %v", err)
	}
	raw, err := s.Get(ctx, CommitPath(1))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"commitInfo":`) || !strings.HasPrefix(lines[1], `{"add":`) {
		t.Fatalf("commit layout: %s", raw)
	}
	var ci struct {
		CommitInfo map[string]any `json:"commitInfo"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &ci); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"operation": "WRITE", "readVersion": 0.0, "isolationLevel": "Serializable",
		"isBlindAppend": true, "engineInfo": "skiplake/" + EngineVersion} {
		if ci.CommitInfo[k] != want {
			t.Errorf("commitInfo.%s = %v, want %v", k, ci.CommitInfo[k], want)
		}
	}
	if id, _ := ci.CommitInfo["txnId"].(string); len(id) != 36 {
		t.Errorf("txnId %q", id)
	}
	raw0, _ := s.Get(ctx, CommitPath(0))
	order := []string{`{"commitInfo"`, `{"protocol"`, `{"metaData"`, `{"add"`}
	for i, line := range strings.Split(strings.TrimSpace(string(raw0)), "\n") {
		if !strings.HasPrefix(line, order[i]) {
			t.Errorf("version 0 line %d = %s, want %s first", i, line, order[i])
		}
	}
	snap, _ = l.Snapshot(ctx, -1)
	if snap.NumFiles() != 2 {
		t.Fatalf("files %d", snap.NumFiles())
	}
	if err := s.PutIfAbsent(ctx, CommitPath(1), []byte("x")); err == nil {
		t.Fatal("commit files must never be overwritten")
	}
}

func TestCreateValidation(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	tx := l.NewCreateTransaction(TxnOptions{})
	tx.SetMetadata(testMetadata())
	if _, err := tx.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) {
		t.Errorf("create without protocol: %v", err)
	}
	md := testMetadata()
	md.PartitionColumns = []string{"nope"}
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) {
		t.Errorf("unknown partition column: %v", err)
	}
	createTable(t, l, nil)
	if _, err := l.Create(ctx, testMetadata(), Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, CommitInfo{}); !errors.Is(err, ErrMetadataChanged) && !errors.Is(err, ErrProtocolChanged) {
		t.Errorf("concurrent create must conflict, got %v", err)
	}
}

func TestAppendOnly(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, map[string]string{"delta.appendOnly": "true"}, "a")
	snap, _ := l.Snapshot(ctx, -1)
	tx := snap.NewTransaction(TxnOptions{})
	tx.Remove(&Remove{Path: "a", DataChange: true})
	if _, err := tx.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("got %v", err)
	}
	tx = snap.NewTransaction(TxnOptions{})
	tx.Remove(&Remove{Path: "a", DataChange: false})
	b := newAdd("b", 10)
	b.DataChange = false
	tx.Add(b)
	if _, err := tx.Commit(ctx, CommitInfo{Operation: "OPTIMIZE"}); err != nil {
		t.Fatalf("dataChange=false rewrite must be allowed: %v", err)
	}
}

// commitAt commits a transaction built by fn against snap.
func commitAt(t *testing.T, snap *Snapshot, fn func(*Transaction)) (int64, error) {
	t.Helper()
	tx := snap.NewTransaction(TxnOptions{DisableCheckpoint: true})
	fn(tx)
	return tx.Commit(context.Background(), CommitInfo{})
}

func TestConflicts(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		winner func(*Transaction)
		loser  func(*Transaction)
		want   error // nil: the loser commits at version 2
		files  string
	}{
		{"blind appends never conflict",
			func(tx *Transaction) { tx.Add(newAdd("w", 1)) },
			func(tx *Transaction) { tx.Add(newAdd("l", 1)) }, nil, ""},
		{"metadata change",
			func(tx *Transaction) { md := testMetadata(); md.Description = "new"; tx.SetMetadata(md) },
			func(tx *Transaction) { tx.Add(newAdd("l", 1)) }, ErrMetadataChanged, ""},
		{"protocol change",
			func(tx *Transaction) { tx.SetProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 3}) },
			func(tx *Transaction) { tx.Add(newAdd("l", 1)) }, ErrProtocolChanged, ""},
		{"delete of a file read",
			func(tx *Transaction) { tx.Remove(&Remove{Path: "a", DataChange: true}) },
			func(tx *Transaction) { tx.ReadFiles("a"); tx.Add(newAdd("l", 1)) }, ErrConcurrentDeleteRead, "a"},
		{"compaction removing a file read still conflicts",
			func(tx *Transaction) { tx.Remove(&Remove{Path: "a", DataChange: false}) },
			func(tx *Transaction) { tx.ReadWholeTable(); tx.Add(newAdd("l", 1)) }, ErrConcurrentDeleteRead, "a"},
		{"delete of a file deleted",
			func(tx *Transaction) { tx.Remove(&Remove{Path: "b", DataChange: true}) },
			func(tx *Transaction) { tx.Remove(&Remove{Path: "b", DataChange: true}) }, ErrConcurrentDeleteDelete, "b"},
		{"delete of another file is fine",
			func(tx *Transaction) { tx.Remove(&Remove{Path: "b", DataChange: true}) },
			func(tx *Transaction) { tx.Remove(&Remove{Path: "a", DataChange: true}) }, nil, ""},
		{"append conflicts with whole-table read",
			func(tx *Transaction) { tx.Add(newAdd("w", 1)) },
			func(tx *Transaction) { tx.ReadWholeTable(); tx.Remove(&Remove{Path: "a", DataChange: true}) }, ErrConcurrentAppend, "w"},
		{"append ignored by snapshot isolation (dataChange=false)",
			func(tx *Transaction) { tx.Add(newAdd("w", 1)) },
			func(tx *Transaction) {
				tx.ReadWholeTable()
				tx.Remove(&Remove{Path: "a", DataChange: false})
				c := newAdd("c", 10)
				c.DataChange = false
				tx.Add(c)
			}, nil, ""},
		{"same txn app id",
			func(tx *Transaction) { tx.SetTxn("app", 1); tx.Add(newAdd("w", 1)) },
			func(tx *Transaction) { tx.SetTxn("app", 1); tx.Add(newAdd("l", 1)) }, ErrConcurrentTransaction, "app"},
		{"different txn app ids",
			func(tx *Transaction) { tx.SetTxn("app1", 1) },
			func(tx *Transaction) { tx.SetTxn("app2", 1) }, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(memStore())
			createTable(t, l, nil, "a", "b")
			snap, err := l.Snapshot(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if v, err := commitAt(t, snap, c.winner); err != nil || v != 1 {
				t.Fatalf("winner: %d %v", v, err)
			}
			v, err := commitAt(t, snap, c.loser)
			if c.want == nil {
				if err != nil || v != 2 {
					t.Fatalf("loser: %d %v, want version 2", v, err)
				}
				return
			}
			var ce *ConflictError
			if !errors.Is(err, c.want) || !errors.As(err, &ce) {
				t.Fatalf("want %v as *ConflictError, got %v", c.want, err)
			}
			if ce.Version != 1 || strings.Join(ce.Files, ",") != c.files {
				t.Fatalf("conflict version %d files %v, want 1 %q", ce.Version, ce.Files, c.files)
			}
			if _, err := l.store.Stat(ctx, CommitPath(2)); err == nil {
				t.Fatal("a conflicting transaction must not commit")
			}
		})
	}
}

func TestWriteSerializableIgnoresBlindAppends(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil, "a")
	snap, _ := l.Snapshot(ctx, 0)
	if _, err := commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd("w", 1)) }); err != nil {
		t.Fatal(err)
	}
	tx := snap.NewTransaction(TxnOptions{IsolationLevel: WriteSerializable})
	tx.ReadWholeTable()
	tx.Remove(&Remove{Path: "a", DataChange: true})
	if v, err := tx.Commit(ctx, CommitInfo{Operation: "DELETE"}); err != nil || v != 2 {
		t.Fatalf("got %d %v", v, err)
	}
}

func TestMaxRetries(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil)
	snap, _ := l.Snapshot(ctx, 0)
	for i := 0; i < 3; i++ {
		if _, err := commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd(fmt.Sprint("w", i), 1)) }); err != nil {
			t.Fatal(err)
		}
	}
	tx := snap.NewTransaction(TxnOptions{MaxRetries: -1})
	tx.Add(newAdd("late", 1))
	if _, err := tx.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrTooManyRetries) {
		t.Fatalf("no retries allowed: got %v", err)
	}
	tx = snap.NewTransaction(TxnOptions{MaxRetries: 1})
	tx.Add(newAdd("late", 1))
	if v, err := tx.Commit(ctx, CommitInfo{}); err != nil || v != 4 {
		t.Fatalf("one retry skips all three winners: %d %v", v, err)
	}
}

func TestMonotonicTimestamps(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	fixed := time.UnixMilli(5000)
	l.now = func() time.Time { return fixed }
	createTable(t, l, nil)
	for i := 0; i < 3; i++ {
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd(fmt.Sprint("f", i), 1)) }); err != nil {
			t.Fatal(err)
		}
	}
	h, err := l.History(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range h {
		if want := int64(5003 - i); r.Timestamp.UnixMilli() != want {
			t.Errorf("version %d timestamp %d, want %d", r.Version, r.Timestamp.UnixMilli(), want)
		}
	}
}

func TestConcurrentBlindAppends(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil)
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			snap, err := l.Snapshot(ctx, -1)
			if err != nil {
				errs <- err
				return
			}
			tx := snap.NewTransaction(TxnOptions{MaxRetries: writers})
			tx.Add(newAdd(fmt.Sprintf("w%d", i), 1))
			if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != writers || snap.NumFiles() != writers {
		t.Fatalf("version %d files %d, want %d and %d (no lost adds)", snap.Version(), snap.NumFiles(), writers, writers)
	}
}

func TestConcurrentConflictingRemoves(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil, "shared")
	snap, _ := l.Snapshot(ctx, 0)
	const writers = 6
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tx := snap.NewTransaction(TxnOptions{DisableCheckpoint: true})
			tx.Remove(&Remove{Path: "shared", DataChange: true})
			tx.Add(newAdd(fmt.Sprintf("r%d", i), 1))
			_, err := tx.Commit(ctx, CommitInfo{Operation: "DELETE"})
			results <- err
		}(i)
	}
	wg.Wait()
	close(results)
	ok := 0
	for err := range results {
		var ce *ConflictError
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrConcurrentDeleteDelete) && errors.As(err, &ce) && ce.Files[0] == "shared":
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d transactions removed the same file, want exactly 1", ok)
	}
}

func TestAutomaticCheckpoint(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, map[string]string{"delta.checkpointInterval": "3"}, "a")
	for i := 1; i <= 3; i++ {
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		tx := snap.NewTransaction(TxnOptions{})
		tx.Add(newAdd(fmt.Sprint("f", i), 1))
		if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
			t.Fatal(err)
		}
		if err := tx.CheckpointErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.store.Stat(ctx, CheckpointPath(3)); err != nil {
		t.Fatalf("checkpoint at interval 3 missing: %v", err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil || snap.CheckpointVersion() != 3 || snap.NumFiles() != 4 {
		t.Fatalf("snapshot from checkpoint: %v", err)
	}
}
