package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/dml"
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
	return t.runDML(ctx, "UPDATE", opts, true, func(ctx context.Context, a *dml.Attempt) error {
		var err error
		predicates, err = a.UpdateWhere(ctx, set, pred)
		return err
	}, func(a *dml.Attempt) log.CommitInfo {
		return dmlCommitInfo("UPDATE", predicates, a.RowMetrics("numUpdatedRows", a.Result().RowsUpdated))
	})
}
