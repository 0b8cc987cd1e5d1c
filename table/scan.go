package table

import (
	"context"
	"fmt"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/skipping"
)

// ScanOption configures a scan: what it returns (WithColumns, WithFilter,
// WithPredicate, WithLimit) and how a Reader reads it (WithBatchSize,
// WithParallelism, WithReadAhead, WithAllocator, WithProgress). The zero value of
// every option's argument means the option's documented default.
type ScanOption func(*scanConfig)

// scanConfig is what a scan returns (columns, filter) and how a Reader reads it.
type scanConfig struct {
	columns   []string
	filter    string
	predicate expr.Expr
	// copyMin are CopyParquet's average row-group rows and bytes (0: datafile's
	// defaults); set by tests only.
	copyMin [2]int64
	// Config is how Readers read: Pooled when no WithAllocator (a Reader recycles
	// its batches' buffers).
	scanexec.Config
}

func newScanConfig(opts []ScanOption) scanConfig {
	var c scanConfig
	for _, o := range opts {
		o(&c)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = datafile.DefaultBatchSize
	}
	if c.Parallelism <= 0 {
		c.Parallelism = runtime.GOMAXPROCS(0)
	}
	if c.ReadAhead <= 0 {
		c.ReadAhead = scanexec.DefaultReadAheadBytes
	}
	if c.Mem == nil {
		c.Mem = memory.DefaultAllocator
		c.Pooled = true
	}
	if c.Limit < 0 {
		c.Limit = 0
	}
	return c
}

// WithColumns projects the scan onto the named columns, in that order (names are
// matched case-insensitively). No columns (the default) means every column.
func WithColumns(cols ...string) ScanOption {
	return func(c *scanConfig) { c.columns = append([]string(nil), cols...) }
}

// WithFilter keeps only rows for which the SQL-style predicate is TRUE (see package
// expr for the grammar). Units whose statistics prove no row can match are skipped.
// "" (the default) keeps every row.
func WithFilter(sql string) ScanOption { return func(c *scanConfig) { c.filter = sql } }

// WithPredicate is WithFilter for a predicate built with package expr's Go API (nil,
// the default, keeps every row). With both, a row must satisfy both.
func WithPredicate(e expr.Expr) ScanOption { return func(c *scanConfig) { c.predicate = e } }

// WithLimit stops reading after n rows (n <= 0, the default: no limit). Background
// reads stop as soon as the limit is reached.
func WithLimit(n int64) ScanOption { return func(c *scanConfig) { c.Limit = n } }

// WithBatchSize caps the rows per returned batch (n <= 0: datafile.DefaultBatchSize,
// 65536). Row groups of wide rows are read in smaller batches of about an eighth of
// the read-ahead budget each (between 1 MiB and 8 MiB; 2 MiB at the default, see
// WithReadAhead), and a filter's recheck makes batches smaller still.
func WithBatchSize(n int64) ScanOption { return func(c *scanConfig) { c.BatchSize = n } }

// WithParallelism bounds how many row groups are decoded at once (n <= 0:
// runtime.GOMAXPROCS(0)). Output order does not depend on it.
func WithParallelism(n int) ScanOption { return func(c *scanConfig) { c.Parallelism = n } }

// WithReadAhead bounds, in bytes of decoded Arrow data, how far background reads
// may run ahead of the caller (n <= 0: 16 MiB). The row
// group the caller is reading always proceeds, so a budget smaller than one batch
// still makes progress. Batches of wide rows are sized from the budget: an eighth
// of it, between 1 MiB and 8 MiB (2 MiB at the default). Peak memory is about this
// budget plus, per parallel reader, one batch and the column-chunk stream buffers —
// not the file size — plus, without WithAllocator, up to twice the budget of
// released batches' buffers kept for reuse by the next batches; with Go's default
// garbage collection (GOGC=100) resident memory is about twice that. A larger
// budget lets the decoders beyond the one the caller reads run further ahead (a
// fast consumer of row groups larger than the budget reads faster with a budget of
// about one decoded row group per extra decoder).
func WithReadAhead(bytes int64) ScanOption { return func(c *scanConfig) { c.ReadAhead = bytes } }

// WithAllocator sets the allocator of returned batches (nil, the default: a Reader
// allocates from a pool of its own, which reuses the buffers of batches the caller
// has released for the batches it decodes next; other reads use
// memory.DefaultAllocator). A batch the caller keeps (Retain) is never reused.
func WithAllocator(mem memory.Allocator) ScanOption { return func(c *scanConfig) { c.Mem = mem } }

// WithProgress reports files read as a Reader proceeds (nil, the default: none). It
// is called from background goroutines, one call at a time.
func WithProgress(fn func(Progress)) ScanOption {
	return func(c *scanConfig) {
		c.Progress = nil
		if fn != nil {
			c.Progress = func(done, total int64) { fn(Progress{Phase: "scan", Done: done, Total: total, Unit: "files"}) }
		}
	}
}

// Scan is a planned scan of one table version: the projection, the filter bound to
// the table schema, and the files to read with the verdict of each (from package
// skipping's Planner). It reads no data: Read makes a Reader that streams the rows,
// Count counts them, Explain adds the row-group and page decisions from the files'
// footers.
//
// A Scan is immutable and safe for concurrent use; several Readers may be made
// from one Scan.
type Scan struct {
	snap   *Snapshot
	cfg    scanConfig
	proj   *scanexec.Projection
	pred   expr.Expr
	table  *expr.Bound // the filter bound to the scan's logical schema (cols), or nil
	tasks  []*fileTask // the files to read, in log order
	report ScanReport  // the planning levels (copied out, never mutated after planning)
	// cols are the columns the scan can return (the table's; a change read adds
	// the change columns), mapper translates their logical paths to the files'
	// physical ones (nil: the identity).
	cols   []scanexec.Column
	mapper skipping.PathMapper
}

// fileTask is a planned file (the scan reader's task).
type fileTask = scanexec.Task

// exec is what the scan reader needs of s besides the tasks.
func (s *Scan) exec() *scanexec.Scan {
	return &scanexec.Scan{Store: s.snap.store, Version: s.snap.Version(), Footers: s.snap.footers, Filter: s.table, Mapper: s.mapper}
}

// Scan plans a scan of the latest version (see Snapshot.Scan; to scan another
// version, load its Snapshot first).
func (t *Table) Scan(ctx context.Context, opts ...ScanOption) (*Scan, error) {
	snap, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	return snap.Scan(ctx, opts...)
}

// Scan plans a scan of this snapshot: it resolves the columns, parses and binds the
// filter, and decides every live file with skipping's Planner (partition values,
// statistics, Bloom filters). Errors in columns or filter are returned here, before
// anything is read. Scans of one Snapshot share its parsed statistics and index.
func (s *Snapshot) Scan(ctx context.Context, opts ...ScanOption) (*Scan, error) {
	sc := &Scan{snap: s, cfg: newScanConfig(opts), report: ScanReport{Version: s.Version()},
		cols: scanexec.TableColumns(s.view), mapper: scanexec.MapperOf(s.view)}
	if err := sc.bindFilter(); err != nil {
		return nil, err
	}
	if sc.table != nil {
		s.filters.observe(sc.pred)
	}
	proj, err := sc.project(sc.cfg.columns, false)
	if err != nil {
		return nil, err
	}
	sc.proj = proj
	reqs, pctx := requestCounter(ctx, s.store)
	if err := sc.plan(pctx); err != nil {
		return nil, err
	}
	sc.report.Requests = countsOf(reqs)
	sc.report.SnapshotRequests = copyCounts(s.loadRequests)
	return sc, nil
}

// bindFilter parses the scan's filter (WithFilter, ANDed with WithPredicate) and
// binds it to the scan's columns.
func (sc *Scan) bindFilter() error {
	if sc.cfg.filter != "" || sc.cfg.predicate != nil {
		pred := sc.cfg.predicate
		if sc.cfg.filter != "" {
			p, err := expr.Parse(sc.cfg.filter)
			if err != nil {
				return err
			}
			if pred != nil {
				p = expr.And(pred, p)
			}
			pred = p
		}
		b, err := expr.Bind(pred, scanexec.ColumnSchema(sc.cols))
		if err != nil {
			return err
		}
		sc.pred, sc.table = pred, b
		// The filter as given (numbers as the user wrote them), not as bound:
		// binding coerces literals to the columns' types (500 to a double prints
		// 5e+02, 2.5 against a bigint becomes >= 3), which would not echo the input.
		sc.report.Filter = pred.String()
	}
	return nil
}

// project resolves the requested columns (none: every column, unless countOnly,
// which returns no column) and the filter into a projection.
func (s *Scan) project(columns []string, countOnly bool) (*scanexec.Projection, error) {
	return scanexec.Project(s.cols, columns, countOnly, s.pred, s.table)
}

// planPredicate is the predicate files are planned with: the filter, ANDed with what
// it implies about partition columns generated from the columns it reads
// (tableview.View.ImpliedPartitionFilter), so the partition pass prunes by them too.
// On the rows the table holds (every generated value equals its expression) both
// accept the same rows, so every verdict about it is one about the filter; rows are
// rechecked against the filter itself.
func (s *Scan) planPredicate() (*expr.Bound, error) {
	implied := s.snap.view.ImpliedPartitionFilter(s.table)
	if implied == nil {
		return s.table, nil
	}
	return expr.Bind(expr.And(s.pred, implied), scanexec.ColumnSchema(s.cols))
}

// plan decides every live file with the snapshot's Planner and keeps those that
// might hold a matching row (S1).
func (s *Scan) plan(ctx context.Context) error {
	files := s.snap.log.Files()
	var meta *scanexec.Meta
	if s.table != nil || len(s.snap.log.PartitionColumns()) > 0 {
		m, err := s.snap.meta()
		if err != nil {
			return err
		}
		meta = m
	}
	var fp *skipping.FilePlan
	if s.table != nil {
		planned, err := s.planPredicate()
		if err != nil {
			return err
		}
		if fp, err = meta.Planner.Plan(ctx, planned); err != nil {
			return err
		}
		s.report.Levels = fp.Levels
		s.report.Warnings = fp.Warnings
		s.report.Files = fp.Summary
	} else {
		s.report.Files = skipping.LevelStats{Level: "files", Unit: skipping.UnitFiles}
	}
	for i, a := range files {
		fv := skipping.FileVerdict{Verdict: skipping.MightMatch, Level: skipping.NoLevel, Reason: skipping.ReasonNoFilter}
		if fp != nil {
			fv = fp.Files[i]
		} else {
			s.report.Files.Add(skipping.MightMatch, a.Size)
		}
		if fv.Verdict == skipping.CannotMatch {
			continue
		}
		p, err := a.DecodedPath()
		if err != nil {
			return fmt.Errorf("table: version %d: file %q: %w", s.snap.Version(), a.Path, err)
		}
		t := &fileTask{Idx: i, Add: a, Path: p, Verdict: fv, Recheck: s.table != nil && fv.Verdict != skipping.MustMatch}
		if meta != nil {
			t.PartVals = meta.Parts[i]
		}
		s.tasks = append(s.tasks, t)
	}
	return nil
}

// Schema is the schema of every batch a Reader of the scan returns (known before
// any data is read, so an empty result still has one).
func (s *Scan) Schema() *arrow.Schema { return s.proj.Schema }

// Snapshot is the table version being scanned.
func (s *Scan) Snapshot() *Snapshot { return s.snap }

// Report returns what planning decided: the file levels (partition, stats, Bloom)
// and the files summary. The caller owns the copy.
func (s *Scan) Report() *ScanReport { return s.report.clone() }

// NumFiles is the number of files the scan will read.
func (s *Scan) NumFiles() int { return len(s.tasks) }

// PlannedFile is a file a scan will read, with why it was kept: its path, size,
// record count, deleted rows, partition values and statistics as the log stores
// them, what the statistics say of the filter's columns (FilterColumns), and the
// planner's verdict and reason.
type PlannedFile = scanexec.PlannedFile

// ColumnStats is what one file's statistics say of one column: its Min and Max
// (value.Null() when unknown; a partition column's value for both) and NullCount
// (-1 when unknown).
type ColumnStats = scanexec.ColumnStats

// Files lists the files the scan will read, in read order, with the planner's
// verdict and reason for each.
func (s *Scan) Files() []PlannedFile {
	var cols []*expr.BoundColumn
	var meta *scanexec.Meta
	if s.table != nil {
		cols = s.table.Columns()
		meta, _ = s.snap.meta() // planning succeeded, so this is the cached result
	}
	return scanexec.ListFiles(s.tasks, meta, cols)
}

// Read starts reading the planned files and returns a Reader of their rows. ctx
// governs the background reads (Next takes no context, as array.RecordReader
// requires): cancelling it makes Next fail with the context's error. The caller
// releases the Reader.
func (s *Scan) Read(ctx context.Context) (*Reader, error) {
	return newReader(ctx, s, s.cfg, s.proj, s.tasks, s.report.clone()), nil
}

// ReadAll reads every batch into one arrow.Table (convenient for small results and
// tests). The caller releases the table.
func (s *Scan) ReadAll(ctx context.Context) (arrow.Table, error) {
	rd, err := s.Read(ctx)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for rd.Next() {
		r := rd.RecordBatch()
		r.Retain()
		recs = append(recs, r)
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	return array.NewTableFromRecords(rd.Schema(), recs), nil
}

// ReadAll scans the latest version and concatenates every batch into one
// arrow.Table (see Scan.ReadAll). The caller releases the table.
func (t *Table) ReadAll(ctx context.Context, opts ...ScanOption) (arrow.Table, error) {
	sc, err := t.Scan(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return sc.ReadAll(ctx)
}

// Count returns the number of rows of the scanned version that satisfy the filter
// (the projection and limit are ignored). Files the planner proves MustMatch that
// carry a record count are answered from the log alone, without reading them (S2);
// the others are read, but only the filter's columns. The report says how many
// files were answered from metadata ("metadata" level).
func (s *Scan) Count(ctx context.Context) (int64, *ScanReport, error) {
	proj, err := s.project(nil, true)
	if err != nil {
		return 0, nil, err
	}
	rep := s.report.clone()
	n, lv, kept, err := s.exec().CountFromLog(ctx, s.tasks)
	rep.Levels = append(rep.Levels, lv)
	if err != nil {
		return 0, nil, err
	}
	cfg := s.cfg
	cfg.Limit = 0
	rd := newReader(ctx, s, cfg, proj, kept, rep)
	defer rd.Release()
	for rd.Next() {
		n += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		return 0, nil, err
	}
	out := rd.Report()
	out.RowsReturned = n
	return n, out, nil
}

// Count counts the rows of the latest version that satisfy the scan's filter (see
// Scan.Count).
func (t *Table) Count(ctx context.Context, opts ...ScanOption) (int64, *ScanReport, error) {
	sc, err := t.Scan(ctx, opts...)
	if err != nil {
		return 0, nil, err
	}
	return sc.Count(ctx)
}

// Explain reads the footers (and page indexes) of the files the scan will read and
// returns the planning report completed with the "rowgroup" and "page" levels a
// Reader would apply, without reading any data.
func (s *Scan) Explain(ctx context.Context) (*ScanReport, error) {
	rep := s.report.clone()
	if s.table == nil {
		return rep, nil
	}
	reqs, ctx := requestCounter(ctx, s.snap.store)
	defer rep.addRequests(reqs)
	opts := datafile.ReadOptions{BatchSize: s.cfg.BatchSize, Allocator: s.cfg.Mem}
	if err := s.exec().Explain(ctx, s.tasks, opts, recorder(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

// target is what a DML command's reads of its target files need of s.
func (s *Scan) target() *dml.Target {
	return &dml.Target{Scan: s.exec(), Proj: s.proj, BatchSize: s.cfg.BatchSize, Mem: s.cfg.Mem}
}
