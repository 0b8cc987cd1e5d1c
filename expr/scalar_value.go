package expr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

// Errors of evaluating scalar expressions (wrapped in an *EvalError naming the row).
var (
	// ErrOverflow: a result or converted value is outside its type's range.
	ErrOverflow = errors.New("expr: arithmetic overflow")
	// ErrDivideByZero: division or remainder by zero.
	ErrDivideByZero = errors.New("expr: division by zero")
	// ErrInvalidCast: a value cannot be converted (unparseable string, NaN to integer).
	ErrInvalidCast = errors.New("expr: invalid cast")
	// ErrInexact: an implicit conversion of an assignment would change the value
	// (for example a long above 2^53 to double); CAST converts with rounding.
	ErrInexact = errors.New("expr: value not exactly representable in the column type")
	// ErrNotNullable: NULL assigned to a column that is not nullable.
	ErrNotNullable = errors.New("expr: NULL in a non-nullable column")
)

// EvalError reports the row of a batch for which a scalar expression failed.
type EvalError struct {
	// Row is the row index within the batch.
	Row int
	// Expr is the failing (sub)expression, rendered.
	Expr string
	// Err is one of ErrOverflow, ErrDivideByZero, ErrInvalidCast, ErrInexact,
	// ErrNotNullable, with detail.
	Err error
}

// Error renders `expr: row 17: a + 1: integer overflow ...`.
func (e *EvalError) Error() string {
	return fmt.Sprintf("expr: row %d: %s: %s", e.Row, e.Expr, strings.TrimPrefix(e.Err.Error(), "expr: "))
}

// Unwrap returns the cause.
func (e *EvalError) Unwrap() error { return e.Err }

// ---- decimals ----

// ratOf returns the exact value of a numeric value.
func ratOf(v value.Value) *big.Rat {
	switch v.Kind() {
	case value.KindInt64:
		return new(big.Rat).SetInt64(v.AsInt64())
	case value.KindDecimal:
		u, _, s := v.AsDecimal()
		return new(big.Rat).SetFrac(u.BigInt(), pow10(s))
	case value.KindFloat64:
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(v.AsFloat64(), 'e', -1, 64))
		return r
	}
	return new(big.Rat)
}

// divHalfUp returns num/den rounded to an integer, ties away from zero (Java's
// RoundingMode.HALF_UP). den must be positive.
func divHalfUp(num, den *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// scaledHalfUp returns r rounded HALF_UP to scale decimal places, as an unscaled integer.
func scaledHalfUp(r *big.Rat, scale int32) *big.Int {
	num := new(big.Int).Set(r.Num())
	den := new(big.Int).Set(r.Denom())
	if scale >= 0 {
		num.Mul(num, pow10(scale))
	} else {
		den.Mul(den, pow10(-scale))
	}
	return divHalfUp(num, den)
}

// roundSignificant rounds r HALF_UP to digits significant digits (Java's
// MathContext(digits, HALF_UP)), which Spark applies to decimal products and quotients.
func roundSignificant(r *big.Rat, digits int) *big.Rat {
	if r.Sign() == 0 {
		return r
	}
	// k = number of digits before the decimal point of |r| (may be <= 0).
	abs := new(big.Rat).Abs(r)
	intPart := new(big.Int).Quo(abs.Num(), abs.Denom())
	var k int
	if intPart.Sign() > 0 {
		k = len(intPart.String())
	} else {
		// |r| < 1: count leading zeros after the point.
		k = 0
		t := new(big.Rat).Set(abs)
		ten := new(big.Rat).SetInt64(10)
		one := new(big.Rat).SetInt64(1)
		for t.Cmp(new(big.Rat).Quo(one, ten)) < 0 {
			t.Mul(t, ten)
			k--
		}
	}
	scale := int32(digits - k)
	u := scaledHalfUp(r, scale)
	if scale >= 0 {
		return new(big.Rat).SetFrac(u, pow10(scale))
	}
	return new(big.Rat).SetInt(u.Mul(u, pow10(-scale)))
}

func fitsPrecision(u *big.Int, p int32) bool {
	return new(big.Int).Abs(u).Cmp(pow10(p)) < 0
}

// decimalFromRat converts r to decimal(p,s) with HALF_UP rounding (Spark's
// changePrecision), or ErrOverflow.
func decimalFromRat(r *big.Rat, t *arrow.Decimal128Type) (value.Value, error) {
	u := scaledHalfUp(r, t.Scale)
	if !fitsPrecision(u, t.Precision) {
		return value.Value{}, fmt.Errorf("%w: %s does not fit %s", ErrOverflow, r.FloatString(int(max(t.Scale, 0))), TypeName(t))
	}
	return value.Decimal(decimal128.FromBigInt(u), t.Precision, t.Scale), nil
}

// ---- Java-compatible number formatting (Spark's CAST(x AS STRING)) ----

// ---- conversions of one value ----

// toFloat rounds a float64 to the precision of a float type.
func toFloat(f float64, t arrow.DataType) float64 {
	if isDouble(t) {
		return f
	}
	return float64(float32(f))
}

func inexact(v value.Value, to arrow.DataType) error {
	return fmt.Errorf("%w: %s as %s", ErrInexact, FormatValue(v), TypeName(to))
}

func overflow(v value.Value, to arrow.DataType) error {
	return fmt.Errorf("%w: %s does not fit %s", ErrOverflow, FormatValue(v), TypeName(to))
}

func invalidCast(v value.Value, to arrow.DataType, why string) error {
	if why != "" {
		return fmt.Errorf("%w: %s to %s: %s", ErrInvalidCast, FormatValue(v), TypeName(to), why)
	}
	return fmt.Errorf("%w: %s to %s", ErrInvalidCast, FormatValue(v), TypeName(to))
}

// castValue converts v (a value of type from, never NULL) to type to. With exact set
// (assignment conversions, see assignAllowed) a conversion that would change the value
// fails with ErrInexact or ErrOverflow; otherwise CAST semantics apply (Spark, ANSI):
// numbers round HALF_UP into decimals and truncate toward zero into integers, out of
// range values fail with ErrOverflow, unparseable strings with ErrInvalidCast.
func castValue(v value.Value, from, to arrow.DataType, exact bool) (value.Value, error) {
	fk, tk := kindOf(from), kindOf(to)
	switch tk {
	case tkString:
		if fk == tkString {
			return v, nil
		}
		return value.String(formatForCast(v, from)), nil
	case tkBinary:
		return value.Binary([]byte(v.AsString())), nil
	case tkBool:
		switch fk {
		case tkBool:
			return v, nil
		case tkInt:
			return value.Bool(v.AsInt64() != 0), nil
		case tkFloat:
			return value.Bool(v.AsFloat64() != 0), nil
		case tkDecimal:
			u, _, _ := v.AsDecimal()
			return value.Bool(u.Sign() != 0), nil
		case tkString:
			switch strings.ToLower(strings.TrimSpace(v.AsString())) {
			case "t", "true", "y", "yes", "1":
				return value.Bool(true), nil
			case "f", "false", "n", "no", "0":
				return value.Bool(false), nil
			}
			return value.Value{}, invalidCast(v, to, "not a boolean")
		}
	case tkInt:
		lo, hi := intBounds(to)
		var r *big.Rat
		switch fk {
		case tkInt:
			if x := v.AsInt64(); x < lo || x > hi {
				return value.Value{}, overflow(v, to)
			}
			return v, nil
		case tkBool:
			if v.AsBool() {
				return value.Int64(1), nil
			}
			return value.Int64(0), nil
		case tkFloat:
			f := v.AsFloat64()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return value.Value{}, invalidCast(v, to, "not a finite number")
			}
			t := math.Trunc(f)
			if t < float64(lo) || t >= -float64(lo) { // -lo = 2^(w-1) is exact in float64
				return value.Value{}, overflow(v, to)
			}
			return value.Int64(int64(t)), nil
		case tkDecimal:
			r = ratOf(v)
		case tkString:
			s := strings.TrimSpace(v.AsString())
			n, ok := new(big.Int).SetString(s, 10)
			if !ok || s == "" || strings.ContainsAny(s, "_") {
				return value.Value{}, invalidCast(v, to, "not an integer")
			}
			r = new(big.Rat).SetInt(n)
		}
		if r != nil {
			if exact && !r.IsInt() {
				return value.Value{}, inexact(v, to)
			}
			q := new(big.Int).Quo(r.Num(), r.Denom()) // toward zero
			if !q.IsInt64() || q.Int64() < lo || q.Int64() > hi {
				return value.Value{}, overflow(v, to)
			}
			return value.Int64(q.Int64()), nil
		}
	case tkFloat:
		var f float64
		switch fk {
		case tkFloat:
			f = v.AsFloat64()
		case tkInt:
			x := v.AsInt64()
			if isDouble(to) {
				f = float64(x)
			} else {
				f = float64(float32(x))
			}
			if exact && (f >= 0x1p63 || int64(f) != x) {
				return value.Value{}, inexact(v, to)
			}
			return value.Float64(f), nil
		case tkBool:
			f = 0
			if v.AsBool() {
				f = 1
			}
		case tkDecimal:
			r := ratOf(v)
			if isDouble(to) {
				f, _ = r.Float64()
			} else {
				f32, _ := r.Float32()
				f = float64(f32)
			}
			return value.Float64(f), nil
		case tkString:
			x, ok := parseFloatText(v.AsString())
			if !ok {
				return value.Value{}, invalidCast(v, to, "not a number")
			}
			f = x
		}
		return value.Float64(toFloat(f, to)), nil
	case tkDecimal:
		dt := to.(*arrow.Decimal128Type)
		var r *big.Rat
		switch fk {
		case tkInt, tkDecimal:
			r = ratOf(v)
		case tkBool:
			r = new(big.Rat)
			if v.AsBool() {
				r.SetInt64(1)
			}
		case tkFloat:
			f := v.AsFloat64()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return value.Value{}, invalidCast(v, to, "not a finite number")
			}
			r = ratOf(v) // the shortest decimal of the double, as Spark's Decimal(double)
		case tkString:
			s := strings.TrimSpace(v.AsString())
			if !isDecimalText(s) {
				return value.Value{}, invalidCast(v, to, "not a decimal number")
			}
			r, _ = new(big.Rat).SetString(s)
		}
		if exact {
			if u := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10(dt.Scale))); !u.IsInt() {
				return value.Value{}, inexact(v, to)
			}
		}
		return decimalFromRat(r, dt)
	case tkDate:
		switch fk {
		case tkDate:
			return v, nil
		case tkTimestamp, tkTimestampNTZ:
			return value.Date(value.FloorDiv(v.AsInt64(), microsPerDay)), nil
		case tkString:
			if d, err := ParseDate(v.AsString()); err == nil {
				return value.Date(d), nil
			}
			us, _, err := ParseTimestamp(v.AsString())
			if err != nil {
				return value.Value{}, invalidCast(v, to, "not a date")
			}
			return value.Date(value.FloorDiv(us, microsPerDay)), nil
		}
	case tkTimestamp, tkTimestampNTZ:
		mk := value.Timestamp
		if tk == tkTimestampNTZ {
			mk = value.TimestampNTZ
		}
		switch fk {
		case tkTimestamp, tkTimestampNTZ:
			return mk(v.AsInt64()), nil
		case tkDate:
			d := v.AsInt64()
			if d > math.MaxInt64/microsPerDay || d < math.MinInt64/microsPerDay {
				return value.Value{}, overflow(v, to)
			}
			return mk(d * microsPerDay), nil
		case tkString:
			us, zoned, err := ParseTimestamp(v.AsString())
			if err != nil || (zoned && tk == tkTimestampNTZ) {
				return value.Value{}, invalidCast(v, to, "not a timestamp")
			}
			return mk(us), nil
		}
	}
	return value.Value{}, invalidCast(v, to, "unsupported conversion from "+TypeName(from))
}

// isDecimalText accepts [+-](digits[.digits] | .digits)[(e|E)[+-]digits] with an
// exponent of at most four digits (a longer one would make big.Rat's parse unbounded).
func isDecimalText(s string) bool {
	ok, e := value.ScanDecimalLiteral(s)
	return ok && e <= 4
}

// formatForCast renders a value as CAST(v AS STRING) does (Spark, UTC session zone).
func formatForCast(v value.Value, from arrow.DataType) string {
	switch kindOf(from) {
	case tkBool:
		if v.AsBool() {
			return "true"
		}
		return "false"
	case tkInt:
		return strconv.FormatInt(v.AsInt64(), 10)
	case tkFloat:
		if isDouble(from) {
			return value.FormatJavaFloat(v.AsFloat64(), 64)
		}
		return value.FormatJavaFloat(v.AsFloat64(), 32)
	case tkDecimal:
		u, _, s := v.AsDecimal()
		return decimalString(u, s)
	case tkDate:
		return formatDays(v.AsInt64())
	case tkTimestamp, tkTimestampNTZ:
		return formatMicros(v.AsInt64())
	}
	return v.AsString()
}
