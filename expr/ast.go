package expr

import (
	"strconv"
	"strings"

	"github.com/skiplake/skiplake/value"
)

// Expr is an unbound predicate, operand or scalar expression. The set of
// implementations is closed (sealed by an unexported method): *ColumnRef, *Literal,
// *Comparison, *BetweenExpr, *InExpr, *IsNullExpr, *LikeExpr, *AndExpr, *OrExpr,
// *NotExpr and Constant (predicates), *ArithExpr, *NegExpr, *CastExpr, *CaseExpr
// and *ConcatExpr (scalar expressions, see scalar.go), and *FuncExpr (calls of
// built-in functions, see sql.go).
//
// String renders the expression in the grammar Parse (predicates) or ParseScalar
// (scalar expressions) accepts, so that parsing e.String() yields an expression Equal
// to e (invariant E1).
type Expr interface {
	String() string
	isExpr()
}

// ColumnRef references a column by its path of field names, top level first
// (`a.b` is struct field b of column a).
type ColumnRef struct {
	Path []string
	// DoubleQuoted records that the source named the column in double quotes
	// ("JP"), so that an unknown column can be explained as a string literal
	// written with the wrong quotes. It does not change what the reference means.
	DoubleQuoted bool
}

// Literal is a constant operand. Its value.Value carries the literal's flavour:
// integers are KindInt64 (or KindDecimal with scale 0 when they do not fit),
// `1.50` is KindDecimal (precision 3, scale 2), `1e3` is KindFloat64, 'x' is
// KindString and coerces to the column type when bound (dates, timestamps, numbers),
// TIMESTAMP '...' without a zone is KindTimestampNTZ (it means UTC when compared
// with a timestamp column), with a zone it is KindTimestamp.
type Literal struct {
	Value value.Value
	// Text is a number literal as written in the parsed source, sign included
	// ("500", "1e3", "-0.50"): String echoes it, so a parsed filter prints its numbers
	// the way the user wrote them (FormatValue would print 5e+02 for a double 500).
	// Empty for literals built with Lit and for literals other than numbers.
	Text string
}

// Op is a comparison operator.
type Op uint8

// The comparison operators. NullSafeEq is `<=>`: TRUE when both sides are equal or
// both NULL, never NULL itself.
const (
	OpEq Op = iota + 1
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpNullSafeEq
)

var opText = [...]string{OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpNullSafeEq: "<=>"}

// String renders the operator in SQL.
func (o Op) String() string {
	if int(o) < len(opText) && opText[o] != "" {
		return opText[o]
	}
	return "?op" + strconv.Itoa(int(o))
}

// Flip returns the operator with its operands swapped (a < b  ==  b > a).
func (o Op) Flip() Op {
	switch o {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return o
}

// Negate returns the operator whose result is the negation of o's for non-null
// operands (a < b  ==  NOT a >= b). Under Spark's total float order (NaN greatest)
// this holds for floats too. OpNullSafeEq has no negation operator and is returned
// unchanged.
func (o Op) Negate() Op {
	switch o {
	case OpEq:
		return OpNe
	case OpNe:
		return OpEq
	case OpLt:
		return OpGe
	case OpLe:
		return OpGt
	case OpGt:
		return OpLe
	case OpGe:
		return OpLt
	}
	return o
}

// Comparison is `Left Op Right`; operands are *ColumnRef or *Literal.
type Comparison struct {
	Op          Op
	Left, Right Expr
}

// BetweenExpr is `Value [NOT] BETWEEN Low AND High` (inclusive). Binding desugars it
// to `Value >= Low AND Value <= High`; it is kept in the AST for printing.
type BetweenExpr struct {
	Value, Low, High Expr
	Negated          bool
}

// InExpr is `Value [NOT] IN (List...)`; List holds *Literal operands.
type InExpr struct {
	Value   Expr
	List    []Expr
	Negated bool
}

// IsNullExpr is `Value IS [NOT] NULL`.
type IsNullExpr struct {
	Value   Expr
	Negated bool
}

// LikeExpr is `Value [NOT] LIKE 'Pattern'`: `%` matches any sequence of characters,
// `_` exactly one character (UTF-8 code point), and `\` escapes the next character.
type LikeExpr struct {
	Value   Expr
	Pattern string
	Negated bool
}

// AndExpr is the conjunction of two or more terms (Kleene logic).
type AndExpr struct {
	Terms []Expr
}

// OrExpr is the disjunction of two or more terms (Kleene logic).
type OrExpr struct {
	Terms []Expr
}

// NotExpr is the negation of a term (Kleene logic: NOT NULL is NULL).
type NotExpr struct {
	Term Expr
}

// Constant is the predicate TRUE or FALSE.
type Constant bool

// AlwaysTrue and AlwaysFalse are the constant predicates.
const (
	AlwaysTrue  Constant = true
	AlwaysFalse Constant = false
)

func (*ColumnRef) isExpr()   {}
func (*Literal) isExpr()     {}
func (*Comparison) isExpr()  {}
func (*BetweenExpr) isExpr() {}
func (*InExpr) isExpr()      {}
func (*IsNullExpr) isExpr()  {}
func (*LikeExpr) isExpr()    {}
func (*AndExpr) isExpr()     {}
func (*OrExpr) isExpr()      {}
func (*NotExpr) isExpr()     {}
func (Constant) isExpr()     {}

// Col references a column by path: Col("a", "b") is `a.b`.
func Col(path ...string) *ColumnRef { return &ColumnRef{Path: append([]string(nil), path...)} }

// Lit wraps a typed value as a literal operand.
func Lit(v value.Value) *Literal { return &Literal{Value: v} }

// Compare builds `left op right`.
func Compare(op Op, left, right Expr) Expr { return &Comparison{Op: op, Left: left, Right: right} }

// Eq builds `left = right`.
func Eq(left, right Expr) Expr { return Compare(OpEq, left, right) }

// Ne builds `left <> right`.
func Ne(left, right Expr) Expr { return Compare(OpNe, left, right) }

// Lt builds `left < right`.
func Lt(left, right Expr) Expr { return Compare(OpLt, left, right) }

// Le builds `left <= right`.
func Le(left, right Expr) Expr { return Compare(OpLe, left, right) }

// Gt builds `left > right`.
func Gt(left, right Expr) Expr { return Compare(OpGt, left, right) }

// Ge builds `left >= right`.
func Ge(left, right Expr) Expr { return Compare(OpGe, left, right) }

// NullSafeEq builds `left <=> right`.
func NullSafeEq(left, right Expr) Expr { return Compare(OpNullSafeEq, left, right) }

// Between builds `v BETWEEN low AND high`.
func Between(v, low, high Expr) Expr { return &BetweenExpr{Value: v, Low: low, High: high} }

// NotBetween builds `v NOT BETWEEN low AND high`.
func NotBetween(v, low, high Expr) Expr {
	return &BetweenExpr{Value: v, Low: low, High: high, Negated: true}
}

// In builds `v IN (list...)`.
func In(v Expr, list ...Expr) Expr { return &InExpr{Value: v, List: list} }

// NotIn builds `v NOT IN (list...)`.
func NotIn(v Expr, list ...Expr) Expr { return &InExpr{Value: v, List: list, Negated: true} }

// IsNull builds `v IS NULL`.
func IsNull(v Expr) Expr { return &IsNullExpr{Value: v} }

// IsNotNull builds `v IS NOT NULL`.
func IsNotNull(v Expr) Expr { return &IsNullExpr{Value: v, Negated: true} }

// Like builds `v LIKE 'pattern'`.
func Like(v Expr, pattern string) Expr { return &LikeExpr{Value: v, Pattern: pattern} }

// NotLike builds `v NOT LIKE 'pattern'`.
func NotLike(v Expr, pattern string) Expr {
	return &LikeExpr{Value: v, Pattern: pattern, Negated: true}
}

// StartsWith builds `v LIKE 'prefix%'` with the prefix's wildcards escaped.
func StartsWith(v Expr, prefix string) Expr { return Like(v, EscapeLike(prefix)+"%") }

// EscapeLike escapes `%`, `_` and `\` so that s matches itself as a LIKE pattern.
func EscapeLike(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '%' || r == '_' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// And builds the conjunction of terms, simplifying: nested ANDs are flattened,
// AlwaysTrue terms dropped, AlwaysFalse absorbs everything; no terms is AlwaysTrue
// and one term is returned as is. Nil terms are dropped.
func And(terms ...Expr) Expr {
	out := make([]Expr, 0, len(terms))
	for _, t := range terms {
		switch t := t.(type) {
		case nil:
		case Constant:
			if !t {
				return AlwaysFalse
			}
		case *AndExpr:
			out = append(out, t.Terms...)
		default:
			out = append(out, t)
		}
	}
	switch len(out) {
	case 0:
		return AlwaysTrue
	case 1:
		return out[0]
	}
	return &AndExpr{Terms: out}
}

// Or builds the disjunction of terms, simplifying like And: nested ORs are
// flattened, AlwaysFalse dropped, AlwaysTrue absorbs; no terms is AlwaysFalse.
func Or(terms ...Expr) Expr {
	out := make([]Expr, 0, len(terms))
	for _, t := range terms {
		switch t := t.(type) {
		case nil:
		case Constant:
			if t {
				return AlwaysTrue
			}
		case *OrExpr:
			out = append(out, t.Terms...)
		default:
			out = append(out, t)
		}
	}
	switch len(out) {
	case 0:
		return AlwaysFalse
	case 1:
		return out[0]
	}
	return &OrExpr{Terms: out}
}

// Not builds the negation of t, simplifying NOT TRUE, NOT FALSE and NOT NOT x.
func Not(t Expr) Expr {
	switch t := t.(type) {
	case Constant:
		return !t
	case *NotExpr:
		return t.Term
	}
	return &NotExpr{Term: t}
}

// ---- rendering ----

var keywords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true, "LIKE": true,
	"BETWEEN": true, "TRUE": true, "FALSE": true, "DATE": true, "TIMESTAMP": true,
	"TIMESTAMP_NTZ": true, "DOUBLE": true,
}

// scalarWords are the words of the scalar grammar. They are not reserved in predicates
// (a column may be called `end`), but QuoteName quotes them so that a rendered column
// can never be read as one of them.
var scalarWords = map[string]bool{
	"CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": true, "CAST": true, "AS": true, "CONCAT": true,
}

func isPlainIdent(s string) bool {
	if s == "" || keywords[strings.ToUpper(s)] || scalarWords[strings.ToUpper(s)] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// QuoteName renders one column name: plain when it is an identifier that is not a
// keyword, otherwise back-quoted with embedded back-quotes doubled.
func QuoteName(s string) string {
	if isPlainIdent(s) {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// String renders the column path, quoting names as needed.
func (c *ColumnRef) String() string {
	parts := make([]string, len(c.Path))
	for i, p := range c.Path {
		parts[i] = QuoteName(p)
	}
	return strings.Join(parts, ".")
}

// String renders the literal in the grammar Parse accepts: a parsed number as it
// was written (Text), any other value by FormatValue.
func (l *Literal) String() string {
	if l.Text != "" {
		return l.Text
	}
	return FormatValue(l.Value)
}

// FormatValue renders a value as a literal of the filter grammar.
func FormatValue(v value.Value) string {
	switch v.Kind() {
	case value.KindFloat64:
		f := v.AsFloat64()
		s := strconv.FormatFloat(f, 'e', -1, 64)
		if strings.ContainsAny(s, "NI") { // NaN, +Inf, -Inf
			return "DOUBLE '" + strings.TrimPrefix(s, "+") + "'"
		}
		return s
	case value.KindTimestampNTZ:
		return "TIMESTAMP '" + formatMicros(v.AsInt64()) + "'"
	case value.KindTimestamp:
		return "TIMESTAMP '" + formatMicros(v.AsInt64()) + "+00:00'"
	case value.KindDecimal:
		num, _, scale := v.AsDecimal()
		return decimalString(num, scale)
	}
	return v.String()
}

func joinExprs(xs []Expr, sep string, wrap func(Expr) bool) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		s := exprString(x)
		if wrap != nil && wrap(x) {
			s = "(" + s + ")"
		}
		parts[i] = s
	}
	return strings.Join(parts, sep)
}

func exprString(e Expr) string {
	if e == nil {
		return "<nil>"
	}
	return e.String()
}

// String renders the comparison.
func (c *Comparison) String() string {
	return operandString(c.Left) + " " + c.Op.String() + " " + operandString(c.Right)
}

// operandString renders a predicate's operand, parenthesised when it is itself a
// predicate (ParseSQL's boolean operands).
func operandString(e Expr) string {
	if e != nil && scalarPrec(e) == 0 {
		return "(" + e.String() + ")"
	}
	return exprString(e)
}

// String renders the BETWEEN predicate.
func (b *BetweenExpr) String() string {
	kw := " BETWEEN "
	if b.Negated {
		kw = " NOT BETWEEN "
	}
	return operandString(b.Value) + kw + operandString(b.Low) + " AND " + operandString(b.High)
}

// String renders the IN predicate.
func (in *InExpr) String() string {
	kw := " IN ("
	if in.Negated {
		kw = " NOT IN ("
	}
	return operandString(in.Value) + kw + joinExprs(in.List, ", ", func(e Expr) bool { return scalarPrec(e) == 0 }) + ")"
}

// String renders the IS [NOT] NULL predicate.
func (n *IsNullExpr) String() string {
	if n.Negated {
		return operandString(n.Value) + " IS NOT NULL"
	}
	return operandString(n.Value) + " IS NULL"
}

// String renders the LIKE predicate.
func (l *LikeExpr) String() string {
	kw := " LIKE "
	if l.Negated {
		kw = " NOT LIKE "
	}
	return operandString(l.Value) + kw + value.String(l.Pattern).String()
}

func isJunction(e Expr) bool {
	switch e.(type) {
	case *AndExpr, *OrExpr:
		return true
	}
	return false
}

// String renders the conjunction; nested disjunctions are parenthesised.
func (a *AndExpr) String() string { return joinExprs(a.Terms, " AND ", isJunction) }

// String renders the disjunction; nested conjunctions are parenthesised.
func (o *OrExpr) String() string { return joinExprs(o.Terms, " OR ", isJunction) }

// String renders the negation as `NOT (term)`.
func (n *NotExpr) String() string { return "NOT (" + exprString(n.Term) + ")" }

// String renders TRUE or FALSE.
func (c Constant) String() string {
	if c {
		return "TRUE"
	}
	return "FALSE"
}

// Equal reports whether two expressions are structurally equal (same tree, equal
// literals by value.Equal, same column paths).
func Equal(a, b Expr) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case *ColumnRef:
		b, ok := b.(*ColumnRef)
		if !ok || len(a.Path) != len(b.Path) {
			return false
		}
		for i := range a.Path {
			if a.Path[i] != b.Path[i] {
				return false
			}
		}
		return true
	case *Literal:
		b, ok := b.(*Literal)
		return ok && a.Value.Kind() == b.Value.Kind() && value.Equal(a.Value, b.Value)
	case *Comparison:
		b, ok := b.(*Comparison)
		return ok && a.Op == b.Op && Equal(a.Left, b.Left) && Equal(a.Right, b.Right)
	case *BetweenExpr:
		b, ok := b.(*BetweenExpr)
		return ok && a.Negated == b.Negated && Equal(a.Value, b.Value) && Equal(a.Low, b.Low) && Equal(a.High, b.High)
	case *InExpr:
		b, ok := b.(*InExpr)
		return ok && a.Negated == b.Negated && Equal(a.Value, b.Value) && equalList(a.List, b.List)
	case *IsNullExpr:
		b, ok := b.(*IsNullExpr)
		return ok && a.Negated == b.Negated && Equal(a.Value, b.Value)
	case *LikeExpr:
		b, ok := b.(*LikeExpr)
		return ok && a.Negated == b.Negated && a.Pattern == b.Pattern && Equal(a.Value, b.Value)
	case *AndExpr:
		b, ok := b.(*AndExpr)
		return ok && equalList(a.Terms, b.Terms)
	case *OrExpr:
		b, ok := b.(*OrExpr)
		return ok && equalList(a.Terms, b.Terms)
	case *NotExpr:
		b, ok := b.(*NotExpr)
		return ok && Equal(a.Term, b.Term)
	case Constant:
		b, ok := b.(Constant)
		return ok && a == b
	}
	return equalScalar(a, b)
}

func equalList(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
