package dml

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// Sink receives the rows a DML command writes (updated, inserted and copied rows,
// in the table's logical schema) and turns them into data files. Write may be called
// from several goroutines at once.
type Sink interface {
	// Start prepares the sink; ctx governs the whole command.
	Start(ctx context.Context) error
	// Write takes rec (the caller keeps its reference).
	Write(ctx context.Context, rec arrow.RecordBatch) error
	// Finish closes the files and returns their add actions.
	Finish(ctx context.Context) ([]*log.Add, error)
	// Discard deletes everything written (best effort).
	Discard()
	// Rows counts the rows written.
	Rows() int64
	// FilesEstimate is the number of files a dry run would write (0 when it wrote them).
	FilesEstimate() int
}

// errSinkStopped reports a write after the file writer stopped (it failed; Finish
// returns why).
var errSinkStopped = errors.New("table: data file writer stopped")

// FileSink streams rows into the table's file-set writer (writeset.Writer: split by
// partition, files of the target size, statistics and Bloom filters), which runs on a
// goroutine of its own and reads from a pipe.
type FileSink struct {
	store storage.Storage
	view  *tableview.View
	set   writeset.Settings
	// changes makes it write change data files (writeset.NewChanges) from batches
	// of writeset.ChangeSchema instead of data files.
	changes bool

	w    *writeset.Writer
	pipe *batchPipe
	done chan struct{}
	adds []*log.Add
	n    int64
	err  error
}

// NewFileSink returns the sink that writes rows of v's logical schema as data files
// of v's table in store, with set.
func NewFileSink(store storage.Storage, v *tableview.View, set writeset.Settings) *FileSink {
	return &FileSink{store: store, view: v, set: set}
}

// NewChangeFileSink returns the sink that writes rows of writeset.ChangeSchema(v) as
// change data files of v's table in store, with set.
func NewChangeFileSink(store storage.Storage, v *tableview.View, set writeset.Settings) *FileSink {
	return &FileSink{store: store, view: v, set: set, changes: true}
}

// Writer is the file-set writer the sink feeds (nil before Start). DML writes a
// clustered file's own rewrite to its Output directly.
func (s *FileSink) Writer() *writeset.Writer { return s.w }

// Start starts the writer on its goroutine.
func (s *FileSink) Start(ctx context.Context) error {
	newWriter, schema := writeset.New, s.view.Logical()
	if s.changes {
		newWriter, schema = writeset.NewChanges, writeset.ChangeSchema(s.view)
	}
	w, err := newWriter(s.store, s.view, s.set)
	if err != nil {
		return err
	}
	s.w = w
	s.pipe = newBatchPipe(schema)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.adds, s.n, s.err = w.Run(ctx, s.pipe)
		s.pipe.doneReading()
	}()
	return nil
}

// Write hands rec to the writer (the caller keeps its reference).
func (s *FileSink) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if err := s.pipe.push(ctx, rec); err != nil {
		if errors.Is(err, errSinkStopped) {
			<-s.done
			if s.err != nil {
				return s.err
			}
		}
		return err
	}
	return nil
}

// Finish ends the input and returns the add actions of the files written.
func (s *FileSink) Finish(ctx context.Context) ([]*log.Add, error) {
	s.pipe.close()
	select {
	case <-s.done:
	case <-ctx.Done():
		<-s.done
	}
	<-s.pipe.drained
	if s.err != nil {
		return nil, s.err
	}
	return s.adds, ctx.Err()
}

// Discard stops the writer and deletes its files.
func (s *FileSink) Discard() {
	if s.pipe == nil {
		return
	}
	s.pipe.close()
	s.pipe.stop()
	<-s.done
	<-s.pipe.drained
	s.w.Cleanup()
}

// Rows counts the rows written.
func (s *FileSink) Rows() int64 { return s.n }

// FilesEstimate is 0: the files were written.
func (s *FileSink) FilesEstimate() int { return 0 }

// CountSink counts rows instead of writing them (dry runs). In a partitioned table it
// also collects the partitions rows would be written to: each needs a file of its own.
type CountSink struct {
	view  *tableview.View
	mu    sync.Mutex
	n     int64
	parts map[string]struct{} // the distinct partitions written (partitionKey)
	own   int                 // clustered files rewritten to files of their own
}

// NewCountSink returns the dry-run sink of rows of v's table.
func NewCountSink(v *tableview.View) *CountSink {
	return &CountSink{view: v, parts: map[string]struct{}{}}
}

// partitionKey renders one partition's values (in the order of the table's partition
// columns) as a map key.
func partitionKey(vals []value.Value) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.String()
	}
	return strings.Join(parts, ",")
}

// Start does nothing: a dry run writes nothing.
func (s *CountSink) Start(context.Context) error { return nil }

// Write counts rec's rows and notes their partitions.
func (s *CountSink) Write(_ context.Context, rec arrow.RecordBatch) error {
	var keys []string
	if cols := s.view.Metadata().PartitionColumns; len(cols) > 0 {
		idx := make([]int, len(cols))
		for k, p := range cols {
			if idx[k] = value.MatchField(rec.Schema().Fields(), p); idx[k] < 0 {
				return fmt.Errorf("table: internal error: rows to write lack partition column %q", p)
			}
		}
		vals := make([]value.Value, len(cols))
		for i := 0; i < int(rec.NumRows()); i++ {
			for k, j := range idx {
				v, err := value.FromArray(rec.Column(j), i)
				if err != nil {
					return fmt.Errorf("%w: %w", tableview.ErrInvalidArgument, err)
				}
				vals[k] = v
			}
			keys = append(keys, partitionKey(vals))
		}
	}
	s.mu.Lock()
	s.n += rec.NumRows()
	for _, k := range keys {
		s.parts[k] = struct{}{}
	}
	s.mu.Unlock()
	return nil
}

// Copies records that rows of file a would be copied (a copy-on-write rewrite, which a
// dry run does not read): to a file of their own when own (a clustered file, see
// dmlLayout), else to a's partition.
func (s *CountSink) Copies(a *log.Add, rows int64, own bool) error {
	if rows <= 0 {
		return nil
	}
	if own {
		s.mu.Lock()
		s.own++
		s.mu.Unlock()
		return nil
	}
	var key string
	if parts := s.view.Partitions(); len(parts) > 0 {
		typed, err := s.view.PartitionValues(a)
		if err != nil {
			return err
		}
		vals := make([]value.Value, len(parts))
		for k, p := range parts {
			vals[k] = typed[p.Physical]
		}
		key = partitionKey(vals)
	}
	s.mu.Lock()
	s.n += rows
	s.parts[key] = struct{}{}
	s.mu.Unlock()
	return nil
}

// Finish returns no files.
func (s *CountSink) Finish(context.Context) ([]*log.Add, error) { return nil, nil }

// Discard does nothing.
func (s *CountSink) Discard() {}

// Rows counts the rows that would be written.
func (s *CountSink) Rows() int64 { return s.n }

// FilesEstimate: a dry run reports one file per partition the rows would be written
// to (one file in an unpartitioned table), plus one per clustered file rewritten on
// its own: without writing, the split by target file size is not known, so this is
// a lower bound.
func (s *CountSink) FilesEstimate() int {
	switch {
	case s.n == 0:
		return s.own
	case len(s.view.Metadata().PartitionColumns) == 0:
		return 1 + s.own
	}
	return len(s.parts) + s.own
}

// batchPipe is an array.RecordReader fed by push from other goroutines: the DML
// command produces rows while the file writer consumes them.
type batchPipe struct {
	schema    *arrow.Schema
	ch        chan arrow.RecordBatch
	stopped   chan struct{}
	drained   chan struct{} // closed once stopped and every queued batch is released
	cur       arrow.RecordBatch
	closeOnce sync.Once
	stopOnce  sync.Once
	mu        sync.Mutex // orders push against close
	closed    bool
}

func newBatchPipe(schema *arrow.Schema) *batchPipe {
	return &batchPipe{schema: schema, ch: make(chan arrow.RecordBatch, 2), stopped: make(chan struct{}), drained: make(chan struct{})}
}

// push hands rec (retained for the consumer) to the reader side. The caller keeps
// its reference and may go on reading rec while the consumer writes it: rec is
// settled first (R1).
func (p *batchPipe) push(ctx context.Context, rec arrow.RecordBatch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("table: internal error: write after the data files were closed")
	}
	datafile.Settle(rec)
	rec.Retain()
	select {
	case p.ch <- rec:
		return nil
	case <-p.stopped:
		rec.Release()
		return errSinkStopped
	case <-ctx.Done():
		rec.Release()
		return ctx.Err()
	}
}

// close ends the input: Next returns false once the queued batches are read.
func (p *batchPipe) close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.ch)
		p.mu.Unlock()
	})
}

// stop says the consumer is gone: pending and later pushes fail, queued batches are
// released (drained is closed once the input is closed and they all are).
func (p *batchPipe) stop() {
	p.stopOnce.Do(func() {
		close(p.stopped)
		go func() {
			defer close(p.drained)
			for rec := range p.ch {
				rec.Release()
			}
		}()
	})
}

// doneReading is the consumer's last call: it releases the batch it was reading (a
// consumer that failed stops in the middle of the input) and stops the pipe.
func (p *batchPipe) doneReading() {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	p.stop()
}

func (p *batchPipe) Retain()  {}
func (p *batchPipe) Release() {}

func (p *batchPipe) Schema() *arrow.Schema { return p.schema }

func (p *batchPipe) Next() bool {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	rec, ok := <-p.ch
	if !ok {
		return false
	}
	p.cur = rec
	return true
}

func (p *batchPipe) RecordBatch() arrow.RecordBatch { return p.cur }

// Record is RecordBatch (array.RecordReader's deprecated name).
func (p *batchPipe) Record() arrow.RecordBatch { return p.cur }

func (p *batchPipe) Err() error { return nil }

// FilterRows returns the rows of rec where keep is true. The caller releases the result.
func FilterRows(ctx context.Context, rec arrow.RecordBatch, keep []bool, mem memory.Allocator) (arrow.RecordBatch, error) {
	all := true
	for _, k := range keep {
		all = all && k
	}
	if all {
		rec.Retain()
		return rec, nil
	}
	bb := array.NewBooleanBuilder(mem)
	defer bb.Release()
	bb.AppendValues(keep, nil)
	mask := bb.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
}
