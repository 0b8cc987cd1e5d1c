package writeset

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/gather"
	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// Writer splits input by partition and streams each partition's rows into files of
// about the target size through the data-file layer (one datafile.Roller per
// partition), so memory holds the batch being split and each open file's current
// row group, whatever the size of the input. A Writer is used by one goroutine at a
// time.
type Writer struct {
	store     storage.Storage
	view      *tableview.View
	set       Settings
	mem       memory.Allocator
	conf      *conform.Conformer
	out       *datafile.Output
	partIdx   []int         // indices of partition columns in the table schema
	dataIdx   []int         // indices of data columns in the table schema
	fileSch   *arrow.Schema // data columns only (logical names)
	rollers   map[string]*datafile.Roller
	rowsTotal int64
	sorter    *sortBuffers // optimized write on a clustered table (nil otherwise)
	// dir, when set, is the directory (ending in "/") the files go to, their
	// partition directories under it: change data files go to _change_data/.
	dir string
	// rules are the write rules every row is checked against; rulesErr says why
	// they cannot be enforced (then no row is written). ids assigns the identity
	// values of an inserting writer.
	rules    *tableview.WriteRules
	rulesErr error
	ids      *tableview.IdentityAssigner
	// check, when set, vets every conformed batch (base: the input row of its first
	// row) before it is written: a replaceWhere's predicate.
	check func(rec arrow.RecordBatch, base int64) error
}

// New returns a writer of data files for the table version v resolves, in store:
// rows of v's logical schema, checked against v's write rules (completed first
// when set.Inserts), split by partition.
func New(store storage.Storage, v *tableview.View, set Settings) (*Writer, error) {
	mem := set.allocator()
	w := &Writer{store: store, view: v, set: set, mem: mem, dataIdx: v.DataIndices(), fileSch: v.DataSchema(),
		conf: conform.New(v.Logical(), mem), rollers: map[string]*datafile.Roller{}}
	if r, err := v.WriteRules(); err != nil {
		w.rulesErr = err
	} else {
		w.rules = r
	}
	if set.Inserts && w.rulesErr == nil {
		w.conf.Optional = tableview.InsertOptional(w.rules, v.Logical())
		w.ids = tableview.NewIdentityAssigner(w.rules)
	}
	for _, p := range v.Partitions() { // in the log's order
		w.partIdx = append(w.partIdx, p.Index)
	}
	spec, err := v.FileSpec(tableview.FileOptions{TargetFileSize: set.TargetFileSize, RowGroupLimit: set.RowGroupBytes,
		DataChange: true, Parallelism: set.Parallelism, Allocator: mem})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	if w.out, err = datafile.NewOutput(store, spec); err != nil {
		return nil, fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	w.sorter = newSortBuffers(v, w.fileSch, spec.TargetFileSize, set)
	return w, nil
}

// ChangeSchema is the schema of the batches change data files are written from: the
// table's logical columns, then _change_type.
func ChangeSchema(v *tableview.View) *arrow.Schema {
	return arrow.NewSchema(append(append([]arrow.Field(nil), v.Logical().Fields()...), tableview.ChangeTypeField), nil)
}

// NewChanges returns a writer of change data files for the table version v
// resolves: rows of ChangeSchema, split by partition into
// _change_data/<partition directories>/cdc-NNNNN-<uuid>.c000.<codec>.parquet
// (View.ChangeFileSpec), never sorted. Change data files record rows, they do not
// add them: no write rule applies to them (set.Unchanged is implied).
func NewChanges(store storage.Storage, v *tableview.View, set Settings) (*Writer, error) {
	mem := set.allocator()
	set.Unchanged = true
	spec, err := v.ChangeFileSpec(tableview.FileOptions{TargetFileSize: set.TargetFileSize, RowGroupLimit: set.RowGroupBytes,
		Parallelism: set.Parallelism, Allocator: mem})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	schema := ChangeSchema(v)
	w := &Writer{store: store, view: v, set: set, mem: mem, fileSch: spec.Schema, dir: layout.ChangeDataDir,
		dataIdx: append(append([]int(nil), v.DataIndices()...), schema.NumFields()-1),
		conf:    conform.New(schema, mem), rollers: map[string]*datafile.Roller{}}
	for _, p := range v.Partitions() {
		w.partIdx = append(w.partIdx, p.Index)
	}
	if w.out, err = datafile.NewOutput(store, spec); err != nil {
		return nil, fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	return w, nil
}

// View is the resolved table version the writer writes files for.
func (w *Writer) View() *tableview.View { return w.view }

// Output is the data-file output the writer's files go to (its adds, target size;
// DML writes a clustered file's own rewrite to it directly).
func (w *Writer) Output() *datafile.Output { return w.out }

// Identities is the identity-value assigner of an inserting writer (nil otherwise):
// its Marks are the high-water marks the commit records.
func (w *Writer) Identities() *tableview.IdentityAssigner { return w.ids }

// SetCheck makes the writer vet every conformed batch with check before it is
// written (base: the input row of the batch's first row); an error stops the write.
func (w *Writer) SetCheck(check func(rec arrow.RecordBatch, base int64) error) { w.check = check }

// Run consumes rdr and returns the add actions of every file written (with the
// Bloom index, if any, stored and referenced by their tags) and the rows written.
func (w *Writer) Run(ctx context.Context, rdr array.RecordReader) ([]*log.Add, int64, error) {
	return w.Finish(ctx, w.consume(ctx, rdr))
}

// Finish ends a run whose rows were delivered (err: how delivering them failed):
// the sort buffers are flushed, every open file closed and the Bloom index stored;
// on failure everything open is aborted.
func (w *Writer) Finish(ctx context.Context, err error) ([]*log.Add, int64, error) {
	if err == nil && w.sorter != nil {
		err = w.sorter.flushAll(ctx, w)
	}
	if w.sorter != nil {
		w.sorter.release()
	}
	for _, r := range w.rollers {
		if err == nil {
			err = r.Close(ctx)
		} else {
			r.Abort()
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		_, err = w.out.WriteBloomIndex(ctx)
	}
	if err != nil {
		return nil, 0, err
	}
	return w.out.Adds(), w.rowsTotal, nil
}

func (w *Writer) consume(ctx context.Context, rdr array.RecordReader) error {
	for rdr.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.rulesErr != nil && !w.set.Unchanged && rdr.RecordBatch().NumRows() > 0 {
			return w.rulesErr // before the input is judged against a schema whose rules are unknown
		}
		rec, err := w.conf.Conform(ctx, rdr.RecordBatch())
		if err != nil {
			return err
		}
		if rec, err = w.applyRules(ctx, rec); err != nil {
			return err
		}
		if w.check != nil {
			if err := w.check(rec, w.rowsTotal); err != nil {
				rec.Release()
				return err
			}
		}
		err = w.Route(ctx, rec)
		n := rec.NumRows()
		rec.Release()
		if err != nil {
			return err
		}
		w.rowsTotal += n
		if w.set.Progress != nil {
			w.set.Progress(w.rowsTotal)
		}
	}
	return rdr.Err()
}

// Cleanup deletes the files this writer stored (after a failed write or commit).
func (w *Writer) Cleanup() { w.out.Discard() }

// applyRules is the funnel of the write rules: rows being inserted are completed
// (identity and generated columns), then every row is checked. It takes rec (a
// conformed batch) and returns the batch to write; on error rec is released.
func (w *Writer) applyRules(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if rec.NumRows() == 0 || w.set.Unchanged {
		return rec, nil
	}
	if w.rulesErr != nil {
		rec.Release()
		return nil, w.rulesErr
	}
	if w.set.Inserts {
		done, err := tableview.CompleteInsert(ctx, w.rules, w.ids, rec, w.conf.Missing(), w.mem)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = done
	}
	if err := w.rules.Verify(rec); err != nil {
		rec.Release()
		return nil, err
	}
	return rec, nil
}

// valueAt is the value of row i of arr; a type without a value is an invalid
// argument.
func valueAt(arr arrow.Array, i int) (value.Value, error) {
	v, err := value.FromArray(arr, i)
	if err != nil {
		return value.Null(), fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
	}
	return v, nil
}

// Route splits rec (a batch of the writer's schema, already conformed and checked)
// by partition values and hands each part to its partition's file. The caller keeps
// ownership of rec.
func (w *Writer) Route(ctx context.Context, rec arrow.RecordBatch) error {
	if len(w.partIdx) == 0 {
		data := w.Project(rec)
		defer data.Release()
		return w.deliver(ctx, "", nil, data)
	}
	n := int(rec.NumRows())
	keys := make([]string, n)
	var sb strings.Builder
	for r := 0; r < n; r++ {
		sb.Reset()
		for _, pi := range w.partIdx {
			v, err := valueAt(rec.Column(pi), r)
			if err != nil {
				return fmt.Errorf("table: partition column %q: %w", rec.Schema().Field(pi).Name, err)
			}
			if v.IsNull() {
				sb.WriteString("\x01N")
			} else {
				sb.WriteString("\x01V")
				sb.WriteString(v.String())
			}
		}
		keys[r] = sb.String()
	}
	groups := map[string][]uint32{}
	var order []string
	for r, k := range keys {
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], uint32(r))
	}
	for _, k := range order {
		rows := groups[k]
		first := int(rows[0])
		values := map[string]*string{}
		var names, strs []string
		var nulls []bool
		for _, pc := range w.view.Partitions() {
			v, _ := valueAt(rec.Column(pc.Index), first)
			s, isNull, err := partition.Format(v, pc.DeltaType)
			if err != nil {
				return fmt.Errorf("table: partition column %q: %w", pc.Name, err)
			}
			d, _, err := partition.DirValue(v, pc.DeltaType)
			if err != nil {
				return fmt.Errorf("table: partition column %q: %w", pc.Name, err)
			}
			name := pc.Physical
			if isNull {
				values[name] = nil
			} else {
				str := s
				values[name] = &str
			}
			names, strs, nulls = append(names, name), append(strs, d), append(nulls, isNull)
		}
		dir, err := partition.DirName(names, strs, nulls)
		if err != nil {
			return fmt.Errorf("table: partition directory: %w", err)
		}
		var sub arrow.RecordBatch
		if len(rows) == n {
			sub = w.Project(rec)
		} else {
			data := w.Project(rec)
			var err error
			sub, err = gather.Record(ctx, data, rows, w.mem)
			data.Release()
			if err != nil {
				return fmt.Errorf("table: splitting partitions: %w", err)
			}
		}
		err = w.deliver(ctx, dir, values, sub)
		sub.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// Project returns the columns of a conformed batch that files store: the batch
// without its partition columns (the rest retained; the caller releases the result).
func (w *Writer) Project(rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, len(w.dataIdx))
	for i, di := range w.dataIdx {
		cols[i] = rec.Column(di)
	}
	return array.NewRecordBatch(w.fileSch, cols, rec.NumRows())
}

// send writes data to its partition's roller (the caller keeps ownership of data).
func (w *Writer) send(ctx context.Context, dir string, values map[string]*string, data arrow.RecordBatch) error {
	r := w.rollers[dir]
	if r == nil {
		place := dir
		if w.dir != "" {
			place = strings.TrimSuffix(w.dir+dir, "/")
		}
		r = w.out.NewRoller(datafile.FileOptions{Dir: place, PartitionValues: values})
		w.rollers[dir] = r
	}
	return r.Write(ctx, data)
}
