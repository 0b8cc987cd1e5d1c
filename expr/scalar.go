package expr

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// Scalar expressions (the values of UPDATE ... SET col = expr) extend the AST with five
// node kinds next to *ColumnRef and *Literal: *ArithExpr, *NegExpr, *CastExpr,
// *CaseExpr and *ConcatExpr. They are parsed by ParseScalar and ParseAssignments, bound
// by BindScalar and BindAssignments, and evaluated over Arrow batches; see
// scalar_bind.go for their typing and semantics. Bind (predicates) does not accept them
// as comparison operands: skipping needs column-versus-literal predicates.

// ArithOp is an arithmetic operator.
type ArithOp uint8

// The arithmetic operators.
const (
	OpAdd ArithOp = iota + 1 // +
	OpSub                    // -
	OpMul                    // *
	OpDiv                    // /  (always fractional: integers divide as double, as in Spark)
	OpMod                    // %  (remainder, with the sign of the dividend)
)

var arithText = [...]string{OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%"}

// String renders the operator.
func (o ArithOp) String() string {
	if int(o) < len(arithText) && arithText[o] != "" {
		return arithText[o]
	}
	return fmt.Sprintf("?arith%d", o)
}

// precedence of a scalar node when rendered: 0 for predicates, 1 for + - ||, 2 for * / %,
// 3 for unary minus, 4 for atoms.
func scalarPrec(e Expr) int {
	switch e := e.(type) {
	case *Comparison, *BetweenExpr, *InExpr, *IsNullExpr, *LikeExpr, *AndExpr, *OrExpr, *NotExpr:
		return 0 // a predicate used as a value (ParseSQL): always parenthesised
	case *ArithExpr:
		if e.Op == OpMul || e.Op == OpDiv || e.Op == OpMod {
			return 2
		}
		return 1
	case *ConcatExpr:
		if e.Pipe {
			return 1
		}
	case *NegExpr:
		return 3
	}
	return 4
}

// ArithExpr is `Left Op Right` on numbers.
type ArithExpr struct {
	Op          ArithOp
	Left, Right Expr
}

// NegExpr is unary minus. The parser folds `-` before a number into the literal; NegExpr
// holds the negation of anything else.
type NegExpr struct {
	Value Expr
}

// CastExpr is `CAST(Value AS Type)`. Type is one of the column types expr evaluates:
// bool, int8/16/32/64, float32/64, decimal128, utf8, binary, date32, timestamp[us]
// (UTC: "timestamp"; no zone: "timestamp_ntz").
type CastExpr struct {
	Value Expr
	Type  arrow.DataType
}

// WhenClause is one `WHEN Cond THEN Value` of a CASE expression; Cond is a predicate.
type WhenClause struct {
	Cond, Value Expr
}

// CaseExpr is `CASE WHEN c1 THEN v1 [WHEN ...] [ELSE e] END`: the value of the first
// clause whose condition is TRUE (NULL and FALSE do not select), else Else (NULL when
// Else is nil).
type CaseExpr struct {
	Whens []WhenClause
	Else  Expr
}

// ConcatExpr concatenates strings (or binary values): `concat(a, b, ...)`, or `a || b`
// when Pipe is set (rendering only; both mean the same). The result is NULL when any
// argument is NULL.
type ConcatExpr struct {
	Args []Expr
	Pipe bool
}

func (*ArithExpr) isExpr()  {}
func (*NegExpr) isExpr()    {}
func (*CastExpr) isExpr()   {}
func (*CaseExpr) isExpr()   {}
func (*ConcatExpr) isExpr() {}

// Add builds `l + r`.
func Add(l, r Expr) Expr { return &ArithExpr{Op: OpAdd, Left: l, Right: r} }

// Sub builds `l - r`.
func Sub(l, r Expr) Expr { return &ArithExpr{Op: OpSub, Left: l, Right: r} }

// Mul builds `l * r`.
func Mul(l, r Expr) Expr { return &ArithExpr{Op: OpMul, Left: l, Right: r} }

// Div builds `l / r`.
func Div(l, r Expr) Expr { return &ArithExpr{Op: OpDiv, Left: l, Right: r} }

// Mod builds `l % r`.
func Mod(l, r Expr) Expr { return &ArithExpr{Op: OpMod, Left: l, Right: r} }

// Neg builds `-v`.
func Neg(v Expr) Expr { return &NegExpr{Value: v} }

// Cast builds `CAST(v AS t)`.
func Cast(v Expr, t arrow.DataType) Expr { return &CastExpr{Value: v, Type: t} }

// Concat builds `concat(args...)`.
func Concat(args ...Expr) Expr { return &ConcatExpr{Args: args} }

// Case builds `CASE WHEN ... END`; elseValue may be nil.
func Case(elseValue Expr, whens ...WhenClause) Expr {
	return &CaseExpr{Whens: whens, Else: elseValue}
}

// String renders the operation, parenthesising operands as precedence and left
// associativity require, so that ParseScalar(e.String()) is Equal to e.
func (a *ArithExpr) String() string {
	p := scalarPrec(a)
	return wrapPrec(a.Left, p, false) + " " + a.Op.String() + " " + wrapPrec(a.Right, p, true)
}

func wrapPrec(e Expr, parent int, right bool) string {
	s := exprString(e)
	if c := scalarPrec(e); c < parent || (right && c == parent) {
		return "(" + s + ")"
	}
	return s
}

// String renders `-column` or `-(operand)`.
func (n *NegExpr) String() string {
	if _, ok := n.Value.(*ColumnRef); ok {
		return "-" + n.Value.String()
	}
	return "-(" + exprString(n.Value) + ")"
}

// String renders `CAST(value AS type)`.
func (c *CastExpr) String() string {
	return "CAST(" + exprString(c.Value) + " AS " + TypeName(c.Type) + ")"
}

// String renders the CASE expression.
func (c *CaseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, w := range c.Whens {
		b.WriteString(" WHEN " + exprString(w.Cond) + " THEN " + exprString(w.Value))
	}
	if c.Else != nil {
		b.WriteString(" ELSE " + exprString(c.Else))
	}
	b.WriteString(" END")
	return b.String()
}

// String renders `a || b || c` or `concat(a, b, c)`.
func (c *ConcatExpr) String() string {
	if c.Pipe && len(c.Args) >= 2 {
		parts := make([]string, len(c.Args))
		for i, a := range c.Args {
			parts[i] = wrapPrec(a, 1, i > 0)
		}
		return strings.Join(parts, " || ")
	}
	return "concat(" + joinExprs(c.Args, ", ", nil) + ")"
}

// equalScalar is Equal for the scalar node kinds.
func equalScalar(a, b Expr) bool {
	switch a := a.(type) {
	case *ArithExpr:
		b, ok := b.(*ArithExpr)
		return ok && a.Op == b.Op && Equal(a.Left, b.Left) && Equal(a.Right, b.Right)
	case *NegExpr:
		b, ok := b.(*NegExpr)
		return ok && Equal(a.Value, b.Value)
	case *CastExpr:
		b, ok := b.(*CastExpr)
		return ok && Equal(a.Value, b.Value) && a.Type != nil && b.Type != nil && arrow.TypeEqual(a.Type, b.Type)
	case *CaseExpr:
		b, ok := b.(*CaseExpr)
		if !ok || len(a.Whens) != len(b.Whens) || !Equal(a.Else, b.Else) {
			return false
		}
		for i := range a.Whens {
			if !Equal(a.Whens[i].Cond, b.Whens[i].Cond) || !Equal(a.Whens[i].Value, b.Whens[i].Value) {
				return false
			}
		}
		return true
	case *ConcatExpr:
		b, ok := b.(*ConcatExpr)
		return ok && a.Pipe == b.Pipe && equalList(a.Args, b.Args)
	case *FuncExpr:
		return equalFunc(a, b)
	}
	return false
}

// Assignment is one `column = value` of an UPDATE SET list.
type Assignment struct {
	// Column is the assigned column (a top-level column of the table).
	Column *ColumnRef
	// Value is the scalar expression assigned.
	Value Expr
	// Pos is the 1-based byte offset of the assignment in the text ParseAssignments
	// read (0 for assignments built in Go); binding errors report it.
	Pos int
}

// String renders `column = value`.
func (a Assignment) String() string {
	return exprString(a.Column) + " = " + exprString(a.Value)
}

// FormatAssignments renders a SET list in the grammar ParseAssignments accepts.
func FormatAssignments(as []Assignment) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, ", ")
}

// ---- type names ----

// typeByName maps the type names CAST accepts (case-insensitive; Spark SQL names and
// their aliases) to Arrow types. DECIMAL is handled separately (precision, scale).
var typeByName = map[string]arrow.DataType{
	"BOOLEAN": arrow.FixedWidthTypes.Boolean, "BOOL": arrow.FixedWidthTypes.Boolean,
	"TINYINT": arrow.PrimitiveTypes.Int8, "BYTE": arrow.PrimitiveTypes.Int8,
	"SMALLINT": arrow.PrimitiveTypes.Int16, "SHORT": arrow.PrimitiveTypes.Int16,
	"INT": arrow.PrimitiveTypes.Int32, "INTEGER": arrow.PrimitiveTypes.Int32,
	"BIGINT": arrow.PrimitiveTypes.Int64, "LONG": arrow.PrimitiveTypes.Int64,
	"FLOAT": arrow.PrimitiveTypes.Float32, "REAL": arrow.PrimitiveTypes.Float32,
	"DOUBLE":        arrow.PrimitiveTypes.Float64,
	"STRING":        arrow.BinaryTypes.String,
	"BINARY":        arrow.BinaryTypes.Binary,
	"DATE":          arrow.FixedWidthTypes.Date32,
	"TIMESTAMP":     &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	"TIMESTAMP_LTZ": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	"TIMESTAMP_NTZ": &arrow.TimestampType{Unit: arrow.Microsecond},
}

// TypeName returns the Delta (Spark SQL) name of an Arrow type as CAST accepts it
// and messages show it: value.DisplayType (boolean, tinyint, smallint, int, bigint,
// float, double, decimal(p,s), string, binary, date, timestamp, timestamp_ntz, and
// void for the type of the NULL literal).
func TypeName(t arrow.DataType) string { return value.DisplayType(t) }
