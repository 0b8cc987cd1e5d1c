package value_test

import (
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
	if _, err := value.FromArray(big, 0); err == nil {
		t.Fatal("uint64 above MaxInt64 accepted")
	}
	lst := build(arrow.ListOf(arrow.PrimitiveTypes.Int64), func(b array.Builder) { b.AppendNull(); b.(*array.ListBuilder).Append(true) })
	defer lst.Release()
	if _, err := value.FromArray(lst, 1); err == nil {
		t.Fatal("list accepted")
	}
}
