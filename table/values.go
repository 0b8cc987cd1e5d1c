package table

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/value"
)

// valueAt returns row i of a primitive Arrow array as a typed value (NULL for nulls).
// Only the types that may be partition columns are supported.
func valueAt(arr arrow.Array, i int) (value.Value, error) {
	if arr.IsNull(i) {
		return value.Null(), nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return value.Bool(a.Value(i)), nil
	case *array.Int8:
		return value.Int64(int64(a.Value(i))), nil
	case *array.Int16:
		return value.Int64(int64(a.Value(i))), nil
	case *array.Int32:
		return value.Int64(int64(a.Value(i))), nil
	case *array.Int64:
		return value.Int64(a.Value(i)), nil
	case *array.Float32:
		return value.Float64(float64(a.Value(i))), nil
	case *array.Float64:
		return value.Float64(a.Value(i)), nil
	case *array.String:
		return value.String(a.Value(i)), nil
	case *array.LargeString:
		return value.String(a.Value(i)), nil
	case *array.Binary:
		return value.Binary(a.Value(i)), nil
	case *array.Date32:
		return value.Date(int64(a.Value(i))), nil
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return value.Decimal(a.Value(i), dt.Precision, dt.Scale), nil
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		us, err := toMicros(int64(a.Value(i)), dt.Unit)
		if err != nil {
			return value.Null(), err
		}
		if dt.TimeZone == "" {
			return value.TimestampNTZ(us), nil
		}
		return value.Timestamp(us), nil
	}
	return value.Null(), fmt.Errorf("%w: type %s is not supported here", ErrInvalidArgument, arr.DataType())
}

func toMicros(v int64, unit arrow.TimeUnit) (int64, error) {
	switch unit {
	case arrow.Second:
		return v * 1_000_000, nil
	case arrow.Millisecond:
		return v * 1000, nil
	case arrow.Microsecond:
		return v, nil
	}
	return v / 1000, nil // nanoseconds: truncated, as a cast to microseconds does
}
