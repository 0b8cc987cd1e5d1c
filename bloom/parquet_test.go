package bloom

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/value"
)

const pqRows, pqRowGroup = 6000, 2000

// writeParquet writes a file with one column per supported physical/logical type
// and native Bloom filters from ParquetWriterOptions (NDV on all but "s", which is
// adaptive). Row i holds value i (or a function of it) in every column.
func writeParquet(t testing.TB) *file.Reader {
	t.Helper()
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	rb := array.NewRecordBuilder(mem, sc)
	defer rb.Release()
	for i := 0; i < pqRows; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i) * 1_000_003)
		rb.Field(1).(*array.Int32Builder).Append(int32(i) - 3000)
		rb.Field(2).(*array.Int8Builder).Append(int8(i % 100))
		f := float64(i) / 4
		if i == 0 {
			f = math.Copysign(0, -1) // stored as -0: a +0 literal must still be found
		}
		rb.Field(3).(*array.Float64Builder).Append(f)
		rb.Field(4).(*array.Float32Builder).Append(float32(f))
		rb.Field(5).(*array.StringBuilder).Append(pqString(i))
		rb.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)*100 + 5))
		rb.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_001))
		rb.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1000))
		rb.Field(9).(*array.Date32Builder).Append(arrow.Date32(i))
		rb.Field(10).(*array.BooleanBuilder).Append(i%2 == 0)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	cols := []string{"i64", "i32", "i8", "f64", "f32", "s", "d", "ts", "ts_ms", "day", "b"}
	ndv := map[string]int64{}
	for _, c := range cols {
		if c != "s" {
			ndv[c] = pqRowGroup
		}
	}
	opts := append(ParquetWriterOptions(cols, ndv, 0.01), parquet.WithMaxRowGroupLength(pqRowGroup))
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(opts...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithCoerceTimestamps(arrow.Microsecond)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

func pqString(i int) string { return "user-" + string(rune('a'+i%26)) + "-" + itoa(i) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// pqProbe returns the literal for row i of column c (as the skipping layer would
// produce after coercion), and the column's physical type.
func pqProbe(c string, i int) (value.Value, parquet.Type) {
	switch c {
	case "i64":
		return value.Int64(int64(i) * 1_000_003), parquet.Types.Int64
	case "i32":
		return value.Int64(int64(i) - 3000), parquet.Types.Int32
	case "i8":
		return value.Int64(int64(i % 100)), parquet.Types.Int32
	case "f64":
		return value.Float64(float64(i) / 4), parquet.Types.Double
	case "f32":
		return value.Float64(float64(float32(float64(i) / 4))), parquet.Types.Float
	case "s":
		return value.String(pqString(i)), parquet.Types.ByteArray
	case "d":
		return value.Decimal(decimal128.FromI64(int64(i)*100+5), 20, 2), parquet.Types.FixedLenByteArray
	case "ts":
		return value.Timestamp(int64(i) * 1_000_001), parquet.Types.Int64
	case "ts_ms":
		return value.TimestampNTZ(int64(i) * 1_000_000), parquet.Types.Int64
	case "day":
		return value.Date(int64(i)), parquet.Types.Int32
	case "b":
		return value.Bool(i%2 == 0), parquet.Types.Boolean
	}
	panic("unknown column " + c)
}

var pqCols = []string{"i64", "i32", "i8", "f64", "f32", "s", "d", "ts", "ts_ms", "day", "b"}

// TestRowGroupMightContain: no false negatives for any stored value of any type,
// agreement with arrow-go's own TypedBloomFilter, few false positives for values of
// other row groups, and exact answers for literals no column value can equal.
func TestRowGroupMightContain(t *testing.T) {
	rdr := writeParquet(t)
	md := rdr.MetaData()
	if md.NumRowGroups() != pqRows/pqRowGroup {
		t.Fatalf("%d row groups", md.NumRowGroups())
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	for ci, c := range pqCols {
		t.Run(c, func(t *testing.T) {
			fp, absentProbes := 0, 0
			for rg := 0; rg < md.NumRowGroups(); rg++ {
				cc, err := md.RowGroup(rg).ColumnChunk(ci)
				if err != nil {
					t.Fatal(err)
				}
				if cc.BloomFilterOffset() <= 0 {
					t.Fatalf("row group %d has no bloom filter for %s", rg, c)
				}
				for i := 0; i < pqRows; i += step {
					v, pt := pqProbe(c, i)
					got, err := RowGroupMightContain(rdr, rg, ci, v, pt)
					if err != nil {
						t.Fatalf("row %d: %v", i, err)
					}
					inGroup := i/pqRowGroup == rg
					if inGroup && !got {
						t.Fatalf("false negative: row group %d, row %d, %v", rg, i, v)
					}
					if !inGroup && c != "i8" && c != "b" {
						absentProbes++
						if got {
							fp++
						}
					}
				}
			}
			if absentProbes > 0 {
				rate := float64(fp) / float64(absentProbes)
				if rate > 0.03 {
					t.Fatalf("false-positive rate %.4f over %d probes", rate, absentProbes)
				}
			}
		})
	}
	t.Run("agrees with arrow-go TypedBloomFilter", func(t *testing.T) {
		rgr, err := rdr.GetBloomFilterReader().RowGroup(1)
		if err != nil {
			t.Fatal(err)
		}
		bf, err := rgr.GetColumnBloomFilter(0)
		if err != nil || bf == nil {
			t.Fatalf("filter: %v", err)
		}
		typed := metadata.TypedBloomFilter[int64]{BloomFilter: bf}
		for i := 0; i < pqRows; i += 13 {
			v, pt := pqProbe("i64", i)
			ours, err := RowGroupMightContain(rdr, 1, 0, v, pt)
			if err != nil {
				t.Fatal(err)
			}
			if theirs := typed.Check(v.AsInt64()); ours != theirs {
				t.Fatalf("row %d: ours %v, TypedBloomFilter %v", i, ours, theirs)
			}
		}
		f32 := metadata.TypedBloomFilter[float32]{}
		bf4, _ := rgr.GetColumnBloomFilter(4)
		f32.BloomFilter = bf4
		ours, _ := RowGroupMightContain(rdr, 1, 4, value.Float64(2500.25), parquet.Types.Float)
		if ours != f32.Check(2500.25) {
			t.Fatal("float32 encoding disagrees with TypedBloomFilter")
		}
	})
	exact := []struct {
		name string
		col  int
		v    value.Value
		pt   parquet.Type
		want bool
	}{
		{"+0 literal finds a stored -0 (double)", 3, value.Float64(0), parquet.Types.Double, true},
		{"+0 literal finds a stored -0 (float)", 4, value.Float64(0), parquet.Types.Float, true},
		{"NaN cannot be ruled out", 3, value.Float64(math.NaN()), parquet.Types.Double, true},
		{"double not representable as float32 is absent", 4, value.Float64(0.1), parquet.Types.Float, false},
		{"int beyond int32 is absent", 1, value.Int64(1 << 40), parquet.Types.Int32, false},
		{"int beyond int8 is absent", 2, value.Int64(300), parquet.Types.Int32, false},
		{"decimal 10.0500 at a finer scale finds stored 10.05", 6, value.Decimal(decimal128.FromI64(10_0500), 22, 4), parquet.Types.FixedLenByteArray, true},
		{"decimal with extra digits is absent", 6, value.Decimal(decimal128.FromI64(10_0501), 22, 4), parquet.Types.FixedLenByteArray, false},
		{"micros finer than a millis column are absent", 8, value.TimestampNTZ(1_000_500), parquet.Types.Int64, false},
		{"NULL literal is kept", 0, value.Null(), parquet.Types.Int64, true},
	}
	for _, tc := range exact {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RowGroupMightContain(rdr, 0, tc.col, tc.v, tc.pt)
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	bad := []struct {
		name     string
		rg, col  int
		v        value.Value
		pt       parquet.Type
		sentinel error
	}{
		{"row group out of range", 9, 0, value.Int64(1), parquet.Types.Int64, ErrInvalidArgument},
		{"column out of range", 0, 99, value.Int64(1), parquet.Types.Int64, ErrInvalidArgument},
		{"wrong physical type", 0, 0, value.Int64(1), parquet.Types.Int32, ErrKindMismatch},
		{"string literal for an int column", 0, 0, value.String("x"), parquet.Types.Int64, ErrKindMismatch},
		{"int literal for a date column", 0, 9, value.Int64(1), parquet.Types.Int32, ErrKindMismatch},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RowGroupMightContain(rdr, tc.rg, tc.col, tc.v, tc.pt)
			if !got || !errors.Is(err, tc.sentinel) {
				t.Fatalf("got %v, %v; want true with %v", got, err, tc.sentinel)
			}
		})
	}
}

func TestParquetWriterOptionsSizes(t *testing.T) {
	tests := []struct {
		name string
		ndv  int64
		max  int64
	}{
		{"small ndv gets a small filter", 1000, 2048},
		{"large ndv is capped", 1 << 30, ParquetMaxFilterBytes},
		{"tiny ndv gets the minimum", 1, 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parquetFilterBytes(tc.ndv, 0.01)
			if got > tc.max || got&(got-1) != 0 {
				t.Fatalf("parquetFilterBytes(%d) = %d, want a power of two ≤ %d", tc.ndv, got, tc.max)
			}
		})
	}
	t.Run("writer filters stay far below 1 MiB", func(t *testing.T) {
		rdr := writeParquet(t)
		for ci := range pqCols {
			cc, _ := rdr.MetaData().RowGroup(0).ColumnChunk(ci)
			if l := cc.BloomFilterLength(); l <= 0 || l > ParquetAdaptiveMaxBytes+1024 {
				t.Errorf("column %s: bloom filter %d bytes", pqCols[ci], l)
			}
		}
	})
	t.Run("invalid fpp falls back instead of panicking", func(t *testing.T) {
		for _, fpp := range []float64{-1, 0, 1, math.NaN()} {
			props := parquet.NewWriterProperties(ParquetWriterOptions([]string{"a"}, nil, fpp)...)
			if got := props.BloomFilterFPPFor("a"); got != DefaultFPP {
				t.Fatalf("fpp %v → %v", fpp, got)
			}
		}
	})
	t.Run("no columns means no options", func(t *testing.T) {
		if o := ParquetWriterOptions(nil, nil, 0.01); len(o) != 0 {
			t.Fatalf("%d options", len(o))
		}
	})
}
