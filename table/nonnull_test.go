package table_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// Writes refuse nulls wherever the Delta schema says a value cannot be null, nested
// fields, array elements and map values included, and accept Arrow input whose types
// spell the table's differently (nested nullability, UTC) instead of panicking.
func TestWriteRefusesNullsInNonNullableNestedFields(t *testing.T) {
	ctx := context.Background()
	const schema = `{"type":"struct","fields":[
		{"name":"id","type":"long","nullable":false,"metadata":{}},
		{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"l","type":{"type":"array","elementType":"long","containsNull":false},"nullable":true,"metadata":{}},
		{"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":false},"nullable":true,"metadata":{}},
		{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}`
	sch, err := table.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	// The input schema: every nested thing nullable, timestamps in "Z".
	in := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Nullable: true, Type: arrow.StructOf(arrow.Field{Name: "A", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
		{Name: "l", Nullable: true, Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "m", Nullable: true, Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
		{Name: "ts", Nullable: true, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Z"}},
	}, nil)
	type row struct {
		id    *int64
		s     string // "null", "a=null", "a=1"
		l     []any  // nil: NULL list; elements int64 or nil
		m     map[string]any
		mNull bool
		ts    *int64
	}
	build := func(rows []row) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, in)
		defer b.Release()
		for _, r := range rows {
			if r.id == nil {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(*r.id)
			}
			sb := b.Field(1).(*array.StructBuilder)
			switch r.s {
			case "null":
				sb.AppendNull()
			case "a=null":
				sb.Append(true)
				sb.FieldBuilder(0).AppendNull()
			default:
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int64Builder).Append(1)
			}
			lb := b.Field(2).(*array.ListBuilder)
			if r.l == nil {
				lb.AppendNull()
			} else {
				lb.Append(true)
				for _, e := range r.l {
					if e == nil {
						lb.ValueBuilder().AppendNull()
					} else {
						lb.ValueBuilder().(*array.Int64Builder).Append(e.(int64))
					}
				}
			}
			mb := b.Field(3).(*array.MapBuilder)
			if r.mNull {
				mb.AppendNull()
			} else {
				mb.Append(true)
				for k, v := range r.m {
					mb.KeyBuilder().(*array.StringBuilder).Append(k)
					if v == nil {
						mb.ItemBuilder().AppendNull()
					} else {
						mb.ItemBuilder().(*array.Int64Builder).Append(v.(int64))
					}
				}
			}
			if r.ts == nil {
				b.Field(4).AppendNull()
			} else {
				b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(*r.ts))
			}
		}
		return b.NewRecordBatch()
	}
	one, ts := int64(1), int64(1_700_000_000_000_000)
	ok := row{id: &one, s: "a=1", l: []any{int64(1)}, m: map[string]any{"k": int64(1)}, ts: &ts}
	cases := []struct {
		name    string
		rows    []row
		wantErr string // "" : the write succeeds
	}{
		{"types spelled differently, no nulls: written", []row{ok}, ""},
		{"null struct: its non-nullable field has no value", []row{ok, {id: &one, s: "null", l: nil, mNull: true}}, ""},
		{"null in a non-nullable top-level column", []row{ok, {s: "a=1", l: []any{}, m: map[string]any{}}}, `"id"`},
		{"null in a non-nullable struct field", []row{ok, {id: &one, s: "a=null", l: []any{}, m: map[string]any{}}}, "s.a"},
		{"null array element", []row{ok, {id: &one, s: "a=1", l: []any{int64(2), nil}, m: map[string]any{}}}, "l.element"},
		{"null map value", []row{ok, {id: &one, s: "a=1", l: []any{}, m: map[string]any{"k": nil}}}, "m.value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := storage.NewMemory()
			tb, err := table.Create(ctx, st, sch, table.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := build(tc.rows)
			defer rec.Release()
			_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				n, _, err := tb.Count(ctx)
				if err != nil || n != int64(len(tc.rows)) {
					t.Fatalf("count %d, %v; want %d", n, err, len(tc.rows))
				}
				return
			}
			if !errors.Is(err, table.ErrNullInNonNullable) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want ErrNullInNonNullable naming %s", err, tc.wantErr)
			}
			snap, err := tb.Snapshot(ctx, table.Latest())
			if err != nil || snap.Version() != 0 {
				t.Fatalf("a refused write committed: version %v, %v", snap, err)
			}
		})
	}
}
