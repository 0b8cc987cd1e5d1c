package benchskip

import (
	"context"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/workload"
)

// Progress receives progress reports: stage names what is running
// ("generate", "order", "queries", or "layout <name>"), done of total units
// are finished. It is called from the goroutine running Run.
type Progress func(stage string, done, total int)

// Result is the outcome of a run. It is plain data, safe to marshal and to
// share once Run returns.
type Result struct {
	// Config is the configuration run, with defaults filled in.
	Config Config `json:"config"`
	// Rows is the number of rows of the dataset.
	Rows int `json:"rows"`
	// MaxRowsPerFile is ceil(Rows / Files), the divisor of the lower bound of
	// the equal-file layouts (LayoutInfo.MaxFileRows is each layout's own).
	MaxRowsPerFile int `json:"max_rows_per_file"`
	// TotalBytes is the estimated Arrow size of the whole dataset or, with
	// Config.ParquetBytes, the largest total Parquet size of any layout
	// (compression depends on the layout; each layout's BytesReadPct is
	// relative to its own total).
	TotalBytes int64 `json:"total_bytes"`
	// Layouts lists the layouts run, in order.
	Layouts []LayoutInfo `json:"layouts"`
	// Workloads lists the workloads run, in order (skipped ones excluded).
	Workloads []string `json:"workloads"`
	// Cells holds one entry per layout × workload, layout-major.
	Cells []Cell `json:"cells"`
	// Notes explains skipped workloads and other caveats.
	Notes []string `json:"notes,omitempty"`
	// Advice holds the advisor checks of Config.Advise.
	Advice []AdviceCheck `json:"advice,omitempty"`
}

// LayoutInfo describes one layout's files.
type LayoutInfo struct {
	// Name is the layout name.
	Name string `json:"name"`
	// BuildSeconds is the time to compute the layout's row order.
	BuildSeconds float64 `json:"build_seconds"`
	// StatsSeconds is the time to collect file and row-group statistics (and
	// Bloom filters when a workload needs them).
	StatsSeconds float64 `json:"stats_seconds"`
	// FileBoxes is each file's bounding box on the first two clustering
	// columns in rank space: X and Y are quantiles in [0, 1] (the fraction of
	// rows with a smaller value), so boxes are comparable across columns.
	// Empty when fewer than two clustering columns are configured.
	FileBoxes []Rect `json:"file_boxes,omitempty"`
	// MaxFileRows is the row count of the layout's largest file, the divisor of
	// its lower bound: MaxRowsPerFile for the equal-file layouts, somewhat more
	// for the workload layouts (their files vary within the tree's tolerance).
	MaxFileRows int `json:"max_file_rows"`
}

// Rect is an axis-aligned box in rank space.
type Rect struct {
	X0 float64 `json:"x0"`
	X1 float64 `json:"x1"`
	Y0 float64 `json:"y0"`
	Y1 float64 `json:"y1"`
}

// Cell is the figures of one layout on one workload. Means are over the
// workload's queries.
type Cell struct {
	// Layout and Workload name the cell.
	Layout   string `json:"layout"`
	Workload string `json:"workload"`
	// Queries is the number of queries run.
	Queries int `json:"queries"`
	// MatchingRows is the mean number of rows matching a query (exact).
	MatchingRows float64 `json:"matching_rows"`
	// LowerBound is the mean of ceil(matching rows / LayoutInfo.MaxFileRows):
	// no layout of this many files of at most that size can read fewer files.
	LowerBound float64 `json:"lower_bound"`
	// FilesRead is the mean number of files whose statistics (and Bloom
	// filter, for "+bloom" workloads) cannot rule the query out.
	FilesRead float64 `json:"files_read"`
	// FilesReadPct is FilesRead as a percentage of the files.
	FilesReadPct float64 `json:"files_read_pct"`
	// BytesReadPct is the mean estimated bytes of the files read as a
	// percentage of all bytes.
	BytesReadPct float64 `json:"bytes_read_pct"`
	// RatioGeoMean and RatioP90 are the geometric mean and 90th percentile
	// (nearest rank) over queries of max(files read, 1) / max(lower bound, 1):
	// 1 is optimal, and a query matching nothing scores the files it reads.
	RatioGeoMean float64 `json:"ratio_geomean"`
	RatioP90     float64 `json:"ratio_p90"`
	// RatioEqualFiles is RatioGeoMean against the bound of equal files,
	// ceil(matching rows / Result.MaxRowsPerFile), the same for every layout of
	// this many files (it equals RatioGeoMean for the equal-file layouts).
	RatioEqualFiles float64 `json:"ratio_equal_files"`
	// RowGroupsRead is the mean number of row groups of read files whose
	// statistics cannot rule the query out; RowGroupsReadPct relates it to
	// all row groups.
	RowGroupsRead    float64 `json:"row_groups_read"`
	RowGroupsReadPct float64 `json:"row_groups_read_pct"`
	// PlanMicros is the mean planning time per query in microseconds: file
	// verdicts from the statistics index plus Bloom probes.
	PlanMicros float64 `json:"plan_us"`
	// CrossCheckMismatches counts (query, file) pairs where package
	// skipping's verdict and the direct box-intersection test on the typed
	// min/max disagree; 0 when both are right.
	CrossCheckMismatches int `json:"cross_check_mismatches"`
	// PerQuery holds each query's figures when Config.PerQuery is set.
	PerQuery []QueryFigures `json:"per_query,omitempty"`
}

// QueryFigures is one query's outcome on one layout.
type QueryFigures struct {
	// Predicate is the filter, in expr.Parse syntax.
	Predicate string `json:"predicate"`
	// MatchingRows is the exact number of matching rows.
	MatchingRows int64 `json:"matching_rows"`
	// LowerBound is ceil(MatchingRows / LayoutInfo.MaxFileRows).
	LowerBound int `json:"lower_bound"`
	// FilesRead, RowGroupsRead and BytesRead are what the layout reads.
	FilesRead     int   `json:"files_read"`
	RowGroupsRead int   `json:"row_groups_read"`
	BytesRead     int64 `json:"bytes_read"`
	// PlanMicros is the planning time in microseconds.
	PlanMicros float64 `json:"plan_us"`
}

// Cell returns the cell of layout × workload, or nil.
func (r *Result) Cell(layout, workload string) *Cell {
	for i := range r.Cells {
		if r.Cells[i].Layout == layout && r.Cells[i].Workload == workload {
			return &r.Cells[i]
		}
	}
	return nil
}

// prepared is the layout-independent part of a run: the dataset with order
// codes, and the queries of every workload.
type prepared struct {
	cfg         Config
	d           *dataset
	cl          []*column
	unclustered *column
	key         *column
	count       *countIndex
	workloads   []string
	queries     [][]*query
	needBloom   bool
	notes       []string
	train       *workload.Workload // training queries of the workload layouts
	// statsColumns are the columns that get statistics: those the queries
	// reference (skipping never looks at others).
	statsColumns []string
}

// prepare generates the dataset and the queries.
func prepare(ctx context.Context, cfg Config, progress Progress) (*prepared, error) {
	p := &prepared{cfg: cfg}
	needed := slices.Clone(cfg.Columns)
	for _, c := range []string{cfg.Unclustered, cfg.KeyColumn} {
		if !slices.Contains(needed, c) {
			needed = append(needed, c)
		}
	}
	p.statsColumns = needed
	keep := keepSet(needed)
	if cfg.ParquetBytes {
		keep = keepSet(nil) // Parquet files hold every column
	}
	progress("generate", 0, 1)
	mem := memory.NewGoAllocator()
	var err error
	if cfg.Dataset == DatasetSynthetic {
		p.d, err = genSynthetic(mem, cfg.Rows, cfg.Seed, keep)
	} else {
		p.d, err = genLineitem(mem, cfg.ScaleFactor, cfg.numRows(), cfg.Seed, keep)
	}
	if err != nil {
		return nil, err
	}
	progress("generate", 1, 1)
	for i, name := range needed {
		if err := ctx.Err(); err != nil {
			p.d.release()
			return nil, err
		}
		p.d.col(name).buildOrder()
		progress("order", i+1, len(needed))
	}
	for _, name := range cfg.Columns {
		p.cl = append(p.cl, p.d.col(name))
	}
	p.unclustered, p.key = p.d.col(cfg.Unclustered), p.d.col(cfg.KeyColumn)
	p.count = newCountIndex(p.cl, p.d.rows)
	if slices.ContainsFunc(cfg.Layouts, workloadLayout) {
		if p.train, err = p.trainingWorkload(); err != nil {
			p.d.release()
			return nil, err
		}
	}
	for i, name := range cfg.Workloads {
		w, _ := ParseWorkload(name) // validated
		qs, note, err := p.genQueries(w, name, cfg.Queries, cfg.Seed)
		if err != nil {
			p.d.release()
			return nil, err
		}
		if note != "" {
			p.notes = append(p.notes, name+": "+note)
			continue
		}
		p.needBloom = p.needBloom || w.Bloom
		p.workloads = append(p.workloads, name)
		p.queries = append(p.queries, qs)
		progress("queries", i+1, len(cfg.Workloads))
	}
	return p, nil
}

// layoutFiles is one layout's files: their statistics, sizes and filters.
type layoutFiles struct {
	perm      []int32
	fileStart []int
	rgStart   []int
	fileStats []*stats.File
	rgStats   []*stats.File
	fileBytes []int64
	filters   []*bloom.Filter
	build     time.Duration
	collect   time.Duration
	maxRows   int // rows of the largest file
}

// buildLayout orders the rows and collects per-file and per-row-group
// statistics with stats.Collector over Arrow batches of the files' rows.
func (p *prepared) buildLayout(ctx context.Context, name string, progress Progress) (*layoutFiles, error) {
	cfg := p.cfg
	stage := "layout " + name
	start := time.Now()
	var perm []int32
	var starts []int // file starts; nil: equal files
	var err error
	if workloadLayout(name) {
		perm, starts, err = p.treeLayout(ctx, name == LayoutWorkloadRobust)
	} else {
		perm, err = layoutPerm(name, p.d, p.cl, cfg.Files, cfg.RowGroups, cfg.Seed)
	}
	if err != nil {
		return nil, err
	}
	lf := &layoutFiles{perm: perm, build: time.Since(start)}
	start = time.Now()
	lf.fileStart, lf.rgStart = fileRanges(p.d.rows, cfg.Files, cfg.RowGroups, starts)
	for f := range cfg.Files {
		lf.maxRows = max(lf.maxRows, lf.fileStart[f+1]-lf.fileStart[f])
	}
	mem := memory.NewGoAllocator()
	// Files go through the data-file layer: its Summary gives the statistics and
	// Bloom filter a file's add action and index entry would carry; with
	// ParquetBytes the file is encoded too (into memory, deleted once measured),
	// with the row groups cut exactly where the layout says.
	spec := datafile.Spec{Schema: p.d.schema, Stats: stats.Config{StatsColumns: p.statsColumns}, RowGroupBytes: 1 << 40,
		Parallelism: 1, Allocator: mem}
	if p.needBloom {
		spec.BloomColumns, spec.BloomFPP = []string{cfg.KeyColumn}, cfg.BloomFPP
	}
	store := storage.NewMemory()
	out, err := datafile.NewOutput(store, spec)
	if err != nil {
		return nil, errorf(ErrInternal, "layout %s: %v", name, err)
	}
	rgCfg := stats.Config{StatsColumns: p.statsColumns}
	for f := range cfg.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var pf *datafile.File
		var sum *datafile.Summary
		if cfg.ParquetBytes {
			if pf, err = out.Create(ctx, datafile.FileOptions{}); err != nil {
				return nil, errorf(ErrInternal, "layout %s file %d: parquet: %v", name, f, err)
			}
			sum = pf.Summary()
		} else if sum, err = out.NewSummary(); err != nil {
			return nil, errorf(ErrInternal, "layout %s file %d: %v", name, f, err)
		}
		var size int64
		for g := f * cfg.RowGroups; g < (f+1)*cfg.RowGroups; g++ {
			rows := perm[lf.rgStart[g]:lf.rgStart[g+1]]
			if pf == nil {
				for _, r := range rows {
					size += int64(p.d.rowBytes[r])
				}
			}
			rec, err := p.d.gather(mem, rows)
			if err != nil {
				if pf != nil {
					pf.Abort()
				}
				return nil, err
			}
			rc, err := stats.NewCollector(p.d.schema, nil, rgCfg)
			if err == nil {
				err = rc.Update(rec)
			}
			if err == nil && pf != nil {
				err = pf.Write(rec)
				if err == nil {
					err = pf.FlushRowGroup()
				}
			} else if err == nil {
				err = sum.Update(rec)
			}
			rec.Release()
			if err != nil {
				if pf != nil {
					pf.Abort()
				}
				return nil, errorf(ErrInternal, "layout %s file %d row group %d: %v", name, f, g-f*cfg.RowGroups, err)
			}
			lf.rgStats = append(lf.rgStats, rc.Result())
		}
		var filters []bloom.Entry
		if pf != nil {
			add, err := pf.Close(ctx)
			if err != nil {
				return nil, errorf(ErrInternal, "layout %s file %d: parquet: %v", name, f, err)
			}
			size = add.Size
			if path, err := add.DecodedPath(); err == nil {
				_ = store.Delete(ctx, path)
			}
			filters = pf.Filters()
		} else if filters, err = sum.Filters(""); err != nil {
			return nil, errorf(ErrInternal, "layout %s file %d: bloom: %v", name, f, err)
		}
		lf.fileStats = append(lf.fileStats, sum.Stats())
		lf.fileBytes = append(lf.fileBytes, size)
		if p.needBloom {
			lf.filters = append(lf.filters, filters[0].Filter)
		}
		progress(stage, f+1, cfg.Files)
	}
	lf.collect = time.Since(start)
	return lf, nil
}

// fileBoxes returns each file's bounding box on the first two clustering
// columns in rank (quantile) space.
func (p *prepared) fileBoxes(lf *layoutFiles) []Rect {
	if len(p.cl) < 2 {
		return nil
	}
	cx, cy := p.cl[0], p.cl[1]
	n := float64(p.d.rows)
	out := make([]Rect, 0, len(lf.fileStart)-1)
	for f := range len(lf.fileStart) - 1 {
		x0, x1, y0, y1 := uint32(math.MaxUint32), uint32(0), uint32(math.MaxUint32), uint32(0)
		for _, r := range lf.perm[lf.fileStart[f]:lf.fileStart[f+1]] {
			x0, x1 = min(x0, cx.codes[r]), max(x1, cx.codes[r])
			y0, y1 = min(y0, cy.codes[r]), max(y1, cy.codes[r])
		}
		out = append(out, Rect{
			X0: float64(cx.cum[x0]) / n, X1: float64(cx.cum[x1+1]) / n,
			Y0: float64(cy.cum[y0]) / n, Y1: float64(cy.cum[y1+1]) / n,
		})
	}
	return out
}

// evaluated is the outcome of one query on one layout.
type evaluated struct {
	fig        QueryFigures
	fileRead   []bool
	mismatches int
}

// evaluate plans q against a layout's files: file verdicts from
// skipping.FileIndex (plus Bloom probes), row-group verdicts for the files
// read, and the direct box-intersection cross-check.
func (p *prepared) evaluate(q *query, lf *layoutFiles, fi, ri *skipping.FileIndex, fv, rv []skipping.Verdict) (evaluated, error) {
	var ev evaluated
	start := time.Now()
	if err := fi.Evaluate(q.bound, fv); err != nil {
		return ev, errorf(ErrInternal, "evaluate %q: %v", q.text, err)
	}
	ev.fileRead = make([]bool, len(fv))
	for i, v := range fv {
		if v == skipping.CannotMatch || (q.bloom && !lf.filters[i].MightContainProbe(&q.probe)) {
			continue
		}
		ev.fileRead[i] = true
		ev.fig.FilesRead++
		ev.fig.BytesRead += lf.fileBytes[i]
	}
	ev.fig.PlanMicros = float64(time.Since(start).Nanoseconds()) / 1e3
	if err := ri.Evaluate(q.bound, rv); err != nil {
		return ev, errorf(ErrInternal, "evaluate row groups %q: %v", q.text, err)
	}
	groups := p.cfg.RowGroups
	for g, v := range rv {
		if v != skipping.CannotMatch && ev.fileRead[g/groups] {
			ev.fig.RowGroupsRead++
		}
	}
	for i, v := range fv {
		if (v != skipping.CannotMatch) != boxMightMatch(lf.fileStats[i], q.terms) {
			ev.mismatches++
		}
	}
	ev.fig.Predicate = q.text
	ev.fig.MatchingRows = q.matching
	maxRows := int64(max(lf.maxRows, 1))
	ev.fig.LowerBound = int((q.matching + maxRows - 1) / maxRows)
	return ev, nil
}

// Run generates the dataset, builds every layout, runs every workload and
// returns the figures. It honours ctx between files and between queries.
// progress may be nil. Run is deterministic for a given Config apart from
// timings.
func Run(ctx context.Context, cfg Config, progress Progress) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if progress == nil {
		progress = func(string, int, int) {}
	}
	p, err := prepare(ctx, cfg, progress)
	if err != nil {
		return nil, err
	}
	defer p.d.release()
	res := &Result{
		Config:         cfg,
		Rows:           p.d.rows,
		MaxRowsPerFile: (p.d.rows + cfg.Files - 1) / cfg.Files,
		Workloads:      p.workloads,
		Notes:          p.notes,
	}
	if !cfg.ParquetBytes {
		for _, b := range p.d.rowBytes {
			res.TotalBytes += int64(b)
		}
	}
	for _, name := range cfg.Layouts {
		lf, err := p.buildLayout(ctx, name, progress)
		if err != nil {
			return nil, err
		}
		res.Layouts = append(res.Layouts, LayoutInfo{
			Name: name, BuildSeconds: lf.build.Seconds(), StatsSeconds: lf.collect.Seconds(),
			FileBoxes: p.fileBoxes(lf), MaxFileRows: lf.maxRows,
		})
		var layoutBytes int64
		for _, b := range lf.fileBytes {
			layoutBytes += b
		}
		if cfg.ParquetBytes {
			res.TotalBytes = max(res.TotalBytes, layoutBytes) // reported: the largest layout
		}
		fi := skipping.NewFileIndex(lf.fileStats, p.d.schema)
		ri := skipping.NewFileIndex(lf.rgStats, p.d.schema)
		fv := make([]skipping.Verdict, fi.Len())
		rv := make([]skipping.Verdict, ri.Len())
		for wi, wname := range p.workloads {
			cell := Cell{Layout: name, Workload: wname, Queries: len(p.queries[wi])}
			ratios := make([]float64, 0, cell.Queries)
			eqRatios := make([]float64, 0, cell.Queries)
			for _, q := range p.queries[wi] {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				ev, err := p.evaluate(q, lf, fi, ri, fv, rv)
				if err != nil {
					return nil, errorf(ErrInternal, "layout %s workload %s: %v", name, wname, err)
				}
				fig := ev.fig
				cell.MatchingRows += float64(fig.MatchingRows)
				cell.LowerBound += float64(fig.LowerBound)
				cell.FilesRead += float64(fig.FilesRead)
				cell.BytesReadPct += float64(fig.BytesRead)
				cell.RowGroupsRead += float64(fig.RowGroupsRead)
				cell.PlanMicros += fig.PlanMicros
				cell.CrossCheckMismatches += ev.mismatches
				ratios = append(ratios, float64(max(fig.FilesRead, 1))/float64(max(fig.LowerBound, 1)))
				eqBound := (fig.MatchingRows + int64(res.MaxRowsPerFile) - 1) / int64(res.MaxRowsPerFile)
				eqRatios = append(eqRatios, float64(max(fig.FilesRead, 1))/float64(max(eqBound, 1)))
				if cfg.PerQuery {
					cell.PerQuery = append(cell.PerQuery, fig)
				}
			}
			if nq := float64(cell.Queries); nq > 0 {
				cell.MatchingRows /= nq
				cell.LowerBound /= nq
				cell.FilesRead /= nq
				cell.BytesReadPct = 100 * cell.BytesReadPct / nq / float64(layoutBytes)
				cell.RowGroupsRead /= nq
				cell.PlanMicros /= nq
				cell.FilesReadPct = 100 * cell.FilesRead / float64(cfg.Files)
				cell.RowGroupsReadPct = 100 * cell.RowGroupsRead / float64(cfg.Files*cfg.RowGroups)
				cell.RatioGeoMean, cell.RatioP90 = geoMean(ratios), percentile(ratios, 0.9)
				cell.RatioEqualFiles = geoMean(eqRatios)
			}
			res.Cells = append(res.Cells, cell)
		}
	}
	if cfg.Advise {
		if res.Advice, err = p.checkAdvice(ctx, progress); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// geoMean returns the geometric mean of positive xs (0 for none).
func geoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

// percentile returns the nearest-rank p-quantile of xs (0 for none).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
