package table

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
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
)

// defaultConflictRetries is how many times a DML command re-plans and re-reads on a new
// snapshot after losing its commit to a concurrent commit that only rearranged data
// (OPTIMIZE), before failing with the conflict.
const defaultConflictRetries = 3

// DMLOptions are the options DELETE, UPDATE and MERGE share. The zero value runs the
// command with the table's settings.
type DMLOptions struct {
	// DryRun plans and reads (to find the rows the command would change) but writes
	// nothing: the result lists the files and rows that would be touched.
	DryRun bool
	// RewriteFiles rewrites every touched file (copy-on-write) even when the table has
	// deletion vectors enabled. Default false: a table with
	// delta.enableDeletionVectors=true gets deletion vectors, any other table is
	// rewritten.
	RewriteFiles bool
	// IsolationLevel is log.WriteSerializable or log.Serializable. Default: log.Serializable
	// when the table sets delta.isolationLevel, else log.WriteSerializable (concurrent blind
	// appends never conflict with the command; see log.Transaction.AddReadPredicate).
	IsolationLevel string
	// ConflictRetries bounds how many times the command is re-planned and re-read on
	// the newest snapshot after a concurrent commit that only rearranged data (OPTIMIZE)
	// removed a file it read (0: 3 times; negative: never). Conflicts
	// with concurrent data changes are returned as *log.ConflictError.
	ConflictRetries int
	// TargetFileSize overrides delta.targetFileSize for the files written.
	TargetFileSize int64
	// Parallelism bounds the files read (and written) at once (default GOMAXPROCS).
	Parallelism int
	// Progress, if set, is called as files are scanned and rewritten.
	Progress func(Progress)
	// Allocator allocates Arrow buffers (default memory.DefaultAllocator).
	Allocator memory.Allocator

	// memoryBudget, set by Merge from MergeOptions.MemoryBudget, scales the batches
	// of the target-file reads and the row groups written (0: the defaults).
	memoryBudget int64
	// evolve, when set, turns every attempt's snapshot into the state the command
	// commits to: the same version with a schema change (MERGE with MergeSchema, a
	// replaceWhere overwrite with MergeSchema), which the commit carries.
	evolve func(*Snapshot) (*Snapshot, error)
	// pre are data files written before the attempts (a replaceWhere overwrite's new
	// rows), added by the commit.
	pre *preWritten
}

func (o DMLOptions) validate() error {
	var errs []error
	switch o.IsolationLevel {
	case "", log.WriteSerializable, log.Serializable:
	default:
		errs = append(errs, fmt.Errorf("%w: isolation level %q (want %s or %s)", ErrInvalidArgument, o.IsolationLevel, log.WriteSerializable, log.Serializable))
	}
	if o.TargetFileSize < 0 || o.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("%w: negative TargetFileSize or Parallelism", ErrInvalidArgument))
	}
	return errors.Join(errs...)
}

// Modes a DML result reports.
const (
	// ModeDeletionVectors: touched files got deletion vectors; changed rows went to new files.
	ModeDeletionVectors = "deletion-vectors"
	// ModeCopyOnWrite: touched files were rewritten without their deleted rows.
	ModeCopyOnWrite = "copy-on-write"
)

// Actions a DMLFile reports.
const (
	// FileRemoved: every live row of the file was deleted (or replaced); the file left
	// the table.
	FileRemoved = "removed"
	// FileDeletionVector: the file got a new (grown) deletion vector.
	FileDeletionVector = "deletion-vector"
	// FileRewritten: the file's surviving rows were copied to new files and the file
	// removed (copy-on-write).
	FileRewritten = "rewritten"
)

// DMLFile is one data file a DML command changed (or, in a dry run, would change).
type DMLFile struct {
	// Path is the file's path relative to the table root, as the log spells it.
	Path string `json:"path"`
	// Action is FileRemoved, FileDeletionVector or FileRewritten.
	Action string `json:"action"`
	// LiveRows is the file's live rows before the command (-1 when unknown).
	LiveRows int64 `json:"liveRows"`
	// RowsDeleted counts the live rows the command deleted or replaced in it.
	RowsDeleted int64 `json:"rowsDeleted"`
	// Read is false when the file was removed without being read (the planner proved
	// that every live row matches, invariant D1).
	Read bool `json:"read"`
}

// DMLResult says what a DELETE, UPDATE or MERGE did (or would do, in a dry run).
type DMLResult struct {
	// Operation is DELETE, UPDATE or MERGE.
	Operation string `json:"operation"`
	// Version is the committed version; -1 when nothing was committed (a dry run, or
	// no row changed).
	Version int64 `json:"version"`
	// ReadVersion is the version the command read (the last attempt's).
	ReadVersion int64 `json:"readVersion"`
	// DryRun is true when nothing was written.
	DryRun bool `json:"dryRun,omitempty"`
	// Mode is ModeDeletionVectors or ModeCopyOnWrite.
	Mode string `json:"mode"`
	// RowsDeleted, RowsUpdated and RowsInserted count the rows the command deleted,
	// updated and inserted; RowsCopied the unchanged rows rewritten (copy-on-write).
	RowsDeleted  int64 `json:"rowsDeleted"`
	RowsUpdated  int64 `json:"rowsUpdated"`
	RowsInserted int64 `json:"rowsInserted"`
	RowsCopied   int64 `json:"rowsCopied"`
	// SourceRows counts the rows of a MERGE source.
	SourceRows int64 `json:"sourceRows,omitempty"`
	// FilesConsidered counts the live files of the snapshot; FilesRead the files whose
	// data was read to find matching rows (rewrites not included).
	FilesConsidered int `json:"filesConsidered"`
	FilesRead       int `json:"filesRead"`
	// FilesAdded and FilesRemoved count the commit's data-file adds and removes (a file
	// that only gets a deletion vector counts in neither); FilesRewritten counts the
	// removed files whose surviving rows were copied.
	FilesAdded     int `json:"filesAdded"`
	FilesRemoved   int `json:"filesRemoved"`
	FilesRewritten int `json:"filesRewritten"`
	// DeletionVectorsAdded counts files that got their first deletion vector,
	// DeletionVectorsUpdated files whose vector grew, DeletionVectorsRemoved files whose
	// vector left the table with them.
	DeletionVectorsAdded   int `json:"deletionVectorsAdded"`
	DeletionVectorsUpdated int `json:"deletionVectorsUpdated"`
	DeletionVectorsRemoved int `json:"deletionVectorsRemoved"`
	// BytesAdded is the size of the data files written; BytesRemoved of those removed;
	// DeletionVectorBytes of the deletion-vector files written.
	BytesAdded          int64 `json:"bytesAdded"`
	BytesRemoved        int64 `json:"bytesRemoved"`
	DeletionVectorBytes int64 `json:"deletionVectorBytes"`
	// ChangeFilesAdded and ChangeFileBytes count the change data files the commit
	// added (cdc actions; tables with delta.enableChangeDataFeed=true, see
	// Table.Changes).
	ChangeFilesAdded int   `json:"changeFilesAdded,omitempty"`
	ChangeFileBytes  int64 `json:"changeFileBytes,omitempty"`
	// Passes is the number of passes over the target a MERGE made (its source was
	// partitioned by key hash to fit the memory budget).
	Passes int `json:"passes,omitempty"`
	// Attempts counts plans made: 1, plus one per re-plan after a concurrent OPTIMIZE.
	Attempts int `json:"attempts"`
	// Files lists the changed files, by path.
	Files []DMLFile `json:"files,omitempty"`
	// Report is what skipping decided while finding the rows (levels partition, stats,
	// bloom, rowgroup, page), summed over the passes of a MERGE.
	Report *ScanReport `json:"report,omitempty"`
	// Metrics are the operationMetrics the commit records (Spark's names).
	Metrics map[string]string `json:"metrics,omitempty"`
}

// dmlAttempt is one attempt of a DML command against one snapshot: what it read,
// which rows of which files it deletes, and where its new rows go.
type dmlAttempt struct {
	t     *Table
	snap  *Snapshot
	opts  DMLOptions
	op    string
	mem   memory.Allocator
	par   int
	useDV bool
	// rowIDs is set on tables with stable row IDs (View.KeepsStableRowIDs): checkDML
	// admitted only commands that move no row, and finish refuses to copy one.
	rowIDs  bool
	rep     *ScanReport
	started time.Time

	mu        sync.Mutex
	touched   *dml.TouchedSet
	readPaths map[string]bool
	readPreds []log.ReadPredicate
	readAll   bool
	sink      dml.Sink
	// changes records the changed rows in change data files (nil: the table's
	// change data feed is off, or a dry run); cdcs are its cdc actions.
	changes  *changeSink
	cdcs     []*log.CDC
	res      *DMLResult
	dvFiles  []string   // DV files written (for cleanup)
	written  []*log.Add // the data files the sink wrote (checked at commit: T1)
	scanTime time.Duration
	merge    dml.MergeCounts // MERGE's row counters
	// batchRows, when positive, is the batch size (rows) of the reads of target
	// files (MERGE scales it to its memory budget); else the scan's default.
	batchRows int64
	// layout keeps the table's clustering through the command (dml.Layout).
	layout *dml.Layout
	// ids assigns identity values to rows MERGE inserts; the commit records their
	// high-water marks (rules.go).
	ids *tableview.IdentityAssigner
	// updateRules and updateAssigned are UPDATE's write rules and the columns its SET
	// list assigns (lower case): the generated columns it does not assign are
	// recomputed from the updated row.
	updateRules    *tableview.WriteRules
	updateAssigned map[string]bool
}

func (t *Table) newAttempt(ctx context.Context, snap *Snapshot, op string, opts DMLOptions) (*dmlAttempt, error) {
	mem := opts.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	par := opts.Parallelism
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	a := &dmlAttempt{t: t, snap: snap, opts: opts, op: op, mem: mem, par: par, started: time.Now(),
		touched: dml.NewTouchedSet(), readPaths: map[string]bool{},
		rep: &ScanReport{Version: snap.Version()}}
	a.useDV = !opts.RewriteFiles && snap.view.WritesDeletionVectors()
	a.rowIDs = snap.view.KeepsStableRowIDs()
	a.res = &DMLResult{Operation: op, Version: -1, ReadVersion: snap.Version(), DryRun: opts.DryRun,
		FilesConsidered: snap.log.NumFiles(), Mode: ModeCopyOnWrite}
	if a.useDV {
		a.res.Mode = ModeDeletionVectors
	}
	a.layout = dml.NewLayout(snap.view, opts.memoryBudget, func(ctx context.Context, add *log.Add) []string {
		_, tree, err := optimize.CurrentTree(ctx, t.store, []*log.Add{add})
		if err != nil || tree == nil {
			return nil
		}
		return tree.Columns
	})
	if opts.DryRun {
		a.sink = dml.NewCountSink(snap.view)
	} else {
		sortBy, curve := newRowsOrder(snap.view)
		set := writeset.Settings{TargetFileSize: opts.TargetFileSize, Parallelism: opts.Parallelism, Allocator: mem,
			RowGroupBytes: budgetRowGroupBytes(opts.memoryBudget)}
		sorted := set
		sorted.SortBy, sorted.SortCurve = sortBy, curve
		sorted.Unchanged = op == "DELETE" // the rows DELETE keeps are not checked against the write rules again
		a.sink = dml.NewFileSink(t.store, snap.view, sorted)
		if snap.view.WritesChangeData() {
			a.changes = newChangeSink(a, set) // change data files are not clustered, nor checked against the write rules
		}
	}
	a.batchRows = budgetBatchRows(opts.memoryBudget, par)
	return a, nil
}

// budgetBatchRows is the batch size (rows) of a DML command's reads of target files
// under a memory budget (0: none, the scan's default): each of the par files read at
// once decodes batches of about budget/(par·1 KiB) rows (so that rows of up to 1 KiB
// in Arrow form hold a fraction of the budget), within [4,096,
// datafile.DefaultBatchSize]. The default MERGE budget keeps the default batch.
func budgetBatchRows(budget int64, par int) int64 {
	if budget <= 0 {
		return 0
	}
	return min(max(budget/(int64(max(par, 1))<<10), 4096), datafile.DefaultBatchSize)
}

// budgetRowGroupBytes caps the row groups a DML command writes under a memory budget
// (0: none): budget/8, at least 1 MiB. The file writer holds an open row group's
// encoded pages and dictionaries until the row group ends, so its memory follows the
// row group; under the default MERGE budget (256 MiB) the cap is above the default row
// group of a 128 MiB file (16 MiB) and changes nothing.
func budgetRowGroupBytes(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return max(budget/8, 1<<20)
}

// dmlIsolation is the isolation level a DML command commits at.
func dmlIsolation(snap *Snapshot, opt string) string {
	if opt != "" {
		return opt
	}
	return snap.Properties().DMLIsolationLevel()
}

// checkDML checks that a DML command may change snap's table. movesRows says whether
// the command writes existing rows to new files even with deletion vectors (an UPDATE,
// a MERGE with an update clause).
func checkDML(snap *Snapshot, op string, opts DMLOptions, movesRows bool) error {
	ls := snap.log
	if err := snap.view.CheckWritable(); err != nil {
		return err
	}
	props := ls.Properties()
	if props.AppendOnly {
		return fmt.Errorf("%w: table is append-only (delta.appendOnly=true); %s refused", ErrInvalidArgument, op)
	}
	if snap.view.KeepsStableRowIDs() && (movesRows || opts.RewriteFiles || !snap.view.WritesDeletionVectors()) {
		// Rows moved to new files would need their stable row IDs materialized in
		// them (PROTOCOL.md "Row Tracking"), which DML does not do yet.
		return fmt.Errorf("%w: %s on a table with row tracking (%s=true) would write existing rows to new files "+
			"without their stable row IDs; supported there: DELETE, and MERGE without update clauses, "+
			"with deletion vectors (%s=true, no copy-on-write)",
			log.ErrUnsupportedFeature, op, log.PropEnableRowTracking, log.PropEnableDeletionVectors)
	}
	if err := props.Err(log.DataFileKeys...); err != nil {
		return fmt.Errorf("%w: version %d: %w", ErrInvalidArgument, ls.Version(), err)
	}
	return nil
}

// markRead records that the command's result depends on the file's rows.
func (a *dmlAttempt) markRead(add *log.Add) {
	a.mu.Lock()
	a.readPaths[add.Path] = true
	a.mu.Unlock()
}

// predicateFor returns the read predicate that tests files added concurrently
// against b (bound to the table's logical schema) by their partition values and
// statistics.
func (a *dmlAttempt) predicateFor(b *expr.Bound) log.ReadPredicate {
	if b == nil {
		return log.ReadPredicate{Text: "true"}
	}
	s := a.snap
	m, err := s.meta()
	parser := s.view.StatsParser()
	return log.ReadPredicate{Text: b.String(), MightMatch: func(add *log.Add) bool {
		if err != nil {
			return true
		}
		var st *stats.File
		if add.Stats != "" {
			if f, perr := parser.Parse(add.Stats); perr == nil {
				st = f
			}
		}
		pv, perr := s.view.PartitionValues(add)
		if perr != nil {
			return true
		}
		return skipping.EvaluateFile(b, st, pv, m.Mapper) != skipping.CannotMatch
	}}
}

// forEachTask runs fn on every task with up to a.par goroutines (an errgroup): the
// first error cancels the ctx the others run with, no task starts after it or after
// ctx ends, and it is returned (else ctx's error). Progress counts every task that
// ran, failed or not.
func (a *dmlAttempt) forEachTask(ctx context.Context, phase string, tasks []*fileTask, fn func(context.Context, *fileTask) error) error {
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
			if a.opts.Progress != nil {
				a.opts.Progress(Progress{Phase: phase, Done: done, Total: int64(len(tasks)), Unit: "files"})
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// loadDV loads a file's current deletion vector.
func (a *dmlAttempt) loadDV(ctx context.Context, add *log.Add) (*dv.Deleted, error) {
	del, err := datafile.LoadDeletionVector(ctx, a.snap.store, add.DeletionVector)
	if err != nil {
		return nil, fmt.Errorf("table: deletion vector of %s: %w", add.Path, err)
	}
	return del, nil
}

// readTouched reads one planned file for a DML command (dml.Target.ReadLive over its
// live rows, its current deletion vector loaded): the file is recorded as read, fn
// gets the file's touched record with every batch, and the file's physical row count
// is kept.
func (a *dmlAttempt) readTouched(ctx context.Context, tg *dml.Target, task *fileTask, needValues bool, fn func(f *dml.Touched, b dml.LiveBatch) error) error {
	a.markRead(task.Add)
	old, err := a.loadDV(ctx, task.Add)
	if err != nil {
		return err
	}
	f := a.touched.File(task.Add)
	a.touched.Opened(f, old)
	n, err := tg.ReadLive(ctx, task, old, needValues, recorder(a.rep), func(b dml.LiveBatch) error { return fn(f, b) })
	if err != nil {
		return err
	}
	a.touched.Counted(f, n)
	return nil
}

// taskFor builds the read task of a live file of the snapshot (index i of
// Snapshot.Log().Files()) outside any plan: the whole file, no recheck.
func (s *Snapshot) taskFor(i int) (*fileTask, error) {
	a := s.log.Files()[i]
	p, err := a.DecodedPath()
	if err != nil {
		return nil, fmt.Errorf("table: version %d: file %q: %w", s.Version(), a.Path, err)
	}
	t := &fileTask{Add: a, Path: p, Verdict: skipping.FileVerdict{Verdict: skipping.MightMatch, Reason: skipping.ReasonNoFilter}}
	if len(s.log.PartitionColumns()) > 0 {
		m, err := s.meta()
		if err != nil {
			return nil, err
		}
		t.PartVals = m.Parts[i]
	}
	return t, nil
}

// finish turns the touched files into the commit's file actions: files all of whose
// live rows are deleted are removed; the others get a grown deletion vector (useDV) or
// are rewritten without the deleted rows. Then the new rows' files are closed. It fills
// the result's counters.
func (a *dmlAttempt) finish(ctx context.Context) ([]*log.Remove, []*log.Add, error) {
	now := a.t.log.Now().UnixMilli()
	res := a.res
	var (
		removes   []*log.Remove
		adds      []*log.Add
		dvFiles   []*dml.Touched
		bitmaps   []*roaring64.Bitmap
		rewrite   []*dml.Touched
		rewriteTk []*fileTask
	)
	idx := map[string]int{}
	for i, add := range a.snap.log.Files() {
		idx[add.Key()] = i
	}
	for _, f := range a.touched.Changed() {
		k := f.Add.Key()
		entry := DMLFile{Path: f.Add.Path, LiveRows: f.LiveRows(), RowsDeleted: f.RowsDeleted(), Read: f.Read}
		switch f.Fate(a.useDV, a.layout.HasHome(k)) {
		case dml.FateRemove:
			entry.Action = FileRemoved
			removes = append(removes, f.Add.RemoveAction(now, true))
			res.FilesRemoved++
			res.BytesRemoved += f.Add.Size
			if f.Add.DeletionVector != nil {
				res.DeletionVectorsRemoved++
			}
		case dml.FateDeletionVector:
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
			i, ok := idx[k]
			if !ok {
				return nil, nil, fmt.Errorf("table: internal error: touched file %s not in the snapshot", f.Add.Path)
			}
			task, err := a.snap.taskFor(i)
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
					if cs, ok := a.sink.(*dml.CountSink); ok {
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
			props := a.snap.Properties()
			wo := dv.WriteOptions{}
			if props.RandomizeFilePrefixes {
				wo.RandomPrefixLength = props.RandomPrefixLength
			}
			w, err := dml.WriteVectors(ctx, a.t.store, dvFiles, bitmaps, wo, now)
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
		if err := a.changes.flushPending(ctx); err != nil {
			return nil, nil, err
		}
		if pre := a.opts.pre; pre != nil {
			if err := a.changes.flushWritten(ctx, pre.adds); err != nil {
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
	if pre := a.opts.pre; pre != nil {
		for _, ad := range pre.adds {
			res.FilesAdded++
			res.BytesAdded += ad.Size
		}
		adds = append(adds, pre.adds...)
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

// rewriteFiles copies the surviving live rows of the given files (copy-on-write):
// a clustered file's to files of its own, with the updated rows held for it
// (rewriteOwn), the others' to the row sink.
func (a *dmlAttempt) rewriteFiles(ctx context.Context, files []*dml.Touched, tasks []*fileTask) error {
	sc, err := a.snap.Scan(ctx, WithAllocator(a.mem))
	if err != nil {
		return err
	}
	byTask := map[*fileTask]*dml.Touched{}
	for i, t := range tasks {
		byTask[t] = files[i]
	}
	var copied int64
	var mu sync.Mutex
	err = a.forEachTask(ctx, "rewrite", tasks, func(ctx context.Context, task *fileTask) error {
		f := byTask[task]
		old, err := a.loadDV(ctx, task.Add)
		if err != nil {
			return err
		}
		if a.layout.Keeps(task.Add) {
			n, err := a.rewriteOwn(ctx, sc, task, f, old)
			mu.Lock()
			copied += n
			mu.Unlock()
			return err
		}
		var n int64
		_, err = sc.target().ReadLive(ctx, task, old, true, nil, func(b dml.LiveBatch) error {
			keep := make([]bool, len(b.Pos))
			any := false
			for i, p := range b.Pos {
				keep[i] = f.Keeps(p)
				any = any || keep[i]
			}
			if a.changes != nil {
				if err := a.changes.Rewritten(ctx, f.Add.Key(), b, keep); err != nil {
					return err
				}
			}
			if !any {
				return nil
			}
			out, err := dml.FilterRows(ctx, b.Rec, keep, a.mem)
			if err != nil {
				return err
			}
			defer out.Release()
			n += out.NumRows()
			return a.sink.Write(ctx, out)
		})
		mu.Lock()
		copied += n
		mu.Unlock()
		return err
	})
	a.res.RowsCopied += copied
	return err
}

// commit commits the attempt's actions. It returns -1 (and no error) when there is
// nothing to commit.
func (a *dmlAttempt) commit(ctx context.Context, removes []*log.Remove, adds []*log.Add, info log.CommitInfo) (int64, error) {
	if len(removes) == 0 && len(adds) == 0 {
		return -1, nil
	}
	// T1: the new files were written (by the sink) for the layout of the snapshot
	// the command commits on; the log refuses the commit if a winner changes it.
	if err := tableview.CheckCommit(ctx, a.t.store, a.snap.view, a.snap.view, a.written); err != nil {
		return -1, err
	}
	if pre := a.opts.pre; pre != nil {
		if err := tableview.CheckCommit(ctx, a.t.store, pre.view, a.snap.view, pre.adds); err != nil {
			return -1, err
		}
	}
	level := dmlIsolation(a.snap, a.opts.IsolationLevel)
	txn := a.snap.log.NewTransaction(log.TxnOptions{IsolationLevel: level})
	txn.Remove(removes...)
	txn.Add(adds...)
	txn.AddChangeFiles(a.cdcs...)
	if md, changed, err := tableview.WithIdentityMarks(a.snap.log.Metadata(), a.ids); err != nil {
		return -1, err
	} else if changed {
		txn.SetMetadata(md) // identity values inserted: the high-water marks advance
	}
	if a.rowIDs {
		// No existing row moved (checkDML, finish): the rows left keep their
		// files' row IDs, new rows take fresh ones.
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
	if a.opts.Progress != nil {
		a.opts.Progress(Progress{Phase: "commit", Done: 0, Total: 1, Unit: "commits"})
	}
	v, err := txn.Commit(ctx, info)
	if err != nil {
		return -1, err
	}
	if a.opts.Progress != nil {
		a.opts.Progress(Progress{Phase: "commit", Done: 1, Total: 1, Unit: "commits"})
	}
	return v, nil
}

// cleanup deletes what the attempt wrote (after a failure or a conflict), best effort.
func (a *dmlAttempt) cleanup() {
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
	for _, p := range a.dvFiles {
		_ = a.t.store.Delete(ctx, p)
	}
	a.dvFiles = nil
}

// dvMetrics adds Spark's deletion-vector metrics (prefix "" or "Target" for MERGE):
// Added and Removed include the updated vectors, as Spark reports them.
func dvMetrics(m map[string]string, prefix string, res *DMLResult) {
	m["num"+prefix+"DeletionVectorsAdded"] = strconv.Itoa(res.DeletionVectorsAdded + res.DeletionVectorsUpdated)
	m["num"+prefix+"DeletionVectorsRemoved"] = strconv.Itoa(res.DeletionVectorsRemoved + res.DeletionVectorsUpdated)
	m["num"+prefix+"DeletionVectorsUpdated"] = strconv.Itoa(res.DeletionVectorsUpdated)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// runDML runs a DML command: body plans and reads against a snapshot (recording the
// rows to delete and writing the new rows), then finish and commit. A commit that
// loses to a concurrent commit which only rearranged data is re-planned on the new
// snapshot (opts.ConflictRetries). Anything written by a failed attempt is deleted,
// except after log.ErrCommitUnknown (the commit may have landed).
func (t *Table) runDML(ctx context.Context, op string, opts DMLOptions, movesRows bool,
	body func(ctx context.Context, a *dmlAttempt) error,
	info func(a *dmlAttempt) log.CommitInfo) (*DMLResult, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	retries := opts.ConflictRetries
	if retries == 0 {
		retries = defaultConflictRetries
	}
	for attempt := 1; ; attempt++ {
		snap, err := t.Snapshot(ctx, Latest())
		if err != nil {
			return nil, err
		}
		if opts.evolve != nil {
			if snap, err = opts.evolve(snap); err != nil {
				return nil, err
			}
		}
		if err := checkDML(snap, op, opts, movesRows); err != nil {
			return nil, err
		}
		a, err := t.newAttempt(ctx, snap, op, opts)
		if err != nil {
			return nil, err
		}
		a.res.Attempts = attempt
		res, err := a.run(ctx, body, info)
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
		return nil, t.explainConflict(ctx, snap, err)
	}
}

func (a *dmlAttempt) run(ctx context.Context, body func(ctx context.Context, a *dmlAttempt) error, info func(a *dmlAttempt) log.CommitInfo) (*DMLResult, error) {
	if err := a.sink.Start(ctx); err != nil {
		return nil, err
	}
	if a.changes != nil {
		if err := a.changes.Start(ctx); err != nil {
			return nil, err
		}
	}
	if err := body(ctx, a); err != nil {
		return nil, err
	}
	a.scanTime = time.Since(a.started)
	removes, adds, err := a.finish(ctx)
	if err != nil {
		return nil, err
	}
	res := a.res
	res.Report = a.rep.clone()
	ci := info(a)
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

// timeMetrics adds Spark's timing metrics.
func (a *dmlAttempt) timeMetrics(m map[string]string) {
	total := time.Since(a.started)
	m["executionTimeMs"] = itoa64(total.Milliseconds())
	m["scanTimeMs"] = itoa64(a.scanTime.Milliseconds())
	m["rewriteTimeMs"] = itoa64((total - a.scanTime).Milliseconds())
}
