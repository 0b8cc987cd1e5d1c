package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
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
	var bound string
	return t.runDML(ctx, "DELETE", opts, false, func(ctx context.Context, a *dmlAttempt) error {
		bound = pred.String() // as written (the bound form shows literals in canonical form: 9e+02)
		return a.deleteWhere(ctx, pred)
	}, func(a *dmlAttempt) log.CommitInfo {
		return a.commitInfo("numDeletedRows", a.res.RowsDeleted, []string{bound})
	})
}

// deleteWhere records the deletion of the rows for which pred is TRUE (DELETE, and
// the rows a replaceWhere overwrite replaces): files proven to match entirely are
// removed unread, the others read.
func (a *dmlAttempt) deleteWhere(ctx context.Context, pred expr.Expr) error {
	sc, err := a.findScan(ctx, pred, nil)
	if err != nil {
		return err
	}
	a.readPreds = append(a.readPreds, a.predicateFor(sc.table))
	var toRead []*fileTask
	for _, task := range sc.tasks {
		if task.Verdict.Verdict == skipping.MustMatch {
			if _, ok := task.Add.NumRecords(); ok {
				a.touched.RemoveWhole(task.Add)
				continue
			}
		}
		toRead = append(toRead, task)
	}
	a.res.FilesRead = len(toRead)
	return a.forEachTask(ctx, "scan", toRead, func(ctx context.Context, task *fileTask) error {
		return a.deleteMatching(ctx, sc, task)
	})
}

// findScan plans the scan that finds a DML command's rows: pred (nil: every row) over
// the snapshot, reading the columns named plus the predicate's (at least one data
// column, so that rows can be counted). The scan's planning report becomes the
// attempt's (MERGE merges one per pass).
func (a *dmlAttempt) findScan(ctx context.Context, pred expr.Expr, columns []string) (*Scan, error) {
	opts := []ScanOption{WithAllocator(a.mem)}
	if a.batchRows > 0 {
		opts = append(opts, WithBatchSize(a.batchRows))
	}
	if pred != nil {
		opts = append(opts, WithPredicate(pred))
	}
	cols := append([]string(nil), columns...)
	if len(cols) == 0 {
		// Only the predicate's columns are read; a predicate over partition columns
		// alone still needs one data column to see the rows.
		cols = []string{a.firstDataColumn()}
	}
	sc, err := a.snap.Scan(ctx, append(opts, WithColumns(cols...))...)
	if err != nil {
		return nil, err
	}
	if len(a.rep.Levels) == 0 && a.rep.Files.Total == 0 {
		a.rep = sc.report.clone()
	} else {
		a.rep.merge(&sc.report)
	}
	return sc, nil
}

// firstDataColumn names the table's first column that is not a partition column.
func (a *dmlAttempt) firstDataColumn() string {
	for _, f := range a.snap.view.Logical().Fields() {
		if !a.snap.view.IsPartition(f.Name) {
			return f.Name
		}
	}
	return a.snap.view.Logical().Field(0).Name
}

// deleteMatching reads one planned file and records the positions of its live rows
// that satisfy the scan's predicate.
func (a *dmlAttempt) deleteMatching(ctx context.Context, sc *Scan, task *fileTask) error {
	tg := sc.target()
	return a.readTouched(ctx, tg, task, false, func(f *dml.Touched, b dml.LiveBatch) error {
		pos, _, err := tg.Matching(b)
		if err == nil {
			a.touched.Delete(f, pos)
			if a.changes != nil {
				a.changes.DeletedAt(f.Add.Key(), pos)
			}
		}
		return err
	})
}

func itoa(n int) string { return itoa64(int64(n)) }

// commitInfo is the commitInfo of a DELETE or UPDATE: Spark's operation parameters
// (predicate: a JSON list) and metrics, rowsKey naming the changed rows' metric.
func (a *dmlAttempt) commitInfo(rowsKey string, rows int64, predicates []string) log.CommitInfo {
	res := a.res
	m := map[string]string{
		"numAddedFiles":       itoa(res.FilesAdded),
		"numRemovedFiles":     itoa(res.FilesRemoved),
		rowsKey:               itoa64(rows),
		"numCopiedRows":       itoa64(res.RowsCopied),
		"numAddedChangeFiles": itoa(res.ChangeFilesAdded),
		"changeFileBytes":     itoa64(res.ChangeFileBytes),
		"numRemovedBytes":     itoa64(res.BytesRemoved),
		"numAddedBytes":       itoa64(res.BytesAdded),
	}
	dvMetrics(m, "", res)
	a.timeMetrics(m)
	return log.CommitInfo{Operation: a.op, OperationParameters: map[string]string{"predicate": paramJSON(nonNilStrings(predicates))}, OperationMetrics: m}
}
