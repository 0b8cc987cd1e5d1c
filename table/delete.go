package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/log"
)

// Delete deletes the rows for which the predicate where (the expr grammar, e.g.
// "day < DATE '2024-01-01' AND user_id = 42") is TRUE, in one commit. "TRUE" deletes
// every row; an empty predicate is refused.
//
// How it touches files (invariant D1): files whose partition values, statistics or
// Bloom filters prove that no row matches are untouched; files the planner proves
// must match entirely are removed without being read; only the other files are read
// (only the predicate's columns, skipping row groups and pages their footers and page
// indexes exclude), and get a deletion vector when the table has deletion vectors
// enabled, or are rewritten without the deleted rows otherwise (see DMLOptions). A
// file all of whose live rows are deleted is removed.
//
// The commit records operation DELETE with Spark's operationParameters (predicate)
// and operationMetrics (numDeletedRows, numRemovedFiles, numAddedFiles,
// numDeletionVectorsAdded, ...). It reads the table through the predicate: concurrent
// blind appends never conflict with it under log.WriteSerializable (the default); under
// log.Serializable an append whose rows could match does. When nothing matches, nothing
// is committed (Version -1).
func (t *Table) Delete(ctx context.Context, where string, opts DMLOptions) (*DMLResult, error) {
	if strings.TrimSpace(where) == "" {
		return nil, fmt.Errorf("%w: DELETE needs a predicate (use TRUE to delete every row)", ErrInvalidArgument)
	}
	pred, err := expr.Parse(where)
	if err != nil {
		return nil, err
	}
	return t.DeleteWhere(ctx, pred, opts)
}

// DeleteWhere is Delete with a predicate built with package expr's Go API.
func (t *Table) DeleteWhere(ctx context.Context, pred expr.Expr, opts DMLOptions) (*DMLResult, error) {
	if pred == nil {
		return nil, fmt.Errorf("%w: DELETE needs a predicate (use expr.Constant(true) to delete every row)", ErrInvalidArgument)
	}
	return t.runDML(ctx, "DELETE", opts, false, func(ctx context.Context, a *dml.Attempt) error {
		return a.DeleteWhere(ctx, pred)
	}, func(a *dml.Attempt) log.CommitInfo {
		// The predicate as written (the bound form shows literals in canonical form: 9e+02).
		return dmlCommitInfo("DELETE", []string{pred.String()}, a.RowMetrics("numDeletedRows", a.Result().RowsDeleted))
	})
}
