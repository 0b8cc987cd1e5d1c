package table

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/storage"
)

// Reader streams the rows of a planned Scan as Arrow record batches, row group by
// row group.
//
// How it reads: the planned files are opened (footer, deletion vector) and their row
// groups and pages decided (skipping's footer and page-index evaluators) up to
// WithParallelism files ahead at once, one file ahead with a limit (see openWindow);
// one goroutine takes them in plan order and hands the row groups to up to
// WithParallelism decoders;
// each decoder streams its row group's column chunks, drops deleted rows, adds
// partition columns and rechecks the filter where no level proved "must match".
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
	scan  *Scan
	proj  *projection
	tasks []*fileTask
	cfg   scanConfig

	ctx    context.Context
	cancel context.CancelFunc
	report *ScanReport

	started  bool
	finished bool
	refs     int64
	units    chan *readUnit
	head     *readUnit
	cur      arrow.RecordBatch
	curBytes int64
	rows     int64
	err      error
	budget   *readBudget
	wg       sync.WaitGroup

	progressMu sync.Mutex
	filesDone  int64

	// With a limit, row groups are started only while the rows they may return
	// (their row counts) are still needed: ahead counts the rows of started row
	// groups the caller has not finished reading; limitRows mirrors rows.
	limitMu   sync.Mutex
	limitCond *sync.Cond
	ahead     int64
	limitRows int64
}

func newReader(ctx context.Context, s *Scan, cfg scanConfig, proj *projection, tasks []*fileTask, rep *ScanReport) *Reader {
	if rep.Requests != nil {
		// The scan's storage counts requests: count the reader's into the report.
		rep.live = new(storage.Counters)
		ctx = storage.WithRequestCounters(ctx, rep.live)
	}
	rctx, cancel := context.WithCancel(ctx)
	if cfg.limit > 0 && cfg.limit < cfg.batchSize {
		cfg.batchSize = cfg.limit // decode no more rows than can be returned
	}
	if cfg.pooled {
		// Batches the caller releases give their buffers back for the next ones. The
		// pool keeps at most twice the read-ahead budget of free buffers: the buffers
		// of a full queue of batches plus those being decoded (measured on the
		// interop full scan: about 1.7 times the budget are free at once; with one
		// budget a third of the batches' buffers were fresh allocations).
		cfg.mem = datafile.NewBufferPool(datafile.PoolOptions{MaxIdleBytes: 2 * cfg.readAhead, Poison: cfg.poisonPool})
	}
	r := &Reader{scan: s, proj: proj, tasks: tasks, cfg: cfg, ctx: rctx, cancel: cancel, report: rep, refs: 1}
	r.limitCond = sync.NewCond(&r.limitMu)
	return r
}

// waitForLimit blocks the dispatcher, when the scan has a limit, until the rows of
// the row groups already started (rows) may no longer cover it; false when ctx ended.
func (r *Reader) waitForLimit(rows int64) bool {
	if r.cfg.limit <= 0 {
		return true
	}
	r.limitMu.Lock()
	defer r.limitMu.Unlock()
	for r.ahead > 0 && r.ahead >= r.cfg.limit-r.limitRows && r.ctx.Err() == nil {
		r.limitCond.Wait()
	}
	r.ahead += rows
	return r.ctx.Err() == nil
}

// unitConsumed returns the rows of a row group the caller has finished reading.
func (r *Reader) unitConsumed(u *readUnit) {
	if r.cfg.limit <= 0 {
		return
	}
	r.limitMu.Lock()
	r.ahead -= u.maxRows
	r.limitRows = r.rows
	r.limitCond.Broadcast()
	r.limitMu.Unlock()
}

// Schema is the schema of every batch.
func (r *Reader) Schema() *arrow.Schema { return r.proj.schema }

// Report returns what the scan planned and what the Reader has read so far: the
// planning levels, then "rowgroup" and "page" for the files opened, and RowsReturned.
// The caller owns the copy.
func (r *Reader) Report() *ScanReport { return r.report.clone() }

// Err returns the first error the Reader met (nil at the end of the rows).
func (r *Reader) Err() error { return r.err }

// RecordBatch returns the current batch (valid until the next call to Next or Release).
func (r *Reader) RecordBatch() arrow.RecordBatch { return r.cur }

// Retain adds a reference; Release drops one.
func (r *Reader) Retain() { r.refs++ }

// Release drops a reference; the last one stops the background reads and frees the
// batches they hold.
func (r *Reader) Release() {
	r.refs--
	if r.refs > 0 {
		return
	}
	r.cancel()
	r.releaseCur()
	if !r.started {
		return
	}
	r.wg.Wait() // the dispatcher and every decoder have returned
	if r.head != nil {
		r.head.q.drain()
		r.head = nil
	}
	for u := range r.units {
		u.q.drain()
	}
	if p, ok := r.cfg.mem.(*datafile.BufferPool); ok && r.cfg.pooled {
		p.Close() // the next scan reuses what this one freed
	}
}

func (r *Reader) releaseCur() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.curBytes > 0 {
		r.budget.release(r.curBytes)
		r.curBytes = 0
	}
}

// RecordReader returns the Reader as an array.RecordReader (for APIs that take one,
// such as IPC writers). It shares the Reader's state and references.
func (r *Reader) RecordReader() array.RecordReader { return recordReader{r} }

type recordReader struct{ *Reader }

// Record is RecordBatch under array.RecordReader's deprecated name.
func (rr recordReader) Record() arrow.RecordBatch { return rr.cur }

// Next advances to the next batch, reading in the background as needed.
func (r *Reader) Next() bool {
	r.releaseCur()
	if r.err != nil || r.finished {
		return false
	}
	if r.cfg.limit > 0 && r.rows >= r.cfg.limit {
		r.finish()
		return false
	}
	if !r.started {
		r.start()
	}
	for {
		if r.head == nil {
			u, ok := <-r.units
			if !ok {
				// The dispatcher is done; if it stopped because ctx ended, the
				// rows are incomplete.
				r.err = r.ctx.Err()
				r.finish()
				return false
			}
			r.head = u
			r.budget.setHead(u.seq)
		}
		it, ok := r.head.q.pop()
		if !ok {
			if err := r.head.q.error(); err != nil {
				r.err = err
				r.finish()
				return false
			}
			r.unitConsumed(r.head)
			r.head = nil
			continue
		}
		rec := it.rec
		r.curBytes = it.bytes
		if r.cfg.limit > 0 && r.rows+rec.NumRows() > r.cfg.limit {
			sl := rec.NewSlice(0, r.cfg.limit-r.rows)
			rec.Release()
			rec = sl
		}
		r.rows += rec.NumRows()
		r.report.setRows(r.rows)
		r.cur = rec
		if r.cfg.limit > 0 && r.rows >= r.cfg.limit {
			r.cancel() // the limit is reached: stop reading ahead
		}
		return true
	}
}

// finish ends the reading (no more batches will be asked for).
func (r *Reader) finish() {
	r.finished = true
	r.cancel()
}

func (r *Reader) start() {
	r.started = true
	r.budget = newReadBudget(r.ctx, r.cfg.readAhead)
	r.units = make(chan *readUnit, 64)
	r.wg.Add(1)
	go r.dispatch()
}

// readUnit is one row group being decoded, with the queue of its output batches.
type readUnit struct {
	seq     int64
	file    *openFile
	spec    rgUnit
	maxRows int64 // rows it may return at most
	q       *batchQueue
}

// openFile is a file whose row groups are being read; the last user closes it.
type openFile struct {
	task *fileTask
	f    storage.File
	r    *datafile.Reader
	mu   sync.Mutex
	refs int
}

func (f *openFile) acquire() {
	f.mu.Lock()
	f.refs++
	f.mu.Unlock()
}

// release drops a reference and reports whether it was the last one (the file is
// then closed).
func (f *openFile) release() bool {
	f.mu.Lock()
	f.refs--
	last := f.refs == 0
	f.mu.Unlock()
	if last {
		f.r.Close()
		f.f.Close()
	}
	return last
}

// openWindow is how many planned files the Reader holds at most between starting to
// open them and having handed all their row groups to decoders: files being opened
// (their footer, page index, Bloom filters and deletion vector read), files opened and
// waiting, and the file being dispatched. On an object store each open is a round trip
// or more, so opening one file after another makes a scan of many small files wait
// for every round trip in turn; a window of WithParallelism files overlaps up to that
// many opens. With a limit the window is one file: the next file is opened only once
// the current one is dispatched, as a serial reader does, so a scan that stops early
// opens at most one file beyond those it needs. Open files hold their footers in
// memory (outside the read-ahead budget, which counts decoded batches), so the window
// also bounds that.
func (r *Reader) openWindow() int {
	if r.cfg.limit > 0 || r.cfg.parallelism < 1 {
		return 1
	}
	return r.cfg.parallelism
}

// pendingOpen is a planned file being opened ahead of the dispatcher; done is closed
// when of, units and err are set.
type pendingOpen struct {
	done  chan struct{}
	of    *openFile
	units []rgUnit
	err   error
}

// discard waits for the open to end and closes the file if it was opened.
func (p *pendingOpen) discard() {
	<-p.done
	if p.of != nil {
		p.of.release()
		p.of = nil
	}
}

// openAhead opens r.tasks in order with at most window files opened or being opened
// and not yet done with: a slot is taken before an open starts and given back
// (<-slots) by the consumer when it has dispatched the file. The pending opens come out of the returned channel in plan
// order; it is closed when every task was started or ctx ended.
func (r *Reader) openAhead(ctx context.Context, window int) (<-chan *pendingOpen, chan struct{}) {
	slots := make(chan struct{}, window)
	out := make(chan *pendingOpen, window)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(out)
		for _, task := range r.tasks {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			p := &pendingOpen{done: make(chan struct{})}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer close(p.done)
				p.of, p.units, p.err = r.openTask(ctx, task)
			}()
			out <- p // never blocks: at most window opens are pending (the slots)
		}
	}()
	return out, slots
}

// dispatch takes the planned files in order as openAhead opens them and starts a
// decoder per row group, at most cfg.parallelism at a time. It closes r.units when
// done, failed or cancelled.
func (r *Reader) dispatch() {
	defer r.wg.Done()
	defer close(r.units)
	octx, stopOpens := context.WithCancel(r.ctx)
	opens, openSlots := r.openAhead(octx, r.openWindow())
	defer func() {
		// Stop opening ahead and close what was opened but will not be read.
		stopOpens()
		for p := range opens {
			p.discard()
		}
	}()
	slots := make(chan struct{}, r.cfg.parallelism)
	if r.cfg.limit > 0 {
		stop := context.AfterFunc(r.ctx, func() {
			r.limitMu.Lock()
			r.limitCond.Broadcast()
			r.limitMu.Unlock()
		})
		defer stop()
	}
	var seq int64
	failed := func(err error) {
		q := newBatchQueue()
		q.finish(err)
		select {
		case r.units <- &readUnit{seq: seq, q: q}:
		case <-r.ctx.Done():
		}
	}
	for p := range opens {
		<-p.done
		if r.ctx.Err() != nil {
			p.discard()
			return
		}
		of, units, err := p.of, p.units, p.err
		p.of = nil // the dispatcher owns the file now
		if err != nil {
			failed(err)
			return
		}
		if of == nil {
			r.fileDone()
			<-openSlots
			continue
		}
		for _, spec := range units {
			maxRows := of.r.Metadata().RowGroup(spec.rg).NumRows()
			if spec.ranges != nil {
				maxRows = 0
				for _, rr := range spec.ranges {
					maxRows += rr.End - rr.Start
				}
			}
			if !r.waitForLimit(maxRows) {
				if of.release() {
					r.fileDone()
				}
				return
			}
			select {
			case slots <- struct{}{}:
			case <-r.ctx.Done():
				if of.release() {
					r.fileDone()
				}
				return
			}
			u := &readUnit{seq: seq, file: of, spec: spec, maxRows: maxRows, q: newBatchQueue()}
			seq++
			select {
			case r.units <- u:
			case <-r.ctx.Done():
				<-slots
				if of.release() {
					r.fileDone()
				}
				return
			}
			of.acquire()
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				err := r.decode(u)
				<-slots
				u.q.finish(err)
				if u.file.release() {
					r.fileDone()
				}
			}()
		}
		if of.release() {
			r.fileDone()
		}
		<-openSlots // every row group of the file is dispatched: open one more ahead
	}
}

// openTask opens a planned file, loads its deletion vector and decides its row
// groups. It returns a nil file (and no error) when nothing of it needs reading.
func (r *Reader) openTask(ctx context.Context, task *fileTask) (*openFile, []rgUnit, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var del *dv.Deleted
	var err error
	if task.change != nil {
		del, err = task.change.deleted(ctx, r.scan.snap.store, task)
	} else {
		del, err = datafile.LoadDeletionVector(ctx, r.scan.snap.store, task.add.DeletionVector)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("table: deletion vector of %s: %w", task.path, err)
	}
	opts := datafile.ReadOptions{BatchSize: r.cfg.batchSize, BatchBytes: readAheadBatchBytes(r.cfg.readAhead),
		Allocator: r.cfg.mem, Deleted: del}
	if storage.RootOf(r.scan.snap.store) != "" {
		opts.StreamBufferBytes = localStreamBufferBytes
	}
	// The file is opened under the Reader's context, not ctx: an object store's File
	// reads with the context it was opened with, and the decoders read the file's row
	// groups after the dispatcher, which ends ctx (the opens ahead) when it has
	// dispatched the last of them.
	f, dr, err := r.scan.openFileReport(r.ctx, task, opts, r.report)
	if err != nil {
		return nil, nil, err
	}
	units := r.scan.decideFile(task, dr, r.report)
	if len(units) == 0 {
		dr.Close()
		f.Close()
		return nil, nil, nil
	}
	return &openFile{task: task, f: f, r: dr, refs: 1}, units, nil
}

// localStreamBufferBytes is the stream buffer of each column chunk of a local file
// (datafile.ReadOptions.StreamBufferBytes; on object stores, where every refill is a
// ranged request, the default 1 MiB stays). arrow-go's page reader copies a page's
// compressed bytes out of the stream buffer, except the part of a page that is
// larger than the buffer, which it reads straight into the page: with a buffer of
// 32 KiB most of a 128 KiB page skips that copy, and the buffer allocated per column
// chunk and row group is 32 KiB, not 1 MiB (on the interop full scan of local files,
// about 5% less CPU; on a one-column aggregate, less garbage to collect).
const localStreamBufferBytes = 32 << 10

func (r *Reader) fileDone() {
	if r.cfg.progress == nil {
		return
	}
	r.progressMu.Lock()
	r.filesDone++
	r.cfg.progress(Progress{Phase: "scan", Done: r.filesDone, Total: int64(len(r.tasks)), Unit: "files"})
	r.progressMu.Unlock()
}

// decode reads one row group into its queue.
func (r *Reader) decode(u *readUnit) error {
	task := u.file.task
	emit := func(rec arrow.RecordBatch, _ int64) error {
		if rec.NumRows() == 0 {
			return nil
		}
		o, err := r.assemble(task, rec, u.spec.recheck)
		if err != nil {
			return err
		}
		if o.NumRows() == 0 {
			o.Release()
			return nil
		}
		n := datafile.RecordBytes(o)
		if err := r.budget.acquire(u.seq, n, u.q); err != nil {
			o.Release()
			return err
		}
		u.q.push(queued{rec: o, bytes: n})
		return nil
	}
	var err error
	if u.spec.ranges != nil {
		err = u.file.r.ReadRanges(r.ctx, r.proj.want, u.spec.rg, u.spec.ranges, emit)
	} else {
		err = u.file.r.Read(r.ctx, r.proj.want, []int{u.spec.rg}, emit)
	}
	if err != nil {
		if cerr := r.ctx.Err(); cerr != nil {
			return cerr
		}
		if errors.Is(err, ErrCorruptData) {
			return fmt.Errorf("table: %w", err) // names the file, row group and column
		}
		if errors.Is(err, storage.ErrNotExist) {
			// Opened with its logged size (a cached footer): an object store makes no
			// request until this read.
			return fmt.Errorf("%w: %s (referenced by version %d): %w", ErrMissingDataFile, task.path, r.scan.snap.Version(), err)
		}
		return fmt.Errorf("table: reading %s: %w", task.path, err)
	}
	return nil
}

// assemble builds an output batch from a batch of file columns plus partition
// constants, rechecking the filter when asked.
func (r *Reader) assemble(task *fileTask, data arrow.RecordBatch, recheck bool) (arrow.RecordBatch, error) {
	p := r.proj
	rec, err := p.withPartitions(task, data, r.cfg.mem)
	if err != nil {
		return nil, err
	}
	if recheck && p.recheck != nil {
		filtered, err := r.applyFilter(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = filtered
	}
	out := make([]arrow.Array, len(p.outIdx))
	for i, j := range p.outIdx {
		out[i] = rec.Column(j)
	}
	res := array.NewRecordBatch(p.schema, out, rec.NumRows())
	rec.Release()
	return res, nil
}

// withPartitions builds a batch of the read schema from a batch of the file's data
// columns plus the task's partition values as constant columns. The caller releases it.
func (p *projection) withPartitions(task *fileTask, data arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := int(data.NumRows())
	cols := make([]arrow.Array, len(p.outCols))
	di := 0
	for i, oc := range p.outCols {
		v, given := task.partVals[oc.physical]
		if oc.partition || (oc.override && given) {
			c, err := datafile.ConstantColumn(v, oc.field.Type, n, mem)
			if err != nil {
				releaseArrays(cols[:i])
				return nil, fmt.Errorf("table: partition column %q: %w", oc.field.Name, err)
			}
			cols[i] = c
			if oc.override {
				di++ // the file's column (read: nulls in a data file) is replaced
			}
			continue
		}
		c := data.Column(di)
		c.Retain()
		cols[i] = c
		di++
	}
	rec := array.NewRecordBatch(p.readSch, cols, int64(n))
	releaseArrays(cols)
	return rec, nil
}

func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// applyFilter keeps the rows of rec for which the filter is TRUE (the exact recheck).
func (r *Reader) applyFilter(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	sel, err := r.proj.recheck.Evaluate(rec)
	if err != nil {
		return nil, err
	}
	n := int(rec.NumRows())
	switch sel.Count() {
	case n:
		rec.Retain()
		return rec, nil
	case 0:
		return rec.NewSlice(0, 0), nil
	}
	bb := array.NewBooleanBuilder(r.cfg.mem)
	defer bb.Release()
	bb.Reserve(n)
	for i := 0; i < n; i++ {
		bb.UnsafeAppend(sel.Contains(i))
	}
	mask := bb.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(context.Background(), r.cfg.mem), rec, mask, compute.DefaultFilterOptions())
}

// queued is a decoded batch waiting for the caller, with the budget it holds.
type queued struct {
	rec   arrow.RecordBatch
	bytes int64
}

// batchQueue holds one row group's decoded batches until the caller takes them. push
// never blocks (the read-ahead budget bounds what is queued); pop blocks until a batch
// or the end.
type batchQueue struct {
	mu     sync.Mutex
	items  []queued
	done   bool
	err    error
	notify chan struct{}
}

func newBatchQueue() *batchQueue { return &batchQueue{notify: make(chan struct{}, 1)} }

func (q *batchQueue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *batchQueue) push(it queued) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.signal()
}

func (q *batchQueue) finish(err error) {
	q.mu.Lock()
	q.done, q.err = true, err
	q.mu.Unlock()
	q.signal()
}

// pop returns the next batch; ok is false once the producer finished and the queue
// is empty (see error).
func (q *batchQueue) pop() (queued, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = queued{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		if q.done {
			q.mu.Unlock()
			return queued{}, false
		}
		q.mu.Unlock()
		<-q.notify
	}
}

// len is the number of batches waiting in q.
func (q *batchQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *batchQueue) error() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// drain releases every queued batch (after the producer returned).
func (q *batchQueue) drain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range q.items {
		it.rec.Release()
	}
	q.items = nil
}

// readBudget bounds the bytes of decoded batches waiting for the caller. The
// decoder of the row group the caller is reading (the head) does not wait while
// its own queue is empty, so the reader always makes progress whatever the other
// row groups hold; with batches of its own queued it waits like the others (the
// caller, draining them, releases budget), so a slow caller holds at most the
// budget plus one batch of the head's, not the head's whole row group. A batch
// larger than the whole budget is admitted when nothing else is held.
type readBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
	head  int64
	ctx   context.Context
}

func newReadBudget(ctx context.Context, limit int64) *readBudget {
	b := &readBudget{limit: limit, ctx: ctx}
	b.cond = sync.NewCond(&b.mu)
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	return b
}

// acquire waits until n bytes fit, or seq is the head and its queue q is empty; it
// fails when ctx ends. The caller's Next releases the batch it had (release wakes
// the waiters) before it takes the head's next one, so a head waiting for its queue
// to empty is woken by the Next after the one that empties it.
func (b *readBudget) acquire(seq, n int64, q *batchQueue) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit && (seq != b.head || q.len() > 0) {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	b.used += n
	return nil
}

func (b *readBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *readBudget) setHead(seq int64) {
	b.mu.Lock()
	b.head = seq
	b.cond.Broadcast()
	b.mu.Unlock()
}
