package table

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
)

// Write rules. Every row a write adds passes through one funnel, the data-file
// writer's consume (fileSetWriter): appends and overwrites, the rows UPDATE and MERGE
// write (updated, inserted and copied rows), optimized writes. There the
// rows are checked against the write rules of the version they are written for
// (tableview.WriteRules, resolved once per version): every CHECK constraint and column
// invariant must be TRUE and every generated column equal to its expression; NOT NULL
// is checked by the conformer. A violation fails the write naming the rule, its
// expression and the row's values, and nothing is committed. Where new rows enter
// (Write's input, MERGE's inserts) they are first completed: a generated column the
// input lacks is computed, an identity column the input lacks takes the next values
// (identityAssigner), and explicit values for a GENERATED ALWAYS identity column are
// refused. UPDATE (and MERGE's updates) recompute the generated columns they do not
// assign and refuse to assign identity columns, as Delta Spark does. OPTIMIZE,
// auto-compaction and DELETE (the rows it keeps) rewrite rows without checking them
// (they are unchanged).

// ErrConstraintViolated reports a row that breaks a write rule of the table: a CHECK
// constraint or column invariant that is not TRUE (FALSE and NULL both violate, as in
// Delta), or a generated column whose value differs from its expression
// (*tableview.ViolationError names the rule, the expression and the row's values).
var ErrConstraintViolated = tableview.ErrConstraintViolation

// ErrWriteRules reports a table whose write rules skiplake cannot enforce (an
// expression that does not parse, or uses a function skiplake does not evaluate as
// Spark would): writes that add rows are refused; reads and OPTIMIZE work.
var ErrWriteRules = tableview.ErrWriteRules

// ViolationError is the error of a row that breaks a write rule
// (tableview.ViolationError).
type ViolationError = tableview.ViolationError

// ErrIdentityColumn reports an identity column misused: an explicit value for a
// GENERATED ALWAYS AS IDENTITY column, an UPDATE of an identity column, or values that
// would overflow bigint.
var ErrIdentityColumn = fmt.Errorf("%w: identity column", ErrInvalidArgument)

// writeRulesOf returns snap's write rules, or the reason they cannot be enforced.
func writeRulesOf(snap *Snapshot) (*tableview.WriteRules, error) {
	r, err := snap.view.WriteRules()
	if err != nil {
		return nil, err
	}
	return r, nil
}

// identityAssigner hands out identity values for one write (PROTOCOL.md "Identity
// Columns"): per column, start (or the high-water mark plus step) onwards, step by
// step, in the order rows arrive, failing rather than overflowing bigint. marks are
// the new high-water marks the write's commit records (only for columns it generated
// values for). It is safe for concurrent use.
type identityAssigner struct {
	mu   sync.Mutex
	cols map[string]*identityState // by column name (schema spelling)
}

type identityState struct {
	col       *tableview.IdentityColumn
	next      int64
	exhausted bool // next would overflow
	generated bool
	last      int64
}

// newIdentityAssigner returns the assigner of rules' identity columns (nil when there
// are none).
func newIdentityAssigner(rules *tableview.WriteRules) *identityAssigner {
	if rules == nil || len(rules.Identity) == 0 {
		return nil
	}
	a := &identityAssigner{cols: map[string]*identityState{}}
	for _, c := range rules.Identity {
		st := &identityState{col: c, next: c.Start}
		if c.HasHighWaterMark {
			n, ok := addExact(c.HighWaterMark, c.Step)
			st.next, st.exhausted = n, !ok
		}
		a.cols[c.Name] = st
	}
	return a
}

func addExact(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

// take returns n consecutive identity values of column col.
func (a *identityAssigner) take(col string, n int) ([]int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.cols[col]
	out := make([]int64, n)
	for i := range out {
		if st.exhausted {
			return nil, fmt.Errorf("%w %s: the next value overflows bigint (start %d, step %d)", ErrIdentityColumn, col, st.col.Start, st.col.Step)
		}
		out[i] = st.next
		st.last, st.generated = st.next, true
		var ok bool
		st.next, ok = addExact(st.next, st.col.Step)
		st.exhausted = !ok
	}
	return out, nil
}

// marks returns the high-water marks to commit: the last value generated per column
// that generated any.
func (a *identityAssigner) marks() map[string]int64 {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int64{}
	for name, st := range a.cols {
		if st.generated {
			out[name] = st.last
		}
	}
	return out
}

// withIdentityMarks returns the metadata the commit of a write records: md with the
// high-water marks of the identity values it generated, and whether it changed.
func withIdentityMarks(md log.Metadata, a *identityAssigner) (log.Metadata, bool, error) {
	marks := a.marks()
	if len(marks) == 0 {
		return md, false, nil
	}
	next, err := log.SetIdentityHighWaterMarks(md, marks)
	if err != nil {
		return md, false, err
	}
	return next, true, nil
}

// insertOptional reports the columns rows being inserted may leave out: generated and
// identity columns (their values are computed).
func insertOptional(rules *tableview.WriteRules, schema *arrow.Schema) []bool {
	if rules == nil || (len(rules.Generated) == 0 && len(rules.Identity) == 0) {
		return nil
	}
	opt := make([]bool, schema.NumFields())
	for _, g := range rules.Generated {
		opt[g.Index] = true
	}
	for _, c := range rules.Identity {
		opt[c.Index] = true
	}
	return opt
}

// completeInsert finishes conformed rows being inserted (rec, of the logical schema;
// missing lists the columns the input did not have, placeholders in rec): explicit
// values for GENERATED ALWAYS identity columns are refused, missing identity columns
// take the next values, missing generated columns are computed from the row. The
// NOT NULL rule of the filled columns is checked here (the conformer could not). The
// caller releases the result (rec itself, retained, when nothing was filled).
func completeInsert(ctx context.Context, rules *tableview.WriteRules, ids *identityAssigner, rec arrow.RecordBatch, missing []int, mem memory.Allocator) (arrow.RecordBatch, error) {
	isMissing := make(map[int]bool, len(missing))
	for _, i := range missing {
		isMissing[i] = true
	}
	if rules != nil {
		for _, c := range rules.Identity {
			if !isMissing[c.Index] && !c.AllowExplicitInsert {
				return nil, fmt.Errorf("%w %s: providing values for a GENERATED ALWAYS AS IDENTITY column is not supported (leave the column out; it is generated)", ErrIdentityColumn, c.Name)
			}
		}
	}
	if len(missing) == 0 {
		rec.Retain()
		return rec, nil
	}
	n := int(rec.NumRows())
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		cols[i] = rec.Column(i)
		cols[i].Retain()
	}
	defer releaseArrays(cols)
	replace := func(i int, arr arrow.Array) {
		cols[i].Release()
		cols[i] = arr
	}
	for _, c := range rules.Identity {
		if !isMissing[c.Index] {
			continue
		}
		vals, err := ids.take(c.Name, n)
		if err != nil {
			return nil, err
		}
		b := array.NewInt64Builder(mem)
		b.AppendValues(vals, nil)
		replace(c.Index, b.NewArray())
		b.Release()
	}
	cur := array.NewRecordBatch(rec.Schema(), cols, int64(n))
	defer func() { cur.Release() }()
	for _, g := range rules.Generated {
		if !isMissing[g.Index] {
			continue
		}
		arr, err := g.Value.Evaluate(cur, nil, mem)
		if err != nil {
			return nil, fmt.Errorf("table: generated column %s (%s): %w", g.Name, g.Expr, err)
		}
		replace(g.Index, arr)
		next := array.NewRecordBatch(rec.Schema(), cols, int64(n))
		cur.Release()
		cur = next
	}
	for _, i := range missing {
		if f := rec.Schema().Field(i); !f.Nullable && cols[i].NullN() > 0 {
			return nil, fmt.Errorf("%w: column %q has %d null value(s) but is declared NOT NULL (computed by its generation expression)", ErrNullInNonNullable, f.Name, cols[i].NullN())
		}
	}
	cur.Retain()
	return cur, nil
}

// recomputeGenerated replaces, in rows of the logical schema written by an update,
// the generated columns the update did not assign (assigned: column names, lower
// case) with their expressions' values over the updated row, as Delta Spark's
// UPDATE and MERGE do. The caller releases the result.
func recomputeGenerated(rules *tableview.WriteRules, rec arrow.RecordBatch, assigned map[string]bool, mem memory.Allocator) (arrow.RecordBatch, error) {
	var todo []*tableview.Generated
	if rules != nil {
		for _, g := range rules.Generated {
			if !assigned[strings.ToLower(g.Name)] {
				todo = append(todo, g)
			}
		}
	}
	if len(todo) == 0 {
		rec.Retain()
		return rec, nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		cols[i] = rec.Column(i)
		cols[i].Retain()
	}
	defer releaseArrays(cols)
	for _, g := range todo {
		arr, err := g.Value.Evaluate(rec, nil, mem)
		if err != nil {
			return nil, fmt.Errorf("table: generated column %s (%s): %w", g.Name, g.Expr, err)
		}
		cols[g.Index].Release()
		cols[g.Index] = arr
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()), nil
}

// checkIdentityUpdate refuses an update that assigns an identity column (Delta:
// "UPDATE on IDENTITY column is not supported").
func checkIdentityUpdate(rules *tableview.WriteRules, assigned []string) error {
	if rules == nil {
		return nil
	}
	for _, name := range assigned {
		if c := rules.IdentityOf(name); c != nil {
			return fmt.Errorf("%w %s: UPDATE of an IDENTITY column is not supported", ErrIdentityColumn, c.Name)
		}
	}
	return nil
}

// sameRules checks, for the loser of a race to create a table (commitToWinner), that
// rows checked against mine's write rules may be committed to win: the rules must be
// the same, and identity values generated for the new table (which start at start)
// would collide with the winner's rows, so such a write conflicts (retry it: it then
// appends to the winner's table with its high-water mark).
func sameRules(mine, win *Snapshot, w *fileSetWriter) error {
	a, err := writeRulesOf(mine)
	if err != nil {
		return err
	}
	b, err := writeRulesOf(win)
	if err != nil {
		return err
	}
	if a.Fingerprint() != b.Fingerprint() {
		return fmt.Errorf("%w: another writer created it meanwhile with other write rules (constraints, generated or identity columns)", ErrTableExists)
	}
	if len(w.ids.marks()) > 0 {
		return fmt.Errorf("table: another writer created the table meanwhile, and this write's identity values were generated for an empty table: %w",
			&log.ConflictError{Kind: log.ErrMetadataChanged, Version: 0})
	}
	return nil
}

// sameIdentityBase checks that identity values ids generated for the table state from
// may be committed to the state to (a command whose rows were written before its
// commit attempt, such as a replaceWhere overwrite): the high-water marks must be
// the same, else another writer handed out values meanwhile and this write conflicts.
func sameIdentityBase(from, to *Snapshot, ids *identityAssigner) error {
	if len(ids.marks()) == 0 {
		return nil
	}
	a, err := writeRulesOf(from)
	if err != nil {
		return err
	}
	b, err := writeRulesOf(to)
	if err != nil {
		return err
	}
	for _, c := range a.Identity {
		d := b.IdentityOf(c.Name)
		if d == nil || d.HasHighWaterMark != c.HasHighWaterMark || d.HighWaterMark != c.HighWaterMark {
			return fmt.Errorf("table: identity values of column %s were generated for version %d, but another writer generated values meanwhile: %w",
				c.Name, from.Version(), &log.ConflictError{Kind: log.ErrMetadataChanged, Version: to.Version()})
		}
	}
	return nil
}
