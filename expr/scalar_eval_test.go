package expr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// semSchema / semRecord: one row with known values for the semantics table.
func semSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}, Nullable: true},
		{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 37}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "dbl", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
}

func semRecord(mem memory.Allocator) arrow.RecordBatch {
	sc := semSchema()
	ts, _, _ := ParseTimestamp("2024-01-01 10:00:00.5")
	day, _ := ParseDate("2024-02-29")
	row := testRow{
		"i": value.Int64(7), "n": value.Null(), "b": value.Int64(100), "l": value.Int64(math.MaxInt64),
		"d": value.Decimal(decimal128.FromI64(125), 5, 2), "big": value.Decimal(decimal128.FromBigInt(pow10(36)), 38, 37),
		"f": value.Float64(float64(float32(0.1))), "dbl": value.Float64(2.5), "s": value.String(" 42 "),
		"bin": value.Binary([]byte("AB")), "ok": value.Bool(true), "dt": value.Date(day),
		"ts": value.Timestamp(ts), "ntz": value.TimestampNTZ(ts),
	}
	return buildRecord(mem, sc, []testRow{row})
}

// show renders a value for the semantics table.
func show(v value.Value) string {
	switch v.Kind() {
	case value.KindNull:
		return "NULL"
	case value.KindFloat64:
		return strconv.FormatFloat(v.AsFloat64(), 'g', -1, 64)
	case value.KindDecimal:
		u, _, s := v.AsDecimal()
		return decimalString(u, s)
	case value.KindDate:
		return formatDays(v.AsInt64())
	case value.KindTimestamp, value.KindTimestampNTZ:
		return formatMicros(v.AsInt64())
	case value.KindBinary:
		return "X" + strconv.Quote(v.AsString())
	case value.KindString:
		return strconv.Quote(v.AsString())
	}
	return v.String()
}

// resultValue reads row i of an evaluated array of type t.
func resultValue(arr arrow.Array, i int, t arrow.DataType) value.Value {
	if arr.IsNull(i) || kindOf(t) == tkNull {
		return value.Null()
	}
	c := &BoundColumn{Type: t}
	if err := describeType(c); err != nil {
		panic(err)
	}
	return arrayValue(arr, i)
}

// TestScalarSemantics pins down values that follow Spark SQL (ANSI mode) exactly.
func TestScalarSemantics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := semRecord(mem)
	defer rec.Release()
	cases := []struct {
		expr, typ, want string
		err             error
	}{
		// arithmetic typing and values
		{"i + 1", "int", "8", nil},
		{"b + b", "tinyint", "", ErrOverflow},
		{"b + 1", "int", "101", nil},
		{"i * l", "bigint", "", ErrOverflow},
		{"l - 1", "bigint", "9223372036854775806", nil},
		{"2147483647 + 1", "int", "", ErrOverflow},
		{"2147483648 + 1", "bigint", "2147483649", nil},
		{"-(-2147483648)", "int", "", ErrOverflow},
		{"i / 2", "double", "3.5", nil},
		{"i / 0", "double", "", ErrDivideByZero},
		{"dbl / 0", "double", "", ErrDivideByZero},
		{"dbl % 0.0", "double", "", ErrDivideByZero},
		{"-7 % 3", "int", "-1", nil},
		{"7 % -3", "int", "1", nil},
		{"-dbl % 2", "double", "-0.5", nil},
		{"i % 0", "int", "", ErrDivideByZero},
		{"f + f", "float", "0.20000000298023224", nil},
		{"f + 1", "float", "1.100000023841858", nil},
		{"f * dbl", "double", "0.2500000037252903", nil},
		{"f + d", "double", "1.3500000014901161", nil},
		{"dbl * 1e308 * 10", "double", "+Inf", nil},
		// decimals: Spark's result types and rounding
		{"d + 1", "decimal(6,2)", "2.25", nil},
		{"d * d", "decimal(11,4)", "1.5625", nil},
		{"d / 3", "decimal(9,6)", "0.416667", nil},
		{"1.0 / 3", "decimal(7,6)", "0.333333", nil},
		{"d % 0.5", "decimal(2,2)", "0.25", nil},
		{"i * d", "decimal(16,2)", "8.75", nil},
		{"l * d", "decimal(26,2)", "", ErrOverflow}, // no: 9.2e18*1.25 fits decimal(26,2)? see below
		{"big / 3", "decimal(38,37)", "0.0333333333333333333333333333333333333", nil},
		{"CAST(10 AS decimal(38,10)) * CAST(10 AS decimal(38,10))", "decimal(38,6)", "100.000000", nil},
		// Spark rounds a product to 38 significant digits, then to the result scale: the
		// exact 1.000...0046 (39 digits) becomes 1.000...005 (37 decimals), then
		// 1.000...001 at scale 36, where rounding once would give 1.000...000.
		{"CAST('0.50000000000000000000000000000000000023' AS decimal(38,38)) * 2", "decimal(38,36)",
			"1.000000000000000000000000000000000001", nil},
		{"CAST(99999999999999999999999999999999999999 AS decimal(38,0)) * 10", "decimal(38,0)", "", ErrOverflow},
		{"d / 0", "decimal(9,6)", "", ErrDivideByZero},
		{"-d", "decimal(5,2)", "-1.25", nil},
		// casts (ANSI)
		{"CAST(dbl AS int)", "int", "2", nil},
		{"CAST(-dbl AS int)", "int", "-2", nil},
		{"CAST(2.5 AS decimal(2,0))", "decimal(2,0)", "3", nil},
		{"CAST(-2.5 AS decimal(2,0))", "decimal(2,0)", "-3", nil},
		{"CAST(99.995 AS decimal(4,2))", "decimal(4,2)", "", ErrOverflow},
		{"CAST(1e10 AS int)", "int", "", ErrOverflow},
		{"CAST(DOUBLE 'NaN' AS int)", "int", "", ErrInvalidCast},
		{"CAST(l AS int)", "int", "", ErrOverflow},
		{"CAST(f AS double)", "double", "0.10000000149011612", nil},
		{"CAST(f AS decimal(10,9))", "decimal(10,9)", "0.100000001", nil},
		{"CAST(0.1e0 AS decimal(20,19))", "decimal(20,19)", "0.1000000000000000000", nil},
		{"CAST(s AS int)", "int", "42", nil},
		{"CAST('4x' AS int)", "int", "", ErrInvalidCast},
		{"CAST('1e3' AS decimal(6,1))", "decimal(6,1)", "1000.0", nil},
		{"CAST('1/3' AS decimal(6,1))", "decimal(6,1)", "", ErrInvalidCast},
		{"CAST(' Yes ' AS boolean)", "boolean", "TRUE", nil},
		{"CAST('maybe' AS boolean)", "boolean", "", ErrInvalidCast},
		{"CAST(ok AS int) + 1", "int", "2", nil},
		{"CAST(d AS boolean)", "boolean", "TRUE", nil},
		{"CAST('Infinity' AS double)", "double", "+Inf", nil},
		{"CAST(dt AS timestamp)", "timestamp", "2024-02-29 00:00:00", nil},
		{"CAST(ts AS date)", "date", "2024-01-01", nil},
		{"CAST(TIMESTAMP '1969-12-31 23:00:00+00:00' AS date)", "date", "1969-12-31", nil},
		{"CAST('2024-03-01 12:00:00' AS date)", "date", "2024-03-01", nil},
		{"CAST('2024-03-01 12:00:00+02:00' AS timestamp_ntz)", "timestamp_ntz", "", ErrInvalidCast},
		{"CAST(ntz AS timestamp)", "timestamp", "2024-01-01 10:00:00.5", nil},
		{"CAST(bin AS string)", "string", `"AB"`, nil},
		{"CAST(s AS binary)", "binary", `X" 42 "`, nil},
		// to string, as Spark prints values
		{"CAST(1e10 AS string)", "string", `"1.0E10"`, nil},
		{"CAST(1e-3 AS string)", "string", `"0.001"`, nil},
		{"CAST(1e-4 AS string)", "string", `"1.0E-4"`, nil},
		{"CAST(123456789.0e0 AS string)", "string", `"1.23456789E8"`, nil},
		{"CAST(100.0e0 AS string)", "string", `"100.0"`, nil},
		{"CAST(f AS string)", "string", `"0.1"`, nil},
		{"CAST(-0.0e0 AS string)", "string", `"-0.0"`, nil},
		{"CAST(d AS string)", "string", `"1.25"`, nil},
		{"CAST(ts AS string)", "string", `"2024-01-01 10:00:00.5"`, nil},
		{"CAST(ok AS string)", "string", `"true"`, nil},
		// concat
		{"s || 'x'", "string", `" 42 x"`, nil},
		{"'a' || 1 || 2.50 || dt", "string", `"a12.502024-02-29"`, nil},
		{"concat('a', n)", "string", "NULL", nil},
		{"bin || X'43'", "binary", `X"ABC"`, nil},
		{"bin || 'c'", "string", `"ABc"`, nil},
		// NULL propagation and CASE
		{"n + 1", "int", "NULL", nil},
		{"n + 1 / 0", "double", "NULL", nil}, // the right operand is not evaluated where the left is NULL
		{"NULL + NULL", "void", "NULL", nil},
		{"NULL * d", "decimal(11,4)", "NULL", nil},
		{"CASE WHEN i > 5 THEN 'big' END", "string", `"big"`, nil},
		{"CASE WHEN i > 50 THEN 'big' END", "string", "NULL", nil},
		{"CASE WHEN n > 1 THEN 1 ELSE 2 END", "int", "2", nil},
		{"CASE WHEN i > 1 THEN d WHEN i > 0 THEN i ELSE l END", "decimal(22,2)", "1.25", nil},
		{"CASE WHEN i > 1 THEN 1 ELSE 1 / 0 END", "double", "1", nil},
		{"CASE WHEN i > 100 THEN 1 ELSE 1 / 0 END", "double", "", ErrDivideByZero},
		{"CASE WHEN i > 1 THEN dt ELSE ts END", "timestamp", "2024-02-29 00:00:00", nil},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			if c.expr == "l * d" {
				// 9223372036854775807 * 1.25 = 11529215046068469758.75: fits decimal(26,2).
				c.want, c.err = "11529215046068469758.75", nil
			}
			e, err := ParseScalar(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := BindScalar(e, rec.Schema())
			if err != nil {
				t.Fatalf("bind: %v", err)
			}
			if got := TypeName(bs.Type()); got != c.typ {
				t.Fatalf("type %s, want %s (bound %s)", got, c.typ, bs)
			}
			row, err := bs.RowValues(rec, 0)
			if err != nil {
				t.Fatal(err)
			}
			rv, rerr := bs.EvaluateRow(row)
			arr, verr := bs.Evaluate(rec, nil, mem)
			if c.err != nil {
				var ee *EvalError
				if !errors.Is(rerr, c.err) || !errors.Is(verr, c.err) || !errors.As(verr, &ee) || ee.Row != 0 {
					t.Fatalf("want %v; EvaluateRow %v, Evaluate %v", c.err, rerr, verr)
				}
				if arr != nil {
					t.Fatal("array returned with an error")
				}
				return
			}
			if rerr != nil || verr != nil {
				t.Fatalf("EvaluateRow %v, Evaluate %v", rerr, verr)
			}
			defer arr.Release()
			if got := show(rv); got != c.want {
				t.Fatalf("EvaluateRow = %s, want %s", got, c.want)
			}
			if got := show(resultValue(arr, 0, bs.Type())); got != c.want {
				t.Fatalf("Evaluate = %s, want %s", got, c.want)
			}
		})
	}
}

func TestBindScalarTypeErrors(t *testing.T) {
	sc := semSchema()
	cases := []struct{ expr, want string }{
		{"s + 1", "cannot evaluate s + 1: string is not a number (use CAST)"},
		{"dt + 1", "date is not a number"},
		{"-s", "string is not a number"},
		{"ok * 2", "boolean is not a number"},
		{"CAST(dt AS int)", "date cannot be cast to int"},
		{"CAST(i AS date)", "int cannot be cast to date"},
		{"CAST(bin AS int)", "binary cannot be cast to int"},
		{"CASE WHEN i > 1 THEN 1 ELSE 'x' END", "branches of types int and string have no common type"},
		{"CASE WHEN i > 1 THEN dt ELSE ok END", "no common type"},
		{"i > 1", "a predicate is not a value"},
		{"nosuch + 1", `unknown column "nosuch"`},
		{"CASE WHEN nosuch > 1 THEN 1 END", `unknown column "nosuch"`},
		{"CASE WHEN s > 1 THEN 1 END", "cannot compare"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			e, err := ParseScalar(c.expr)
			if err != nil {
				if e, err = Parse(c.expr); err != nil { // a predicate
					t.Fatal(err)
				}
			}
			_, err = BindScalar(e, sc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if !errors.Is(err, ErrType) && !errors.Is(err, ErrUnknownColumn) {
				t.Fatalf("%v wraps neither ErrType nor ErrUnknownColumn", err)
			}
		})
	}
	if _, err := BindScalar(nil, sc); !errors.Is(err, ErrInvalidExpr) {
		t.Fatalf("nil expression: %v", err)
	}
	if _, err := BindScalar(Add(Col("i"), Lit(value.Int64(1))), nil); !errors.Is(err, ErrInvalidExpr) {
		t.Fatalf("nil schema: %v", err)
	}
}

// ---- the property test: vectorised Evaluate against the row oracle ----

var castTargets = []arrow.DataType{dtBool, dtInt8, dtInt16, dtInt32, dtInt64, dtFloat32, dtFloat64,
	&arrow.Decimal128Type{Precision: 5, Scale: 2}, &arrow.Decimal128Type{Precision: 38, Scale: 0},
	&arrow.Decimal128Type{Precision: 20, Scale: 10}, dtString, dtBinary, dtDate, dtTimestamp, dtTimestampNTZ}

func randomScalarLiteral(r *rand.Rand) Expr {
	switch r.IntN(10) {
	case 0:
		return Lit(value.Null())
	case 1:
		return Lit(value.Int64([]int64{0, 1, -1, 2, 127, 128, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}[r.IntN(10)]))
	case 2:
		return Lit(value.Decimal(decimal128.FromI64(int64(r.IntN(20001)-10000)), 6, []int32{0, 2, 4}[r.IntN(3)]))
	case 3:
		return Lit(value.Float64([]float64{0, 0.5, -2.5, 1e300, math.NaN(), math.Inf(1), 0.1}[r.IntN(7)]))
	case 5:
		// A wide decimal: up to 38 random digits at a random scale, so that products and
		// quotients need Spark's 38-digit rounding and results overflow.
		p := int32(20 + r.IntN(19))
		digits := make([]byte, p)
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		u, _ := new(big.Int).SetString(string(digits), 10)
		if r.IntN(2) == 0 {
			u.Neg(u)
		}
		return Lit(value.Decimal(decimal128.FromBigInt(u), p, int32(r.IntN(int(p)+1))))
	case 4:
		return Lit(value.String([]string{"", "12", " -7 ", "1.5", "x", "true", "2024-01-31", "2024-01-31 12:00:00", "NaN", "1e2"}[r.IntN(10)]))
	}
	return Lit(value.Int64(int64(r.IntN(21) - 10)))
}

func randomScalar(r *rand.Rand, cols []leafCol, depth int) Expr {
	if depth <= 0 || r.IntN(4) == 0 {
		if r.IntN(3) == 0 {
			return randomScalarLiteral(r)
		}
		return &ColumnRef{Path: cols[r.IntN(len(cols))].path}
	}
	sub := func() Expr { return randomScalar(r, cols, depth-1) }
	switch r.IntN(9) {
	case 0, 1, 2:
		return &ArithExpr{Op: ArithOp(1 + r.IntN(5)), Left: sub(), Right: sub()}
	case 3:
		return Neg(sub())
	case 4, 5:
		return Cast(sub(), castTargets[r.IntN(len(castTargets))])
	case 6:
		return &ConcatExpr{Args: []Expr{sub(), sub()}, Pipe: r.IntN(2) == 0}
	default:
		c := &CaseExpr{}
		for range 1 + r.IntN(2) {
			c.Whens = append(c.Whens, WhenClause{Cond: randomPredicate(r, cols, 1), Value: sub()})
		}
		if r.IntN(2) == 0 {
			c.Else = sub()
		}
		return c
	}
}

// randomSelection selects rows with probability p; nil (every row) sometimes.
func randomSelection(r *rand.Rand, n int) *Selection {
	if r.IntN(3) == 0 {
		return nil
	}
	s := NewSelection(n, false)
	p := r.Float64()
	for i := range n {
		if r.Float64() < p {
			s.words[i>>6] |= 1 << (uint(i) & 63)
		}
	}
	return s
}

var evalSentinels = []error{ErrOverflow, ErrDivideByZero, ErrInvalidCast, ErrInexact, ErrNotNullable}

func sentinelOf(err error) error {
	for _, s := range evalSentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// TestScalarEvaluateMatchesRowOracle: random scalar expressions over random batches
// (NULLs, extremes, sliced batches, random selections): the vectorised Evaluate returns
// exactly the row oracle's value for every selected row and NULL elsewhere, and fails
// exactly when the oracle fails for a selected row, reporting such a row with the same
// cause. Arrow memory is checked: nothing is left allocated.
func TestScalarEvaluateMatchesRowOracle(t *testing.T) {
	sc := evalSchema()
	cols := leafColumns(sc)
	r := rand.New(rand.NewPCG(3, 4))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := randomRows(r, sc, 200)
	rec := buildRecord(mem, sc, rows)
	defer rec.Release()
	sliced := rec.NewSlice(5, 180)
	defer sliced.Release()
	n := propertyRounds(3000, 600)
	bound, failed := 0, 0
	for k := 0; k < n; k++ {
		e := randomScalar(r, cols, 3)
		bs, err := BindScalar(e, sc)
		if err != nil {
			if !errors.Is(err, ErrType) {
				t.Fatalf("BindScalar(%s): unexpected error %v", e, err)
			}
			continue
		}
		bound++
		for _, b := range []arrow.RecordBatch{rec, sliced} {
			nr := int(b.NumRows())
			sel := randomSelection(r, nr)
			arr, verr := bs.Evaluate(b, sel, mem)
			oracleFails := map[int]error{}
			for i := range nr {
				if sel != nil && !sel.Contains(i) {
					continue
				}
				vals, err := bs.RowValues(b, i)
				if err != nil {
					t.Fatal(err)
				}
				want, oerr := bs.EvaluateRow(vals)
				if oerr != nil {
					if sentinelOf(oerr) == nil {
						t.Fatalf("%s row %d: oracle error without a sentinel: %v", e, i, oerr)
					}
					oracleFails[i] = oerr
					continue
				}
				if verr != nil {
					continue
				}
				got := resultValue(arr, i, bs.Type())
				if !sameValue(got, want) {
					t.Fatalf("%s (bound %s) row %d %v: Evaluate = %s, oracle = %s", e, bs, i, vals, show(got), show(want))
				}
			}
			if verr != nil {
				failed++
				var ee *EvalError
				if !errors.As(verr, &ee) {
					t.Fatalf("%s: Evaluate error %v is not an *EvalError", e, verr)
				}
				oerr, ok := oracleFails[ee.Row]
				if !ok {
					t.Fatalf("%s (bound %s): Evaluate fails at row %d (%v), the oracle does not", e, bs, ee.Row, verr)
				}
				if sentinelOf(oerr) != sentinelOf(verr) {
					t.Fatalf("%s row %d: Evaluate %v, oracle %v", e, ee.Row, verr, oerr)
				}
				continue
			}
			if len(oracleFails) > 0 {
				t.Fatalf("%s (bound %s): the oracle fails (%v) but Evaluate does not", e, bs, oracleFails)
			}
			for i := range nr {
				if sel != nil && !sel.Contains(i) && !resultValue(arr, i, bs.Type()).IsNull() {
					t.Fatalf("%s: unselected row %d is not NULL", e, i)
				}
			}
			if !arrow.TypeEqual(arr.DataType(), bs.Type()) || arr.Len() != nr {
				t.Fatalf("%s: result %s of %d rows, want %s of %d", e, arr.DataType(), arr.Len(), bs.Type(), nr)
			}
			arr.Release()
		}
	}
	if bound < n/4 {
		t.Fatalf("only %d of %d random expressions bound: the generator is too weak", bound, n)
	}
	t.Logf("%d of %d random expressions bound; %d evaluations failed like the oracle", bound, n, failed)
}

// sameValue is identity of results: NULL = NULL, floats bit-for-bit up to NaN payloads
// (so -0.0 differs from 0.0), decimals by value and scale.
func sameValue(a, b value.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case value.KindNull:
		return true
	case value.KindFloat64:
		x, y := a.AsFloat64(), b.AsFloat64()
		return (math.IsNaN(x) && math.IsNaN(y)) || math.Float64bits(x) == math.Float64bits(y)
	case value.KindDecimal:
		u1, _, s1 := a.AsDecimal()
		u2, _, s2 := b.AsDecimal()
		return s1 == s2 && u1 == u2
	}
	return value.Equal(a, b)
}

func TestDecimalRoundingHelpers(t *testing.T) {
	r := func(s string) *big.Rat { x, _ := new(big.Rat).SetString(s); return x }
	for _, c := range []struct {
		in     string
		digits int
		want   string
	}{
		{"2/3", 5, "0.66667"}, {"-2/3", 5, "-0.66667"}, {"123456", 3, "123000"}, {"123500", 3, "124000"},
		{"-123500", 3, "-124000"}, {"0.00012345", 2, "0.00012"}, {"99.96", 3, "100.0"}, {"0", 3, "0"},
	} {
		got := roundSignificant(r(c.in), c.digits)
		if got.Cmp(r(c.want)) != 0 {
			t.Errorf("roundSignificant(%s, %d) = %s, want %s", c.in, c.digits, got.FloatString(8), c.want)
		}
	}
	for _, c := range []struct{ num, den, want int64 }{{5, 2, 3}, {-5, 2, -3}, {4, 3, 1}, {-4, 3, -1}, {7, 2, 4}} {
		if got := divHalfUp(big.NewInt(c.num), big.NewInt(c.den)); got.Int64() != c.want {
			t.Errorf("divHalfUp(%d, %d) = %d, want %d", c.num, c.den, got, c.want)
		}
	}
	for _, c := range []struct {
		x    string
		want int
	}{{"0", 1}, {"9", 1}, {"10", 2}, {"-999", 3}, {"1000000000000000000000", 22}, {"99999999999999999999999999999999999999", 38}} {
		x, _ := new(big.Int).SetString(c.x, 10)
		if got := decDigits(x); got != c.want {
			t.Errorf("decDigits(%s) = %d, want %d", c.x, got, c.want)
		}
	}
}

func TestIntArithOverflowEdges(t *testing.T) {
	for _, c := range []struct {
		op   ArithOp
		x, y int64
		ok   bool
	}{
		{OpMul, math.MinInt64, -1, false}, {OpMul, -1, math.MinInt64, false}, {OpMul, math.MinInt64, 1, true},
		{OpMul, 1 << 32, 1 << 31, false}, {OpMul, 1 << 31, 1 << 31, true}, {OpMul, -(1 << 31), 1 << 32, true},
		{OpAdd, math.MaxInt64, 1, false}, {OpSub, math.MinInt64, 1, false}, {OpSub, 0, math.MinInt64, false},
		{OpMod, math.MinInt64, -1, true},
	} {
		_, err := intArith(c.op, c.x, c.y, dtInt64)
		if (err == nil) != c.ok {
			t.Errorf("%d %s %d: err %v, want ok=%v", c.x, c.op, c.y, err, c.ok)
		}
	}
}

var _ = fmt.Sprint
var _ = array.NewNull
