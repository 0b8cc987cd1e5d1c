package dml

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Host is the facade's side of a DML command (package table implements it): what
// must stay above this package — loading and checking each attempt's snapshot
// (with the schema change the command commits), and explaining a failed commit.
type Host interface {
	// Begin returns the snapshot the next attempt runs on: the table's newest
	// version, turned into the state the command commits to (a schema change the
	// commit carries), checked for the command. It is called once per attempt.
	Begin(ctx context.Context) (Snap, error)
	// Explain returns the error the caller gets for err, the failure of an
	// attempt on s (a commit that lost to a winner changing the table's layout is
	// explained); other errors are returned as they are.
	Explain(ctx context.Context, s Snap, err error) error
	// Now is the time the commit's remove actions and deletion vectors record.
	Now() time.Time
}

// Snap is one attempt's snapshot as the facade plans its reads. Plan, Whole and
// Task may be called from any number of goroutines.
type Snap interface {
	// View is the snapshot's resolved view; View().Log() is the version the
	// attempt reads and commits on.
	View() *tableview.View
	// Store is the table's storage.
	Store() storage.Storage
	// Plan plans the read that finds a command's rows: pred (nil: every row) over
	// the snapshot, reading the columns named plus the predicate's (none named: at
	// least one data column, so that rows can be counted), in batches of
	// batchRows rows (0: the scan's default). The planning report becomes the
	// attempt's (a MERGE sums one per pass).
	Plan(ctx context.Context, pred expr.Expr, columns []string, batchRows int64, mem memory.Allocator) (*Plan, error)
	// Whole returns a Target that reads every column of whole files, without a
	// filter (copy-on-write rewrites, the rows change data files read back).
	Whole(ctx context.Context, mem memory.Allocator) (*Target, error)
	// Task returns the read task of a live file of the snapshot: the whole file,
	// no recheck.
	Task(add *log.Add) (*scanexec.Task, error)
	// Recorder records the row-group and page decisions of the reads of planned
	// files in the attempt's report (nil: nothing recorded).
	Recorder() scanexec.Recorder
	// Settings are the file-set writer settings of the rows the command writes
	// (sorted as the table's clustering asks) and of its change data files.
	Settings() (rows, changes writeset.Settings)
}

// Plan is a planned read of a command's target files.
type Plan struct {
	// Target reads the planned files; Tasks are the files, in log order.
	Target *Target
	Tasks  []*scanexec.Task
	// Bound is the predicate bound to the scan's columns (nil: no predicate).
	Bound *expr.Bound
	// Predicate tests files added concurrently against Bound by their partition
	// values and statistics (the commit's read predicate).
	Predicate log.ReadPredicate
}

// PreWritten are data files a command wrote before its attempts (the new rows of
// a replaceWhere overwrite), committed by whichever attempt commits, written for
// the layout of View (invariant T1, checked at commit).
type PreWritten struct {
	Adds []*log.Add
	View *tableview.View
}

// Options are the settings of a command's attempts. Package table fills them from
// its validated DMLOptions.
type Options struct {
	// DryRun plans and reads but writes and commits nothing.
	DryRun bool
	// RewriteFiles rewrites every changed file copy-on-write even when the table
	// writes deletion vectors.
	RewriteFiles bool
	// IsolationLevel is the commit's isolation level ("": the table's DML level).
	IsolationLevel string
	// ConflictRetries bounds the re-plans after a conflict with a commit that only
	// rearranged data (0: DefaultConflictRetries; negative: none).
	ConflictRetries int
	// Parallelism bounds the files read (and rewritten) at once (0: GOMAXPROCS).
	Parallelism int
	// MemoryBudget, when positive, scales the batches of the target-file reads
	// (BudgetBatchRows) and bounds the updated rows held for clustered files.
	MemoryBudget int64
	// Progress, when set, hears of files read and rewritten and of the commit.
	Progress func(phase string, done, total int64, unit string)
	// Mem allocates Arrow buffers (nil: memory.DefaultAllocator).
	Mem memory.Allocator
	// Pre are files written before the attempts, added by the commit.
	Pre *PreWritten
}

// DefaultConflictRetries is how many times a command re-plans and re-reads on a new
// snapshot after losing its commit to a concurrent commit that only rearranged data
// (OPTIMIZE), before failing with the conflict.
const DefaultConflictRetries = 3

// Modes a Result reports.
const (
	// ModeDeletionVectors: touched files got deletion vectors.
	ModeDeletionVectors = "deletion-vectors"
	// ModeCopyOnWrite: touched files were rewritten without their deleted rows.
	ModeCopyOnWrite = "copy-on-write"
)

// Actions a File reports.
const (
	// FileRemoved: every live row of the file was deleted; the file left the table.
	FileRemoved = "removed"
	// FileDeletionVector: the file got a new (grown) deletion vector.
	FileDeletionVector = "deletion-vector"
	// FileRewritten: the file's surviving rows were copied and the file removed.
	FileRewritten = "rewritten"
)

// File is one data file a command changed (or, in a dry run, would change).
type File struct {
	// Path is the file's path as the log spells it.
	Path string
	// Action is FileRemoved, FileDeletionVector or FileRewritten.
	Action string
	// LiveRows is the file's live rows before the command (-1: unknown).
	LiveRows int64
	// RowsDeleted counts the live rows the command deleted or replaced in it.
	RowsDeleted int64
	// Read is false when the file was removed without being read (D1).
	Read bool
}

// Result is what a command did; package table copies it into its DMLResult, whose
// fields of the same names document the counters in full.
type Result struct {
	// Operation is the Command's Op.
	Operation string
	// Version is the committed version (-1: nothing committed, a dry run or no
	// change); ReadVersion the version the last attempt read.
	Version, ReadVersion int64
	// DryRun is Options.DryRun; Mode is ModeDeletionVectors or ModeCopyOnWrite.
	DryRun bool
	Mode   string
	// Rows deleted, updated, inserted and copied unchanged (copy-on-write), and
	// the rows of a MERGE source.
	RowsDeleted, RowsUpdated, RowsInserted, RowsCopied int64
	SourceRows                                         int64
	// FilesConsidered counts the snapshot's live files, FilesRead the files read
	// to find rows; FilesAdded and FilesRemoved the commit's data-file adds and
	// removes, FilesRewritten the removed files whose surviving rows were copied.
	FilesConsidered, FilesRead               int
	FilesAdded, FilesRemoved, FilesRewritten int
	// Deletion vectors a file got first, grown, and removed with their file.
	DeletionVectorsAdded, DeletionVectorsUpdated, DeletionVectorsRemoved int
	// Bytes of data files written and removed, and of deletion-vector files written.
	BytesAdded, BytesRemoved, DeletionVectorBytes int64
	// Change data files the commit added, and their bytes.
	ChangeFilesAdded int
	ChangeFileBytes  int64
	// Passes is a MERGE's passes over the target; Attempts the attempts made.
	Passes   int
	Attempts int
	// Files lists the changed files in add key order.
	Files []File
	// Metrics are the operationMetrics the commit records.
	Metrics map[string]string
	// Snap is the snapshot of the attempt that produced the result.
	Snap Snap
}

// Command is one DML command: Body plans and reads against an attempt's snapshot,
// recording the rows to delete and writing the new rows; Info is the commitInfo
// of the attempt once its files are written (Attempt's metric helpers give
// Spark's metrics).
type Command struct {
	// Op is DELETE, UPDATE, MERGE, or WRITE (a replaceWhere overwrite's deletes).
	Op   string
	Body func(ctx context.Context, a *Attempt) error
	Info func(a *Attempt) log.CommitInfo
}
