package table

import (
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/log"
)

// checkColumnChange refuses an ALTER of the columns paths (op: "rename", "drop" or
// "change the type of") that a write rule of md depends on, as Delta Spark does
// (DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE, DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE,
// DELTA_IDENTITY_COLUMNS_ALTER_COLUMN_NOT_SUPPORTED): a column a CHECK constraint or a
// column invariant references, the source column of a generated column (for a type
// change also the generated column itself, whose type is its expression's), or an
// identity column. A path conflicts with a reference when either is a prefix of the
// other (a struct and its fields). An expression skiplake cannot parse might use
// any column, so it refuses every such change. The error names the column and every
// rule in the way; nothing is committed.
func checkColumnChange(md log.Metadata, op string, paths [][]string) error {
	schema, err := log.ParseSchema(md.SchemaString)
	if err != nil {
		return err
	}
	type rule struct{ kind, name, text string }
	var checks, gens []rule
	cs := log.CheckConstraints(md)
	for _, name := range log.SortedConstraintNames(cs) {
		checks = append(checks, rule{"constraint", name, cs[name]})
	}
	var identity []string
	var walk func(fields []log.StructField, prefix string)
	walk = func(fields []log.StructField, prefix string) {
		for i := range fields {
			f := &fields[i]
			p := prefix + f.Name
			if raw, ok := f.Metadata[log.InvariantsKey]; ok {
				text, err := log.Invariant(raw)
				if err != nil {
					text = fmt.Sprint(raw)
				}
				checks = append(checks, rule{"invariant", p, text})
			}
			if g, ok := f.Metadata[log.GenerationExpressionKey].(string); ok {
				gens = append(gens, rule{"generated", p, g})
			}
			if _, ok := f.Metadata[log.IdentityStartKey]; ok {
				identity = append(identity, p)
			}
			if st, ok := f.Type.(*log.StructType); ok {
				walk(st.Fields, p+".")
			}
		}
	}
	walk(schema.Fields, "")

	overlaps := func(a, b []string) bool {
		n := min(len(a), len(b))
		for i := 0; i < n; i++ {
			if !strings.EqualFold(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	uses := func(text string, path []string) bool {
		e, err := expr.ParseSQL(text)
		if err != nil {
			return true
		}
		refs, ok := columnRefs(e, nil)
		if !ok {
			return true
		}
		for _, r := range refs {
			if overlaps(r, path) {
				return true
			}
		}
		return false
	}
	for _, path := range paths {
		col := strings.Join(path, ".")
		for _, id := range identity {
			if overlaps(strings.Split(id, "."), path) {
				return fmt.Errorf("%w: cannot %s column %s: ALTER TABLE is not supported for IDENTITY columns (%s is one)", ErrColumnInUse, op, col, id)
			}
		}
		var inWay []string
		for _, c := range checks {
			if uses(c.text, path) {
				if c.kind == "invariant" {
					inWay = append(inWay, fmt.Sprintf("invariant on %s (%s)", c.name, c.text))
				} else {
					inWay = append(inWay, fmt.Sprintf("%s (%s)", c.name, c.text))
				}
			}
		}
		if len(inWay) > 0 {
			return fmt.Errorf("%w: cannot %s column %s because this column is referenced by the following check constraint(s): %s (drop them first)",
				ErrColumnInUse, op, col, strings.Join(inWay, ", "))
		}
		inWay = nil
		for _, g := range gens {
			if op == opChangeType && overlaps(strings.Split(g.name, "."), path) {
				return fmt.Errorf("%w: cannot change the type of column %s: generated column %s (GENERATED ALWAYS AS (%s)) has its expression's type",
					ErrColumnInUse, col, g.name, g.text)
			}
			if uses(g.text, path) {
				inWay = append(inWay, fmt.Sprintf("%s (GENERATED ALWAYS AS (%s))", g.name, g.text))
			}
		}
		if len(inWay) > 0 {
			return fmt.Errorf("%w: cannot %s column %s because this column is referenced by the following generated column(s): %s",
				ErrColumnInUse, op, col, strings.Join(inWay, ", "))
		}
	}
	return nil
}

// The operations checkColumnChange names.
const (
	opRename     = "rename"
	opDrop       = "drop"
	opChangeType = "change the type of"
)

// columnRefs appends the column paths e references to out; ok is false when e holds
// a node this walk does not know (then it may reference anything).
func columnRefs(e expr.Expr, out [][]string) ([][]string, bool) {
	all := func(xs ...expr.Expr) bool {
		for _, x := range xs {
			if x == nil {
				continue
			}
			var ok bool
			if out, ok = columnRefs(x, out); !ok {
				return false
			}
		}
		return true
	}
	var ok bool
	switch e := e.(type) {
	case *expr.ColumnRef:
		return append(out, e.Path), true
	case *expr.Literal, expr.Constant:
		return out, true
	case *expr.Comparison:
		ok = all(e.Left, e.Right)
	case *expr.BetweenExpr:
		ok = all(e.Value, e.Low, e.High)
	case *expr.InExpr:
		ok = all(append([]expr.Expr{e.Value}, e.List...)...)
	case *expr.IsNullExpr:
		ok = all(e.Value)
	case *expr.LikeExpr:
		ok = all(e.Value)
	case *expr.AndExpr:
		ok = all(e.Terms...)
	case *expr.OrExpr:
		ok = all(e.Terms...)
	case *expr.NotExpr:
		ok = all(e.Term)
	case *expr.ArithExpr:
		ok = all(e.Left, e.Right)
	case *expr.NegExpr:
		ok = all(e.Value)
	case *expr.CastExpr:
		ok = all(e.Value)
	case *expr.ConcatExpr:
		ok = all(e.Args...)
	case *expr.FuncExpr:
		ok = all(e.Args...)
	case *expr.CaseExpr:
		ok = all(e.Else)
		for _, w := range e.Whens {
			ok = ok && all(w.Cond, w.Value)
		}
	default:
		return out, false
	}
	return out, ok
}
