package expr

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// vec is an evaluated scalar operand: one value per row of a batch, column at a time.
// Which slice holds the values depends on the type family: i for integers, booleans
// (0/1), dates (days) and timestamps (micros); f for floats (float32 values kept
// rounded to float32); d for decimals (unscaled, at the type's scale); s for strings
// and binary. valid has bit i set when row i is not NULL (nil: every row is valid).
// Values of NULL rows and of rows outside the evaluation mask are unspecified.
type vec struct {
	t     arrow.DataType
	n     int
	valid []uint64
	i     []int64
	f     []float64
	d     []decimal128.Num
	s     []string
}

func newVec(t arrow.DataType, n int) *vec {
	v := &vec{t: t, n: n}
	switch kindOf(t) {
	case tkBool, tkInt, tkDate, tkTimestamp, tkTimestampNTZ:
		v.i = make([]int64, n)
	case tkFloat:
		v.f = make([]float64, n)
	case tkDecimal:
		v.d = make([]decimal128.Num, n)
	case tkString, tkBinary:
		v.s = make([]string, n)
	case tkNull:
		v.valid = make([]uint64, (n+63)/64)
	}
	return v
}

func bitAt(w []uint64, i int) bool { return w == nil || w[i>>6]&(1<<(uint(i)&63)) != 0 }

func setBit(w []uint64, i int)   { w[i>>6] |= 1 << (uint(i) & 63) }
func clearBit(w []uint64, i int) { w[i>>6] &^= 1 << (uint(i) & 63) }

// scalarCtx carries the batch being evaluated: the leaf arrays and validity of every
// bound column (shared with the predicate evaluator, for CASE conditions).
type scalarCtx struct {
	n  int
	ec *evalCtx
}

// Evaluate computes the expression for the rows of rec selected by sel (nil: every
// row) and returns them as an array of Type() with one entry per row of rec; rows not
// selected are NULL. Errors (overflow, division by zero, invalid casts) are raised only
// for selected rows, so an UPDATE's SET values are computed exactly for the rows its
// WHERE selects (as Spark's If(condition, value, column) does); the first failing row
// is reported as an *EvalError. rec must have the schema the expression was bound to
// (at least the columns it reads, at the same positions); it is neither retained nor
// released. The caller releases the result. Memory comes from mem (nil: the default
// allocator). Evaluate is safe for concurrent use.
func (s *BoundScalar) Evaluate(rec arrow.RecordBatch, sel *Selection, mem memory.Allocator) (arrow.Array, error) {
	v, err := s.evaluate(rec, sel)
	if err != nil {
		return nil, err
	}
	var mask []uint64
	if sel != nil {
		mask = sel.words
	}
	return vecToArray(v, s.Type(), mask, mem)
}

func (s *BoundScalar) evaluate(rec arrow.RecordBatch, sel *Selection) (*vec, error) {
	if s == nil || rec == nil {
		return nil, fmt.Errorf("%w: nil expression or record", ErrInvalidExpr)
	}
	n := int(rec.NumRows())
	if sel != nil && sel.Len() != n {
		return nil, fmt.Errorf("%w: selection of %d rows for a batch of %d", ErrSchemaMismatch, sel.Len(), n)
	}
	ec, err := newEvalCtx(rec, s.cols)
	if err != nil {
		return nil, err
	}
	ec.scalar = true // CASE conditions may hold scalar leaves (BindExpression)
	var mask []uint64
	if sel != nil {
		mask = sel.words
	}
	return s.root.evalVec(&scalarCtx{n: n, ec: ec}, mask)
}

// ---- leaves ----

func (n *colNode) evalVec(c *scalarCtx, _ []uint64) (*vec, error) {
	arr := c.ec.arrs[n.col.Ordinal]
	v := arrayToVec(arr, n.col.Type)
	v.valid = c.ec.valid[n.col.Ordinal]
	return v, nil
}

// arrayToVec copies an array's values into a vec (validity is the caller's).
func arrayToVec(arr arrow.Array, t arrow.DataType) *vec {
	n := arr.Len()
	v := &vec{t: t, n: n}
	switch a := arr.(type) {
	case *array.Int8:
		v.i = widen(a.Int8Values())
	case *array.Int16:
		v.i = widen(a.Int16Values())
	case *array.Int32:
		v.i = widen(a.Int32Values())
	case *array.Int64:
		v.i = append([]int64(nil), a.Int64Values()...)
	case *array.Date32:
		v.i = widen(a.Date32Values())
	case *array.Timestamp:
		v.i = widen(a.TimestampValues())
	case *array.Boolean:
		v.i = make([]int64, n)
		for i := range n {
			if a.Value(i) {
				v.i[i] = 1
			}
		}
	case *array.Float32:
		v.f = make([]float64, n)
		for i, x := range a.Float32Values() {
			v.f[i] = float64(x)
		}
	case *array.Float64:
		v.f = append([]float64(nil), a.Float64Values()...)
	case *array.Decimal128:
		v.d = append([]decimal128.Num(nil), a.Values()...)
	case *array.String:
		v.s = make([]string, n)
		for i := range n {
			v.s[i] = a.Value(i)
		}
	case *array.LargeString:
		v.s = make([]string, n)
		for i := range n {
			v.s[i] = a.Value(i)
		}
	case *array.Binary:
		v.s = make([]string, n)
		for i := range n {
			v.s[i] = string(a.Value(i))
		}
	case *array.LargeBinary:
		v.s = make([]string, n)
		for i := range n {
			v.s[i] = string(a.Value(i))
		}
	}
	return v
}

func widen[T integer](xs []T) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func (n *litNode) evalVec(c *scalarCtx, _ []uint64) (*vec, error) {
	v := newVec(n.t, c.n)
	if n.v.IsNull() {
		v.valid = make([]uint64, (c.n+63)/64)
		return v, nil
	}
	if c.n == 0 {
		return v, nil
	}
	setValue(v, 0, n.v)
	switch {
	case v.i != nil:
		fill(v.i, v.i[0])
	case v.f != nil:
		fill(v.f, v.f[0])
	case v.d != nil:
		fill(v.d, v.d[0])
	case v.s != nil:
		fill(v.s, v.s[0])
	}
	return v, nil
}

func fill[T any](xs []T, x T) {
	for i := range xs {
		xs[i] = x
	}
}

// valueAt reads row i of v as a value (the row must be valid).
func valueAt(v *vec, i int) value.Value {
	switch kindOf(v.t) {
	case tkBool:
		return value.Bool(v.i[i] != 0)
	case tkInt:
		return value.Int64(v.i[i])
	case tkFloat:
		return value.Float64(v.f[i])
	case tkDecimal:
		d := v.t.(*arrow.Decimal128Type)
		return value.Decimal(v.d[i], d.Precision, d.Scale)
	case tkString:
		return value.String(v.s[i])
	case tkBinary:
		return value.Binary([]byte(v.s[i]))
	case tkDate:
		return value.Date(v.i[i])
	case tkTimestamp:
		return value.Timestamp(v.i[i])
	case tkTimestampNTZ:
		return value.TimestampNTZ(v.i[i])
	}
	return value.Null()
}

// setValue stores a non-null value of v's type family at row i.
func setValue(v *vec, i int, x value.Value) {
	switch kindOf(v.t) {
	case tkBool:
		v.i[i] = 0
		if x.AsBool() {
			v.i[i] = 1
		}
	case tkInt, tkDate, tkTimestamp, tkTimestampNTZ:
		v.i[i] = x.AsInt64()
	case tkFloat:
		v.f[i] = x.AsFloat64()
	case tkDecimal:
		v.d[i], _, _ = x.AsDecimal()
	case tkString, tkBinary:
		v.s[i] = x.AsString()
	}
}

// ---- arithmetic ----

func evalErr(row int, text string, err error) error {
	return &EvalError{Row: row, Expr: text, Err: err}
}

func (n *arithNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	l, err := n.l.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	// As in Spark, the right operand is not evaluated (and cannot fail) where the left
	// one is NULL.
	r, err := n.r.evalVec(c, andValidity(mask, l.valid, c.n))
	if err != nil {
		return nil, err
	}
	out := newVec(n.t, c.n)
	out.valid = andValidity(l.valid, r.valid, c.n)
	if kindOf(n.t) == tkNull {
		return out, nil
	}
	var bad int
	switch kindOf(n.t) {
	case tkInt:
		bad, err = intArithVec(n.op, l.i, r.i, out.i, out.valid, mask, n.t)
	case tkFloat:
		bad, err = floatArithVec(n.op, l.f, r.f, out.f, out.valid, mask, n.t)
	case tkDecimal:
		ls, rs := l.t.(*arrow.Decimal128Type).Scale, r.t.(*arrow.Decimal128Type).Scale
		res := n.t.(*arrow.Decimal128Type)
		for i := range c.n {
			if !bitAt(out.valid, i) {
				continue
			}
			var e error
			if out.d[i], e = decArith(n.op, l.d[i], ls, r.d[i], rs, res); e != nil && bitAt(mask, i) {
				bad, err = i, e
				break
			}
		}
	}
	if err != nil {
		return nil, evalErr(bad, n.text(), err)
	}
	return out, nil
}

// intArithVec computes out = x op y for every row, with overflow and zero-divisor
// checks; it returns the first failing row that is valid and in mask. Rows that fail
// outside them get 0.
func intArithVec(op ArithOp, x, y, out []int64, valid, mask []uint64, t arrow.DataType) (int, error) {
	lo, hi := intBounds(t)
	failAt := func(i int) bool { return bitAt(valid, i) && bitAt(mask, i) }
	switch op {
	case OpAdd, OpSub:
		narrow := lo != math.MinInt64
		for i := range out {
			a, b := x[i], y[i]
			var z int64
			var ovf bool
			if op == OpAdd {
				z = a + b
				ovf = (a^z)&(b^z) < 0
			} else {
				z = a - b
				ovf = (a^b)&(a^z) < 0
			}
			if ovf || (narrow && (z < lo || z > hi)) {
				if failAt(i) {
					_, err := intArith(op, a, b, t)
					return i, err
				}
				z = 0
			}
			out[i] = z
		}
	default:
		for i := range out {
			z, err := intArith(op, x[i], y[i], t)
			if err != nil && failAt(i) {
				return i, err
			}
			out[i] = z
		}
	}
	return 0, nil
}

// floatArithVec computes out = x op y (rounded to float32 for float), failing on a
// zero divisor for / and % in a valid row of mask.
func floatArithVec(op ArithOp, x, y, out []float64, valid, mask []uint64, t arrow.DataType) (int, error) {
	single := !isDouble(t)
	switch op {
	case OpAdd:
		for i := range out {
			out[i] = x[i] + y[i]
		}
	case OpSub:
		for i := range out {
			out[i] = x[i] - y[i]
		}
	case OpMul:
		for i := range out {
			out[i] = x[i] * y[i]
		}
	default:
		for i := range out {
			if y[i] == 0 {
				if bitAt(valid, i) && bitAt(mask, i) {
					return i, ErrDivideByZero
				}
				out[i] = 0
				continue
			}
			if op == OpDiv {
				out[i] = x[i] / y[i]
			} else {
				out[i] = math.Mod(x[i], y[i])
			}
		}
	}
	if single {
		for i, z := range out {
			out[i] = float64(float32(z))
		}
	}
	return 0, nil
}

// intArith computes x op y in the integer type t, failing on overflow and on a zero
// divisor (% only: / never has integer operands).
func intArith(op ArithOp, x, y int64, t arrow.DataType) (int64, error) {
	var z int64
	ok := true
	switch op {
	case OpAdd:
		z = x + y
		ok = (x^z)&(y^z) >= 0
	case OpSub:
		z = x - y
		ok = (x^y)&(x^z) >= 0
	case OpMul:
		switch {
		case x == 0 || y == 0:
			z = 0
		case (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64):
			ok = false
		default:
			z = x * y
			ok = z/y == x
		}
	case OpMod:
		if y == 0 {
			return 0, ErrDivideByZero
		}
		z = x % y // Go, like Java, truncates; MinInt64 % -1 == 0
	}
	lo, hi := intBounds(t)
	if !ok || z < lo || z > hi {
		return 0, fmt.Errorf("%w: %d %s %d overflows %s", ErrOverflow, x, op, y, TypeName(t))
	}
	return z, nil
}

// floatArith is floatArithVec for one pair (the row oracle's definition).
func floatArith(op ArithOp, x, y float64, t arrow.DataType) (float64, error) {
	var z float64
	switch op {
	case OpAdd:
		z = x + y
	case OpSub:
		z = x - y
	case OpMul:
		z = x * y
	case OpDiv:
		if y == 0 {
			return 0, ErrDivideByZero
		}
		z = x / y
	case OpMod:
		if y == 0 {
			return 0, ErrDivideByZero
		}
		z = math.Mod(x, y)
	}
	return toFloat(z, t), nil
}

// pow10Table holds 10^0 .. 10^18 as int64.
var pow10Table = func() (t [19]int64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

var bigPow10 sync.Map // int32 -> *big.Int (read-only once stored)

// pow10Big returns 10^n as a shared big.Int; callers must not modify it.
func pow10Big(n int32) *big.Int {
	if v, ok := bigPow10.Load(n); ok {
		return v.(*big.Int)
	}
	v := pow10(n)
	bigPow10.Store(n, v)
	return v
}

// int64Of returns d as an int64 when it fits.
func int64Of(d decimal128.Num) (int64, bool) {
	hi, lo := d.HighBits(), d.LowBits()
	if (hi == 0 && lo <= math.MaxInt64) || (hi == -1 && lo > math.MaxInt64) {
		return int64(lo), true
	}
	return 0, false
}

// mulPow10 returns x * 10^k when it fits in int64.
func mulPow10(x int64, k int32) (int64, bool) {
	if k == 0 {
		return x, true
	}
	if k > 18 {
		return 0, false
	}
	z, err := intArith(OpMul, x, pow10Table[k], dtInt64)
	return z, err == nil
}

// fitsInt64Precision reports |z| < 10^p.
func fitsInt64Precision(z int64, p int32) bool {
	if p > 18 {
		return true
	}
	return z > -pow10Table[p] && z < pow10Table[p]
}

// decArith computes x op y for decimals at scales xs and ys into the result type res
// (see BindScalar): an int64 fast path where no rounding is needed, otherwise exact
// big-integer arithmetic on the unscaled values. (The row oracle computes the same with
// rationals; the property test checks they agree.)
func decArith(op ArithOp, x decimal128.Num, xs int32, y decimal128.Num, ys int32, res *arrow.Decimal128Type) (decimal128.Num, error) {
	if a, ok := int64Of(x); ok {
		if b, ok := int64Of(y); ok {
			if z, ok := decArithFast(op, a, xs, b, ys, res); ok {
				return decimal128.FromI64(z), nil
			}
		}
	}
	X, Y := x.BigInt(), y.BigInt()
	var u *big.Int
	var us int32
	switch op {
	case OpAdd, OpSub, OpMod:
		m := max(xs, ys)
		X.Mul(X, pow10Big(m-xs))
		Y.Mul(Y, pow10Big(m-ys))
		u, us = new(big.Int), m
		switch op {
		case OpAdd:
			u.Add(X, Y)
		case OpSub:
			u.Sub(X, Y)
		default:
			if Y.Sign() == 0 {
				return decimal128.Num{}, ErrDivideByZero
			}
			u.Rem(X, Y)
		}
	case OpMul:
		u, us = roundDigits(new(big.Int).Mul(X, Y), xs+ys, 38)
	case OpDiv:
		if Y.Sign() == 0 {
			return decimal128.Num{}, ErrDivideByZero
		}
		// x/y = (X * 10^ys) / (Y * 10^xs); compute at least 40 significant digits of
		// the quotient, truncated, then round HALF_UP to 38 (the digits dropped are
		// exact, and HALF_UP depends only on the first of them).
		N := new(big.Int).Mul(X, pow10Big(ys))
		D := new(big.Int).Mul(Y, pow10Big(xs))
		t := int32(max(0, 41-(decDigits(N)-decDigits(D))))
		N.Mul(N, pow10Big(t))
		u, us = roundDigits(N.Quo(N, D), t, 38)
	}
	if res.Scale >= us {
		u.Mul(u, pow10Big(res.Scale-us))
	} else {
		u = divHalfUp(u, pow10Big(us-res.Scale))
	}
	if new(big.Int).Abs(u).Cmp(pow10Big(res.Precision)) >= 0 {
		return decimal128.Num{}, fmt.Errorf("%w: %s %s %s does not fit %s", ErrOverflow,
			x.ToString(xs), op, y.ToString(ys), TypeName(res))
	}
	return decimal128.FromBigInt(u), nil
}

func decArithFast(op ArithOp, a int64, as int32, b int64, bs int32, res *arrow.Decimal128Type) (int64, bool) {
	switch op {
	case OpAdd, OpSub:
		m := max(as, bs)
		if res.Scale != m {
			return 0, false
		}
		a2, ok1 := mulPow10(a, m-as)
		b2, ok2 := mulPow10(b, m-bs)
		if !ok1 || !ok2 {
			return 0, false
		}
		z, err := intArith(op, a2, b2, dtInt64)
		return z, err == nil && fitsInt64Precision(z, res.Precision)
	case OpMul:
		if res.Scale != as+bs {
			return 0, false
		}
		z, err := intArith(OpMul, a, b, dtInt64)
		return z, err == nil && fitsInt64Precision(z, res.Precision)
	case OpDiv:
		return decDivFast(a, as, b, bs, res)
	}
	return 0, false
}

// decDivFast divides with 128-bit integers when the quotient at the result scale fits
// 64 bits. Spark rounds a quotient to 38 significant digits and then to the result
// scale; that double rounding differs from rounding once only when the discarded part
// lies just below one half (within 10^-(38-d) of it, d the quotient's digits), and
// those cases fall back to decArith's exact path.
func decDivFast(a int64, as int32, b int64, bs int32, res *arrow.Decimal128Type) (int64, bool) {
	if b == 0 || a == math.MinInt64 || b == math.MinInt64 {
		return 0, false
	}
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = uint64(-a)
	}
	if b < 0 {
		ub = uint64(-b)
	}
	// |a|/10^as / (|b|/10^bs) at scale S = |a| * 10^(S+bs-as) / |b|.
	k := res.Scale + bs - as
	var hi, lo uint64
	switch {
	case k >= 0 && k <= 18:
		hi, lo = bits.Mul64(ua, uint64(pow10Table[k]))
	case k < 0 && k >= -18:
		h, l := bits.Mul64(ub, uint64(pow10Table[-k]))
		if h != 0 {
			return 0, false
		}
		ub, lo = l, ua
	default:
		return 0, false
	}
	if hi >= ub {
		return 0, false // the quotient needs more than 64 bits
	}
	q, r := bits.Div64(hi, lo, ub)
	if q == 0 || q > math.MaxInt64-1 {
		return 0, false
	}
	if r >= ub-r {
		q++ // HALF_UP
	} else if gap := 38 - decDigitsU64(q); gap < 19 {
		// Below one half: make sure it is not within 10^-gap of it.
		h, l := bits.Mul64(ub-2*r, uint64(pow10Table[gap]))
		if h == 0 && l <= ub {
			return 0, false
		}
	}
	z := int64(q)
	if neg {
		z = -z
	}
	return z, fitsInt64Precision(z, res.Precision)
}

func decDigitsU64(x uint64) int {
	d := 1
	for x >= 10 {
		x /= 10
		d++
	}
	return d
}

// decDigits is the number of decimal digits of |x| (1 for 0).
func decDigits(x *big.Int) int {
	if x.Sign() == 0 {
		return 1
	}
	a := new(big.Int).Abs(x)
	d := int(float64(a.BitLen()-1)*0.30102999566398119) + 1
	for d > 1 && a.Cmp(pow10Big(int32(d-1))) < 0 {
		d--
	}
	for a.Cmp(pow10Big(int32(d))) >= 0 {
		d++
	}
	return d
}

// roundDigits rounds the unscaled u at scale us HALF_UP to at most digits significant
// digits, returning the new unscaled value and scale.
func roundDigits(u *big.Int, us int32, digits int) (*big.Int, int32) {
	d := decDigits(u)
	if d <= digits {
		return u, us
	}
	drop := int32(d - digits)
	return divHalfUp(u, pow10Big(drop)), us - drop
}

func (n *negNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	v, err := n.v.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	out := newVec(n.t, c.n)
	out.valid = v.valid
	switch kindOf(n.t) {
	case tkInt:
		lo, _ := intBounds(n.t)
		for i, x := range v.i {
			if x == lo && bitAt(v.valid, i) && bitAt(mask, i) {
				return nil, evalErr(i, n.text(), fmt.Errorf("%w: -(%d) overflows %s", ErrOverflow, lo, TypeName(n.t)))
			}
			out.i[i] = -x
		}
	case tkFloat:
		for i, x := range v.f {
			out.f[i] = -x
		}
	case tkDecimal:
		for i, x := range v.d {
			out.d[i] = x.Negate()
		}
	}
	return out, nil
}

// ---- conversions ----

func (n *castNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	v, err := n.v.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	from := n.v.dataType()
	out := newVec(n.t, c.n)
	out.valid = v.valid
	if kindOf(from) == tkNull {
		out.valid = make([]uint64, (c.n+63)/64)
		return out, nil
	}
	fk, tk := kindOf(from), kindOf(n.t)
	fail := func(i int, err error) error {
		if bitAt(v.valid, i) && bitAt(mask, i) {
			return evalErr(i, n.text(), err)
		}
		return nil
	}
	switch {
	case fk == tkInt && tk == tkInt, fk == tkBool && tk == tkInt:
		lo, hi := intBounds(n.t)
		for i, x := range v.i {
			if x < lo || x > hi {
				if err := fail(i, overflow(value.Int64(x), n.t)); err != nil {
					return nil, err
				}
			}
			out.i[i] = x
		}
	case fk == tkInt && tk == tkFloat:
		for i, x := range v.i {
			f := float64(x)
			if !isDouble(n.t) {
				f = float64(float32(x))
			}
			if n.exact && (f >= 0x1p63 || int64(f) != x) {
				if err := fail(i, inexact(value.Int64(x), n.t)); err != nil {
					return nil, err
				}
			}
			out.f[i] = f
		}
	case fk == tkFloat && tk == tkFloat:
		for i, x := range v.f {
			out.f[i] = toFloat(x, n.t)
		}
	case fk == tkInt && tk == tkDecimal:
		d := n.t.(*arrow.Decimal128Type)
		for i, x := range v.i {
			z, ok := mulPow10(x, d.Scale)
			if ok && fitsInt64Precision(z, d.Precision) {
				out.d[i] = decimal128.FromI64(z)
				continue
			}
			r, err := castValue(value.Int64(x), from, n.t, n.exact)
			if err != nil {
				if err := fail(i, err); err != nil {
					return nil, err
				}
				continue
			}
			out.d[i], _, _ = r.AsDecimal()
		}
	case fk == tkDecimal && tk == tkDecimal && n.t.(*arrow.Decimal128Type).Scale >= from.(*arrow.Decimal128Type).Scale:
		fd, td := from.(*arrow.Decimal128Type), n.t.(*arrow.Decimal128Type)
		for i, x := range v.d {
			if a, ok := int64Of(x); ok {
				if z, ok := mulPow10(a, td.Scale-fd.Scale); ok && fitsInt64Precision(z, td.Precision) {
					out.d[i] = decimal128.FromI64(z)
					continue
				}
			}
			u := x.BigInt()
			u.Mul(u, pow10Big(td.Scale-fd.Scale))
			if !fitsPrecision(u, td.Precision) {
				if err := fail(i, overflow(value.Decimal(x, fd.Precision, fd.Scale), n.t)); err != nil {
					return nil, err
				}
				continue
			}
			out.d[i] = decimal128.FromBigInt(u)
		}
	case tk == tkString && (fk == tkString || fk == tkBinary), tk == tkBinary:
		copy(out.s, v.s)
	case fk == tkInt && tk == tkString:
		for i, x := range v.i {
			if bitAt(v.valid, i) && bitAt(mask, i) {
				out.s[i] = strconv.FormatInt(x, 10)
			}
		}
	default:
		for i := range c.n {
			if !bitAt(v.valid, i) {
				continue
			}
			r, err := castValue(valueAt(v, i), from, n.t, n.exact)
			if err != nil {
				if err := fail(i, err); err != nil {
					return nil, err
				}
				continue
			}
			setValue(out, i, r)
		}
	}
	return out, nil
}

// ---- CASE and concat ----

func (n *caseNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	words := (c.n + 63) / 64
	out := newVec(n.t, c.n)
	out.valid = make([]uint64, words)
	remaining := make([]uint64, words)
	if mask == nil {
		fillWords(remaining, c.n, true)
	} else {
		copy(remaining, mask)
	}
	take := func(src scalarNode, rows []uint64) error {
		if allZero(rows) {
			return nil
		}
		v, err := src.evalVec(c, rows)
		if err != nil {
			return err
		}
		for w, word := range rows {
			for word != 0 {
				i := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				if !bitAt(v.valid, i) {
					continue
				}
				setBit(out.valid, i)
				copyRow(out, v, i)
			}
		}
		return nil
	}
	cond := make([]uint64, words)
	outer := c.ec.mask
	defer func() { c.ec.mask = outer }()
	for k, p := range n.conds {
		if allZero(remaining) {
			break
		}
		c.ec.mask = append(c.ec.mask[:0:0], remaining...) // a condition is evaluated where no earlier one held
		if err := c.ec.eval(p, cond); err != nil {
			return nil, err
		}
		for w := range cond {
			cond[w] &= remaining[w]
			remaining[w] &^= cond[w]
		}
		if err := take(n.vals[k], cond); err != nil {
			return nil, err
		}
	}
	if n.els != nil {
		if err := take(n.els, remaining); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func copyRow(dst, src *vec, i int) {
	switch {
	case dst.i != nil:
		dst.i[i] = src.i[i]
	case dst.f != nil:
		dst.f[i] = src.f[i]
	case dst.d != nil:
		dst.d[i] = src.d[i]
	case dst.s != nil:
		dst.s[i] = src.s[i]
	}
}

func (n *concatNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	args := make([]*vec, len(n.args))
	var valid []uint64
	for k, a := range n.args {
		v, err := a.evalVec(c, mask)
		if err != nil {
			return nil, err
		}
		args[k] = v
		valid = andValidity(valid, v.valid, c.n)
	}
	out := newVec(n.t, c.n)
	out.valid = valid
	if kindOf(n.t) == tkNull {
		return out, nil
	}
	var sb strings.Builder
	for i := range c.n {
		if !bitAt(valid, i) || !bitAt(mask, i) {
			continue
		}
		sb.Reset()
		for _, a := range args {
			sb.WriteString(a.s[i])
		}
		out.s[i] = sb.String()
	}
	return out, nil
}

// ---- back to Arrow ----

// vecToArray builds an array of type t from v: row i is v's value when it is valid and
// selected by mask (nil: every row), NULL otherwise.
func vecToArray(v *vec, t arrow.DataType, mask []uint64, mem memory.Allocator) (arrow.Array, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := v.n
	ok := func(i int) bool { return bitAt(v.valid, i) && bitAt(mask, i) }
	if kindOf(t) == tkNull {
		return array.NewNull(n), nil
	}
	if arr := fixedWidthArray(v, t, mask, mem); arr != nil {
		return arr, nil
	}
	b := array.NewBuilder(mem, t)
	defer b.Release()
	b.Reserve(n)
	switch bb := b.(type) {
	case *array.Int8Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(int8(v.i[i]))
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Int16Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(int16(v.i[i]))
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Int32Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(int32(v.i[i]))
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Int64Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(v.i[i])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Date32Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(arrow.Date32(v.i[i]))
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.TimestampBuilder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(arrow.Timestamp(v.i[i]))
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.BooleanBuilder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(v.i[i] != 0)
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Float32Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(float32(v.f[i]))
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Float64Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(v.f[i])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Decimal128Builder:
		for i := range n {
			if ok(i) {
				bb.UnsafeAppend(v.d[i])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.StringBuilder:
		for i := range n {
			if ok(i) {
				bb.Append(v.s[i])
			} else {
				bb.AppendNull()
			}
		}
	case *array.LargeStringBuilder:
		for i := range n {
			if ok(i) {
				bb.Append(v.s[i])
			} else {
				bb.AppendNull()
			}
		}
	case *array.BinaryBuilder: // binary and large_binary
		for i := range n {
			if ok(i) {
				bb.AppendString(v.s[i])
			} else {
				bb.AppendNull()
			}
		}
	default:
		return nil, fmt.Errorf("%w: cannot build %s", ErrUnsupportedType, value.DisplayType(t))
	}
	return b.NewArray(), nil
}

// fixedWidthArray builds fixed-width arrays directly from v's values and validity
// (Arrow's validity bitmap is the little-endian bytes of the validity words), or
// returns nil for other types.
func fixedWidthArray(v *vec, t arrow.DataType, mask []uint64, mem memory.Allocator) arrow.Array {
	n := v.n
	var values []byte
	switch t.(type) {
	case *arrow.Int8Type:
		values = arrow.GetBytes(narrowInts[int8](v.i))
	case *arrow.Int16Type:
		values = arrow.GetBytes(narrowInts[int16](v.i))
	case *arrow.Int32Type:
		values = arrow.GetBytes(narrowInts[int32](v.i))
	case *arrow.Date32Type:
		values = arrow.GetBytes(narrowInts[arrow.Date32](v.i))
	case *arrow.Int64Type:
		values = arrow.GetBytes(v.i)
	case *arrow.TimestampType:
		values = arrow.GetBytes(narrowInts[arrow.Timestamp](v.i))
	case *arrow.Float64Type:
		values = arrow.GetBytes(v.f)
	case *arrow.Float32Type:
		f32 := make([]float32, n)
		for i, x := range v.f {
			f32[i] = float32(x)
		}
		values = arrow.GetBytes(f32)
	case *arrow.Decimal128Type:
		values = arrow.GetBytes(v.d)
	default:
		return nil
	}
	words := andValidity(v.valid, mask, n)
	var nullBuf *memory.Buffer
	nulls := 0
	if words != nil {
		nb := (n + 7) / 8
		nullBuf = memory.NewResizableBuffer(mem)
		nullBuf.Resize(nb)
		bm := nullBuf.Bytes()
		valid := 0
		for k := range nb {
			w := words[k/8]
			bm[k] = byte(w >> (8 * uint(k%8)))
		}
		for _, w := range words {
			valid += bits.OnesCount64(w)
		}
		nulls = n - valid
	}
	valBuf := memory.NewResizableBuffer(mem)
	valBuf.Resize(len(values))
	copy(valBuf.Bytes(), values)
	data := array.NewData(t, n, []*memory.Buffer{nullBuf, valBuf}, nil, nulls, 0)
	defer data.Release()
	if nullBuf != nil {
		nullBuf.Release()
	}
	valBuf.Release()
	return array.MakeFromData(data)
}

func narrowInts[T ~int8 | ~int16 | ~int32 | ~int64](xs []int64) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = T(x)
	}
	return out
}
