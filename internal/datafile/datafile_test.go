package datafile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/skiplake/skiplake/value"
	"github.com/stretchr/testify/require"
)

var (
	tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

// allTypesSchema has every Delta type, nested ones included.
func allTypesSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "byte", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "short", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "int", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "long", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		{Name: "float", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "double", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "dec10", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "string", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "binary", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: tsUTC, Nullable: true},
		{Name: "ts_ntz", Type: tsNTZ, Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int32)), Nullable: true},
		{Name: "list_st", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.FixedWidthTypes.Date32, Nullable: true})), Nullable: true},
	}, nil)
}

// Extreme values: 0001-01-01 and 9999-12-31 as days and micros.
const (
	minDays   = -719162
	maxDays   = 2932896
	minMicros = int64(minDays) * 86400_000_000
	maxMicros = int64(maxDays)*86400_000_000 + 86399_999_999
)

// allTypesBatch builds n rows cycling through edge values, with nulls everywhere a column
// is nullable.
func allTypesBatch(t testing.TB, mem memory.Allocator, n int, seed int) arrow.RecordBatch {
	t.Helper()
	sc := allTypesSchema()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1.5, -2.25e300}
	big, _ := decimal128.FromString("-9999999999999999999999999999.9999999999", 38, 10)
	for i := range n {
		k := i + seed
		null := k%7 == 3
		app := func(fb array.Builder, f func()) {
			if null {
				fb.AppendNull()
				return
			}
			f()
		}
		app(b.Field(0), func() { b.Field(0).(*array.BooleanBuilder).Append(k%2 == 0) })
		app(b.Field(1), func() { b.Field(1).(*array.Int8Builder).Append(int8(k%256 - 128)) })
		app(b.Field(2), func() { b.Field(2).(*array.Int16Builder).Append(int16(-k * 7)) })
		app(b.Field(3), func() { b.Field(3).(*array.Int32Builder).Append(int32(k) * -1_000_003) })
		b.Field(4).(*array.Int64Builder).Append([]int64{math.MinInt64, math.MaxInt64, int64(k)}[k%3])
		app(b.Field(5), func() { b.Field(5).(*array.Float32Builder).Append(float32(floats[k%len(floats)])) })
		app(b.Field(6), func() { b.Field(6).(*array.Float64Builder).Append(floats[(k+1)%len(floats)]) })
		app(b.Field(7), func() {
			if k%2 == 0 {
				b.Field(7).(*array.Decimal128Builder).Append(big)
			} else {
				b.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(-k)))
			}
		})
		app(b.Field(8), func() { b.Field(8).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(k*101 - 5000))) })
		app(b.Field(9), func() {
			b.Field(9).(*array.StringBuilder).Append(fmt.Sprintf("s%d-é日本-%s", k, strings.Repeat("z", k%40)))
		})
		app(b.Field(10), func() { b.Field(10).(*array.BinaryBuilder).Append([]byte{0, byte(k), 0xff}) })
		app(b.Field(11), func() {
			b.Field(11).(*array.Date32Builder).Append(arrow.Date32([]int32{minDays, maxDays, int32(k)}[k%3]))
		})
		app(b.Field(12), func() {
			b.Field(12).(*array.TimestampBuilder).Append(arrow.Timestamp([]int64{minMicros, maxMicros, int64(k) * 1_000_001}[k%3]))
		})
		app(b.Field(13), func() {
			b.Field(13).(*array.TimestampBuilder).Append(arrow.Timestamp([]int64{maxMicros, minMicros, -int64(k)}[k%3]))
		})
		sb := b.Field(14).(*array.StructBuilder)
		if k%5 == 1 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(k))
			if k%3 == 0 {
				sb.FieldBuilder(1).AppendNull()
			} else {
				sb.FieldBuilder(1).(*array.StringBuilder).Append("b")
			}
		}
		lb := b.Field(15).(*array.ListBuilder)
		if k%6 == 2 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for j := range k % 4 {
				lb.ValueBuilder().(*array.Int64Builder).Append(int64(j * k))
			}
		}
		mb := b.Field(16).(*array.MapBuilder)
		if k%4 == 3 {
			mb.AppendNull()
		} else {
			mb.Append(true)
			for j := range k % 3 {
				mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", j))
				vb := mb.ItemBuilder().(*array.ListBuilder)
				if j == 1 {
					vb.AppendNull()
					continue
				}
				vb.Append(true)
				vb.ValueBuilder().(*array.Int32Builder).Append(int32(j))
				vb.ValueBuilder().(*array.Int32Builder).AppendNull()
			}
		}
		ls := b.Field(17).(*array.ListBuilder)
		ls.Append(true)
		for j := range k % 3 {
			s := ls.ValueBuilder().(*array.StructBuilder)
			if j == 1 {
				s.AppendNull()
				continue
			}
			s.Append(true)
			s.FieldBuilder(0).(*array.Date32Builder).Append(arrow.Date32(j + k))
		}
	}
	return b.NewRecordBatch()
}

func writeFile(t testing.TB, opts WriterOptions, recs ...arrow.RecordBatch) ([]byte, *WriteResult) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, recs[0].Schema(), opts)
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Write(r))
	}
	res, err := w.Close()
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), res.Size)
	return buf.Bytes(), res
}

func readAll(t testing.TB, data []byte, want *arrow.Schema, rowGroups []int) (recs []arrow.RecordBatch, firsts []int64) {
	t.Helper()
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 700})
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Read(context.Background(), want, rowGroups, func(rec arrow.RecordBatch, first int64) error {
		rec.Retain()
		recs = append(recs, rec)
		firsts = append(firsts, first)
		return nil
	}))
	return recs, firsts
}

func concat(t testing.TB, sc *arrow.Schema, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	tbl := array.NewTableFromRecords(sc, recs)
	defer tbl.Release()
	cols := make([]arrow.Array, sc.NumFields())
	for i := range cols {
		c, err := array.Concatenate(tbl.Column(i).Data().Chunks(), memory.DefaultAllocator)
		require.NoError(t, err)
		cols[i] = c
		defer c.Release()
	}
	return array.NewRecordBatch(sc, cols, tbl.NumRows())
}

func TestRoundTripEveryDeltaTypeAcrossRowGroups(t *testing.T) {
	mem := checkedMem(t)
	rec := allTypesBatch(t, mem, 3000, 0)
	defer rec.Release()
	data, res := writeFile(t, WriterOptions{Allocator: mem, TargetRowGroupBytes: 16 << 10, DataPageBytes: 1 << 10}, rec)
	require.Equal(t, int64(3000), res.NumRows)
	require.Greater(t, res.RowGroups, 2, "small target must cut several row groups")

	recs, firsts := readAll(t, data, rec.Schema(), nil)
	got := concat(t, rec.Schema(), recs)
	defer got.Release()
	for _, r := range recs {
		r.Release()
	}
	require.True(t, array.RecordApproxEqual(rec, got, array.WithNaNsEqual(true)), "round trip differs")
	// Positions are contiguous and start at 0.
	var at int64
	for i, f := range firsts {
		require.Equal(t, at, f, "batch %d", i)
		at += recs[i].NumRows()
	}
}

func TestReadSelectedRowGroupsReportsFilePositions(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 4000, 0)
	defer rec.Release()
	data, res := writeFile(t, WriterOptions{TargetRowGroupBytes: 16 << 10}, rec)
	require.Greater(t, res.RowGroups, 3)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	want := arrow.NewSchema([]arrow.Field{rec.Schema().Field(4)}, nil) // "long"
	sel := []int{res.RowGroups - 1, 1}
	var seen []int64
	require.NoError(t, r.Read(t.Context(), want, sel, func(b arrow.RecordBatch, first int64) error {
		col := b.Column(0).(*array.Int64)
		orig := rec.Column(4).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			if col.Value(i) != orig.Value(int(first)+i) {
				return fmt.Errorf("row %d: got %d want %d", first+int64(i), col.Value(i), orig.Value(int(first)+i))
			}
		}
		seen = append(seen, first)
		return nil
	}))
	require.Equal(t, r.RowGroupFirstRow(res.RowGroups-1), seen[0])
	require.Contains(t, seen, r.RowGroupFirstRow(1))

	err = r.Read(t.Context(), want, []int{res.RowGroups}, func(arrow.RecordBatch, int64) error { return nil })
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestReadConformsToRequestedSchema(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 50, 1)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	md := arrow.NewMetadata([]string{"comment"}, []string{"kept"})
	cases := []struct {
		name  string
		want  *arrow.Schema
		check func(t *testing.T, got arrow.RecordBatch)
	}{
		{
			name: "projection in another order keeps the requested order and metadata",
			want: arrow.NewSchema([]arrow.Field{
				{Name: "string", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md},
				{Name: "int", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) {
				require.True(t, array.Equal(rec.Column(9), got.Column(0)))
				require.True(t, array.Equal(rec.Column(3), got.Column(1)))
			},
		},
		{
			name: "missing column reads as nulls (added by schema evolution)",
			want: arrow.NewSchema([]arrow.Field{
				{Name: "new_col", Type: arrow.StructOf(arrow.Field{Name: "q", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
			}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) { require.Equal(t, 50, got.Column(0).NullN()) },
		},
		{
			name: "case-insensitive name match",
			want: arrow.NewSchema([]arrow.Field{{Name: "LONG", Type: arrow.PrimitiveTypes.Int64}}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) {
				require.True(t, array.Equal(rec.Column(4), got.Column(0)))
			},
		},
		{
			name: "physical name metadata wins over the logical name",
			want: arrow.NewSchema([]arrow.Field{{Name: "renamed", Type: arrow.PrimitiveTypes.Int64,
				Metadata: arrow.NewMetadata([]string{PhysicalNameKey}, []string{"long"})}}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) {
				require.True(t, array.Equal(rec.Column(4), got.Column(0)))
			},
		},
		{
			name: "widening: int8 to int64, int32 to double, float to double, date to timestamp_ntz, decimal scale up",
			want: arrow.NewSchema([]arrow.Field{
				{Name: "byte", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "int", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "float", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "date", Type: tsNTZ, Nullable: true},
				{Name: "dec10", Type: &arrow.Decimal128Type{Precision: 20, Scale: 5}, Nullable: true},
				{Name: "short", Type: &arrow.Decimal128Type{Precision: 6, Scale: 1}, Nullable: true},
			}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) {
				for i := 0; i < 50; i++ {
					if rec.Column(1).IsNull(i) {
						require.True(t, got.Column(0).IsNull(i))
						continue
					}
					require.Equal(t, int64(rec.Column(1).(*array.Int8).Value(i)), got.Column(0).(*array.Int64).Value(i))
					require.Equal(t, float64(rec.Column(3).(*array.Int32).Value(i)), got.Column(1).(*array.Float64).Value(i))
					require.Equal(t, int64(rec.Column(11).(*array.Date32).Value(i))*86400_000_000, int64(got.Column(3).(*array.Timestamp).Value(i)))
					require.Equal(t, rec.Column(8).(*array.Decimal128).Value(i).IncreaseScaleBy(3), got.Column(4).(*array.Decimal128).Value(i))
					require.Equal(t, decimal128.FromI64(int64(rec.Column(2).(*array.Int16).Value(i))*10), got.Column(5).(*array.Decimal128).Value(i))
				}
			},
		},
		{
			name: "timestamp zone label follows the request",
			want: arrow.NewSchema([]arrow.Field{{Name: "ts", Type: tsNTZ, Nullable: true}}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) {
				require.Equal(t, rec.Column(12).(*array.Timestamp).Values(), got.Column(0).(*array.Timestamp).Values())
			},
		},
		{
			name: "nested struct fields renamed and reordered, missing child null",
			want: arrow.NewSchema([]arrow.Field{{Name: "st", Nullable: true, Type: arrow.StructOf(
				arrow.Field{Name: "B2", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{PhysicalNameKey}, []string{"b"})},
				arrow.Field{Name: "zz", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
				arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			)}}, nil),
			check: func(t *testing.T, got arrow.RecordBatch) {
				src, out := rec.Column(14).(*array.Struct), got.Column(0).(*array.Struct)
				require.Equal(t, src.NullN(), out.NullN())
				require.True(t, array.Equal(src.Field(1), out.Field(0)))
				require.Equal(t, 50, out.Field(1).NullN())
				for i := 0; i < 50; i++ {
					if src.IsValid(i) && src.Field(0).IsValid(i) {
						require.Equal(t, int64(src.Field(0).(*array.Int32).Value(i)), out.Field(2).(*array.Int64).Value(i))
					}
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, _ := readAll(t, data, tc.want, nil)
			got := concat(t, tc.want, recs)
			defer got.Release()
			for _, r := range recs {
				r.Release()
			}
			require.True(t, got.Schema().Equal(tc.want))
			require.True(t, sameMetadata(got.Schema(), tc.want))
			tc.check(t, got)
		})
	}
}

func TestReadRefusesLossyConversions(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 10, 0)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	cases := []struct {
		name string
		f    arrow.Field
	}{
		{"long to int narrows", arrow.Field{Name: "long", Type: arrow.PrimitiveTypes.Int32}},
		{"double to float narrows", arrow.Field{Name: "double", Type: arrow.PrimitiveTypes.Float32}},
		{"decimal scale down", arrow.Field{Name: "dec10", Type: &arrow.Decimal128Type{Precision: 10, Scale: 1}}},
		{"decimal integer digits shrink", arrow.Field{Name: "dec10", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}}},
		{"int to decimal without room", arrow.Field{Name: "int", Type: &arrow.Decimal128Type{Precision: 9, Scale: 0}}},
		{"string to int", arrow.Field{Name: "string", Type: arrow.PrimitiveTypes.Int64}},
		{"struct child long to int", arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int8})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
			require.NoError(t, err)
			defer r.Close()
			err = r.Read(t.Context(), arrow.NewSchema([]arrow.Field{tc.f}, nil), nil, func(arrow.RecordBatch, int64) error { return nil })
			require.ErrorIs(t, err, ErrSchemaMismatch)
			var ce *ColumnError
			require.True(t, errors.As(err, &ce))
			require.True(t, strings.HasPrefix(ce.Column, tc.f.Name), ce.Column)
		})
	}
}

func TestFieldIDMatchingIgnoresNames(t *testing.T) {
	withID := func(name string, id string, typ arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: typ, Nullable: true, Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{id})}
	}
	sc := arrow.NewSchema([]arrow.Field{withID("c1", "7", arrow.PrimitiveTypes.Int64), withID("c2", "9", arrow.BinaryTypes.String)}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)

	cmID := func(name, id string, typ arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: typ, Nullable: true, Metadata: arrow.NewMetadata([]string{ColumnMappingIDKey}, []string{id})}
	}
	want := arrow.NewSchema([]arrow.Field{
		cmID("c1", "9", arrow.BinaryTypes.String), // name says c1, id says c2
		cmID("other", "7", arrow.PrimitiveTypes.Int64),
		cmID("c2", "99", arrow.BinaryTypes.String), // id unknown: null even though the name exists
	}, nil)
	rows := readRows(t, data, want, nil)
	require.Equal(t, []string{"x | 1 | (null)", "y | 2 | (null)"}, rows)
}

func TestWriterCutsRowGroupsBySizeAndWritesPageIndex(t *testing.T) {
	n := 400_000
	if testing.Short() {
		n = 100_000
	}
	// Not a checked allocator: arrow-go frees the writer's Bloom filter buffers through GC
	// cleanups, which a CheckedAllocator reports as leaks.
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	state := uint64(42)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		// Incompressible-ish payload: ~48 bytes of pseudo-random hex per row.
		var sb strings.Builder
		for range 3 {
			state = state*6364136223846793005 + 1442695040888963407
			fmt.Fprintf(&sb, "%016x", state)
		}
		b.Field(1).(*array.StringBuilder).Append(sb.String())
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	target := int64(2 << 20)
	data, res := writeFile(t, WriterOptions{Allocator: mem, TargetRowGroupBytes: target, BloomColumns: map[string]int64{"id": 100_000}}, rec)
	t.Logf("%d rows, %d bytes, %d row groups", res.NumRows, res.Size, res.RowGroups)
	require.GreaterOrEqual(t, res.RowGroups, int(res.Size/target)-1)
	require.Greater(t, res.RowGroups, 1)
	for i := 0; i < res.RowGroups-1; i++ {
		rg := res.Metadata.RowGroup(i)
		require.Less(t, rg.TotalCompressedSize(), 2*target, "row group %d", i)
	}

	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	pi, err := r.ParquetReader().GetPageIndexReader().RowGroup(0)
	require.NoError(t, err)
	oi, err := pi.GetOffsetIndex(0)
	require.NoError(t, err)
	require.NotNil(t, oi)
	require.Greater(t, len(oi.GetPageLocations()), 1, "small pages: several per row group")
	ci, err := pi.GetColumnIndex(0)
	require.NoError(t, err)
	require.NotNil(t, ci)
	cc, err := r.Metadata().RowGroup(0).ColumnChunk(0)
	require.NoError(t, err)
	require.Equal(t, compress.Codecs.Zstd, cc.Compression())
	require.Greater(t, cc.BloomFilterOffset(), int64(0), "bloom filter on id")
	cc1, err := r.Metadata().RowGroup(0).ColumnChunk(1)
	require.NoError(t, err)
	require.Zero(t, cc1.BloomFilterOffset(), "no bloom filter on payload")
}

func TestWriterTimestampsStoredAsMicrosAndFieldIDs(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true,
			Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{"5"})},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.TimestampBuilder).Append(1_234_567_891)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	data, res := writeFile(t, WriterOptions{}, rec)
	col := res.Metadata.Schema.Column(0)
	require.Equal(t, parquet.Types.Int64, col.PhysicalType())
	require.Contains(t, col.LogicalType().String(), "timeUnit=microseconds")
	require.Equal(t, int32(5), col.SchemaNode().FieldID())
	rows := readRows(t, data, arrow.NewSchema([]arrow.Field{{Name: "x", Type: tsUTC, Nullable: true,
		Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{"5"})}}, nil), nil)
	require.Equal(t, []string{"1970-01-01T00:00:01.234567Z"}, rows)
}

func TestWriterDoesNotCloseSinkAndRejectsBadUse(t *testing.T) {
	sink := &closeTracker{}
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	w, err := NewWriter(sink, sc, WriterOptions{})
	require.NoError(t, err)
	other := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	ob := array.NewRecordBuilder(memory.DefaultAllocator, other)
	orec := ob.NewRecordBatch()
	ob.Release()
	defer orec.Release()
	require.ErrorIs(t, w.Write(orec), ErrInvalidArgument)
	_, err = w.Close()
	require.NoError(t, err)
	require.False(t, sink.closed)
	_, err = w.Close()
	require.ErrorIs(t, err, ErrClosed)

	_, err = NewWriter(sink, sc, WriterOptions{BloomFPP: 2, TargetRowGroupBytes: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "BloomFPP")
	require.Contains(t, err.Error(), "TargetRowGroupBytes")
}

type closeTracker struct {
	bytes.Buffer
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestOpenRejectsGarbage(t *testing.T) {
	_, err := Open(bytes.NewReader([]byte("not a parquet file at all")), 25, ReadOptions{})
	require.ErrorIs(t, err, ErrCorruptData)
}

func TestConstantColumn(t *testing.T) {
	dn, _ := decimal128.FromString("-2342342.23423", 12, 5)
	d := value.Decimal(dn, 12, 5)
	cases := []struct {
		name string
		v    value.Value
		t    arrow.DataType
		want string // ValueStr of each element
		err  bool
	}{
		{"null of any type", value.Null(), arrow.PrimitiveTypes.Int32, "(null)", false},
		{"int fits byte", value.Int64(-128), arrow.PrimitiveTypes.Int8, "-128", false},
		{"int overflows byte", value.Int64(128), arrow.PrimitiveTypes.Int8, "", true},
		{"int to int", value.Int64(70000), arrow.PrimitiveTypes.Int32, "70000", false},
		{"double", value.Float64(math.Inf(-1)), arrow.PrimitiveTypes.Float64, "-Inf", false},
		{"decimal rescaled up", d, &arrow.Decimal128Type{Precision: 14, Scale: 7}, "-2342342.2342300", false},
		{"decimal would lose digits", d, &arrow.Decimal128Type{Precision: 12, Scale: 2}, "", true},
		{"date", value.Date(18878), arrow.FixedWidthTypes.Date32, "2021-09-08", false},
		{"timestamp", value.Timestamp(1631099471000000), tsUTC, "2021-09-08T11:11:11Z", false},
		{"timestamp kind mismatch", value.TimestampNTZ(0), tsUTC, "", true},
		{"string", value.String("a/b"), arrow.BinaryTypes.String, "a/b", false},
		{"bool", value.Bool(true), arrow.FixedWidthTypes.Boolean, "true", false},
		{"kind mismatch", value.String("1"), arrow.PrimitiveTypes.Int64, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			a, err := ConstantColumn(tc.v, tc.t, 3, mem)
			if tc.err {
				require.ErrorIs(t, err, ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			defer a.Release()
			require.Equal(t, 3, a.Len())
			require.True(t, arrow.TypeEqual(tc.t, a.DataType()))
			for i := range 3 {
				if tc.want == "-2342342.2342300" {
					require.Equal(t, tc.want, a.(*array.Decimal128).Value(i).ToString(7))
					continue
				}
				require.Equal(t, tc.want, a.ValueStr(i))
			}
		})
	}
}

func TestApplyDeletionVector(t *testing.T) {
	mem := checkedMem(t)
	rec := allTypesBatch(t, mem, 20, 0)
	defer rec.Release()
	cases := []struct {
		name    string
		first   int64
		deleted map[uint64]bool
		keep    []int // indices into rec
	}{
		{"nothing deleted returns the batch", 100, map[uint64]bool{5: true}, seq(0, 20)},
		{"positions are offset by firstRow", 100, map[uint64]bool{100: true, 119: true}, seq(1, 19)},
		{"several runs are concatenated", 0, map[uint64]bool{3: true, 4: true, 10: true}, append(append(seq(0, 3), seq(5, 10)...), seq(11, 20)...)},
		{"everything deleted", 0, allOf(20), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyDeletionVector(rec, tc.first, func(r uint64) bool { return tc.deleted[r] }, mem)
			require.NoError(t, err)
			defer got.Release()
			require.Equal(t, int64(len(tc.keep)), got.NumRows())
			want := rowStrings(rec)
			gotRows := rowStrings(got)
			for i, k := range tc.keep {
				require.Equal(t, want[k], gotRows[i])
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func allOf(n int) map[uint64]bool {
	m := map[uint64]bool{}
	for i := range n {
		m[uint64(i)] = true
	}
	return m
}

func TestReadWithoutFileColumnsStillCountsRows(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 2500, 0)
	defer rec.Release()
	data, res := writeFile(t, WriterOptions{TargetRowGroupBytes: 16 << 10}, rec)
	cases := []struct {
		name string
		want *arrow.Schema
	}{
		{"no columns at all (count only)", arrow.NewSchema(nil, nil)},
		{"only columns the file lacks", arrow.NewSchema([]arrow.Field{{Name: "absent", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, firsts := readAll(t, data, tc.want, nil)
			var n int64
			for i, r := range recs {
				require.Equal(t, n, firsts[i])
				require.True(t, r.Schema().Equal(tc.want))
				n += r.NumRows()
				r.Release()
			}
			require.Equal(t, res.NumRows, n)
		})
	}
}

func TestNestedProjectionReadsOnlyRequestedLeaves(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 100, 0)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	want := arrow.NewSchema([]arrow.Field{{Name: "st", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})}}, nil)
	p := r.plan(want)
	require.Len(t, p.leaves, 1, "only st.b is decoded")
	require.Equal(t, "b", r.Metadata().Schema.Column(p.leaves[0]).Name())

	onlyMissing := arrow.NewSchema([]arrow.Field{{Name: "st", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "nope", Type: arrow.BinaryTypes.String, Nullable: true})}}, nil)
	require.Len(t, r.plan(onlyMissing).leaves, 1, "one leaf keeps the struct's validity")

	recs, _ := readAll(t, data, want, nil)
	got := concat(t, want, recs)
	defer got.Release()
	for _, x := range recs {
		x.Release()
	}
	src, out := rec.Column(14).(*array.Struct), got.Column(0).(*array.Struct)
	require.Equal(t, src.NullN(), out.NullN())
	for i := 0; i < src.Len(); i++ {
		require.Equal(t, src.IsNull(i), out.IsNull(i))
		if src.IsValid(i) {
			require.Equal(t, src.Field(1).ValueStr(i), out.Field(0).ValueStr(i))
		}
	}
}

func TestParseCodecNamesEveryPropertyValue(t *testing.T) {
	for name, want := range map[string]Codec{"": CodecDefault, "zstd": CodecZstd, "snappy": CodecSnappy, "gzip": CodecGzip,
		"lz4": CodecLZ4, "lz4_raw": CodecLZ4, "uncompressed": CodecUncompressed, "none": CodecUncompressed, "brotli": CodecBrotli} {
		got, err := ParseCodec(name)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	_, err := ParseCodec("lzo")
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// TestBatchesSplitRowGroupsEvenly: a row group larger than BatchSize is read in the
// fewest batches BatchSize allows, of (nearly) equal size, in order; a smaller one
// in one batch.
func TestBatchesSplitRowGroupsEvenly(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 10_000 {
		b.Append(int64(i))
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 10_000)
	col.Release()
	defer rec.Release()
	data, res := writeFile(t, WriterOptions{TargetRowGroupBytes: 64 << 20}, rec)
	require.Equal(t, 1, res.RowGroups)
	for _, tc := range []struct {
		batch int64
		want  []int64
	}{
		{4096, []int64{3334, 3334, 3332}},
		{5000, []int64{5000, 5000}},
		{9999, []int64{5000, 5000}},
		{10_000, []int64{10_000}},
		{65536, []int64{10_000}},
	} {
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: tc.batch})
		require.NoError(t, err)
		var sizes []int64
		next := int64(0)
		require.NoError(t, r.Read(context.Background(), sc, nil, func(rec arrow.RecordBatch, first int64) error {
			require.Equal(t, next, first)
			for i, v := range rec.Column(0).(*array.Int64).Int64Values() {
				require.Equal(t, first+int64(i), v)
			}
			next += rec.NumRows()
			sizes = append(sizes, rec.NumRows())
			return nil
		}))
		require.NoError(t, r.Close())
		require.Equal(t, tc.want, sizes, "BatchSize %d", tc.batch)
	}
}
