package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// CheckConstraint is a CHECK constraint (ALTER TABLE ADD CONSTRAINT name CHECK
// (expr)): a name (letters, digits and underscores) and a Spark SQL boolean
// expression over the table's columns, stored as delta.constraints.<name>.
type CheckConstraint struct {
	Name string `json:"name"`
	Expr string `json:"expr"`
}

// withConstraints adds the CHECK constraints of a table being created to its
// metadata (and the protocol their feature needs), each checked to bind to the
// table's schema ds.
func withConstraints(proto log.Protocol, md log.Metadata, ds *log.StructType, cs []CheckConstraint) (log.Protocol, log.Metadata, error) {
	if len(cs) == 0 {
		return proto, md, nil
	}
	logical, err := log.ToArrow(ds, log.ArrowOptions{})
	if err != nil {
		return proto, md, err
	}
	for _, c := range cs {
		if proto, md, err = log.AddCheckConstraint(proto, md, c.Name, c.Expr); err != nil {
			return proto, md, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		if _, err := tableview.BindCheck(c.Name, c.Expr, logical); err != nil {
			return proto, md, err
		}
	}
	return proto, md, nil
}

// applyColumnRules records rules (CreateOptions.ColumnRules) in the metadata of the
// top-level fields of ds they name.
func applyColumnRules(ds *log.StructType, rules []ColumnRule) error {
	seen := map[int]bool{}
	for _, r := range rules {
		i := -1
		for j := range ds.Fields {
			if strings.EqualFold(ds.Fields[j].Name, r.Column) {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("%w: column rule for %q: the schema has no such top-level column", ErrInvalidArgument, r.Column)
		}
		if seen[i] {
			return fmt.Errorf("%w: column %q: more than one rule", ErrInvalidArgument, r.Column)
		}
		seen[i] = true
		n := 0
		for _, set := range []bool{r.Generated != "", r.Identity != nil, r.Invariant != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%w: column %q: a rule sets exactly one of a generation expression, an identity or an invariant", ErrInvalidArgument, r.Column)
		}
		f := &ds.Fields[i]
		md := make(map[string]any, len(f.Metadata)+3)
		for k, v := range f.Metadata {
			md[k] = v
		}
		switch {
		case r.Generated != "":
			md[log.GenerationExpressionKey] = r.Generated
		case r.Invariant != "":
			md[log.InvariantsKey] = log.InvariantJSON(r.Invariant)
		default:
			id := r.Identity
			if id.HighWaterMark != nil {
				return fmt.Errorf("%w: identity column %q: a new table has no high-water mark", ErrInvalidArgument, r.Column)
			}
			if id.Step == 0 {
				return fmt.Errorf("%w: identity column %q: IDENTITY column step cannot be 0", ErrInvalidArgument, r.Column)
			}
			for k, v := range log.IdentityMetadata(id.Start, id.Step, !id.Always) {
				md[k] = v
			}
		}
		f.Metadata = md
	}
	return nil
}

// checkNewRules resolves the write rules of a table about to be created (md, p) as
// every writer will (tableview.WriteRules), so a rule skiplake cannot enforce is
// refused at CREATE rather than at the first write.
func checkNewRules(md log.Metadata, p log.Protocol) error {
	v, err := tableview.New(log.New(storage.NewMemory()).NewTableSnapshot(md, p))
	if err != nil {
		return err
	}
	_, err = v.WriteRules()
	return err
}

// addConstraint commits the CHECK constraint c to the table of snap after checking
// every live row against it (Delta Spark's ADD CONSTRAINT): a row for which the
// expression is not TRUE fails the change with a *ViolationError naming the
// constraint and the row, and nothing is committed. Files whose statistics prove
// that no row can violate it are not read (see violationFilter). The commit reads
// the whole table: a concurrent commit that adds rows makes it conflict rather than
// let an unchecked row in.
func addConstraint(ctx context.Context, snap *Snapshot, c CheckConstraint) (*AlterResult, error) {
	ls := snap.log
	proto, md, err := log.AddCheckConstraint(ls.Protocol(), ls.Metadata(), c.Name, c.Expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	check, err := snap.view.BindCheck(c.Name, c.Expr)
	if err != nil {
		return nil, err
	}
	read, skipped, err := checkLiveRows(ctx, snap, check)
	if err != nil {
		return nil, err
	}
	txn := ls.NewTransaction(log.TxnOptions{})
	txn.ReadWholeTable()
	txn.SetMetadata(md)
	info := log.CommitInfo{Operation: "ADD CONSTRAINT", OperationParameters: map[string]string{"name": c.Name, "expr": c.Expr}}
	res, err := commitAlter(ctx, txn, ls.Protocol(), proto, info)
	if err != nil {
		return nil, err
	}
	res.FilesChecked, res.FilesSkipped = read, skipped
	return res, nil
}

// dropConstraint commits the table of snap without the CHECK constraint name. The
// protocol keeps its checkConstraints feature, as in Delta.
func dropConstraint(ctx context.Context, snap *Snapshot, name string, ifExists bool) (*AlterResult, error) {
	ls := snap.log
	text, _ := log.CheckConstraint(ls.Metadata(), name)
	md, found, err := log.DropCheckConstraint(ls.Metadata(), name, ifExists)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	params := map[string]string{"name": name, "existed": fmt.Sprint(found)}
	if found {
		params["expr"] = text
	}
	txn := ls.NewTransaction(log.TxnOptions{})
	if found {
		txn.SetMetadata(md)
	}
	return commitAlter(ctx, txn, ls.Protocol(), ls.Protocol(), log.CommitInfo{Operation: "DROP CONSTRAINT", OperationParameters: params})
}

// checkLiveRows checks every live row of snap against check, returning how many
// files were read and how many were skipped because their statistics (or partition
// values) prove every row satisfies it.
func checkLiveRows(ctx context.Context, snap *Snapshot, check *tableview.Check) (read, skipped int64, err error) {
	var opts []ScanOption
	if f := violationFilter(check, snap); f != nil {
		opts = append(opts, WithPredicate(f))
	}
	sc, err := snap.Scan(ctx, opts...)
	if err != nil {
		return 0, 0, err
	}
	rdr, err := sc.Read(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer rdr.Release()
	for rdr.Next() {
		if err := check.Verify(rdr.RecordBatch()); err != nil {
			return 0, 0, fmt.Errorf("table: cannot add the constraint, a live row violates it: %w", err)
		}
	}
	if err := rdr.Err(); err != nil {
		return 0, 0, err
	}
	rep := rdr.Report()
	return rep.Files.Kept, rep.Files.Skipped, nil
}

// violationFilter returns a filter every row that may violate check satisfies —
// NOT (expr) OR one of its columns IS NULL — for the scan to skip the files whose
// statistics prove no row does; nil when the expression is not one the filter
// grammar evaluates (functions, arithmetic) or has a NULL literal, whose results may
// be NULL over non-null columns: then every file is read. The rows the scan returns
// are checked with check itself, so the filter only chooses what is read.
func violationFilter(check *tableview.Check, snap *Snapshot) expr.Expr {
	e, err := expr.ParseSQL(check.Expr)
	if err != nil || mayBeNull(e) {
		return nil
	}
	terms := []expr.Expr{expr.Not(e)}
	for _, c := range check.Bound.Columns() {
		terms = append(terms, expr.IsNull(expr.Col(c.Path...)))
	}
	f := expr.Or(terms...)
	if _, err := expr.Bind(f, snap.view.Logical()); err != nil {
		return nil
	}
	return f
}

// mayBeNull reports whether e might evaluate to NULL over non-null columns: it has a
// NULL literal or a node outside the filter grammar.
func mayBeNull(e expr.Expr) bool {
	anyOf := func(xs []expr.Expr) bool {
		for _, x := range xs {
			if mayBeNull(x) {
				return true
			}
		}
		return false
	}
	switch e := e.(type) {
	case *expr.ColumnRef, expr.Constant:
		return false
	case *expr.Literal:
		return e.Value.IsNull()
	case *expr.Comparison:
		return mayBeNull(e.Left) || mayBeNull(e.Right)
	case *expr.BetweenExpr:
		return anyOf([]expr.Expr{e.Value, e.Low, e.High})
	case *expr.InExpr:
		return mayBeNull(e.Value) || anyOf(e.List)
	case *expr.IsNullExpr:
		return false
	case *expr.LikeExpr:
		return mayBeNull(e.Value)
	case *expr.AndExpr:
		return anyOf(e.Terms)
	case *expr.OrExpr:
		return anyOf(e.Terms)
	case *expr.NotExpr:
		return mayBeNull(e.Term)
	}
	return true
}

// ColumnRule is the write rule of a column as its metadata stores it (Describe).
type ColumnRule struct {
	// Column is the column's path (dotted for a nested field).
	Column string `json:"column"`
	// Invariant is a column invariant's SQL expression (delta.invariants).
	Invariant string `json:"invariant,omitempty"`
	// Generated is a generated column's expression (delta.generationExpression).
	Generated string `json:"generated,omitempty"`
	// Identity is an identity column's definition.
	Identity *IdentityInfo `json:"identity,omitempty"`
}

// IdentityInfo is an identity column's definition (delta.identity.*).
type IdentityInfo struct {
	// Start is the first value generated; Step the increment between values.
	Start int64 `json:"start"`
	Step  int64 `json:"step"`
	// HighWaterMark is the last value generated (nil before the first).
	HighWaterMark *int64 `json:"highWaterMark,omitempty"`
	// Always is GENERATED ALWAYS (explicit values refused); false is BY DEFAULT.
	Always bool `json:"always"`
}

// describeRules fills d's constraints and column rules from snap's metadata, and
// says whether skiplake can enforce them.
func describeRules(snap *Snapshot, d *Description) error {
	md := snap.log.Metadata()
	cs := log.CheckConstraints(md)
	for _, name := range log.SortedConstraintNames(cs) {
		d.Constraints = append(d.Constraints, CheckConstraint{Name: name, Expr: cs[name]})
	}
	schema, err := log.ParseSchema(md.SchemaString)
	if err != nil {
		return err
	}
	var walk func(fields []log.StructField, prefix string)
	walk = func(fields []log.StructField, prefix string) {
		for i := range fields {
			f := &fields[i]
			r := ColumnRule{Column: prefix + f.Name}
			if raw, ok := f.Metadata[log.InvariantsKey]; ok {
				if text, err := log.Invariant(raw); err == nil {
					r.Invariant = text
				} else {
					r.Invariant = fmt.Sprint(raw)
				}
			}
			if g, ok := f.Metadata[log.GenerationExpressionKey].(string); ok {
				r.Generated = g
			}
			if id, ok, err := log.FieldIdentity(f); ok && err == nil {
				info := &IdentityInfo{Start: id.Start, Step: id.Step, Always: !id.AllowExplicitInsert}
				if id.HasHighWaterMark {
					hwm := id.HighWaterMark
					info.HighWaterMark = &hwm
				}
				r.Identity = info
			}
			if r.Invariant != "" || r.Generated != "" || r.Identity != nil {
				d.ColumnRules = append(d.ColumnRules, r)
			}
			if st, ok := f.Type.(*log.StructType); ok {
				walk(st.Fields, r.Column+".")
			}
		}
	}
	walk(schema.Fields, "")
	if _, err := snap.view.WriteRules(); err != nil {
		d.WriteRulesError = err.Error()
	}
	return nil
}

// ComputedColumns names the top-level columns whose values writes compute when the
// input lacks them: the generated columns and the identity columns (nil when the
// table has none, or its write rules cannot be enforced).
func (s *Snapshot) ComputedColumns() []string {
	rules, err := s.view.WriteRules()
	if err != nil {
		return nil
	}
	var out []string
	for _, g := range rules.Generated {
		out = append(out, g.Name)
	}
	for _, c := range rules.Identity {
		out = append(out, c.Name)
	}
	return out
}
