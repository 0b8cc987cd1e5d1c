package writeset

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/optimize"
)

// Optimized writes (delta.autoOptimize.optimizeWrite). A write already keeps one
// open file per partition across every batch of the call (one command's inputs go
// through one call), so it produces few, full files per partition; on a clustered
// table an optimized write also sorts each file's rows by the clustering key — the
// rows of several files are held, sorted on a Hilbert curve of the clustering
// columns' ranks (package optimize's order), and written — so new files already
// skip well on the clustering columns before OPTIMIZE clusters them. Those files
// are not marked clustered (clusteringProvider stays unset): OPTIMIZE still
// clusters them together with the rest of the new data.

// maxSortBuffer bounds the Arrow bytes an optimized write holds per partition to sort
// (unless one file alone needs more).
const maxSortBuffer = 256 << 20

// sortBuffers holds an optimized write's rows per partition until they fill several
// files (within maxSortBuffer), then hands them to the file writer sorted by the
// clustering key and ends the file they finish in, so that every file holds rows of
// one sorted run: its rows are in key order, and the files of one run have disjoint
// key ranges. A clustered table is not partitioned, so in practice it holds one
// partition's rows. DML sorts its new rows the same way on any table with a
// clustering (Settings.SortBy).
type sortBuffers struct {
	cols  [][]int // clustering columns, as index paths into the file schema
	curve optimize.Curve
	limit int64 // Arrow bytes held per partition before they are sorted and written
	bufs  map[string]*sortBuffer
}

type sortBuffer struct {
	values map[string]*string
	recs   []arrow.RecordBatch
	bytes  int64
}

// newSortBuffers returns the buffers of a write that sorts its rows: by
// set.SortBy on set.SortCurve when set (DML on a clustered table), else, for an
// optimized write on a clustered table with clustering columns, by those columns
// on a Hilbert curve; nil when the write does not sort.
func newSortBuffers(v *tableview.View, fileSch *arrow.Schema, target int64, set Settings) *sortBuffers {
	paths, curve := set.SortBy, set.SortCurve
	if len(paths) == 0 {
		if !v.Properties().OptimizeWrite {
			return nil
		}
		c, err := v.Clustering()
		if err != nil || c == nil || len(c.Columns) == 0 {
			return nil
		}
		paths, curve = c.Columns, optimize.CurveHilbert
	}
	if curve == optimize.CurveNone || curve == optimize.CurveWorkload || len(paths) > 8 {
		return nil
	}
	// Several files' worth at a time (a flush ends in one short file), within a
	// memory bound.
	perFile := 2 * target // Arrow bytes of about one file (Parquet compresses about 2:1)
	s := &sortBuffers{bufs: map[string]*sortBuffer{}, curve: curve, limit: max(perFile, min(8*perFile, maxSortBuffer))}
	for _, col := range paths {
		path := fieldPath(fileSch.Fields(), col)
		if path == nil {
			return nil
		}
		s.cols = append(s.cols, path)
	}
	return s
}

// fieldPath returns the index path of the column named by parts (matched
// case-insensitively, through structs only) among fields, or nil when there is none.
func fieldPath(fields []arrow.Field, parts []string) []int {
	var path []int
	for d, part := range parts {
		idx := -1
		for i, f := range fields {
			if strings.EqualFold(f.Name, part) {
				idx = i
			}
		}
		if idx < 0 {
			return nil
		}
		path = append(path, idx)
		if d < len(parts)-1 {
			st, ok := fields[idx].Type.(*arrow.StructType)
			if !ok {
				return nil
			}
			fields = st.Fields()
		}
	}
	return path
}

// add holds data (the caller keeps its reference) and sorts and writes the
// partition's rows once they fill several files.
func (s *sortBuffers) add(ctx context.Context, w *Writer, dir string, values map[string]*string, data arrow.RecordBatch) error {
	b := s.bufs[dir]
	if b == nil {
		b = &sortBuffer{values: values}
		s.bufs[dir] = b
	}
	data.Retain()
	b.recs = append(b.recs, data)
	b.bytes += datafile.RecordBytes(data)
	if b.bytes < s.limit {
		return nil
	}
	return s.flush(ctx, w, dir)
}

// flush sorts and writes what the partition holds.
func (s *sortBuffers) flush(ctx context.Context, w *Writer, dir string) error {
	b := s.bufs[dir]
	if b == nil || len(b.recs) == 0 {
		return nil
	}
	delete(s.bufs, dir)
	sorted, err := optimize.SortByClusteringPaths(ctx, b.recs, s.cols, s.curve, w.mem)
	for _, r := range b.recs {
		r.Release()
	}
	if err != nil {
		return err
	}
	err = w.send(ctx, dir, b.values, sorted)
	sorted.Release()
	if err != nil {
		return err
	}
	return w.endFile(ctx, dir)
}

// flushAll writes every partition's remaining rows.
func (s *sortBuffers) flushAll(ctx context.Context, w *Writer) error {
	for dir := range s.bufs {
		if err := s.flush(ctx, w, dir); err != nil {
			return err
		}
	}
	return nil
}

// release drops what is still held (after a failure).
func (s *sortBuffers) release() {
	for dir, b := range s.bufs {
		for _, r := range b.recs {
			r.Release()
		}
		delete(s.bufs, dir)
	}
}

// deliver passes a partition's rows to its file, through the sort buffers of an
// optimized write on a clustered table. The caller keeps ownership of data.
func (w *Writer) deliver(ctx context.Context, dir string, values map[string]*string, data arrow.RecordBatch) error {
	if w.sorter != nil {
		return w.sorter.add(ctx, w, dir, values, data)
	}
	return w.send(ctx, dir, values, data)
}

// endFile closes the partition's open file, if any: the next rows start a new one.
func (w *Writer) endFile(ctx context.Context, dir string) error {
	r := w.rollers[dir]
	if r == nil {
		return nil
	}
	delete(w.rollers, dir)
	return r.Close(ctx)
}
