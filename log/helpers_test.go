package log

import (
	"context"
	"encoding/json"
	"github.com/skiplake/skiplake/internal/goldentest"
	"testing"

	"github.com/skiplake/skiplake/storage"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t testing.TB) string { return goldentest.Dir(t) }

func localStore(t testing.TB, dir string) storage.Storage {
	t.Helper()
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func memStore() storage.Storage { return storage.NewMemory() }

func ptr[T any](v T) *T { return &v }

// testSchema is a small two-column schema used by unit tests.
const testSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"part","type":"string","nullable":true,"metadata":{}}]}`

func testMetadata() Metadata {
	return Metadata{ID: "11111111-2222-3333-4444-555555555555", SchemaString: testSchema,
		PartitionColumns: []string{}, Configuration: map[string]string{}, CreatedTime: ptr(int64(1))}
}

func statsJSON(n int) string {
	b, _ := json.Marshal(map[string]any{"numRecords": n})
	return string(b)
}

func newAdd(path string, rows int) *Add {
	return &Add{Path: path, PartitionValues: map[string]*string{}, Size: 100, ModificationTime: 1, DataChange: true, Stats: statsJSON(rows)}
}

// createTable creates a table with one file per name at version 0.
func createTable(t testing.TB, l *Log, cfg map[string]string, files ...string) {
	t.Helper()
	md := testMetadata()
	for k, v := range cfg {
		md.Configuration[k] = v
	}
	var adds []*Add
	for _, f := range files {
		adds = append(adds, newAdd(f, 10))
	}
	v, err := l.Create(context.Background(), md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, adds, CommitInfo{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if v != 0 {
		t.Fatalf("create committed version %d, want 0", v)
	}
}

// createdSnapshot creates the table md with adds in one commit to l (protocol 1/2) and
// returns l and the snapshot of that version.
func createdSnapshot(t *testing.T, l *Log, md Metadata, adds []*Add) (*Log, *Snapshot) {
	t.Helper()
	ctx := context.Background()
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, adds, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	return l, snap
}
