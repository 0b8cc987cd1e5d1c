package writeset

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Copy reads every row of a (a data file written for the table version from
// resolves, in the writer's store) and routes it through w as rows of the table's
// logical schema, its partition values (from's physical names) back in their
// columns: a file written for one layout is rewritten for the writer's (invariant
// T1, the loser of a race to create a table). The rows are not checked against the
// write rules again, nor counted in the rows Finish returns (they were counted when
// first written); the caller ends the run with Finish.
func (w *Writer) Copy(ctx context.Context, from *tableview.View, a *log.Add) error {
	p, err := a.DecodedPath()
	if err != nil {
		return err
	}
	part, err := from.PartitionValues(a)
	if err != nil {
		return err
	}
	f, err := w.store.Open(ctx, p)
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
	logical := w.view.Logical()
	data := from.DataIndices()
	return r.Read(ctx, from.ReadDataSchema(), nil, func(rec arrow.RecordBatch, _ int64) error {
		n := int(rec.NumRows())
		cols := make([]arrow.Array, logical.NumFields())
		defer func() {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}()
		for k, i := range data {
			c := rec.Column(k)
			c.Retain()
			cols[i] = c
		}
		for _, pc := range from.Partitions() {
			c, err := datafile.ConstantColumn(part[pc.Physical], pc.Type, n, w.mem)
			if err != nil {
				return fmt.Errorf("table: partition column %q: %w", pc.Name, err)
			}
			cols[pc.Index] = c
		}
		full := array.NewRecordBatch(logical, cols, int64(n))
		defer full.Release()
		return w.Route(ctx, full)
	})
}
