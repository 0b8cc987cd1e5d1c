package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
)

// UpdateOptions are Update's options: the SET list, and the options every DML
// command takes.
type UpdateOptions struct {
	// Set is the SET list in the expr grammar ("qty = qty + 1, note = NULL, total =
	// price * qty"); required. Every assignment sees the row as it was before the
	// update.
	Set string
	DMLOptions
}

// Update sets columns of the rows for which where is TRUE ("" updates every row), in
// one commit, as opts.Set says: the predicate is an argument as in Delete, the SET
// list a named option, so the two cannot be swapped. Values follow Spark SQL's ANSI
// rules (see expr.BindAssignments), and a row whose new value does not fit its column
// fails the whole command with nothing written. Errors in opts.Set or where are
// reported before anything is read.
//
// Files are chosen as by Delete: files that cannot match are untouched, the others
// are read (every column, skipping row groups and pages that cannot match). The
// updated rows are written to new files; their old positions are deleted by deletion
// vectors when the table has them enabled, otherwise the touched files are rewritten
// without them. Updating a partition column moves the row to its new partition. On
// a clustered table the layout is kept (see "DML keeps the layout" in the package
// documentation): a rewritten clustered file keeps its order and tags, and an
// updated row whose clustering columns did not change is written back in its place.
//
// The commit records operation UPDATE with Spark's predicate parameter and metrics
// (numUpdatedRows, numCopiedRows, numAddedFiles, numRemovedFiles, ...); concurrency
// as for Delete.
func (t *Table) Update(ctx context.Context, where string, opts UpdateOptions) (*DMLResult, error) {
	if strings.TrimSpace(opts.Set) == "" {
		return nil, fmt.Errorf("%w: UPDATE needs a SET list (UpdateOptions.Set)", ErrInvalidArgument)
	}
	as, err := expr.ParseAssignments(opts.Set)
	if err != nil {
		return nil, err
	}
	var pred expr.Expr
	if strings.TrimSpace(where) != "" {
		if pred, err = expr.Parse(where); err != nil {
			return nil, err
		}
	}
	return t.UpdateWhere(ctx, as, pred, opts.DMLOptions)
}

// UpdateWhere is Update with the SET list and predicate (nil: every row) built with
// package expr's Go API.
func (t *Table) UpdateWhere(ctx context.Context, set []expr.Assignment, pred expr.Expr, opts DMLOptions) (*DMLResult, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: UPDATE needs a SET list", ErrInvalidArgument)
	}
	var predicates []string
	return t.runDML(ctx, "UPDATE", opts, true, func(ctx context.Context, a *dmlAttempt) error {
		bound, err := expr.BindAssignments(set, a.snap.view.Logical())
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		rules, err := writeRulesOf(a.snap)
		if err != nil {
			return err
		}
		if err := tableview.CheckIdentityUpdate(rules, dml.AssignedNames(set)); err != nil {
			return err
		}
		a.updateRules, a.updateAssigned = rules, dml.AssignedSet(set)
		sc, err := a.findScan(ctx, pred, fieldNamesOf(a.snap.view.Logical()))
		if err != nil {
			return err
		}
		predicates = []string{}
		if sc.table != nil {
			predicates = append(predicates, pred.String())
		}
		a.readPreds = append(a.readPreds, a.predicateFor(sc.table))
		a.res.FilesRead = len(sc.tasks)
		return a.forEachTask(ctx, "scan", sc.tasks, func(ctx context.Context, task *fileTask) error {
			return a.updateMatching(ctx, sc, task, bound)
		})
	}, func(a *dmlAttempt) log.CommitInfo {
		return a.commitInfo("numUpdatedRows", a.res.RowsUpdated, predicates)
	})
}

// updateMatching reads one planned file, writes the updated versions of its matching
// live rows to the row sink and records their positions for deletion.
func (a *dmlAttempt) updateMatching(ctx context.Context, sc *Scan, task *fileTask, set *expr.BoundAssignments) error {
	var updated int64
	tg := sc.target()
	err := a.readTouched(ctx, tg, task, true, func(f *dml.Touched, b dml.LiveBatch) error {
		pos, sel, err := tg.Matching(b)
		if err != nil || len(pos) == 0 {
			return err
		}
		out, err := set.Apply(b.Rec, sel, a.mem)
		if err != nil {
			return fmt.Errorf("table: UPDATE of %s: %w", task.Add.Path, err)
		}
		defer out.Release()
		oldIdx := make([]int, 0, len(pos))
		if sel != nil {
			keep := make([]bool, len(b.Pos))
			for i := range keep {
				keep[i] = sel.Contains(i)
				if keep[i] {
					oldIdx = append(oldIdx, i)
				}
			}
			rows, err := dml.FilterRows(ctx, out, keep, a.mem)
			if err != nil {
				return err
			}
			defer rows.Release()
			out = rows
		} else {
			for i := range b.Pos {
				oldIdx = append(oldIdx, i)
			}
		}
		regen, err := tableview.RecomputeGenerated(a.updateRules, out, a.updateAssigned, a.mem)
		if err != nil {
			return fmt.Errorf("table: UPDATE of %s: %w", task.Add.Path, err)
		}
		defer regen.Release()
		out = regen
		if err := a.writeUpdated(ctx, f, b.Rec, oldIdx, pos, out); err != nil {
			return err
		}
		if a.changes != nil {
			if err := a.recordUpdate(ctx, b.Rec, sel, out); err != nil {
				return err
			}
		}
		a.touched.Delete(f, pos)
		updated += int64(len(pos))
		return nil
	})
	a.mu.Lock()
	a.res.RowsUpdated += updated
	a.mu.Unlock()
	return err
}

// fieldNamesOf lists a schema's top-level field names.
func fieldNamesOf(s *arrow.Schema) []string {
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// recordUpdate records in the change data files the rows of rec that sel selects
// (nil: all) as update preimages and post, their new values, as postimages.
func (a *dmlAttempt) recordUpdate(ctx context.Context, rec arrow.RecordBatch, sel *expr.Selection, post arrow.RecordBatch) error {
	pre := rec
	if sel != nil {
		keep := make([]bool, rec.NumRows())
		for i := range keep {
			keep[i] = sel.Contains(i)
		}
		rows, err := dml.FilterRows(ctx, rec, keep, a.mem)
		if err != nil {
			return err
		}
		defer rows.Release()
		pre = rows
	}
	return a.changes.Update(ctx, pre, post)
}
