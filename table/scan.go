package table

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// ScanOption configures Scan.
type ScanOption func(*scanConfig)

type scanConfig struct {
	ref         Ref
	columns     []string
	filter      string
	predicate   expr.Expr
	limit       int64
	batchSize   int64
	parallelism int
	mem         memory.Allocator
	progress    func(Progress)
	snapshot    *Snapshot
	countOnly   bool // no output columns (Count)
}

// WithSnapshot scans a snapshot obtained earlier (instead of loading the log again).
// Repeated scans of one Snapshot share its parsed statistics and skipping index.
func WithSnapshot(s *Snapshot) ScanOption { return func(c *scanConfig) { c.snapshot = s } }

// WithRef scans the version ref names (default: the latest).
func WithRef(ref Ref) ScanOption { return func(c *scanConfig) { c.ref = ref } }

// WithColumns projects the scan onto the named columns, in that order (names are
// matched case-insensitively). No columns (the default) means every column.
func WithColumns(cols ...string) ScanOption {
	return func(c *scanConfig) { c.columns = append([]string(nil), cols...) }
}

// WithFilter keeps only rows for which the SQL-style predicate is TRUE (see package
// expr for the grammar). Units whose statistics prove no row can match are skipped.
func WithFilter(sql string) ScanOption { return func(c *scanConfig) { c.filter = sql } }

// WithPredicate is WithFilter for a predicate built with package expr's Go API.
func WithPredicate(e expr.Expr) ScanOption { return func(c *scanConfig) { c.predicate = e } }

// WithLimit stops the scan after n rows (n <= 0: no limit).
func WithLimit(n int64) ScanOption { return func(c *scanConfig) { c.limit = n } }

// WithBatchSize caps the rows per returned batch (default 65536).
func WithBatchSize(n int64) ScanOption { return func(c *scanConfig) { c.batchSize = n } }

// WithParallelism bounds how many files are read at once (default GOMAXPROCS).
func WithParallelism(n int) ScanOption { return func(c *scanConfig) { c.parallelism = n } }

// WithAllocator sets the allocator of returned batches (default memory.DefaultAllocator).
func WithAllocator(mem memory.Allocator) ScanOption { return func(c *scanConfig) { c.mem = mem } }

// WithProgress reports files read as the scan proceeds.
func WithProgress(fn func(Progress)) ScanOption { return func(c *scanConfig) { c.progress = fn } }

// Scan reads rows of one table version. It is an array.RecordReader: the schema is
// known before the first batch (so an empty result still has one); Next/RecordBatch
// iterate; Err reports the first failure; Release stops background reads.
//
// A Scan is not safe for concurrent use. Batches returned by RecordBatch are valid until
// the next call to Next (Retain them to keep them longer).
type Scan struct {
	snap    *Snapshot
	schema  *arrow.Schema
	tasks   []*fileTask
	cfg     scanConfig
	t       *Table
	report  *ScanReport
	outCols []outColumn   // columns of the read schema, in read-schema order
	outIdx  []int         // output column i is read column outIdx[i]
	readSch *arrow.Schema // columns read (projection plus filter columns), table order
	want    *arrow.Schema // data columns to read from files (with mapping metadata)
	pred    expr.Expr     // the filter, or nil
	table   *expr.Bound   // the filter bound to the table's logical schema (planning)
	recheck *expr.Bound   // the filter bound to readSch (exact evaluation of batches)

	started bool
	cancel  context.CancelFunc
	results []chan fileResult
	next    int // next task index to consume
	pending []arrow.RecordBatch
	cur     arrow.RecordBatch
	err     error
	rows    int64
	refs    int64
	wg      sync.WaitGroup
	sem     chan struct{}
	// ctx is the context given to Table.Scan; it governs the background reads that
	// Next (which takes no context, as array.RecordReader requires) consumes.
	ctx context.Context
}

type outColumn struct {
	field     arrow.Field
	partition bool
	physical  string // partition: the key in partitionValues
}

type fileTask struct {
	add       *log.Add
	path      string // decoded storage path
	partVals  map[string]value.Value
	rowGroups []int // nil: all
	// recheck is true when the filter must be evaluated on the rows (the planner could
	// not prove that every row matches).
	recheck bool
	// rgPlanned is set once row groups were decided from the footer (rowGroups then
	// lists the ones to read, mustRG those needing no recheck).
	rgPlanned bool
	mustRG    map[int]bool
	// pagesCounted is set when ExplainRowGroups already recorded the page level.
	pagesCounted bool
}

type fileResult struct {
	batches []arrow.RecordBatch
	err     error
}

// Scan plans a scan (snapshot, projection, file list) and returns a reader whose
// batches are read lazily, several files at a time.
func (t *Table) Scan(ctx context.Context, opts ...ScanOption) (*Scan, error) {
	cfg := scanConfig{batchSize: datafile.DefaultBatchSize, parallelism: runtime.GOMAXPROCS(0), mem: memory.DefaultAllocator}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.batchSize <= 0 {
		cfg.batchSize = datafile.DefaultBatchSize
	}
	if cfg.parallelism <= 0 {
		cfg.parallelism = 1
	}
	snap := cfg.snapshot
	if snap == nil {
		var err error
		if snap, err = t.Snapshot(ctx, cfg.ref); err != nil {
			return nil, err
		}
	}
	s := &Scan{snap: snap, cfg: cfg, t: t, refs: 1, ctx: ctx, report: &ScanReport{Version: snap.Version()}}
	if cfg.snapshot != nil {
		s.snap = cfg.snapshot
		s.report.Version = cfg.snapshot.Version()
	}
	if err := s.project(); err != nil {
		return nil, err
	}
	if err := s.plan(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// project resolves the requested columns and the filter into the read schema (the
// projection plus the columns the filter needs), the output mapping and the file read schema.
func (s *Scan) project() error {
	logical := s.snap.logical
	var outTable []int // output column -> table field index
	if s.cfg.countOnly {
		// No output columns: only the filter's columns are read.
	} else if len(s.cfg.columns) == 0 {
		for i := 0; i < logical.NumFields(); i++ {
			outTable = append(outTable, i)
		}
	} else {
		seen := map[int]bool{}
		for _, c := range s.cfg.columns {
			i := fieldIndexFold(logical, strings.TrimSpace(c))
			if i < 0 {
				return fmt.Errorf("%w: %q (columns: %s)", ErrUnknownColumn, c, fieldNames(logical))
			}
			if seen[i] {
				return fmt.Errorf("%w: column %q selected twice", ErrInvalidArgument, c)
			}
			seen[i] = true
			outTable = append(outTable, i)
		}
	}
	needed := map[int]bool{}
	for _, i := range outTable {
		needed[i] = true
	}
	if s.cfg.filter != "" || s.cfg.predicate != nil {
		pred := s.cfg.predicate
		if s.cfg.filter != "" {
			p, err := expr.Parse(s.cfg.filter)
			if err != nil {
				return err
			}
			if pred != nil {
				p = expr.And(pred, p)
			}
			pred = p
		}
		b, err := expr.Bind(pred, logical)
		if err != nil {
			return err
		}
		s.pred, s.table = pred, b
		s.report.Filter = b.String()
		for _, c := range b.Columns() {
			needed[c.FieldIndices[0]] = true
		}
	}
	// Read schema: needed columns in table order.
	var readFields, wantFields []arrow.Field
	pos := map[int]int{}
	for i := 0; i < logical.NumFields(); i++ {
		if !needed[i] {
			continue
		}
		f := logical.Field(i)
		oc := outColumn{field: f}
		if s.snap.isPartition(f.Name) {
			oc.partition = true
			oc.physical = s.snap.physicalName(i)
		} else {
			wantFields = append(wantFields, s.snap.schema.Field(i))
		}
		pos[i] = len(readFields)
		s.outCols = append(s.outCols, oc)
		readFields = append(readFields, f)
	}
	s.readSch = arrow.NewSchema(readFields, nil)
	s.want = arrow.NewSchema(wantFields, nil)
	outFields := make([]arrow.Field, len(outTable))
	for k, i := range outTable {
		outFields[k] = logical.Field(i)
		s.outIdx = append(s.outIdx, pos[i])
	}
	s.schema = arrow.NewSchema(outFields, nil)
	if s.table != nil {
		b, err := expr.Bind(s.pred, s.readSch)
		if err != nil {
			return err
		}
		s.recheck = b
	}
	return nil
}

// Schema is the schema of every batch the scan returns.
func (s *Scan) Schema() *arrow.Schema { return s.schema }

// Snapshot is the table version being scanned.
func (s *Scan) Snapshot() *Snapshot { return s.snap }

// Report describes what the scan planned and, once read, what it read.
func (s *Scan) Report() *ScanReport { return s.report }

// NumFiles is the number of files the scan will read.
func (s *Scan) NumFiles() int { return len(s.tasks) }

// Retain adds a reference (array.RecordReader).
func (s *Scan) Retain() { s.refs++ }

// Release drops a reference; the last one stops background reads and frees buffers.
func (s *Scan) Release() {
	s.refs--
	if s.refs > 0 {
		return
	}
	if s.cancel != nil {
		s.cancel()
	}
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	for _, p := range s.pending {
		p.Release()
	}
	s.pending = nil
	// Drain in-flight results.
	if s.started {
		for i := s.next; i < len(s.results); i++ {
			r := <-s.results[i]
			for _, b := range r.batches {
				b.Release()
			}
		}
		s.next = len(s.results)
		s.wg.Wait()
	}
}

// Close is Release, for use with defer.
func (s *Scan) Close() error { s.Release(); return nil }

// Err returns the first error the scan met.
func (s *Scan) Err() error { return s.err }

// RecordBatch returns the current batch (valid until the next call to Next).
func (s *Scan) RecordBatch() arrow.RecordBatch { return s.cur }

// Record is RecordBatch (array.RecordReader's deprecated name).
func (s *Scan) Record() arrow.RecordBatch { return s.cur }

func (s *Scan) start() {
	s.started = true
	ctx, cancel := context.WithCancel(s.ctxOrBackground())
	s.cancel = cancel
	s.results = make([]chan fileResult, len(s.tasks))
	for i := range s.results {
		s.results[i] = make(chan fileResult, 1)
	}
	sem := make(chan struct{}, s.cfg.parallelism)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var done int64
		var mu sync.Mutex
		var inner sync.WaitGroup
		for i, task := range s.tasks {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for j := i; j < len(s.tasks); j++ {
					s.results[j] <- fileResult{err: ctx.Err()}
				}
				inner.Wait()
				return
			}
			inner.Add(1)
			go func(i int, task *fileTask) {
				defer inner.Done()
				batches, err := s.readFile(ctx, task)
				// The slot is freed when the consumer takes the result (bounded prefetch),
				// see Next; here we only publish.
				s.results[i] <- fileResult{batches: batches, err: err}
				if s.cfg.progress != nil {
					mu.Lock()
					done++
					s.cfg.progress(Progress{Phase: "scan", Done: done, Total: int64(len(s.tasks)), Unit: "files"})
					mu.Unlock()
				}
			}(i, task)
		}
		inner.Wait()
	}()
	s.sem = sem
}

func (s *Scan) ctxOrBackground() context.Context {
	if s.ctx != nil {
		return s.ctx
	}
	return context.Background()
}

// Next advances to the next batch, reading files in the background as needed.
func (s *Scan) Next() bool {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.err != nil {
		return false
	}
	if s.cfg.limit > 0 && s.rows >= s.cfg.limit {
		return false
	}
	if !s.started {
		s.start()
	}
	for len(s.pending) == 0 {
		if s.next >= len(s.results) {
			return false
		}
		r := <-s.results[s.next]
		s.next++
		<-s.sem
		if r.err != nil {
			for _, b := range r.batches {
				b.Release()
			}
			s.err = r.err
			return false
		}
		s.pending = r.batches
	}
	rec := s.pending[0]
	s.pending = s.pending[1:]
	if s.cfg.limit > 0 && s.rows+rec.NumRows() > s.cfg.limit {
		keep := s.cfg.limit - s.rows
		sl := rec.NewSlice(0, keep)
		rec.Release()
		rec = sl
	}
	s.rows += rec.NumRows()
	s.report.RowsReturned = s.rows
	s.cur = rec
	return true
}

// readFile reads one planned file into output batches.
func (s *Scan) readFile(ctx context.Context, task *fileTask) (out []arrow.RecordBatch, err error) {
	defer func() {
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			out = nil
		}
	}()
	store := s.t.store
	var deleted func(uint64) bool
	if d := task.add.DeletionVector; d != nil {
		bm, err := dv.Load(ctx, store.Get, storage.RootOf(store), dvDescriptor(d))
		if err != nil {
			return nil, fmt.Errorf("table: deletion vector of %s: %w", task.path, err)
		}
		deleted = bm.Contains
	}
	f, err := store.Open(ctx, task.path)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s (referenced by version %d)", ErrMissingDataFile, task.path, s.snap.Version())
		}
		return nil, fmt.Errorf("table: open %s: %w", task.path, err)
	}
	defer f.Close()
	r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{BatchSize: s.cfg.batchSize, Allocator: s.cfg.mem})
	if err != nil {
		return nil, fmt.Errorf("table: %s: %w", task.path, err)
	}
	defer r.Close()
	rowGroups, mustRG := task.rowGroups, task.mustRG
	if task.recheck && s.table != nil && !task.rgPlanned {
		rowGroups, mustRG = s.rowGroupVerdicts(r)
	}
	if rowGroups != nil && len(rowGroups) == 0 {
		return nil, nil
	}
	rgOf := func(firstRow int64) int {
		for i := r.NumRowGroups() - 1; i >= 0; i-- {
			if r.RowGroupFirstRow(i) <= firstRow {
				return i
			}
		}
		return 0
	}
	emit := func(rec arrow.RecordBatch, firstRow int64) error {
		if deleted != nil {
			kept, err := datafile.ApplyDeletionVector(rec, firstRow, deleted, s.cfg.mem)
			if err != nil {
				return err
			}
			rec = kept
		} else {
			rec.Retain()
		}
		defer rec.Release()
		if rec.NumRows() == 0 {
			return nil
		}
		o, err := s.assemble(task, rec, task.recheck && !mustRG[rgOf(firstRow)])
		if err != nil {
			return err
		}
		if o.NumRows() == 0 {
			o.Release()
			return nil
		}
		out = append(out, o)
		return nil
	}
	if s.want.NumFields() == 0 {
		err = s.readCountsOnly(r, rowGroups, emit)
	} else {
		err = s.readPages(ctx, task, r, rowGroups, mustRG, emit)
	}
	if err != nil {
		return out, fmt.Errorf("table: reading %s: %w", task.path, err)
	}
	return out, nil
}

// readPages reads the selected row groups (nil: all). A row group that must be
// rechecked (the file needs a recheck and the row group is not MustMatch) is narrowed
// with its page index to the rows that might match, and only those are read; an
// unreadable page index, or ranges covering the whole group, read the whole group. The
// recheck still runs on every row read, so the result does not depend on this step.
// The "page" level of the report counts rows.
func (s *Scan) readPages(ctx context.Context, task *fileTask, r *datafile.Reader, rowGroups []int, mustRG map[int]bool, emit datafile.EmitFunc) error {
	if !task.recheck || s.table == nil {
		return r.Read(ctx, s.want, rowGroups, emit)
	}
	if rowGroups == nil {
		rowGroups = make([]int, r.NumRowGroups())
		for i := range rowGroups {
			rowGroups[i] = i
		}
	}
	md := r.Metadata()
	colIndex := s.leafIndex(md)
	lv := skipping.LevelStats{Level: "page"}
	defer func() {
		if !task.pagesCounted {
			s.report.addPages(lv)
		}
	}()
	for _, rg := range rowGroups {
		if mustRG[rg] {
			if err := r.Read(ctx, s.want, []int{rg}, emit); err != nil {
				return err
			}
			continue
		}
		n := md.RowGroup(rg).NumRows()
		lv.Total += n
		ranges, err := skipping.EvaluatePages(s.table, r.ParquetReader(), rg, colIndex)
		if err != nil {
			s.report.warn(fmt.Sprintf("page index of %s row group %d unusable, row group read whole: %v", task.path, rg, err))
		}
		if err != nil || ranges.Rows() >= n {
			lv.Kept += n
			if err := r.Read(ctx, s.want, []int{rg}, emit); err != nil {
				return err
			}
			continue
		}
		lv.Kept += ranges.Rows()
		lv.Skipped += n - ranges.Rows()
		if len(ranges) == 0 {
			continue
		}
		want := make([]datafile.RowRange, len(ranges))
		for i, rr := range ranges {
			want[i] = datafile.RowRange{Start: rr.Start, End: rr.End}
		}
		if err := r.ReadRanges(ctx, s.want, rg, want, emit); err != nil {
			return err
		}
	}
	return nil
}

// readCountsOnly produces zero-column batches with the row counts of the selected row
// groups, for scans that need only partition columns (or no columns at all).
func (s *Scan) readCountsOnly(r *datafile.Reader, rgs []int, emit datafile.EmitFunc) error {
	empty := arrow.NewSchema(nil, nil)
	if rgs == nil {
		for i := 0; i < r.NumRowGroups(); i++ {
			rgs = append(rgs, i)
		}
	}
	for _, rg := range rgs {
		n := r.Metadata().RowGroup(rg).NumRows()
		first := r.RowGroupFirstRow(rg)
		for off := int64(0); off < n; off += s.cfg.batchSize {
			m := min(s.cfg.batchSize, n-off)
			rec := array.NewRecordBatch(empty, nil, m)
			err := emit(rec, first+off)
			rec.Release()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// assemble builds an output batch from a batch of file columns plus partition constants.
func (s *Scan) assemble(task *fileTask, data arrow.RecordBatch, recheck bool) (arrow.RecordBatch, error) {
	n := int(data.NumRows())
	cols := make([]arrow.Array, len(s.outCols))
	di := 0
	for i, oc := range s.outCols {
		if oc.partition {
			c, err := datafile.ConstantColumn(task.partVals[oc.physical], oc.field.Type, n, s.cfg.mem)
			if err != nil {
				for _, c := range cols[:i] {
					if c != nil {
						c.Release()
					}
				}
				return nil, fmt.Errorf("table: partition column %q: %w", oc.field.Name, err)
			}
			cols[i] = c
			continue
		}
		c := data.Column(di)
		c.Retain()
		cols[i] = c
		di++
	}
	rec := array.NewRecordBatch(s.readSch, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	if recheck {
		filtered, err := s.applyFilter(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = filtered
	}
	// Project onto the output columns.
	out := make([]arrow.Array, len(s.outIdx))
	for i, j := range s.outIdx {
		out[i] = rec.Column(j)
	}
	res := array.NewRecordBatch(s.schema, out, rec.NumRows())
	rec.Release()
	return res, nil
}

// applyFilter keeps the rows of rec for which the filter is TRUE (the exact recheck).
func (s *Scan) applyFilter(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	sel, err := s.recheck.Evaluate(rec)
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
	bb := array.NewBooleanBuilder(s.cfg.mem)
	defer bb.Release()
	bb.Reserve(n)
	for i := 0; i < n; i++ {
		bb.UnsafeAppend(sel.Contains(i))
	}
	mask := bb.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(context.Background(), s.cfg.mem), rec, mask, compute.DefaultFilterOptions())
}

func dvDescriptor(d *log.DeletionVectorDescriptor) dv.Descriptor {
	out := dv.Descriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	if d.Offset != nil {
		out.Offset = *d.Offset
	}
	return out
}

// ReadAll scans and concatenates every batch into one arrow.Table (convenient for
// small results and tests). The caller releases the table.
func (t *Table) ReadAll(ctx context.Context, opts ...ScanOption) (arrow.Table, error) {
	sc, err := t.Scan(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer sc.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for sc.Next() {
		r := sc.RecordBatch()
		r.Retain()
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return array.NewTableFromRecords(sc.Schema(), recs), nil
}

// rowGroupVerdicts decides the file's row groups from its footer statistics, records
// them in the report, and returns the row groups to read (non-nil, possibly empty) and
// those proven MustMatch.
func (s *Scan) rowGroupVerdicts(r *datafile.Reader) ([]int, map[int]bool) {
	md := r.Metadata()
	verdicts := skipping.EvaluateRowGroups(s.table, md, s.leafIndex(md))
	lv := skipping.LevelStats{Level: "rowgroup"}
	keep := []int{}
	must := map[int]bool{}
	for i, v := range verdicts {
		lv.Add(v, md.RowGroup(i).TotalByteSize())
		if v != skipping.CannotMatch {
			keep = append(keep, i)
		}
		if v == skipping.MustMatch {
			must[i] = true
		}
	}
	s.report.addRowGroups(lv)
	return keep, must
}

// ExplainRowGroups reads the footers of the files the scan will read and decides
// their row groups, filling the "rowgroup" level of the report without reading any
// data. A later Next reuses the decisions. It must be called before the first Next.
func (s *Scan) ExplainRowGroups(ctx context.Context) error {
	if s.started {
		return fmt.Errorf("%w: ExplainRowGroups after Next", ErrInvalidArgument)
	}
	if s.table == nil {
		return nil
	}
	for _, task := range s.tasks {
		if !task.recheck || task.rgPlanned {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := s.t.store.Open(ctx, task.path)
		if err != nil {
			if errors.Is(err, storage.ErrNotExist) {
				return fmt.Errorf("%w: %s (referenced by version %d)", ErrMissingDataFile, task.path, s.snap.Version())
			}
			return err
		}
		r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{BatchSize: s.cfg.batchSize, Allocator: s.cfg.mem})
		if err != nil {
			f.Close()
			return fmt.Errorf("table: %s: %w", task.path, err)
		}
		task.rowGroups, task.mustRG = s.rowGroupVerdicts(r)
		task.rgPlanned = true
		s.explainPages(task, r)
		r.Close()
		f.Close()
	}
	return nil
}

// PlannedFile is a file a scan will read, with why it was kept.
type PlannedFile struct {
	// Path is the file's path relative to the table root (decoded).
	Path string `json:"path"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// PartitionValues are the file's partition values as the log stores them.
	PartitionValues map[string]*string `json:"partitionValues,omitempty"`
	// Stats is the file's statistics JSON as the log stores it ("" if none).
	Stats string `json:"stats,omitempty"`
	// Verdict is "must-match" (every row matches; no recheck) or "might-match".
	Verdict string `json:"verdict"`
	// Reason explains the verdict in words.
	Reason string `json:"reason"`
}

// Files lists the files the scan will read, in read order.
func (s *Scan) Files() []PlannedFile {
	out := make([]PlannedFile, len(s.tasks))
	for i, t := range s.tasks {
		pf := PlannedFile{Path: t.path, Size: t.add.Size, PartitionValues: t.add.PartitionValues, Stats: t.add.Stats}
		switch {
		case s.table == nil:
			pf.Verdict, pf.Reason = skipping.MightMatch.String(), "no filter"
		case !t.recheck:
			pf.Verdict, pf.Reason = skipping.MustMatch.String(), "statistics prove every row matches"
		case t.add.Stats == "":
			pf.Verdict, pf.Reason = skipping.MightMatch.String(), "no statistics"
		default:
			pf.Verdict, pf.Reason = skipping.MightMatch.String(), "statistics overlap the filter"
		}
		out[i] = pf
	}
	return out
}

// Count returns the number of rows of the table version that satisfy the scan's
// filter. Files whose statistics prove every row matches (MustMatch) and that carry a
// record count are answered from the log alone, without reading them (S2); the others
// are read, but only the filter's columns. The report says how many files were
// answered from metadata ("metadata" level).
func (t *Table) Count(ctx context.Context, opts ...ScanOption) (int64, *ScanReport, error) {
	opts = append(append([]ScanOption(nil), opts...), func(c *scanConfig) { c.countOnly = true })
	sc, err := t.Scan(ctx, opts...)
	if err != nil {
		return 0, nil, err
	}
	defer sc.Release()
	var n int64
	lv := skipping.LevelStats{Level: "metadata"}
	kept := sc.tasks[:0]
	for _, task := range sc.tasks {
		recs, ok := task.add.NumRecords()
		if !task.recheck && ok {
			if dvec := task.add.DeletionVector; dvec != nil {
				recs -= dvec.Cardinality
			}
			n += recs
			lv.Add(skipping.MustMatch, task.add.Size)
			continue
		}
		lv.Add(skipping.MightMatch, task.add.Size)
		kept = append(kept, task)
	}
	sc.tasks = kept
	sc.report.Levels = append(sc.report.Levels, lv)
	for sc.Next() {
		n += sc.RecordBatch().NumRows()
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	sc.report.RowsReturned = n
	return n, sc.report, nil
}

// leafIndex maps a bound column path (logical) to the file's leaf column index.
func (s *Scan) leafIndex(md *metadata.FileMetaData) func(path []string) int {
	leaf := skipping.LeafIndexByPath(md)
	mapper := s.snap.fm.mapper
	return func(path []string) int {
		phys, ok := mapPath(mapper, path)
		if !ok {
			return -1
		}
		return leaf(phys)
	}
}

// explainPages records the page level (in rows) for the row groups a task will read,
// from the page index alone, as readPages would when reading.
func (s *Scan) explainPages(task *fileTask, r *datafile.Reader) {
	md := r.Metadata()
	colIndex := s.leafIndex(md)
	lv := skipping.LevelStats{Level: "page"}
	for _, rg := range task.rowGroups {
		if task.mustRG[rg] {
			continue
		}
		n := md.RowGroup(rg).NumRows()
		lv.Total += n
		ranges, err := skipping.EvaluatePages(s.table, r.ParquetReader(), rg, colIndex)
		if err != nil || ranges.Rows() >= n {
			lv.Kept += n
			continue
		}
		lv.Kept += ranges.Rows()
		lv.Skipped += n - ranges.Rows()
	}
	s.report.addPages(lv)
	task.pagesCounted = true
}
