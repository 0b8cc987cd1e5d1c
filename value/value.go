package value

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Kind is the representation class of a Value.
type Kind uint8

// The kinds. KindNull is the zero value: a SQL NULL (or "no value").
const (
	KindNull Kind = iota
	KindBool
	KindInt64
	KindFloat64
	KindDecimal
	KindString
	KindBinary
	KindDate
	KindTimestamp
	KindTimestampNTZ
)

var kindNames = [...]string{"null", "boolean", "int64", "float64", "decimal", "string", "binary", "date", "timestamp", "timestamp_ntz"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Value is one typed scalar. The zero Value is NULL.
type Value struct {
	kind  Kind
	i     int64 // bool (0/1), int64, date days, timestamp micros
	f     float64
	s     string // string, or binary bytes
	dec   decimal128.Num
	prec  int32
	scale int32
}

// Null returns the NULL value.
func Null() Value { return Value{} }

// Bool returns a boolean value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.i = 1
	}
	return v
}

// Int64 returns an integer value (any Delta integer type, widened).
func Int64(i int64) Value { return Value{kind: KindInt64, i: i} }

// Float64 returns a floating-point value (float or double, widened).
func Float64(f float64) Value { return Value{kind: KindFloat64, f: f} }

// Decimal returns a decimal value with the given unscaled integer, precision and scale.
func Decimal(unscaled decimal128.Num, precision, scale int32) Value {
	return Value{kind: KindDecimal, dec: unscaled, prec: precision, scale: scale}
}

// String returns a string value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Binary returns a binary value. The bytes are copied.
func Binary(b []byte) Value { return Value{kind: KindBinary, s: string(b)} }

// Date returns a date value given days since 1970-01-01.
func Date(days int64) Value { return Value{kind: KindDate, i: days} }

// Timestamp returns a UTC timestamp value given microseconds since the epoch.
func Timestamp(micros int64) Value { return Value{kind: KindTimestamp, i: micros} }

// TimestampNTZ returns a zone-less timestamp value given microseconds since the epoch.
func TimestampNTZ(micros int64) Value { return Value{kind: KindTimestampNTZ, i: micros} }

// Kind reports the value's kind.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.kind == KindNull }

// AsBool returns the boolean (false unless KindBool).
func (v Value) AsBool() bool { return v.kind == KindBool && v.i != 0 }

// AsInt64 returns the integer payload of KindInt64, KindDate (days), KindTimestamp and
// KindTimestampNTZ (micros), and KindBool (0/1); 0 otherwise.
func (v Value) AsInt64() int64 { return v.i }

// AsFloat64 returns the float payload of KindFloat64; 0 otherwise.
func (v Value) AsFloat64() float64 { return v.f }

// AsString returns the payload of KindString or KindBinary; "" otherwise.
func (v Value) AsString() string { return v.s }

// AsBytes returns a copy of the payload of KindString or KindBinary.
func (v Value) AsBytes() []byte { return []byte(v.s) }

// AsDecimal returns the unscaled integer, precision and scale of a KindDecimal.
func (v Value) AsDecimal() (unscaled decimal128.Num, precision, scale int32) {
	return v.dec, v.prec, v.scale
}

// Compare orders a and b. ok is false when the two cannot be ordered: either is NULL,
// or their kinds differ (callers coerce literals to the column type first). Decimals
// of different scales compare by numeric value. Floats follow Spark: NaN equals NaN
// and is greater than every other value; -0.0 equals 0.0. Strings and binary compare
// byte-wise (unsigned), which for UTF-8 is code-point order.
func Compare(a, b Value) (c int, ok bool) {
	if a.kind == KindNull || b.kind == KindNull || a.kind != b.kind {
		return 0, false
	}
	switch a.kind {
	case KindBool, KindInt64, KindDate, KindTimestamp, KindTimestampNTZ:
		return cmpInt(a.i, b.i), true
	case KindFloat64:
		return CompareFloat(a.f, b.f), true
	case KindString, KindBinary:
		return strings.Compare(a.s, b.s), true
	case KindDecimal:
		return compareDecimal(a.dec, a.scale, b.dec, b.scale), true
	}
	return 0, false
}

// CompareFloat orders two floats with Spark's total order: NaN == NaN, NaN greater than
// everything else (including +Inf), and -0.0 == 0.0.
func CompareFloat(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// compareDecimal compares two unscaled decimals at possibly different scales exactly.
func compareDecimal(a decimal128.Num, as int32, b decimal128.Num, bs int32) int {
	if as == bs {
		return a.Cmp(b)
	}
	ab, bb := a.BigInt(), b.BigInt()
	if as < bs {
		ab.Mul(ab, pow10(bs-as))
	} else {
		bb.Mul(bb, pow10(as-bs))
	}
	return ab.Cmp(bb)
}

func pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// Equal reports whether a and b are the same value (NULL equals NULL here; this is
// identity, not SQL equality).
func Equal(a, b Value) bool {
	if a.kind == KindNull || b.kind == KindNull {
		return a.kind == b.kind
	}
	c, ok := Compare(a, b)
	return ok && c == 0
}

// String renders the value for messages and output: SQL-literal-like, stable.
func (v Value) String() string {
	switch v.kind {
	case KindNull:
		return "NULL"
	case KindBool:
		if v.i != 0 {
			return "TRUE"
		}
		return "FALSE"
	case KindInt64:
		return fmt.Sprint(v.i)
	case KindFloat64:
		return fmt.Sprint(v.f)
	case KindDecimal:
		return v.dec.ToString(v.scale)
	case KindString:
		return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
	case KindBinary:
		return fmt.Sprintf("X'%X'", []byte(v.s))
	case KindDate:
		return "DATE '" + time.Unix(v.i*86400, 0).UTC().Format("2006-01-02") + "'"
	case KindTimestamp:
		return "TIMESTAMP '" + time.UnixMicro(v.i).UTC().Format("2006-01-02 15:04:05.999999") + "+00:00'"
	case KindTimestampNTZ:
		return "TIMESTAMP_NTZ '" + time.UnixMicro(v.i).UTC().Format("2006-01-02 15:04:05.999999") + "'"
	}
	return "?"
}

// HasPrefix reports whether a string or binary value starts with p.
func (v Value) HasPrefix(p string) bool {
	return (v.kind == KindString || v.kind == KindBinary) && strings.HasPrefix(v.s, p)
}
