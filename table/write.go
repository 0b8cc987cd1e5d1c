package table

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Progress reports how far a long operation has come, to the func(Progress) the
// long operations take in their options (WriteOptions.Progress, DMLOptions and
// MergeOptions, RestoreOptions, OptimizeOptions, MaintainOptions, VacuumOptions; a
// scan takes it through WithProgress); nil reports nothing. (Checkpoint reports
// none: it writes one file.) The function is called from one goroutine at a time,
// though not always the same one, and must return quickly.
type Progress struct {
	// Phase names the current step ("write", "commit", "scan", ...).
	Phase string
	// Done and Total count units of the phase (Total 0 when unknown).
	Done, Total int64
	// Unit names what is counted ("rows", "files", "bytes").
	Unit string
	// BinsDone of BinsTotal bins and FilesDone of FilesTotal input files are
	// rewritten so far. Optimize (and Maintain's rewrite) set them in every report
	// (the totals are the plan's NumBins and NumFiles; a bin is done once its new
	// files are written, before the commit); Vacuum sets the files it deleted;
	// other operations leave them zero.
	BinsDone, BinsTotal   int64
	FilesDone, FilesTotal int64
}

// WriteOptions configures Write. The zero value appends with the table's defaults.
type WriteOptions struct {
	// Overwrite replaces the table's rows with the new ones instead of adding them
	// (the default, false, appends). An overwrite removes the table's files
	// (dataChange=true) and adds the new ones in one commit (commitInfo WRITE, mode
	// Overwrite). Like Delta Spark's, it reads the whole table: under
	// log.WriteSerializable (the default) a concurrent blind append does not conflict
	// with it (the appended rows stay), under log.Serializable it does.
	Overwrite bool
	// ReplaceWhere, with Overwrite, replaces only the rows the predicate (the
	// expr grammar, over the table's columns) selects (Delta's replaceWhere): every
	// new row must satisfy it — a row for which it is false or NULL is an error
	// wrapping ErrReplaceWhereMismatch naming the row, and nothing is committed — and
	// the table's rows that satisfy it are deleted as Delete deletes them (files
	// proven to match entirely are removed unread, the others get deletion vectors
	// or are rewritten, as the table says), in the same commit as the new files. The
	// commit records the predicate (commitInfo predicate) and reads the table through
	// it: under log.WriteSerializable concurrent blind appends do not conflict, under
	// log.Serializable an append whose rows could match does.
	ReplaceWhere string
	// MergeSchema lets the data carry columns the table lacks (Delta's mergeSchema):
	// they are added to the table's schema — at the end, nullable; fields of struct
	// columns too, also inside arrays and maps — in the same commit as the data (with
	// column mapping each gets the next id and a fresh physical name; a type that
	// needs a table feature upgrades the protocol). Without it such columns are an
	// error (ErrSchemaMismatch). Columns the data lacks never need it: nullable ones
	// are written as NULL, NOT NULL ones are an error.
	MergeSchema bool
	// OverwriteSchema, with Overwrite and no ReplaceWhere, replaces the table's
	// schema with the data's (Delta's overwriteSchema): every column nullable,
	// partitioned by PartitionBy. The table keeps its id and properties; under column
	// mapping a column with the path and type of an existing one keeps its id and
	// physical name. A clustered table's clustering columns must stay.
	OverwriteSchema bool
	// PartitionBy, with OverwriteSchema, are the table's new partition columns (none:
	// unpartitioned, as Spark's overwriteSchema without partitionBy).
	PartitionBy []string
	// TargetFileSize overrides the table's delta.targetFileSize (default 128 MiB): a
	// file is closed once its compressed size reaches it.
	TargetFileSize int64
	// Parallelism bounds how many columns of a file are encoded at once (default
	// GOMAXPROCS). Each file receives a contiguous run of the input, so sorted input
	// stays sorted within and across files.
	Parallelism int
	// AppID and AppVersion make the write idempotent: when the table already records
	// version >= AppVersion for AppID (a txn action), Write commits nothing and returns
	// a result with Skipped set. AppID "" disables this.
	AppID      string
	AppVersion int64
	// Progress, if set, is called as rows are written and files finished.
	Progress func(Progress)
	// Allocator allocates Arrow buffers (default memory.DefaultAllocator).
	Allocator memory.Allocator
}

// WriteResult describes a committed write.
type WriteResult struct {
	// Version is the committed table version (-1 when Skipped).
	Version int64 `json:"version"`
	// Skipped is true when an idempotent write found its AppVersion already committed.
	Skipped bool `json:"skipped,omitempty"`
	// FilesAdded, FilesRemoved, RowsWritten and BytesWritten count what the commit did.
	FilesAdded   int   `json:"filesAdded"`
	FilesRemoved int   `json:"filesRemoved"`
	RowsWritten  int64 `json:"rowsWritten"`
	BytesWritten int64 `json:"bytesWritten"`
	// RowsDeleted counts the rows an overwrite with ReplaceWhere deleted (0 for
	// other writes).
	RowsDeleted int64 `json:"rowsDeleted,omitempty"`
	// AutoCompact is what auto-compaction did after the commit, when the table
	// property delta.autoOptimize.autoCompact asks for it (nil otherwise, or when
	// nothing was due). Its failure is reported there and never fails the write.
	AutoCompact *AutoCompaction `json:"autoCompact,omitempty"`
}

// WriteBatches writes the given batches (see Write). The caller keeps ownership of them.
func (t *Table) WriteBatches(ctx context.Context, recs []arrow.RecordBatch, opts WriteOptions) (*WriteResult, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no record batches to write", ErrInvalidArgument)
	}
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchemaMismatch, err)
	}
	defer rdr.Release()
	return t.Write(ctx, rdr, opts)
}

// Write writes every batch of rdr as new data files and commits them in one
// transaction (append or overwrite). Data files are uniquely named and written in full
// before the commit that references them (L2); if anything fails, or ctx is cancelled,
// nothing is committed and the files written so far are deleted (best effort: any left
// behind are unreferenced and removed by VACUUM). The one exception is a commit whose
// outcome is unknown (an error wrapping log.ErrCommitUnknown): its files are kept,
// since the commit may be visible.
//
// Batches must carry every table column (matched by name, case-insensitively) and no
// other; a mismatch is an error naming the column and both types. Differences of
// representation only (string/large_string, binary/large_binary, timestamp units and
// UTC spellings, dictionary-encoded strings) are cast; nulls in NOT NULL columns are
// refused.
func (t *Table) Write(ctx context.Context, rdr array.RecordReader, opts WriteOptions) (*WriteResult, error) {
	snap, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	return t.writeOn(ctx, snap, rdr, opts)
}

// CreateWrite creates a table in store whose version 0 holds the rows of rdr: one
// commit carries the table's metaData and protocol and the files written, so a write
// that fails, or is cancelled, leaves no table behind (and no files: they are deleted
// best effort, as by Write). The schema, partitioning and properties are checked as
// by Create, and so is the location (ErrLocationNotEmpty unless copts.AllowNonEmpty).
//
// When a table already exists in store, or another writer creates one while the rows
// are being written (a race to create the same table), and its schema and partition
// columns equal schema and copts.PartitionColumns, the rows are appended to it
// instead, in one commit; an idempotent write (wopts.AppID) is skipped as by Write.
// A table that does not match is an error wrapping ErrTableExists, and nothing is
// committed. An overwrite (wopts.Overwrite) never replaces the rows of a table another
// writer created concurrently: that is ErrTableExists too.
func CreateWrite(ctx context.Context, store storage.Storage, schema *arrow.Schema, copts CreateOptions, rdr array.RecordReader, wopts WriteOptions) (*Table, *WriteResult, error) {
	nt, err := newTableMetadata(schema, copts)
	if err != nil {
		return nil, nil, err
	}
	md := nt.md
	t := &Table{store: store, log: log.New(store)}
	if _, err := t.log.LatestVersion(ctx); err == nil {
		snap, err := t.Snapshot(ctx, Latest())
		if err != nil {
			return nil, nil, err
		}
		mine, err := newSnapshot(store, t.log.NewTableSnapshot(md, nt.proto, nt.domains...))
		if err != nil {
			return nil, nil, err
		}
		if err := sameData(mine.view, snap.view); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrTableExists, err)
		}
		res, err := t.writeOn(ctx, snap, rdr, wopts)
		if err != nil {
			return nil, nil, err
		}
		return t, res, nil
	} else if !errors.Is(err, log.ErrTableNotFound) {
		return nil, nil, err
	}
	if !copts.AllowNonEmpty {
		if err := checkEmpty(ctx, store); err != nil {
			return nil, nil, err
		}
	}
	snap, err := newSnapshot(t.store, t.log.NewTableSnapshot(md, nt.proto, nt.domains...))
	if err != nil {
		return nil, nil, err
	}
	res, err := t.writeOn(ctx, snap, rdr, wopts)
	if err != nil {
		return nil, nil, err
	}
	return t, res, nil
}

// CreateWriteURL is CreateWrite at a location (see OpenURL for the forms; a missing
// local directory is created first, and removed
// again if nothing was committed).
func CreateWriteURL(ctx context.Context, dir string, schema *arrow.Schema, copts CreateOptions, rdr array.RecordReader, wopts WriteOptions) (*Table, *WriteResult, error) {
	var (
		t   *Table
		res *WriteResult
	)
	err := inNewDir(dir, func(st storage.Storage) error {
		var err error
		t, res, err = CreateWrite(ctx, st, schema, copts, rdr, wopts)
		return err
	})
	return t, res, err
}

// sameData reports (as an error saying how) whether rows conformed to the table of
// view a cannot be written to the table of view b unchanged: their logical schemas
// (names, order, types, nullability) or partition columns differ.
func sameData(a, b *tableview.View) error {
	if !a.Logical().Equal(b.Logical()) {
		return fmt.Errorf("the table has schema %s, the data %s", b.Logical(), a.Logical())
	}
	if d := tableview.Compare(a, b); d.Has(tableview.DiffPartitioning) {
		return fmt.Errorf("the table is partitioned by %v, the data by %v", b.Metadata().PartitionColumns, a.Metadata().PartitionColumns)
	}
	return nil
}

// writeOn writes rdr's rows as files for the table state snap and commits them. snap
// may be a table that does not exist yet (log.NewTableSnapshot): the commit then
// creates it, and when another writer created the table meanwhile the rows are
// committed to that table if it matches (see CreateWrite): the files as they are when
// its layout is snap's, else rewritten for its layout (invariant T1).
func (t *Table) writeOn(ctx context.Context, snap *Snapshot, rdr array.RecordReader, opts WriteOptions) (*WriteResult, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if skip, err := checkWrite(snap, opts); err != nil || skip {
		if skip {
			return &WriteResult{Version: -1, Skipped: true}, nil
		}
		return nil, err
	}
	target, err := evolveFor(snap, rdr.Schema(), opts)
	if err != nil {
		return nil, err
	}
	if opts.ReplaceWhere != "" && snap.Version() >= 0 {
		return t.replaceWhere(ctx, snap, target, rdr, opts)
	}
	snap = target
	w, err := writeset.New(t.store, snap.view, insertSettings(opts))
	if err != nil {
		return nil, err
	}
	if opts.ReplaceWhere != "" {
		check, err := replaceWhereCheck(snap, opts.ReplaceWhere)
		if err != nil {
			return nil, err
		}
		w.SetCheck(check)
	}
	adds, rows, err := w.Run(ctx, rdr)
	if err != nil {
		w.Cleanup()
		return nil, err
	}
	res, err := t.commitWrite(ctx, snap, w, adds, rows, opts)
	var ce *log.ConflictError
	if err != nil && snap.Version() < 0 && errors.As(err, &ce) && ce.Version == 0 {
		var kept *writeset.Writer
		res, kept, err = t.commitToWinner(ctx, snap, w, rows, opts)
		if kept != nil && kept != w {
			// The rows were rewritten for the winner's layout: the commit, if any,
			// references kept's files, and this writer's own are not referenced.
			w.Cleanup()
			w = kept
		}
	} else if err != nil {
		err = t.explainConflict(ctx, snap, err)
	}
	if err != nil {
		if !errors.Is(err, log.ErrCommitUnknown) {
			w.Cleanup()
		}
		return nil, err
	}
	if res.Skipped {
		w.Cleanup()
		return res, nil
	}
	res.AutoCompact = t.autoCompactAfter(ctx, snap.view.Properties(), w.Output().Adds())
	return res, nil
}

// insertSettings are the file-set writer's settings for the new rows of a write
// with opts (Write, CreateWrite): completed, then checked against the write rules.
func insertSettings(opts WriteOptions) writeset.Settings {
	set := writeset.Settings{TargetFileSize: opts.TargetFileSize, Parallelism: opts.Parallelism,
		Allocator: opts.Allocator, Inserts: true}
	if p := opts.Progress; p != nil {
		set.Progress = func(rows int64) { p(Progress{Phase: "write", Done: rows, Unit: "rows"}) }
	}
	return set
}

// validate checks the combinations of options.
func (o WriteOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...))
	}
	if o.TargetFileSize < 0 || o.Parallelism < 0 {
		bad("negative TargetFileSize or Parallelism")
	}
	if o.ReplaceWhere != "" && !o.Overwrite {
		bad("ReplaceWhere needs Overwrite")
	}
	if o.OverwriteSchema && !o.Overwrite {
		bad("OverwriteSchema needs Overwrite")
	}
	if o.OverwriteSchema && o.ReplaceWhere != "" {
		bad("OverwriteSchema replaces the whole table; it cannot be combined with ReplaceWhere")
	}
	if len(o.PartitionBy) > 0 && !o.OverwriteSchema {
		bad("PartitionBy applies with OverwriteSchema only (a table's partitioning changes only when its schema is replaced)")
	}
	return errors.Join(errs...)
}

// explainConflict turns a commit that lost to a winner changing the table's metaData
// or protocol into an error that also says how the table's layout changed under the
// writer (invariant T1: the files it wrote were written for snap's layout and are
// not committed); other errors, and changes that leave the layout as it was, are
// returned as they are.
func (t *Table) explainConflict(ctx context.Context, snap *Snapshot, err error) error {
	if !errors.Is(err, log.ErrMetadataChanged) && !errors.Is(err, log.ErrProtocolChanged) {
		return err
	}
	latest, lerr := t.Snapshot(ctx, Latest())
	if lerr != nil {
		return err
	}
	if lerr := tableview.CheckLayout(snap.view, latest.view); lerr != nil {
		return fmt.Errorf("table: nothing was committed: %w: %w", lerr, err)
	}
	return err
}

// checkWrite checks that snap's table can take the write, and reports whether an
// idempotent write (opts.AppID) is already committed and must be skipped.
func checkWrite(snap *Snapshot, opts WriteOptions) (skip bool, err error) {
	ls := snap.log
	if err := snap.view.CheckWritable(); err != nil {
		return false, err
	}
	if opts.AppID != "" {
		if v, ok := ls.TxnVersion(opts.AppID); ok && v >= opts.AppVersion {
			return true, nil
		}
	}
	props := snap.view.Properties()
	if err := props.Err(log.DataFileKeys...); err != nil {
		return false, fmt.Errorf("%w: version %d: %w", ErrInvalidArgument, ls.Version(), err)
	}
	if opts.Overwrite && props.AppendOnly {
		return false, fmt.Errorf("%w: table is append-only (delta.appendOnly=true); overwrite refused", ErrInvalidArgument)
	}
	return false, nil
}

// commitToWinner commits the rows a table's first write produced (w's files, for the
// new table mine) to the table another writer created meanwhile, when it matches:
// the loser of a race to create a table appends. When the winner's layout differs
// from mine's — column mapping gives each creator physical names of its own — the
// files are rewritten for the winner's layout first (rewriteFor); the returned
// writer is the one whose files the commit references (w, or the rewrite's, also
// when that commit failed: the caller deletes them unless its outcome is unknown).
func (t *Table) commitToWinner(ctx context.Context, mine *Snapshot, w *writeset.Writer, rows int64, opts WriteOptions) (*WriteResult, *writeset.Writer, error) {
	win, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, nil, err
	}
	if err := sameData(mine.view, win.view); err != nil {
		return nil, nil, fmt.Errorf("%w: another writer created it meanwhile, and %v", ErrTableExists, err)
	}
	if opts.Overwrite {
		return nil, nil, fmt.Errorf("%w: another writer created it meanwhile; an overwrite does not replace its rows", ErrTableExists)
	}
	if err := sameRules(mine, win, w); err != nil {
		return nil, nil, err
	}
	skip, err := checkWrite(win, opts)
	if err != nil {
		return nil, nil, err
	}
	if skip {
		return &WriteResult{Version: -1, Skipped: true}, nil, nil
	}
	if tableview.CheckLayout(mine.view, win.view) == nil {
		res, err := t.commitWrite(ctx, win, w, w.Output().Adds(), rows, opts)
		if err != nil {
			err = t.explainConflict(ctx, win, err)
		}
		return res, w, err
	}
	rw, adds, err := t.rewriteFor(ctx, win, mine, w.Output().Adds(), opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := t.commitWrite(ctx, win, rw, adds, rows, opts)
	if err != nil {
		err = t.explainConflict(ctx, win, err)
	}
	return res, rw, err
}

// rewriteFor rewrites the data files adds, which this write stored for the table
// state from (a table about to be created), for the layout of the table state to
// (the table another writer created meanwhile, with the same logical schema and
// partition columns but its own physical names and field ids: column mapping), so
// that they can be committed to it (invariant T1). It returns the writer holding
// the new files (the caller commits them, or discards them with Cleanup) and their
// add actions.
//
// Why re-read: the write's Arrow input was streamed into the files and is gone, and
// the files are the rows exactly as they were conformed to the table's logical
// schema. Reading them back through from's mapping gives those rows again, and
// writing them through to's writer settings gives files, statistics, partition
// values and Bloom filters keyed by to's physical names, as a first write to that
// table would have. Only this write's own new files are read; nothing of the
// winner's table is touched. The rewrite holds one batch of one file at a time, plus
// the writer's open row groups.
func (t *Table) rewriteFor(ctx context.Context, to, from *Snapshot, adds []*log.Add, opts WriteOptions) (*writeset.Writer, []*log.Add, error) {
	opts.Progress = nil // the rows were reported once, as they were written
	rw, err := writeset.New(t.store, to.view, insertSettings(opts))
	if err != nil {
		return nil, nil, err
	}
	var ferr error
	for _, a := range adds {
		if ferr = rw.Copy(ctx, from.view, a); ferr != nil {
			break
		}
	}
	added, _, err := rw.Finish(ctx, ferr)
	if err != nil {
		rw.Cleanup()
		return nil, nil, err
	}
	return rw, added, nil
}

// commitWrite commits the adds w wrote (for w's view) to the table state snap,
// after checking invariant T1: the files were written for snap's layout.
func (t *Table) commitWrite(ctx context.Context, snap *Snapshot, w *writeset.Writer, adds []*log.Add, rows int64, opts WriteOptions) (*WriteResult, error) {
	if err := tableview.CheckCommit(ctx, t.store, w.View(), snap.view, adds); err != nil {
		return nil, err
	}
	ls := snap.log
	txn := ls.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	txn.Add(adds...)
	// Identity values generated: the high-water marks advance in the same commit.
	if md, changed, err := tableview.WithIdentityMarks(ls.Metadata(), w.Identities()); err != nil {
		return nil, err
	} else if changed {
		txn.SetMetadata(md)
	}
	res := &WriteResult{FilesAdded: len(adds), RowsWritten: rows}
	for _, a := range adds {
		res.BytesWritten += a.Size
	}
	var removedBytes int64
	if opts.Overwrite {
		txn.ReadWholeTable()
		now := time.Now().UnixMilli()
		for _, f := range ls.Files() {
			size := f.Size
			txn.Remove(&log.Remove{Path: f.Path, DeletionTimestamp: &now, DataChange: true, ExtendedFileMetadata: true,
				PartitionValues: f.PartitionValues, Size: &size, Tags: f.Tags, DeletionVector: f.DeletionVector,
				BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion})
			removedBytes += f.Size
		}
		res.FilesRemoved = ls.NumFiles()
	}
	if opts.AppID != "" {
		txn.SetTxn(opts.AppID, opts.AppVersion)
	}
	blind := !opts.Overwrite
	info := log.CommitInfo{
		Operation:           "WRITE",
		OperationParameters: writeParameters(ls, opts),
		OperationMetrics: map[string]string{
			"numFiles":        strconv.Itoa(len(adds)),
			"numOutputRows":   strconv.FormatInt(rows, 10),
			"numOutputBytes":  strconv.FormatInt(res.BytesWritten, 10),
			"numRemovedFiles": strconv.Itoa(res.FilesRemoved),
			"numRemovedBytes": strconv.FormatInt(removedBytes, 10),
		},
		IsBlindAppend: &blind,
	}
	if opts.Progress != nil {
		opts.Progress(Progress{Phase: "commit", Done: 0, Total: 1, Unit: "commits"})
	}
	v, err := txn.Commit(ctx, info)
	if err != nil {
		return nil, err
	}
	res.Version = v
	if opts.Progress != nil {
		opts.Progress(Progress{Phase: "commit", Done: 1, Total: 1, Unit: "commits"})
	}
	return res, nil
}

// writeParameters are the operationParameters of a WRITE commit, as Delta Spark
// records them (DeltaOperations.Write): mode and partitionBy always; predicate (the
// replaceWhere text), canOverwriteSchema and canMergeSchema when set.
func writeParameters(ls *log.Snapshot, opts WriteOptions) map[string]string {
	params := map[string]string{
		"mode":        paramString(writeMode(opts.Overwrite)),
		"partitionBy": paramJSON(nonNilStrings(ls.PartitionColumns())),
	}
	if opts.ReplaceWhere != "" {
		params["predicate"] = paramString(opts.ReplaceWhere)
	}
	if opts.OverwriteSchema {
		params["canOverwriteSchema"] = "true"
	}
	if opts.MergeSchema {
		params["canMergeSchema"] = "true"
	}
	return params
}

// ParseSize parses a byte size such as "128MiB", "64m" or "1048576" (see
// log.ParseSize, the one size parser: binary units b, k, m, g, t, p with optional
// b/ib, positive, overflow refused).
func ParseSize(s string) (int64, error) { return log.ParseSize(s) }

// ParseInterval parses a duration given as a Delta interval ("interval 7 days",
// "2 weeks", "36 hours") or a Go duration ("168h"); see log.ParseInterval, the one
// interval parser.
func ParseInterval(s string) (time.Duration, error) { return log.ParseInterval(s) }

// writeMode names a write's mode as commitInfo records it.
func writeMode(overwrite bool) string {
	if overwrite {
		return "Overwrite"
	}
	return "Append"
}
