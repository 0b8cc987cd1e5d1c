package conform

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

// Store assignment: the implicit conversions a write applies when a source column's
// type differs from the table column's (Spark's ANSI store assignment,
// Cast.canANSIStoreAssign, with its runtime checks):
//
//   - numbers to numbers, any direction: widening always succeeds; narrowing is
//     checked value by value (an integer out of range, a decimal with more integer
//     digits than the column holds, NaN or an infinity into an integer or decimal,
//     a finite double beyond float's range). Fractions are truncated toward zero
//     into integers and rounded half away from zero to a decimal's scale, as Spark
//     rounds.
//   - any primitive to string (numbers in Spark's spelling, dates, timestamps in
//     UTC, booleans; binary when it is valid UTF-8).
//   - dates and timestamps among each other (a timestamp keeps its date in UTC; a
//     timestamp without time zone is read as UTC wall-clock time).
//   - structs by field name (missing nullable fields become NULL), arrays and maps
//     element by element.
//
// Everything else — string to a number or date, boolean to or from a number,
// binary to anything but string — is refused before any row is written, with an
// error naming the column and both types (ErrSchemaMismatch). A value that does
// not fit is a *CastError (matching ErrValueDoesNotFit) naming the column, both
// types, the value and its row.

// CastError reports a source value a write could not store in its column: the
// column's type cannot hold it (an integer out of range, a decimal with too many
// digits, NaN into an integer, ...). Nothing is committed when it is returned.
type CastError struct {
	// Column is the table column's path ("qty", "address.zip", "tags.element").
	Column string
	// From and To are the source and column types, as Delta names them.
	From, To string
	// Value is the value as the source spells it.
	Value string
	// Row is the row's position in the write's input, counting from 0.
	Row int64
	// Reason says why the value does not fit.
	Reason string
}

// Error names the column, the value, its row and both types.
func (e *CastError) Error() string {
	return fmt.Sprintf("table: column %q: the value %s (%s) at row %d does not fit %s: %s", e.Column, e.Value, e.From, e.Row+1, e.To, e.Reason)
}

// Unwrap returns ErrValueDoesNotFit.
func (e *CastError) Unwrap() error { return ErrValueDoesNotFit }

// sourceValueStr spells src's value i for an error: decimals with all the digits
// of their scale (12345678901234.50 for a decimal(16,2), where Arrow's ValueStr
// drops the trailing zero), anything else as Arrow spells it.
func sourceValueStr(src arrow.Array, i int) string {
	switch a := src.(type) {
	case *array.Decimal32:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal32Type).Scale)
	case *array.Decimal64:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal64Type).Scale)
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Decimal256:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale)
	}
	return src.ValueStr(i)
}

// RowMap maps an index of the array being converted to the row of the write's input
// it belongs to (nested elements map through their lists' offsets).
type RowMap func(i int) int64

// Func converts a source array to a column type, value by value. The result is a
// new reference the caller releases.
type Func func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error)

// storeCast returns the conversion of primitive values of type from into the column
// type to (a Delta type's Arrow form), or nil when store assignment refuses it.
// column names the column for errors.
func storeCast(from, to arrow.DataType, column string) Func {
	if d, ok := from.(*arrow.DictionaryType); ok {
		inner := storeCast(d.ValueType, to, column)
		if inner == nil {
			return nil
		}
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			dense, err := decodeDictionary(mem, src.(*array.Dictionary))
			if err != nil {
				return nil, err
			}
			defer dense.Release()
			return inner(mem, dense, rows)
		}
	}
	if from.ID() == arrow.NULL {
		return func(mem memory.Allocator, src arrow.Array, _ RowMap) (arrow.Array, error) {
			return array.MakeArrayOfNull(mem, to, src.Len()), nil
		}
	}
	fail := func(src arrow.Array, i int, rows RowMap, reason string) error {
		f, t := value.DisplayTypes(src.DataType(), to)
		return &CastError{Column: column, From: f, To: t, Value: sourceValueStr(src, i), Row: rows(i), Reason: reason}
	}
	switch t := to.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		num := numberReader(from)
		if num == nil {
			return nil
		}
		bits := uint(value.IntBits(to))
		lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			get := num(src)
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				v, reason := get.toInt(i, lo, hi)
				if reason != "" {
					return fail(src, i, rows, reason)
				}
				value.AppendInt64(b, v)
				return nil
			})
		}
	case *arrow.Float32Type, *arrow.Float64Type:
		num := numberReader(from)
		if num == nil {
			return nil
		}
		single := to.ID() == arrow.FLOAT32
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			get := num(src)
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				f := get.toFloat(i)
				if single {
					g := float32(f)
					if math.IsInf(float64(g), 0) && !math.IsInf(f, 0) {
						return fail(src, i, rows, "beyond the range of float")
					}
					b.(*array.Float32Builder).Append(g)
					return nil
				}
				b.(*array.Float64Builder).Append(f)
				return nil
			})
		}
	case *arrow.Decimal128Type:
		num := numberReader(from)
		if num == nil {
			return nil
		}
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			get := num(src)
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				v, reason := get.toDecimal(i, t.Precision, t.Scale)
				if reason != "" {
					return fail(src, i, rows, reason)
				}
				b.(*array.Decimal128Builder).Append(v)
				return nil
			})
		}
	case *arrow.BooleanType:
		if from.ID() != arrow.BOOL {
			return nil
		}
		return relabelTo(to)
	case *arrow.StringType:
		format := stringFormatter(from)
		if format == nil {
			return nil
		}
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			f := format(src)
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				s, ok := f(i)
				if !ok {
					return fail(src, i, rows, "not valid UTF-8")
				}
				b.(*array.StringBuilder).Append(s)
				return nil
			})
		}
	case *arrow.BinaryType:
		switch from.ID() {
		case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		default:
			return nil
		}
		return func(mem memory.Allocator, src arrow.Array, _ RowMap) (arrow.Array, error) {
			get := bytesGetter(src)
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				b.(*array.BinaryBuilder).Append(get(i))
				return nil
			})
		}
	case *arrow.Date32Type:
		get := instantReader(from)
		if get == nil {
			return nil
		}
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			at := get(src)
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				us, reason := at(i)
				if reason != "" {
					return fail(src, i, rows, reason)
				}
				b.(*array.Date32Builder).Append(arrow.Date32(value.FloorDiv(us, microsPerDay)))
				return nil
			})
		}
	case *arrow.TimestampType:
		get := instantReader(from)
		if get == nil {
			return nil
		}
		if ft, ok := from.(*arrow.TimestampType); ok && ft.Unit == t.Unit {
			// The same instants (or wall-clock times) under another zone spelling, or
			// read as UTC: the same numbers.
			return relabelTo(to)
		}
		return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
			at := get(src)
			div := int64(1)
			switch t.Unit {
			case arrow.Millisecond:
				div = 1000
			case arrow.Second:
				div = 1_000_000
			}
			return buildEach(mem, src, to, func(b array.Builder, i int) error {
				us, reason := at(i)
				if reason != "" {
					return fail(src, i, rows, reason)
				}
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(value.FloorDiv(us, div)))
				return nil
			})
		}
	}
	return nil
}

// relabelTo returns the conversion that gives src's buffers the column type t: the
// representation is the same (the caller checked), only the type's spelling differs.
func relabelTo(t arrow.DataType) Func {
	return func(_ memory.Allocator, src arrow.Array, _ RowMap) (arrow.Array, error) {
		d := src.Data()
		nd := array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}
}

const microsPerDay = 86_400_000_000

// buildEach builds an array of type t from src, calling set for each non-null index.
func buildEach(mem memory.Allocator, src arrow.Array, t arrow.DataType, set func(b array.Builder, i int) error) (arrow.Array, error) {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	n := src.Len()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if src.IsNull(i) {
			b.AppendNull()
			continue
		}
		if err := set(b, i); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}

// decodeDictionary returns the values of a dictionary array, densely.
func decodeDictionary(mem memory.Allocator, d *array.Dictionary) (arrow.Array, error) {
	out, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), d.Dictionary(), d.Indices())
	if err != nil {
		return nil, fmt.Errorf("table: decoding a dictionary column: %w", err)
	}
	return out, nil
}

// number is one numeric source column, read value by value.
type number struct {
	kind numKind
	i64  func(i int) int64
	u64  func(i int) uint64
	f64  func(i int) float64
	dec  func(i int) (decimal128.Num, bool) // false: beyond 128 bits
	sc   int32                              // decimal scale
}

type numKind uint8

const (
	numInt numKind = iota
	numUint
	numFloat
	numDec
)

// numberReader returns how to read numbers of type t, or nil when t is not numeric.
func numberReader(t arrow.DataType) func(arrow.Array) *number {
	switch tt := t.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return func(a arrow.Array) *number {
			n := &number{kind: numInt}
			switch x := a.(type) {
			case *array.Int8:
				n.i64 = func(i int) int64 { return int64(x.Value(i)) }
			case *array.Int16:
				n.i64 = func(i int) int64 { return int64(x.Value(i)) }
			case *array.Int32:
				n.i64 = func(i int) int64 { return int64(x.Value(i)) }
			case *array.Int64:
				n.i64 = x.Value
			}
			return n
		}
	case *arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		return func(a arrow.Array) *number {
			n := &number{kind: numUint}
			switch x := a.(type) {
			case *array.Uint8:
				n.u64 = func(i int) uint64 { return uint64(x.Value(i)) }
			case *array.Uint16:
				n.u64 = func(i int) uint64 { return uint64(x.Value(i)) }
			case *array.Uint32:
				n.u64 = func(i int) uint64 { return uint64(x.Value(i)) }
			case *array.Uint64:
				n.u64 = x.Value
			}
			return n
		}
	case *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type:
		return func(a arrow.Array) *number {
			n := &number{kind: numFloat}
			switch x := a.(type) {
			case *array.Float16:
				n.f64 = func(i int) float64 { return float64(x.Value(i).Float32()) }
			case *array.Float32:
				n.f64 = func(i int) float64 { return float64(x.Value(i)) }
			case *array.Float64:
				n.f64 = x.Value
			}
			return n
		}
	case arrow.DecimalType:
		return func(a arrow.Array) *number {
			n := &number{kind: numDec, sc: tt.GetScale()}
			switch x := a.(type) {
			case *array.Decimal32:
				n.dec = func(i int) (decimal128.Num, bool) { return decimal128.FromI64(int64(x.Value(i))), true }
			case *array.Decimal64:
				n.dec = func(i int) (decimal128.Num, bool) { return decimal128.FromI64(int64(x.Value(i))), true }
			case *array.Decimal128:
				n.dec = func(i int) (decimal128.Num, bool) { return x.Value(i), true }
			case *array.Decimal256:
				n.dec = func(i int) (decimal128.Num, bool) {
					b := x.Value(i).BigInt()
					if b.BitLen() > 126 {
						return decimal128.Num{}, false
					}
					return decimal128.FromBigInt(b), true
				}
			}
			return n
		}
	}
	return nil
}

// toInt converts value i to an integer in [lo, hi], truncating a fraction toward
// zero; reason says why it does not fit ("" when it does).
func (n *number) toInt(i int, lo, hi int64) (int64, string) {
	const outOfRange = "out of the column type's range"
	switch n.kind {
	case numInt:
		v := n.i64(i)
		if v < lo || v > hi {
			return 0, outOfRange
		}
		return v, ""
	case numUint:
		v := n.u64(i)
		if v > uint64(hi) {
			return 0, outOfRange
		}
		return int64(v), ""
	case numFloat:
		f := n.f64(i)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, "not a finite number"
		}
		t := math.Trunc(f)
		// float64(hi)+1 is exactly 2^(bits-1): t must stay below it.
		if t < float64(lo) || t >= float64(hi)+1 {
			return 0, outOfRange
		}
		return int64(t), ""
	}
	d, ok := n.dec(i)
	if !ok {
		return 0, outOfRange
	}
	b := d.BigInt()
	if n.sc > 0 {
		b.Quo(b, pow10Big(int(n.sc)))
	} else if n.sc < 0 {
		b.Mul(b, pow10Big(int(-n.sc)))
	}
	if !b.IsInt64() || b.Int64() < lo || b.Int64() > hi {
		return 0, outOfRange
	}
	return b.Int64(), ""
}

// toFloat converts value i to a float64 (correctly rounded).
func (n *number) toFloat(i int) float64 {
	switch n.kind {
	case numInt:
		return float64(n.i64(i))
	case numUint:
		return float64(n.u64(i))
	case numFloat:
		return n.f64(i)
	}
	d, ok := n.dec(i)
	if !ok {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(d.ToString(n.sc), 64)
	if err != nil {
		// Only a range error is possible: the magnitude is beyond float64.
		return math.Inf(d.Sign())
	}
	return f
}

// toDecimal converts value i to decimal(prec, scale), rounding half away from zero
// to the scale; reason says why it does not fit ("" when it does).
func (n *number) toDecimal(i int, prec, scale int32) (decimal128.Num, string) {
	var (
		unscaled *big.Int
		from     int32
	)
	switch n.kind {
	case numInt:
		unscaled = big.NewInt(n.i64(i))
	case numUint:
		unscaled = new(big.Int).SetUint64(n.u64(i))
	case numFloat:
		f := n.f64(i)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return decimal128.Num{}, "not a finite number"
		}
		// Spark converts a double through its shortest decimal spelling.
		unscaled, from = shortestDecimal(f)
	default:
		d, ok := n.dec(i)
		if !ok {
			return decimal128.Num{}, fmt.Sprintf("more than %d digits", prec)
		}
		unscaled, from = d.BigInt(), n.sc
	}
	v := rescaleHalfUp(unscaled, from, scale)
	if digits(v) > int(prec) {
		return decimal128.Num{}, fmt.Sprintf("needs %d digits, the column holds %d", digits(v), prec)
	}
	return decimal128.FromBigInt(v), ""
}

// shortestDecimal returns f's shortest round-tripping decimal spelling as an unscaled
// integer and its scale (which may be negative).
func shortestDecimal(f float64) (*big.Int, int32) {
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	digitsText := intPart + frac
	u, _ := new(big.Int).SetString(digitsText, 10)
	if neg {
		u.Neg(u)
	}
	return u, int32(len(frac) - e)
}

// rescaleHalfUp changes the scale of an unscaled value from `from` to `to`,
// rounding half away from zero when digits are dropped.
func rescaleHalfUp(v *big.Int, from, to int32) *big.Int {
	out := new(big.Int).Set(v)
	switch {
	case to > from:
		return out.Mul(out, pow10Big(int(to-from)))
	case to < from:
		div := pow10Big(int(from - to))
		q, r := new(big.Int).QuoRem(out, div, new(big.Int))
		r.Abs(r)
		r.Lsh(r, 1)
		if r.Cmp(div) >= 0 {
			if v.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		return q
	}
	return out
}

func pow10Big(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// digits counts the decimal digits of |v| (0 has none).
func digits(v *big.Int) int {
	if v.Sign() == 0 {
		return 0
	}
	return len(new(big.Int).Abs(v).String())
}

// bytesGetter reads the bytes of a binary-like array.
func bytesGetter(a arrow.Array) func(int) []byte {
	switch x := a.(type) {
	case *array.Binary:
		return x.Value
	case *array.LargeBinary:
		return x.Value
	case *array.BinaryView:
		return x.Value
	case *array.FixedSizeBinary:
		return x.Value
	case *array.String:
		return func(i int) []byte { return []byte(x.Value(i)) }
	case *array.LargeString:
		return func(i int) []byte { return []byte(x.Value(i)) }
	case *array.StringView:
		return func(i int) []byte { return []byte(x.Value(i)) }
	}
	return nil
}

// stringFormatter returns how values of type t are spelled as strings (Spark's cast
// to string, timestamps in UTC), or nil when t is not primitive.
func stringFormatter(t arrow.DataType) func(arrow.Array) func(int) (string, bool) {
	switch tt := t.(type) {
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return func(a arrow.Array) func(int) (string, bool) {
			get := bytesGetter(a)
			return func(i int) (string, bool) { return string(get(i)), true }
		}
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return func(a arrow.Array) func(int) (string, bool) {
			get := bytesGetter(a)
			return func(i int) (string, bool) {
				b := get(i)
				return string(b), utf8.Valid(b)
			}
		}
	case *arrow.BooleanType:
		return func(a arrow.Array) func(int) (string, bool) {
			x := a.(*array.Boolean)
			return func(i int) (string, bool) { return strconv.FormatBool(x.Value(i)), true }
		}
	case *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type:
		bits := 64
		if tt.ID() != arrow.FLOAT64 {
			bits = 32
		}
		num := numberReader(t)
		return func(a arrow.Array) func(int) (string, bool) {
			n := num(a)
			return func(i int) (string, bool) { return javaFloatString(n.f64(i), bits), true }
		}
	case arrow.DecimalType:
		num := numberReader(t)
		return func(a arrow.Array) func(int) (string, bool) {
			n := num(a)
			return func(i int) (string, bool) {
				d, ok := n.dec(i)
				if !ok {
					return a.ValueStr(i), true
				}
				return d.ToString(n.sc), true
			}
		}
	case *arrow.Date32Type, *arrow.Date64Type:
		get := instantReader(t)
		return func(a arrow.Array) func(int) (string, bool) {
			at := get(a)
			return func(i int) (string, bool) {
				us, _ := at(i)
				return time.UnixMicro(us).UTC().Format("2006-01-02"), true
			}
		}
	case *arrow.TimestampType:
		get := instantReader(t)
		return func(a arrow.Array) func(int) (string, bool) {
			at := get(a)
			return func(i int) (string, bool) {
				us, reason := at(i)
				if reason != "" {
					return a.ValueStr(i), true
				}
				return sparkTimestampString(us), true
			}
		}
	}
	if numberReader(t) != nil {
		num := numberReader(t)
		return func(a arrow.Array) func(int) (string, bool) {
			n := num(a)
			return func(i int) (string, bool) {
				if n.kind == numUint {
					return strconv.FormatUint(n.u64(i), 10), true
				}
				return strconv.FormatInt(n.i64(i), 10), true
			}
		}
	}
	return nil
}

// javaFloatString spells f as Java's Double.toString (and Float.toString for
// bits 32) do, which Spark's cast to string uses: "1.0", "0.001", "1.0E7",
// "1.0E-4", "NaN", "Infinity".
func javaFloatString(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// sparkTimestampString spells microseconds since the epoch as Spark casts a
// timestamp to string (in UTC): "2024-03-01 10:00:00", with the fraction's
// trailing zeros dropped ("2024-03-01 10:00:00.5").
func sparkTimestampString(us int64) string {
	t := time.UnixMicro(us).UTC()
	s := t.Format("2006-01-02 15:04:05")
	if frac := t.Nanosecond() / 1000; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
	}
	return s
}

// instantReader returns how values of a date or timestamp type read as microseconds
// since the epoch (UTC; a timestamp without time zone as UTC wall-clock time), or nil
// for other types. reason is set when the value is beyond the microsecond range.
func instantReader(t arrow.DataType) func(arrow.Array) func(int) (int64, string) {
	switch tt := t.(type) {
	case *arrow.Date32Type:
		return func(a arrow.Array) func(int) (int64, string) {
			x := a.(*array.Date32)
			return func(i int) (int64, string) { return int64(x.Value(i)) * microsPerDay, "" }
		}
	case *arrow.Date64Type:
		return func(a arrow.Array) func(int) (int64, string) {
			x := a.(*array.Date64)
			return func(i int) (int64, string) {
				ms := int64(x.Value(i))
				if ms > math.MaxInt64/1000 || ms < math.MinInt64/1000 {
					return 0, "beyond the range of timestamps"
				}
				return ms * 1000, ""
			}
		}
	case *arrow.TimestampType:
		return func(a arrow.Array) func(int) (int64, string) {
			x := a.(*array.Timestamp)
			switch tt.Unit {
			case arrow.Second, arrow.Millisecond:
				mul := int64(1_000_000)
				if tt.Unit == arrow.Millisecond {
					mul = 1000
				}
				return func(i int) (int64, string) {
					v := int64(x.Value(i))
					if v > math.MaxInt64/mul || v < math.MinInt64/mul {
						return 0, "beyond the range of microsecond timestamps"
					}
					return v * mul, ""
				}
			case arrow.Nanosecond:
				return func(i int) (int64, string) { return value.FloorDiv(int64(x.Value(i)), 1000), "" }
			}
			return func(i int) (int64, string) { return int64(x.Value(i)), "" }
		}
	}
	return nil
}
