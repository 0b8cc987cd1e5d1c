package tableview

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/log"
)

// Applying the write rules to rows being written: completing the rows a write
// inserts (identity values, generated columns the input lacks), recomputing the
// generated columns an update does not assign, and refusing what Delta refuses of
// identity columns. Checking rows against the rules is WriteRules.Verify.

// IdentityAssigner hands out identity values for one write (PROTOCOL.md "Identity
// Columns"): per column, start (or the high-water mark plus step) onwards, step by
// step, in the order rows arrive, failing rather than overflowing bigint. marks are
// the new high-water marks the write's commit records (only for columns it generated
// values for). It is safe for concurrent use.
type IdentityAssigner struct {
	mu   sync.Mutex
	cols map[string]*identityState // by column name (schema spelling)
}

type identityState struct {
	col       *IdentityColumn
	next      int64
	exhausted bool // next would overflow
	generated bool
	last      int64
}

// NewIdentityAssigner returns the assigner of rules' identity columns (nil when there
// are none).
func NewIdentityAssigner(rules *WriteRules) *IdentityAssigner {
	if rules == nil || len(rules.Identity) == 0 {
		return nil
	}
	a := &IdentityAssigner{cols: map[string]*identityState{}}
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

// Take returns n consecutive identity values of column col.
func (a *IdentityAssigner) Take(col string, n int) ([]int64, error) {
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

// Marks returns the high-water marks to commit: the last value generated per column
// that generated any.
func (a *IdentityAssigner) Marks() map[string]int64 {
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

// WithIdentityMarks returns the metadata the commit of a write records: md with the
// high-water marks of the identity values it generated, and whether it changed.
func WithIdentityMarks(md log.Metadata, a *IdentityAssigner) (log.Metadata, bool, error) {
	marks := a.Marks()
	if len(marks) == 0 {
		return md, false, nil
	}
	next, err := log.SetIdentityHighWaterMarks(md, marks)
	if err != nil {
		return md, false, err
	}
	return next, true, nil
}

// InsertOptional reports the columns rows being inserted may leave out: generated and
// identity columns (their values are computed).
func InsertOptional(rules *WriteRules, schema *arrow.Schema) []bool {
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

// CompleteInsert finishes conformed rows being inserted (rec, of the logical schema;
// missing lists the columns the input did not have, placeholders in rec): explicit
// values for GENERATED ALWAYS identity columns are refused, missing identity columns
// take the next values, missing generated columns are computed from the row. The
// NOT NULL rule of the filled columns is checked here (the conformer could not). The
// caller releases the result (rec itself, retained, when nothing was filled).
func CompleteInsert(ctx context.Context, rules *WriteRules, ids *IdentityAssigner, rec arrow.RecordBatch, missing []int, mem memory.Allocator) (arrow.RecordBatch, error) {
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
		vals, err := ids.Take(c.Name, n)
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
			return nil, fmt.Errorf("%w: column %q has %d null value(s) but is declared NOT NULL (computed by its generation expression)", conform.ErrNullInNonNullable, f.Name, cols[i].NullN())
		}
	}
	cur.Retain()
	return cur, nil
}

// RecomputeGenerated replaces, in rows of the logical schema written by an update,
// the generated columns the update did not assign (assigned: column names, lower
// case) with their expressions' values over the updated row, as Delta Spark's
// UPDATE and MERGE do. The caller releases the result.
func RecomputeGenerated(rules *WriteRules, rec arrow.RecordBatch, assigned map[string]bool, mem memory.Allocator) (arrow.RecordBatch, error) {
	var todo []*Generated
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

// CheckIdentityUpdate refuses an update that assigns an identity column (Delta:
// "UPDATE on IDENTITY column is not supported").
func CheckIdentityUpdate(rules *WriteRules, assigned []string) error {
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

// releaseArrays releases the non-nil arrays of as.
func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}
