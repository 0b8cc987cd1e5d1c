package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// rewriteFor rewrites the data files adds, which this write stored for the table
// state from (a table about to be created), for the layout of the table state to
// (the table another writer created meanwhile, with the same logical schema and
// partition columns but its own physical names and field ids: column mapping), so
// that they can be committed to it (invariant T1). It returns the writer holding
// the new files (the caller commits them, or discards them with cleanup) and their
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
func (t *Table) rewriteFor(ctx context.Context, to, from *Snapshot, adds []*log.Add, opts WriteOptions) (*fileSetWriter, []*log.Add, error) {
	opts.Progress = nil // the rows were reported once, as they were written
	rw, err := t.newFileSetWriter(to, opts)
	if err != nil {
		return nil, nil, err
	}
	var ferr error
	for _, a := range adds {
		if ferr = rw.copyFile(ctx, from, a); ferr != nil {
			break
		}
	}
	added, _, err := rw.finish(ctx, ferr)
	if err != nil {
		rw.cleanup()
		return nil, nil, err
	}
	return rw, added, nil
}

// copyFile reads every row of a (a file written for the table state from) and
// routes it through w as rows of the table's logical schema, its partition values
// (from's physical names) back in their columns.
func (w *fileSetWriter) copyFile(ctx context.Context, from *Snapshot, a *log.Add) error {
	p, err := a.DecodedPath()
	if err != nil {
		return err
	}
	part, err := from.view.PartitionValues(a)
	if err != nil {
		return err
	}
	f, err := w.snap.store.Open(ctx, p)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return fmt.Errorf("table: rewriting %s for the table's layout: the file this write stored is gone: %w", p, err)
		}
		return fmt.Errorf("table: rewriting %s for the table's layout: %w", p, err)
	}
	defer f.Close()
	r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{Allocator: w.mem, Name: p})
	if err != nil {
		return fmt.Errorf("table: rewriting %s for the table's layout: %w", p, err)
	}
	defer r.Close()
	logical := w.snap.view.Logical()
	data := from.view.DataIndices()
	return r.Read(ctx, from.view.ReadDataSchema(), nil, func(rec arrow.RecordBatch, _ int64) error {
		n := int(rec.NumRows())
		cols := make([]arrow.Array, logical.NumFields())
		defer releaseArrays(cols)
		for k, i := range data {
			c := rec.Column(k)
			c.Retain()
			cols[i] = c
		}
		for _, pc := range from.view.Partitions() {
			c, err := datafile.ConstantColumn(part[pc.Physical], pc.Type, n, w.mem)
			if err != nil {
				return fmt.Errorf("table: partition column %q: %w", pc.Name, err)
			}
			cols[pc.Index] = c
		}
		full := array.NewRecordBatch(logical, cols, int64(n))
		defer full.Release()
		return w.route(ctx, full)
	})
}
