package tableview

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/value"
)

// WriteRules are the rules a version's metadata sets for every row written to the
// table (PROTOCOL.md "Column Invariants", "CHECK Constraints", "Generated Columns",
// "Identity Columns"), parsed and bound once, when the view is built, against the
// logical schema. NOT NULL (nullable: false, at any depth) is not here: the writers'
// conformer checks it with the schema.
//
// Checks lists the CHECK constraints (by name) and then the column invariants (in
// schema order); a row satisfies one only when it evaluates to TRUE (FALSE and NULL
// both violate, as PROTOCOL.md and Delta Spark's DeltaInvariantChecker say).
// Generated lists the generated columns and Identity the identity columns, in schema
// order; both are honoured only when the protocol supports their feature (a column
// with the metadata on an older protocol is a plain column, as in Spark).
//
// WriteRules are immutable and safe for concurrent use.
type WriteRules struct {
	Checks    []*Check
	Generated []*Generated
	Identity  []*IdentityColumn
	fp        string
}

// Check is a CHECK constraint or a column invariant.
type Check struct {
	// Name is the constraint's name (as stored after delta.constraints.), or for an
	// invariant the column's path.
	Name string
	// Invariant is set for a column invariant (delta.invariants).
	Invariant bool
	// Expr is the SQL expression as stored.
	Expr string
	// Bound is Expr bound to the logical schema (expr.BindCheck).
	Bound *expr.Bound
}

// Describe names the rule for messages: "CHECK constraint pos" or "invariant on
// column x".
func (c *Check) Describe() string {
	if c.Invariant {
		return "invariant on column " + c.Name
	}
	return "CHECK constraint " + c.Name
}

// Generated is a generated column.
type Generated struct {
	// Name is the column (top level), Index its position in the logical schema.
	Name  string
	Index int
	// Expr is the generation expression as stored.
	Expr string
	// Value is Expr bound to the logical schema (expr.BindExpression); its type is the
	// column's.
	Value *expr.BoundScalar
	// Equal is `column <=> (Expr)` bound with expr.BindCheck: TRUE for the rows whose
	// value is the generated one (the writer requirement of PROTOCOL.md).
	Equal *expr.Bound
	// Sources are the columns Expr reads (top-level names, schema spelling).
	Sources []string
}

// IdentityColumn is an identity column.
type IdentityColumn struct {
	// Name is the column (top level, bigint), Index its position in the logical schema.
	Name  string
	Index int
	log.Identity
}

// WriteRules returns the version's write rules, or an error (matching
// ErrWriteRules) naming the rule skiplake cannot enforce: an expression that does not
// parse, refers to a column the table lacks, or uses a function or conversion skiplake
// does not evaluate exactly as Spark (see expr.Functions), a generated column whose
// expression has another type, an identity column that is not a bigint. Every writer
// that adds rows asks for them and refuses to write on error; readers and OPTIMIZE
// (which adds no row) do not need them.
func (v *View) WriteRules() (*WriteRules, error) { return v.rules, v.rulesErr }

// Empty reports whether there is no rule to apply.
func (r *WriteRules) Empty() bool {
	return len(r.Checks) == 0 && len(r.Generated) == 0 && len(r.Identity) == 0
}

// Fingerprint is a canonical text of the rules: equal fingerprints, equal rules
// (identity high-water marks excluded).
func (r *WriteRules) Fingerprint() string { return r.fp }

// GeneratedColumn returns the generated column name (case-insensitively), or nil.
func (r *WriteRules) GeneratedColumn(name string) *Generated {
	for _, g := range r.Generated {
		if strings.EqualFold(g.Name, name) {
			return g
		}
	}
	return nil
}

// IdentityOf returns the identity column name (case-insensitively), or nil.
func (r *WriteRules) IdentityOf(name string) *IdentityColumn {
	for _, c := range r.Identity {
		if strings.EqualFold(c.Name, name) {
			return c
		}
	}
	return nil
}

// resolveRules builds v.rules (or v.rulesErr).
func (v *View) resolveRules() {
	r := &WriteRules{}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	logical := v.logical
	conf := log.CheckConstraints(v.snap.Metadata())
	for _, name := range log.SortedConstraintNames(conf) {
		text := conf[name]
		b, err := bindCheck(text, logical)
		if err != nil {
			fail("CHECK constraint %s (%s): %w", name, text, err)
			continue
		}
		r.Checks = append(r.Checks, &Check{Name: name, Expr: text, Bound: b})
	}
	var walk func(fields []log.StructField, path string)
	walk = func(fields []log.StructField, path string) {
		for i := range fields {
			f := &fields[i]
			p := joinPath(path, f.Name)
			if raw, ok := f.Metadata[log.InvariantsKey]; ok {
				text, err := log.Invariant(raw)
				if err != nil {
					fail("invariant on column %s: %w", p, err)
				} else if b, err := bindCheck(text, logical); err != nil {
					fail("invariant on column %s (%s): %w", p, text, err)
				} else {
					r.Checks = append(r.Checks, &Check{Name: p, Invariant: true, Expr: text, Bound: b})
				}
			}
			if st, ok := f.Type.(*log.StructType); ok {
				walk(st.Fields, p)
			}
		}
	}
	walk(v.delta.Fields, "")
	proto := v.snap.Protocol()
	if proto.Supports(log.FeatureGeneratedColumns) {
		r.Generated = v.resolveGenerated(fail)
	}
	if proto.Supports(log.FeatureIdentityColumns) {
		for i := range v.delta.Fields {
			f := &v.delta.Fields[i]
			id, ok, err := log.FieldIdentity(f)
			switch {
			case err != nil:
				fail("identity column %s: %w", f.Name, err)
				continue
			case !ok:
				continue
			}
			if _, isLong := v.logical.Field(i).Type.(*arrow.Int64Type); !isLong {
				fail("identity column %s: type %s is not supported for IDENTITY columns (bigint only)", f.Name, f.Type.TypeName())
				continue
			}
			if v.IsPartition(f.Name) {
				fail("identity column %s: partitioning by an IDENTITY column is not supported", f.Name)
				continue
			}
			if _, gen := f.Metadata[log.GenerationExpressionKey]; gen {
				fail("identity column %s: an IDENTITY column cannot also have a generation expression", f.Name)
				continue
			}
			r.Identity = append(r.Identity, &IdentityColumn{Name: f.Name, Index: i, Identity: id})
		}
	}
	if len(errs) > 0 {
		v.rulesErr = v.errorf("%w: %w", ErrWriteRules, errors.Join(errs...))
		return
	}
	r.fp = fingerprint(r)
	v.rules = r
}

// resolveGenerated resolves the generated columns (top level only: Delta Spark has
// no nested generated columns) of the schema, reporting problems through fail.
func (v *View) resolveGenerated(fail func(string, ...any)) []*Generated {
	isGen := map[string]bool{}
	for _, f := range v.delta.Fields {
		if _, ok := f.Metadata[log.GenerationExpressionKey]; ok {
			isGen[strings.ToLower(f.Name)] = true
		}
	}
	var out []*Generated
	for i := range v.delta.Fields {
		f := &v.delta.Fields[i]
		raw, ok := f.Metadata[log.GenerationExpressionKey]
		if !ok {
			continue
		}
		text, isString := raw.(string)
		if !isString {
			fail("generated column %s: %s is not a string", f.Name, log.GenerationExpressionKey)
			continue
		}
		e, err := expr.ParseSQL(text)
		if err != nil {
			fail("generated column %s (%s): %w", f.Name, text, err)
			continue
		}
		val, err := expr.BindExpression(e, v.logical)
		if err != nil {
			fail("generated column %s (%s): %w", f.Name, text, err)
			continue
		}
		var sources []string
		bad := ""
		for _, c := range val.Columns() {
			top := c.Path[0]
			if isGen[strings.ToLower(top)] {
				bad = top
			}
			if !containsNameFold(sources, top) {
				sources = append(sources, top)
			}
		}
		if bad != "" {
			fail("generated column %s (%s): a generated column cannot use another generated column or itself (%s)", f.Name, text, bad)
			continue
		}
		want := v.logical.Field(i).Type
		if !arrow.TypeEqual(val.Type(), want) {
			fail("generated column %s (%s): the expression type is %s, but the column type is %s", f.Name, text, value.DisplayType(val.Type()), value.DisplayType(want))
			continue
		}
		eq, err := expr.BindCheck(expr.NullSafeEq(expr.Col(f.Name), e), v.logical)
		if err != nil {
			fail("generated column %s (%s): %w", f.Name, text, err)
			continue
		}
		out = append(out, &Generated{Name: f.Name, Index: i, Expr: text, Value: val, Equal: eq, Sources: sources})
	}
	return out
}

func containsNameFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// bindCheck parses and binds a boolean SQL expression.
func bindCheck(text string, logical *arrow.Schema) (*expr.Bound, error) {
	e, err := expr.ParseSQL(text)
	if err != nil {
		return nil, err
	}
	return expr.BindCheck(e, logical)
}

func fingerprint(r *WriteRules) string {
	var parts []string
	for _, c := range r.Checks {
		parts = append(parts, fmt.Sprintf("check %v %q %q", c.Invariant, c.Name, c.Expr))
	}
	for _, g := range r.Generated {
		parts = append(parts, fmt.Sprintf("gen %q %q", g.Name, g.Expr))
	}
	for _, c := range r.Identity {
		parts = append(parts, fmt.Sprintf("id %q %d %d %v", c.Name, c.Start, c.Step, c.AllowExplicitInsert))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// ViolationError reports a row that breaks a write rule: a CHECK constraint or
// invariant that is not TRUE, or a generated column whose value is not its
// expression's. It matches ErrConstraintViolation.
type ViolationError struct {
	// Rule describes the rule ("CHECK constraint pos", "invariant on column x",
	// "generated column d").
	Rule string
	// Expr is the rule's expression as stored.
	Expr string
	// Values are the violating row's values of the columns the rule reads, rendered,
	// sorted by column.
	Values []string
	// Detail says more (the generated value expected).
	Detail string
}

// Error renders the message, as Delta Spark's: `CHECK constraint pos (id > 0)
// violated by row with values: id : -1`.
func (e *ViolationError) Error() string {
	s := fmt.Sprintf("tableview: %s (%s) violated by row with values: %s", e.Rule, e.Expr, strings.Join(e.Values, ", "))
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns ErrConstraintViolation.
func (e *ViolationError) Unwrap() error { return ErrConstraintViolation }

// rowValues renders the columns b reads for row i of rec as "col : value".
func rowValues(cols []*expr.BoundColumn, vals []value.Value) []string {
	out := make([]string, len(cols))
	for k, c := range cols {
		v := vals[c.Ordinal]
		s := "NULL"
		if !v.IsNull() {
			s = v.String()
		}
		out[k] = c.Name() + " : " + s
	}
	sort.Strings(out)
	return out
}

// Verify checks rows of the logical schema against the CHECK constraints, the
// invariants and the generated columns, and returns a *ViolationError for the
// first rule and row that fails (nil when every row satisfies every rule). An
// expression that fails to evaluate (an overflow, a value skiplake cannot compute as
// Spark would) is returned as it is. rec is neither retained nor released.
func (r *WriteRules) Verify(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	for _, c := range r.Checks {
		if err := c.Verify(rec); err != nil {
			return err
		}
	}
	for _, g := range r.Generated {
		sel, err := g.Equal.Evaluate(rec)
		if err != nil {
			return fmt.Errorf("tableview: generated column %s (%s): %w", g.Name, g.Expr, err)
		}
		if i := firstMiss(sel, n); i >= 0 {
			vals, err := g.Equal.RowValues(rec, i)
			if err != nil {
				return err
			}
			detail := ""
			if sv, err := g.Value.RowValues(rec, i); err == nil {
				if want, err := g.Value.EvaluateRow(sv); err == nil {
					got := vals[g.Equal.Columns()[0].Ordinal]
					detail = fmt.Sprintf("%s is %s, the expression gives %s", g.Name, showValue(got), showValue(want))
				}
			}
			return &ViolationError{Rule: "generated column " + g.Name, Expr: g.Expr, Values: rowValues(g.Equal.Columns(), vals), Detail: detail}
		}
	}
	return nil
}

func showValue(v value.Value) string {
	if v.IsNull() {
		return "NULL"
	}
	return v.String()
}

// firstMiss returns the first of n rows sel does not hold, or -1.
func firstMiss(sel *expr.Selection, n int) int {
	if sel.Count() == n {
		return -1
	}
	for i := 0; i < n; i++ {
		if !sel.Contains(i) {
			return i
		}
	}
	return -1
}

// Verify checks rows of the logical schema against the constraint or invariant and
// returns a *ViolationError for the first row where it is not TRUE (nil when none).
// rec is neither retained nor released.
func (c *Check) Verify(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	sel, err := c.Bound.Evaluate(rec)
	if err != nil {
		return fmt.Errorf("tableview: %s (%s): %w", c.Describe(), c.Expr, err)
	}
	if i := firstMiss(sel, n); i >= 0 {
		vals, err := c.Bound.RowValues(rec, i)
		if err != nil {
			return err
		}
		return &ViolationError{Rule: c.Describe(), Expr: c.Expr, Values: rowValues(c.Bound.Columns(), vals)}
	}
	return nil
}

// BindCheck parses and binds a CHECK constraint's SQL text against the logical
// schema (a new constraint, before it is added), or returns an error matching
// ErrWriteRules naming what skiplake cannot evaluate.
func (v *View) BindCheck(name, text string) (*Check, error) {
	return BindCheck(name, text, v.logical)
}

// BindCheck is View.BindCheck for a logical schema (a table being created).
func BindCheck(name, text string, logical *arrow.Schema) (*Check, error) {
	b, err := bindCheck(text, logical)
	if err != nil {
		return nil, fmt.Errorf("%w: CHECK constraint %s (%s): %w", ErrWriteRules, name, text, err)
	}
	return &Check{Name: name, Expr: text, Bound: b}, nil
}
