package table

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// defaultReadAheadBytes is the default read-ahead budget of a Reader: the most
// decoded Arrow data (by datafile.RecordBytes) that background reads hold beyond
// the batch the caller has. What a Reader holds is live Go heap, and with the
// garbage collector's default pacing (GOGC=100) the heap grows to about twice what
// is live before a collection, so each byte of budget costs about two of resident
// memory: 16 MiB keeps a full scan near 1.25 times DuckDB's peak RSS on the same
// files (BENCHMARKS.md, "Peak memory of a full scan"), where 64 MiB took 2.1 times.
// A caller whose consumer is fast and whose row groups decode to more than the
// budget gives up some parallel decoding at this default (the decoders beyond the
// one the caller reads wait); WithReadAhead raises it.
const defaultReadAheadBytes = 16 << 20

// Batch sizes of a Reader follow its read-ahead budget (readAheadBatchBytes): an
// eighth of the budget, between minReadBatchBytes and datafile.DefaultBatchBytes.
const (
	readAheadBatchShare = 8
	minReadBatchBytes   = 1 << 20
)

// readAheadBatchBytes is the target decoded size of a Reader's batches
// (datafile.ReadOptions.BatchBytes) for a read-ahead budget of readAhead bytes.
// Besides the budget, a Reader holds per decoder the batch it is building and the
// batch the caller has, outside the budget: sizing them from the budget keeps
// those a fraction of it (with 16 MiB, 2 MiB batches) instead of a fixed 8 MiB
// each, which at a small budget would be most of the memory.
func readAheadBatchBytes(readAhead int64) int64 {
	return min(max(readAhead/readAheadBatchShare, minReadBatchBytes), datafile.DefaultBatchBytes)
}

// ScanOption configures a scan: what it returns (WithColumns, WithFilter,
// WithPredicate, WithLimit) and how a Reader reads it (WithBatchSize,
// WithParallelism, WithReadAhead, WithAllocator, WithProgress). The zero value of
// every option's argument means the option's documented default.
type ScanOption func(*scanConfig)

type scanConfig struct {
	columns     []string
	filter      string
	predicate   expr.Expr
	limit       int64
	batchSize   int64
	parallelism int
	readAhead   int64
	mem         memory.Allocator
	pooled      bool // no WithAllocator: a Reader recycles its batches' buffers
	poisonPool  bool // the Reader's pool poisons recycled buffers (set by tests only)
	progress    func(Progress)
}

func newScanConfig(opts []ScanOption) scanConfig {
	var c scanConfig
	for _, o := range opts {
		o(&c)
	}
	if c.batchSize <= 0 {
		c.batchSize = datafile.DefaultBatchSize
	}
	if c.parallelism <= 0 {
		c.parallelism = runtime.GOMAXPROCS(0)
	}
	if c.readAhead <= 0 {
		c.readAhead = defaultReadAheadBytes
	}
	if c.mem == nil {
		c.mem = memory.DefaultAllocator
		c.pooled = true
	}
	if c.limit < 0 {
		c.limit = 0
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
func WithLimit(n int64) ScanOption { return func(c *scanConfig) { c.limit = n } }

// WithBatchSize caps the rows per returned batch (n <= 0: datafile.DefaultBatchSize,
// 65536). Row groups of wide rows are read in smaller batches of about an eighth of
// the read-ahead budget each (between 1 MiB and 8 MiB; 2 MiB at the default, see
// WithReadAhead), and a filter's recheck makes batches smaller still.
func WithBatchSize(n int64) ScanOption { return func(c *scanConfig) { c.batchSize = n } }

// WithParallelism bounds how many row groups are decoded at once (n <= 0:
// runtime.GOMAXPROCS(0)). Output order does not depend on it.
func WithParallelism(n int) ScanOption { return func(c *scanConfig) { c.parallelism = n } }

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
func WithReadAhead(bytes int64) ScanOption { return func(c *scanConfig) { c.readAhead = bytes } }

// WithAllocator sets the allocator of returned batches (nil, the default: a Reader
// allocates from a pool of its own, which reuses the buffers of batches the caller
// has released for the batches it decodes next; other reads use
// memory.DefaultAllocator). A batch the caller keeps (Retain) is never reused.
func WithAllocator(mem memory.Allocator) ScanOption { return func(c *scanConfig) { c.mem = mem } }

// WithProgress reports files read as a Reader proceeds (nil, the default: none). It
// is called from background goroutines, one call at a time.
func WithProgress(fn func(Progress)) ScanOption { return func(c *scanConfig) { c.progress = fn } }

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
	proj   *projection
	pred   expr.Expr
	table  *expr.Bound // the filter bound to the scan's logical schema (cols), or nil
	tasks  []*fileTask // the files to read, in log order
	report ScanReport  // the planning levels (copied out, never mutated after planning)
	// cols are the columns the scan can return (the table's; a change read adds
	// the change columns), mapper translates their logical paths to the files'
	// physical ones (nil: the identity).
	cols   []scanColumn
	mapper skipping.PathMapper
}

// scanColumn is a column a scan can return, and where its values come from.
type scanColumn struct {
	field arrow.Field // logical name, no metadata
	// partition: the value is the file's (fileTask.partVals[physical]), never read
	// from the file.
	partition bool
	// physical is the key of the column's value in fileTask.partVals: a partition
	// column's physical name; for an override column, the key of the value that
	// replaces the file's column when a task has one.
	physical string
	// read is what files are asked for (with mapping metadata), for file columns.
	read arrow.Field
	// override: a file column whose value a task may give instead (a change read's
	// _change_type: read from change data files, constant for the inserts and
	// deletes derived from add and remove actions).
	override bool
}

// tableColumns are the columns of v's table, as scans return them.
func tableColumns(v *tableview.View) []scanColumn {
	logical := v.Logical()
	out := make([]scanColumn, logical.NumFields())
	for i, f := range logical.Fields() {
		c := scanColumn{field: f, read: v.ReadSchema().Field(i)}
		if v.IsPartition(f.Name) {
			c.partition = true
			c.physical = v.Physical().Field(i).Name
		}
		out[i] = c
	}
	return out
}

// columnSchema is the logical schema of cols (what filters bind to).
func columnSchema(cols []scanColumn) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.field
	}
	return arrow.NewSchema(fields, nil)
}

type outColumn struct {
	field     arrow.Field
	partition bool
	physical  string // partition or override: the key in fileTask.partVals
	override  bool   // a file column a task's partVals[physical] replaces when present
}

// projection is what a read returns and reads: the output schema, the columns read
// (output plus filter columns), and the file columns among them.
type projection struct {
	schema  *arrow.Schema // every returned batch's schema
	outCols []outColumn   // columns of readSch, in readSch order
	outIdx  []int         // output column i is read column outIdx[i]
	readSch *arrow.Schema // columns read (projection plus filter columns), table order
	want    *arrow.Schema // data columns to read from files (with mapping metadata)
	recheck *expr.Bound   // the filter bound to readSch, or nil
}

type fileTask struct {
	idx      int // index in the snapshot's files (and its Planner)
	add      *log.Add
	path     string // decoded storage path
	partVals map[string]value.Value
	verdict  skipping.FileVerdict
	// recheck is true when the filter must be evaluated on the rows (the planner
	// could not prove that every row matches).
	recheck bool
	// change is set for the files of a change read (Table.Changes): which version's
	// change they hold, and which rows of the file it is.
	change *changeFile
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
		cols: tableColumns(s.view), mapper: pathMapper(s.view)}
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
		b, err := expr.Bind(pred, columnSchema(sc.cols))
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
func (s *Scan) project(columns []string, countOnly bool) (*projection, error) {
	logical := columnSchema(s.cols)
	p := &projection{}
	var outTable []int // output column -> table field index
	switch {
	case countOnly:
		// No output columns: only the filter's columns are read.
	case len(columns) == 0:
		for i := 0; i < logical.NumFields(); i++ {
			outTable = append(outTable, i)
		}
	default:
		seen := map[int]bool{}
		for _, c := range columns {
			i := fieldIndexFold(logical, strings.TrimSpace(c))
			if i < 0 {
				return nil, fmt.Errorf("%w: %q (columns: %s)", ErrUnknownColumn, c, fieldNames(logical))
			}
			if seen[i] {
				return nil, fmt.Errorf("%w: column %q selected twice", ErrInvalidArgument, c)
			}
			seen[i] = true
			outTable = append(outTable, i)
		}
	}
	needed := map[int]bool{}
	for _, i := range outTable {
		needed[i] = true
	}
	if s.table != nil {
		for _, c := range s.table.Columns() {
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
		c := s.cols[i]
		f := c.field
		oc := outColumn{field: f, partition: c.partition, physical: c.physical, override: c.override}
		if !c.partition {
			wantFields = append(wantFields, c.read)
		}
		pos[i] = len(readFields)
		p.outCols = append(p.outCols, oc)
		readFields = append(readFields, f)
	}
	p.readSch = arrow.NewSchema(readFields, nil)
	p.want = arrow.NewSchema(wantFields, nil)
	outFields := make([]arrow.Field, len(outTable))
	for k, i := range outTable {
		outFields[k] = logical.Field(i)
		p.outIdx = append(p.outIdx, pos[i])
	}
	p.schema = arrow.NewSchema(outFields, nil)
	if s.table != nil {
		b, err := expr.Bind(s.pred, p.readSch)
		if err != nil {
			return nil, err
		}
		p.recheck = b
	}
	return p, nil
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
	return expr.Bind(expr.And(s.pred, implied), columnSchema(s.cols))
}

// plan decides every live file with the snapshot's Planner and keeps those that
// might hold a matching row (S1).
func (s *Scan) plan(ctx context.Context) error {
	files := s.snap.log.Files()
	var meta *fileMeta
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
		if fp, err = meta.planner.Plan(ctx, planned); err != nil {
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
		t := &fileTask{idx: i, add: a, path: p, verdict: fv, recheck: s.table != nil && fv.Verdict != skipping.MustMatch}
		if meta != nil {
			t.partVals = meta.parts[i]
		}
		s.tasks = append(s.tasks, t)
	}
	return nil
}

// Schema is the schema of every batch a Reader of the scan returns (known before
// any data is read, so an empty result still has one).
func (s *Scan) Schema() *arrow.Schema { return s.proj.schema }

// Snapshot is the table version being scanned.
func (s *Scan) Snapshot() *Snapshot { return s.snap }

// Report returns what planning decided: the file levels (partition, stats, Bloom)
// and the files summary. The caller owns the copy.
func (s *Scan) Report() *ScanReport { return s.report.clone() }

// NumFiles is the number of files the scan will read.
func (s *Scan) NumFiles() int { return len(s.tasks) }

// PlannedFile is a file a scan will read, with why it was kept.
type PlannedFile struct {
	// Path is the file's path relative to the table root (decoded).
	Path string `json:"path"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// NumRecords is the file's row count from its statistics (rows its deletion
	// vector removes included: see DeletedRows); -1 when the statistics do not say.
	NumRecords int64 `json:"numRecords"`
	// DeletedRows is the number of rows the file's deletion vector removes.
	DeletedRows int64 `json:"deletedRows,omitempty"`
	// PartitionValues are the file's partition values as the log stores them.
	PartitionValues map[string]*string `json:"partitionValues,omitempty"`
	// Stats is the file's statistics JSON as the log stores it ("" if none).
	Stats string `json:"stats,omitempty"`
	// FilterColumns holds what the file's statistics (or partition values) say of
	// each column the filter reads, in the filter's column order; nil without a
	// filter.
	FilterColumns []ColumnStats `json:"-"`
	// Verdict is "must-match" (every row matches; no recheck) or "might-match".
	Verdict string `json:"verdict"`
	// Reason explains the verdict in words.
	Reason string `json:"reason"`
}

// ColumnStats is what one file's statistics say of one column.
type ColumnStats struct {
	// Column is the column's logical name (a dotted path for a nested field).
	Column string
	// Min and Max bound the column's non-null values in the file; value.Null() when
	// the statistics do not say. For a partition column both are its value.
	Min, Max value.Value
	// NullCount is the number of nulls, -1 when unknown.
	NullCount int64
}

// Files lists the files the scan will read, in read order, with the planner's
// verdict and reason for each.
func (s *Scan) Files() []PlannedFile {
	var cols []*expr.BoundColumn
	var meta *fileMeta
	if s.table != nil {
		cols = s.table.Columns()
		meta, _ = s.snap.meta() // planning succeeded, so this is the cached result
	}
	out := make([]PlannedFile, len(s.tasks))
	// Listing many files parses each one's statistics: ranges of files on every core.
	parallelRanges(len(s.tasks), 4096, func(lo, hi int) {
		plannedFiles(out[lo:hi], s.tasks[lo:hi], meta, cols)
	})
	return out
}

// plannedFiles fills out with tasks, one to one.
func plannedFiles(out []PlannedFile, tasks []*fileTask, meta *fileMeta, cols []*expr.BoundColumn) {
	for i, t := range tasks {
		n, ok := t.add.NumRecords()
		if !ok {
			n = -1
		}
		pf := PlannedFile{Path: t.path, Size: t.add.Size, NumRecords: n, PartitionValues: t.add.PartitionValues,
			Stats: t.add.Stats, Verdict: t.verdict.Verdict.String(), Reason: t.verdict.Reason}
		if dv := t.add.DeletionVector; dv != nil {
			pf.DeletedRows = dv.Cardinality
		}
		if meta != nil && len(cols) > 0 {
			pf.FilterColumns = columnStats(meta, t, cols)
		}
		out[i] = pf
	}
}

// parallelRanges calls fn over consecutive ranges of [0, n) of at most chunk
// elements, on up to GOMAXPROCS goroutines when there is more than one range, and
// returns when every call has.
func parallelRanges(n, chunk int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if workers <= 1 {
		for lo := 0; lo < n; lo += chunk {
			fn(lo, min(lo+chunk, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				fn(lo, min(lo+chunk, n))
			}
		})
	}
	wg.Wait()
}

// columnStats reads the statistics of cols for one planned file.
func columnStats(meta *fileMeta, t *fileTask, cols []*expr.BoundColumn) []ColumnStats {
	fs := meta.planner.Stats(t.idx)
	out := make([]ColumnStats, len(cols))
	for k, c := range cols {
		cs := ColumnStats{Column: c.Name(), Min: value.Null(), Max: value.Null(), NullCount: -1}
		phys, ok := mapPath(meta.mapper, c.Path)
		if ok && len(phys) == 1 && t.partVals != nil {
			if v, isPart := t.partVals[phys[0]]; isPart {
				cs.Min, cs.Max, cs.NullCount = v, v, 0
				if v.IsNull() {
					cs.NullCount = -1
					if n, known := t.add.NumRecords(); known {
						cs.NullCount = n
					}
				}
				out[k] = cs
				continue
			}
		}
		if ok {
			if st := fs.Column(phys...); st != nil {
				cs.Min, cs.Max = st.Min, st.Max
				if st.HasNullCount {
					cs.NullCount = st.NullCount
				}
			}
		}
		out[k] = cs
	}
	return out
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
	var n int64
	lv := skipping.LevelStats{Level: "metadata", Unit: skipping.UnitFiles}
	var kept, withDV []*fileTask
	for _, task := range s.tasks {
		recs, ok := task.add.NumRecords()
		if !task.recheck && ok {
			if dvec := task.add.DeletionVector; dvec != nil {
				recs -= dvec.Cardinality
				withDV = append(withDV, task)
			}
			n += recs
			lv.Add(skipping.MustMatch, task.add.Size)
			continue
		}
		lv.Add(skipping.MightMatch, task.add.Size)
		kept = append(kept, task)
	}
	rep.Levels = append(rep.Levels, lv)
	// A count answered from a vector's cardinality must not count rows the vector
	// names but the file does not have (dv V5): the vectors are loaded and checked.
	if err := s.checkDeletionVectors(ctx, withDV); err != nil {
		return 0, nil, err
	}
	cfg := s.cfg
	cfg.limit = 0
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
	for _, task := range s.tasks {
		if !task.recheck {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, r, err := s.openFileReport(ctx, task, datafile.ReadOptions{BatchSize: s.cfg.batchSize, Allocator: s.cfg.mem}, rep)
		if err != nil {
			return nil, err
		}
		s.decideFile(task, r, rep)
		r.Close()
		f.Close()
	}
	return rep, nil
}

// checkDeletionVectors loads the deletion vectors of tasks (several at once) and checks
// that each deletes only rows its file has, by the file's numRecords (dv V5): the one
// check the data-file reader makes against the footer, for files counted without being
// read.
func (s *Scan) checkDeletionVectors(ctx context.Context, tasks []*fileTask) error {
	errs := make([]error, len(tasks))
	storage.ForEachLimit(ctx, len(tasks), deletionVectorLoads, func(ctx context.Context, i int) {
		task := tasks[i]
		del, err := datafile.LoadDeletionVector(ctx, s.snap.store, task.add.DeletionVector)
		if err != nil {
			errs[i] = fmt.Errorf("table: deletion vector of %s: %w", task.path, err)
			return
		}
		n, _ := task.add.NumRecords()
		if err := del.CheckRows(n); err != nil {
			errs[i] = fmt.Errorf("table: version %d: %s: %w", s.snap.Version(), task.path, err)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// deletionVectorLoads bounds the deletion vectors a count loads at once (on an object
// store each is a GET).
const deletionVectorLoads = 16

// openFile opens a planned file and its footer. With the table's footer cache, a
// file whose footer is cached (under footerKey) is opened with its logged size
// (storage.OpenSized: no request on object stores) and its footer is not read again;
// a footer read from storage is cached when the object's size is the logged one. The
// report counts footers read and footers reused (ScanReport.Footers).
func (s *Scan) openFile(ctx context.Context, task *fileTask, opts datafile.ReadOptions) (storage.File, *datafile.Reader, error) {
	return s.openFileReport(ctx, task, opts, nil)
}

// openFileReport is openFile counting the footer in rep (nil: not counted).
func (s *Scan) openFileReport(ctx context.Context, task *fileTask, opts datafile.ReadOptions, rep *ScanReport) (storage.File, *datafile.Reader, error) {
	cache := s.snap.footers
	var key string
	var ft *datafile.Footer
	if cache != nil {
		key = footerKey(task.add, task.path)
		ft = cache.Get(key)
	}
	var (
		f   storage.File
		err error
	)
	if ft != nil {
		f, err = storage.OpenSized(ctx, s.snap.store, task.path, task.add.Size)
	} else {
		f, err = s.snap.store.Open(ctx, task.path)
	}
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			if task.change != nil {
				return nil, nil, task.change.missing(task.path)
			}
			return nil, nil, fmt.Errorf("%w: %s (referenced by version %d)", ErrMissingDataFile, task.path, s.snap.Version())
		}
		return nil, nil, fmt.Errorf("table: open %s: %w", task.path, err)
	}
	if ft != nil && ft.Size() != f.Size() {
		// Not the file the footer was read from: forget it and read this one's.
		cache.Remove(key)
		ft = nil
	}
	opts.Name = task.path
	opts.Footer = ft
	r, err := datafile.Open(f, f.Size(), opts)
	if err != nil {
		f.Close()
		if errors.Is(err, ErrInvalidDeletionVector) {
			return nil, nil, fmt.Errorf("table: version %d: %w", s.snap.Version(), err) // the error names the file
		}
		return nil, nil, fmt.Errorf("table: %w", err) // the error names the file
	}
	if ft != nil {
		rep.countFooter(false)
	} else {
		rep.countFooter(true)
		if cache != nil && f.Size() == task.add.Size {
			cache.Put(key, r.Footer())
		}
	}
	return f, r, nil
}

// rgUnit is one row group of a file to read: whole (ranges nil) or only the row
// ranges the page index left, with or without the exact recheck.
type rgUnit struct {
	rg      int
	ranges  []datafile.RowRange
	recheck bool
}

// decideFile decides a file's row groups from its footer statistics and Parquet
// Bloom filters (for equality and IN) and, for those
// still needing a recheck, its pages from the page index, records both levels in rep
// (the page level counts ROWS), and returns the units to read. Without a recheck the
// whole file is read. The recheck still runs on every row read where a level said only
// "might", so the result does not depend on these steps (S1, S2).
func (s *Scan) decideFile(task *fileTask, r *datafile.Reader, rep *ScanReport) []rgUnit {
	md := r.Metadata()
	if !task.recheck || s.table == nil {
		units := make([]rgUnit, md.NumRowGroups())
		for i := range units {
			units[i] = rgUnit{rg: i, recheck: task.recheck}
		}
		return units
	}
	colIndex := s.leafIndex(md)
	verdicts := skipping.EvaluateRowGroups(s.table, md, colIndex)
	if len(skipping.BloomProbeColumns(s.table)) > 0 {
		// Equality and IN: the row groups' Parquet Bloom filters may prove what the
		// footer statistics could not.
		for rg, v := range verdicts {
			if v == skipping.MightMatch && skipping.RowGroupBloomCannotMatch(s.table, r.ParquetReader(), rg, colIndex) {
				verdicts[rg] = skipping.CannotMatch
			}
		}
	}
	rgLv := skipping.LevelStats{Level: "rowgroup", Unit: skipping.UnitRowGroups}
	pgLv := skipping.LevelStats{Level: "page", Unit: skipping.UnitRows}
	var units []rgUnit
	for rg, v := range verdicts {
		rgLv.Add(v, rowGroupStoredBytes(md.RowGroup(rg)))
		switch v {
		case skipping.CannotMatch:
			continue
		case skipping.MustMatch:
			units = append(units, rgUnit{rg: rg})
			continue
		}
		n := md.RowGroup(rg).NumRows()
		pgLv.Total += n
		ranges, err := skipping.EvaluatePages(s.table, r.ParquetReader(), rg, colIndex)
		if err != nil {
			rep.warn(fmt.Sprintf("page index of %s row group %d unusable, row group read whole: %v", task.path, rg, err))
		}
		if err != nil || ranges.Rows() >= n {
			pgLv.Kept += n
			units = append(units, rgUnit{rg: rg, recheck: true})
			continue
		}
		pgLv.Kept += ranges.Rows()
		pgLv.Skipped += n - ranges.Rows()
		if len(ranges) == 0 {
			continue
		}
		want := make([]datafile.RowRange, len(ranges))
		for i, rr := range ranges {
			want[i] = datafile.RowRange{Start: rr.Start, End: rr.End}
		}
		units = append(units, rgUnit{rg: rg, ranges: want, recheck: true})
	}
	rep.addRowGroups(rgLv)
	rep.addPages(pgLv)
	return units
}

// rowGroupStoredBytes is a row group's size in the file: its compressed column
// chunks (the footer's total_compressed_size when the writer set it). The footer's
// total_byte_size is the uncompressed size, which can exceed the file's.
func rowGroupStoredBytes(rg *metadata.RowGroupMetaData) int64 {
	if n := rg.TotalCompressedSize(); n > 0 {
		return n
	}
	var n int64
	for c := 0; c < rg.NumColumns(); c++ {
		if cc, err := rg.ColumnChunk(c); err == nil {
			n += cc.TotalCompressedSize()
		}
	}
	return n
}

// leafIndex maps a bound column path (logical) to the file's leaf column index.
func (s *Scan) leafIndex(md *metadata.FileMetaData) func(path []string) int {
	leaf := skipping.LeafIndexByPath(md)
	mapper := s.mapper
	return func(path []string) int {
		phys, ok := mapPath(mapper, path)
		if !ok {
			return -1
		}
		return leaf(phys)
	}
}
