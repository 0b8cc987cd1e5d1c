package expr

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

// TypeError reports operands that cannot be compared, e.g.
// `expr: cannot compare column "price" (decimal(10,2)) with 'abc'`.
type TypeError struct {
	Column     string // column name as written in the filter
	ColumnType string // Delta type name
	Operand    string // the other operand, rendered
	Reason     string // optional detail
}

// Error renders the message.
func (e *TypeError) Error() string {
	s := fmt.Sprintf("expr: cannot compare column %q (%s) with %s", e.Column, e.ColumnType, e.Operand)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Unwrap returns ErrType.
func (e *TypeError) Unwrap() error { return ErrType }

// UnknownColumnError names a column the schema does not have and lists close
// candidates.
type UnknownColumnError struct {
	Column     string
	Candidates []string
	// DoubleQuoted is set when the source wrote the name in double quotes, which
	// delimit column names (as in SQL), not strings: the message then says so.
	DoubleQuoted bool
	// Name is the unknown name itself (the last path element), unquoted.
	Name string
}

// Error renders the message.
func (e *UnknownColumnError) Error() string {
	s := fmt.Sprintf("expr: unknown column %q", e.Column)
	if len(e.Candidates) > 0 {
		q := make([]string, len(e.Candidates))
		for i, c := range e.Candidates {
			q[i] = fmt.Sprintf("%q", c)
		}
		s += " (did you mean " + strings.Join(q, ", ") + "?)"
	}
	if e.DoubleQuoted {
		// Perhaps a string literal in the wrong quotes, perhaps a misspelt column
		// (then the candidates above say so): name both readings.
		s += fmt.Sprintf("; double quotes delimit column names: for the string, use single quotes (%s)", value.String(e.Name).String())
	}
	return s
}

// Unwrap returns ErrUnknownColumn.
func (e *UnknownColumnError) Unwrap() error { return ErrUnknownColumn }

// Bind resolves e against schema (logical column names) and returns the bound,
// normalised predicate.
//
// Column names resolve case-insensitively (Delta is case-insensitive) but an exact
// match wins; several case-insensitive matches without an exact one is an error.
//
// NOT is pushed down to the leaves (De Morgan, operator negation, IN <-> NOT IN,
// LIKE <-> NOT LIKE, IS NULL <-> IS NOT NULL); this is exact under SQL three-valued
// logic and Spark's total float order. BETWEEN becomes >= AND <=.
//
// Literals are coerced to the column's type exactly (SQL semantics: the comparison
// is decided on the mathematical values, never by rounding the literal):
//   - a literal outside the column's range (`byte_col = 300`) makes `=` FALSE,
//     `<>` TRUE for every non-null row, and `<`, `>` one of the two by direction;
//   - a literal between two representable values (`d = 1.005` on decimal(5,2),
//     `int_col < 1.5`) makes `=` FALSE, `<>` IS NOT NULL, `d < 1.005` becomes
//     `d <= 1.00` and `d > 1.005` becomes `d >= 1.01`;
//   - number literals compare with float/double columns as float64 (Spark casts
//     both sides to double); a float literal NaN is greater than every number;
//   - strings are parsed for date, timestamp and numeric columns; DATE literals
//     compare with timestamps at midnight UTC; a TIMESTAMP literal without a zone
//     means UTC for timestamp columns and the wall clock for timestamp_ntz (which is
//     compared as if it were UTC either way).
//
// Supported column types: int8/16/32/64, float32/64, decimal128, utf8, large_utf8,
// binary, large_binary, bool, date32, timestamp[us] (with or without zone), and
// structs of these for nested paths.
func Bind(e Expr, schema *arrow.Schema) (*Bound, error) {
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrInvalidExpr)
	}
	b := &binder{schema: schema, byKey: map[string]*BoundColumn{}}
	root, err := b.bind(e, false)
	if err != nil {
		return nil, err
	}
	return &Bound{root: root, cols: b.cols, schema: schema, src: e}, nil
}

type binder struct {
	schema *arrow.Schema
	cols   []*BoundColumn
	byKey  map[string]*BoundColumn
	// general is set by BindCheck and BindExpression: operands may be scalar
	// expressions and predicates values (see bindGeneral).
	general bool
}

func (b *binder) bind(e Expr, neg bool) (Pred, error) {
	if b.general {
		if p, handled, err := b.bindGeneral(e, neg); handled {
			return p, err
		}
	}
	switch e := e.(type) {
	case nil:
		return nil, fmt.Errorf("%w: nil expression", ErrInvalidExpr)
	case Constant:
		return &ConstPred{Value: bool(e) != neg}, nil
	case *NotExpr:
		return b.bind(e.Term, !neg)
	case *AndExpr:
		ps, err := b.bindAll(e.Terms, neg)
		if err != nil {
			return nil, err
		}
		if neg {
			return orPreds(ps...), nil
		}
		return andPreds(ps...), nil
	case *OrExpr:
		ps, err := b.bindAll(e.Terms, neg)
		if err != nil {
			return nil, err
		}
		if neg {
			return andPreds(ps...), nil
		}
		return orPreds(ps...), nil
	case *Comparison:
		return b.bindComparison(e, neg)
	case *BetweenExpr:
		var x Expr = And(Ge(e.Value, e.Low), Le(e.Value, e.High))
		if e.Negated {
			x = Or(Lt(e.Value, e.Low), Gt(e.Value, e.High))
		}
		return b.bind(x, neg)
	case *InExpr:
		return b.bindIn(e, neg)
	case *IsNullExpr:
		isNeg := e.Negated != neg
		switch v := e.Value.(type) {
		case *ColumnRef:
			c, err := b.column(v)
			if err != nil {
				return nil, err
			}
			return &NullPred{Col: c, Negated: isNeg}, nil
		case *Literal:
			return &ConstPred{Value: v.Value.IsNull() != isNeg}, nil
		}
		return nil, fmt.Errorf("%w: IS NULL operand %s", ErrInvalidExpr, exprString(e.Value))
	case *LikeExpr:
		return b.bindLike(e, neg)
	case *ColumnRef, *Literal:
		return nil, fmt.Errorf("%w: %s is an operand, not a predicate (compare it, e.g. %s = TRUE)", ErrInvalidExpr, e.String(), e.String())
	}
	return nil, fmt.Errorf("%w: unsupported node %T", ErrInvalidExpr, e)
}

func (b *binder) bindAll(es []Expr, neg bool) ([]Pred, error) {
	out := make([]Pred, 0, len(es))
	for _, t := range es {
		p, err := b.bind(t, neg)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (b *binder) bindComparison(e *Comparison, neg bool) (Pred, error) {
	if e.Op < OpEq || e.Op > OpNullSafeEq {
		return nil, fmt.Errorf("%w: unknown operator %d", ErrInvalidExpr, e.Op)
	}
	left, right, op := e.Left, e.Right, e.Op
	if _, ok := left.(*Literal); ok {
		if _, ok := right.(*ColumnRef); ok {
			left, right, op = right, left, op.Flip()
		}
	}
	switch l := left.(type) {
	case *ColumnRef:
		c, err := b.column(l)
		if err != nil {
			return nil, err
		}
		switch r := right.(type) {
		case *ColumnRef:
			rc, err := b.column(r)
			if err != nil {
				return nil, err
			}
			return b.bindColCol(c, rc, op, neg, l, r)
		case *Literal:
			return b.bindColLit(c, op, r.Value, neg, l)
		}
	case *Literal:
		if r, ok := right.(*Literal); ok {
			return bindLitLit(l.Value, op, r.Value, neg)
		}
	}
	return nil, fmt.Errorf("%w: comparison operands must be columns or literals: %s", ErrInvalidExpr, e.String())
}

func (b *binder) bindColCol(l, r *BoundColumn, op Op, neg bool, le, re *ColumnRef) (Pred, error) {
	if l.Kind != r.Kind {
		return nil, &TypeError{Column: le.String(), ColumnType: l.TypeName, Operand: fmt.Sprintf("column %q (%s)", re.String(), r.TypeName)}
	}
	if op == OpNullSafeEq {
		if !neg {
			return &ColCmpPred{Left: l, Right: r, Op: OpNullSafeEq}, nil
		}
		// NOT (l <=> r): exactly one is NULL, or both non-null and different.
		return orPreds(
			andPreds(&NullPred{Col: l}, &NullPred{Col: r, Negated: true}),
			andPreds(&NullPred{Col: l, Negated: true}, &NullPred{Col: r}),
			&ColCmpPred{Left: l, Right: r, Op: OpNe}), nil
	}
	if neg {
		op = op.Negate()
	}
	return &ColCmpPred{Left: l, Right: r, Op: op}, nil
}

func bindLitLit(l value.Value, op Op, r value.Value, neg bool) (Pred, error) {
	if op == OpNullSafeEq && (l.IsNull() || r.IsNull()) {
		return &ConstPred{Value: (l.IsNull() && r.IsNull()) != neg}, nil
	}
	if l.IsNull() || r.IsNull() {
		return &ConstPred{Value: false}, nil // NULL either way
	}
	c, ok := value.Compare(l, r)
	if !ok {
		return nil, &TypeError{Column: FormatValue(l), ColumnType: l.Kind().String(), Operand: FormatValue(r), Reason: "literals of different types"}
	}
	return &ConstPred{Value: opHolds(op, c) != neg}, nil
}

func (b *binder) bindColLit(c *BoundColumn, op Op, lit value.Value, neg bool, ref *ColumnRef) (Pred, error) {
	if op == OpNullSafeEq {
		if lit.IsNull() {
			return &NullPred{Col: c, Negated: neg}, nil
		}
		if !neg {
			op = OpEq
		} else {
			eq, err := b.bindColLit(c, OpNe, lit, false, ref)
			if err != nil {
				return nil, err
			}
			return orPreds(&NullPred{Col: c}, eq), nil
		}
	} else if neg {
		op = op.Negate()
	}
	if lit.IsNull() {
		return &ConstPred{Value: false}, nil
	}
	co, err := coerce(c, lit, ref)
	if err != nil {
		return nil, err
	}
	return co.pred(c, op), nil
}

func (b *binder) bindIn(e *InExpr, neg bool) (Pred, error) {
	isNeg := e.Negated != neg
	ref, ok := e.Value.(*ColumnRef)
	if !ok {
		if l, ok := e.Value.(*Literal); ok {
			// constant IN: evaluate as a disjunction of equalities
			terms := make([]Expr, len(e.List))
			for i, x := range e.List {
				terms[i] = Eq(l, x)
			}
			var x Expr = Or(terms...)
			if e.Negated {
				x = Not(x)
			}
			return b.bind(x, neg)
		}
		return nil, fmt.Errorf("%w: IN needs a column or literal on the left: %s", ErrInvalidExpr, e.String())
	}
	c, err := b.column(ref)
	if err != nil {
		return nil, err
	}
	var vals []value.Value
	for _, x := range e.List {
		l, ok := x.(*Literal)
		if !ok {
			return nil, fmt.Errorf("%w: IN list items must be literals: %s", ErrInvalidExpr, exprString(x))
		}
		if l.Value.IsNull() {
			if isNeg {
				return &ConstPred{Value: false}, nil // x NOT IN (..., NULL) is never TRUE
			}
			continue
		}
		co, err := coerce(c, l.Value, ref)
		if err != nil {
			return nil, err
		}
		if co.exact {
			vals = append(vals, co.v)
		}
	}
	slices.SortFunc(vals, func(a, b value.Value) int { x, _ := value.Compare(a, b); return x })
	vals = slices.CompactFunc(vals, func(a, b value.Value) bool { x, _ := value.Compare(a, b); return x == 0 })
	switch {
	case len(vals) == 0 && isNeg:
		return &NullPred{Col: c, Negated: true}, nil
	case len(vals) == 0:
		return &ConstPred{Value: false}, nil
	case len(vals) == 1:
		op := OpEq
		if isNeg {
			op = OpNe
		}
		return &CmpPred{Col: c, Op: op, Value: vals[0]}, nil
	}
	return &InPred{Col: c, Values: vals, Negated: isNeg}, nil
}

func (b *binder) bindLike(e *LikeExpr, neg bool) (Pred, error) {
	isNeg := e.Negated != neg
	lp, err := compileLike(e.Pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidExpr, err)
	}
	switch v := e.Value.(type) {
	case *ColumnRef:
		c, err := b.column(v)
		if err != nil {
			return nil, err
		}
		if c.Kind != value.KindString {
			return nil, &TypeError{Column: v.String(), ColumnType: c.TypeName, Operand: "LIKE " + value.String(e.Pattern).String(), Reason: "LIKE needs a string column"}
		}
		if lp.IsPrefixOnly() && lp.Prefix() == "" { // '%' matches every non-null string
			if isNeg {
				return &ConstPred{Value: false}, nil
			}
			return &NullPred{Col: c, Negated: true}, nil
		}
		return &LikePred{Col: c, Pattern: lp, Negated: isNeg}, nil
	case *Literal:
		if v.Value.IsNull() {
			return &ConstPred{Value: false}, nil
		}
		if v.Value.Kind() != value.KindString {
			return nil, fmt.Errorf("%w: LIKE needs a string operand: %s", ErrType, e.String())
		}
		return &ConstPred{Value: lp.Match(v.Value.AsString()) != isNeg}, nil
	}
	return nil, fmt.Errorf("%w: LIKE operand %s", ErrInvalidExpr, exprString(e.Value))
}

// ---- column resolution ----

func (b *binder) column(ref *ColumnRef) (*BoundColumn, error) {
	if len(ref.Path) == 0 {
		return nil, fmt.Errorf("%w: empty column reference", ErrInvalidExpr)
	}
	fields := b.schema.Fields()
	var names []string
	var idx []int
	var dt arrow.DataType
	for depth, name := range ref.Path {
		i, err := pickField(fields, name, ref)
		if err != nil {
			return nil, err
		}
		f := fields[i]
		names = append(names, f.Name)
		idx = append(idx, i)
		dt = f.Type
		if depth < len(ref.Path)-1 {
			st, ok := f.Type.(*arrow.StructType)
			if !ok {
				return nil, fmt.Errorf("%w: column %q: %q is not a struct", ErrUnknownColumn, ref.String(), f.Name)
			}
			fields = st.Fields()
		}
	}
	key := strings.Join(names, "\x00")
	if c := b.byKey[key]; c != nil {
		return c, nil
	}
	c := &BoundColumn{Ordinal: len(b.cols), Path: names, FieldIndices: idx, Type: dt}
	if err := describeType(c); err != nil {
		return nil, fmt.Errorf("%w: column %q has type %s", ErrUnsupportedType, ref.String(), unsupportedTypeName(dt))
	}
	b.cols = append(b.cols, c)
	b.byKey[key] = c
	return c, nil
}

func pickField(fields []arrow.Field, name string, ref *ColumnRef) (int, error) {
	ci := -1
	n := 0
	for i, f := range fields {
		if f.Name == name {
			return i, nil
		}
		if strings.EqualFold(f.Name, name) {
			ci = i
			n++
		}
	}
	if n == 1 {
		return ci, nil
	}
	if n > 1 {
		return 0, fmt.Errorf("%w: %q matches several fields case-insensitively", ErrAmbiguousColumn, ref.String())
	}
	var cands []string
	for _, f := range fields {
		d := editDistance(strings.ToLower(f.Name), strings.ToLower(name))
		if ref.DoubleQuoted {
			// More likely a string in the wrong quotes ("JP"): only a near-certain
			// misspelling (one edit per four characters) is worth naming.
			if d*4 <= len(name) {
				cands = append(cands, f.Name)
			}
			continue
		}
		if d <= 2 || strings.Contains(strings.ToLower(f.Name), strings.ToLower(name)) {
			cands = append(cands, f.Name)
		}
	}
	return 0, &UnknownColumnError{Column: ref.String(), Candidates: cands, DoubleQuoted: ref.DoubleQuoted, Name: name}
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unsupportedTypeName names a type describeType refuses: its Delta name, with the
// Arrow spelling when that is what is refused (a timestamp in another unit than
// microseconds reads as timestamp or timestamp_ntz, which are supported).
func unsupportedTypeName(t arrow.DataType) string {
	if ts, ok := t.(*arrow.TimestampType); ok && ts.Unit != arrow.Microsecond {
		return value.DisplayType(t) + " (Arrow " + t.String() + ")"
	}
	return value.DisplayType(t)
}

// describeType fills Kind, Precision, Scale and TypeName from c.Type.
func describeType(c *BoundColumn) error {
	switch t := c.Type.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		c.Kind = value.KindInt64
	case *arrow.Float32Type, *arrow.Float64Type:
		c.Kind = value.KindFloat64
	case *arrow.Decimal128Type:
		c.Kind, c.Precision, c.Scale = value.KindDecimal, t.Precision, t.Scale
	case *arrow.StringType, *arrow.LargeStringType:
		c.Kind = value.KindString
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		c.Kind = value.KindBinary
	case *arrow.BooleanType:
		c.Kind = value.KindBool
	case *arrow.Date32Type:
		c.Kind = value.KindDate
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return ErrUnsupportedType
		}
		c.Kind = value.KindTimestampNTZ
		if t.TimeZone != "" {
			c.Kind = value.KindTimestamp
		}
	default:
		return ErrUnsupportedType
	}
	c.TypeName = value.DisplayType(c.Type)
	return nil
}

// ---- literal coercion ----

// coerced is a literal mapped into a column's domain: either an exact domain value,
// or the neighbours below (lo) and above (hi) it when the literal falls between
// domain values or outside the domain.
type coerced struct {
	exact        bool
	v            value.Value
	lo, hi       value.Value
	hasLo, hasHi bool
}

func (co coerced) pred(c *BoundColumn, op Op) Pred {
	if co.exact {
		return &CmpPred{Col: c, Op: op, Value: co.v}
	}
	switch op {
	case OpEq:
		return &ConstPred{Value: false}
	case OpNe:
		return &NullPred{Col: c, Negated: true}
	case OpLt, OpLe:
		if !co.hasLo {
			return &ConstPred{Value: false}
		}
		return &CmpPred{Col: c, Op: OpLe, Value: co.lo}
	default: // OpGt, OpGe
		if !co.hasHi {
			return &ConstPred{Value: false}
		}
		return &CmpPred{Col: c, Op: OpGe, Value: co.hi}
	}
}

// num is an exact numeric literal: a rational, or NaN / ±Inf.
type num struct {
	r      *big.Rat
	nan    bool
	inf    int // +1, -1
	isReal bool
}

func numOf(v value.Value) (num, bool) {
	switch v.Kind() {
	case value.KindInt64:
		return num{r: new(big.Rat).SetInt64(v.AsInt64()), isReal: true}, true
	case value.KindDecimal:
		u, _, s := v.AsDecimal()
		r := new(big.Rat).SetFrac(u.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil))
		return num{r: r, isReal: true}, true
	case value.KindFloat64:
		return numOfFloat(v.AsFloat64()), true
	case value.KindString:
		if f, ok := parseFloatText(v.AsString()); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return numOfFloat(f), true
		}
		if nv, ok := parseNumber(strings.TrimSpace(v.AsString())); ok {
			return numOf(nv)
		}
	}
	return num{}, false
}

func numOfFloat(f float64) num {
	switch {
	case math.IsNaN(f):
		return num{nan: true}
	case math.IsInf(f, 1):
		return num{inf: 1}
	case math.IsInf(f, -1):
		return num{inf: -1}
	}
	return num{r: new(big.Rat).SetFloat64(f), isReal: true}
}

func (n num) float() float64 {
	switch {
	case n.nan:
		return math.NaN()
	case n.inf != 0:
		return math.Inf(n.inf)
	}
	f, _ := n.r.Float64()
	return f
}

// parseFloatText parses a DOUBLE literal text: a number, NaN, Infinity, -Infinity.
func parseFloatText(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "nan":
		return math.NaN(), true
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), true
	case "-infinity", "-inf":
		return math.Inf(-1), true
	}
	f, _, err := big.ParseFloat(t, 10, 53, big.ToNearestEven)
	if err != nil || t == "" {
		return 0, false
	}
	x, _ := f.Float64()
	return x, true
}

// intRanges are the integer columns' ranges by arrow.Type.
var intRanges = map[arrow.Type][2]int64{
	arrow.INT8: {math.MinInt8, math.MaxInt8}, arrow.INT16: {math.MinInt16, math.MaxInt16},
	arrow.INT32: {math.MinInt32, math.MaxInt32}, arrow.INT64: {math.MinInt64, math.MaxInt64},
}

// intDomain maps a numeric literal into the integers of [lo, hi]: exact when it is
// an integer in range, otherwise the neighbours below and above it (if any).
func intDomain(n num, lo, hi *big.Int, mk func(*big.Int) value.Value) coerced {
	switch {
	case n.nan || n.inf > 0:
		return coerced{lo: mk(hi), hasLo: true}
	case n.inf < 0:
		return coerced{hi: mk(lo), hasHi: true}
	}
	fl := new(big.Int).Div(n.r.Num(), n.r.Denom()) // Euclidean: floor for positive denominators
	exact := n.r.IsInt()
	ce := new(big.Int).Set(fl)
	if !exact {
		ce.Add(ce, big.NewInt(1))
	}
	if exact && fl.Cmp(lo) >= 0 && fl.Cmp(hi) <= 0 {
		return coerced{exact: true, v: mk(fl)}
	}
	var co coerced
	if fl.Cmp(lo) >= 0 { // some domain value <= floor
		co.lo, co.hasLo = mk(bigMin(fl, hi)), true
	}
	if ce.Cmp(hi) <= 0 {
		co.hi, co.hasHi = mk(bigMax(ce, lo)), true
	}
	return co
}

func bigMin(a, b *big.Int) *big.Int {
	if a.Cmp(b) < 0 {
		return a
	}
	return b
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) > 0 {
		return a
	}
	return b
}

func operandText(v value.Value) string { return FormatValue(v) }

func coerce(c *BoundColumn, lit value.Value, ref *ColumnRef) (coerced, error) {
	fail := func(reason string) (coerced, error) {
		return coerced{}, &TypeError{Column: ref.String(), ColumnType: c.TypeName, Operand: operandText(lit), Reason: reason}
	}
	switch c.Kind {
	case value.KindInt64:
		n, ok := numOf(lit)
		if !ok {
			return fail("")
		}
		r := intRanges[c.Type.ID()]
		return intDomain(n, big.NewInt(r[0]), big.NewInt(r[1]), func(x *big.Int) value.Value { return value.Int64(x.Int64()) }), nil
	case value.KindFloat64:
		n, ok := numOf(lit)
		if !ok {
			return fail("")
		}
		return coerced{exact: true, v: value.Float64(n.float())}, nil
	case value.KindDecimal:
		n, ok := numOf(lit)
		if !ok {
			return fail("")
		}
		if n.isReal {
			n.r = new(big.Rat).Mul(n.r, new(big.Rat).SetInt(pow10(c.Scale)))
		}
		lim := new(big.Int).Sub(pow10(c.Precision), big.NewInt(1))
		p, s := c.Precision, c.Scale
		return intDomain(n, new(big.Int).Neg(lim), lim, func(x *big.Int) value.Value {
			return value.Decimal(decimal128.FromBigInt(x), p, s)
		}), nil
	case value.KindString:
		if lit.Kind() != value.KindString {
			return fail("")
		}
		return coerced{exact: true, v: lit}, nil
	case value.KindBinary:
		if lit.Kind() != value.KindBinary && lit.Kind() != value.KindString {
			return fail("")
		}
		return coerced{exact: true, v: value.Binary(lit.AsBytes())}, nil
	case value.KindBool:
		if lit.Kind() != value.KindBool {
			return fail("")
		}
		return coerced{exact: true, v: lit}, nil
	case value.KindDate:
		var micros int64
		switch lit.Kind() {
		case value.KindDate:
			return coerced{exact: true, v: lit}, nil
		case value.KindString:
			d, err := ParseDate(lit.AsString())
			if err != nil {
				return fail("not a date (YYYY-MM-DD)")
			}
			return coerced{exact: true, v: value.Date(d)}, nil
		case value.KindTimestamp, value.KindTimestampNTZ:
			micros = lit.AsInt64()
		default:
			return fail("")
		}
		n := num{r: new(big.Rat).SetFrac(big.NewInt(micros), big.NewInt(microsPerDay)), isReal: true}
		return intDomain(n, big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32), func(x *big.Int) value.Value { return value.Date(x.Int64()) }), nil
	case value.KindTimestamp, value.KindTimestampNTZ:
		mk := value.Timestamp
		if c.Kind == value.KindTimestampNTZ {
			mk = value.TimestampNTZ
		}
		switch lit.Kind() {
		case value.KindTimestamp, value.KindTimestampNTZ:
			return coerced{exact: true, v: mk(lit.AsInt64())}, nil
		case value.KindDate:
			d := lit.AsInt64()
			if d > math.MaxInt64/microsPerDay || d < math.MinInt64/microsPerDay {
				return fail("date out of the timestamp range")
			}
			return coerced{exact: true, v: mk(d * microsPerDay)}, nil
		case value.KindString:
			us, _, err := ParseTimestamp(lit.AsString())
			if err != nil {
				return fail("not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM])")
			}
			return coerced{exact: true, v: mk(us)}, nil
		}
		return fail("")
	}
	return fail("")
}

func pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
