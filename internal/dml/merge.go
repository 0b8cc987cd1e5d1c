package dml

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/value"
)

// Action is what a MERGE clause does with the rows it applies to.
type Action uint8

const (
	// ActUpdate replaces the target row (with the source row when the clause has
	// no SET list).
	ActUpdate Action = iota + 1
	// ActDelete deletes the target row.
	ActDelete
	// ActInsert inserts the source row.
	ActInsert
)

// Clause is one WHEN clause of a MERGE as written (package table validates the
// clauses before they reach here).
type Clause struct {
	Action Action
	// Condition is the clause's condition (blank: always); Set its SET list (blank:
	// the source row, for an update).
	Condition, Set string
}

// MergeSpec describes a MERGE for one attempt's snapshot.
type MergeSpec struct {
	// Logical is the table's logical schema (the attempt's snapshot).
	Logical *arrow.Schema
	// Keys are the ON key columns, in the table's spelling.
	Keys []string
	// Matched, NotMatched and BySource are the WHEN MATCHED, WHEN NOT MATCHED and
	// WHEN NOT MATCHED BY SOURCE clauses.
	Matched, NotMatched, BySource []Clause
	// SourceAlias and TargetAlias name the source and target rows.
	SourceAlias, TargetAlias string
	// Rules are the table's write rules (nil when they cannot be enforced: then any
	// row written fails in the writer); IDs assigns identity values to inserted
	// rows (nil with nil Rules).
	Rules *tableview.WriteRules
	IDs   *tableview.IdentityAssigner
	// Sink takes the inserted rows; Changes, when not nil, records the changed rows
	// in change data files.
	Sink    Sink
	Changes *ChangeSink
	Mem     memory.Allocator
}

// FileRows is the caller's side of one target file whose rows a Merger changes.
type FileRows interface {
	// Updated writes out, the rows replacing rows old of rec (at file positions
	// pos), as the command writes updated rows. The Merger then calls Deleted with
	// the same positions.
	Updated(ctx context.Context, rec arrow.RecordBatch, old []int, pos []int64, out arrow.RecordBatch) error
	// Deleted records that the rows at file positions pos are deleted.
	Deleted(pos []int64)
	// Key is the file's key (log.Add.Key), what ChangeSink.DeletedAt takes; Path
	// names it in messages.
	Key() string
	Path() string
}

// MergeCounts are a MERGE's row counters (Spark's metrics).
type MergeCounts struct {
	MatchedUpdated, MatchedDeleted, BySourceUpdated, BySourceDeleted, Inserted int64
}

// boundClause is a clause bound to its scope's schema.
type boundClause struct {
	action   Action
	cond     *expr.Bound            // nil: always
	set      *expr.BoundAssignments // nil: take the source row (update) / no values (delete)
	assigned map[string]bool        // the columns set assigns (lower case)
}

// Merger is a MERGE's clauses bound to one attempt's snapshot: it matches target
// rows against a pass's source rows and applies the clauses to them. Batch may be
// called from several goroutines at once (one per target file of a pass); LoadPass
// and Insert are called before and after a pass's Batch calls.
type Merger struct {
	spec     MergeSpec
	src      *Source
	readCols []string // table columns read
	readSch  *arrow.Schema
	keyRead  []int // key columns in readSch
	// joined is the schema matched clauses see: readSch's columns, then the target
	// alias (a struct of readSch) and the source alias (a struct of the source).
	joined, bySource, insertScope *arrow.Schema
	matched, notMatched, bySrc    []boundClause
	allowMulti                    bool // several source rows may match one target row
	// optional marks the generated and identity columns the source may lack.
	optional []bool

	matchedUpdated, matchedDeleted, bySourceUpdated, bySourceDeleted, inserted atomic.Int64
}

// NewMerger binds spec's clauses for the source src: it decides the table columns
// to read (ReadColumns) and refuses aliases that are column names, an INSERT * that
// cannot fill a NOT NULL column, and clauses that do not bind.
func NewMerger(spec MergeSpec, src *Source) (*Merger, error) {
	logical := spec.Logical
	m := &Merger{spec: spec, src: src}
	for _, f := range logical.Fields() {
		for _, alias := range []string{spec.SourceAlias, spec.TargetAlias} {
			if strings.EqualFold(f.Name, alias) {
				return nil, fmt.Errorf("%w: MERGE: table column %q has the name of the alias %q; choose another alias", tableview.ErrInvalidArgument, f.Name, alias)
			}
		}
	}
	targetClauses := append(append([]Clause(nil), spec.Matched...), spec.BySource...)
	// Which table columns to read: the keys, what the clauses refer to, every column
	// when a clause updates (the new row is written whole).
	needAll := false
	for _, c := range targetClauses {
		needAll = needAll || c.Action == ActUpdate
	}
	if spec.Rules != nil {
		m.optional = tableview.InsertOptional(spec.Rules, logical)
	}
	if len(spec.NotMatched) > 0 {
		for i, f := range logical.Fields() {
			if !f.Nullable && scanexec.FieldIndexFold(src.Schema(), f.Name) < 0 && !(m.optional != nil && m.optional[i]) {
				return nil, fmt.Errorf("%w: MERGE: the source has no column %q, which is NOT NULL: INSERT * cannot fill it (source columns: %s)", conform.ErrNullInNonNullable, f.Name, scanexec.FieldNames(src.Schema()))
			}
		}
	}
	want := map[int]bool{}
	for _, k := range spec.Keys {
		want[scanexec.FieldIndexFold(logical, k)] = true
	}
	if needAll {
		for i := range logical.Fields() {
			want[i] = true
		}
	} else {
		// Bind against every column to learn which the conditions use.
		full := m.scopeSchema(logical, true, true)
		for _, c := range targetClauses {
			if strings.TrimSpace(c.Condition) == "" {
				continue
			}
			b, err := bindCondition(c.Condition, full)
			if err != nil {
				return nil, err
			}
			for _, col := range b.Columns() {
				i := col.FieldIndices[0]
				if i < logical.NumFields() {
					want[i] = true
				} else if i == logical.NumFields() && len(col.FieldIndices) > 1 {
					want[col.FieldIndices[1]] = true // target.<col>
				}
			}
		}
	}
	var fields []arrow.Field
	for i, f := range logical.Fields() {
		if want[i] {
			m.readCols = append(m.readCols, f.Name)
			fields = append(fields, f)
		}
	}
	m.readSch = arrow.NewSchema(fields, nil)
	for _, k := range spec.Keys {
		m.keyRead = append(m.keyRead, scanexec.FieldIndexFold(m.readSch, k))
	}
	m.joined = m.scopeSchema(m.readSch, true, true)
	m.bySource = m.scopeSchema(m.readSch, true, false)
	isFields := append(append([]arrow.Field(nil), src.Schema().Fields()...), arrow.Field{Name: spec.SourceAlias, Type: arrow.StructOf(src.Schema().Fields()...)})
	m.insertScope = arrow.NewSchema(isFields, nil)
	var err error
	if m.matched, err = m.bind("WHEN MATCHED", spec.Matched, m.joined); err != nil {
		return nil, err
	}
	if m.notMatched, err = m.bind("WHEN NOT MATCHED", spec.NotMatched, m.insertScope); err != nil {
		return nil, err
	}
	if m.bySrc, err = m.bind("WHEN NOT MATCHED BY SOURCE", spec.BySource, m.bySource); err != nil {
		return nil, err
	}
	m.allowMulti = len(m.matched) == 0 || (len(m.matched) == 1 && m.matched[0].action == ActDelete && m.matched[0].cond == nil)
	return m, nil
}

// ReadColumns are the table columns the Merger needs from target rows: the keys,
// the columns the conditions refer to, every column when a clause updates.
func (m *Merger) ReadColumns() []string { return m.readCols }

// Counts returns the row counters so far.
func (m *Merger) Counts() MergeCounts {
	return MergeCounts{
		MatchedUpdated:  m.matchedUpdated.Load(),
		MatchedDeleted:  m.matchedDeleted.Load(),
		BySourceUpdated: m.bySourceUpdated.Load(),
		BySourceDeleted: m.bySourceDeleted.Load(),
		Inserted:        m.inserted.Load(),
	}
}

// scopeSchema returns cols' fields followed by the target alias (a struct of cols)
// and, with withSource, the source alias (a struct of the source's columns).
func (m *Merger) scopeSchema(cols *arrow.Schema, withTarget, withSource bool) *arrow.Schema {
	fields := append([]arrow.Field(nil), cols.Fields()...)
	if withTarget {
		fields = append(fields, arrow.Field{Name: m.spec.TargetAlias, Type: arrow.StructOf(cols.Fields()...)})
	}
	if withSource {
		fields = append(fields, arrow.Field{Name: m.spec.SourceAlias, Type: arrow.StructOf(m.src.Schema().Fields()...)})
	}
	return arrow.NewSchema(fields, nil)
}

func bindCondition(cond string, scope *arrow.Schema) (*expr.Bound, error) {
	e, err := expr.Parse(cond)
	if err != nil {
		return nil, err
	}
	return expr.Bind(e, scope)
}

func (m *Merger) bind(kind string, cls []Clause, scope *arrow.Schema) ([]boundClause, error) {
	out := make([]boundClause, len(cls))
	for i, c := range cls {
		bc := boundClause{action: c.Action}
		if strings.TrimSpace(c.Condition) != "" {
			b, err := bindCondition(c.Condition, scope)
			if err != nil {
				return nil, fmt.Errorf("%w: MERGE %s clause %d condition: %w", tableview.ErrInvalidArgument, kind, i+1, err)
			}
			bc.cond = b
		}
		if strings.TrimSpace(c.Set) != "" {
			as, err := expr.ParseAssignments(c.Set)
			if err != nil {
				return nil, fmt.Errorf("%w: MERGE %s clause %d SET: %w", tableview.ErrInvalidArgument, kind, i+1, err)
			}
			for _, asg := range as {
				if asg.Column != nil && len(asg.Column.Path) == 1 && (strings.EqualFold(asg.Column.Path[0], m.spec.SourceAlias) || strings.EqualFold(asg.Column.Path[0], m.spec.TargetAlias)) {
					return nil, fmt.Errorf("%w: MERGE %s clause %d SET: %q is an alias, not a table column", tableview.ErrInvalidArgument, kind, i+1, asg.Column.Path[0])
				}
			}
			if err := tableview.CheckIdentityUpdate(m.spec.Rules, AssignedNames(as)); err != nil {
				return nil, fmt.Errorf("MERGE %s clause %d SET: %w", kind, i+1, err)
			}
			bc.assigned = AssignedSet(as)
			b, err := expr.BindAssignments(as, scope)
			if err != nil {
				return nil, fmt.Errorf("%w: MERGE %s clause %d SET: %w", tableview.ErrInvalidArgument, kind, i+1, err)
			}
			bc.set = b
		}
		out[i] = bc
	}
	return out, nil
}

// AssignedNames lists the columns a SET list assigns (top level, as written).
func AssignedNames(set []expr.Assignment) []string {
	var out []string
	for _, a := range set {
		if a.Column != nil && len(a.Column.Path) > 0 {
			out = append(out, a.Column.Path[0])
		}
	}
	return out
}

// AssignedSet is AssignedNames in lower case, as a set.
func AssignedSet(set []expr.Assignment) map[string]bool {
	out := map[string]bool{}
	for _, n := range AssignedNames(set) {
		out[strings.ToLower(n)] = true
	}
	return out
}

// OnText renders the ON condition as Spark records it.
func (m *Merger) OnText() string {
	parts := make([]string, len(m.spec.Keys))
	for i, k := range m.spec.Keys {
		parts[i] = fmt.Sprintf("%s.%s = %s.%s", m.spec.TargetAlias, expr.QuoteName(k), m.spec.SourceAlias, expr.QuoteName(m.src.Schema().Field(m.src.KeyIndices()[i]).Name))
	}
	return strings.Join(parts, " AND ")
}

// Pass is the state of one pass: its source rows and their join table.
type Pass struct {
	units   []*Unit
	src     arrow.RecordBatch // the pass's source rows, concatenated
	join    map[string][]int32
	matched []atomic.Bool // per source row: some target row matched it
}

// Release frees the pass's source rows.
func (p *Pass) Release() {
	if p.src != nil {
		p.src.Release()
		p.src = nil
	}
}

// member reports whether a target key belongs to this pass (a key a NOT MATCHED BY
// SOURCE clause may apply to is handled by exactly one pass).
func (p *Pass) member(key []byte) bool {
	for _, u := range p.units {
		if u.Member(key) {
			return true
		}
	}
	return false
}

// LoadPass loads a group of source units (one of Source.Passes) and builds their
// join table. The caller releases the pass.
func (m *Merger) LoadPass(ctx context.Context, units []*Unit) (*Pass, error) {
	p := &Pass{units: units}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, u := range units {
		err := m.src.Load(ctx, u, func(rec arrow.RecordBatch) error {
			rec.Retain()
			recs = append(recs, rec)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	src, err := ConcatRecords(m.src.Schema(), recs, m.spec.Mem)
	// The loaded pieces are copied into src: free them now, not at the end of the
	// pass, so that the pass holds its source rows once.
	for _, r := range recs {
		r.Release()
	}
	recs = nil
	if err != nil {
		return nil, err
	}
	// Every target file's goroutine takes rows from src (R1).
	datafile.Settle(src)
	p.src = src
	n := int(src.NumRows())
	p.join = make(map[string][]int32, n)
	p.matched = make([]atomic.Bool, n)
	enc := m.src.KeysOf(src)
	var buf []byte
	for i := 0; i < n; i++ {
		key, ok := enc.Encode(buf[:0], i)
		buf = key
		if !ok {
			continue
		}
		p.join[string(key)] = append(p.join[string(key)], int32(i))
	}
	return p, nil
}

// KeyPredicate is the predicate that finds the target files holding the pass's
// keys: per key column, IN over its distinct values (or their range beyond
// MaxInList), ANDed; a pass without a non-NULL key gives FALSE. It is nil when a
// NOT MATCHED BY SOURCE clause makes the pass read every live row of the table.
func (m *Merger) KeyPredicate(p *Pass) (expr.Expr, error) {
	if len(m.bySrc) > 0 {
		return nil, nil
	}
	var terms []expr.Expr
	for k, j := range m.src.KeyIndices() {
		col := p.src.Column(j)
		seen := map[value.Value]bool{}
		var vals []value.Value
		var lo, hi value.Value
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				continue
			}
			v, err := valueAt(col, i)
			if err != nil {
				return nil, err
			}
			if lo.IsNull() {
				lo, hi = v, v
			} else {
				if c, ok := value.Compare(v, lo); ok && c < 0 {
					lo = v
				}
				if c, ok := value.Compare(v, hi); ok && c > 0 {
					hi = v
				}
			}
			if len(vals) <= MaxInList && !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
		c := expr.Col(m.spec.Keys[k])
		switch {
		case lo.IsNull():
			return expr.Constant(false), nil
		case len(vals) > MaxInList:
			terms = append(terms, expr.Ge(c, expr.Lit(lo)), expr.Le(c, expr.Lit(hi)))
		default:
			sort.Slice(vals, func(x, y int) bool { r, _ := value.Compare(vals[x], vals[y]); return r < 0 })
			lits := make([]expr.Expr, len(vals))
			for i, v := range vals {
				lits[i] = expr.Lit(v)
			}
			terms = append(terms, expr.In(c, lits...))
		}
	}
	return expr.And(terms...), nil
}

// MaxInList is the most distinct key values a pass's IN list holds; beyond it the
// files are pruned by the keys' range (and the join decides).
const MaxInList = 100_000

// valueAt returns row i of a primitive Arrow array as a typed value.
func valueAt(arr arrow.Array, i int) (value.Value, error) {
	v, err := value.FromArray(arr, i)
	if err != nil {
		return value.Null(), fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	return v, nil
}

// Batch matches the live rows b of a target file (read with ReadColumns) against
// the pass's source rows and applies the WHEN MATCHED and WHEN NOT MATCHED BY
// SOURCE clauses to them, telling f what it updates and deletes.
func (m *Merger) Batch(ctx context.Context, p *Pass, f FileRows, b LiveBatch) error {
	rec := b.Rec
	n := int(rec.NumRows())
	cols := make([]arrow.Array, len(m.keyRead))
	for i, j := range m.keyRead {
		cols[i] = rec.Column(j)
	}
	enc := NewKeyEncoder(cols)
	var tIdx, sIdx, unmatched []int32
	var buf []byte
	for i := 0; i < n; i++ {
		key, ok := enc.Encode(buf[:0], i)
		buf = key
		var rows []int32
		if ok {
			rows = p.join[string(key)]
		}
		if len(rows) == 0 {
			if len(m.bySrc) > 0 && p.member(key) {
				unmatched = append(unmatched, int32(i))
			}
			continue
		}
		if len(rows) > 1 && !m.allowMulti {
			return fmt.Errorf("%w: %d source rows match the target row with key (%s) in %s; with a WHEN MATCHED clause other than one unconditional DELETE each target row may match one source row only",
				ErrMergeCardinality, len(rows), m.keyString(rec, i), f.Path())
		}
		for _, r := range rows {
			p.matched[r].Store(true)
		}
		if len(m.matched) > 0 {
			tIdx = append(tIdx, int32(i))
			sIdx = append(sIdx, rows[0])
		}
	}
	if len(tIdx) > 0 {
		if err := m.applyMatched(ctx, f, b, tIdx, sIdx, p); err != nil {
			return err
		}
	}
	if len(unmatched) > 0 {
		if err := m.applyBySource(ctx, f, b, unmatched); err != nil {
			return err
		}
	}
	return nil
}

// keyString renders row i's key for messages.
func (m *Merger) keyString(rec arrow.RecordBatch, i int) string {
	parts := make([]string, len(m.keyRead))
	for k, j := range m.keyRead {
		v, err := valueAt(rec.Column(j), i)
		if err != nil {
			parts[k] = "?"
			continue
		}
		parts[k] = m.spec.Keys[k] + "=" + expr.FormatValue(v)
	}
	return strings.Join(parts, ", ")
}

// applyMatched applies the WHEN MATCHED clauses to the matched pairs (target rows tIdx
// of b, source rows sIdx of the pass).
func (m *Merger) applyMatched(ctx context.Context, f FileRows, b LiveBatch, tIdx, sIdx []int32, p *Pass) error {
	var joined arrow.RecordBatch
	needJoined := false
	for _, c := range m.matched {
		needJoined = needJoined || c.cond != nil || c.set != nil
	}
	if needJoined {
		tRows, err := TakeRows(ctx, b.Rec, tIdx, m.spec.Mem)
		if err != nil {
			return err
		}
		defer tRows.Release()
		sRows, err := TakeRows(ctx, p.src, sIdx, m.spec.Mem)
		if err != nil {
			return err
		}
		defer sRows.Release()
		if joined, err = m.scope(m.joined, tRows, sRows); err != nil {
			return err
		}
		defer joined.Release()
	}
	return m.applyClauses(ctx, f, b, m.matched, joined, tIdx, sIdx, p, &m.matchedUpdated, &m.matchedDeleted)
}

// applyBySource applies the WHEN NOT MATCHED BY SOURCE clauses to rows idx of b.
func (m *Merger) applyBySource(ctx context.Context, f FileRows, b LiveBatch, idx []int32) error {
	tRows, err := TakeRows(ctx, b.Rec, idx, m.spec.Mem)
	if err != nil {
		return err
	}
	defer tRows.Release()
	scope, err := m.scope(m.bySource, tRows, nil)
	if err != nil {
		return err
	}
	defer scope.Release()
	return m.applyClauses(ctx, f, b, m.bySrc, scope, idx, nil, nil, &m.bySourceUpdated, &m.bySourceDeleted)
}

// applyClauses applies clauses, in order, to target rows tIdx of b (row i of scope is
// target row tIdx[i]; sIdx[i] its source row in the pass, nil for by-source clauses):
// the first clause whose condition holds for a row applies. Updated rows go to
// f.Updated, updated and deleted rows' positions to f.Deleted, and the counters grow.
func (m *Merger) applyClauses(ctx context.Context, f FileRows, b LiveBatch, clauses []boundClause, scope arrow.RecordBatch,
	tIdx, sIdx []int32, p *Pass, updated, deleted *atomic.Int64) error {
	remaining := make([]bool, len(tIdx))
	for i := range remaining {
		remaining[i] = true
	}
	for _, c := range clauses {
		mask, any, err := clauseMask(c.cond, scope, remaining)
		if err != nil {
			return err
		}
		if !any {
			continue
		}
		var pos []int64
		var picked, targets []int32
		var oldIdx []int
		for i, on := range mask {
			if on {
				pos = append(pos, b.Pos[tIdx[i]])
				targets = append(targets, tIdx[i])
				oldIdx = append(oldIdx, int(tIdx[i]))
				if sIdx != nil {
					picked = append(picked, sIdx[i])
				}
			}
		}
		if c.action == ActUpdate {
			var out arrow.RecordBatch
			if c.set == nil {
				out, err = m.updateAllRows(ctx, p, picked, b.Rec, targets)
			} else {
				out, err = m.applySet(ctx, c, scope, mask)
			}
			if err != nil {
				return err
			}
			err = f.Updated(ctx, b.Rec, oldIdx, pos, out)
			if err == nil && m.spec.Changes != nil {
				err = m.recordChange(ctx, f, b, tIdx, mask, pos, out)
			}
			out.Release()
			if err != nil {
				return err
			}
			updated.Add(int64(len(pos)))
		} else {
			if m.spec.Changes != nil {
				if err := m.recordChange(ctx, f, b, tIdx, mask, pos, nil); err != nil {
					return err
				}
			}
			deleted.Add(int64(len(pos)))
		}
		f.Deleted(pos)
	}
	return nil
}

// recordChange records in the change data files the target rows tIdx[i] of b with
// mask[i] set (file positions pos): updated to post, or deleted (post nil). The
// preimage and the deleted rows' values come from b when the MERGE read every
// column (it does when a clause updates); otherwise deleted rows are recorded by
// position, to be read if the commit needs change files.
func (m *Merger) recordChange(ctx context.Context, f FileRows, b LiveBatch, tIdx []int32, mask []bool, pos []int64, post arrow.RecordBatch) error {
	changes := m.spec.Changes
	if len(m.readCols) < m.spec.Logical.NumFields() {
		if post != nil {
			return fmt.Errorf("table: internal error: MERGE updated rows without reading every column")
		}
		changes.DeletedAt(f.Key(), pos)
		return nil
	}
	var idx []int32
	for i, on := range mask {
		if on {
			idx = append(idx, tIdx[i])
		}
	}
	rows, err := TakeRows(ctx, b.Rec, idx, m.spec.Mem)
	if err != nil {
		return err
	}
	defer rows.Release()
	if post == nil {
		return changes.Delete(ctx, rows)
	}
	return changes.Update(ctx, rows, post)
}

// Insert applies the WHEN NOT MATCHED clauses to the pass's source rows no target
// row matched (call it after every target file's Batch calls): the rows go to the
// spec's Sink (and Changes).
func (m *Merger) Insert(ctx context.Context, p *Pass) error {
	if len(m.notMatched) == 0 {
		return nil
	}
	var idx []int32
	for i := range p.matched {
		if !p.matched[i].Load() {
			idx = append(idx, int32(i))
		}
	}
	// Insert in slices so that memory stays near one batch of output.
	const slice = 64 << 10
	for start := 0; start < len(idx); start += slice {
		part := idx[start:min(start+slice, len(idx))]
		if err := m.insertSlice(ctx, p, part); err != nil {
			return err
		}
	}
	return nil
}

// insertSlice applies the WHEN NOT MATCHED clauses to source rows part of the pass.
func (m *Merger) insertSlice(ctx context.Context, p *Pass, part []int32) error {
	rows, err := TakeRows(ctx, p.src, part, m.spec.Mem)
	if err != nil {
		return err
	}
	defer rows.Release()
	scope, err := m.sourceScope(rows)
	if err != nil {
		return err
	}
	defer scope.Release()
	remaining := make([]bool, len(part))
	for i := range remaining {
		remaining[i] = true
	}
	for _, c := range m.notMatched {
		mask, any, err := clauseMask(c.cond, scope, remaining)
		if err != nil {
			return err
		}
		if !any {
			continue
		}
		var picked []int32
		for i, on := range mask {
			if on {
				picked = append(picked, part[i])
			}
		}
		out, err := m.insertRows(ctx, p, picked)
		if err != nil {
			return err
		}
		err = m.spec.Sink.Write(ctx, out)
		if err == nil && m.spec.Changes != nil && len(m.matched)+len(m.bySrc) > 0 {
			// An inserts-only MERGE needs no change files (readers take its
			// new files as inserts); any other may (see ChangeSink).
			err = m.spec.Changes.Insert(ctx, out)
		}
		out.Release()
		if err != nil {
			return err
		}
		m.inserted.Add(int64(len(picked)))
	}
	return nil
}

// clauseMask returns remaining ∧ cond (cond nil: remaining) over the rows of scope and
// clears the chosen rows from remaining.
func clauseMask(cond *expr.Bound, scope arrow.RecordBatch, remaining []bool) ([]bool, bool, error) {
	mask := make([]bool, len(remaining))
	var sel *expr.Selection
	if cond != nil {
		s, err := cond.Evaluate(scope)
		if err != nil {
			return nil, false, err
		}
		sel = s
	}
	any := false
	for i, r := range remaining {
		if r && (sel == nil || sel.Contains(i)) {
			mask[i] = true
			remaining[i] = false
			any = true
		}
	}
	return mask, any, nil
}

// scope builds a batch of schema sch from target rows (their columns, then the target
// alias struct) and, when src is not nil, the source rows as the source alias struct.
func (m *Merger) scope(sch *arrow.Schema, tRows, sRows arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := tRows.NumRows()
	cols := make([]arrow.Array, 0, sch.NumFields())
	for i := 0; i < int(tRows.NumCols()); i++ {
		c := tRows.Column(i)
		c.Retain()
		cols = append(cols, c)
	}
	st, err := array.NewStructArrayWithFields(tRows.Columns(), tRows.Schema().Fields())
	if err != nil {
		releaseArrays(cols)
		return nil, fmt.Errorf("table: MERGE target row: %w", err)
	}
	cols = append(cols, st)
	if sRows != nil {
		ss, err := array.NewStructArrayWithFields(sRows.Columns(), sRows.Schema().Fields())
		if err != nil {
			releaseArrays(cols)
			return nil, fmt.Errorf("table: MERGE source row: %w", err)
		}
		cols = append(cols, ss)
	}
	defer releaseArrays(cols)
	return array.NewRecordBatch(sch, cols, n), nil
}

// sourceScope builds the insert scope of source rows: their columns, then the source
// alias struct.
func (m *Merger) sourceScope(rows arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, 0, rows.NumCols()+1)
	for _, c := range rows.Columns() {
		c.Retain()
		cols = append(cols, c)
	}
	ss, err := array.NewStructArrayWithFields(rows.Columns(), rows.Schema().Fields())
	if err != nil {
		releaseArrays(cols)
		return nil, fmt.Errorf("table: MERGE source row: %w", err)
	}
	cols = append(cols, ss)
	defer releaseArrays(cols)
	return array.NewRecordBatch(m.insertScope, cols, rows.NumRows()), nil
}

// sourceRows returns the given source rows as rows of the table: every table column
// from the source column of the same name (converted to the table's type when the
// source was read); a column the source lacks from the target rows targetIdx of
// target (UPDATE SET * keeps it), or NULL without a target (INSERT *); missing lists
// those columns (by index). The caller releases the result.
func (m *Merger) sourceRows(ctx context.Context, p *Pass, idx []int32, target arrow.RecordBatch, targetIdx []int32) (out arrow.RecordBatch, missing []int, err error) {
	logical := m.spec.Logical
	rows, err := TakeRows(ctx, p.src, idx, m.spec.Mem)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Release()
	var kept arrow.RecordBatch
	cols := make([]arrow.Array, logical.NumFields())
	defer releaseArrays(cols)
	for i, f := range logical.Fields() {
		if j := scanexec.FieldIndexFold(m.src.Schema(), f.Name); j >= 0 {
			cols[i] = rows.Column(j)
			cols[i].Retain()
			continue
		}
		missing = append(missing, i)
		if target == nil {
			cols[i] = array.MakeArrayOfNull(m.spec.Mem, f.Type, int(rows.NumRows()))
			continue
		}
		if kept == nil {
			if kept, err = TakeRows(ctx, target, targetIdx, m.spec.Mem); err != nil {
				return nil, nil, err
			}
			defer kept.Release()
		}
		j := scanexec.FieldIndexFold(kept.Schema(), f.Name)
		if j < 0 {
			return nil, nil, fmt.Errorf("table: internal error: MERGE update lacks target column %q", f.Name)
		}
		cols[i] = kept.Column(j)
		cols[i].Retain()
	}
	for i, f := range logical.Fields() {
		if !arrow.TypeEqual(cols[i].DataType(), f.Type) {
			return nil, nil, fmt.Errorf("table: internal error: MERGE source column %q is %s, the table's %s", f.Name, cols[i].DataType(), f.Type)
		}
	}
	return array.NewRecordBatch(logical, cols, rows.NumRows()), missing, nil
}

// insertRows returns source rows to insert as rows of the table (INSERT *):
// identity columns the source lacks take new values, generated ones are computed,
// explicit values for a GENERATED ALWAYS identity column are refused; other columns
// the source lacks are NULL. The caller releases the result.
func (m *Merger) insertRows(ctx context.Context, p *Pass, idx []int32) (arrow.RecordBatch, error) {
	rows, missing, err := m.sourceRows(ctx, p, idx, nil, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Release()
	var computed []int
	for _, i := range missing {
		if m.optional != nil && m.optional[i] {
			computed = append(computed, i)
		}
	}
	out, err := tableview.CompleteInsert(ctx, m.spec.Rules, m.spec.IDs, rows, computed, m.spec.Mem)
	if err != nil {
		return nil, fmt.Errorf("table: MERGE insert: %w", err)
	}
	return out, nil
}

// updateAllRows returns the source rows replacing matched target rows targetIdx of
// target (UPDATE SET *): the source's values, a column the source lacks keeping the
// target's (identity columns so keep theirs; a source that has one is refused:
// identity columns are not updated), except that generated columns the source lacks
// are recomputed from the updated row. The caller releases the result.
func (m *Merger) updateAllRows(ctx context.Context, p *Pass, idx []int32, target arrow.RecordBatch, targetIdx []int32) (arrow.RecordBatch, error) {
	rows, missing, err := m.sourceRows(ctx, p, idx, target, targetIdx)
	if err != nil {
		return nil, err
	}
	defer rows.Release()
	rules := m.spec.Rules
	if rules == nil || (len(rules.Identity) == 0 && len(rules.Generated) == 0) {
		rows.Retain()
		return rows, nil
	}
	isMissing := map[int]bool{}
	for _, i := range missing {
		isMissing[i] = true
	}
	var present []string
	for _, c := range rules.Identity {
		if !isMissing[c.Index] {
			present = append(present, c.Name)
		}
	}
	if err := tableview.CheckIdentityUpdate(rules, present); err != nil {
		return nil, fmt.Errorf("MERGE UPDATE SET *: %w", err)
	}
	assigned := map[string]bool{}
	for _, g := range rules.Generated {
		if !isMissing[g.Index] {
			assigned[strings.ToLower(g.Name)] = true
		}
	}
	return tableview.RecomputeGenerated(rules, rows, assigned, m.spec.Mem)
}

// applySet computes a clause's SET list over the rows of scope chosen by mask and
// returns them as rows of the table (the scope's leading columns are the table's),
// the generated columns it does not assign recomputed. The caller releases the
// result.
func (m *Merger) applySet(ctx context.Context, c boundClause, scope arrow.RecordBatch, mask []bool) (arrow.RecordBatch, error) {
	sub, err := FilterRows(ctx, scope, mask, m.spec.Mem)
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	out, err := c.set.Apply(sub, nil, m.spec.Mem)
	if err != nil {
		return nil, fmt.Errorf("table: MERGE SET: %w", err)
	}
	defer out.Release()
	logical := m.spec.Logical
	cols := make([]arrow.Array, logical.NumFields())
	for i := range cols {
		cols[i] = out.Column(i)
	}
	rows := array.NewRecordBatch(logical, cols, out.NumRows())
	defer rows.Release()
	return tableview.RecomputeGenerated(m.spec.Rules, rows, c.assigned, m.spec.Mem)
}
