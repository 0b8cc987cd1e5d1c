package datafile

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// unsettled lists the Data nodes under arr (reached through its arrays and through
// Data children) whose null count is still unknown.
func unsettled(arr arrow.Array, path string) []string {
	var out []string
	var data func(d arrow.ArrayData, p string)
	data = func(d arrow.ArrayData, p string) {
		if dd, ok := d.(*array.Data); !ok || dd == nil {
			return
		}
		if d.NullN() < 0 {
			out = append(out, p)
		}
		for i, c := range d.Children() {
			data(c, fmt.Sprintf("%s.child%d", p, i))
		}
		data(d.Dictionary(), p+".dict")
	}
	data(arr.Data(), path)
	switch a := arr.(type) {
	case *array.Struct:
		for i := range a.NumField() {
			out = append(out, unsettled(a.Field(i), fmt.Sprintf("%s.field%d", path, i))...)
		}
	case array.ListLike:
		out = append(out, unsettled(a.ListValues(), path+".values")...)
	}
	return out
}

// sharedSchema has flat and nested nullable columns, so that a slice of a batch of it
// leaves null counts unknown at every level.
var sharedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

// sharedBatch builds n rows of sharedSchema with nulls at every level.
func sharedBatch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, sharedSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(i % 100))
		}
		if i%5 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%37))
		}
		sb := b.Field(3).(*array.StructBuilder)
		if i%7 == 0 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if i%2 == 0 {
				sb.FieldBuilder(0).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
			}
			if i%11 == 0 {
				sb.FieldBuilder(1).AppendNull()
			} else {
				sb.FieldBuilder(1).(*array.StringBuilder).Append("x")
			}
		}
		lb := b.Field(4).(*array.ListBuilder)
		if i%4 == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Int32Builder)
			vb.Append(int32(i))
			vb.AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// Settle leaves no null count unknown anywhere in a batch: not in a slice's columns,
// not in a sliced struct's field arrays or whole children, not in list values.
func TestSettleFillsEveryNullCount(t *testing.T) {
	mem := checkedMem(t)
	rec := sharedBatch(mem, 1000)
	defer rec.Release()
	sl := rec.NewSlice(101, 873)
	defer sl.Release()
	var before []string
	for i, c := range sl.Columns() {
		before = append(before, unsettled(c, sl.Schema().Field(i).Name)...)
	}
	require.NotEmpty(t, before, "a slice starts with unknown null counts (else this test checks nothing)")
	Settle(sl)
	for i, c := range sl.Columns() {
		require.Empty(t, unsettled(c, sl.Schema().Field(i).Name))
	}
	// The counts are the real ones.
	require.Equal(t, countNulls(sl.Column(1)), sl.Column(1).NullN())
	st := sl.Column(3).(*array.Struct)
	require.Equal(t, countNulls(st.Field(0)), st.Field(0).NullN())

	// A dictionary array's values array is made once, by Settle.
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String})
	defer db.Release()
	for i := range 20 {
		if i%6 == 0 {
			db.AppendNull()
		} else {
			require.NoError(t, db.(*array.BinaryDictionaryBuilder).AppendString(fmt.Sprint(i%4)))
		}
	}
	dict := db.NewArray()
	defer dict.Release()
	dsl := array.NewSlice(dict, 3, 17)
	defer dsl.Release()
	SettleArray(dsl)
	require.Empty(t, unsettled(dsl, "dict"))
	require.Same(t, dsl.(*array.Dictionary).Dictionary(), dsl.(*array.Dictionary).Dictionary())
}

func countNulls(a arrow.Array) int {
	n := 0
	for i := range a.Len() {
		if a.IsNull(i) {
			n++
		}
	}
	return n
}

// A File computes statistics on a goroutine of its own while its writer slices the
// same batches (the dictionary sample, row-group slices) and the caller goes on
// using them: every batch given to Write comes back with its null counts settled
// (R1), so that none of them writes to a shared array. Under -race this also
// catches the race itself (it did before File.Write settled its batches). The file's
// rows and null counts are those written.
func TestFileWriteSettlesTheBatchesItShares(t *testing.T) {
	mem := checkedMem(t)
	rec := sharedBatch(mem, 30_000)
	defer rec.Release()
	store := storage.NewMemory()
	// A flat schema takes the column-parallel encoder, a nested one pqarrow's.
	for _, schema := range []*arrow.Schema{arrow.NewSchema(sharedSchema.Fields()[:3], nil), sharedSchema} {
		flat := schema.NumFields() == 3
		out, err := NewOutput(store, Spec{Schema: schema, TargetFileSize: 64 << 20, RowGroupBytes: 64 << 10})
		require.NoError(t, err)
		f, err := out.Create(bg, FileOptions{})
		require.NoError(t, err)
		var written []arrow.RecordBatch
		wantNulls := 0
		// Uneven slices, several under the dictionary sample (8,192 rows) so that
		// the writer keeps and slices them after Write has returned.
		for off, step := int64(0), int64(997); off < rec.NumRows(); off, step = off+step, step*2 {
			end := min(rec.NumRows(), off+step)
			part := rec.NewSlice(off, end)
			cols := part.Columns()[:schema.NumFields()]
			sl := array.NewRecordBatch(schema, cols, part.NumRows())
			part.Release()
			require.NoError(t, f.Write(sl))
			for i, c := range sl.Columns() {
				require.Empty(t, unsettled(c, schema.Field(i).Name), "after Write, rows %d..%d", off, end)
			}
			wantNulls += countNulls(sl.Column(1))
			written = append(written, sl)
		}
		add, err := f.Close(bg)
		require.NoError(t, err)
		var st struct {
			NumRecords int64          `json:"numRecords"`
			NullCount  map[string]any `json:"nullCount"`
		}
		require.NoError(t, json.Unmarshal([]byte(add.Stats), &st))
		require.Equal(t, rec.NumRows(), st.NumRecords)
		require.Equal(t, float64(wantNulls), st.NullCount["n"])
		require.Equal(t, batchRows(written), storedRows(t, store, []*log.Add{add}, schema), "flat=%v", flat)
		releaseBatches(written)
	}
}
