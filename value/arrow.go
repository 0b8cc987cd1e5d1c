package value

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrUnsupportedArrowType is returned by FromArray for an Arrow type that has no
// Value representation (nested types, dictionaries, ...) and for an unsigned value
// above MaxInt64.
var ErrUnsupportedArrowType = errors.New("value: unsupported Arrow type")

// FromArray returns element i of a primitive Arrow array as a Value of the kind
// package expr binds literals of that column type to: integers (signed, and
// unsigned up to MaxInt64) as KindInt64, float32/64 as KindFloat64, decimal128
// with its precision and scale, utf8 and large_utf8 as KindString, binary and
// large_binary as KindBinary, boolean, date32 as KindDate, and timestamps in
// microseconds (other units converted, nanoseconds truncated) as KindTimestamp
// with a time zone and KindTimestampNTZ without. A null slot is Null(). Other
// types, and unsigned values above MaxInt64, are an error wrapping
// ErrUnsupportedArrowType.
//
// It is the one place that turns an Arrow cell into a typed scalar (partition
// routing in table, expr's row path, qdtree and advise); vectorised code paths
// (predicate evaluation, statistics, Bloom hashing, sort keys) work on whole value
// buffers instead and do not call it.
func FromArray(arr arrow.Array, i int) (Value, error) {
	if arr.IsNull(i) {
		return Null(), nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return Bool(a.Value(i)), nil
	case *array.Int8:
		return Int64(int64(a.Value(i))), nil
	case *array.Int16:
		return Int64(int64(a.Value(i))), nil
	case *array.Int32:
		return Int64(int64(a.Value(i))), nil
	case *array.Int64:
		return Int64(a.Value(i)), nil
	case *array.Uint8:
		return Int64(int64(a.Value(i))), nil
	case *array.Uint16:
		return Int64(int64(a.Value(i))), nil
	case *array.Uint32:
		return Int64(int64(a.Value(i))), nil
	case *array.Uint64:
		if v := a.Value(i); v <= math.MaxInt64 {
			return Int64(int64(v)), nil
		}
		return Null(), fmt.Errorf("%w: uint64 %d does not fit int64", ErrUnsupportedArrowType, a.Value(i))
	case *array.Float32:
		return Float64(float64(a.Value(i))), nil
	case *array.Float64:
		return Float64(a.Value(i)), nil
	case *array.Decimal128:
		t := a.DataType().(*arrow.Decimal128Type)
		return Decimal(a.Value(i), t.Precision, t.Scale), nil
	case *array.String:
		return String(a.Value(i)), nil
	case *array.LargeString:
		return String(a.Value(i)), nil
	case *array.Binary:
		return Binary(a.Value(i)), nil
	case *array.LargeBinary:
		return Binary(a.Value(i)), nil
	case *array.Date32:
		return Date(int64(a.Value(i))), nil
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		v := int64(a.Value(i))
		switch t.Unit {
		case arrow.Second:
			v *= 1_000_000
		case arrow.Millisecond:
			v *= 1000
		case arrow.Nanosecond:
			v /= 1000
		}
		if t.TimeZone == "" {
			return TimestampNTZ(v), nil
		}
		return Timestamp(v), nil
	}
	return Null(), fmt.Errorf("%w: %s has no Value kind", ErrUnsupportedArrowType, DisplayType(arr.DataType()))
}

// ErrDoesNotFit is returned by Append for a value of another kind than the builder's
// type holds, or one outside its range (an integer too wide, a decimal that needs more
// precision or scale, a timestamp the unit cannot hold).
var ErrDoesNotFit = errors.New("value: value does not fit the Arrow type")

// Append appends v to b, the inverse of FromArray for the types a Delta column maps to:
// boolean; int8/16/32/64 from KindInt64 (range-checked); float32/64 from KindFloat64;
// decimal128 from KindDecimal, rescaled exactly to the type's scale; utf8 and
// large_utf8 from KindString; binary from KindBinary (or KindString); date32 from
// KindDate; timestamps from KindTimestamp (with a zone) or KindTimestampNTZ (without),
// converted from microseconds to the type's unit. A NULL value appends a null. Any
// other pairing is an error wrapping ErrDoesNotFit (or ErrUnsupportedArrowType for a
// builder of another type), and nothing is appended.
func Append(b array.Builder, v Value) error {
	if v.IsNull() {
		b.AppendNull()
		return nil
	}
	bad := func() error {
		return fmt.Errorf("%w: %s %s as %s", ErrDoesNotFit, v.Kind(), v, DisplayType(b.Type()))
	}
	intIn := func(lo, hi int64) bool { return v.kind == KindInt64 && v.i >= lo && v.i <= hi }
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		if v.kind != KindBool {
			return bad()
		}
		bb.Append(v.AsBool())
	case *array.Int8Builder:
		if !intIn(math.MinInt8, math.MaxInt8) {
			return bad()
		}
		bb.Append(int8(v.i))
	case *array.Int16Builder:
		if !intIn(math.MinInt16, math.MaxInt16) {
			return bad()
		}
		bb.Append(int16(v.i))
	case *array.Int32Builder:
		if !intIn(math.MinInt32, math.MaxInt32) {
			return bad()
		}
		bb.Append(int32(v.i))
	case *array.Int64Builder:
		if v.kind != KindInt64 {
			return bad()
		}
		bb.Append(v.i)
	case *array.Float32Builder:
		if v.kind != KindFloat64 {
			return bad()
		}
		bb.Append(float32(v.f))
	case *array.Float64Builder:
		if v.kind != KindFloat64 {
			return bad()
		}
		bb.Append(v.f)
	case *array.Decimal128Builder:
		t := bb.Type().(*arrow.Decimal128Type)
		if v.kind != KindDecimal {
			return bad()
		}
		num, _, scale := v.AsDecimal()
		resc, err := num.Rescale(scale, t.Scale)
		if err != nil || !resc.FitsInPrecision(t.Precision) {
			return bad()
		}
		bb.Append(resc)
	case *array.StringBuilder:
		if v.kind != KindString {
			return bad()
		}
		bb.Append(v.s)
	case *array.LargeStringBuilder:
		if v.kind != KindString {
			return bad()
		}
		bb.Append(v.s)
	case *array.BinaryBuilder:
		if v.kind != KindBinary && v.kind != KindString {
			return bad()
		}
		bb.Append([]byte(v.s))
	case *array.Date32Builder:
		if v.kind != KindDate || v.i < math.MinInt32 || v.i > math.MaxInt32 {
			return bad()
		}
		bb.Append(arrow.Date32(v.i))
	case *array.TimestampBuilder:
		t := bb.Type().(*arrow.TimestampType)
		want := KindTimestamp
		if t.TimeZone == "" {
			want = KindTimestampNTZ
		}
		if v.kind != want {
			return bad()
		}
		ts, ok := fromMicros(v.i, t.Unit)
		if !ok {
			return bad()
		}
		bb.Append(arrow.Timestamp(ts))
	default:
		return fmt.Errorf("%w: %s", ErrUnsupportedArrowType, DisplayType(b.Type()))
	}
	return nil
}

// fromMicros converts microseconds since the epoch to unit, exactly: false when the
// value overflows (nanoseconds) or is not a whole number of the coarser unit.
func fromMicros(us int64, unit arrow.TimeUnit) (int64, bool) {
	switch unit {
	case arrow.Second:
		return us / 1_000_000, us%1_000_000 == 0
	case arrow.Millisecond:
		return us / 1000, us%1000 == 0
	case arrow.Nanosecond:
		if us > math.MaxInt64/1000 || us < math.MinInt64/1000 {
			return 0, false
		}
		return us * 1000, true
	}
	return us, true
}

// IntBits is the width in bits of an Arrow signed integer type (8, 16, 32 or 64),
// and 0 for any other type.
func IntBits(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8:
		return 8
	case arrow.INT16:
		return 16
	case arrow.INT32:
		return 32
	case arrow.INT64:
		return 64
	}
	return 0
}

// AppendInt64 appends v to a signed integer builder (int8 to int64), narrowed to
// the builder's width: the caller has already checked that v fits (IntBits gives
// the width). It reports false, appending nothing, for a builder of another type.
func AppendInt64(b array.Builder, v int64) bool {
	switch bb := b.(type) {
	case *array.Int8Builder:
		bb.Append(int8(v))
	case *array.Int16Builder:
		bb.Append(int16(v))
	case *array.Int32Builder:
		bb.Append(int32(v))
	case *array.Int64Builder:
		bb.Append(v)
	default:
		return false
	}
	return true
}

// MatchField is the index of the field named name, matched as a table write
// matches a source column to a table column: the exact name first, else the first
// field whose name is equal ignoring case; -1 when none is.
func MatchField(fields []arrow.Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
