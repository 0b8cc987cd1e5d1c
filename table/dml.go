package table

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
)

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
	pre *dml.PreWritten
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
	ModeDeletionVectors = dml.ModeDeletionVectors
	// ModeCopyOnWrite: touched files were rewritten without their deleted rows.
	ModeCopyOnWrite = dml.ModeCopyOnWrite
)

// Actions a DMLFile reports.
const (
	// FileRemoved: every live row of the file was deleted (or replaced); the file left
	// the table.
	FileRemoved = dml.FileRemoved
	// FileDeletionVector: the file got a new (grown) deletion vector.
	FileDeletionVector = dml.FileDeletionVector
	// FileRewritten: the file's surviving rows were copied to new files and the file
	// removed (copy-on-write).
	FileRewritten = dml.FileRewritten
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

// runDML runs a DML command in package internal/dml's engine (dml.Run: the
// attempts, their finish, commit, retries after a concurrent OPTIMIZE and cleanup),
// with this package as its host: body and info are the command's (dml.Command).
func (t *Table) runDML(ctx context.Context, op string, opts DMLOptions, movesRows bool,
	body func(ctx context.Context, a *dml.Attempt) error,
	info func(a *dml.Attempt) log.CommitInfo) (*DMLResult, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	h := &dmlHost{t: t, op: op, opts: opts, movesRows: movesRows}
	do := dml.Options{DryRun: opts.DryRun, RewriteFiles: opts.RewriteFiles, IsolationLevel: opts.IsolationLevel,
		ConflictRetries: opts.ConflictRetries, Parallelism: opts.Parallelism, MemoryBudget: opts.memoryBudget,
		Mem: opts.Allocator, Pre: opts.pre}
	if p := opts.Progress; p != nil {
		do.Progress = func(phase string, done, total int64, unit string) {
			p(Progress{Phase: phase, Done: done, Total: total, Unit: unit})
		}
	}
	r, err := dml.Run(ctx, h, do, dml.Command{Op: op, Body: body, Info: info})
	if err != nil {
		return nil, err
	}
	return dmlResult(r), nil
}

// dmlResult is the public result of the engine's r.
func dmlResult(r *dml.Result) *DMLResult {
	res := &DMLResult{Operation: r.Operation, Version: r.Version, ReadVersion: r.ReadVersion, DryRun: r.DryRun, Mode: r.Mode,
		RowsDeleted: r.RowsDeleted, RowsUpdated: r.RowsUpdated, RowsInserted: r.RowsInserted, RowsCopied: r.RowsCopied,
		SourceRows: r.SourceRows, FilesConsidered: r.FilesConsidered, FilesRead: r.FilesRead,
		FilesAdded: r.FilesAdded, FilesRemoved: r.FilesRemoved, FilesRewritten: r.FilesRewritten,
		DeletionVectorsAdded: r.DeletionVectorsAdded, DeletionVectorsUpdated: r.DeletionVectorsUpdated,
		DeletionVectorsRemoved: r.DeletionVectorsRemoved, BytesAdded: r.BytesAdded, BytesRemoved: r.BytesRemoved,
		DeletionVectorBytes: r.DeletionVectorBytes, ChangeFilesAdded: r.ChangeFilesAdded, ChangeFileBytes: r.ChangeFileBytes,
		Passes: r.Passes, Attempts: r.Attempts, Metrics: r.Metrics}
	for _, f := range r.Files {
		res.Files = append(res.Files, DMLFile{Path: f.Path, Action: f.Action, LiveRows: f.LiveRows, RowsDeleted: f.RowsDeleted, Read: f.Read})
	}
	if s, ok := r.Snap.(*dmlSnap); ok {
		res.Report = s.report()
	}
	return res
}

// dmlCommitInfo is the commitInfo of a DELETE or UPDATE: Spark's predicate
// parameter (a JSON list) and the engine's metrics.
func dmlCommitInfo(op string, predicates []string, metrics map[string]string) log.CommitInfo {
	return log.CommitInfo{Operation: op, OperationParameters: map[string]string{"predicate": paramJSON(nonNilStrings(predicates))}, OperationMetrics: metrics}
}

// dmlHost is this package as the DML engine's host (dml.Host) for one command:
// each attempt's snapshot is the newest version, evolved (opts.evolve) and checked
// (checkDML).
type dmlHost struct {
	t         *Table
	op        string
	opts      DMLOptions
	movesRows bool
}

func (h *dmlHost) Begin(ctx context.Context) (dml.Snap, error) {
	snap, err := h.t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	if h.opts.evolve != nil {
		if snap, err = h.opts.evolve(snap); err != nil {
			return nil, err
		}
	}
	if err := checkDML(snap, h.op, h.opts, h.movesRows); err != nil {
		return nil, err
	}
	return &dmlSnap{snap: snap, opts: h.opts, rep: &ScanReport{Version: snap.Version()}}, nil
}

func (h *dmlHost) Explain(ctx context.Context, s dml.Snap, err error) error {
	return h.t.explainConflict(ctx, s.(*dmlSnap).snap, err)
}

func (h *dmlHost) Now() time.Time { return h.t.log.Now() }

// dmlSnap is one attempt's snapshot as the DML engine plans its reads (dml.Snap),
// with the attempt's scan report.
type dmlSnap struct {
	snap *Snapshot
	opts DMLOptions

	mu  sync.Mutex
	rep *ScanReport
	idx map[string]int // add key → index in the snapshot's files (Task)
}

func (s *dmlSnap) View() *tableview.View  { return s.snap.view }
func (s *dmlSnap) Store() storage.Storage { return s.snap.store }

// Plan plans the scan that finds a command's rows (see dml.Snap). The scan's
// planning report becomes the attempt's; a later plan's is added to it (MERGE
// plans one per pass).
func (s *dmlSnap) Plan(ctx context.Context, pred expr.Expr, columns []string, batchRows int64, mem memory.Allocator) (*dml.Plan, error) {
	opts := []ScanOption{WithAllocator(mem)}
	if batchRows > 0 {
		opts = append(opts, WithBatchSize(batchRows))
	}
	if pred != nil {
		opts = append(opts, WithPredicate(pred))
	}
	cols := append([]string(nil), columns...)
	if len(cols) == 0 {
		// Only the predicate's columns are read; a predicate over partition columns
		// alone still needs one data column to see the rows.
		cols = []string{s.firstDataColumn()}
	}
	sc, err := s.snap.Scan(ctx, append(opts, WithColumns(cols...))...)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.rep.Levels) == 0 && s.rep.Files.Total == 0 {
		s.rep = sc.report.clone()
	} else {
		s.rep.merge(&sc.report)
	}
	s.mu.Unlock()
	return &dml.Plan{Target: sc.target(), Tasks: sc.tasks, Bound: sc.table, Predicate: s.predicateFor(sc.table)}, nil
}

// firstDataColumn names the table's first column that is not a partition column.
func (s *dmlSnap) firstDataColumn() string {
	v := s.snap.view
	for _, f := range v.Logical().Fields() {
		if !v.IsPartition(f.Name) {
			return f.Name
		}
	}
	return v.Logical().Field(0).Name
}

// predicateFor returns the read predicate that tests files added concurrently
// against b (bound to the table's logical schema) by their partition values and
// statistics.
func (s *dmlSnap) predicateFor(b *expr.Bound) log.ReadPredicate {
	if b == nil {
		return log.ReadPredicate{Text: "true"}
	}
	snap := s.snap
	m, err := snap.meta()
	parser := snap.view.StatsParser()
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
		pv, perr := snap.view.PartitionValues(add)
		if perr != nil {
			return true
		}
		return skipping.EvaluateFile(b, st, pv, m.Mapper) != skipping.CannotMatch
	}}
}

func (s *dmlSnap) Whole(ctx context.Context, mem memory.Allocator) (*dml.Target, error) {
	sc, err := s.snap.Scan(ctx, WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	return sc.target(), nil
}

func (s *dmlSnap) Task(add *log.Add) (*fileTask, error) {
	s.mu.Lock()
	if s.idx == nil {
		s.idx = map[string]int{}
		for i, a := range s.snap.log.Files() {
			s.idx[a.Key()] = i
		}
	}
	i, ok := s.idx[add.Key()]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("table: internal error: touched file %s not in the snapshot", add.Path)
	}
	return s.snap.taskFor(i)
}

func (s *dmlSnap) Recorder() scanexec.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return recorder(s.rep)
}

func (s *dmlSnap) Settings() (rows, changes writeset.Settings) {
	mem := s.opts.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	set := writeset.Settings{TargetFileSize: s.opts.TargetFileSize, Parallelism: s.opts.Parallelism, Allocator: mem,
		RowGroupBytes: dml.BudgetRowGroupBytes(s.opts.memoryBudget)}
	rows = set
	rows.SortBy, rows.SortCurve = newRowsOrder(s.snap.view)
	return rows, set
}

// report is a copy of the attempt's scan report.
func (s *dmlSnap) report() *ScanReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rep.clone()
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

// newRowsOrder is the clustering DML sorts its new rows by: a clustered table's
// clustering columns on a Hilbert curve (as OPTIMIZE clusters it), else the
// columns and curve of the most recent clustering run its files' tags record;
// none (nil) on a table without either, or clustered by no columns.
func newRowsOrder(v *tableview.View) ([][]string, optimize.Curve) {
	if c, err := v.Clustering(); err == nil && c != nil {
		if len(c.Columns) == 0 {
			return nil, optimize.CurveNone
		}
		return c.Columns, optimize.CurveHilbert
	}
	names, curve := lastClustering(v.Log().Files())
	if curve == optimize.CurveNone || curve == optimize.CurveWorkload || len(names) == 0 {
		return nil, optimize.CurveNone
	}
	paths := make([][]string, 0, len(names))
	for _, n := range names {
		parts, err := stats.ParseColumnPath(n)
		if err != nil || len(parts) == 0 || v.IsPartition(parts[0]) {
			return nil, optimize.CurveNone
		}
		paths = append(paths, parts)
	}
	return paths, curve
}

func itoa(n int) string     { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
