package advise

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// Defaults of Options.
const (
	// DefaultMaxColumns is how many of the candidate columns (by weight) are
	// combined into multi-column candidates; every other candidate column gets a
	// plain sort.
	DefaultMaxColumns = 4
	// DefaultRobustness is the blend of the robust workload-tree candidate.
	DefaultRobustness = 0.2
	// MinSampleRowsPerFile is the fewest sample rows a simulated file gets: with a
	// small sample the simulation uses fewer files than the table would have (see
	// Report.SimulatedFiles).
	MinSampleRowsPerFile = 50
	// DefaultSampleRowsPerFile sizes the default sample: this many rows per file
	// of the layouts, within [MinDefaultSample, MaxDefaultSample].
	DefaultSampleRowsPerFile = 200
	// TreeSampleRowsPerLeaf and MinTreeSample size the rows a workload tree is
	// built on when the sample is larger (the tree then routes every sample row).
	TreeSampleRowsPerLeaf = 1000
	MinTreeSample         = 100_000
	// MinCrossValidationQueries is the smallest workload whose trees are scored
	// by cross-validation (see Options.NoCrossValidation).
	MinCrossValidationQueries = 20
	// MinDefaultSample and MaxDefaultSample bound the default sample size.
	MinDefaultSample = 100_000
	MaxDefaultSample = 2_000_000
)

// Candidate kinds.
const (
	KindCurrent  = "current"
	KindLinear   = "linear"
	KindZOrder   = "zorder"
	KindHilbert  = "hilbert"
	KindWorkload = "workload"
	// KindLiquid is a liquid-clustered table's own clustering: OPTIMIZE
	// clusters it on a Hilbert curve over its clustering columns.
	KindLiquid = "liquid"
)

// Options configures Simulate and Table. The zero value works: candidates on
// the workload's four heaviest columns, the table's target file size.
type Options struct {
	// Files is the number of files the candidate layouts have (default, for
	// Table: the table's bytes over TargetFileSize when TargetFileSize is set,
	// else the current layout's file count, so that candidates and the current
	// layout are compared at equal file counts; required for Simulate). With
	// another count the current layout is listed but never recommended.
	Files int
	// TargetFileSize is the file size OPTIMIZE would aim for (default the table
	// property delta.targetFileSize, else 128 MiB): Table plans each candidate's
	// OPTIMIZE with it and, when set, sizes the candidates by it. Only Table
	// uses it.
	TargetFileSize int64
	// SampleRows is the sample size Table draws (default: DefaultSampleRowsPerFile
	// rows per file, within [MinDefaultSample, MaxDefaultSample], at most the
	// table's rows).
	SampleRows int
	// Columns are the columns candidate layouts may cluster on (default: every
	// column the workload filters on that can be clustered, heaviest first).
	Columns []string
	// MaxColumns is how many of Columns, heaviest first, are combined into
	// multi-column candidates (default DefaultMaxColumns, at most 4); each other
	// column is a single-column sort candidate.
	MaxColumns int
	// Robustness is the generic-query blend of the robust workload candidate
	// (default DefaultRobustness; negative: no robust candidate).
	Robustness float64
	// NoCrossValidation scores workload trees on the queries they are built
	// from. By default a workload of at least MinCrossValidationQueries queries
	// scores them by two-fold cross-validation (built on half the queries, scored
	// on the other half), which predicts how they serve queries of the same kind
	// that the file does not list; a workload that lists exactly the recurring
	// queries may set this.
	NoCrossValidation bool
	// Holdout, if set, is the workload candidates are scored on, while the
	// workload trees are built from the workload given to Simulate or Table: an
	// evaluation on queries the trees did not see (same columns expected).
	Holdout *workload.Workload
	// Seed seeds sampling and the trees' generic queries.
	Seed uint64
	// Table and Queries are the table path and workload file named in the
	// commands of the report (default "TABLE" and "QUERIES").
	Table, Queries string
	// Progress, if set, is told what runs: stage names a step ("sample",
	// "candidates"), done of total units are finished.
	Progress func(stage string, done, total int)
}

// Report is the advisor's result: one row per candidate, best first. It is plain
// data, safe to marshal.
type Report struct {
	// Rows is the table's row count (or the sample's, for Simulate).
	Rows int64 `json:"rows"`
	// SampleRows is the number of rows the candidates were simulated on.
	SampleRows int `json:"sampleRows"`
	// Files is the number of files the candidate layouts would have.
	Files int `json:"files"`
	// SimulatedFiles is the number of files the simulation cut the sample into:
	// Files, or fewer when the sample has under MinSampleRowsPerFile rows per
	// file (figures then describe that coarser layout; relative order of
	// candidates holds, absolute percentages are higher than the table would see).
	SimulatedFiles int `json:"simulatedFiles"`
	// Queries and Weight describe the workload; Fingerprint identifies it.
	Queries     int     `json:"queries"`
	Weight      float64 `json:"weight"`
	Fingerprint string  `json:"fingerprint"`
	// Columns are the columns candidates cluster on.
	Columns []string `json:"columns"`
	// Candidates are the layouts, by increasing predicted files read.
	Candidates []Candidate `json:"candidates"`
	// Best is the recommended candidate: the first, unless the current layout,
	// compared at the same file count, is within 2% of it (then the current
	// layout: no rewrite, and a warning says so). nil when Table found no
	// candidate OPTIMIZE accepts and no comparable current layout.
	Best *Candidate `json:"best"`
	// Drift compares the workload with the one the table's current workload tree
	// was built for, when it has one.
	Drift *qdtree.Drift `json:"drift,omitempty"`
	// Notes explain caveats (scaling, skipped candidates).
	Notes []string `json:"notes,omitempty"`
	// Warnings say when no rewrite is worth its cost: no candidate reads
	// noticeably fewer files than the current layout.
	Warnings []string `json:"warnings,omitempty"`
	// Trees are the workload trees built for the workload candidates, by name
	// (not marshalled).
	Trees map[string]*qdtree.Tree `json:"-"`
}

// Candidate is one layout's predicted figures. Figures are weighted means over
// the workload's queries.
type Candidate struct {
	// Name identifies the candidate: "current", "workload", "workload-robust",
	// or a curve and its columns, "hilbert(a,b)".
	Name string `json:"name"`
	// Kind is KindCurrent, KindLinear, KindZOrder, KindHilbert or KindWorkload.
	Kind string `json:"kind"`
	// Columns are the clustering (or cut) columns.
	Columns []string `json:"columns,omitempty"`
	// Robustness is the generic-query blend of a workload tree.
	Robustness float64 `json:"robustness,omitempty"`
	// Files is the candidate's number of files.
	Files int `json:"files"`
	// FilesRead and FilesReadPct are the predicted files a query reads.
	FilesRead    float64 `json:"filesRead"`
	FilesReadPct float64 `json:"filesReadPct"`
	// RowsReadPct is the predicted share of rows in the files read (bytes, if
	// rows are of similar size).
	RowsReadPct float64 `json:"rowsReadPct"`
	// LowerBound is the mean of ceil(matching rows / rows of the largest file):
	// no layout of files this size reads fewer.
	LowerBound float64 `json:"lowerBound"`
	// RatioGeoMean and RatioP90 are the geometric mean and 90th percentile of
	// max(files read, 1) / max(lower bound, 1).
	RatioGeoMean float64 `json:"ratioGeoMean"`
	RatioP90     float64 `json:"ratioP90"`
	// Command applies the layout ("" for the current one).
	Command string `json:"command,omitempty"`

	boxes [][4]float64 // simulated files' boxes on the first two columns, in quantile space
	// namedColumns: a workload tree's command names its columns
	// (--workload-columns); otherwise OPTIMIZE picks the same ones itself.
	namedColumns bool
}

// Simulate ranks candidate layouts for sample, taken as the whole table: every
// candidate cuts its rows into opts.Files files (required), and the current
// layout is not among them. The workload binds to the sample's schema.
func Simulate(ctx context.Context, sample arrow.RecordBatch, w *workload.Workload, opts Options) (*Report, error) {
	if sample == nil || w == nil || w.Len() == 0 {
		return nil, fmt.Errorf("%w: empty sample or workload", ErrInvalidOptions)
	}
	if opts.Files < 1 {
		return nil, fmt.Errorf("%w: Files %d, want at least 1", ErrInvalidOptions, opts.Files)
	}
	rep := &Report{Rows: sample.NumRows()}
	if _, err := simulate(ctx, sample, w, nil, opts, rep); err != nil {
		return nil, err
	}
	rep.finish(nil, false)
	return rep, nil
}

// optimizeTreeColumns returns the columns `optimize --layout workload
// --workload-columns named` cuts (optimize's tree columns): named, then the
// other columns the workload filters on, by weight, that are data columns of
// the table (not partition columns) a tree can cut.
func optimizeTreeColumns(sch *arrow.Schema, w *workload.Workload, partCols, named []string) []string {
	var out []string
	add := func(name string) {
		i := fieldIndex(sch, name)
		if i < 0 || !qdtree.Cuttable(sch.Field(i).Type) ||
			slices.ContainsFunc(partCols, func(p string) bool { return strings.EqualFold(p, name) }) ||
			slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, name) }) {
			return
		}
		out = append(out, sch.Field(i).Name)
	}
	for _, c := range named {
		add(c)
	}
	for _, cu := range w.Columns() {
		add(cu.Column)
	}
	return out
}

// candidateColumns resolves the columns candidates cluster on.
func candidateColumns(sch *arrow.Schema, w *workload.Workload, partCols []string, opts Options) ([]string, error) {
	isPart := func(n string) bool {
		return slices.ContainsFunc(partCols, func(p string) bool { return strings.EqualFold(p, n) })
	}
	if len(opts.Columns) > 0 {
		var out []string
		for _, c := range opts.Columns {
			i := fieldIndex(sch, c)
			switch {
			case i < 0:
				return nil, fmt.Errorf("%w: column %q is not in the table", ErrInvalidOptions, c)
			case isPart(c):
				return nil, fmt.Errorf("%w: column %q is a partition column", ErrInvalidOptions, c)
			case !qdtree.Cuttable(sch.Field(i).Type):
				return nil, fmt.Errorf("%w: column %q of type %s cannot be clustered on", ErrInvalidOptions, c, value.DisplayType(sch.Field(i).Type))
			}
			out = append(out, sch.Field(i).Name)
		}
		return out, nil
	}
	// Every column the workload weighs that can be clustered on: a column left
	// out here could be the one a layout should lead with.
	var out []string
	for _, cu := range w.Columns() {
		i := fieldIndex(sch, cu.Column)
		if i < 0 || isPart(cu.Column) || !qdtree.Cuttable(sch.Field(i).Type) {
			continue
		}
		out = append(out, sch.Field(i).Name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the workload filters on no column that can be clustered on", ErrNoColumns)
	}
	return out, nil
}

// simulate scores every candidate on the sample and fills rep.
func simulate(ctx context.Context, sample arrow.RecordBatch, w *workload.Workload, partCols []string, opts Options, rep *Report) (*sim, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	cols, err := candidateColumns(sample.Schema(), w, partCols, opts)
	if err != nil {
		return nil, err
	}
	scored := w
	if opts.Holdout != nil {
		scored = opts.Holdout
	}
	s, err := newSim(sample, scored, partCols)
	if err != nil {
		return nil, err
	}
	s.train = w
	rep.SampleRows = s.n
	rep.Files = opts.Files
	rep.SimulatedFiles = opts.Files
	if maxFiles := max(1, s.n/MinSampleRowsPerFile); rep.SimulatedFiles > maxFiles {
		rep.SimulatedFiles = maxFiles
		rep.Notes = append(rep.Notes, fmt.Sprintf("the sample of %d rows supports %d simulated files (at least %d rows each), not %d: figures are for %d files",
			s.n, maxFiles, MinSampleRowsPerFile, opts.Files, maxFiles))
	}
	rep.Queries, rep.Weight, rep.Fingerprint, rep.Columns = scored.Len(), scored.TotalWeight(), scored.Fingerprint(), cols
	colIdx := make([]int, len(cols))
	for i, c := range cols {
		colIdx[i] = fieldIndex(sample.Schema(), c)
	}
	type spec struct {
		name  string
		kind  string
		curve optimize.Curve
		cols  []int
		rob   float64
	}
	var specs []spec
	// Column sets: every non-empty subset of the MaxColumns heaviest candidate
	// columns (in weight order), and a plain sort on each other column; one
	// column is a plain sort whatever the curve.
	maxCols := opts.MaxColumns
	if maxCols <= 0 || maxCols > 4 {
		maxCols = DefaultMaxColumns
	}
	combined := min(len(cols), maxCols)
	for mask := 1; mask < 1<<combined; mask++ {
		var set []int
		for i := range cols {
			if mask&(1<<i) != 0 {
				set = append(set, i)
			}
		}
		if len(set) == 1 {
			specs = append(specs, spec{kind: KindLinear, curve: optimize.CurveLinear, cols: set})
			continue
		}
		for _, c := range []struct {
			kind  string
			curve optimize.Curve
		}{{KindLinear, optimize.CurveLinear}, {KindZOrder, optimize.CurveZOrder}, {KindHilbert, optimize.CurveHilbert}} {
			specs = append(specs, spec{kind: c.kind, curve: c.curve, cols: set})
		}
	}
	for i := combined; i < len(cols); i++ {
		specs = append(specs, spec{kind: KindLinear, curve: optimize.CurveLinear, cols: []int{i}})
	}
	rob := opts.Robustness
	if rob == 0 {
		rob = DefaultRobustness
	}
	specs = append(specs, spec{name: "workload", kind: KindWorkload})
	if rob > 0 {
		specs = append(specs, spec{name: "workload-robust", kind: KindWorkload, rob: rob})
	}
	rep.Trees = map[string]*qdtree.Tree{}
	// A workload tree scored on the very queries it was built for flatters it;
	// with enough queries it is scored by cross-validation instead.
	cv := opts.Holdout == nil && !opts.NoCrossValidation && scored.Len() >= MinCrossValidationQueries
	crossScores := map[int]score{}
	if cv {
		rep.Notes = append(rep.Notes, "workload trees are scored by two-fold cross-validation: built on half of the queries, scored on the other half")
	}
	for i, sp := range specs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		progress("candidates", i, len(specs))
		c := Candidate{Kind: sp.kind, Robustness: sp.rob}
		var l layout
		if sp.kind == KindWorkload {
			c.Name, c.Columns = sp.name, cols
			var tr *qdtree.Tree
			// Both trees cut the columns `optimize --layout workload` would
			// with the candidate's command: the candidate columns, then the
			// workload's other columns (optimize's tree columns); columns the
			// workload never filters get the tree's reserved cuts
			// (qdtree.Options.Unfiltered), the robust tree also generic queries.
			treeCols := optimizeTreeColumns(sample.Schema(), w, partCols, cols)
			c.namedColumns = sp.rob > 0 || !slices.Equal(treeCols, optimizeTreeColumns(sample.Schema(), w, partCols, nil))
			l, tr, err = s.treeLayout(ctx, treeCols, sp.rob, rep.SimulatedFiles, opts.Seed)
			if err != nil {
				return nil, err
			}
			rep.Trees[c.Name] = tr
			c.Columns = tr.Columns
			if cv {
				// Scored by two-fold cross-validation: a tree built on half of the
				// queries reads the files it reads for the other half.
				qs, err := s.crossValidate(ctx, treeCols, sp.rob, rep.SimulatedFiles, opts.Seed)
				if err != nil {
					return nil, err
				}
				crossScores[len(rep.Candidates)] = aggregate(qs)
			}
		} else {
			var names []string
			var idx []int
			for _, k := range sp.cols {
				names = append(names, cols[k])
				idx = append(idx, colIdx[k])
			}
			c.Columns = names
			c.Name = sp.kind + "(" + strings.Join(names, ",") + ")"
			if len(names) == 1 {
				c.Name = "sort(" + names[0] + ")"
			}
			if l, err = s.curveLayout(ctx, sp.curve, idx, rep.SimulatedFiles); err != nil {
				return nil, err
			}
		}
		sc, err := s.score(l)
		if err != nil {
			return nil, err
		}
		if x, ok := crossScores[len(rep.Candidates)]; ok {
			sc = x
		}
		if len(colIdx) >= 2 {
			if c.boxes, err = s.fileBoxes(l, colIdx[0], colIdx[1]); err != nil {
				return nil, err
			}
		}
		c.Files = l.nfiles
		c.fill(sc)
		c.Command = command(c, opts)
		rep.Candidates = append(rep.Candidates, c)
	}
	progress("candidates", len(specs), len(specs))
	return s, nil
}

func (c *Candidate) fill(sc score) {
	c.FilesRead = sc.filesRead
	c.FilesReadPct = 100 * sc.filesRead / float64(max(c.Files, 1))
	c.RowsReadPct = 100 * sc.bytesRead
	c.LowerBound = sc.lowerBound
	c.RatioGeoMean, c.RatioP90 = sc.ratioGeoMean, sc.ratioP90
}

// command renders the CLI command that applies a candidate.
func command(c Candidate, opts Options) string {
	tbl, q := tableName(opts), opts.Queries
	if q == "" {
		q = "QUERIES"
	}
	quote := quoteArg
	cols := quote(strings.Join(c.Columns, ","))
	base := "skiplake optimize " + quote(tbl) + " "
	switch c.Kind {
	case KindLinear:
		return base + "--sort-by " + cols + " --full"
	case KindZOrder:
		return base + "--zorder-by " + cols + " --full"
	case KindHilbert:
		return base + "--hilbert-by " + cols + " --full"
	case KindLiquid:
		return base + "--full"
	case KindWorkload:
		cmd := base + "--layout workload --queries " + quote(q)
		if c.Robustness > 0 {
			cmd += fmt.Sprintf(" --robustness %g", c.Robustness)
		}
		if c.namedColumns {
			cmd += " --workload-columns " + cols
		}
		return cmd + " --full"
	}
	return ""
}

// tableName is the table named in commands.
func tableName(opts Options) string {
	if opts.Table == "" {
		return "TABLE"
	}
	return opts.Table
}

// quoteArg quotes s for a POSIX shell when it needs it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"$`\\;&|<>*?()[]{}#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// finish sorts the candidates and picks the best. current, if not nil, is the
// current layout's candidate; comparable says it has as many files as the
// simulated candidates (otherwise it is listed but not recommended).
func (r *Report) finish(current *Candidate, comparable bool) {
	if current != nil {
		r.Candidates = append(r.Candidates, *current)
	}
	slices.SortStableFunc(r.Candidates, func(a, b Candidate) int {
		switch {
		case a.FilesReadPct < b.FilesReadPct:
			return -1
		case a.FilesReadPct > b.FilesReadPct:
			return 1
		}
		return 0
	})
	var best, cur *Candidate
	for i := range r.Candidates {
		c := &r.Candidates[i]
		switch {
		case c.Kind == KindCurrent:
			cur = c
		case best == nil:
			best = c
		}
	}
	if cur != nil && comparable && (best == nil || cur.FilesReadPct <= best.FilesReadPct*1.02) {
		if best != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("a rewrite would gain nothing: the best candidate, %s, reads %.2f%% of files, the current layout %.2f%% (within 2%%)",
				best.Name, best.FilesReadPct, cur.FilesReadPct))
		} else {
			r.Warnings = append(r.Warnings, "a rewrite would gain nothing: OPTIMIZE accepts no candidate layout on this table")
		}
		best = cur
	}
	if best != nil {
		b := *best
		r.Best = &b
	}
}

// ratioOf is max(read,1)/max(lb,1).
func ratioOf(read, lb float64) float64 { return math.Max(read, 1) / math.Max(lb, 1) }

// bindAll binds the workload to schema and returns, per query, its expression
// (for planning scans of the current layout).
func bindAll(w *workload.Workload, schema *arrow.Schema) ([]expr.Expr, error) {
	if _, err := w.Bind(schema); err != nil {
		return nil, fmt.Errorf("advise: %w", err)
	}
	out := make([]expr.Expr, w.Len())
	for i, q := range w.Queries {
		out[i] = q.Expr()
	}
	return out, nil
}
