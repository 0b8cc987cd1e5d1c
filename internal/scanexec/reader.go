package scanexec

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

// DefaultReadAheadBytes is the default read-ahead budget of a Reader: the most
// decoded Arrow data (by datafile.RecordBytes) that background reads hold beyond
// the batch the caller has. What a Reader holds is live Go heap, and with the
// garbage collector's default pacing (GOGC=100) the heap grows to about twice what
// is live before a collection, so each byte of budget costs about two of resident
// memory: 16 MiB keeps a full scan near 1.25 times DuckDB's peak RSS on the same
// files (BENCHMARKS.md, "Peak memory of a full scan"), where 64 MiB took 2.1 times.
// A caller whose consumer is fast and whose row groups decode to more than the
// budget gives up some parallel decoding at this default (the decoders beyond the
// one the caller reads wait); a larger Config.ReadAhead raises it.
const DefaultReadAheadBytes = 16 << 20

// Batch sizes of a Reader follow its read-ahead budget (BatchBytes): an eighth of
// the budget, between minReadBatchBytes and datafile.DefaultBatchBytes.
const (
	readAheadBatchShare = 8
	minReadBatchBytes   = 1 << 20
)

// BatchBytes is the target decoded size of a Reader's batches
// (datafile.ReadOptions.BatchBytes) for a read-ahead budget of readAhead bytes.
// Besides the budget, a Reader holds per decoder the batch it is building and the
// batch the caller has, outside the budget: sizing them from the budget keeps
// those a fraction of it (with 16 MiB, 2 MiB batches) instead of a fixed 8 MiB
// each, which at a small budget would be most of the memory.
func BatchBytes(readAhead int64) int64 {
	return min(max(readAhead/readAheadBatchShare, minReadBatchBytes), datafile.DefaultBatchBytes)
}

// Config is how a Reader reads. Every field is set (the facade applies the
// documented defaults of its options).
type Config struct {
	// Limit stops reading after Limit rows (0: no limit).
	Limit int64
	// BatchSize caps the rows per batch.
	BatchSize int64
	// Parallelism bounds the row groups decoded at once (and the files opened ahead
	// without a limit).
	Parallelism int
	// ReadAhead bounds, in bytes of decoded Arrow data, the batches waiting for the
	// caller.
	ReadAhead int64
	// Mem allocates the batches (replaced by a pool of the Reader's own when Pooled).
	Mem memory.Allocator
	// Pooled: the Reader recycles the buffers of batches the caller released, from a
	// datafile.BufferPool of its own.
	Pooled bool
	// PoisonPool makes that pool poison recycled buffers (tests only).
	PoisonPool bool
	// Progress, when set, is called with the files done and the files to read as a
	// Reader proceeds, from background goroutines, one call at a time.
	Progress func(done, total int64)
}

// Reader streams the rows of a planned scan as Arrow record batches, row group by
// row group.
//
// How it reads: the planned files are opened (footer, deletion vector) and their row
// groups and pages decided (skipping's footer and page-index evaluators) up to
// Config.Parallelism files ahead at once, one file ahead with a limit (see
// openWindow); one goroutine takes them in plan order and hands the row groups to up
// to Config.Parallelism decoders;
// each decoder streams its row group's column chunks, drops deleted rows, adds
// partition columns and rechecks the filter where no level proved "must match".
// Decoded batches wait in per-row-group queues whose total size is bounded by the
// read-ahead budget (Config.ReadAhead): a decoder that would exceed it waits, except
// the one decoding the row group the caller is reading while none of its batches
// wait. Memory is therefore about the budget plus, per decoder, one batch and the
// stream buffers — not the file size nor the row group size.
//
// Order: batches come in plan order (tasks in order, row groups and rows in file
// order) whatever the parallelism. A limit stops the background reads as soon as it
// is reached.
//
// A Reader is not safe for concurrent use. A batch returned by RecordBatch is valid
// until the next call to Next or Release; Retain it to keep it longer. Release stops
// the background reads and frees what they hold.
type Reader struct {
	scan  *Scan
	proj  *Projection
	tasks []*Task
	cfg   Config
	rec   Recorder

	ctx    context.Context
	cancel context.CancelFunc

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

// NewReader makes a Reader of tasks (read in order) of the scan s, returning batches
// of proj's schema; rec (nil: nothing recorded) receives the footers, row-group and
// page levels and rows returned. ctx governs the background reads, which start at
// the first Next. The caller releases the Reader.
func NewReader(ctx context.Context, s *Scan, cfg Config, proj *Projection, tasks []*Task, rec Recorder) *Reader {
	rctx, cancel := context.WithCancel(ctx)
	if cfg.Limit > 0 && cfg.Limit < cfg.BatchSize {
		cfg.BatchSize = cfg.Limit // decode no more rows than can be returned
	}
	if cfg.Pooled {
		// Batches the caller releases give their buffers back for the next ones. The
		// pool keeps at most twice the read-ahead budget of free buffers: the buffers
		// of a full queue of batches plus those being decoded (measured on the
		// interop full scan: about 1.7 times the budget are free at once; with one
		// budget a third of the batches' buffers were fresh allocations).
		cfg.Mem = datafile.NewBufferPool(datafile.PoolOptions{MaxIdleBytes: 2 * cfg.ReadAhead, Poison: cfg.PoisonPool})
	}
	r := &Reader{scan: s, proj: proj, tasks: tasks, cfg: cfg, rec: orNop(rec), ctx: rctx, cancel: cancel, refs: 1}
	r.limitCond = sync.NewCond(&r.limitMu)
	return r
}

// Allocator is the allocator of the Reader's batches: Config.Mem, or the Reader's
// own pool when Config.Pooled.
func (r *Reader) Allocator() memory.Allocator { return r.cfg.Mem }

// waitForLimit blocks the dispatcher, when the scan has a limit, until the rows of
// the row groups already started (rows) may no longer cover it; false when ctx ended.
func (r *Reader) waitForLimit(rows int64) bool {
	if r.cfg.Limit <= 0 {
		return true
	}
	r.limitMu.Lock()
	defer r.limitMu.Unlock()
	for r.ahead > 0 && r.ahead >= r.cfg.Limit-r.limitRows && r.ctx.Err() == nil {
		r.limitCond.Wait()
	}
	r.ahead += rows
	return r.ctx.Err() == nil
}

// unitConsumed returns the rows of a row group the caller has finished reading.
func (r *Reader) unitConsumed(u *readUnit) {
	if r.cfg.Limit <= 0 {
		return
	}
	r.limitMu.Lock()
	r.ahead -= u.maxRows
	r.limitRows = r.rows
	r.limitCond.Broadcast()
	r.limitMu.Unlock()
}

// Schema is the schema of every batch.
func (r *Reader) Schema() *arrow.Schema { return r.proj.Schema }

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
	if p, ok := r.cfg.Mem.(*datafile.BufferPool); ok && r.cfg.Pooled {
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

// Next advances to the next batch, reading in the background as needed.
func (r *Reader) Next() bool {
	r.releaseCur()
	if r.err != nil || r.finished {
		return false
	}
	if r.cfg.Limit > 0 && r.rows >= r.cfg.Limit {
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
		if r.cfg.Limit > 0 && r.rows+rec.NumRows() > r.cfg.Limit {
			sl := rec.NewSlice(0, r.cfg.Limit-r.rows)
			rec.Release()
			rec = sl
		}
		r.rows += rec.NumRows()
		r.rec.SetRows(r.rows)
		r.cur = rec
		if r.cfg.Limit > 0 && r.rows >= r.cfg.Limit {
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
	r.budget = newReadBudget(r.ctx, r.cfg.ReadAhead)
	r.units = make(chan *readUnit, 64)
	r.wg.Add(1)
	go r.dispatch()
}

// readUnit is one row group being decoded, with the queue of its output batches.
type readUnit struct {
	seq     int64
	file    *openFile
	spec    Unit
	maxRows int64 // rows it may return at most
	q       *batchQueue
}

// openFile is a file whose row groups are being read; the last user closes it.
type openFile struct {
	task *Task
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
	if r.cfg.Limit > 0 || r.cfg.Parallelism < 1 {
		return 1
	}
	return r.cfg.Parallelism
}

// pendingOpen is a planned file being opened ahead of the dispatcher; done is closed
// when of, units and err are set.
type pendingOpen struct {
	done  chan struct{}
	of    *openFile
	units []Unit
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
	slots := make(chan struct{}, r.cfg.Parallelism)
	if r.cfg.Limit > 0 {
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
			maxRows := of.r.Metadata().RowGroup(spec.RG).NumRows()
			if spec.Ranges != nil {
				maxRows = 0
				for _, rr := range spec.Ranges {
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
func (r *Reader) openTask(ctx context.Context, task *Task) (*openFile, []Unit, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var del *dv.Deleted
	var err error
	if task.Change != nil {
		del, err = task.Change.Deleted(ctx, r.scan.Store, task)
	} else {
		del, err = datafile.LoadDeletionVector(ctx, r.scan.Store, task.Add.DeletionVector)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("table: deletion vector of %s: %w", task.Path, err)
	}
	opts := datafile.ReadOptions{BatchSize: r.cfg.BatchSize, BatchBytes: BatchBytes(r.cfg.ReadAhead),
		Allocator: r.cfg.Mem, Deleted: del}
	if storage.RootOf(r.scan.Store) != "" {
		opts.StreamBufferBytes = localStreamBufferBytes
	}
	// The file is opened under the Reader's context, not ctx: an object store's File
	// reads with the context it was opened with, and the decoders read the file's row
	// groups after the dispatcher, which ends ctx (the opens ahead) when it has
	// dispatched the last of them.
	f, dr, err := r.scan.OpenFile(r.ctx, task, opts, r.rec)
	if err != nil {
		return nil, nil, err
	}
	units := r.scan.DecideFile(task, dr, r.rec)
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
	if r.cfg.Progress == nil {
		return
	}
	r.progressMu.Lock()
	r.filesDone++
	r.cfg.Progress(r.filesDone, int64(len(r.tasks)))
	r.progressMu.Unlock()
}

// decode reads one row group into its queue.
func (r *Reader) decode(u *readUnit) error {
	task := u.file.task
	emit := func(rec arrow.RecordBatch, _ int64) error {
		if rec.NumRows() == 0 {
			return nil
		}
		o, err := r.assemble(task, rec, u.spec.Recheck)
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
	if u.spec.Ranges != nil {
		err = u.file.r.ReadRanges(r.ctx, r.proj.Want, u.spec.RG, u.spec.Ranges, emit)
	} else {
		err = u.file.r.Read(r.ctx, r.proj.Want, []int{u.spec.RG}, emit)
	}
	if err != nil {
		if cerr := r.ctx.Err(); cerr != nil {
			return cerr
		}
		if errors.Is(err, datafile.ErrCorruptData) {
			return fmt.Errorf("table: %w", err) // names the file, row group and column
		}
		if errors.Is(err, storage.ErrNotExist) {
			// Opened with its logged size (a cached footer): an object store makes no
			// request until this read.
			return fmt.Errorf("%w: %s (referenced by version %d): %w", ErrMissingDataFile, task.Path, r.scan.Version, err)
		}
		return fmt.Errorf("table: reading %s: %w", task.Path, err)
	}
	return nil
}

// assemble builds an output batch from a batch of file columns plus partition
// constants, rechecking the filter when asked.
func (r *Reader) assemble(task *Task, data arrow.RecordBatch, recheck bool) (arrow.RecordBatch, error) {
	p := r.proj
	rec, err := p.WithPartitions(task, data, r.cfg.Mem)
	if err != nil {
		return nil, err
	}
	if recheck && p.Recheck != nil {
		filtered, err := r.applyFilter(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = filtered
	}
	return p.output(rec), nil
}

// applyFilter keeps the rows of rec for which the filter is TRUE (the exact recheck).
func (r *Reader) applyFilter(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	sel, err := r.proj.Recheck.Evaluate(rec)
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
	bb := array.NewBooleanBuilder(r.cfg.Mem)
	defer bb.Release()
	bb.Reserve(n)
	for i := 0; i < n; i++ {
		bb.UnsafeAppend(sel.Contains(i))
	}
	mask := bb.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(context.Background(), r.cfg.Mem), rec, mask, compute.DefaultFilterOptions())
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
