package table

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/log"
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
	dmlOpts := opts.DMLOptions
	dmlOpts.memoryBudget = budget
	dmlOpts.evolve = sameChangeBase(snap, target)
	spec := dml.MergeSpec{Keys: keyNames, Matched: mergeClauses(opts.WhenMatched), NotMatched: mergeClauses(opts.WhenNotMatched),
		BySource: mergeClauses(opts.WhenNotMatchedBySource), SourceAlias: opts.SourceAlias, TargetAlias: opts.TargetAlias}
	var onText string
	return t.runDML(ctx, "MERGE", dmlOpts, opts.updates(), func(ctx context.Context, a *dml.Attempt) error {
		var err error
		onText, err = a.Merge(ctx, spec, src, passes)
		return err
	}, func(a *dml.Attempt) log.CommitInfo {
		return log.CommitInfo{Operation: "MERGE", OperationParameters: map[string]string{
			"predicate":                    paramJSON([]string{onText}),
			"matchedPredicates":            clausesJSON(opts.WhenMatched),
			"notMatchedPredicates":         clausesJSON(opts.WhenNotMatched),
			"notMatchedBySourcePredicates": clausesJSON(opts.WhenNotMatchedBySource),
		}, OperationMetrics: a.MergeMetrics()}
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

// mergeClauses are the engine's form of public MERGE clauses.
func mergeClauses(cls []MergeClause) []dml.Clause {
	out := make([]dml.Clause, len(cls))
	for i, c := range cls {
		out[i] = dml.Clause{Action: mergeActions[c.Action], Condition: c.Condition, Set: c.Set}
	}
	return out
}

// mergeActions maps the public actions to dml's.
var mergeActions = map[MergeAction]dml.Action{MergeUpdate: dml.ActUpdate, MergeDelete: dml.ActDelete, MergeInsert: dml.ActInsert}
