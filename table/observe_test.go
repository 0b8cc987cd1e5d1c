package table_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

// TestObserveFilters records the filters of scans and counts into a workload
// and checks that recording writes nothing to the table.
func TestObserveFilters(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	tbl, err := table.Create(ctx, store, schema, table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	if _, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	before, err := store.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rec1 := workload.NewRecorder(workload.RecorderOptions{})
	tbl.ObserveFilters(rec1.Observe)
	tbl.ObserveFilters(nil)
	snap, err := tbl.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id > 1", "id  >  1", "id = 3"} {
		if _, err := snap.Scan(ctx, table.WithFilter(f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := tbl.Count(ctx, table.WithFilter("id = 3")); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Scan(ctx); err != nil { // no filter: nothing recorded
		t.Fatal(err)
	}
	if _, err := tbl.Scan(ctx, table.WithFilter("nope = 1")); err == nil { // does not bind: not recorded
		t.Fatal("unknown column accepted")
	}
	var sb strings.Builder
	if err := rec1.Workload().Format(&sb); err != nil {
		t.Fatal(err)
	}
	if sb.String() != "2: id > 1\n2: id = 3\n" {
		t.Fatalf("recorded:\n%s", sb.String())
	}
	after, err := store.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("recording wrote files: %d before, %d after", len(before), len(after))
	}
}
