package table

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/storage"
)

// Reader streams the rows of a planned Scan as Arrow record batches, row group by
// row group.
//
// How it reads: the planned files are opened (footer, deletion vector) and their row
// groups and pages decided (skipping's footer and page-index evaluators) up to
// WithParallelism files ahead at once, one file ahead with a limit; one goroutine
// takes them in plan order and hands the row groups to up to WithParallelism
// decoders; each decoder streams its row group's column chunks, drops deleted rows,
// adds partition columns and rechecks the filter where no level proved "must match".
// Decoded batches wait in per-row-group queues whose total size is bounded by the
// read-ahead budget (WithReadAhead): a decoder that would exceed it waits, except the
// one decoding the row group the caller is reading while none of its batches wait.
// Memory is therefore about the budget plus, per decoder, one batch and the stream
// buffers — not the file size nor the row group size.
//
// Order: batches come in plan order (files in log order, row groups and rows in file
// order) whatever the parallelism. A limit (WithLimit) stops the background reads as
// soon as it is reached.
//
// A Reader is not safe for concurrent use. A batch returned by RecordBatch is valid
// until the next call to Next or Release; Retain it to keep it longer. Release stops
// the background reads and frees what they hold.
type Reader struct {
	x      *scanexec.Reader
	report *ScanReport
}

// newReader makes a Reader of tasks of s, returning batches of proj's schema and
// recording what it reads in rep (which it owns).
func newReader(ctx context.Context, s *Scan, cfg scanConfig, proj *scanexec.Projection, tasks []*fileTask, rep *ScanReport) *Reader {
	if rep.Requests != nil {
		// The scan's storage counts requests: count the reader's into the report.
		rep.live = new(storage.Counters)
		ctx = storage.WithRequestCounters(ctx, rep.live)
	}
	return &Reader{x: scanexec.NewReader(ctx, s.exec(), cfg.Config, proj, tasks, recorder(rep)), report: rep}
}

// Schema is the schema of every batch.
func (r *Reader) Schema() *arrow.Schema { return r.x.Schema() }

// Report returns what the scan planned and what the Reader has read so far: the
// planning levels, then "rowgroup" and "page" for the files opened, and RowsReturned.
// The caller owns the copy.
func (r *Reader) Report() *ScanReport { return r.report.clone() }

// Err returns the first error the Reader met (nil at the end of the rows).
func (r *Reader) Err() error { return r.x.Err() }

// RecordBatch returns the current batch (valid until the next call to Next or Release).
func (r *Reader) RecordBatch() arrow.RecordBatch { return r.x.RecordBatch() }

// Retain adds a reference; Release drops one.
func (r *Reader) Retain() { r.x.Retain() }

// Release drops a reference; the last one stops the background reads and frees the
// batches they hold.
func (r *Reader) Release() { r.x.Release() }

// Next advances to the next batch, reading in the background as needed.
func (r *Reader) Next() bool { return r.x.Next() }

// RecordReader returns the Reader as an array.RecordReader (for APIs that take one,
// such as IPC writers). It shares the Reader's state and references.
func (r *Reader) RecordReader() array.RecordReader { return recordReader{r} }

type recordReader struct{ *Reader }

// Record is RecordBatch under array.RecordReader's deprecated name.
func (rr recordReader) Record() arrow.RecordBatch { return rr.RecordBatch() }
