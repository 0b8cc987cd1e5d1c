package table

import (
	"fmt"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
)

// Write rules. Every row a write adds passes through one funnel, the data-file
// writer's consume (internal/writeset): appends and overwrites, the rows UPDATE and MERGE
// write (updated, inserted and copied rows), optimized writes. There the
// rows are checked against the write rules of the version they are written for
// (tableview.WriteRules, resolved once per version): every CHECK constraint and column
// invariant must be TRUE and every generated column equal to its expression; NOT NULL
// is checked by the conformer (internal/conform). A violation fails the write naming the rule, its
// expression and the row's values, and nothing is committed. Where new rows enter
// (Write's input, MERGE's inserts) they are first completed: a generated column the
// input lacks is computed, an identity column the input lacks takes the next values
// (tableview.IdentityAssigner; tableview.CompleteInsert, RecomputeGenerated and
// CheckIdentityUpdate apply the rules), and explicit values for a GENERATED ALWAYS identity column are
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
// would overflow bigint. It matches ErrInvalidArgument.
var ErrIdentityColumn = tableview.ErrIdentityColumn

// writeRulesOf returns snap's write rules, or the reason they cannot be enforced.
func writeRulesOf(snap *Snapshot) (*tableview.WriteRules, error) {
	r, err := snap.view.WriteRules()
	if err != nil {
		return nil, err
	}
	return r, nil
}

// sameRules checks, for the loser of a race to create a table (commitToWinner), that
// rows checked against mine's write rules may be committed to win: the rules must be
// the same, and identity values generated for the new table (which start at start)
// would collide with the winner's rows, so such a write conflicts (retry it: it then
// appends to the winner's table with its high-water mark).
func sameRules(mine, win *Snapshot, w *writeset.Writer) error {
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
	if len(w.Identities().Marks()) > 0 {
		return fmt.Errorf("table: another writer created the table meanwhile, and this write's identity values were generated for an empty table: %w",
			&log.ConflictError{Kind: log.ErrMetadataChanged, Version: 0})
	}
	return nil
}

// sameIdentityBase checks that identity values ids generated for the table state from
// may be committed to the state to (a command whose rows were written before its
// commit attempt, such as a replaceWhere overwrite): the high-water marks must be
// the same, else another writer handed out values meanwhile and this write conflicts.
func sameIdentityBase(from, to *Snapshot, ids *tableview.IdentityAssigner) error {
	if len(ids.Marks()) == 0 {
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
