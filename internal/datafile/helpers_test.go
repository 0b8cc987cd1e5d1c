package datafile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/goldentest"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t testing.TB) string { return goldentest.Dir(t) }

// readAll reads the whole file at path with want and returns stringified rows and the
// first-row positions of the batches.
func readFileRows(t testing.TB, path string, want *arrow.Schema) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readRows(t, data, want, nil)
}

func readRows(t testing.TB, data []byte, want *arrow.Schema, rowGroups []int) []string {
	t.Helper()
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []string
	err = r.Read(context.Background(), want, rowGroups, func(rec arrow.RecordBatch, firstRow int64) error {
		if !rec.Schema().Equal(want) {
			return fmt.Errorf("batch schema\n%s\nwant\n%s", rec.Schema(), want)
		}
		if !sameMetadata(rec.Schema(), want) {
			return fmt.Errorf("batch schema metadata differs")
		}
		rows = append(rows, rowStrings(rec)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func sameMetadata(a, b *arrow.Schema) bool {
	for i := range a.Fields() {
		if !a.Field(i).Metadata.Equal(b.Field(i).Metadata) {
			return false
		}
	}
	return true
}

func rowStrings(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		parts := make([]string, rec.NumCols())
		for c := range parts {
			parts[c] = rec.Column(c).ValueStr(i)
		}
		out[i] = strings.Join(parts, " | ")
	}
	return out
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// deltaSchemaToArrow converts a Delta schemaString to Arrow the way package log does
// (kept local so these tests do not depend on log): field metadata keeps the column
// mapping id and physical name.
func deltaSchemaToArrow(t testing.TB, schemaString string) *arrow.Schema {
	t.Helper()
	var st struct {
		Fields []json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal([]byte(schemaString), &st); err != nil {
		t.Fatal(err)
	}
	var fields []arrow.Field
	for _, f := range st.Fields {
		fields = append(fields, deltaField(t, f))
	}
	return arrow.NewSchema(fields, nil)
}

func deltaField(t testing.TB, raw json.RawMessage) arrow.Field {
	var f struct {
		Name     string          `json:"name"`
		Type     json.RawMessage `json:"type"`
		Nullable bool            `json:"nullable"`
		Metadata map[string]any  `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var keys, vals []string
	if v, ok := f.Metadata[ColumnMappingIDKey]; ok {
		keys, vals = append(keys, ColumnMappingIDKey), append(vals, fmt.Sprint(v))
	}
	if v, ok := f.Metadata[PhysicalNameKey]; ok {
		keys, vals = append(keys, PhysicalNameKey), append(vals, fmt.Sprint(v))
	}
	return arrow.Field{Name: f.Name, Type: deltaType(t, f.Type), Nullable: f.Nullable, Metadata: arrow.NewMetadata(keys, vals)}
}

func deltaType(t testing.TB, raw json.RawMessage) arrow.DataType {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "byte":
			return arrow.PrimitiveTypes.Int8
		case "short":
			return arrow.PrimitiveTypes.Int16
		case "integer":
			return arrow.PrimitiveTypes.Int32
		case "long":
			return arrow.PrimitiveTypes.Int64
		case "float":
			return arrow.PrimitiveTypes.Float32
		case "double":
			return arrow.PrimitiveTypes.Float64
		case "boolean":
			return arrow.FixedWidthTypes.Boolean
		case "string":
			return arrow.BinaryTypes.String
		case "binary":
			return arrow.BinaryTypes.Binary
		case "date":
			return arrow.FixedWidthTypes.Date32
		case "timestamp":
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		case "timestamp_ntz":
			return &arrow.TimestampType{Unit: arrow.Microsecond}
		}
		var p, sc int32
		if _, err := fmt.Sscanf(s, "decimal(%d,%d)", &p, &sc); err == nil {
			return &arrow.Decimal128Type{Precision: p, Scale: sc}
		}
		t.Fatalf("unknown delta type %q", s)
	}
	var c struct {
		Type              string            `json:"type"`
		Fields            []json.RawMessage `json:"fields"`
		ElementType       json.RawMessage   `json:"elementType"`
		ContainsNull      bool              `json:"containsNull"`
		KeyType           json.RawMessage   `json:"keyType"`
		ValueType         json.RawMessage   `json:"valueType"`
		ValueContainsNull bool              `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	switch c.Type {
	case "struct":
		var fs []arrow.Field
		for _, f := range c.Fields {
			fs = append(fs, deltaField(t, f))
		}
		return arrow.StructOf(fs...)
	case "array":
		return arrow.ListOfField(arrow.Field{Name: "element", Type: deltaType(t, c.ElementType), Nullable: c.ContainsNull})
	case "map":
		m := arrow.MapOf(deltaType(t, c.KeyType), deltaType(t, c.ValueType))
		m.SetItemNullable(c.ValueContainsNull)
		return m
	}
	t.Fatalf("unknown delta type %s", raw)
	return nil
}

// stripMetadata removes field metadata at the top level (to read files written with
// logical names, like the golden "expected" snapshots).
func stripMetadata(s *arrow.Schema) *arrow.Schema {
	fs := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		f.Metadata = arrow.Metadata{}
		f.Type = stripType(f.Type)
		fs[i] = f
	}
	return arrow.NewSchema(fs, nil)
}

func stripType(t arrow.DataType) arrow.DataType {
	switch tt := t.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, tt.NumFields())
		for i, f := range tt.Fields() {
			f.Metadata = arrow.Metadata{}
			f.Type = stripType(f.Type)
			fs[i] = f
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		m := arrow.MapOf(stripType(tt.KeyType()), stripType(tt.ItemType()))
		m.SetItemNullable(tt.ItemField().Nullable)
		return m
	case *arrow.ListType:
		f := tt.ElemField()
		return arrow.ListOfField(arrow.Field{Name: f.Name, Type: stripType(f.Type), Nullable: f.Nullable})
	}
	return t
}

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// parquetWriteFunc writes rec as one Parquet file and returns its bytes: the
// variants the flat and stream decoders are compared over.
type parquetWriteFunc func(t *testing.T, rec arrow.RecordBatch) []byte

// pqarrowWrite returns a parquetWriteFunc that writes with pqarrow: row groups of
// 3,000 rows, the Arrow schema stored, then opts.
func pqarrowWrite(opts ...parquet.WriterProperty) parquetWriteFunc {
	return func(t *testing.T, rec arrow.RecordBatch) []byte {
		var buf bytes.Buffer
		props := parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(3000)}, opts...)...)
		w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		require.NoError(t, err)
		require.NoError(t, w.Write(rec))
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
}

// skiplakeSmallPagesWrite writes with this package's Writer, in row groups of
// about 96 KiB and pages of 2 KiB, so that a small batch spans many of both.
func skiplakeSmallPagesWrite(t *testing.T, rec arrow.RecordBatch) []byte {
	data, _ := writeFile(t, WriterOptions{TargetRowGroupBytes: 96 << 10, DataPageBytes: 2 << 10}, rec)
	return data
}
