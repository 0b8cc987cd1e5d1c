package table

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/value"
)

// MergeAction is what a MERGE clause does with the rows it applies to.
type MergeAction uint8

const (
	// MergeUpdate replaces the target row: with the source row's columns of the same
	// names (an empty Set, Spark's UPDATE SET *) or with the values of a SET list.
	MergeUpdate MergeAction = iota + 1
	// MergeDelete deletes the target row.
	MergeDelete
	// MergeInsert inserts the source row (every table column taken from the source
	// column of the same name, Spark's INSERT *).
	MergeInsert
)

// String names the action as commitInfo records it.
func (a MergeAction) String() string {
	switch a {
	case MergeUpdate:
		return "update"
	case MergeDelete:
		return "delete"
	case MergeInsert:
		return "insert"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// MergeClause is one WHEN clause of a MERGE.
type MergeClause struct {
	// Action is MergeUpdate or MergeDelete (WHEN MATCHED, WHEN NOT MATCHED BY SOURCE)
	// or MergeInsert (WHEN NOT MATCHED).
	Action MergeAction
	// Condition, optional, restricts the clause to the rows for which it is TRUE (the
	// expr grammar). In WHEN MATCHED clauses, unqualified columns are the target's and
	// <SourceAlias>.col the source's (target columns may also be written
	// <TargetAlias>.col); in WHEN NOT MATCHED clauses columns are the source's; in WHEN
	// NOT MATCHED BY SOURCE clauses the target's.
	Condition string
	// Set is the SET list of an update ("qty = source.qty + qty, note = 'merged'"),
	// evaluated like UPDATE's (expr.BindAssignments) with the columns of the
	// condition's scope. Empty: every column is taken from the source (WHEN MATCHED
	// only). Inserts take no Set.
	Set string
}

// MergeOptions configures Merge. On and at least one clause are required.
type MergeOptions struct {
	DMLOptions
	// On lists the key columns: a target row and a source row match when each key
	// column is equal in both (SQL equality: a NULL key matches nothing; floats
	// compare with NaN = NaN and -0.0 = 0.0). Names are matched case-insensitively in
	// the table and in the source; source keys are converted to the table's types.
	On []string
	// WhenMatched clauses apply to target rows a source row matches, in order: the
	// first whose condition holds applies (only the last may omit its condition). None:
	// matched rows stay as they are.
	WhenMatched []MergeClause
	// WhenNotMatched clauses apply to source rows no target row matches (inserts).
	WhenNotMatched []MergeClause
	// WhenNotMatchedBySource clauses apply to target rows no source row matches. Any
	// such clause makes MERGE read every live row of the table (they are exempt from
	// the files-touched bound).
	WhenNotMatchedBySource []MergeClause
	// SourceAlias and TargetAlias name the source and target rows in conditions and
	// SET lists (default "source" and "target"); they must differ from every table
	// column's name.
	SourceAlias, TargetAlias string
	// MemoryBudget bounds the source rows (Arrow bytes plus the join table) held in
	// memory at once (default 256 MiB). A larger source is
	// partitioned by key hash into spill files and merged in several passes over the
	// target; the deletions of all passes go into one deletion vector per file and one
	// commit. The rest of MERGE's memory is scaled to it too: target files are read in
	// batches of about MemoryBudget/(Parallelism·1 KiB) rows (4,096 to 65,536), and
	// the files written have row groups of at most MemoryBudget/8 (at least 1 MiB),
	// since the writer holds a row group until it ends. So a small budget writes
	// files with smaller row groups than the target file size would give (16 MiB for
	// 128 MiB files); they are valid files, and OPTIMIZE rewrites them with the
	// default row groups.
	MemoryBudget int64
	// SpillDir is where spill files go (default os.TempDir(); never inside the table).
	SpillDir string
	// MergeSchema adds the source's columns (and struct fields) the table lacks to
	// the table's schema in the MERGE's commit (Delta's schema evolution for MERGE),
	// as WriteOptions.MergeSchema does for writes; UPDATE SET * and INSERT * then
	// take them from the source. Without it, source columns the table lacks are
	// only visible to conditions and SET lists (source.col).
	//
	// Whether or not it is set, source columns feed table columns by store
	// assignment (as a write converts its data, see WriteOptions): a source value
	// that does not fit its column is an error naming the column and the value's
	// row in the source, found when the source is read (before any table file is
	// read or written). Table columns the source lacks are NULL in inserted rows
	// (an error for NOT NULL columns) and keep their values in rows UPDATE SET *
	// updates.
	MergeSchema bool
}

// Upsert returns the MergeOptions of an upsert by the given keys: matched rows are
// replaced by their source rows, unmatched source rows are inserted.
func Upsert(keys ...string) MergeOptions {
	return MergeOptions{On: keys, WhenMatched: []MergeClause{{Action: MergeUpdate}}, WhenNotMatched: []MergeClause{{Action: MergeInsert}}}
}

// takesSourceRows reports whether a clause takes whole source rows into the table
// (UPDATE SET *, INSERT *): then every source column the table has is converted to
// the table's type when the source is read.
func (o *MergeOptions) takesSourceRows() bool {
	for _, c := range o.WhenMatched {
		if c.Action == MergeUpdate && strings.TrimSpace(c.Set) == "" {
			return true
		}
	}
	return len(o.WhenNotMatched) > 0
}

// updates reports whether a clause updates target rows (writes them to new files).
func (o *MergeOptions) updates() bool {
	for _, c := range append(append([]MergeClause(nil), o.WhenMatched...), o.WhenNotMatchedBySource...) {
		if c.Action == MergeUpdate {
			return true
		}
	}
	return false
}

func (o *MergeOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: MERGE: "+format, append([]any{ErrInvalidArgument}, args...)...))
	}
	if len(o.On) == 0 {
		bad("no ON key columns")
	}
	seen := map[string]bool{}
	for _, k := range o.On {
		if seen[strings.ToLower(k)] {
			bad("key column %q given twice", k)
		}
		seen[strings.ToLower(k)] = true
	}
	if len(o.WhenMatched)+len(o.WhenNotMatched)+len(o.WhenNotMatchedBySource) == 0 {
		bad("no WHEN clause")
	}
	check := func(kind string, cls []MergeClause, allowed ...MergeAction) {
		for i, c := range cls {
			ok := false
			for _, a := range allowed {
				ok = ok || c.Action == a
			}
			if !ok {
				bad("%s clause %d: action %s is not allowed there", kind, i+1, c.Action)
			}
			if i < len(cls)-1 && strings.TrimSpace(c.Condition) == "" {
				bad("%s clause %d has no condition but is not the last %s clause", kind, i+1, kind)
			}
			if c.Action != MergeUpdate && strings.TrimSpace(c.Set) != "" {
				bad("%s clause %d: a %s takes no SET list", kind, i+1, c.Action)
			}
		}
	}
	check("WHEN MATCHED", o.WhenMatched, MergeUpdate, MergeDelete)
	check("WHEN NOT MATCHED", o.WhenNotMatched, MergeInsert)
	check("WHEN NOT MATCHED BY SOURCE", o.WhenNotMatchedBySource, MergeUpdate, MergeDelete)
	for i, c := range o.WhenNotMatchedBySource {
		if c.Action == MergeUpdate && strings.TrimSpace(c.Set) == "" {
			bad("WHEN NOT MATCHED BY SOURCE clause %d: an update needs a SET list (there is no source row)", i+1)
		}
	}
	if o.MemoryBudget < 0 {
		bad("negative MemoryBudget")
	}
	if o.SourceAlias == "" {
		o.SourceAlias = "source"
	}
	if o.TargetAlias == "" {
		o.TargetAlias = "target"
	}
	if strings.EqualFold(o.SourceAlias, o.TargetAlias) {
		bad("source and target aliases are both %q", o.SourceAlias)
	}
	if err := o.DMLOptions.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Merge merges the rows of source into the table by the key columns opts.On, in one
// commit (Spark's MERGE INTO): target rows a source row matches take the first
// applicable WHEN MATCHED clause (update or delete), source rows no target row matches
// the first applicable WHEN NOT MATCHED clause (insert), target rows no source row
// matches the first applicable WHEN NOT MATCHED BY SOURCE clause. Cardinality follows
// Spark: a target row matched by several source rows is an error
// (ErrMergeCardinality) unless the only WHEN MATCHED clause is an unconditional
// delete; one source row may match several target rows.
//
// The target files are found from the source's keys with every skipping level: the
// keys become an IN list (a range beyond 100,000 distinct values) that partition
// values, file statistics and the Bloom index prune files with, and the row groups'
// statistics and Bloom filters and the page index prune inside the files read. Only
// the key columns and the clauses' columns are read, and every column only when a
// clause updates. Changed rows are handled as by Update (deletion vectors or
// copy-on-write); updated and inserted rows go to new files.
//
// Memory is bounded by the source and the files being read, never the table: a
// source over opts.MemoryBudget is partitioned by key hash into spill files and merged
// in passes, each reading only the files its keys may be in; the deletions of a file
// from all passes make one deletion vector, and the whole MERGE one commit. source is
// read once (the caller keeps and releases it).
//
// The commit records operation MERGE with Spark's parameters (predicate,
// matchedPredicates, notMatchedPredicates, notMatchedBySourcePredicates) and metrics
// (numSourceRows, numTargetRowsInserted, numTargetRowsUpdated, numTargetRowsDeleted,
// numTargetFilesAdded, numTargetDeletionVectorsAdded, ...). It reads the table through
// its key predicate (the whole table with a NOT MATCHED BY SOURCE clause).
func (t *Table) Merge(ctx context.Context, source array.RecordReader, opts MergeOptions) (*DMLResult, error) {
	if source == nil {
		return nil, fmt.Errorf("%w: MERGE: nil source", ErrInvalidArgument)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	snap, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	keyNames := make([]string, len(opts.On))
	for i, k := range opts.On {
		j := fieldIndexFold(snap.view.Logical(), k)
		if j < 0 {
			return nil, fmt.Errorf("%w: MERGE key %q (columns: %s)", ErrUnknownColumn, k, fieldNames(snap.view.Logical()))
		}
		f := snap.view.Logical().Field(j)
		if err := dml.CheckKeyType(f.Name, f.Type); err != nil {
			return nil, err
		}
		keyNames[i] = f.Name
	}
	mem := opts.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	budget := opts.MemoryBudget
	if budget == 0 {
		budget = dml.DefaultSourceMemory
	}
	// The table the source merges into: with MergeSchema, the table with the
	// source's new columns, decided once from the source's schema.
	target := snap
	plan := func(in *arrow.Schema) (*arrow.Schema, bool, error) {
		if opts.MergeSchema {
			var err error
			if target, err = evolveFor(snap, in, WriteOptions{MergeSchema: true}); err != nil {
				return nil, false, fmt.Errorf("MERGE: %w", err)
			}
		}
		return target.view.Logical(), opts.takesSourceRows(), nil
	}
	src, err := dml.ReadSource(ctx, source, keyNames, plan, budget, opts.SpillDir, mem)
	if err != nil {
		return nil, err
	}
	defer src.Release()
	passes, err := src.Passes(ctx)
	if err != nil {
		return nil, err
	}
	var onText string
	dmlOpts := opts.DMLOptions
	dmlOpts.memoryBudget = budget
	dmlOpts.evolve = sameChangeBase(snap, target)
	return t.runDML(ctx, "MERGE", dmlOpts, opts.updates(), func(ctx context.Context, a *dmlAttempt) error {
		m, err := newMerger(a, &opts, src, keyNames)
		if err != nil {
			return err
		}
		onText = m.onText()
		a.res.SourceRows = src.Rows()
		a.res.Passes = len(passes)
		for _, p := range passes {
			if err := m.pass(ctx, p); err != nil {
				return err
			}
		}
		a.res.FilesRead = len(a.readPaths)
		m.counts(a.res)
		return nil
	}, func(a *dmlAttempt) log.CommitInfo {
		res := a.res
		m := map[string]string{
			"numSourceRows":                          itoa64(res.SourceRows),
			"numTargetRowsInserted":                  itoa64(res.RowsInserted),
			"numTargetRowsUpdated":                   itoa64(res.RowsUpdated),
			"numTargetRowsMatchedUpdated":            itoa64(a.merge.matchedUpdated.Load()),
			"numTargetRowsNotMatchedBySourceUpdated": itoa64(a.merge.bySourceUpdated.Load()),
			"numTargetRowsDeleted":                   itoa64(res.RowsDeleted),
			"numTargetRowsMatchedDeleted":            itoa64(a.merge.matchedDeleted.Load()),
			"numTargetRowsNotMatchedBySourceDeleted": itoa64(a.merge.bySourceDeleted.Load()),
			"numTargetRowsCopied":                    itoa64(res.RowsCopied),
			"numOutputRows":                          itoa64(res.RowsInserted + res.RowsUpdated + res.RowsCopied),
			"numTargetFilesAdded":                    itoa(res.FilesAdded),
			"numTargetFilesRemoved":                  itoa(res.FilesRemoved),
			"numTargetChangeFilesAdded":              itoa(res.ChangeFilesAdded),
			"numTargetChangeFileBytes":               itoa64(res.ChangeFileBytes),
			"numTargetBytesAdded":                    itoa64(res.BytesAdded),
			"numTargetBytesRemoved":                  itoa64(res.BytesRemoved),
		}
		dvMetrics(m, "Target", res)
		a.timeMetrics(m)
		return log.CommitInfo{Operation: "MERGE", OperationParameters: map[string]string{
			"predicate":                    paramJSON([]string{onText}),
			"matchedPredicates":            clausesJSON(opts.WhenMatched),
			"notMatchedPredicates":         clausesJSON(opts.WhenNotMatched),
			"notMatchedBySourcePredicates": clausesJSON(opts.WhenNotMatchedBySource),
		}, OperationMetrics: m}
	})
}

// clausesJSON renders clauses as Spark's MergePredicate list.
func clausesJSON(cls []MergeClause) string {
	type mp struct {
		Predicate  string `json:"predicate,omitempty"`
		ActionType string `json:"actionType"`
	}
	out := make([]mp, len(cls))
	for i, c := range cls {
		out[i] = mp{Predicate: strings.TrimSpace(c.Condition), ActionType: c.Action.String()}
	}
	return paramJSON(out)
}

// mergeCounts are a MERGE's row counters (Spark's metrics), shared by the goroutines
// reading files.
type mergeCounts struct {
	matchedUpdated, matchedDeleted, bySourceUpdated, bySourceDeleted, inserted atomic.Int64
}

// boundClause is a clause bound to its scope's schema.
type boundClause struct {
	action   MergeAction
	cond     *expr.Bound            // nil: always
	set      *expr.BoundAssignments // nil: take the source row (update) / no values (delete)
	assigned map[string]bool        // the columns set assigns (lower case)
}

// merger holds a MERGE's clauses bound to one attempt's snapshot.
type merger struct {
	a        *dmlAttempt
	opts     *MergeOptions
	src      *dml.Source
	keyNames []string // table spelling
	readCols []string // table columns read
	readSch  *arrow.Schema
	keyRead  []int // key columns in readSch
	// joined is the schema matched clauses see: readSch's columns, then the target
	// alias (a struct of readSch) and the source alias (a struct of the source).
	joined, bySource, insertScope *arrow.Schema
	matched, notMatched, bySrc    []boundClause
	allowMulti                    bool // several source rows may match one target row
	needSourceRow                 bool // an update-all or insert takes the source row
	// rules are the table's write rules (nil when they cannot be enforced: then any
	// row written fails in the writer); optional marks the generated and identity
	// columns the source may lack (rules.go).
	rules    *tableview.WriteRules
	optional []bool
}

func newMerger(a *dmlAttempt, opts *MergeOptions, src *dml.Source, keyNames []string) (*merger, error) {
	snap := a.snap
	m := &merger{a: a, opts: opts, src: src, keyNames: keyNames}
	for _, f := range snap.view.Logical().Fields() {
		for _, alias := range []string{opts.SourceAlias, opts.TargetAlias} {
			if strings.EqualFold(f.Name, alias) {
				return nil, fmt.Errorf("%w: MERGE: table column %q has the name of the alias %q; choose another alias", ErrInvalidArgument, f.Name, alias)
			}
		}
	}
	// Which table columns to read: the keys, what the clauses refer to, every column
	// when a clause updates (the new row is written whole).
	needAll := false
	for _, c := range append(append([]MergeClause(nil), opts.WhenMatched...), opts.WhenNotMatchedBySource...) {
		needAll = needAll || c.Action == MergeUpdate
	}
	for _, c := range opts.WhenMatched {
		m.needSourceRow = m.needSourceRow || (c.Action == MergeUpdate && strings.TrimSpace(c.Set) == "")
	}
	m.needSourceRow = m.needSourceRow || len(opts.WhenNotMatched) > 0
	if rules, err := writeRulesOf(snap); err == nil {
		m.rules = rules
		m.optional = tableview.InsertOptional(rules, snap.view.Logical())
		a.ids = tableview.NewIdentityAssigner(rules)
	}
	if len(opts.WhenNotMatched) > 0 {
		for i, f := range snap.view.Logical().Fields() {
			if !f.Nullable && fieldIndexFold(src.Schema(), f.Name) < 0 && !(m.optional != nil && m.optional[i]) {
				return nil, fmt.Errorf("%w: MERGE: the source has no column %q, which is NOT NULL: INSERT * cannot fill it (source columns: %s)", ErrNullInNonNullable, f.Name, fieldNames(src.Schema()))
			}
		}
	}
	want := map[int]bool{}
	for _, k := range keyNames {
		want[fieldIndexFold(snap.view.Logical(), k)] = true
	}
	if needAll {
		for i := range snap.view.Logical().Fields() {
			want[i] = true
		}
	} else {
		// Bind against every column to learn which the conditions use.
		full := m.scopeSchema(snap.view.Logical(), true, true)
		for _, c := range append(append([]MergeClause(nil), opts.WhenMatched...), opts.WhenNotMatchedBySource...) {
			if strings.TrimSpace(c.Condition) == "" {
				continue
			}
			b, err := bindCondition(c.Condition, full)
			if err != nil {
				return nil, err
			}
			for _, col := range b.Columns() {
				i := col.FieldIndices[0]
				if i < snap.view.Logical().NumFields() {
					want[i] = true
				} else if i == snap.view.Logical().NumFields() && len(col.FieldIndices) > 1 {
					want[col.FieldIndices[1]] = true // target.<col>
				}
			}
		}
	}
	var fields []arrow.Field
	for i, f := range snap.view.Logical().Fields() {
		if want[i] {
			m.readCols = append(m.readCols, f.Name)
			fields = append(fields, f)
		}
	}
	m.readSch = arrow.NewSchema(fields, nil)
	for _, k := range keyNames {
		m.keyRead = append(m.keyRead, fieldIndexFold(m.readSch, k))
	}
	m.joined = m.scopeSchema(m.readSch, true, true)
	m.bySource = m.scopeSchema(m.readSch, true, false)
	isFields := append(append([]arrow.Field(nil), src.Schema().Fields()...), arrow.Field{Name: opts.SourceAlias, Type: arrow.StructOf(src.Schema().Fields()...)})
	m.insertScope = arrow.NewSchema(isFields, nil)
	var err error
	if m.matched, err = m.bind("WHEN MATCHED", opts.WhenMatched, m.joined); err != nil {
		return nil, err
	}
	if m.notMatched, err = m.bind("WHEN NOT MATCHED", opts.WhenNotMatched, m.insertScope); err != nil {
		return nil, err
	}
	if m.bySrc, err = m.bind("WHEN NOT MATCHED BY SOURCE", opts.WhenNotMatchedBySource, m.bySource); err != nil {
		return nil, err
	}
	m.allowMulti = len(m.matched) == 0 || (len(m.matched) == 1 && m.matched[0].action == MergeDelete && m.matched[0].cond == nil)
	a.merge = mergeCounts{}
	return m, nil
}

// scopeSchema returns cols' fields followed by the target alias (a struct of cols)
// and, with withSource, the source alias (a struct of the source's columns).
func (m *merger) scopeSchema(cols *arrow.Schema, withTarget, withSource bool) *arrow.Schema {
	fields := append([]arrow.Field(nil), cols.Fields()...)
	if withTarget {
		fields = append(fields, arrow.Field{Name: m.opts.TargetAlias, Type: arrow.StructOf(cols.Fields()...)})
	}
	if withSource {
		fields = append(fields, arrow.Field{Name: m.opts.SourceAlias, Type: arrow.StructOf(m.src.Schema().Fields()...)})
	}
	return arrow.NewSchema(fields, nil)
}

func bindCondition(cond string, scope *arrow.Schema) (*expr.Bound, error) {
	e, err := expr.Parse(cond)
	if err != nil {
		return nil, err
	}
	b, err := expr.Bind(e, scope)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (m *merger) bind(kind string, cls []MergeClause, scope *arrow.Schema) ([]boundClause, error) {
	out := make([]boundClause, len(cls))
	for i, c := range cls {
		bc := boundClause{action: c.Action}
		if strings.TrimSpace(c.Condition) != "" {
			b, err := bindCondition(c.Condition, scope)
			if err != nil {
				return nil, fmt.Errorf("%w: MERGE %s clause %d condition: %w", ErrInvalidArgument, kind, i+1, err)
			}
			bc.cond = b
		}
		if strings.TrimSpace(c.Set) != "" {
			as, err := expr.ParseAssignments(c.Set)
			if err != nil {
				return nil, fmt.Errorf("%w: MERGE %s clause %d SET: %w", ErrInvalidArgument, kind, i+1, err)
			}
			for _, asg := range as {
				if asg.Column != nil && len(asg.Column.Path) == 1 && (strings.EqualFold(asg.Column.Path[0], m.opts.SourceAlias) || strings.EqualFold(asg.Column.Path[0], m.opts.TargetAlias)) {
					return nil, fmt.Errorf("%w: MERGE %s clause %d SET: %q is an alias, not a table column", ErrInvalidArgument, kind, i+1, asg.Column.Path[0])
				}
			}
			if err := tableview.CheckIdentityUpdate(m.rules, assignedNames(as)); err != nil {
				return nil, fmt.Errorf("MERGE %s clause %d SET: %w", kind, i+1, err)
			}
			bc.assigned = assignedSet(as)
			b, err := expr.BindAssignments(as, scope)
			if err != nil {
				return nil, fmt.Errorf("%w: MERGE %s clause %d SET: %w", ErrInvalidArgument, kind, i+1, err)
			}
			bc.set = b
		}
		out[i] = bc
	}
	return out, nil
}

// onText renders the ON condition as Spark records it.
func (m *merger) onText() string {
	parts := make([]string, len(m.keyNames))
	for i, k := range m.keyNames {
		parts[i] = fmt.Sprintf("%s.%s = %s.%s", m.opts.TargetAlias, expr.QuoteName(k), m.opts.SourceAlias, expr.QuoteName(m.src.Schema().Field(m.src.KeyIndices()[i]).Name))
	}
	return strings.Join(parts, " AND ")
}

func (m *merger) counts(res *DMLResult) {
	c := &m.a.merge
	res.RowsInserted = c.inserted.Load()
	res.RowsUpdated = c.matchedUpdated.Load() + c.bySourceUpdated.Load()
	res.RowsDeleted = c.matchedDeleted.Load() + c.bySourceDeleted.Load()
}

// mergePass is the state of one pass: its source rows and their join table.
type mergePass struct {
	units   []*dml.Unit
	src     arrow.RecordBatch // the pass's source rows, concatenated
	join    map[string][]int32
	matched []atomic.Bool // per source row: some target row matched it
}

func (p *mergePass) release() {
	if p.src != nil {
		p.src.Release()
		p.src = nil
	}
}

// member reports whether a target key belongs to this pass (a key a NOT MATCHED BY
// SOURCE clause may apply to is handled by exactly one pass).
func (p *mergePass) member(key []byte) bool {
	for _, u := range p.units {
		if u.Member(key) {
			return true
		}
	}
	return false
}

// pass merges one group of source units: load them, build the join table, plan the
// target files from their keys, read them, apply the matched and by-source clauses,
// then insert the unmatched source rows.
func (m *merger) pass(ctx context.Context, units []*dml.Unit) error {
	a := m.a
	p := &mergePass{units: units}
	defer p.release()
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
			return err
		}
	}
	src, err := dml.ConcatRecords(m.src.Schema(), recs, a.mem)
	// The loaded pieces are copied into src: free them now, not at the end of the
	// pass, so that the pass holds its source rows once.
	for _, r := range recs {
		r.Release()
	}
	recs = nil
	if err != nil {
		return err
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
	var pred expr.Expr
	if len(m.bySrc) == 0 {
		if pred, err = m.keyPredicate(src); err != nil {
			return err
		}
	}
	sc, err := a.findScan(ctx, pred, m.readCols)
	if err != nil {
		return err
	}
	if pred == nil {
		a.readAll = true
	} else {
		a.readPreds = append(a.readPreds, a.predicateFor(sc.table))
	}
	if err := a.forEachTask(ctx, "scan", sc.tasks, func(ctx context.Context, task *fileTask) error {
		return m.mergeFile(ctx, sc, task, p)
	}); err != nil {
		return err
	}
	return m.insert(ctx, p)
}

// keyPredicate is the predicate that finds the target files holding the pass's keys:
// per key column, IN over its distinct values (or their range beyond
// mergeMaxInList), ANDed. A source without a non-NULL key gives FALSE.
func (m *merger) keyPredicate(src arrow.RecordBatch) (expr.Expr, error) {
	var terms []expr.Expr
	for k, j := range m.src.KeyIndices() {
		col := src.Column(j)
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
			if len(vals) <= mergeMaxInList && !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
		c := expr.Col(m.keyNames[k])
		switch {
		case lo.IsNull():
			return expr.Constant(false), nil
		case len(vals) > mergeMaxInList:
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

// mergeMaxInList is the most distinct key values a pass's IN list holds; beyond it the
// files are pruned by the keys' range (and the join decides).
const mergeMaxInList = 100_000

// mergeFile reads one planned target file and applies the matched and by-source
// clauses to its rows.
func (m *merger) mergeFile(ctx context.Context, sc *Scan, task *fileTask, p *mergePass) error {
	return m.a.readTouched(ctx, sc.target(), task, true, func(f *touchedFile, b dml.LiveBatch) error {
		return m.mergeBatch(ctx, f, task, b, p)
	})
}

func (m *merger) mergeBatch(ctx context.Context, f *touchedFile, task *fileTask, b dml.LiveBatch, p *mergePass) error {
	rec := b.Rec
	n := int(rec.NumRows())
	cols := make([]arrow.Array, len(m.keyRead))
	for i, j := range m.keyRead {
		cols[i] = rec.Column(j)
	}
	enc := dml.NewKeyEncoder(cols)
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
				ErrMergeCardinality, len(rows), m.keyString(rec, i), task.Add.Path)
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
func (m *merger) keyString(rec arrow.RecordBatch, i int) string {
	parts := make([]string, len(m.keyRead))
	for k, j := range m.keyRead {
		v, err := valueAt(rec.Column(j), i)
		if err != nil {
			parts[k] = "?"
			continue
		}
		parts[k] = m.keyNames[k] + "=" + expr.FormatValue(v)
	}
	return strings.Join(parts, ", ")
}

// applyMatched applies the WHEN MATCHED clauses to the matched pairs (target rows tIdx
// of b, source rows sIdx of the pass).
func (m *merger) applyMatched(ctx context.Context, f *touchedFile, b dml.LiveBatch, tIdx, sIdx []int32, p *mergePass) error {
	var joined arrow.RecordBatch
	needJoined := false
	for _, c := range m.matched {
		needJoined = needJoined || c.cond != nil || c.set != nil
	}
	if needJoined {
		tRows, err := dml.TakeRows(ctx, b.Rec, tIdx, m.a.mem)
		if err != nil {
			return err
		}
		defer tRows.Release()
		sRows, err := dml.TakeRows(ctx, p.src, sIdx, m.a.mem)
		if err != nil {
			return err
		}
		defer sRows.Release()
		if joined, err = m.scope(m.joined, tRows, sRows); err != nil {
			return err
		}
		defer joined.Release()
	}
	return m.applyClauses(ctx, f, b, m.matched, joined, tIdx, sIdx, p, &m.a.merge.matchedUpdated, &m.a.merge.matchedDeleted)
}

// applyBySource applies the WHEN NOT MATCHED BY SOURCE clauses to rows idx of b.
func (m *merger) applyBySource(ctx context.Context, f *touchedFile, b dml.LiveBatch, idx []int32) error {
	tRows, err := dml.TakeRows(ctx, b.Rec, idx, m.a.mem)
	if err != nil {
		return err
	}
	defer tRows.Release()
	scope, err := m.scope(m.bySource, tRows, nil)
	if err != nil {
		return err
	}
	defer scope.Release()
	return m.applyClauses(ctx, f, b, m.bySrc, scope, idx, nil, nil, &m.a.merge.bySourceUpdated, &m.a.merge.bySourceDeleted)
}

// applyClauses applies clauses, in order, to target rows tIdx of b (row i of scope is
// target row tIdx[i]; sIdx[i] its source row in the pass, nil for by-source clauses):
// the first clause whose condition holds for a row applies. Updated rows go to the
// row sink, updated and deleted rows' positions are deleted, and the counters grow.
func (m *merger) applyClauses(ctx context.Context, f *touchedFile, b dml.LiveBatch, clauses []boundClause, scope arrow.RecordBatch,
	tIdx, sIdx []int32, p *mergePass, updated, deleted *atomic.Int64) error {
	a := m.a
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
		if c.action == MergeUpdate {
			var out arrow.RecordBatch
			if c.set == nil {
				out, err = m.updateAllRows(ctx, p, picked, b.Rec, targets)
			} else {
				out, err = m.applySet(ctx, c, scope, mask)
			}
			if err != nil {
				return err
			}
			err = a.writeUpdated(ctx, f, b.Rec, oldIdx, pos, out)
			if err == nil && a.changes != nil {
				err = m.recordChange(ctx, f, b, tIdx, mask, pos, out)
			}
			out.Release()
			if err != nil {
				return err
			}
			updated.Add(int64(len(pos)))
		} else {
			if a.changes != nil {
				if err := m.recordChange(ctx, f, b, tIdx, mask, pos, nil); err != nil {
					return err
				}
			}
			deleted.Add(int64(len(pos)))
		}
		a.deleteRows(f, pos)
	}
	return nil
}

// recordChange records in the change data files the target rows tIdx[i] of b with
// mask[i] set (file positions pos): updated to post, or deleted (post nil). The
// preimage and the deleted rows' values come from b when the MERGE read every
// column (it does when a clause updates); otherwise deleted rows are recorded by
// position, to be read if the commit needs change files.
func (m *merger) recordChange(ctx context.Context, f *touchedFile, b dml.LiveBatch, tIdx []int32, mask []bool, pos []int64, post arrow.RecordBatch) error {
	a := m.a
	if len(m.readCols) < a.snap.view.Logical().NumFields() {
		if post != nil {
			return fmt.Errorf("table: internal error: MERGE updated rows without reading every column")
		}
		a.changes.DeletedAt(f.add.Key(), pos)
		return nil
	}
	var idx []int32
	for i, on := range mask {
		if on {
			idx = append(idx, tIdx[i])
		}
	}
	rows, err := dml.TakeRows(ctx, b.Rec, idx, a.mem)
	if err != nil {
		return err
	}
	defer rows.Release()
	if post == nil {
		return a.changes.Delete(ctx, rows)
	}
	return a.changes.Update(ctx, rows, post)
}

// insert applies the WHEN NOT MATCHED clauses to the pass's source rows no target row
// matched.
func (m *merger) insert(ctx context.Context, p *mergePass) error {
	if len(m.notMatched) == 0 {
		return nil
	}
	a := m.a
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
		rows, err := dml.TakeRows(ctx, p.src, part, a.mem)
		if err != nil {
			return err
		}
		scope, err := m.sourceScope(rows)
		if err != nil {
			rows.Release()
			return err
		}
		remaining := make([]bool, len(part))
		for i := range remaining {
			remaining[i] = true
		}
		for _, c := range m.notMatched {
			mask, any, err := clauseMask(c.cond, scope, remaining)
			if err != nil {
				scope.Release()
				rows.Release()
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
			if err == nil {
				err = a.sink.Write(ctx, out)
				if err == nil && a.changes != nil && len(m.matched)+len(m.bySrc) > 0 {
					// An inserts-only MERGE needs no change files (readers take its
					// new files as inserts); any other may (see dml.ChangeSink).
					err = a.changes.Insert(ctx, out)
				}
				out.Release()
			}
			if err != nil {
				scope.Release()
				rows.Release()
				return err
			}
			a.merge.inserted.Add(int64(len(picked)))
		}
		scope.Release()
		rows.Release()
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
func (m *merger) scope(sch *arrow.Schema, tRows, sRows arrow.RecordBatch) (arrow.RecordBatch, error) {
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
func (m *merger) sourceScope(rows arrow.RecordBatch) (arrow.RecordBatch, error) {
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
func (m *merger) sourceRows(ctx context.Context, p *mergePass, idx []int32, target arrow.RecordBatch, targetIdx []int32) (out arrow.RecordBatch, missing []int, err error) {
	logical := m.a.snap.view.Logical()
	rows, err := dml.TakeRows(ctx, p.src, idx, m.a.mem)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Release()
	var kept arrow.RecordBatch
	cols := make([]arrow.Array, logical.NumFields())
	defer releaseArrays(cols)
	for i, f := range logical.Fields() {
		if j := fieldIndexFold(m.src.Schema(), f.Name); j >= 0 {
			cols[i] = rows.Column(j)
			cols[i].Retain()
			continue
		}
		missing = append(missing, i)
		if target == nil {
			cols[i] = array.MakeArrayOfNull(m.a.mem, f.Type, int(rows.NumRows()))
			continue
		}
		if kept == nil {
			if kept, err = dml.TakeRows(ctx, target, targetIdx, m.a.mem); err != nil {
				return nil, nil, err
			}
			defer kept.Release()
		}
		j := fieldIndexFold(kept.Schema(), f.Name)
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
func (m *merger) insertRows(ctx context.Context, p *mergePass, idx []int32) (arrow.RecordBatch, error) {
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
	out, err := tableview.CompleteInsert(ctx, m.rules, m.a.ids, rows, computed, m.a.mem)
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
func (m *merger) updateAllRows(ctx context.Context, p *mergePass, idx []int32, target arrow.RecordBatch, targetIdx []int32) (arrow.RecordBatch, error) {
	rows, missing, err := m.sourceRows(ctx, p, idx, target, targetIdx)
	if err != nil {
		return nil, err
	}
	defer rows.Release()
	if m.rules == nil || (len(m.rules.Identity) == 0 && len(m.rules.Generated) == 0) {
		rows.Retain()
		return rows, nil
	}
	isMissing := map[int]bool{}
	for _, i := range missing {
		isMissing[i] = true
	}
	var present []string
	for _, c := range m.rules.Identity {
		if !isMissing[c.Index] {
			present = append(present, c.Name)
		}
	}
	if err := tableview.CheckIdentityUpdate(m.rules, present); err != nil {
		return nil, fmt.Errorf("MERGE UPDATE SET *: %w", err)
	}
	assigned := map[string]bool{}
	for _, g := range m.rules.Generated {
		if !isMissing[g.Index] {
			assigned[strings.ToLower(g.Name)] = true
		}
	}
	return tableview.RecomputeGenerated(m.rules, rows, assigned, m.a.mem)
}

// applySet computes a clause's SET list over the rows of scope chosen by mask and
// returns them as rows of the table (the scope's leading columns are the table's),
// the generated columns it does not assign recomputed. The caller releases the
// result.
func (m *merger) applySet(ctx context.Context, c boundClause, scope arrow.RecordBatch, mask []bool) (arrow.RecordBatch, error) {
	sub, err := dml.FilterRows(ctx, scope, mask, m.a.mem)
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	out, err := c.set.Apply(sub, nil, m.a.mem)
	if err != nil {
		return nil, fmt.Errorf("table: MERGE SET: %w", err)
	}
	defer out.Release()
	logical := m.a.snap.view.Logical()
	cols := make([]arrow.Array, logical.NumFields())
	for i := range cols {
		cols[i] = out.Column(i)
	}
	rows := array.NewRecordBatch(logical, cols, out.NumRows())
	defer rows.Release()
	return tableview.RecomputeGenerated(m.rules, rows, c.assigned, m.a.mem)
}
