package table

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/value"
)

// evolveFor returns the table state a write of data with schema in commits to: snap
// itself, or — with opts.OverwriteSchema (with Overwrite) or opts.MergeSchema when
// the data has columns the table lacks — snap with the new metaData (and protocol),
// which the write's transaction commits with its files (log.Snapshot.WithChange).
// The data files are written for the returned state's layout (invariant T1).
func evolveFor(snap *Snapshot, in *arrow.Schema, opts WriteOptions) (*Snapshot, error) {
	ls := snap.log
	var (
		p   log.Protocol
		md  log.Metadata
		err error
	)
	switch {
	case opts.OverwriteSchema && opts.Overwrite:
		p, md, err = log.ReplaceSchema(ls.Protocol(), ls.Metadata(), in, opts.PartitionBy)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		old := ls.Metadata()
		if md.SchemaString == old.SchemaString && reflect.DeepEqual(md.PartitionColumns, old.PartitionColumns) &&
			reflect.DeepEqual(md.Configuration, old.Configuration) && reflect.DeepEqual(p, ls.Protocol()) {
			return snap, nil
		}
	case opts.MergeSchema:
		var added []string
		p, md, added, err = log.MergeSchema(ls.Protocol(), ls.Metadata(), in)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSchemaMismatch, err)
		}
		if len(added) == 0 {
			return snap, nil
		}
	default:
		return snap, nil
	}
	ns, err := newSnapshot(snap.store, ls.WithChange(md, p))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	ns.filters, ns.loadRequests = snap.filters, snap.loadRequests
	if _, err := ns.view.Clustering(); err != nil {
		return nil, fmt.Errorf("%w: the new schema loses a clustering column (change the clustering columns first with Alter ClusterBy or ClusterByNone): %w", ErrInvalidArgument, err)
	}
	if err := ns.view.CheckWritable(); err != nil {
		return nil, err
	}
	return ns, nil
}

// sameChangeBase returns the hook a DML command evolves every attempt's snapshot with
// to the state target (computed once from base, so that every attempt writes for one
// layout — new columns get their physical names once): an attempt's snapshot must
// have base's metadata and protocol (a command re-plans only after a concurrent
// commit that rearranged data, which changes neither).
func sameChangeBase(base, target *Snapshot) func(*Snapshot) (*Snapshot, error) {
	if base == target {
		return nil
	}
	md, p := target.log.Metadata(), target.log.Protocol()
	return func(s *Snapshot) (*Snapshot, error) {
		if s.log.Version() == base.log.Version() {
			return target, nil
		}
		if !reflect.DeepEqual(s.log.Metadata(), base.log.Metadata()) || !reflect.DeepEqual(s.log.Protocol(), base.log.Protocol()) {
			return nil, fmt.Errorf("table: version %d changed the table's metadata or protocol: %w", s.Version(), ErrLayoutChanged)
		}
		ns, err := newSnapshot(s.store, s.log.WithChange(md, p))
		if err != nil {
			return nil, err
		}
		ns.filters, ns.loadRequests = s.filters, s.loadRequests
		return ns, nil
	}
}

// ReplaceWhereError reports a row an overwrite with WriteOptions.ReplaceWhere was
// given that the predicate does not select (false or NULL). Nothing is committed
// when it is returned.
type ReplaceWhereError struct {
	// Predicate is the replaceWhere text.
	Predicate string
	// Row is the row's position in the write's input, counting from 0.
	Row int64
	// Values are the row's values of the columns the predicate uses ("day=DATE
	// '2024-03-01'").
	Values string
}

// Error names the predicate, the row and its values.
func (e *ReplaceWhereError) Error() string {
	return fmt.Sprintf("table: replaceWhere %q: the row at %d (%s) does not satisfy it; an overwrite with replaceWhere writes only rows it selects", e.Predicate, e.Row+1, e.Values)
}

// Unwrap returns ErrReplaceWhereMismatch.
func (e *ReplaceWhereError) Unwrap() error { return ErrReplaceWhereMismatch }

// replaceWhereCheck binds a replaceWhere predicate to the table of snap and returns
// the check of the rows written: every row must satisfy it (false and NULL are
// violations, as for a CHECK constraint).
func replaceWhereCheck(snap *Snapshot, where string) (func(arrow.RecordBatch, int64) error, error) {
	bound, err := bindReplaceWhere(snap, where)
	if err != nil {
		return nil, err
	}
	return func(rec arrow.RecordBatch, base int64) error {
		sel, err := bound.Evaluate(rec)
		if err != nil {
			return fmt.Errorf("table: replaceWhere %q: %w", where, err)
		}
		if sel.Count() == int(rec.NumRows()) {
			return nil
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if !sel.Contains(i) {
				return &ReplaceWhereError{Predicate: where, Row: base + int64(i), Values: rowText(rec, i, bound)}
			}
		}
		return nil
	}, nil
}

func bindReplaceWhere(snap *Snapshot, where string) (*expr.Bound, error) {
	pred, err := expr.Parse(where)
	if err != nil {
		return nil, fmt.Errorf("%w: replaceWhere: %w", ErrInvalidArgument, err)
	}
	bound, err := expr.Bind(pred, snap.view.Logical())
	if err != nil {
		return nil, fmt.Errorf("%w: replaceWhere: %w", ErrInvalidArgument, err)
	}
	return bound, nil
}

// rowText renders the columns a predicate uses of row i, for messages.
func rowText(rec arrow.RecordBatch, i int, b *expr.Bound) string {
	var out []byte
	seen := map[int]bool{}
	for _, c := range b.Columns() {
		j := c.FieldIndices[0]
		if seen[j] {
			continue
		}
		seen[j] = true
		if len(out) > 0 {
			out = append(out, ", "...)
		}
		v, err := value.FromArray(rec.Column(j), i)
		text := "?"
		if err == nil {
			text = expr.FormatValue(v)
		}
		out = append(out, rec.Schema().Field(j).Name+"="+text...)
	}
	return string(out)
}

// replaceWhere overwrites the rows of the table that opts.ReplaceWhere selects with
// rdr's rows, in one commit: the new rows are written first (for the layout of
// target, snap's state after any schema change), each checked against the
// predicate; then the matching rows are deleted as by Delete — re-planned on a new
// snapshot after a concurrent OPTIMIZE, as DML commands are — and the deletions and
// the new files commit together as a WRITE with mode Overwrite.
func (t *Table) replaceWhere(ctx context.Context, snap, target *Snapshot, rdr array.RecordReader, opts WriteOptions) (*WriteResult, error) {
	pred, err := expr.Parse(opts.ReplaceWhere)
	if err != nil {
		return nil, fmt.Errorf("%w: replaceWhere: %w", ErrInvalidArgument, err)
	}
	w, err := writeset.New(t.store, target.view, insertSettings(opts))
	if err != nil {
		return nil, err
	}
	check, err := replaceWhereCheck(target, opts.ReplaceWhere)
	if err != nil {
		return nil, err
	}
	w.SetCheck(check)
	adds, rows, err := w.Run(ctx, rdr)
	if err != nil {
		w.Cleanup()
		return nil, err
	}
	dopts := DMLOptions{TargetFileSize: opts.TargetFileSize, Parallelism: opts.Parallelism, Allocator: opts.Allocator,
		evolve: sameChangeBase(snap, target), pre: &dml.PreWritten{Adds: adds, View: target.view}}
	if opts.Progress != nil {
		dopts.Progress = opts.Progress
	}
	res, err := t.runDML(ctx, "WRITE", dopts, false, func(ctx context.Context, a *dml.Attempt) error {
		if err := sameIdentityBase(target, a.Snap().(*dmlSnap).snap, w.Identities()); err != nil {
			return err
		}
		a.SetIdentities(w.Identities()) // the commit records the high-water marks of the rows written
		return a.DeleteWhere(ctx, pred)
	}, func(a *dml.Attempt) log.CommitInfo {
		// As Spark counts a replaceWhere: the files, bytes and rows written include
		// the copies of the surviving rows of rewritten files.
		r := a.Result()
		return log.CommitInfo{Operation: "WRITE", OperationParameters: writeParameters(a.View().Log(), opts), OperationMetrics: map[string]string{
			"numFiles":            itoa(r.FilesAdded),
			"numOutputRows":       itoa64(rows + r.RowsCopied),
			"numOutputBytes":      itoa64(r.BytesAdded),
			"numRemovedFiles":     itoa(r.FilesRemoved),
			"numRemovedBytes":     itoa64(r.BytesRemoved),
			"numDeletedRows":      itoa64(r.RowsDeleted),
			"numCopiedRows":       itoa64(r.RowsCopied),
			"numAddedChangeFiles": itoa(r.ChangeFilesAdded),
			"changeFileBytes":     itoa64(r.ChangeFileBytes),
		}}
	})
	if err != nil {
		if !errors.Is(err, log.ErrCommitUnknown) {
			w.Cleanup()
		}
		return nil, err
	}
	out := &WriteResult{Version: res.Version, FilesAdded: res.FilesAdded, FilesRemoved: res.FilesRemoved,
		RowsWritten: rows, BytesWritten: res.BytesAdded, RowsDeleted: res.RowsDeleted}
	if res.Version >= 0 {
		out.AutoCompact = t.autoCompactAfter(ctx, target.view.Properties(), adds)
	}
	return out, nil
}

// WriteSchema returns the schema (logical names, as scans return it) the table has
// after a write of data of schema source with opts: the snapshot's, or with
// opts.MergeSchema or opts.OverwriteSchema the evolved or replaced one. Nothing is
// written. A program (the CLI) uses it with CheckConform to refuse an input before
// anything is written.
func (s *Snapshot) WriteSchema(source *arrow.Schema, opts WriteOptions) (*arrow.Schema, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	target, err := evolveFor(s, source, opts)
	if err != nil {
		return nil, err
	}
	return target.view.Logical(), nil
}

// CheckConform reports whether batches of schema source can be written to a table
// of schema table (a WriteSchema) without reading a row: the checks of a write's
// conversion (see WriteOptions and the store assignment rules in Write) that need
// only the schemas — columns the table lacks, NOT NULL columns the source lacks,
// types that cannot be stored — each an error naming the column. Values are checked
// when they are written.
func CheckConform(table, source *arrow.Schema) error {
	return conform.New(table, nil).Check(source)
}
