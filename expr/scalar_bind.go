package expr

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// ScalarTypeError reports a scalar expression whose operands do not have types the
// operation accepts, e.g. `expr: cannot evaluate name + 1: string is not a number (use CAST)`.
type ScalarTypeError struct {
	// Expr is the offending (sub)expression, rendered.
	Expr string
	// Reason says what is wrong.
	Reason string
}

// Error renders the message.
func (e *ScalarTypeError) Error() string {
	return fmt.Sprintf("expr: cannot evaluate %s: %s", e.Expr, e.Reason)
}

// Unwrap returns ErrType.
func (e *ScalarTypeError) Unwrap() error { return ErrType }

// BoundScalar is a scalar expression bound to an Arrow schema: columns resolved, every
// operation typed, implicit conversions made explicit. It is immutable and safe for
// concurrent use.
type BoundScalar struct {
	root   scalarNode
	cols   []*BoundColumn
	schema *arrow.Schema
	src    Expr
}

// Type returns the type of the expression's values (arrow.Null for an untyped NULL).
func (s *BoundScalar) Type() arrow.DataType { return s.root.dataType() }

// Columns returns the columns the expression reads, in first-use order; a column's
// Ordinal is its index here (and in the row EvaluateRow takes). Do not modify.
func (s *BoundScalar) Columns() []*BoundColumn { return s.cols }

// Schema returns the schema the expression was bound to.
func (s *BoundScalar) Schema() *arrow.Schema { return s.schema }

// Source returns the expression that was bound.
func (s *BoundScalar) Source() Expr { return s.src }

// String renders the bound expression with its implicit conversions as CASTs.
func (s *BoundScalar) String() string { return s.root.String() }

// EvaluateRow is the reference (row-at-a-time) evaluator, the oracle the vectorised
// Evaluate is tested against: it returns the expression's value for one row given per
// bound column (row[c.Ordinal], value.Null() for NULL; ints as KindInt64, floats as
// KindFloat64, decimals with the column's precision and scale, ...), or the error
// Evaluate reports for that row (without the row index). It is slow; use Evaluate for
// batches. REQUIRES: len(row) == len(s.Columns()).
func (s *BoundScalar) EvaluateRow(row []value.Value) (value.Value, error) {
	return s.root.evalRow(row)
}

// scalarNode is a node of a bound scalar expression. Implementations: *colNode,
// *litNode, *arithNode, *negNode, *castNode, *caseNode, *concatNode.
type scalarNode interface {
	dataType() arrow.DataType
	String() string
	evalRow(row []value.Value) (value.Value, error)
	evalVec(c *scalarCtx, mask []uint64) (*vec, error)
}

type colNode struct{ col *BoundColumn }

type litNode struct {
	v value.Value
	t arrow.DataType
}

// The nodes keep their source expression (src) for error messages and print it only
// when an error needs it: printing it while binding costs the size of the subtree at
// every node, quadratic in the expression (issue 31: 126 s to bind 8,000 terms).

type arithNode struct {
	op   ArithOp
	l, r scalarNode // converted to the operation's operand types
	t    arrow.DataType
	src  Expr // the source expression, for errors
}

type negNode struct {
	v   scalarNode
	t   arrow.DataType
	src Expr
}

// castNode converts v to t: CAST semantics, or exact assignment semantics.
type castNode struct {
	v     scalarNode
	t     arrow.DataType
	exact bool
	src   Expr // the source CAST, nil for implicit conversions
}

// text returns the source expression for an error message.
func (n *arithNode) text() string { return n.src.String() }
func (n *negNode) text() string   { return n.src.String() }

// text returns the source CAST, or for an implicit conversion the converted value.
func (n *castNode) text() string {
	if n.src != nil {
		return n.src.String()
	}
	return n.v.String()
}

type caseNode struct {
	conds []Pred
	vals  []scalarNode // converted to t
	els   scalarNode   // converted to t; nil: NULL
	t     arrow.DataType
}

type concatNode struct {
	args []scalarNode // converted to t
	t    arrow.DataType
}

func (n *colNode) dataType() arrow.DataType    { return n.col.Type }
func (n *litNode) dataType() arrow.DataType    { return n.t }
func (n *arithNode) dataType() arrow.DataType  { return n.t }
func (n *negNode) dataType() arrow.DataType    { return n.t }
func (n *castNode) dataType() arrow.DataType   { return n.t }
func (n *caseNode) dataType() arrow.DataType   { return n.t }
func (n *concatNode) dataType() arrow.DataType { return n.t }

func (n *colNode) String() string { return n.col.Name() }
func (n *litNode) String() string {
	if n.v.IsNull() {
		return "NULL"
	}
	return FormatValue(n.v)
}
func (n *arithNode) String() string {
	return "(" + n.l.String() + " " + n.op.String() + " " + n.r.String() + ")"
}
func (n *negNode) String() string { return "-(" + n.v.String() + ")" }
func (n *castNode) String() string {
	return "CAST(" + n.v.String() + " AS " + TypeName(n.t) + ")"
}
func (n *caseNode) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for i, c := range n.conds {
		b.WriteString(" WHEN " + c.String() + " THEN " + n.vals[i].String())
	}
	if n.els != nil {
		b.WriteString(" ELSE " + n.els.String())
	}
	b.WriteString(" END")
	return b.String()
}
func (n *concatNode) String() string {
	parts := make([]string, len(n.args))
	for i, a := range n.args {
		parts[i] = a.String()
	}
	return "concat(" + strings.Join(parts, ", ") + ")"
}

// BindScalar resolves e against schema and types it. Columns resolve as in Bind
// (case-insensitively, exact match first; struct fields by path).
//
// Semantics follow Spark SQL with ANSI mode on (spark.sql.ansi.enabled, the default of
// Spark 4): an error rather than a wrong or NULL value.
//
//   - Literals: integers are integer (long beyond 32 bits, decimal beyond 64), `1.50` is
//     decimal(3,2), `1e3` is double, strings are string, X'..' binary, DATE/TIMESTAMP
//     literals date/timestamp/timestamp_ntz, NULL has no type until used.
//   - + - * %: integers of different widths widen to the wider (byte + byte is byte);
//     an integer with a decimal becomes decimal(3|5|10|20, 0); decimal results follow
//     Spark's DecimalPrecision rules (add: max scale, one more integer digit; multiply:
//     p1+p2+1, s1+s2; remainder: max scale), bounded to precision 38 by giving up scale
//     down to 6; float with a decimal or double is double, float with an integer float.
//   - /: integers and floats divide as double (7 / 2 = 3.5); with a decimal operand the
//     quotient is decimal, scale max(6, s1+p2+1).
//   - Integer overflow, decimal overflow of the result precision and division or
//     remainder by zero (also for doubles) fail the row with ErrOverflow or
//     ErrDivideByZero. Float overflow gives ±Infinity (IEEE), as in Spark.
//     Decimal products and quotients are rounded HALF_UP to 38 significant digits, then
//     HALF_UP to the result scale, as Spark's Decimal does; remainders are exact.
//   - % has the sign of the dividend; unary minus fails on the most negative integer.
//   - NULL propagates through every operation and cast; CASE conditions that are NULL
//     do not select; concat is NULL when any argument is.
//   - || and concat: strings, or binary when every argument is binary; other arguments
//     are converted as CAST(x AS STRING) does (doubles as Java prints them: 1.0E10).
//   - CAST follows Spark's ANSI cast: numbers to integers truncate toward zero and fail
//     out of range (NaN fails), to decimals round HALF_UP (doubles via their shortest
//     decimal form) and fail out of range; strings are parsed (surrounding spaces
//     ignored) and fail when unparseable; dates, timestamps and timestamp_ntz convert
//     at midnight / in UTC; numbers never convert to dates or timestamps.
//   - Strings are not numbers: `s + 1` is a type error (use CAST), unlike Spark's
//     implicit string promotion.
//   - CASE branches convert to their common type: integers widen, integer and decimal
//     to a decimal holding both, anything with a double to double, date with timestamp
//     to timestamp, NULL to the other; other mixes are type errors.
//
// What is not supported: predicates as values (write CASE WHEN p THEN TRUE ELSE FALSE
// END), date arithmetic and intervals, function calls other than concat.
func BindScalar(e Expr, schema *arrow.Schema) (*BoundScalar, error) {
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrInvalidExpr)
	}
	b := &binder{schema: schema, byKey: map[string]*BoundColumn{}}
	root, err := b.bindScalar(e)
	if err != nil {
		return nil, err
	}
	return &BoundScalar{root: root, cols: b.cols, schema: schema, src: e}, nil
}

// literalType is the type a literal has in a scalar expression.
func literalType(v value.Value) arrow.DataType {
	switch v.Kind() {
	case value.KindBool:
		return dtBool
	case value.KindInt64:
		if x := v.AsInt64(); x >= -1<<31 && x < 1<<31 {
			return dtInt32
		}
		return dtInt64
	case value.KindFloat64:
		return dtFloat64
	case value.KindDecimal:
		_, p, s := v.AsDecimal()
		return &arrow.Decimal128Type{Precision: p, Scale: s}
	case value.KindString:
		return dtString
	case value.KindBinary:
		return dtBinary
	case value.KindDate:
		return dtDate
	case value.KindTimestamp:
		return dtTimestamp
	case value.KindTimestampNTZ:
		return dtTimestampNTZ
	}
	return dtNull
}

// literalDecimalType returns decimal(digits, 0) for an integer literal n (of type t),
// t otherwise.
func literalDecimalType(n scalarNode, t arrow.DataType) arrow.DataType {
	l, ok := n.(*litNode)
	if !ok || kindOf(t) != tkInt || l.v.IsNull() {
		return t
	}
	x := l.v.AsInt64()
	d := int32(len(strconv.FormatInt(x, 10)))
	if x < 0 {
		d--
	}
	return &arrow.Decimal128Type{Precision: d, Scale: 0}
}

// convert wraps n in a conversion to t unless it already has that type. Conversions
// made by binding (widening) never fail; exact marks assignment conversions.
func convert(n scalarNode, t arrow.DataType, exact bool) scalarNode {
	if arrow.TypeEqual(n.dataType(), t) {
		return n
	}
	if l, ok := n.(*litNode); ok && !exact {
		// Fold the conversion of a literal (bind-time widening never fails; a failure
		// here is reported by evaluation as for any other value).
		if l.v.IsNull() {
			return &litNode{v: value.Null(), t: t}
		}
		if v, err := castValue(l.v, l.t, t, false); err == nil {
			return &litNode{v: v, t: t}
		}
	}
	return &castNode{v: n, t: t, exact: exact}
}

func (b *binder) bindScalar(e Expr) (scalarNode, error) {
	switch e := e.(type) {
	case nil:
		return nil, fmt.Errorf("%w: nil expression", ErrInvalidExpr)
	case *ColumnRef:
		c, err := b.column(e)
		if err != nil {
			return nil, err
		}
		return &colNode{col: c}, nil
	case *Literal:
		return &litNode{v: e.Value, t: literalType(e.Value)}, nil
	case Constant:
		return &litNode{v: value.Bool(bool(e)), t: dtBool}, nil
	case *ArithExpr:
		if e.Op < OpAdd || e.Op > OpMod {
			return nil, fmt.Errorf("%w: unknown arithmetic operator %d", ErrInvalidExpr, e.Op)
		}
		l, err := b.bindScalar(e.Left)
		if err != nil {
			return nil, err
		}
		r, err := b.bindScalar(e.Right)
		if err != nil {
			return nil, err
		}
		ltyp, rtyp := l.dataType(), r.dataType()
		// Spark types an integer literal next to a decimal with the literal's own digits
		// (DecimalType.fromLiteral): `d / 3` divides by a decimal(1,0).
		if kindOf(ltyp) == tkDecimal {
			rtyp = literalDecimalType(r, rtyp)
		}
		if kindOf(rtyp) == tkDecimal {
			ltyp = literalDecimalType(l, ltyp)
		}
		lt, rt, res, reason := arithTypes(e.Op, ltyp, rtyp)
		if reason != "" {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: reason}
		}
		return &arithNode{op: e.Op, l: convert(l, lt, false), r: convert(r, rt, false), t: res, src: e}, nil
	case *NegExpr:
		v, err := b.bindScalar(e.Value)
		if err != nil {
			return nil, err
		}
		t := v.dataType()
		if k := kindOf(t); !isNumeric(k) && k != tkNull {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: TypeName(t) + " is not a number"}
		}
		if l, ok := v.(*litNode); ok && kindOf(t) == tkNull {
			return l, nil
		}
		return &negNode{v: v, t: t, src: e}, nil
	case *CastExpr:
		v, err := b.bindScalar(e.Value)
		if err != nil {
			return nil, err
		}
		if e.Type == nil || kindOf(e.Type) == tkOther || kindOf(e.Type) == tkNull {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: fmt.Sprintf("cannot cast to %s", TypeName(e.Type))}
		}
		to := e.Type
		switch kindOf(to) { // canonical result types
		case tkString:
			to = dtString
		case tkBinary:
			to = dtBinary
		}
		if !castAllowed(v.dataType(), to) {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: fmt.Sprintf("%s cannot be cast to %s", TypeName(v.dataType()), TypeName(to))}
		}
		if arrow.TypeEqual(v.dataType(), to) {
			return v, nil
		}
		return &castNode{v: v, t: to, src: e}, nil
	case *CaseExpr:
		return b.bindCase(e)
	case *ConcatExpr:
		if len(e.Args) == 0 {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: "concat needs at least one argument"}
		}
		args := make([]scalarNode, len(e.Args))
		allBinary := true
		for i, a := range e.Args {
			n, err := b.bindScalar(a)
			if err != nil {
				return nil, err
			}
			k := kindOf(n.dataType())
			if k == tkOther {
				return nil, &ScalarTypeError{Expr: e.String(), Reason: TypeName(n.dataType()) + " cannot be concatenated"}
			}
			allBinary = allBinary && (k == tkBinary || k == tkNull)
			args[i] = n
		}
		t := dtString
		if allBinary {
			t = dtBinary
		}
		for i := range args {
			args[i] = convert(args[i], t, false)
		}
		return &concatNode{args: args, t: t}, nil
	case *Comparison, *BetweenExpr, *InExpr, *IsNullExpr, *LikeExpr, *AndExpr, *OrExpr, *NotExpr:
		if b.general {
			return b.bindPredicateValue(e)
		}
		return nil, &ScalarTypeError{Expr: e.String(), Reason: "a predicate is not a value here (write CASE WHEN ... THEN TRUE ELSE FALSE END)"}
	case *FuncExpr:
		return b.bindFunc(e)
	}
	return nil, fmt.Errorf("%w: unsupported node %T", ErrInvalidExpr, e)
}

func (b *binder) bindCase(e *CaseExpr) (scalarNode, error) {
	if len(e.Whens) == 0 {
		return nil, &ScalarTypeError{Expr: e.String(), Reason: "CASE needs at least one WHEN"}
	}
	n := &caseNode{}
	var branches []scalarNode
	for _, w := range e.Whens {
		p, err := b.bind(w.Cond, false)
		if err != nil {
			return nil, err
		}
		v, err := b.bindScalar(w.Value)
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, p)
		branches = append(branches, v)
	}
	if e.Else != nil {
		v, err := b.bindScalar(e.Else)
		if err != nil {
			return nil, err
		}
		branches = append(branches, v)
	}
	t := dtNull
	for _, v := range branches {
		c, ok := commonType(t, v.dataType())
		if !ok {
			return nil, &ScalarTypeError{Expr: e.String(), Reason: fmt.Sprintf("branches of types %s and %s have no common type (use CAST)",
				TypeName(t), TypeName(v.dataType()))}
		}
		t = c
	}
	for i := range branches {
		branches[i] = convert(branches[i], t, false)
	}
	n.vals = branches[:len(e.Whens)]
	if e.Else != nil {
		n.els = branches[len(e.Whens)]
	}
	n.t = t
	return n, nil
}

// ---- the row oracle ----

func (n *colNode) evalRow(row []value.Value) (value.Value, error) { return row[n.col.Ordinal], nil }

func (n *litNode) evalRow([]value.Value) (value.Value, error) { return n.v, nil }

func (n *arithNode) evalRow(row []value.Value) (value.Value, error) {
	l, err := n.l.evalRow(row)
	if err != nil || l.IsNull() {
		return l, err // a NULL left operand: the right one is not evaluated (Spark)
	}
	r, err := n.r.evalRow(row)
	if err != nil || r.IsNull() {
		return r, err
	}
	switch kindOf(n.t) {
	case tkInt:
		a, b := big.NewInt(l.AsInt64()), big.NewInt(r.AsInt64())
		var z big.Int
		switch n.op {
		case OpAdd:
			z.Add(a, b)
		case OpSub:
			z.Sub(a, b)
		case OpMul:
			z.Mul(a, b)
		case OpMod:
			if b.Sign() == 0 {
				return value.Value{}, ErrDivideByZero
			}
			z.Rem(a, b) // truncated: the sign of the dividend
		}
		lo, hi := intBounds(n.t)
		if !z.IsInt64() || z.Int64() < lo || z.Int64() > hi {
			return value.Value{}, fmt.Errorf("%w: %s %s %s overflows %s", ErrOverflow, FormatValue(l), n.op, FormatValue(r), TypeName(n.t))
		}
		return value.Int64(z.Int64()), nil
	case tkFloat:
		z, err := floatArith(n.op, l.AsFloat64(), r.AsFloat64(), n.t)
		if err != nil {
			return value.Value{}, err
		}
		return value.Float64(z), nil
	case tkDecimal:
		a, b := ratOf(l), ratOf(r)
		z := new(big.Rat)
		switch n.op {
		case OpAdd:
			z.Add(a, b)
		case OpSub:
			z.Sub(a, b)
		case OpMul:
			z = roundSignificant(z.Mul(a, b), 38)
		case OpDiv, OpMod:
			if b.Sign() == 0 {
				return value.Value{}, ErrDivideByZero
			}
			q := new(big.Rat).Quo(a, b)
			if n.op == OpDiv {
				z = roundSignificant(q, 38)
			} else {
				tq := new(big.Int).Quo(q.Num(), q.Denom()) // toward zero
				z.Sub(a, new(big.Rat).Mul(new(big.Rat).SetInt(tq), b))
			}
		}
		return decimalFromRat(z, n.t.(*arrow.Decimal128Type))
	}
	return value.Null(), nil // both operands NULL-typed
}

func (n *negNode) evalRow(row []value.Value) (value.Value, error) {
	v, err := n.v.evalRow(row)
	if err != nil || v.IsNull() {
		return v, err
	}
	switch kindOf(n.t) {
	case tkInt:
		lo, _ := intBounds(n.t)
		if v.AsInt64() == lo {
			return value.Value{}, fmt.Errorf("%w: -(%d) overflows %s", ErrOverflow, lo, TypeName(n.t))
		}
		return value.Int64(-v.AsInt64()), nil
	case tkFloat:
		return value.Float64(-v.AsFloat64()), nil
	case tkDecimal:
		u, p, s := v.AsDecimal()
		return value.Decimal(u.Negate(), p, s), nil
	}
	return value.Null(), nil
}

func (n *castNode) evalRow(row []value.Value) (value.Value, error) {
	v, err := n.v.evalRow(row)
	if err != nil || v.IsNull() {
		return v, err
	}
	return castValue(v, n.v.dataType(), n.t, n.exact)
}

func (n *caseNode) evalRow(row []value.Value) (value.Value, error) {
	for i, c := range n.conds {
		if c.EvalRow(row) {
			return n.vals[i].evalRow(row)
		}
	}
	if n.els != nil {
		return n.els.evalRow(row)
	}
	return value.Null(), nil
}

func (n *concatNode) evalRow(row []value.Value) (value.Value, error) {
	var sb strings.Builder
	null := false
	for _, a := range n.args { // every argument is evaluated, as in Spark
		v, err := a.evalRow(row)
		if err != nil {
			return value.Value{}, err
		}
		null = null || v.IsNull()
		sb.WriteString(v.AsString())
	}
	if null {
		return value.Null(), nil
	}
	if kindOf(n.t) == tkBinary {
		return value.Binary([]byte(sb.String())), nil
	}
	return value.String(sb.String()), nil
}
