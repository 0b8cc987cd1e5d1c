package expr

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// BindCheck binds a boolean SQL expression (ParseSQL: a CHECK constraint, a column
// invariant, the `col <=> expr` test of a generated column) to schema and returns it
// as a predicate in negation normal form, like Bind. Leaves Bind accepts — a column
// compared with a literal of a compatible type, IN lists, IS NULL, LIKE, column to
// column comparisons of one type — are bound as Bind binds them (vectorised, and
// usable by package skipping); every other leaf (arithmetic, function calls, CAST,
// CASE, literals Spark would convert differently) is typed as BindExpression types
// it and becomes a *ScalarPred, evaluated exactly and never used for skipping. A
// boolean column or function is a predicate on its own (`is_active`).
//
// Evaluate then selects the rows for which the expression is TRUE; a row where it
// is FALSE or NULL is not selected, so the rows a CHECK constraint rejects are
// exactly those Evaluate does not select (Delta's rule: a constraint must evaluate
// to TRUE). Errors of the scalar parts (overflow, division by zero, invalid casts)
// make Evaluate fail with an *EvalError.
func BindCheck(e Expr, schema *arrow.Schema) (*Bound, error) {
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrInvalidExpr)
	}
	b := &binder{schema: schema, byKey: map[string]*BoundColumn{}, general: true}
	root, err := b.bind(e, false)
	if err != nil {
		return nil, err
	}
	return &Bound{root: root, cols: b.cols, schema: schema, src: e, scalar: hasScalarPred(root)}, nil
}

// BindExpression binds a SQL expression (ParseSQL: a generation expression) as a
// value, like BindScalar, with predicates allowed as boolean values (SQL
// three-valued logic: TRUE, FALSE or NULL) and CASE conditions bound as BindCheck
// binds them.
//
// Comparisons convert both operands to a common type as Spark SQL does: numbers to
// the wider number (an integer with a decimal to a decimal holding both, anything with
// a double to double, an integer with a float to float), a date with a timestamp to
// the timestamp, a string with a date or timestamp to the date or timestamp; strings
// are not compared with numbers (Spark's ANSI and legacy modes disagree there: use
// CAST). Floats compare in Spark's total order (NaN = NaN, NaN greatest, -0.0 = 0.0),
// strings and binary byte-wise.
func BindExpression(e Expr, schema *arrow.Schema) (*BoundScalar, error) {
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrInvalidExpr)
	}
	b := &binder{schema: schema, byKey: map[string]*BoundColumn{}, general: true}
	root, err := b.bindScalar(e)
	if err != nil {
		return nil, err
	}
	return &BoundScalar{root: root, cols: b.cols, schema: schema, src: e}, nil
}

// ScalarPred is a leaf of a predicate bound by BindCheck that Bind has no leaf for:
// a boolean SQL expression evaluated as a value. It is TRUE for the rows where the
// value is TRUE or, when Negated, FALSE (NULL selects neither way, so NOT pushed down
// to it stays exact). It reads any number of columns, is evaluated exactly, and says
// nothing to skipping (MightMatch everywhere).
type ScalarPred struct {
	node scalarNode
	// Negated selects the rows where the value is FALSE.
	Negated bool
}

func (*ScalarPred) isPred() {}

// String renders the expression (with its implicit conversions as CASTs).
func (p *ScalarPred) String() string {
	if p.Negated {
		return "NOT (" + p.node.String() + ")"
	}
	return p.node.String()
}

// EvalRow evaluates the expression for one row (see Bound.EvaluateRow); a row for
// which it fails (overflow, ...) is not TRUE here (Evaluate reports the error).
func (p *ScalarPred) EvalRow(row []value.Value) bool {
	v, err := p.node.evalRow(row)
	if err != nil || v.IsNull() {
		return false
	}
	return v.AsBool() != p.Negated
}

// hasScalarPred reports whether p has a ScalarPred leaf.
func hasScalarPred(p Pred) bool {
	switch p := p.(type) {
	case *ScalarPred:
		return true
	case *AndPred:
		for _, t := range p.Terms {
			if hasScalarPred(t) {
				return true
			}
		}
	case *OrPred:
		for _, t := range p.Terms {
			if hasScalarPred(t) {
				return true
			}
		}
	}
	return false
}

// evalScalarPred fills out with the rows of c.mask (nil: all) where p is TRUE.
func (c *evalCtx) evalScalarPred(p *ScalarPred, out []uint64) error {
	v, err := p.node.evalVec(&scalarCtx{n: c.n, ec: c}, c.mask)
	if err != nil {
		return err
	}
	for i := range out {
		out[i] = 0
	}
	if kindOf(v.t) == tkNull {
		return nil
	}
	for i := range c.n {
		if bitAt(v.valid, i) && (v.i[i] != 0) != p.Negated {
			out[i>>6] |= 1 << (uint(i) & 63)
		}
	}
	andInto(out, c.mask)
	return nil
}

// ---- general binding ----

// bindGeneral binds e (BindCheck) when Bind's leaves cannot represent it exactly;
// handled reports false when Bind's own rules apply.
func (b *binder) bindGeneral(e Expr, neg bool) (p Pred, handled bool, err error) {
	switch x := e.(type) {
	case Constant, *NotExpr, *AndExpr, *OrExpr, *BetweenExpr:
		return nil, false, nil // structure: the parts are bound one by one
	case *ColumnRef:
		c, err := b.column(x)
		if err != nil {
			return nil, true, err
		}
		if c.Kind != value.KindBool {
			return nil, true, &ScalarTypeError{Expr: x.String(), Reason: c.TypeName + " is not a boolean"}
		}
		return &CmpPred{Col: c, Op: OpEq, Value: value.Bool(!neg)}, true, nil
	case *Literal:
		switch {
		case x.Value.IsNull():
			return &ConstPred{Value: false}, true, nil
		case x.Value.Kind() == value.KindBool:
			return &ConstPred{Value: x.Value.AsBool() != neg}, true, nil
		}
	case *Comparison:
		if ok, err := b.fastComparison(x); err != nil || ok {
			return nil, err != nil, err
		}
	case *IsNullExpr:
		switch x.Value.(type) {
		case *ColumnRef, *Literal:
			return nil, false, nil
		}
	case *InExpr:
		if ref, ok := x.Value.(*ColumnRef); ok {
			c, err := b.column(ref)
			if err != nil {
				return nil, true, err
			}
			fits := true
			for _, it := range x.List {
				l, ok := it.(*Literal)
				fits = fits && ok && literalFits(c, l.Value)
			}
			if fits {
				return nil, false, nil
			}
		}
	case *LikeExpr:
		if _, ok := x.Value.(*ColumnRef); ok {
			return nil, false, nil
		}
	}
	n, err := b.bindScalar(e)
	if err != nil {
		return nil, true, err
	}
	if k := kindOf(n.dataType()); k != tkBool && k != tkNull {
		return nil, true, &ScalarTypeError{Expr: e.String(), Reason: TypeName(n.dataType()) + " is not a boolean"}
	}
	if l, ok := n.(*litNode); ok {
		if l.v.IsNull() {
			return &ConstPred{Value: false}, true, nil
		}
		return &ConstPred{Value: l.v.AsBool() != neg}, true, nil
	}
	return &ScalarPred{node: n, Negated: neg}, true, nil
}

// fastComparison reports whether Bind's comparison leaves represent c exactly as
// Spark evaluates it: a column against a literal whose type Spark converts the way
// Bind's exact coercion does, or two columns of one kind.
func (b *binder) fastComparison(c *Comparison) (bool, error) {
	l, r := c.Left, c.Right
	if _, ok := l.(*Literal); ok {
		l, r = r, l
	}
	lc, ok := l.(*ColumnRef)
	if !ok {
		return false, nil
	}
	col, err := b.column(lc)
	if err != nil {
		return false, err
	}
	switch r := r.(type) {
	case *Literal:
		return literalFits(col, r.Value), nil
	case *ColumnRef:
		rc, err := b.column(r)
		if err != nil {
			return false, err
		}
		return col.Kind == rc.Kind, nil
	}
	return false, nil
}

// literalFits reports whether comparing column c with literal v in Bind's exact
// coercion gives what Spark gives: numbers with numbers, strings with strings, dates
// and timestamps with date, timestamp or string literals (Spark converts the string
// to the column's type), booleans with booleans, binary with binary; NULL with
// anything.
func literalFits(c *BoundColumn, v value.Value) bool {
	k := v.Kind()
	if k == value.KindNull {
		return true
	}
	switch c.Kind {
	case value.KindInt64, value.KindFloat64, value.KindDecimal:
		return k == value.KindInt64 || k == value.KindFloat64 || k == value.KindDecimal
	case value.KindString:
		return k == value.KindString
	case value.KindBinary:
		return k == value.KindBinary
	case value.KindBool:
		return k == value.KindBool
	case value.KindDate, value.KindTimestamp, value.KindTimestampNTZ:
		return k == value.KindDate || k == value.KindTimestamp || k == value.KindTimestampNTZ || k == value.KindString
	}
	return false
}

// bindPredicateValue binds a predicate node as a boolean value (BindExpression).
func (b *binder) bindPredicateValue(e Expr) (scalarNode, error) {
	switch x := e.(type) {
	case *Comparison:
		if x.Op < OpEq || x.Op > OpNullSafeEq {
			return nil, fmt.Errorf("%w: unknown operator %d", ErrInvalidExpr, x.Op)
		}
		l, err := b.bindScalar(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := b.bindScalar(x.Right)
		if err != nil {
			return nil, err
		}
		return b.compareNodes(x, x.Op, l, r)
	case *BetweenExpr:
		v, err := b.bindScalar(x.Value)
		if err != nil {
			return nil, err
		}
		lo, err := b.bindScalar(x.Low)
		if err != nil {
			return nil, err
		}
		hi, err := b.bindScalar(x.High)
		if err != nil {
			return nil, err
		}
		ge, err := b.compareNodes(x, OpGe, v, lo)
		if err != nil {
			return nil, err
		}
		le, err := b.compareNodes(x, OpLe, v, hi)
		if err != nil {
			return nil, err
		}
		var n scalarNode = &logicNode{and: true, terms: []scalarNode{ge, le}}
		if x.Negated {
			n = &notNode{v: n}
		}
		return n, nil
	case *InExpr:
		v, err := b.bindScalar(x.Value)
		if err != nil {
			return nil, err
		}
		list := make([]scalarNode, len(x.List))
		t := v.dataType()
		for i, it := range x.List {
			if list[i], err = b.bindScalar(it); err != nil {
				return nil, err
			}
			ct, reason := cmpType(t, list[i].dataType())
			if reason != "" {
				return nil, &ScalarTypeError{Expr: x.String(), Reason: reason}
			}
			t = ct
		}
		if v, err = convertOperand(x, v, t); err != nil {
			return nil, err
		}
		for i := range list {
			if list[i], err = convertOperand(x, list[i], t); err != nil {
				return nil, err
			}
		}
		var n scalarNode = &inNode{v: v, list: list}
		if x.Negated {
			n = &notNode{v: n}
		}
		return n, nil
	case *IsNullExpr:
		v, err := b.bindScalar(x.Value)
		if err != nil {
			return nil, err
		}
		return &isNullNode{v: v, negated: x.Negated}, nil
	case *LikeExpr:
		v, err := b.bindScalar(x.Value)
		if err != nil {
			return nil, err
		}
		if k := kindOf(v.dataType()); k != tkString && k != tkNull {
			return nil, &ScalarTypeError{Expr: x.String(), Reason: "LIKE needs a string, not " + TypeName(v.dataType())}
		}
		lp, err := compileLike(x.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidExpr, err)
		}
		var n scalarNode = &likeNode{v: v, pattern: lp}
		if x.Negated {
			n = &notNode{v: n}
		}
		return n, nil
	case *AndExpr, *OrExpr:
		var terms []Expr
		and := false
		if a, ok := x.(*AndExpr); ok {
			terms, and = a.Terms, true
		} else {
			terms = x.(*OrExpr).Terms
		}
		n := &logicNode{and: and}
		for _, t := range terms {
			v, err := b.bindScalar(t)
			if err != nil {
				return nil, err
			}
			if k := kindOf(v.dataType()); k != tkBool && k != tkNull {
				return nil, &ScalarTypeError{Expr: t.String(), Reason: TypeName(v.dataType()) + " is not a boolean"}
			}
			n.terms = append(n.terms, convert(v, dtBool, false))
		}
		return n, nil
	case *NotExpr:
		v, err := b.bindScalar(x.Term)
		if err != nil {
			return nil, err
		}
		if k := kindOf(v.dataType()); k != tkBool && k != tkNull {
			return nil, &ScalarTypeError{Expr: x.String(), Reason: TypeName(v.dataType()) + " is not a boolean"}
		}
		return &notNode{v: convert(v, dtBool, false)}, nil
	}
	return nil, fmt.Errorf("%w: unsupported node %T", ErrInvalidExpr, e)
}

// compareNodes binds `l op r` of src with both operands converted to their
// comparison type.
func (b *binder) compareNodes(src Expr, op Op, l, r scalarNode) (scalarNode, error) {
	t, reason := cmpType(l.dataType(), r.dataType())
	if reason != "" {
		return nil, &ScalarTypeError{Expr: src.String(), Reason: reason}
	}
	var err error
	if l, err = convertOperand(src, l, t); err != nil {
		return nil, err
	}
	if r, err = convertOperand(src, r, t); err != nil {
		return nil, err
	}
	return &cmpNode{op: op, l: l, r: r, t: t}, nil
}

// convertOperand converts a comparison operand to the comparison type t; a literal
// that does not convert (a string that is not a date) is an error here rather than on
// every row.
func convertOperand(src Expr, n scalarNode, t arrow.DataType) (scalarNode, error) {
	if l, ok := n.(*litNode); ok && !l.v.IsNull() && !arrow.TypeEqual(l.t, t) {
		if _, err := castValue(l.v, l.t, t, false); err != nil {
			return nil, &ScalarTypeError{Expr: src.String(), Reason: fmt.Sprintf("%s: %v", FormatValue(l.v), strings.TrimPrefix(err.Error(), "expr: "))}
		}
	}
	return convert(n, t, false), nil
}

// cmpType is the type both operands of a comparison are converted to (Spark SQL's
// findCommonTypeForBinaryComparison and wider numeric types), or a reason why they
// cannot be compared.
func cmpType(l, r arrow.DataType) (arrow.DataType, string) {
	lk, rk := kindOf(l), kindOf(r)
	isTime := func(k tkind) bool { return k == tkDate || k == tkTimestamp || k == tkTimestampNTZ }
	switch {
	case lk == tkOther || rk == tkOther:
	case lk == tkNull:
		return r, ""
	case rk == tkNull:
		return l, ""
	case isNumeric(lk) && isNumeric(rk):
		t, _ := commonType(l, r)
		return t, ""
	case lk == rk && lk == tkString:
		return dtString, ""
	case lk == rk && lk == tkBinary:
		return dtBinary, ""
	case lk == rk && lk == tkBool:
		return dtBool, ""
	case isTime(lk) && isTime(rk):
		switch {
		case lk == rk:
			return l, ""
		case lk == tkTimestamp || rk == tkTimestamp:
			return dtTimestamp, ""
		}
		return dtTimestampNTZ, "" // date with timestamp_ntz
	case lk == tkString && isTime(rk):
		return r, ""
	case rk == tkString && isTime(lk):
		return l, ""
	case (lk == tkString && isNumeric(rk)) || (rk == tkString && isNumeric(lk)):
		return nil, fmt.Sprintf("cannot compare %s with %s (use CAST: Spark's ANSI and legacy modes convert differently)", TypeName(l), TypeName(r))
	}
	return nil, fmt.Sprintf("cannot compare %s with %s", TypeName(l), TypeName(r))
}

// ---- boolean nodes ----

// cmpNode compares two operands of type t (NULL when either is NULL, except <=>).
type cmpNode struct {
	op   Op
	l, r scalarNode
	t    arrow.DataType
}

// logicNode is AND (and) or OR of boolean terms, in Kleene logic; terms after the
// first are evaluated only where the result is not yet decided (Spark short-circuits
// FALSE AND x and TRUE OR x).
type logicNode struct {
	and   bool
	terms []scalarNode
}

// notNode negates a boolean (NOT NULL is NULL).
type notNode struct{ v scalarNode }

// isNullNode is `v IS [NOT] NULL` (never NULL).
type isNullNode struct {
	v       scalarNode
	negated bool
}

// inNode is `v IN (list)` with every operand of one type: TRUE when v equals an item,
// else NULL when v or an item is NULL, else FALSE.
type inNode struct {
	v    scalarNode
	list []scalarNode
}

// likeNode is `v LIKE pattern` (NULL when v is NULL).
type likeNode struct {
	v       scalarNode
	pattern *LikePattern
}

func (n *cmpNode) dataType() arrow.DataType    { return dtBool }
func (n *logicNode) dataType() arrow.DataType  { return dtBool }
func (n *notNode) dataType() arrow.DataType    { return dtBool }
func (n *isNullNode) dataType() arrow.DataType { return dtBool }
func (n *inNode) dataType() arrow.DataType     { return dtBool }
func (n *likeNode) dataType() arrow.DataType   { return dtBool }

func (n *cmpNode) String() string {
	return "(" + n.l.String() + " " + n.op.String() + " " + n.r.String() + ")"
}
func (n *logicNode) String() string {
	parts := make([]string, len(n.terms))
	for i, t := range n.terms {
		parts[i] = t.String()
	}
	sep := " OR "
	if n.and {
		sep = " AND "
	}
	return "(" + strings.Join(parts, sep) + ")"
}
func (n *notNode) String() string { return "NOT (" + n.v.String() + ")" }
func (n *isNullNode) String() string {
	if n.negated {
		return "(" + n.v.String() + " IS NOT NULL)"
	}
	return "(" + n.v.String() + " IS NULL)"
}
func (n *inNode) String() string {
	parts := make([]string, len(n.list))
	for i, t := range n.list {
		parts[i] = t.String()
	}
	return "(" + n.v.String() + " IN (" + strings.Join(parts, ", ") + "))"
}
func (n *likeNode) String() string {
	return "(" + n.v.String() + " LIKE " + value.String(n.pattern.src).String() + ")"
}

// compareValues compares two non-null values of one comparison type.
func compareValues(a, b value.Value) int {
	c, _ := value.Compare(a, b)
	return c
}

func (n *cmpNode) evalRow(row []value.Value) (value.Value, error) {
	l, err := n.l.evalRow(row)
	if err != nil {
		return value.Value{}, err
	}
	r, err := n.r.evalRow(row)
	if err != nil {
		return value.Value{}, err
	}
	if l.IsNull() || r.IsNull() {
		if n.op == OpNullSafeEq {
			return value.Bool(l.IsNull() && r.IsNull()), nil
		}
		return value.Null(), nil
	}
	return value.Bool(opHolds(n.op, compareValues(l, r))), nil
}

func (n *logicNode) evalRow(row []value.Value) (value.Value, error) {
	null := false
	for _, t := range n.terms {
		v, err := t.evalRow(row)
		if err != nil {
			return value.Value{}, err
		}
		switch {
		case v.IsNull():
			null = true
		case v.AsBool() != n.and: // FALSE in an AND, TRUE in an OR decides
			return v, nil
		}
	}
	if null {
		return value.Null(), nil
	}
	return value.Bool(n.and), nil
}

func (n *notNode) evalRow(row []value.Value) (value.Value, error) {
	v, err := n.v.evalRow(row)
	if err != nil || v.IsNull() {
		return v, err
	}
	return value.Bool(!v.AsBool()), nil
}

func (n *isNullNode) evalRow(row []value.Value) (value.Value, error) {
	v, err := n.v.evalRow(row)
	if err != nil {
		return value.Value{}, err
	}
	return value.Bool(v.IsNull() != n.negated), nil
}

func (n *inNode) evalRow(row []value.Value) (value.Value, error) {
	v, err := n.v.evalRow(row)
	if err != nil || v.IsNull() {
		return v, err
	}
	null := false
	for _, it := range n.list {
		x, err := it.evalRow(row)
		if err != nil {
			return value.Value{}, err
		}
		if x.IsNull() {
			null = true
			continue
		}
		if compareValues(v, x) == 0 {
			return value.Bool(true), nil
		}
	}
	if null {
		return value.Null(), nil
	}
	return value.Bool(false), nil
}

func (n *likeNode) evalRow(row []value.Value) (value.Value, error) {
	v, err := n.v.evalRow(row)
	if err != nil || v.IsNull() {
		return v, err
	}
	return value.Bool(n.pattern.Match(v.AsString())), nil
}

// ---- vectorised ----

// boolVec returns a boolean vec of n rows, all NULL when valid is false.
func boolVec(n int, allValid bool) *vec {
	v := &vec{t: dtBool, n: n, i: make([]int64, n)}
	if !allValid {
		v.valid = make([]uint64, (n+63)/64)
	}
	return v
}

func (n *cmpNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	l, err := n.l.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	r, err := n.r.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	out := boolVec(c.n, true)
	nullSafe := n.op == OpNullSafeEq
	if !nullSafe {
		out.valid = andValidity(l.valid, r.valid, c.n)
		if kindOf(n.t) == tkNull {
			out.valid = make([]uint64, (c.n+63)/64)
			return out, nil
		}
	}
	cmp := compareFunc(l, r)
	for i := range c.n {
		lv, rv := bitAt(l.valid, i), bitAt(r.valid, i)
		if !lv || !rv {
			if nullSafe && !lv && !rv {
				out.i[i] = 1
			}
			continue
		}
		if opHolds(n.op, cmp(i)) {
			out.i[i] = 1
		}
	}
	return out, nil
}

// compareFunc compares row i of two vecs of one comparison type.
func compareFunc(l, r *vec) func(i int) int {
	switch kindOf(l.t) {
	case tkFloat:
		return func(i int) int { return value.CompareFloat(l.f[i], r.f[i]) }
	case tkDecimal:
		return func(i int) int { return l.d[i].Cmp(r.d[i]) }
	case tkString, tkBinary:
		return func(i int) int { return strings.Compare(l.s[i], r.s[i]) }
	case tkNull:
		return func(int) int { return 0 }
	}
	return func(i int) int {
		switch a, b := l.i[i], r.i[i]; {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
}

func (n *logicNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	words := (c.n + 63) / 64
	// decided: rows whose result is known (a FALSE term of an AND, a TRUE one of an OR);
	// null: rows where some term was NULL.
	decided := make([]uint64, words)
	null := make([]uint64, words)
	pending := make([]uint64, words)
	for k, t := range n.terms {
		if k == 0 {
			if mask == nil {
				fillWords(pending, c.n, true)
			} else {
				copy(pending, mask)
			}
		} else {
			for w := range pending {
				pending[w] &^= decided[w]
			}
			if allZero(pending) {
				break
			}
		}
		v, err := t.evalVec(c, pending)
		if err != nil {
			return nil, err
		}
		for i := range c.n {
			if !bitAt(pending, i) {
				continue
			}
			if !bitAt(v.valid, i) {
				null[i>>6] |= 1 << (uint(i) & 63)
				continue
			}
			if (v.i[i] != 0) != n.and {
				decided[i>>6] |= 1 << (uint(i) & 63)
			}
		}
	}
	out := boolVec(c.n, false)
	for i := range c.n {
		switch {
		case bitAt(decided, i):
			setBit(out.valid, i)
			out.i[i] = b2i(!n.and)
		case !bitAt(null, i):
			setBit(out.valid, i)
			out.i[i] = b2i(n.and)
		}
	}
	return out, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// strictBoolVec evaluates the operand of a boolean operator that is NULL exactly
// where its operand is (NOT, LIKE): it returns the operand's vec and a boolean vec
// for the result sharing the operand's validity, all false. When the operand is the
// NULL literal, v is nil and out is all NULL, the operator's whole answer.
func strictBoolVec(c *scalarCtx, operand scalarNode, mask []uint64) (v, out *vec, err error) {
	v, err = operand.evalVec(c, mask)
	if err != nil {
		return nil, nil, err
	}
	out = boolVec(c.n, true)
	if kindOf(v.t) == tkNull {
		out.valid = make([]uint64, (c.n+63)/64)
		return nil, out, nil
	}
	out.valid = v.valid
	return v, out, nil
}

func (n *notNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	v, out, err := strictBoolVec(c, n.v, mask)
	if err != nil || v == nil {
		return out, err
	}
	for i, x := range v.i {
		out.i[i] = b2i(x == 0)
	}
	return out, nil
}

func (n *isNullNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	v, err := n.v.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	out := boolVec(c.n, true)
	for i := range c.n {
		out.i[i] = b2i(bitAt(v.valid, i) == n.negated)
	}
	return out, nil
}

func (n *inNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	v, err := n.v.evalVec(c, mask)
	if err != nil {
		return nil, err
	}
	words := (c.n + 63) / 64
	found := make([]uint64, words)
	null := make([]uint64, words)
	pending := andValidity(mask, v.valid, c.n)
	if pending == nil {
		pending = make([]uint64, words)
		fillWords(pending, c.n, true)
	} else {
		pending = append([]uint64(nil), pending...)
	}
	for _, it := range n.list {
		if allZero(pending) {
			break
		}
		x, err := it.evalVec(c, pending)
		if err != nil {
			return nil, err
		}
		cmp := compareFunc(v, x)
		for i := range c.n {
			if !bitAt(pending, i) {
				continue
			}
			if !bitAt(x.valid, i) {
				setBit(null, i)
				continue
			}
			if cmp(i) == 0 {
				setBit(found, i)
				clearBit(pending, i)
			}
		}
	}
	out := boolVec(c.n, false)
	for i := range c.n {
		if !bitAt(v.valid, i) {
			continue
		}
		switch {
		case bitAt(found, i):
			setBit(out.valid, i)
			out.i[i] = 1
		case !bitAt(null, i):
			setBit(out.valid, i)
		}
	}
	return out, nil
}

func (n *likeNode) evalVec(c *scalarCtx, mask []uint64) (*vec, error) {
	v, out, err := strictBoolVec(c, n.v, mask)
	if err != nil || v == nil {
		return out, err
	}
	for i := range c.n {
		if bitAt(v.valid, i) && bitAt(mask, i) && n.pattern.Match(v.s[i]) {
			out.i[i] = 1
		}
	}
	return out, nil
}
