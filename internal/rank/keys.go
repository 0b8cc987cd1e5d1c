package rank

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

// Every orderable value is mapped to an order-preserving key, so the sampler
// and the search work on two representations only:
//
//	integers, dates, times, timestamps, durations, booleans -> uint64 (sign bit flipped)
//	unsigned integers                                        -> uint64 as is
//	floats (widened to float64)                              -> uint64, Spark order: -0 = 0, NaN greatest
//	strings and binary                                       -> string of the full bytes
//	decimal128                                               -> string of 16 big-endian bytes, sign flipped
//
// Unsigned comparison of the keys is the value order of the column.

// encoding names the key representation of a column.
type encoding uint8

const (
	encNone encoding = iota
	encInt
	encUint
	encFloat
	encBytes
	encDec128
)

var encNames = [...]string{"none", "signed integer", "unsigned integer", "floating point", "bytes", "decimal128"}

func (e encoding) String() string { return encNames[e] }

// wordKeys reports whether keys are uint64 (else strings).
func (e encoding) wordKeys() bool { return e == encInt || e == encUint || e == encFloat }

const signBit = uint64(1) << 63

func intKey(v int64) uint64 { return uint64(v) ^ signBit }

// floatKey maps a float to a key in Spark order: -0 equals 0 and every NaN
// sorts after +Inf.
func floatKey(f float64) uint64 {
	if f != f {
		return math.MaxUint64
	}
	if f == 0 {
		return signBit // +0 and -0
	}
	b := math.Float64bits(f)
	if b&signBit != 0 {
		return ^b
	}
	return b | signBit
}

// dec128Key writes the order-preserving 16-byte key of n into buf.
func dec128Key(n decimal128.Num, buf *[16]byte) {
	binary.BigEndian.PutUint64(buf[:8], uint64(n.HighBits())^signBit)
	binary.BigEndian.PutUint64(buf[8:], n.LowBits())
}

// unsafeString views b as a string without copying; the result must not be
// retained beyond b's lifetime.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// encodingOf returns the key encoding of an Arrow type and, for decimals, its scale.
func encodingOf(dt arrow.DataType) (encoding, int32, error) {
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Date32Type, *arrow.Date64Type, *arrow.Time32Type, *arrow.Time64Type,
		*arrow.TimestampType, *arrow.DurationType, *arrow.BooleanType:
		return encInt, 0, nil
	case *arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		return encUint, 0, nil
	case *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type:
		return encFloat, 0, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType,
		*arrow.StringViewType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return encBytes, 0, nil
	case *arrow.Decimal128Type:
		return encDec128, t.Scale, nil
	}
	return encNone, 0, fmt.Errorf("%w: %s", ErrUnsupportedType, dt)
}

func intKeys[T ~int8 | ~int16 | ~int32 | ~int64](vals []T, dst []uint64) {
	for i, v := range vals {
		dst[i] = uint64(int64(v)) ^ signBit
	}
}

func uintKeys[T ~uint8 | ~uint16 | ~uint32 | ~uint64](vals []T, dst []uint64) {
	for i, v := range vals {
		dst[i] = uint64(v)
	}
}

func floatKeys[T ~float32 | ~float64](vals []T, dst []uint64) {
	for i, v := range vals {
		dst[i] = floatKey(float64(v))
	}
}

// wordKeysOf writes the uint64 keys of arr[off:off+len(dst)] into dst. Null
// slots get an arbitrary key. arr must have a word encoding.
func wordKeysOf(arr arrow.Array, off int, dst []uint64) {
	end := off + len(dst)
	switch a := arr.(type) {
	case *array.Int8:
		intKeys(a.Values()[off:end], dst)
	case *array.Int16:
		intKeys(a.Values()[off:end], dst)
	case *array.Int32:
		intKeys(a.Values()[off:end], dst)
	case *array.Int64:
		intKeys(a.Values()[off:end], dst)
	case *array.Date32:
		intKeys(a.Values()[off:end], dst)
	case *array.Date64:
		intKeys(a.Values()[off:end], dst)
	case *array.Time32:
		intKeys(a.Values()[off:end], dst)
	case *array.Time64:
		intKeys(a.Values()[off:end], dst)
	case *array.Timestamp:
		intKeys(a.Values()[off:end], dst)
	case *array.Duration:
		intKeys(a.Values()[off:end], dst)
	case *array.Uint8:
		uintKeys(a.Values()[off:end], dst)
	case *array.Uint16:
		uintKeys(a.Values()[off:end], dst)
	case *array.Uint32:
		uintKeys(a.Values()[off:end], dst)
	case *array.Uint64:
		uintKeys(a.Values()[off:end], dst)
	case *array.Float32:
		floatKeys(a.Values()[off:end], dst)
	case *array.Float64:
		floatKeys(a.Values()[off:end], dst)
	case *array.Float16:
		for i := range dst {
			dst[i] = floatKey(float64(a.Value(off + i).Float32()))
		}
	case *array.Boolean:
		for i := range dst {
			if a.Value(off + i) {
				dst[i] = signBit | 1
			} else {
				dst[i] = signBit
			}
		}
	}
}

// bytesKeyer returns a function giving the string key of element i of arr,
// which must have a bytes or decimal encoding. The returned string may alias
// arr's buffers or a scratch buffer: copy it before retaining it.
func bytesKeyer(arr arrow.Array) func(i int) string {
	switch a := arr.(type) {
	case *array.String:
		return a.Value
	case *array.LargeString:
		return a.Value
	case *array.StringView:
		return a.Value
	case *array.Binary:
		return func(i int) string { return unsafeString(a.Value(i)) }
	case *array.LargeBinary:
		return func(i int) string { return unsafeString(a.Value(i)) }
	case *array.BinaryView:
		return func(i int) string { return unsafeString(a.Value(i)) }
	case *array.FixedSizeBinary:
		return func(i int) string { return unsafeString(a.Value(i)) }
	case *array.Decimal128:
		var buf [16]byte
		return func(i int) string {
			dec128Key(a.Value(i), &buf)
			return unsafeString(buf[:])
		}
	}
	return nil
}

// encodingOfValue returns the key encoding a value kind would use when a
// column is sampled from values alone.
func encodingOfValue(v value.Value) (encoding, error) {
	switch v.Kind() {
	case value.KindInt64, value.KindDate, value.KindTimestamp, value.KindTimestampNTZ, value.KindBool:
		return encInt, nil
	case value.KindFloat64:
		return encFloat, nil
	case value.KindString, value.KindBinary:
		return encBytes, nil
	case value.KindDecimal:
		return encDec128, nil
	}
	return encNone, fmt.Errorf("%w: value kind %s", ErrUnsupportedType, v.Kind())
}

// valueKey returns the key of a non-null value for a column of encoding enc
// (and decimal scale). Exactly one of word and str is meaningful.
func valueKey(v value.Value, enc encoding, scale int32) (word uint64, str string, err error) {
	mismatch := func() error {
		return fmt.Errorf("%w: %s value %s for a %s column", ErrTypeMismatch, v.Kind(), v, enc)
	}
	switch enc {
	case encInt:
		switch v.Kind() {
		case value.KindInt64, value.KindDate, value.KindTimestamp, value.KindTimestampNTZ, value.KindBool:
			return intKey(v.AsInt64()), "", nil
		}
	case encUint:
		if v.Kind() == value.KindInt64 {
			if v.AsInt64() < 0 {
				return 0, "", fmt.Errorf("%w: negative value %d for an unsigned column", ErrTypeMismatch, v.AsInt64())
			}
			return uint64(v.AsInt64()), "", nil
		}
	case encFloat:
		if v.Kind() == value.KindFloat64 {
			return floatKey(v.AsFloat64()), "", nil
		}
	case encBytes:
		if v.Kind() == value.KindString || v.Kind() == value.KindBinary {
			return 0, v.AsString(), nil
		}
	case encDec128:
		if v.Kind() == value.KindDecimal {
			n, _, s := v.AsDecimal()
			if s != scale {
				return 0, "", fmt.Errorf("%w: decimal value %s has scale %d, column has scale %d", ErrTypeMismatch, v, s, scale)
			}
			var buf [16]byte
			dec128Key(n, &buf)
			return 0, string(buf[:]), nil
		}
	}
	return 0, "", mismatch()
}
