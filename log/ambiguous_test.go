package log

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/skiplake/skiplake/storage"
)

// flakyCommits wraps a store and makes commit-file writes fail in scripted ways: the
// behaviour of a local store whose directory fsync fails after the link, or of an
// object store whose conditional PUT is retried after the first attempt landed.
type flakyCommits struct {
	storage.Storage
	mu sync.Mutex
	// putThenFail: write the commit, then report this error (not ErrExist).
	putThenFail error
	// putThenExist: write the commit, then report ErrExist (a retried PUT).
	putThenExist bool
	// failNoPut: report this error without writing anything.
	failNoPut error
	// failGet: Get of commit files fails with this error.
	failGet error
	puts    int
}

func (f *flakyCommits) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasSuffix(p, ".json") || !strings.HasPrefix(p, "_delta_log/") {
		return f.Storage.PutIfAbsent(ctx, p, data)
	}
	f.puts++
	switch {
	case f.failNoPut != nil:
		return f.failNoPut
	case f.putThenFail != nil:
		if err := f.Storage.PutIfAbsent(ctx, p, data); err != nil {
			return err
		}
		return f.putThenFail
	case f.putThenExist:
		if err := f.Storage.PutIfAbsent(ctx, p, data); err != nil {
			return err
		}
		return fmt.Errorf("flaky: retried put of %q: %w", p, storage.ErrExist)
	}
	return f.Storage.PutIfAbsent(ctx, p, data)
}

func (f *flakyCommits) Get(ctx context.Context, p string) ([]byte, error) {
	f.mu.Lock()
	failGet := f.failGet
	f.mu.Unlock()
	if failGet != nil && strings.HasPrefix(p, "_delta_log/") {
		return nil, failGet
	}
	return f.Storage.Get(ctx, p)
}

var errFsync = errors.New("flaky: sync directory: input/output error")

// appendOne commits one blind append of path on the latest snapshot of l.
func appendOne(t *testing.T, l *Log, path string) (int64, error) {
	t.Helper()
	snap, err := l.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	tx := snap.NewTransaction(TxnOptions{})
	tx.Add(newAdd(path, 1))
	return tx.Commit(context.Background(), CommitInfo{Operation: "WRITE"})
}

// countAdds counts the add actions for path across every commit of l.
func countAdds(t *testing.T, l *Log, path string) int {
	t.Helper()
	ctx := context.Background()
	latest, err := l.LatestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for v := int64(0); v <= latest; v++ {
		_, err := l.readCommit(ctx, CommitPath(v), func(a *Action) error {
			if a.Add != nil && a.Add.Path == path {
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// Item 8 of issue #10: a commit whose link succeeded but whose directory fsync failed
// is visible; Commit must report it as committed (so callers keep its files), not as
// a failure.
func TestCommitLandedDespiteErrorIsSuccess(t *testing.T) {
	st := &flakyCommits{Storage: memStore()}
	l := New(st)
	createTable(t, l, nil, "a.parquet")
	st.putThenFail = errFsync
	v, err := appendOne(t, l, "b.parquet")
	if err != nil || v != 1 {
		t.Fatalf("commit that landed: version %d, err %v; want 1, nil", v, err)
	}
	if n := countAdds(t, l, "b.parquet"); n != 1 {
		t.Fatalf("b.parquet added %d times", n)
	}
}

// A write that failed and left nothing is an ordinary error (files may be deleted).
func TestCommitNotLandedIsPlainError(t *testing.T) {
	st := &flakyCommits{Storage: memStore()}
	l := New(st)
	createTable(t, l, nil, "a.parquet")
	st.failNoPut = errFsync
	_, err := appendOne(t, l, "b.parquet")
	if err == nil || !errors.Is(err, errFsync) || errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("got %v; want the write error, not ErrCommitUnknown", err)
	}
	if latest, _ := l.LatestVersion(context.Background()); latest != 0 {
		t.Fatalf("latest version %d", latest)
	}
}

// When the version cannot be read back either, the outcome is unknown and says so.
func TestCommitOutcomeUnknown(t *testing.T) {
	st := &flakyCommits{Storage: memStore()}
	l := New(st)
	createTable(t, l, nil, "a.parquet")
	snap, err := l.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	st.putThenFail = errFsync
	st.failGet = errors.New("flaky: connection reset")
	tx := snap.NewTransaction(TxnOptions{})
	tx.Add(newAdd("b.parquet", 1))
	_, err = tx.Commit(context.Background(), CommitInfo{})
	if !errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("got %v; want ErrCommitUnknown", err)
	}
}

// The sibling in checkWinner: a retried conditional PUT that finds its own first
// attempt reports "exists". That is this commit, not a lost race: no second commit of
// the same data at the next version.
func TestCommitRetriedPutFindsItsOwnCommit(t *testing.T) {
	st := &flakyCommits{Storage: memStore()}
	l := New(st)
	createTable(t, l, nil, "a.parquet")
	st.putThenExist = true
	v, err := appendOne(t, l, "b.parquet")
	if err != nil || v != 1 {
		t.Fatalf("version %d, err %v; want 1, nil", v, err)
	}
	if latest, _ := l.LatestVersion(context.Background()); latest != 1 {
		t.Fatalf("latest version %d: the data was committed again", latest)
	}
	if n := countAdds(t, l, "b.parquet"); n != 1 {
		t.Fatalf("b.parquet added %d times", n)
	}
	// A genuinely lost race is still checked and retried: another writer's commit at
	// version 2 is not mistaken for ours.
	st.putThenExist = false
	other := &flakyCommits{Storage: st.Storage}
	if _, err := appendOne(t, New(other), "c.parquet"); err != nil {
		t.Fatal(err)
	}
	snap, _ := l.Snapshot(context.Background(), 1)
	tx := snap.NewTransaction(TxnOptions{})
	tx.Add(newAdd("d.parquet", 1))
	v, err = tx.Commit(context.Background(), CommitInfo{})
	if err != nil || v != 3 {
		t.Fatalf("retry after a real winner: version %d, err %v; want 3", v, err)
	}
}

// Every commit carries its own txnId, including the create and retried commits.
func TestEveryCommitHasUniqueTxnID(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil, "a.parquet")
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap, err := l.Snapshot(ctx, 0)
			if err != nil {
				t.Error(err)
				return
			}
			tx := snap.NewTransaction(TxnOptions{IsolationLevel: WriteSerializable})
			tx.Add(newAdd(fmt.Sprintf("f%d.parquet", i), 1))
			if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	h, err := l.History(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, c := range h {
		id := c.CommitInfo.TxnID
		if id == "" {
			t.Errorf("version %d has no txnId", c.Version)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("versions %d and %d share txnId %s", prev, c.Version, id)
		}
		seen[id] = c.Version
	}
	if len(h) != 7 {
		t.Fatalf("%d commits, want 7", len(h))
	}
}

// Item 13: a 0-byte (or blank) commit file is a corrupt log naming the version, never
// an empty version.
func TestEmptyCommitFileIsCorrupt(t *testing.T) {
	ctx := context.Background()
	for _, content := range []string{"", "\n", "  \n\n"} {
		st := memStore()
		l := New(st)
		createTable(t, l, nil, "a.parquet")
		if err := st.PutIfAbsent(ctx, CommitPath(1), []byte(content)); err != nil {
			t.Fatal(err)
		}
		_, err := l.Snapshot(ctx, -1)
		if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "version 1") {
			t.Errorf("content %q: snapshot error %v; want ErrCorruptLog naming version 1", content, err)
		}
		if _, err := l.History(ctx, 0); !errors.Is(err, ErrCorruptLog) {
			t.Errorf("content %q: history error %v", content, err)
		}
		if snap, err := l.Snapshot(ctx, 0); err != nil || snap.NumFiles() != 1 {
			t.Errorf("content %q: version 0 must stay readable: %v", content, err)
		}
	}
}

// NewTableSnapshot: the first data and the table's creation are one commit; a second
// creator loses with a conflict at version 0 and commits nothing.
func TestNewTableSnapshotCreatesWithData(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	proto := Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	snap := l.NewTableSnapshot(testMetadata(), proto)
	if snap.Version() != -1 || snap.NumFiles() != 0 || snap.Metadata().SchemaString != testSchema {
		t.Fatalf("pending snapshot: version %d files %d", snap.Version(), snap.NumFiles())
	}
	tx := snap.NewTransaction(TxnOptions{})
	tx.Add(newAdd("a.parquet", 3))
	tx.SetTxn("job", 7)
	v, err := tx.Commit(ctx, CommitInfo{Operation: "WRITE"})
	if err != nil || v != 0 {
		t.Fatalf("create with data: %d %v", v, err)
	}
	got, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumFiles() != 1 || got.Metadata().ID != testMetadata().ID {
		t.Fatalf("version 0: %d files, metadata %+v", got.NumFiles(), got.Metadata())
	}
	if tv, ok := got.TxnVersion("job"); !ok || tv != 7 {
		t.Fatalf("txn version %d %v", tv, ok)
	}
	loser := l.NewTableSnapshot(testMetadata(), proto).NewTransaction(TxnOptions{})
	loser.Add(newAdd("b.parquet", 3))
	_, err = loser.Commit(ctx, CommitInfo{})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Version != 0 {
		t.Fatalf("second creator: %v; want a conflict at version 0", err)
	}
	if latest, _ := l.LatestVersion(ctx); latest != 0 {
		t.Fatalf("latest %d", latest)
	}
}

func TestCreationReportsVersionZero(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil, "a.parquet", "b.parquet")
	if _, err := appendOne(t, l, "c.parquet"); err != nil {
		t.Fatal(err)
	}
	c, err := l.Creation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := l.History(ctx, 0)
	if c.Version != 0 || !c.Time.Equal(h[len(h)-1].Timestamp) || len(c.Adds) != 2 {
		t.Fatalf("creation %+v, history of version 0 %+v", c, h[len(h)-1])
	}
	if _, err := New(memStore()).Creation(ctx); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("empty log: %v", err)
	}
}

// Item 7: VACUUM's protocol check refuses unknown writer features and those whose
// files it does not understand, with or without vacuumProtocolCheck.
func TestCheckVacuumable(t *testing.T) {
	cases := []struct {
		name string
		p    Protocol
		bad  string
	}{
		{"legacy writer 2", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, ""},
		{"legacy writer 6 (column mapping, identity)", Protocol{MinReaderVersion: 2, MinWriterVersion: 6}, ""},
		{"deletion vectors", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}, ""},
		{"unknown writer feature", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "futureThing"}}, "futureThing"},
		{"unknown writer feature with vacuumProtocolCheck", Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"vacuumProtocolCheck"}, WriterFeatures: []string{"vacuumProtocolCheck", "futureThing"}}, "futureThing"},
		{"unknown reader feature", Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"vacuumProtocolCheck", "futureRead"}, WriterFeatures: []string{"vacuumProtocolCheck", "futureRead"}}, "futureRead"},
		{"iceberg metadata beside the data", Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"icebergCompatV2"}}, "icebergCompatV2"},
		{"writer version 8", Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, "minWriterVersion=8"},
	}
	for _, c := range cases {
		err := CheckVacuumable(c.p)
		if c.bad == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ue *UnsupportedFeatureError
		if !errors.As(err, &ue) || !contains(ue.Features, c.bad) || !errors.Is(err, ErrUnsupportedFeature) {
			t.Errorf("%s: got %v; want an UnsupportedFeatureError naming %s", c.name, err, c.bad)
		}
	}
}
