package datafile

import (
	"context"
	"io"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Stream reads every column and row group of a Parquet file that is not one of a
// table's data files — a file a user hands in, such as the CLI's append input or a
// MERGE source — as an array.RecordReader, in file order, with the file's own Arrow
// schema (no conforming to a table schema). Flat columns (flat.go) are decoded as
// Read decodes them, by arrow-go's column chunk readers straight into buffers of the
// Stream's own; every other column (INT96 included: through arrow-go, nanoseconds)
// through pqarrow's record reader. Each row group is read in batches of
// ReadOptions.BatchSize rows, the last one shorter. It reads with the defences of
// Open (invariant D10): the footer and the ARROW:schema entry are validated before
// anything is decoded, a page larger than the file's largest column chunk is
// refused, and a panic inside arrow-go's decoder becomes a *CorruptError from Err
// naming the file, the row group and the column or row. Column chunks are streamed
// through a buffer of ReadOptions.StreamBufferBytes and large plain pages are
// decoded incrementally, so memory does not grow with the input's row-group size.
//
// A Stream is used from one goroutine. The last Release closes the Parquet reader
// and the closer given to OpenStream, if any.
type Stream struct {
	refs  atomic.Int64
	ctx   context.Context
	r     *Reader
	pr    *file.Reader
	fr    *pqarrow.FileReader
	plan  topPlan
	rg    int // row group being read; -1 before the first
	b     *rowGroupBatches
	hints []float64 // string bytes per row of the flat columns (openRowGroup)
	rec   arrow.RecordBatch
	err   error
	// closer is closed by the last Release.
	closer io.Closer
}

// OpenStream opens the Parquet file held by ra (size bytes long) as a Stream. Damage
// found in the footer is a *CorruptError (errors.Is ErrCorruptData) named by
// opts.Name; the Stream's last Release closes closer (which may be nil; on an error
// the caller still owns it).
func OpenStream(ctx context.Context, ra io.ReaderAt, size int64, opts ReadOptions, closer io.Closer) (*Stream, error) {
	r, err := Open(ra, size, opts)
	if err != nil {
		return nil, err
	}
	// Page buffers with room past the page for zstd's fast copies (slackAllocator).
	props := parquet.NewReaderProperties(slackAllocator{r.mem})
	props.BufferedStreamEnabled = true
	props.BufferSize = r.buffer
	props.PageStreamingEnabled = true
	props.MaxCompressedPageSize = min(parquet.DefaultMaxCompressedPageSize, r.maxPage+1)
	pr, fr, _, err := openParquet(io.NewSectionReader(r.src, 0, r.src.Size()), props, r.pr.MetaData(),
		pqarrow.ArrowReadProperties{BatchSize: r.batch}, r.mem)
	if err != nil {
		_ = r.Close()
		return nil, r.named(err)
	}
	s := &Stream{ctx: ctx, r: r, pr: pr, fr: fr, plan: r.streamPlan(), rg: -1, closer: closer}
	s.refs.Store(1)
	return s, nil
}

// streamPlan reads every top-level field of the file in its own type: the flat ones
// decoded by this package (flat.go), the others (INT96 too) through pqarrow.
func (r *Reader) streamPlan() topPlan {
	var p topPlan
	for idx := range r.schema.Fields() {
		p.fileIdx = append(p.fileIdx, idx)
		p.regular = append(p.regular, idx)
		p.leaves = appendLeaves(p.leaves, r.fr.Manifest.Fields[idx])
	}
	slices.Sort(p.leaves)
	return r.withFlat(p)
}

// Schema is the file's Arrow schema (from its ARROW:schema entry when it has one).
func (s *Stream) Schema() *arrow.Schema { return s.r.schema }

// Next advances to the next batch; false at the end of the file or on an error (Err).
func (s *Stream) Next() bool {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	for s.err == nil {
		if s.b == nil {
			if s.rg+1 >= len(s.r.rgStart) {
				return false
			}
			if err := s.ctx.Err(); err != nil {
				s.err = err
				return false
			}
			s.rg++
			b, err := s.r.openRowGroup(s.ctx, s.pr, s.fr, s.plan, s.rg, s.r.batch, s.hints)
			if err != nil {
				s.err = s.r.named(err)
				return false
			}
			s.b = b
		}
		n, ok, err := s.b.next(s.ctx)
		if err != nil {
			s.err = s.r.named(err)
			return false
		}
		if ok {
			cols := make([]arrow.Array, len(s.b.cols))
			copy(cols, s.b.cols)
			s.rec = array.NewRecordBatch(s.r.schema, cols, n)
			s.b.drop()
			return true
		}
		s.closeRowGroup()
	}
	return false
}

// closeRowGroup closes the row group being read, keeping what its flat readers
// learned for the next.
func (s *Stream) closeRowGroup() {
	if s.b == nil {
		return
	}
	s.hints = s.b.hints(s.hints)
	s.b.close()
	s.b = nil
}

// RecordBatch is the current batch, valid until the next call to Next.
func (s *Stream) RecordBatch() arrow.RecordBatch { return s.rec }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch (kept for array.RecordReader).
func (s *Stream) Record() arrow.RecordBatch { return s.rec }

// Err is the error that ended the stream, nil at a clean end.
func (s *Stream) Err() error { return s.err }

// Retain adds a reference.
func (s *Stream) Retain() { s.refs.Add(1) }

// Release drops a reference; the last closes the Parquet readers.
func (s *Stream) Release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	s.closeRowGroup()
	_ = s.pr.Close()
	_ = s.r.Close()
	if s.closer != nil {
		_ = s.closer.Close()
	}
}

var _ array.RecordReader = (*Stream)(nil)
