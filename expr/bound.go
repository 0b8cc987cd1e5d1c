package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// Bound is a predicate bound to an Arrow schema: every column is resolved to a leaf
// field, every literal is coerced to its column's representation, and the tree is
// in negation normal form (no NOT nodes; see Bind). A Bound is immutable and safe
// for concurrent use.
type Bound struct {
	root   Pred
	cols   []*BoundColumn
	schema *arrow.Schema
	src    Expr
	scalar bool // the tree has a *ScalarPred (BindCheck): evaluation tracks masks
}

// Root returns the normalised predicate tree.
func (b *Bound) Root() Pred { return b.root }

// Columns returns the columns the predicate reads, in first-use order; a column's
// Ordinal is its index here. The slice must not be modified.
func (b *Bound) Columns() []*BoundColumn { return b.cols }

// Schema returns the schema the predicate was bound to.
func (b *Bound) Schema() *arrow.Schema { return b.schema }

// Source returns the expression that was bound.
func (b *Bound) Source() Expr { return b.src }

// String renders the normalised predicate (NOT pushed down, literals coerced).
func (b *Bound) String() string { return b.root.String() }

// EvaluateRow is the reference (row-at-a-time) evaluator: it reports whether the
// predicate is TRUE for one row whose values are given per bound column
// (row[c.Ordinal]; NULL as value.Null()). Values must have the column's Kind.
// It is slow and meant for tests and single-row checks; use Evaluate for batches.
// REQUIRES: len(row) == len(b.Columns()).
func (b *Bound) EvaluateRow(row []value.Value) bool { return b.root.EvalRow(row) }

// BoundColumn is a column reference resolved against the schema.
type BoundColumn struct {
	// Ordinal is the column's index in Bound.Columns().
	Ordinal int
	// Path holds the field names as spelled in the schema, top level first.
	Path []string
	// FieldIndices is the index path: schema field, then struct child indices.
	FieldIndices []int
	// Type is the leaf's Arrow type.
	Type arrow.DataType
	// Kind is the value kind literals compared with this column are coerced to.
	Kind value.Kind
	// Precision and Scale describe decimal columns.
	Precision, Scale int32
	// TypeName names the type for people, as value.DisplayType does (bigint,
	// decimal(10,2), timestamp_ntz...).
	TypeName string
}

// Name renders the path as a filter-grammar column reference.
func (c *BoundColumn) Name() string { return (&ColumnRef{Path: c.Path}).String() }

// Pred is a node of a bound predicate in negation normal form. Its set of
// implementations is closed: *ConstPred, *CmpPred, *ColCmpPred, *InPred,
// *NullPred, *LikePred, *AndPred, *OrPred, and *ScalarPred (BindCheck only).
//
// Invariant E2: a bound tree contains no negation node, so the rows for which the
// whole predicate is TRUE are determined by the rows for which each leaf is TRUE
// (AND/OR are monotone). Leaves are therefore defined by their TRUE sets only; a
// leaf that is NULL or FALSE for a row simply does not select it.
type Pred interface {
	// String renders the node in the filter grammar.
	String() string
	// EvalRow reports whether the node is TRUE for a row (see Bound.EvaluateRow).
	EvalRow(row []value.Value) bool
	isPred()
}

// Leaf is a predicate on a single column: its TRUE-ness for a row depends only on
// that column's value.
type Leaf interface {
	Pred
	// Column returns the column the leaf tests.
	Column() *BoundColumn
	// Matches reports whether the leaf is TRUE for a row whose column value is v
	// (value.Null() for NULL). v must have the column's Kind.
	Matches(v value.Value) bool
}

// ConstPred is TRUE for every row or for none.
type ConstPred struct{ Value bool }

// CmpPred is `Col Op Value` with Op one of =, <>, <, <=, >, >= and Value a non-null
// value of the column's Kind (and scale, for decimals). TRUE when the column is
// non-null and the comparison holds in Spark order (floats: NaN greatest, NaN = NaN,
// -0 = 0).
type CmpPred struct {
	Col   *BoundColumn
	Op    Op
	Value value.Value
}

// ColCmpPred compares two columns of the same kind. It is evaluated exactly but
// never used for skipping.
type ColCmpPred struct {
	Left, Right *BoundColumn
	Op          Op
}

// InPred is `Col IN (Values)` or, when Negated, `Col NOT IN (Values)`. Values are
// non-null, of the column's Kind, sorted and distinct. A NOT IN whose list held a
// NULL is never TRUE and is bound as ConstPred{false}; NULLs in an IN list are
// dropped (they never make it TRUE).
type InPred struct {
	Col     *BoundColumn
	Values  []value.Value
	Negated bool
}

// NullPred is `Col IS NULL`, or `Col IS NOT NULL` when Negated.
type NullPred struct {
	Col     *BoundColumn
	Negated bool
}

// LikePred is `Col LIKE pattern`, or `Col NOT LIKE pattern` when Negated (TRUE for
// non-null values that do not match).
type LikePred struct {
	Col     *BoundColumn
	Pattern *LikePattern
	Negated bool
}

// AndPred is TRUE when every term is TRUE.
type AndPred struct{ Terms []Pred }

// OrPred is TRUE when some term is TRUE.
type OrPred struct{ Terms []Pred }

func (*ConstPred) isPred()  {}
func (*CmpPred) isPred()    {}
func (*ColCmpPred) isPred() {}
func (*InPred) isPred()     {}
func (*NullPred) isPred()   {}
func (*LikePred) isPred()   {}
func (*AndPred) isPred()    {}
func (*OrPred) isPred()     {}

// Column returns the tested column.
func (p *CmpPred) Column() *BoundColumn { return p.Col }

// Column returns the tested column.
func (p *InPred) Column() *BoundColumn { return p.Col }

// Column returns the tested column.
func (p *NullPred) Column() *BoundColumn { return p.Col }

// Column returns the tested column.
func (p *LikePred) Column() *BoundColumn { return p.Col }

// String renders TRUE or FALSE.
func (p *ConstPred) String() string { return Constant(p.Value).String() }

// String renders the comparison.
func (p *CmpPred) String() string {
	return p.Col.Name() + " " + p.Op.String() + " " + FormatValue(p.Value)
}

// String renders the comparison.
func (p *ColCmpPred) String() string {
	return p.Left.Name() + " " + p.Op.String() + " " + p.Right.Name()
}

// String renders the IN predicate.
func (p *InPred) String() string {
	parts := make([]string, len(p.Values))
	for i, v := range p.Values {
		parts[i] = FormatValue(v)
	}
	kw := " IN ("
	if p.Negated {
		kw = " NOT IN ("
	}
	return p.Col.Name() + kw + strings.Join(parts, ", ") + ")"
}

// String renders the IS [NOT] NULL predicate.
func (p *NullPred) String() string {
	if p.Negated {
		return p.Col.Name() + " IS NOT NULL"
	}
	return p.Col.Name() + " IS NULL"
}

// String renders the LIKE predicate.
func (p *LikePred) String() string {
	kw := " LIKE "
	if p.Negated {
		kw = " NOT LIKE "
	}
	return p.Col.Name() + kw + value.String(p.Pattern.src).String()
}

func predJoin(ps []Pred, sep string) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		s := p.String()
		switch p.(type) {
		case *AndPred, *OrPred:
			s = "(" + s + ")"
		}
		parts[i] = s
	}
	return strings.Join(parts, sep)
}

// String renders the conjunction.
func (p *AndPred) String() string { return predJoin(p.Terms, " AND ") }

// String renders the disjunction.
func (p *OrPred) String() string { return predJoin(p.Terms, " OR ") }

// EvalRow returns the constant.
func (p *ConstPred) EvalRow([]value.Value) bool { return p.Value }

// EvalRow evaluates the comparison on the row.
func (p *CmpPred) EvalRow(row []value.Value) bool { return p.Matches(row[p.Col.Ordinal]) }

// Matches evaluates the comparison on one column value.
func (p *CmpPred) Matches(v value.Value) bool {
	c, ok := value.Compare(v, p.Value)
	return ok && opHolds(p.Op, c)
}

func opHolds(op Op, c int) bool {
	switch op {
	case OpEq, OpNullSafeEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// EvalRow evaluates the comparison on the row.
func (p *ColCmpPred) EvalRow(row []value.Value) bool {
	l, r := row[p.Left.Ordinal], row[p.Right.Ordinal]
	if p.Op == OpNullSafeEq && (l.IsNull() || r.IsNull()) {
		return l.IsNull() && r.IsNull()
	}
	c, ok := value.Compare(l, r)
	return ok && opHolds(p.Op, c)
}

// EvalRow evaluates the IN predicate on the row.
func (p *InPred) EvalRow(row []value.Value) bool { return p.Matches(row[p.Col.Ordinal]) }

// Matches evaluates the IN predicate on one column value.
func (p *InPred) Matches(v value.Value) bool {
	if v.IsNull() {
		return false
	}
	found := false
	for _, x := range p.Values {
		if c, ok := value.Compare(v, x); ok && c == 0 {
			found = true
			break
		}
	}
	return found != p.Negated
}

// EvalRow evaluates the null test on the row.
func (p *NullPred) EvalRow(row []value.Value) bool { return p.Matches(row[p.Col.Ordinal]) }

// Matches evaluates the null test on one column value.
func (p *NullPred) Matches(v value.Value) bool { return v.IsNull() != p.Negated }

// EvalRow evaluates the LIKE predicate on the row.
func (p *LikePred) EvalRow(row []value.Value) bool { return p.Matches(row[p.Col.Ordinal]) }

// Matches evaluates the LIKE predicate on one column value.
func (p *LikePred) Matches(v value.Value) bool {
	if v.Kind() != value.KindString && v.Kind() != value.KindBinary {
		return false
	}
	return p.Pattern.Match(v.AsString()) != p.Negated
}

// EvalRow reports whether every term is TRUE.
func (p *AndPred) EvalRow(row []value.Value) bool {
	for _, t := range p.Terms {
		if !t.EvalRow(row) {
			return false
		}
	}
	return true
}

// EvalRow reports whether some term is TRUE.
func (p *OrPred) EvalRow(row []value.Value) bool {
	for _, t := range p.Terms {
		if t.EvalRow(row) {
			return true
		}
	}
	return false
}

// andPreds and orPreds build simplified junctions (flattening, constant folding).
func andPreds(ps ...Pred) Pred {
	out := make([]Pred, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case *ConstPred:
			if !p.Value {
				return p
			}
		case *AndPred:
			out = append(out, p.Terms...)
		default:
			out = append(out, p)
		}
	}
	switch len(out) {
	case 0:
		return &ConstPred{Value: true}
	case 1:
		return out[0]
	}
	return &AndPred{Terms: out}
}

func orPreds(ps ...Pred) Pred {
	out := make([]Pred, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case *ConstPred:
			if p.Value {
				return p
			}
		case *OrPred:
			out = append(out, p.Terms...)
		default:
			out = append(out, p)
		}
	}
	switch len(out) {
	case 0:
		return &ConstPred{Value: false}
	case 1:
		return out[0]
	}
	return &OrPred{Terms: out}
}
