package dml

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
)

// Attempt is one attempt of a DML command against one snapshot: what it read,
// which rows of which files it deletes, and where its new rows go. A Command's
// Body drives it (DeleteWhere, UpdateWhere, MergePass); Run finishes, commits or
// cleans it up.
type Attempt struct {
	host  Host
	snap  Snap
	view  *tableview.View
	opts  Options
	op    string
	mem   memory.Allocator
	par   int
	useDV bool
	// rowIDs is set on tables with stable row IDs (View.KeepsStableRowIDs): the
	// host admitted only commands that move no row, and finish refuses to copy one.
	rowIDs  bool
	started time.Time

	mu        sync.Mutex
	touched   *TouchedSet
	readPaths map[string]bool
	readPreds []log.ReadPredicate
	readAll   bool
	sink      Sink
	// changes records the changed rows in change data files (nil: the table's
	// change data feed is off, or a dry run); cdcs are its cdc actions.
	changes  *ChangeSink
	cdcs     []*log.CDC
	res      *Result
	dvFiles  []string   // DV files written (for cleanup)
	written  []*log.Add // the data files the sink wrote (checked at commit: T1)
	scanTime time.Duration
	merge    MergeCounts // MERGE's row counters
	// batchRows, when positive, is the batch size (rows) of the reads of target
	// files (MERGE scales it to its memory budget); else the scan's default.
	batchRows int64
	// layout keeps the table's clustering through the command.
	layout *Layout
	// ids assigns identity values to rows the command inserts; the commit records
	// their high-water marks.
	ids *tableview.IdentityAssigner
	// updateRules and updateAssigned are UPDATE's write rules and the columns its
	// SET list assigns (lower case): the generated columns it does not assign are
	// recomputed from the updated row.
	updateRules    *tableview.WriteRules
	updateAssigned map[string]bool
}

// Run runs cmd: each attempt runs its Body against the snapshot h.Begin gives,
// then finishes (the touched files' fates, rewrites, deletion vectors, change data
// files) and commits once. A commit that loses to a concurrent commit which only
// rearranged data is re-planned on a new snapshot (Options.ConflictRetries).
// Everything a failed or superseded attempt wrote is deleted, except after
// log.ErrCommitUnknown (the commit may have landed); the error returned is
// h.Explain's.
func Run(ctx context.Context, h Host, opts Options, cmd Command) (*Result, error) {
	retries := opts.ConflictRetries
	if retries == 0 {
		retries = DefaultConflictRetries
	}
	for attempt := 1; ; attempt++ {
		s, err := h.Begin(ctx)
		if err != nil {
			return nil, err
		}
		a := newAttempt(h, s, cmd.Op, opts)
		a.res.Attempts = attempt
		res, err := a.run(ctx, cmd)
		if err == nil {
			return res, nil
		}
		var ce *log.ConflictError
		if errors.As(err, &ce) && ce.Rearrangement && attempt <= retries {
			a.cleanup()
			continue
		}
		if !errors.Is(err, log.ErrCommitUnknown) {
			a.cleanup()
		}
		return nil, h.Explain(ctx, s, err)
	}
}

func newAttempt(h Host, s Snap, op string, opts Options) *Attempt {
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	par := opts.Parallelism
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	v := s.View()
	a := &Attempt{host: h, snap: s, view: v, opts: opts, op: op, mem: mem, par: par, started: time.Now(),
		touched: NewTouchedSet(), readPaths: map[string]bool{}}
	a.useDV = !opts.RewriteFiles && v.WritesDeletionVectors()
	a.rowIDs = v.KeepsStableRowIDs()
	a.res = &Result{Operation: op, Version: -1, ReadVersion: v.Log().Version(), DryRun: opts.DryRun,
		FilesConsidered: v.Log().NumFiles(), Mode: ModeCopyOnWrite, Snap: s}
	if a.useDV {
		a.res.Mode = ModeDeletionVectors
	}
	store := s.Store()
	a.layout = NewLayout(v, opts.MemoryBudget, func(ctx context.Context, add *log.Add) []string {
		_, tree, err := optimize.CurrentTree(ctx, store, []*log.Add{add})
		if err != nil || tree == nil {
			return nil
		}
		return tree.Columns
	})
	if opts.DryRun {
		a.sink = NewCountSink(v)
	} else {
		rows, changes := s.Settings()
		rows.Unchanged = op == "DELETE" // the rows DELETE keeps are not checked against the write rules again
		a.sink = NewFileSink(store, v, rows)
		if v.WritesChangeData() {
			a.changes = NewChangeSink(store, v, changes, mem) // not clustered, nor checked against the write rules
		}
	}
	a.batchRows = BudgetBatchRows(opts.MemoryBudget, par)
	return a
}

// BudgetBatchRows is the batch size (rows) of a DML command's reads of target files
// under a memory budget (0: none, the scan's default): each of the par files read at
// once decodes batches of about budget/(par·1 KiB) rows (so that rows of up to 1 KiB
// in Arrow form hold a fraction of the budget), within [4,096,
// datafile.DefaultBatchSize]. The default MERGE budget keeps the default batch.
func BudgetBatchRows(budget int64, par int) int64 {
	if budget <= 0 {
		return 0
	}
	return min(max(budget/(int64(max(par, 1))<<10), 4096), datafile.DefaultBatchSize)
}

// BudgetRowGroupBytes caps the row groups a DML command writes under a memory budget
// (0: none): budget/8, at least 1 MiB. The file writer holds an open row group's
// encoded pages and dictionaries until the row group ends, so its memory follows the
// row group; under the default MERGE budget (256 MiB) the cap is above the default row
// group of a 128 MiB file (16 MiB) and changes nothing.
func BudgetRowGroupBytes(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return max(budget/8, 1<<20)
}

// Snap is the attempt's snapshot, as the host's Begin returned it.
func (a *Attempt) Snap() Snap { return a.snap }

// View is the attempt's snapshot's resolved view.
func (a *Attempt) View() *tableview.View { return a.view }

// Result is the attempt's result so far (Info reads its counters).
func (a *Attempt) Result() *Result { return a.res }

// SetIdentities makes the commit record the high-water marks of the identity
// values ids handed out (a replaceWhere overwrite's rows, written before the
// attempts).
func (a *Attempt) SetIdentities(ids *tableview.IdentityAssigner) { a.ids = ids }

func (a *Attempt) progress(phase string, done, total int64, unit string) {
	if a.opts.Progress != nil {
		a.opts.Progress(phase, done, total, unit)
	}
}

// markRead records that the command's result depends on the file's rows.
func (a *Attempt) markRead(add *log.Add) {
	a.mu.Lock()
	a.readPaths[add.Path] = true
	a.mu.Unlock()
}

// forEachTask runs fn on every task with up to a.par goroutines (an errgroup): the
// first error cancels the ctx the others run with, no task starts after it or after
// ctx ends, and it is returned (else ctx's error). Progress counts every task that
// ran, failed or not.
func (a *Attempt) forEachTask(ctx context.Context, phase string, tasks []*scanexec.Task, fn func(context.Context, *scanexec.Task) error) error {
	var (
		mu   sync.Mutex
		done int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(a.par, 1))
	for _, task := range tasks {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped while waiting for a slot (reported below)
			}
			err := fn(gctx, task)
			mu.Lock()
			defer mu.Unlock()
			done++
			a.progress(phase, done, int64(len(tasks)), "files")
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// loadDV loads a file's current deletion vector.
func (a *Attempt) loadDV(ctx context.Context, add *log.Add) (*dv.Deleted, error) {
	del, err := datafile.LoadDeletionVector(ctx, a.snap.Store(), add.DeletionVector)
	if err != nil {
		return nil, fmt.Errorf("table: deletion vector of %s: %w", add.Path, err)
	}
	return del, nil
}

// readTouched reads one planned file for the command (Target.ReadLive over its
// live rows, its current deletion vector loaded): the file is recorded as read, fn
// gets the file's touched record with every batch, and the file's physical row
// count is kept.
func (a *Attempt) readTouched(ctx context.Context, tg *Target, task *scanexec.Task, needValues bool, fn func(f *Touched, b LiveBatch) error) error {
	a.markRead(task.Add)
	old, err := a.loadDV(ctx, task.Add)
	if err != nil {
		return err
	}
	f := a.touched.File(task.Add)
	a.touched.Opened(f, old)
	n, err := tg.ReadLive(ctx, task, old, needValues, a.snap.Recorder(), func(b LiveBatch) error { return fn(f, b) })
	if err != nil {
		return err
	}
	a.touched.Counted(f, n)
	return nil
}

// plan plans a read of the command's rows (Snap.Plan) with the attempt's batch
// size and allocator.
func (a *Attempt) plan(ctx context.Context, pred expr.Expr, columns []string) (*Plan, error) {
	return a.snap.Plan(ctx, pred, columns, a.batchRows, a.mem)
}

func (a *Attempt) run(ctx context.Context, cmd Command) (*Result, error) {
	if err := a.sink.Start(ctx); err != nil {
		return nil, err
	}
	if a.changes != nil {
		if err := a.changes.Start(ctx); err != nil {
			return nil, err
		}
	}
	if err := cmd.Body(ctx, a); err != nil {
		return nil, err
	}
	a.scanTime = time.Since(a.started)
	removes, adds, err := a.finish(ctx)
	if err != nil {
		return nil, err
	}
	res := a.res
	ci := cmd.Info(a)
	res.Metrics = ci.OperationMetrics
	if a.opts.DryRun {
		a.sink.Discard()
		return res, nil
	}
	v, err := a.commit(ctx, removes, adds, ci)
	if err != nil {
		return nil, err
	}
	res.Version = v
	return res, nil
}

// finish turns the touched files into the commit's file actions: files all of whose
// live rows are deleted are removed; the others get a grown deletion vector (useDV) or
// are rewritten without the deleted rows. Then the new rows' files are closed. It fills
// the result's counters.
func (a *Attempt) finish(ctx context.Context) ([]*log.Remove, []*log.Add, error) {
	now := a.host.Now().UnixMilli()
	res := a.res
	var (
		removes   []*log.Remove
		adds      []*log.Add
		dvFiles   []*Touched
		bitmaps   []*roaring64.Bitmap
		rewrite   []*Touched
		rewriteTk []*scanexec.Task
	)
	for _, f := range a.touched.Changed() {
		k := f.Add.Key()
		entry := File{Path: f.Add.Path, LiveRows: f.LiveRows(), RowsDeleted: f.RowsDeleted(), Read: f.Read}
		switch f.Fate(a.useDV, a.layout.HasHome(k)) {
		case FateRemove:
			entry.Action = FileRemoved
			removes = append(removes, f.Add.RemoveAction(now, true))
			res.FilesRemoved++
			res.BytesRemoved += f.Add.Size
			if f.Add.DeletionVector != nil {
				res.DeletionVectorsRemoved++
			}
		case FateDeletionVector:
			entry.Action = FileDeletionVector
			merged, err := f.Vector()
			if err != nil {
				return nil, nil, err
			}
			dvFiles = append(dvFiles, f)
			bitmaps = append(bitmaps, merged)
		default:
			if a.rowIDs {
				return nil, nil, fmt.Errorf("%w: %s would rewrite %s (no row count for a deletion vector), copying its rows without their stable row IDs",
					log.ErrUnsupportedFeature, a.op, f.Add.Path)
			}
			entry.Action = FileRewritten
			task, err := a.snap.Task(f.Add)
			if err != nil {
				return nil, nil, err
			}
			rewrite = append(rewrite, f)
			rewriteTk = append(rewriteTk, task)
			removes = append(removes, f.Add.RemoveAction(now, true))
			res.FilesRemoved++
			res.FilesRewritten++
			res.BytesRemoved += f.Add.Size
			if f.Add.DeletionVector != nil {
				res.DeletionVectorsRemoved++
			}
		}
		res.Files = append(res.Files, entry)
	}
	if a.changes != nil {
		keys := make([]string, len(rewrite))
		for i, f := range rewrite {
			keys[i] = f.Add.Key()
		}
		a.changes.Decide(keys)
	}
	if len(rewrite) > 0 {
		if a.opts.DryRun {
			// The rows a rewrite would copy, from the counts (nothing is read).
			for _, f := range rewrite {
				if live := f.LiveRows(); live >= 0 {
					n := live - f.RowsDeleted()
					res.RowsCopied += n
					if cs, ok := a.sink.(*CountSink); ok {
						if err := cs.Copies(f.Add, n, a.layout.Keeps(f.Add)); err != nil {
							return nil, nil, err
						}
					}
				}
			}
		} else if err := a.rewriteFiles(ctx, rewrite, rewriteTk); err != nil {
			return nil, nil, err
		}
	}
	a.layout.Release()
	if len(dvFiles) > 0 {
		for _, f := range dvFiles {
			if f.Add.DeletionVector != nil {
				res.DeletionVectorsUpdated++
			} else {
				res.DeletionVectorsAdded++
			}
		}
		if !a.opts.DryRun {
			props := a.view.Properties()
			wo := dv.WriteOptions{}
			if props.RandomizeFilePrefixes {
				wo.RandomPrefixLength = props.RandomPrefixLength
			}
			w, err := WriteVectors(ctx, a.snap.Store(), dvFiles, bitmaps, wo, now)
			if w != nil {
				a.dvFiles = append(a.dvFiles, w.Files...)
			}
			if err != nil {
				return nil, nil, err
			}
			res.DeletionVectorBytes += w.Bytes
			removes = append(removes, w.Removes...)
			adds = append(adds, w.Adds...)
		}
	}
	if a.changes != nil {
		if err := a.flushPending(ctx); err != nil {
			return nil, nil, err
		}
		if pre := a.opts.Pre; pre != nil {
			if err := a.flushWritten(ctx, pre.Adds); err != nil {
				return nil, nil, err
			}
		}
	}
	newAdds, err := a.sink.Finish(ctx)
	if err != nil {
		return nil, nil, err
	}
	if a.changes != nil {
		if a.cdcs, err = a.changes.Finish(ctx); err != nil {
			return nil, nil, err
		}
		for _, c := range a.cdcs {
			res.ChangeFilesAdded++
			res.ChangeFileBytes += c.Size
		}
	}
	for _, ad := range newAdds {
		res.FilesAdded++
		res.BytesAdded += ad.Size
	}
	if n := a.sink.FilesEstimate(); a.opts.DryRun && n > 0 {
		res.FilesAdded = n
	}
	a.written = newAdds
	adds = append(adds, newAdds...)
	if pre := a.opts.Pre; pre != nil {
		for _, ad := range pre.Adds {
			res.FilesAdded++
			res.BytesAdded += ad.Size
		}
		adds = append(adds, pre.Adds...)
	}
	if a.op == "DELETE" || a.op == "WRITE" {
		// UPDATE and MERGE count their deletes themselves: their other removed rows
		// were replaced by updated ones. (WRITE: a replaceWhere overwrite's deletes.)
		for _, f := range res.Files {
			res.RowsDeleted += f.RowsDeleted
		}
	}
	return removes, adds, nil
}

// commit commits the attempt's actions. It returns -1 (and no error) when there is
// nothing to commit.
func (a *Attempt) commit(ctx context.Context, removes []*log.Remove, adds []*log.Add, info log.CommitInfo) (int64, error) {
	if len(removes) == 0 && len(adds) == 0 {
		return -1, nil
	}
	store := a.snap.Store()
	// T1: the new files were written (by the sink) for the layout of the snapshot
	// the command commits on; the log refuses the commit if a winner changes it.
	if err := tableview.CheckCommit(ctx, store, a.view, a.view, a.written); err != nil {
		return -1, err
	}
	if pre := a.opts.Pre; pre != nil {
		if err := tableview.CheckCommit(ctx, store, pre.View, a.view, pre.Adds); err != nil {
			return -1, err
		}
	}
	ls := a.view.Log()
	level := a.opts.IsolationLevel
	if level == "" {
		level = a.view.Properties().DMLIsolationLevel()
	}
	txn := ls.NewTransaction(log.TxnOptions{IsolationLevel: level})
	txn.Remove(removes...)
	txn.Add(adds...)
	txn.AddChangeFiles(a.cdcs...)
	if md, changed, err := tableview.WithIdentityMarks(ls.Metadata(), a.ids); err != nil {
		return -1, err
	} else if changed {
		txn.SetMetadata(md) // identity values inserted: the high-water marks advance
	}
	if a.rowIDs {
		// No existing row moved (the host's check, finish): the rows left keep
		// their files' row IDs, new rows take fresh ones.
		txn.PreserveRowTracking()
	}
	paths := make([]string, 0, len(a.readPaths))
	for p := range a.readPaths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	txn.ReadFiles(paths...)
	if a.readAll {
		txn.ReadWholeTable()
	}
	for _, p := range a.readPreds {
		txn.AddReadPredicate(p)
	}
	a.progress("commit", 0, 1, "commits")
	v, err := txn.Commit(ctx, info)
	if err != nil {
		return -1, err
	}
	a.progress("commit", 1, 1, "commits")
	return v, nil
}

// cleanup deletes what the attempt wrote (after a failure or a conflict), best effort.
func (a *Attempt) cleanup() {
	a.layout.Release()
	a.sink.Discard()
	if a.changes != nil {
		a.changes.Discard()
	}
	if len(a.dvFiles) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := a.snap.Store()
	for _, p := range a.dvFiles {
		_ = store.Delete(ctx, p)
	}
	a.dvFiles = nil
}

func itoa(n int) string     { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// dvMetrics adds Spark's deletion-vector metrics (prefix "" or "Target" for MERGE):
// Added and Removed include the updated vectors, as Spark reports them.
func dvMetrics(m map[string]string, prefix string, res *Result) {
	m["num"+prefix+"DeletionVectorsAdded"] = strconv.Itoa(res.DeletionVectorsAdded + res.DeletionVectorsUpdated)
	m["num"+prefix+"DeletionVectorsRemoved"] = strconv.Itoa(res.DeletionVectorsRemoved + res.DeletionVectorsUpdated)
	m["num"+prefix+"DeletionVectorsUpdated"] = strconv.Itoa(res.DeletionVectorsUpdated)
}

// timeMetrics adds Spark's timing metrics.
func (a *Attempt) timeMetrics(m map[string]string) {
	total := time.Since(a.started)
	m["executionTimeMs"] = itoa64(total.Milliseconds())
	m["scanTimeMs"] = itoa64(a.scanTime.Milliseconds())
	m["rewriteTimeMs"] = itoa64((total - a.scanTime).Milliseconds())
}

// RowMetrics are the operationMetrics of a DELETE or UPDATE (Spark's names),
// rowsKey naming the changed rows' metric.
func (a *Attempt) RowMetrics(rowsKey string, rows int64) map[string]string {
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
	return m
}

// MergeMetrics are the operationMetrics of a MERGE (Spark's names).
func (a *Attempt) MergeMetrics() map[string]string {
	res := a.res
	m := map[string]string{
		"numSourceRows":                          itoa64(res.SourceRows),
		"numTargetRowsInserted":                  itoa64(res.RowsInserted),
		"numTargetRowsUpdated":                   itoa64(res.RowsUpdated),
		"numTargetRowsMatchedUpdated":            itoa64(a.merge.MatchedUpdated),
		"numTargetRowsNotMatchedBySourceUpdated": itoa64(a.merge.BySourceUpdated),
		"numTargetRowsDeleted":                   itoa64(res.RowsDeleted),
		"numTargetRowsMatchedDeleted":            itoa64(a.merge.MatchedDeleted),
		"numTargetRowsNotMatchedBySourceDeleted": itoa64(a.merge.BySourceDeleted),
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
	return m
}
