package vacuum_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// testTable is a table written through package table (this is an external test
// package, so the facade is available) whose storage and log the tests inspect and
// manipulate directly.
type testTable struct {
	store   storage.Storage
	tb      *table.Table
	lg      *log.Log
	partCol string // "" for an unpartitioned table
}

// testSchema returns the columns of test tables: an id, a value and a string, plus
// the string partition column partCol when it is not "".
func testSchema(partCol string) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if partCol != "" {
		fields = append(fields, arrow.Field{Name: partCol, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

func newTestTable(t testing.TB, partCol string, props map[string]string) *testTable {
	t.Helper()
	return newTestTableOn(t, storage.NewMemory(), partCol, props)
}

// newTestTableOn creates the table in store, which may already hold files (as a
// location in use does: CreateOptions.AllowNonEmpty).
func newTestTableOn(t testing.TB, store storage.Storage, partCol string, props map[string]string) *testTable {
	t.Helper()
	opts := table.CreateOptions{Properties: props, AllowNonEmpty: true}
	if partCol != "" {
		opts.PartitionColumns = []string{partCol}
	}
	tb, err := table.Create(context.Background(), store, testSchema(partCol), opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testTable{store: store, tb: tb, lg: tb.Log(), partCol: partCol}
}

// smallTable is a table with nFiles files of rowsPer rows each, one commit per file,
// all in partition part (of column partCol) when partCol is not "".
func smallTable(t testing.TB, partCol string, part *string, nFiles, rowsPer int) *testTable {
	t.Helper()
	tt := newTestTable(t, partCol, nil)
	for i := range nFiles {
		tt.write(t, []int{rowsPer}, int64(i*rowsPer), part)
	}
	if n := len(tt.snapshot(t).Files()); n != nFiles {
		t.Fatalf("%d files after %d single-batch writes", n, nFiles)
	}
	return tt
}

// write commits one write of a batch per entry of sizes (that many rows each, ids
// from start on), all in partition part when the table is partitioned.
func (tt *testTable) write(t testing.TB, sizes []int, start int64, part *string) {
	t.Helper()
	sch := testSchema(tt.partCol)
	var recs []arrow.RecordBatch
	for _, n := range sizes {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for i := range n {
			id := start + int64(i)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Int64Builder).Append(id * 7 % 1000)
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row-%06d", id))
			if tt.partCol != "" {
				if part == nil {
					b.Field(3).AppendNull()
				} else {
					b.Field(3).(*array.StringBuilder).Append(*part)
				}
			}
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
		start += int64(n)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if _, err := tt.tb.WriteBatches(context.Background(), recs, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// optimize compacts the table into as few files as OPTIMIZE makes (one per
// partition), tombstoning the files it read.
func (tt *testTable) optimize(t testing.TB) {
	t.Helper()
	if _, err := tt.tb.Optimize(context.Background(), table.OptimizeOptions{TargetFileSize: 1 << 30}); err != nil {
		t.Fatal(err)
	}
}

func (tt *testTable) snapshot(t testing.TB) *log.Snapshot {
	t.Helper()
	snap, err := tt.lg.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// rows returns every live row as a string, sorted: the multiset VACUUM must leave
// unchanged.
func (tt *testTable) rows(t testing.TB) []string {
	t.Helper()
	at, err := tt.tb.ReadAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var sb strings.Builder
			for c := range int(rec.NumCols()) {
				sb.WriteString(rec.Column(c).ValueStr(i))
				sb.WriteByte('|')
			}
			out = append(out, sb.String())
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// objects lists the table's files in storage (everything outside _delta_log).
func (tt *testTable) objects(t testing.TB) []string {
	t.Helper()
	objs, err := tt.store.List(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		if !strings.HasPrefix(o.Path, "_delta_log/") {
			out = append(out, o.Path)
		}
	}
	return out
}

// localTestTable creates a table in a fresh directory after placing files (with old
// modification times) there, as when a table is created in a directory in use.
func localTestTable(t *testing.T, before map[string]time.Duration) (*testTable, string) {
	t.Helper()
	dir := t.TempDir()
	for p, age := range before {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(full, old, old); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newTestTableOn(t, st, "", nil), dir
}

// later returns a clock d ahead of the wall clock.
func later(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

func ptr[T any](v T) *T { return &v }

func logTxn() log.TxnOptions { return log.TxnOptions{IsolationLevel: log.WriteSerializable} }

func commitWrite() log.CommitInfo { return log.CommitInfo{Operation: "WRITE"} }
