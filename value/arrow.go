package value

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// FromArray returns element i of a primitive Arrow array as a Value of the kind
// package expr binds literals of that column type to: integers (signed, and
// unsigned up to MaxInt64) as KindInt64, float32/64 as KindFloat64, decimal128
// with its precision and scale, utf8 and large_utf8 as KindString, binary and
// large_binary as KindBinary, boolean, date32 as KindDate, and timestamps in
// microseconds (other units converted, nanoseconds truncated) as KindTimestamp
// with a time zone and KindTimestampNTZ without. A null slot is Null(). Other
// types, and unsigned values above MaxInt64, are an error.
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
		return Null(), fmt.Errorf("value: uint64 %d does not fit int64", a.Value(i))
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
	return Null(), fmt.Errorf("value: arrow type %s has no Value kind", arr.DataType())
}
