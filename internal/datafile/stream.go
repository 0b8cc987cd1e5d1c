package datafile

import (
	"context"
	"io"
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
// schema (no conforming to a table schema). It reads with the defences of Open
// (invariant D10): the footer and the ARROW:schema entry are validated before anything
// is decoded, a page larger than the file's largest column chunk is refused, and a
// panic inside arrow-go's decoder becomes a *CorruptError from Err naming the file,
// row group and row. Column chunks are streamed through a buffer of
// ReadOptions.StreamBufferBytes and large plain pages are decoded incrementally, so
// memory does not grow with the input's row-group size.
//
// A Stream is used from one goroutine. The last Release closes the Parquet reader
// and the closer given to OpenStream, if any.
type Stream struct {
	refs   atomic.Int64
	ctx    context.Context
	r      *Reader
	pr     *file.Reader
	fr     *pqarrow.FileReader
	leaves []int
	rg     int // row group being read; -1 before the first
	pos    int64
	rr     pqarrow.RecordReader
	rec    arrow.RecordBatch
	err    error
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
	props := parquet.NewReaderProperties(r.mem)
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
	leaves := make([]int, pr.MetaData().Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	s := &Stream{ctx: ctx, r: r, pr: pr, fr: fr, leaves: leaves, rg: -1, closer: closer}
	s.refs.Store(1)
	return s, nil
}

// Schema is the file's Arrow schema (from its ARROW:schema entry when it has one).
func (s *Stream) Schema() *arrow.Schema { return s.r.schema }

// Next advances to the next batch; false at the end of the file or on an error (Err).
func (s *Stream) Next() bool {
	s.rec = nil
	for s.err == nil {
		if s.rr == nil {
			if s.rg+1 >= len(s.r.rgStart) {
				return false
			}
			if err := s.ctx.Err(); err != nil {
				s.err = err
				return false
			}
			s.rg++
			s.pos = s.r.rgStart[s.rg]
			rr, err := recordReader(s.ctx, s.fr, s.leaves, s.rg)
			if err != nil {
				s.err = s.r.named(err)
				return false
			}
			s.rr = rr
		}
		ok, err := nextRecord(s.rr, s.rg, s.pos)
		if err != nil {
			s.err = s.r.named(err)
			return false
		}
		if ok {
			s.rec = s.rr.RecordBatch()
			s.pos += s.rec.NumRows()
			return true
		}
		releaseRecords(s.rr)
		s.rr = nil
	}
	return false
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
	if s.rr != nil {
		releaseRecords(s.rr)
		s.rr = nil
	}
	s.rec = nil
	_ = s.pr.Close()
	_ = s.r.Close()
	if s.closer != nil {
		_ = s.closer.Close()
	}
}

var _ array.RecordReader = (*Stream)(nil)
