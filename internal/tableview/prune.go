package tableview

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

// Partition pruning through generation expressions (Delta Spark's
// OptimizeGeneratedColumn). A partition column generated from a data column — d date
// GENERATED ALWAYS AS (CAST(ts AS DATE)), y int GENERATED ALWAYS AS (YEAR(ts)) — holds
// g(ts) in every row, since every writer enforces the generation expression
// (PROTOCOL.md "Generated Columns"). A filter on ts then implies one on d, which the
// partition pass can decide: ts >= L implies d >= g(L) for a non-decreasing g. The
// implied predicate is only ANDed to the filter for planning; rows are rechecked
// against the filter itself.
//
// Soundness (S1). The implied predicate must hold for every row the filter accepts.
// It is derived per comparison of the source column with a literal, through AND (the
// conjunction of what each term implies) and OR (only when every term implies
// something); anything else implies nothing. The functions:
//
//   - CAST(src AS DATE), TO_DATE(src), YEAR(src) (src a date or timestamp, YEAR also
//     of CAST(src AS DATE)): non-decreasing, so <, <=, >, >=, = and IN are mapped
//     (Spark maps the same).
//   - MONTH(src), DAY(src)/DAYOFMONTH(src): not monotone, so only = and IN map, to the
//     set of values g takes at the literal (Spark likewise maps them for equality only).
//   - a plain copy (GENERATED ALWAYS AS (src)): every comparison maps unchanged.
//
// IS NULL and IS NOT NULL map too: each function is NULL exactly when its argument is.
//
// Time zones: skiplake computes these functions in UTC, but a table written by Spark
// in another session time zone holds the date parts of ts in that zone, which is up
// to 18 hours away. For a timestamp (with time zone) source the implied bounds are
// therefore widened by a day: ts >= L implies d >= g(L - 1 day), ts = L implies d
// between g(L - 1 day) and g(L + 1 day), and for MONTH and DAY the values g takes at
// L - 1 day, L and L + 1 day (the window is two days long and these functions change
// at most once a day, so it holds at most three pieces, each containing one of the
// three points). timestamp_ntz and date sources have no zone and are not widened.
// The cost is at most one more partition read at each end of a range.

// genKind is a generation function that partition pruning understands.
type genKind uint8

const (
	genCopy   genKind = iota + 1 // the source column itself
	genToDate                    // CAST(src AS DATE), TO_DATE(src)
	genYear                      // YEAR(src)
	genMonth                     // MONTH(src)
	genDay                       // DAY(src), DAYOFMONTH(src)
)

const microsPerDay int64 = 86_400_000_000

// genPartition is a partition column generated from a data column.
type genPartition struct {
	part   string // the partition column (logical name)
	source string // the data column it is computed from (logical name, top level)
	kind   genKind
	src    arrow.DataType // the source column's type
}

// resolveGeneratedPartitions finds the partition columns whose generation expression
// partition pruning understands (only when the protocol supports generated columns:
// on an older protocol the metadata binds no writer).
func (v *View) resolveGeneratedPartitions() {
	if v.rules == nil {
		return
	}
	for _, g := range v.rules.Generated {
		if !v.IsPartition(g.Name) {
			continue
		}
		e, err := expr.ParseSQL(g.Expr)
		if err != nil {
			continue
		}
		kind, source, ok := generationKind(e)
		if !ok {
			continue
		}
		i := fieldIndexFold(v.logical, source)
		if i < 0 || strings.EqualFold(source, g.Name) {
			continue
		}
		src := v.logical.Field(i).Type
		switch src.(type) {
		case *arrow.TimestampType, *arrow.Date32Type:
		default:
			if kind != genCopy {
				continue
			}
		}
		if kind == genCopy && !arrow.TypeEqual(src, v.logical.Field(g.Index).Type) {
			continue
		}
		v.genParts = append(v.genParts, genPartition{part: g.Name, source: v.logical.Field(i).Name, kind: kind, src: src})
	}
}

// generationKind recognises the generation expressions of genKind.
func generationKind(e expr.Expr) (genKind, string, bool) {
	column := func(e expr.Expr) (string, bool) {
		c, ok := e.(*expr.ColumnRef)
		if !ok || len(c.Path) != 1 {
			return "", false
		}
		return c.Path[0], true
	}
	// toDate recognises CAST(c AS DATE) and TO_DATE(c).
	toDate := func(e expr.Expr) (string, bool) {
		switch e := e.(type) {
		case *expr.CastExpr:
			if _, ok := e.Type.(*arrow.Date32Type); ok {
				return column(e.Value)
			}
		case *expr.FuncExpr:
			if strings.EqualFold(e.Name, "to_date") && len(e.Args) == 1 {
				return column(e.Args[0])
			}
		}
		return "", false
	}
	if c, ok := column(e); ok {
		return genCopy, c, true
	}
	if c, ok := toDate(e); ok {
		return genToDate, c, true
	}
	f, ok := e.(*expr.FuncExpr)
	if !ok || len(f.Args) != 1 {
		return 0, "", false
	}
	var kind genKind
	switch strings.ToLower(f.Name) {
	case "year":
		kind = genYear
	case "month":
		kind = genMonth
	case "day", "dayofmonth":
		kind = genDay
	default:
		return 0, "", false
	}
	if c, ok := column(f.Args[0]); ok {
		return kind, c, true
	}
	if c, ok := toDate(f.Args[0]); ok {
		return kind, c, true // YEAR(CAST(ts AS DATE)) = YEAR(ts)
	}
	return 0, "", false
}

func fieldIndexFold(s *arrow.Schema, name string) int {
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// HasGeneratedPartitions reports whether some partition column is generated from a
// data column in a way ImpliedPartitionFilter uses.
func (v *View) HasGeneratedPartitions() bool { return len(v.genParts) > 0 }

// ImpliedPartitionFilter returns a predicate on generated partition columns that
// every row satisfying pred also satisfies (see the comment at the top of prune.go),
// or nil when pred implies nothing about them. pred is bound to a schema whose
// top-level columns have the table's logical names (a scan's). Planning ANDs the
// result to pred so the partition pass can skip partitions; it is never a filter of
// rows by itself.
func (v *View) ImpliedPartitionFilter(pred *expr.Bound) expr.Expr {
	if len(v.genParts) == 0 || pred == nil {
		return nil
	}
	return v.implied(pred.Root())
}

func (v *View) implied(p expr.Pred) expr.Expr {
	switch p := p.(type) {
	case *expr.AndPred:
		var terms []expr.Expr
		for _, t := range p.Terms {
			if e := v.implied(t); e != nil {
				terms = append(terms, e)
			}
		}
		if len(terms) == 0 {
			return nil
		}
		return expr.And(terms...)
	case *expr.OrPred:
		terms := make([]expr.Expr, 0, len(p.Terms))
		for _, t := range p.Terms {
			e := v.implied(t)
			if e == nil {
				return nil
			}
			terms = append(terms, e)
		}
		return expr.Or(terms...)
	case *expr.CmpPred:
		return v.forColumn(p.Col, func(g genPartition) expr.Expr { return g.compare(p.Op, p.Value) })
	case *expr.InPred:
		if p.Negated {
			return nil
		}
		return v.forColumn(p.Col, func(g genPartition) expr.Expr {
			terms := make([]expr.Expr, 0, len(p.Values))
			for _, x := range p.Values {
				e := g.compare(expr.OpEq, x)
				if e == nil {
					return nil
				}
				terms = append(terms, e)
			}
			return expr.Or(terms...)
		})
	case *expr.NullPred:
		return v.forColumn(p.Col, func(g genPartition) expr.Expr {
			if p.Negated {
				return expr.IsNotNull(expr.Col(g.part))
			}
			return expr.IsNull(expr.Col(g.part))
		})
	}
	return nil
}

// forColumn ANDs what derive gives for each generated partition column computed
// from the top-level column c (nil when there is none, or none gives anything).
func (v *View) forColumn(c *expr.BoundColumn, derive func(genPartition) expr.Expr) expr.Expr {
	if len(c.Path) != 1 {
		return nil
	}
	var terms []expr.Expr
	for _, g := range v.genParts {
		if !strings.EqualFold(g.source, c.Path[0]) || !arrow.TypeEqual(g.src, c.Type) {
			continue
		}
		if e := derive(g); e != nil {
			terms = append(terms, e)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	return expr.And(terms...)
}

// compare returns what `source op x` implies about the partition column (nil:
// nothing). x is a non-null value of the source column's kind.
func (g genPartition) compare(op expr.Op, x value.Value) expr.Expr {
	col := expr.Col(g.part)
	if g.kind == genCopy {
		if op == expr.OpNullSafeEq {
			op = expr.OpEq // x is not NULL
		}
		return expr.Compare(op, col, expr.Lit(x))
	}
	slack := int64(0)
	if t, ok := g.src.(*arrow.TimestampType); ok && t.TimeZone != "" {
		slack = microsPerDay
	}
	at := func(shift int64) (value.Value, bool) { return g.apply(x, shift) }
	lo, okLo := at(-slack)
	hi, okHi := at(slack)
	switch g.kind {
	case genToDate, genYear: // non-decreasing
		switch op {
		case expr.OpGt, expr.OpGe:
			if okLo {
				return expr.Ge(col, expr.Lit(lo))
			}
		case expr.OpLt, expr.OpLe:
			if okHi {
				return expr.Le(col, expr.Lit(hi))
			}
		case expr.OpEq, expr.OpNullSafeEq:
			if okLo && okHi {
				return expr.Between(col, expr.Lit(lo), expr.Lit(hi))
			}
		}
	case genMonth, genDay: // equality only
		if op != expr.OpEq && op != expr.OpNullSafeEq {
			return nil
		}
		mid, okMid := at(0)
		if !okLo || !okMid || !okHi {
			return nil
		}
		return expr.In(col, expr.Lit(lo), expr.Lit(mid), expr.Lit(hi))
	}
	return nil
}

// apply computes the partition value g gives for the source value x shifted by
// shift microseconds (timestamps only; dates take shift 0), in UTC as skiplake's
// evaluator does; ok is false when the shift leaves the timestamp range.
func (g genPartition) apply(x value.Value, shift int64) (value.Value, bool) {
	var days int64
	switch x.Kind() {
	case value.KindDate:
		days = x.AsInt64()
	case value.KindTimestamp, value.KindTimestampNTZ:
		t := x.AsInt64()
		if (shift > 0 && t > math.MaxInt64-shift) || (shift < 0 && t < math.MinInt64-shift) {
			return value.Value{}, false
		}
		days = value.FloorDiv(t+shift, microsPerDay)
	default:
		return value.Value{}, false
	}
	if g.kind == genToDate {
		return value.Date(days), true
	}
	y, m, d := value.CivilFromDays(days)
	switch g.kind {
	case genYear:
		return value.Int64(y), true
	case genMonth:
		return value.Int64(m), true
	default:
		return value.Int64(d), true
	}
}
