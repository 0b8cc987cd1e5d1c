package table_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// dmlSchema is the schema of the DML tests: a key, a partition-able group, a number,
// a nullable string.
var dmlSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "grp", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// dmlRow is one row of dmlSchema; a nil pointer is NULL.
type dmlRow struct {
	id   int64
	grp  *string
	qty  *int64
	note *string
}

func sp(s string) *string { return &s }
func ip(n int64) *int64   { return &n }

func (r dmlRow) String() string {
	f := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return *p
	}
	q := "NULL"
	if r.qty != nil {
		q = fmt.Sprint(*r.qty)
	}
	return fmt.Sprintf("%d|%s|%s|%s", r.id, f(r.grp), q, f(r.note))
}

// dmlBatch builds a batch of dmlSchema.
func dmlBatch(rows []dmlRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, dmlSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.grp == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.grp)
		}
		if r.qty == nil {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(*r.qty)
		}
		if r.note == nil {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(*r.note)
		}
	}
	return b.NewRecordBatch()
}

// dmlTable creates a table of dmlSchema in a memory store with the given properties
// and partition columns, then appends each batch of rows as one commit.
func dmlTable(t testing.TB, props map[string]string, parts []string, commits ...[]dmlRow) (*table.Table, storage.Storage) {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, dmlSchema, table.CreateOptions{PartitionColumns: parts, Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range commits {
		rec := dmlBatch(rows)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return tb, st
}

// dmlRowsAt reads every row of version ref, sorted by their String form.
func dmlRowsAt(t testing.TB, tb *table.Table, ref table.Ref) []string {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := snap.Scan(ctx, table.WithColumns("id", "grp", "qty", "note"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := sc.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var out []string
	tr := array.NewTableReader(tbl, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, rowString(rec, i))
		}
	}
	sort.Strings(out)
	return out
}

func rowString(rec arrow.RecordBatch, i int) string {
	parts := make([]string, rec.NumCols())
	for c := range parts {
		col := rec.Column(c)
		if col.IsNull(i) {
			parts[c] = "NULL"
			continue
		}
		switch a := col.(type) {
		case *array.Int64:
			parts[c] = fmt.Sprint(a.Value(i))
		case *array.String:
			parts[c] = a.Value(i)
		default:
			parts[c] = col.ValueStr(i)
		}
	}
	return strings.Join(parts, "|")
}

func dmlRowStrings(rows []dmlRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	sort.Strings(out)
	return out
}

// dvProps enables deletion vectors.
var dvProps = map[string]string{log.PropEnableDeletionVectors: "true"}

// lastCommit returns the history entry of the latest version.
func lastCommit(t testing.TB, tb *table.Table) table.HistoryEntry {
	t.Helper()
	h, err := tb.History(context.Background(), 1)
	if err != nil || len(h) == 0 {
		t.Fatalf("history: %v", err)
	}
	return h[0]
}

func itoaTest(n int64) string { return fmt.Sprint(n) }
