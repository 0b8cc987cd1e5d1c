package value

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrUnsupportedArrowType is returned by FromArrow for an Arrow type that has no
// Value representation (unsigned integers, nested types, dictionaries, ...).
var ErrUnsupportedArrowType = errors.New("value: unsupported Arrow type")

// FromArrow returns cell i of a primitive Arrow array as a Value, following the
// representation of the package doc: NULL for a null cell; integers widened to
// KindInt64 and floats to KindFloat64; decimal128 with the type's precision and
// scale; string and large_string as KindString, binary and large_binary as
// KindBinary; date32 as KindDate; a timestamp of any unit as microseconds
// (seconds and milliseconds multiplied, nanoseconds truncated toward zero, as a
// cast does), KindTimestamp when the type has a time zone and KindTimestampNTZ
// when it has none. Any other type is refused with ErrUnsupportedArrowType.
//
// It is the one place that turns an Arrow cell into a typed scalar; vectorised
// code paths (predicate evaluation, statistics, Bloom hashing, sort keys) work on
// whole value buffers instead and do not call it.
func FromArrow(arr arrow.Array, i int) (Value, error) {
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
	case *array.Float32:
		return Float64(float64(a.Value(i))), nil
	case *array.Float64:
		return Float64(a.Value(i)), nil
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return Decimal(a.Value(i), dt.Precision, dt.Scale), nil
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
		dt := a.DataType().(*arrow.TimestampType)
		us := timestampMicros(int64(a.Value(i)), dt.Unit)
		if dt.TimeZone == "" {
			return TimestampNTZ(us), nil
		}
		return Timestamp(us), nil
	}
	return Null(), fmt.Errorf("%w: %s", ErrUnsupportedArrowType, arr.DataType())
}

// timestampMicros converts a timestamp in unit to microseconds.
func timestampMicros(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1_000_000
	case arrow.Millisecond:
		return v * 1000
	case arrow.Microsecond:
		return v
	}
	return v / 1000 // nanoseconds: truncated, as a cast to microseconds does
}
