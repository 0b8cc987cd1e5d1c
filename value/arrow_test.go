package value_test

import (
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

func TestFromArray(t *testing.T) {
	mem := memory.DefaultAllocator
	build := func(dt arrow.DataType, fill func(b array.Builder)) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		fill(b)
		return b.NewArray()
	}
	cases := []struct {
		name string
		arr  arrow.Array
		want []value.Value
	}{
		{"int32 with null", build(arrow.PrimitiveTypes.Int32, func(b array.Builder) {
			b.(*array.Int32Builder).Append(-3)
			b.AppendNull()
		}), []value.Value{value.Int64(-3), value.Null()}},
		{"date32", build(arrow.FixedWidthTypes.Date32, func(b array.Builder) { b.(*array.Date32Builder).Append(9000) }), []value.Value{value.Date(9000)}},
		{"timestamp ms utc", build(&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(1500)
		}), []value.Value{value.Timestamp(1_500_000)}},
		{"timestamp ns ntz", build(&arrow.TimestampType{Unit: arrow.Nanosecond}, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(2999)
		}), []value.Value{value.TimestampNTZ(2)}},
		{"decimal", build(&arrow.Decimal128Type{Precision: 9, Scale: 2}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(-1234))
		}), []value.Value{value.Decimal(decimal128.FromI64(-1234), 9, 2)}},
		{"strings and binary", build(arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).Append("x") }), []value.Value{value.String("x")}},
		{"binary", build(arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{0, 1}) }), []value.Value{value.Binary([]byte{0, 1})}},
		{"float32", build(arrow.PrimitiveTypes.Float32, func(b array.Builder) { b.(*array.Float32Builder).Append(0.5) }), []value.Value{value.Float64(0.5)}},
		{"bool", build(arrow.FixedWidthTypes.Boolean, func(b array.Builder) { b.(*array.BooleanBuilder).Append(true) }), []value.Value{value.Bool(true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer c.arr.Release()
			for i, w := range c.want {
				got, err := value.FromArray(c.arr, i)
				if err != nil || !value.Equal(got, w) || got.Kind() != w.Kind() {
					t.Fatalf("row %d: %v (%s) %v, want %v (%s)", i, got, got.Kind(), err, w, w.Kind())
				}
			}
		})
	}
	big := build(arrow.PrimitiveTypes.Uint64, func(b array.Builder) { b.(*array.Uint64Builder).Append(math.MaxUint64) })
	defer big.Release()
	if _, err := value.FromArray(big, 0); !errors.Is(err, value.ErrUnsupportedArrowType) {
		t.Fatalf("uint64 above MaxInt64: %v, want ErrUnsupportedArrowType", err)
	}
	lst := build(arrow.ListOf(arrow.PrimitiveTypes.Int64), func(b array.Builder) { b.AppendNull(); b.(*array.ListBuilder).Append(true) })
	defer lst.Release()
	if _, err := value.FromArray(lst, 1); !errors.Is(err, value.ErrUnsupportedArrowType) {
		t.Fatalf("list: %v, want ErrUnsupportedArrowType", err)
	}
}

// TestFromArrayEveryKind covers every type FromArray converts, each with a null row,
// on a checked allocator.
func TestFromArrayEveryKind(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	build := func(dt arrow.DataType, fill func(array.Builder)) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		fill(b)
		b.AppendNull()
		return b.NewArray()
	}
	tsType := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	dec := &arrow.Decimal128Type{Precision: 9, Scale: 2}
	cases := []struct {
		name string
		dt   arrow.DataType
		fill func(array.Builder)
		want value.Value
	}{
		{"bool", arrow.FixedWidthTypes.Boolean, func(b array.Builder) { b.(*array.BooleanBuilder).Append(true) }, value.Bool(true)},
		{"int8 widened", arrow.PrimitiveTypes.Int8, func(b array.Builder) { b.(*array.Int8Builder).Append(-7) }, value.Int64(-7)},
		{"int16 widened", arrow.PrimitiveTypes.Int16, func(b array.Builder) { b.(*array.Int16Builder).Append(300) }, value.Int64(300)},
		{"int32 widened", arrow.PrimitiveTypes.Int32, func(b array.Builder) { b.(*array.Int32Builder).Append(-70000) }, value.Int64(-70000)},
		{"int64", arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.(*array.Int64Builder).Append(1 << 40) }, value.Int64(1 << 40)},
		{"float32 widened", arrow.PrimitiveTypes.Float32, func(b array.Builder) { b.(*array.Float32Builder).Append(1.5) }, value.Float64(1.5)},
		{"float64", arrow.PrimitiveTypes.Float64, func(b array.Builder) { b.(*array.Float64Builder).Append(-2.25) }, value.Float64(-2.25)},
		{"decimal keeps precision and scale", dec, func(b array.Builder) { b.(*array.Decimal128Builder).Append(decimal128.FromI64(12345)) }, value.Decimal(decimal128.FromI64(12345), 9, 2)},
		{"string", arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).Append("héllo") }, value.String("héllo")},
		{"large string", arrow.BinaryTypes.LargeString, func(b array.Builder) { b.(*array.LargeStringBuilder).Append("x") }, value.String("x")},
		{"binary", arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{0, 1}) }, value.Binary([]byte{0, 1})},
		{"large binary", arrow.BinaryTypes.LargeBinary, func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{2}) }, value.Binary([]byte{2})},
		{"date", arrow.FixedWidthTypes.Date32, func(b array.Builder) { b.(*array.Date32Builder).Append(19000) }, value.Date(19000)},
		{"timestamp seconds with zone", tsType(arrow.Second, "UTC"), func(b array.Builder) { b.(*array.TimestampBuilder).Append(3) }, value.Timestamp(3_000_000)},
		{"timestamp millis with zone", tsType(arrow.Millisecond, "Europe/Paris"), func(b array.Builder) { b.(*array.TimestampBuilder).Append(5) }, value.Timestamp(5000)},
		{"timestamp micros without zone", tsType(arrow.Microsecond, ""), func(b array.Builder) { b.(*array.TimestampBuilder).Append(42) }, value.TimestampNTZ(42)},
		{"timestamp nanos truncated", tsType(arrow.Nanosecond, ""), func(b array.Builder) { b.(*array.TimestampBuilder).Append(-1999) }, value.TimestampNTZ(-1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			arr := build(c.dt, c.fill)
			defer arr.Release()
			got, err := value.FromArray(arr, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind() != c.want.Kind() || got.String() != c.want.String() {
				t.Fatalf("got %s %s, want %s %s", got.Kind(), got, c.want.Kind(), c.want)
			}
			if cmp, ok := value.Compare(got, c.want); !ok || cmp != 0 {
				t.Fatalf("got %s, not equal to %s", got, c.want)
			}
			null, err := value.FromArray(arr, 1)
			if err != nil || !null.IsNull() {
				t.Fatalf("null cell: got %s, %v", null, err)
			}
		})
	}
}

// Append is FromArray's inverse: a value appended to a builder of a Delta column's
// type reads back equal; values of another kind or outside the type's range are
// refused and append nothing.
func TestAppendRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := func(s string, p, sc int32) value.Value {
		n, err := decimal128.FromString(s, p, sc)
		if err != nil {
			t.Fatal(err)
		}
		return value.Decimal(n, p, sc)
	}
	ok := []struct {
		t    arrow.DataType
		v    value.Value
		back value.Value // zero: v itself
	}{
		{arrow.FixedWidthTypes.Boolean, value.Bool(true), value.Value{}},
		{arrow.PrimitiveTypes.Int8, value.Int64(-128), value.Value{}},
		{arrow.PrimitiveTypes.Int16, value.Int64(32767), value.Value{}},
		{arrow.PrimitiveTypes.Int32, value.Int64(math.MinInt32), value.Value{}},
		{arrow.PrimitiveTypes.Int64, value.Int64(math.MaxInt64), value.Value{}},
		{arrow.PrimitiveTypes.Float32, value.Float64(1.5), value.Value{}},
		{arrow.PrimitiveTypes.Float64, value.Float64(math.Inf(-1)), value.Value{}},
		{&arrow.Decimal128Type{Precision: 12, Scale: 5}, d("-2.5", 12, 1), d("-2.50000", 12, 5)},
		{arrow.BinaryTypes.String, value.String("é"), value.Value{}},
		{arrow.BinaryTypes.LargeString, value.String("x"), value.Value{}},
		{arrow.BinaryTypes.Binary, value.Binary([]byte{0, 1}), value.Value{}},
		{arrow.FixedWidthTypes.Date32, value.Date(-719162), value.Value{}},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, value.Timestamp(-1), value.Value{}},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, value.Timestamp(5000), value.Value{}},
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, value.TimestampNTZ(7), value.Value{}},
		{arrow.PrimitiveTypes.Int32, value.Null(), value.Value{}},
	}
	for _, c := range ok {
		b := array.NewBuilder(mem, c.t)
		if err := value.Append(b, c.v); err != nil {
			t.Fatalf("Append(%s, %s): %v", c.t, c.v, err)
		}
		arr := b.NewArray()
		got, err := value.FromArray(arr, 0)
		want := c.v
		if !c.back.IsNull() {
			want = c.back
		}
		if err != nil || !value.Equal(got, want) || got.IsNull() != want.IsNull() {
			t.Errorf("%s: appended %s, read %s (%v)", c.t, c.v, got, err)
		}
		arr.Release()
		b.Release()
	}
	bad := []struct {
		t arrow.DataType
		v value.Value
	}{
		{arrow.PrimitiveTypes.Int8, value.Int64(128)},
		{arrow.PrimitiveTypes.Int32, value.String("1")},
		{&arrow.Decimal128Type{Precision: 3, Scale: 0}, d("1000", 4, 0)},
		{&arrow.Decimal128Type{Precision: 5, Scale: 0}, d("1.5", 5, 1)},
		{arrow.FixedWidthTypes.Date32, value.Timestamp(0)},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, value.Timestamp(0)},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, value.Timestamp(1)},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, value.Timestamp(math.MaxInt64 / 10)},
	}
	for _, c := range bad {
		b := array.NewBuilder(mem, c.t)
		if err := value.Append(b, c.v); !errors.Is(err, value.ErrDoesNotFit) {
			t.Errorf("Append(%s, %s) = %v, want ErrDoesNotFit", c.t, c.v, err)
		}
		if b.Len() != 0 {
			t.Errorf("Append(%s, %s) appended on failure", c.t, c.v)
		}
		b.Release()
	}
	b := array.NewBuilder(mem, arrow.ListOf(arrow.PrimitiveTypes.Int32))
	if err := value.Append(b, value.Int64(1)); !errors.Is(err, value.ErrUnsupportedArrowType) {
		t.Errorf("list builder: %v", err)
	}
	b.Release()
}

func TestAppendInt64NarrowsToTheBuilder(t *testing.T) {
	mem := memory.NewGoAllocator()
	for _, c := range []struct {
		typ  arrow.DataType
		bits int
		v    int64
	}{
		{arrow.PrimitiveTypes.Int8, 8, -128},
		{arrow.PrimitiveTypes.Int16, 16, 32767},
		{arrow.PrimitiveTypes.Int32, 32, -2147483648},
		{arrow.PrimitiveTypes.Int64, 64, math.MaxInt64},
	} {
		if got := value.IntBits(c.typ); got != c.bits {
			t.Errorf("IntBits(%s) = %d, want %d", c.typ, got, c.bits)
		}
		b := array.NewBuilder(mem, c.typ)
		if !value.AppendInt64(b, c.v) {
			t.Fatalf("AppendInt64 refused a %s builder", c.typ)
		}
		arr := b.NewArray()
		got, err := value.FromArray(arr, 0)
		if err != nil || got.AsInt64() != c.v {
			t.Errorf("%s: appended %d, read back %v (%v)", c.typ, c.v, got, err)
		}
		arr.Release()
		b.Release()
	}
	if value.IntBits(arrow.BinaryTypes.String) != 0 || value.IntBits(arrow.PrimitiveTypes.Uint8) != 0 {
		t.Error("IntBits of a non-signed-integer type is not 0")
	}
	b := array.NewBuilder(mem, arrow.PrimitiveTypes.Float64)
	defer b.Release()
	if value.AppendInt64(b, 1) || b.Len() != 0 {
		t.Error("AppendInt64 appended to a float64 builder")
	}
}

func TestMatchFieldExactBeforeFolded(t *testing.T) {
	fields := []arrow.Field{{Name: "ID"}, {Name: "id"}, {Name: "Amount"}}
	for _, c := range []struct {
		name string
		want int
	}{{"id", 1}, {"ID", 0}, {"Id", 0}, {"amount", 2}, {"AMOUNT", 2}, {"missing", -1}, {"", -1}} {
		if got := value.MatchField(fields, c.name); got != c.want {
			t.Errorf("MatchField(%q) = %d, want %d", c.name, got, c.want)
		}
	}
}
