package qdtree

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/rank"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// Defaults of Options.
const (
	// DefaultTolerance lets a leaf hold between 0.8 and 1.2 times its share of
	// the rows: enough freedom to cut where queries cut, little enough that files
	// stay near the target size.
	DefaultTolerance = 0.2
	// DefaultOversize lets a leaf hold at most 1.1 times its share of the rows
	// (less than Tolerance allows): a query reads at least its matching rows
	// over the largest file's, so the largest file matters more than the
	// smallest (lineitem SF1 in 1,000 files trained on a template: the largest
	// file 1.31× the average with ±20%, 1.14× with 0.8 to 1.1, for 2.10%
	// instead of 2.16% of the files read; a symmetric ±5% reads more).
	DefaultOversize = 0.1
	// DefaultGenericQueries is the number of generic queries blended in when
	// Robustness > 0.
	DefaultGenericQueries = 128
	// DefaultAugment is the default of Options.Augment.
	DefaultAugment = 4
	// DefaultResolution is the number of data quantiles per leaf and cut column
	// added to the workload's literals as possible cut values (for cuts no query
	// asks for: balancing, generic queries): fine enough that even a node of two
	// leaves can be cut near its median.
	DefaultResolution = 16
	// DefaultUnfiltered is the default of Options.Unfiltered.
	DefaultUnfiltered = 0.2
	// DefaultFit is the default of Options.Fit.
	DefaultFit = 0.5
	// DefaultGrids is the default of Options.Grids.
	DefaultGrids = 3
)

// Options configures Build. Leaves is required; every other zero field takes its
// default.
type Options struct {
	// Leaves is the number of leaves (output files) the rows are cut into.
	Leaves int
	// Columns are the columns cuts may use (default: every column of the sample
	// that the workload filters on and that can be cut, in order of workload
	// weight). Columns named here but unused by the workload still get cuts from
	// the generic queries and from balancing.
	Columns []string
	// Tolerance bounds leaf sizes: each leaf gets between (1-Tolerance) and
	// (1+Oversize) times rows/Leaves of the sample (default DefaultTolerance;
	// at most 0.5).
	Tolerance float64
	// Oversize bounds leaf sizes from above: at most (1+Oversize) times
	// rows/Leaves of the sample (default DefaultOversize, or Tolerance when that
	// is smaller; at most Tolerance).
	Oversize float64
	// Robustness, in [0, 0.9], is the share of the total weight given to generic
	// queries: random boxes on one or two of Columns covering 0.1% to 10% of the
	// rows, so that the layout keeps some resolution on every column for queries
	// the workload did not show (default 0: the workload alone).
	Robustness float64
	// Unfiltered bounds the cuts on the cut columns (Columns) that the workload
	// does not filter on, so that queries on them still skip: up to
	// round(Unfiltered × log2(Leaves)) cuts on each path from the root to a leaf
	// (two for 1,000 leaves with the default DefaultUnfiltered). Such a cut is
	// a median cut, made only at a node where no cut of a query boundary helps
	// (instead of a median cut on a filtered column) and only on a column the
	// node spans more of than of any filtered column (in quantile space): one
	// that follows a filtered column gets none. Default DefaultUnfiltered;
	// negative: none; at most 0.9.
	Unfiltered float64
	// GenericQueries is the number of generic queries (default
	// DefaultGenericQueries); used only when Robustness > 0.
	GenericQueries int
	// Resolution is the number of data quantiles per leaf and column added as
	// possible cut values (default DefaultResolution; at least 256 per column, at
	// most one per sample row).
	Resolution int
	// Augment is the number of synthetic queries made from each workload query
	// that is one box (a conjunction of ranges): the same columns and widths (in
	// quantile space) at other positions, with bounds taken from the literals the
	// workload uses on each column. They let a workload of a hundred queries
	// stand for the distribution it was drawn from. Default DefaultAugment;
	// negative: none.
	Augment int
	// Fit is the share of the weight of each one-box workload query (a
	// conjunction of ranges) that goes to the fitted workload (model.go): the
	// queries grouped by the columns they constrain, each column's range drawn
	// independently from the ranges of the group, and ranges on continuous
	// columns (bounds rarely repeated) taken at any position. A query whose
	// ranges all lie on continuous columns gives it all of its weight. Default
	// DefaultFit; at most 1; negative: none (the workload as given, synthetic
	// copies included, and no grid candidates).
	Fit float64
	// Grids is how many nested grids (grid.go: per-column slab counts fitted
	// to the fitted workload, cuts on the workload's bounds) are built besides
	// the greedy tree; a grid replaces the greedy tree when it reads less under
	// two-fold cross-validation over the workload's queries. Default
	// DefaultGrids; negative: none.
	Grids int
	// Seed seeds the generic and synthetic queries; equal inputs and options give
	// equal trees.
	Seed uint64
	// BindSchema is the schema the workload's filters are bound to (default the
	// sample's). Filter terms on columns that are not cut columns (partition
	// columns, say) constrain nothing.
	BindSchema *arrow.Schema
}

// Cuttable reports whether cuts may use a column of this type: the types whose
// values package expr compares and package rank orders the same way (integers,
// floats, decimal128, strings and binary, booleans, date32, timestamps in
// microseconds).
func Cuttable(t arrow.DataType) bool {
	switch tt := t.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Float32Type, *arrow.Float64Type, *arrow.Decimal128Type,
		*arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType,
		*arrow.BooleanType, *arrow.Date32Type:
		return true
	case *arrow.TimestampType:
		return tt.Unit == arrow.Microsecond
	}
	return false
}

// Build computes a tree of cuts for the rows of sample and the workload w,
// greedily (Yang et al., "Qd-tree", SIGMOD 2020): starting from all rows, each
// node takes the admissible cut that lets the most rows be skipped, summed over
// the workload's weighted queries, where a query skips a side when no row on
// that side lies in the query's range given the side's per-column minimum and
// maximum (exactly what file statistics let a reader decide). Candidate cuts
// are the boundaries of the queries' ranges on the cut columns. A cut is
// admissible when both sides can hold a whole number of leaves within
// Tolerance. A node where no candidate skips anything is cut at its median on
// the column it spans most in quantile space (a k-d tree step); a node that
// cannot be cut at all (every row equal on every column) stays one leaf of
// several files' worth (Node.Units > 1).
//
// The gain of a cut also counts the fitted workload (Options.Fit, model.go):
// the expected rows its shapes skip. Then nested grids are built (Options.Grids,
// grid.go) and one replaces the greedy tree when, built on either half of the
// workload's queries, grids read less than greedy trees under the fitted
// workload of the other half.
//
// The result has exactly Options.Leaves leaves' worth of units. ctx is checked
// between nodes.
func Build(ctx context.Context, sample arrow.RecordBatch, w *workload.Workload, opts Options) (*Tree, error) {
	if sample == nil || w == nil {
		return nil, fmt.Errorf("%w: nil sample or workload", ErrInvalidOptions)
	}
	if opts.Leaves < 1 {
		return nil, fmt.Errorf("%w: Leaves %d, want at least 1", ErrInvalidOptions, opts.Leaves)
	}
	if opts.Tolerance == 0 {
		opts.Tolerance = DefaultTolerance
	}
	if !(opts.Tolerance > 0 && opts.Tolerance <= 0.5) {
		return nil, fmt.Errorf("%w: Tolerance %v outside (0, 0.5]", ErrInvalidOptions, opts.Tolerance)
	}
	if opts.Oversize == 0 {
		opts.Oversize = min(DefaultOversize, opts.Tolerance)
	}
	if !(opts.Oversize > 0 && opts.Oversize <= opts.Tolerance) {
		return nil, fmt.Errorf("%w: Oversize %v outside (0, Tolerance %v]", ErrInvalidOptions, opts.Oversize, opts.Tolerance)
	}
	if !(opts.Robustness >= 0 && opts.Robustness <= 0.9) {
		return nil, fmt.Errorf("%w: Robustness %v outside [0, 0.9]", ErrInvalidOptions, opts.Robustness)
	}
	if opts.GenericQueries == 0 {
		opts.GenericQueries = DefaultGenericQueries
	}
	if opts.Resolution == 0 {
		opts.Resolution = DefaultResolution
	}
	if opts.Augment == 0 {
		opts.Augment = DefaultAugment
	}
	if opts.Unfiltered == 0 {
		opts.Unfiltered = DefaultUnfiltered
	}
	if opts.Fit == 0 {
		opts.Fit = DefaultFit
	}
	if opts.Fit > 1 {
		return nil, fmt.Errorf("%w: Fit %v above 1", ErrInvalidOptions, opts.Fit)
	}
	if opts.Grids == 0 {
		opts.Grids = DefaultGrids
	}
	if opts.Fit < 0 {
		opts.Grids = -1
	}
	if opts.Unfiltered > 0.9 {
		return nil, fmt.Errorf("%w: Unfiltered %v above 0.9", ErrInvalidOptions, opts.Unfiltered)
	}
	if opts.GenericQueries < 0 || opts.Resolution < 0 {
		return nil, fmt.Errorf("%w: negative GenericQueries or Resolution", ErrInvalidOptions)
	}
	bindSch := opts.BindSchema
	if bindSch == nil {
		bindSch = sample.Schema()
	}
	bound, err := w.Bind(bindSch)
	if err != nil {
		return nil, fmt.Errorf("qdtree: %w", err)
	}
	cols, err := chooseColumns(sample.Schema(), w, opts.Columns)
	if err != nil {
		return nil, err
	}
	b, err := newBuilder(sample, cols, bound, w, opts)
	if err != nil {
		return nil, err
	}
	if err := b.build(ctx); err != nil {
		return nil, err
	}
	if opts.Grids > 0 {
		if err := b.tryGrids(ctx, opts.Grids); err != nil {
			return nil, err
		}
	}
	return b.tree(w), nil
}

// tryGrids builds the grid candidates (grid.go) and, when a grid beats the
// greedy tree in b.nodes on held-out queries (two-fold cross-validation over
// the workload's queries), keeps the grid that reads the fewest rows under the
// fitted workload.
func (b *builder) tryGrids(ctx context.Context, tries int) error {
	cands := b.gridCandidates(tries)
	if len(cands) == 0 || b.trainQ < gridMinQueries {
		return nil
	}
	var greedyHeld, gridHeld float64
	for fold := range 2 {
		keep := make([]bool, len(b.all))
		for i := range b.all {
			keep[i] = i%2 != fold
		}
		f := b.fold(keep)
		fc := f.gridCandidates(tries)
		if len(fc) == 0 {
			return nil
		}
		if err := f.build(ctx); err != nil {
			return err
		}
		inv := make([]bool, len(keep))
		for i := range keep {
			inv[i] = !keep[i]
		}
		// Each tree is scored on the fitted workload of the other half: the
		// held-out queries, standing for the distribution as the training
		// ones do.
		g := b.fold(inv)
		score := func() float64 {
			g.nodes, g.cuts = f.nodes, f.cuts
			return g.modelCost()
		}
		greedyHeld += score()
		if err := f.bestGrid(ctx, fc); err != nil {
			return err
		}
		gridHeld += score()
	}
	if gridHeld >= greedyHeld*(1-1e-9) {
		return nil
	}
	return b.bestGrid(ctx, cands)
}

// bestGrid builds the grids cands and leaves in b.nodes the one that reads the
// fewest rows under the fitted workload.
func (b *builder) bestGrid(ctx context.Context, cands [][]gridLevel) error {
	var bestNodes []Node
	var bestCuts []cutSpec
	bestCost := math.Inf(1)
	for _, lv := range cands {
		if err := b.buildGrid(ctx, lv); err != nil {
			return err
		}
		if c := b.modelCost(); c < bestCost {
			bestNodes, bestCuts, bestCost = b.nodes, b.cuts, c
		}
	}
	b.nodes, b.cuts = bestNodes, bestCuts
	return nil
}

// chooseColumns resolves Options.Columns against the sample, or picks the
// workload's cuttable columns.
func chooseColumns(sch *arrow.Schema, w *workload.Workload, want []string) ([]int, error) {
	find := func(name string) int { return fieldIndex(sch, name) }
	var out []int
	seen := map[int]bool{}
	if len(want) > 0 {
		for _, name := range want {
			i := find(name)
			if i < 0 {
				return nil, fmt.Errorf("%w: %q is not a column of the sample", ErrInvalidOptions, name)
			}
			if !Cuttable(sch.Field(i).Type) {
				return nil, fmt.Errorf("%w: column %q of type %s cannot be cut", ErrInvalidOptions, name, value.DisplayType(sch.Field(i).Type))
			}
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
		return out, nil
	}
	for _, cu := range w.Columns() {
		i := find(cu.Column)
		if i >= 0 && !seen[i] && Cuttable(sch.Field(i).Type) {
			seen[i] = true
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the workload filters on no column of the sample that can be cut", ErrNoColumns)
	}
	return out, nil
}

// builder holds the state of one Build.
type builder struct {
	sp       *space
	slots    [][]uint32 // [cut column][sample row]
	cum      [][]int64  // [cut column][slot]: sample rows with a smaller slot
	n        int
	unit     float64 // sample rows per leaf
	tol      float64
	over     float64 // Options.Oversize
	leaves   int
	queries  []squery
	nodes    []Node
	cuts     []cutSpec
	trainQ   int // queries[:trainQ] are the workload's (the rest generic)
	keys     []uint64
	colNames []string
	robust   float64
	// unfiltered lists the cut columns no workload query filters on; quota is
	// the number of cuts on them each root-to-leaf path gets (Options.Unfiltered).
	unfiltered []int
	quota      int
	// train are the workload's queries with their weights as given; shapes
	// the fitted workload (model.go) and cont its continuous columns.
	train  []squery
	shapes []shape
	cont   []bool
	// gridBounds are the fitted workload's bounds per column (grid.go).
	gridBounds [][]uint32
	// all are the workload's queries and generic the generic ones (weight
	// set by setQueries); share, augmentPer and seed are the options that
	// setQueries applies.
	all        []squery
	generic    []squery
	share      float64
	augmentPer int
	seed       uint64
}

// setQueries makes the workload's queries for which keep is true (all when
// keep is nil) the training queries: the fitted workload, the synthetic
// copies and the generic queries (Robustness of their total weight) follow.
func (b *builder) setQueries(keep []bool) {
	b.queries, b.shapes = nil, nil
	var total float64
	for i, q := range b.all {
		if keep == nil || keep[i] {
			b.queries = append(b.queries, q)
			total += q.weight
		}
	}
	b.trainQ = len(b.queries)
	b.train = slices.Clone(b.queries)
	b.fitModel(b.share)
	if b.augmentPer > 0 {
		b.augment(b.augmentPer, rand.New(rand.NewPCG(b.seed, 0x61756774))) // "augt"
	}
	if len(b.generic) > 0 {
		gw := b.robust / (1 - b.robust) * total / float64(len(b.generic))
		for _, g := range b.generic {
			g.weight = gw
			b.queries = append(b.queries, g)
		}
	}
}

// fold returns a builder on the same sample and slot space for the queries
// keep selects, without a tree.
func (b *builder) fold(keep []bool) *builder {
	f := *b
	f.nodes, f.cuts, f.keys = nil, nil, nil
	f.setQueries(keep)
	return &f
}

// cutSpec is a cut in slot space: left holds the rows whose slot on col is < t.
type cutSpec struct {
	col int
	t   uint32
}

func newBuilder(sample arrow.RecordBatch, cols []int, bound []*expr.Bound, w *workload.Workload, opts Options) (*builder, error) {
	n := int(sample.NumRows())
	sch := sample.Schema()
	sp := &space{}
	for _, c := range cols {
		sp.names = append(sp.names, sch.Field(c).Name)
		sp.types = append(sp.types, sch.Field(c).Type)
	}
	colOf := func(bc *expr.BoundColumn) int { return sp.column(bc) }
	lits := make([][]value.Value, len(cols))
	for _, bq := range bound {
		literals(bq.Root(), colOf, lits)
	}
	// Data quantiles: cut resolution where no query has a literal.
	r := rand.New(rand.NewPCG(opts.Seed, 0x71647472)) // "qdtr"
	sorted := make([][]value.Value, len(cols))
	for ci, c := range cols {
		arr := sample.Column(c)
		vals := make([]value.Value, 0, n)
		for i := 0; i < n; i++ {
			if arr.IsNull(i) {
				continue
			}
			v, err := value.FromArray(arr, i)
			if err != nil {
				return nil, fmt.Errorf("%w: column %q: %v", ErrInvalidOptions, sp.names[ci], err)
			}
			vals = append(vals, v)
		}
		slices.SortFunc(vals, func(a, b value.Value) int { c, _ := value.Compare(a, b); return c })
		sorted[ci] = vals
		res := min(max(256, opts.Resolution*opts.Leaves), len(vals))
		for q := 1; q < res; q++ {
			lits[ci] = append(lits[ci], vals[int(int64(q)*int64(len(vals))/int64(res))])
		}
	}
	// Generic queries (Robustness): literals drawn from the sample's quantiles.
	var generic []expr.Pred
	if opts.Robustness > 0 && n > 0 {
		for range opts.GenericQueries {
			dims := 1 + r.IntN(min(2, len(cols)))
			sel := []float64{0.001, 0.01, 0.1}[r.IntN(3)]
			frac := math.Pow(sel, 1/float64(dims))
			var terms []expr.Pred
			for _, ci := range r.Perm(len(cols))[:dims] {
				vals := sorted[ci]
				if len(vals) == 0 {
					continue
				}
				q0 := r.Float64() * (1 - frac)
				lo := vals[min(int(q0*float64(len(vals))), len(vals)-1)]
				hi := vals[min(int((q0+frac)*float64(len(vals))), len(vals)-1)]
				lits[ci] = append(lits[ci], lo, hi)
				bc := &expr.BoundColumn{Path: []string{sp.names[ci]}}
				terms = append(terms, &expr.CmpPred{Col: bc, Op: expr.OpGe, Value: lo}, &expr.CmpPred{Col: bc, Op: expr.OpLe, Value: hi})
			}
			generic = append(generic, &expr.AndPred{Terms: terms})
		}
	}
	for ci := range cols {
		pts, err := rank.NewPoints(sp.types[ci], lits[ci])
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", ErrInvalidOptions, sp.names[ci], err)
		}
		sp.pts = append(sp.pts, pts)
	}
	b := &builder{sp: sp, n: n, tol: opts.Tolerance, over: opts.Oversize, robust: opts.Robustness, leaves: opts.Leaves, unit: float64(n) / float64(opts.Leaves), colNames: sp.names}
	filtered := map[string]bool{}
	for _, cu := range w.Columns() {
		filtered[strings.ToLower(cu.Column)] = true
	}
	for ci, name := range sp.names {
		if !filtered[strings.ToLower(name)] {
			b.unfiltered = append(b.unfiltered, ci)
		}
	}
	if opts.Unfiltered > 0 && len(b.unfiltered) > 0 && opts.Leaves > 1 {
		b.quota = int(math.Round(opts.Unfiltered * math.Log2(float64(opts.Leaves))))
	}
	for ci, c := range cols {
		s := make([]uint32, n)
		if err := sp.pts[ci].Slots(sample.Column(c), s); err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", ErrInvalidOptions, sp.names[ci], err)
		}
		b.slots = append(b.slots, s)
		cum := make([]int64, sp.pts[ci].MaxSlot()+2)
		for _, v := range s {
			cum[v+1]++
		}
		for i := 1; i < len(cum); i++ {
			cum[i] += cum[i-1]
		}
		b.cum = append(b.cum, cum)
	}
	for i, bq := range bound {
		b.all = append(b.all, sp.toQuery(bq.Root(), w.Queries[i].Weight))
	}
	for _, g := range generic {
		b.generic = append(b.generic, sp.toQuery(g, 0))
	}
	b.share, b.augmentPer, b.seed = opts.Fit, opts.Augment, opts.Seed
	b.setQueries(nil)
	return b, nil
}

// augment adds per synthetic copies of every one-box workload query: each
// constrained column keeps its width in quantile space and moves to a random
// position, snapped to bounds the workload uses on that column. The copies
// share the query's weight.
func (b *builder) augment(per int, r *rand.Rand) {
	d := len(b.slots)
	los := make([][]uint32, d)
	his := make([][]uint32, d)
	for _, q := range b.queries[:b.trainQ] {
		for _, bx := range q.boxes {
			for c, iv := range bx {
				if iv.lo > 0 {
					los[c] = append(los[c], iv.lo)
				}
				if iv.hi < b.sp.pts[c].MaxSlot() {
					his[c] = append(his[c], iv.hi)
				}
			}
		}
	}
	for c := range d {
		slices.Sort(los[c])
		los[c] = slices.Compact(los[c])
		slices.Sort(his[c])
		his[c] = slices.Compact(his[c])
	}
	n := float64(max(b.n, 1))
	quant := func(c int, s uint32) float64 { return float64(b.cum[c][s]) / n }
	// nearest returns the slot of set whose quantile is nearest q.
	nearest := func(c int, set []uint32, q float64) uint32 {
		i := sort.Search(len(set), func(i int) bool { return quant(c, set[i]) >= q })
		switch {
		case i == len(set):
			return set[i-1]
		case i > 0 && q-quant(c, set[i-1]) < quant(c, set[i])-q:
			return set[i-1]
		}
		return set[i]
	}
	for qi := range b.trainQ {
		q := b.queries[qi]
		if len(q.boxes) != 1 {
			continue
		}
		src := q.boxes[0]
		for range per {
			nb := slices.Clone(src)
			ok := false
			for c, iv := range src {
				full := iv.lo == 0 && iv.hi == b.sp.pts[c].MaxSlot()
				if full {
					continue
				}
				lo, hi := iv.lo, iv.hi
				width := quant(c, hi+1) - quant(c, lo)
				q0 := r.Float64() * math.Max(1-width, 0)
				if lo > 0 && len(los[c]) > 0 {
					lo = nearest(c, los[c], q0)
				}
				if iv.hi < b.sp.pts[c].MaxSlot() && len(his[c]) > 0 {
					// The upper bound at the same width from the new lower bound;
					// hi+1 is where the rows above the range start.
					hi = nearest(c, his[c], quant(c, lo)+width)
					if iv.lo == 0 {
						hi = nearest(c, his[c], q0+width)
					}
				}
				if lo > hi {
					lo, hi = hi, lo
				}
				nb[c] = ival{lo, hi}
				ok = true
			}
			if ok {
				b.queries = append(b.queries, squery{boxes: []box{nb}, weight: q.weight / float64(per)})
			}
		}
	}
}

// admissible returns how many of a node's k units the left side of a cut with
// nl of its n rows gets, or 0 when no split keeps both sides within tolerance.
func (b *builder) admissible(nl, n, k int) int {
	if nl <= 0 || nl >= n {
		return 0
	}
	nr := n - nl
	lo, hi := 1-b.tol, 1+b.over
	f := float64(nl) / b.unit
	best := 0
	bestDev := math.Inf(1)
	for _, k1 := range []int{int(math.Floor(f)), int(math.Ceil(f)), int(math.Round(float64(k) * float64(nl) / float64(n)))} {
		if k1 < 1 || k1 > k-1 {
			continue
		}
		k2 := k - k1
		l, r := float64(nl)/(float64(k1)*b.unit), float64(nr)/(float64(k2)*b.unit)
		if l < lo || l > hi || r < lo || r > hi {
			continue
		}
		if dev := math.Abs(l-1) + math.Abs(r-1); dev < bestDev {
			best, bestDev = k1, dev
		}
	}
	return best
}

// nodeWork is one node to be split: its rows, its units (leaves' worth of
// rows) and the queries that may match a row of it.
type nodeWork struct {
	rows   []int32
	k      int
	active []int
	// spent counts the cuts on each of builder.unfiltered on the path from the
	// root to this node.
	spent []int
}

func (b *builder) build(ctx context.Context) error {
	all := make([]int32, b.n)
	for i := range all {
		all[i] = int32(i)
	}
	active := make([]int, len(b.queries))
	for i := range active {
		active[i] = i
	}
	leaf := 0
	_, err := b.split(ctx, nodeWork{rows: all, k: b.leaves, active: b.filterActive(all, active), spent: make([]int, len(b.unfiltered))}, &leaf)
	return err
}

// split adds the subtree of w in preorder (left before right, so leaf ordinals
// follow the leaf order) and returns its root's id.
func (b *builder) split(ctx context.Context, w nodeWork, leaf *int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	id := b.addNode(len(w.rows), w.k)
	var cs cutSpec
	var k1 int
	ok := false
	if w.k > 1 {
		if cs, k1, ok = b.bestCut(w); !ok {
			if cs, k1, ok = b.reservedCut(w); !ok {
				cs, k1, ok = b.balancedCut(w)
			}
		}
	}
	if !ok {
		b.nodes[id].Leaf = *leaf
		*leaf++
		return id, nil
	}
	b.cuts[id] = cs
	left, right := b.partition(w.rows, cs)
	spent := w.spent
	if i := slices.Index(b.unfiltered, cs.col); i >= 0 {
		spent = slices.Clone(spent)
		spent[i]++
	}
	l, err := b.split(ctx, nodeWork{rows: left, k: k1, active: b.filterActive(left, w.active), spent: spent}, leaf)
	if err != nil {
		return 0, err
	}
	r, err := b.split(ctx, nodeWork{rows: right, k: w.k - k1, active: b.filterActive(right, w.active), spent: spent}, leaf)
	if err != nil {
		return 0, err
	}
	b.nodes[id].Left, b.nodes[id].Right = l, r
	return id, nil
}

func (b *builder) addNode(rows, k int) int {
	id := len(b.nodes)
	b.nodes = append(b.nodes, Node{ID: id, Leaf: -1, Units: k, Rows: int64(rows)})
	b.cuts = append(b.cuts, cutSpec{})
	return id
}

// filterActive returns the queries of active that may match a row of rows.
func (b *builder) filterActive(rows []int32, active []int) []int {
	bb := b.bbox(rows)
	out := make([]int, 0, len(active))
	for _, q := range active {
		if b.queries[q].mightMatch(bb) {
			out = append(out, q)
		}
	}
	return out
}

// bbox returns the per-column min and max slots of rows.
func (b *builder) bbox(rows []int32) box {
	bb := make(box, len(b.slots))
	for c, s := range b.slots {
		lo, hi := uint32(math.MaxUint32), uint32(0)
		for _, r := range rows {
			v := s[r]
			lo, hi = min(lo, v), max(hi, v)
		}
		bb[c] = ival{lo, hi}
	}
	return bb
}

// partition splits rows by a cut (stable).
func (b *builder) partition(rows []int32, cs cutSpec) (left, right []int32) {
	s := b.slots[cs.col]
	for _, r := range rows {
		if s[r] < cs.t {
			left = append(left, r)
		} else {
			right = append(right, r)
		}
	}
	return left, right
}

// sortBy returns rows ordered by their slot on column c and the sorted slots.
func (b *builder) sortBy(rows []int32, c int) ([]int32, []uint32) {
	s := b.slots[c]
	keys := b.keys[:0]
	for _, r := range rows {
		keys = append(keys, uint64(s[r])<<32|uint64(uint32(r)))
	}
	slices.Sort(keys)
	b.keys = keys
	ord := make([]int32, len(rows))
	sl := make([]uint32, len(rows))
	for i, k := range keys {
		ord[i] = int32(uint32(k))
		sl[i] = uint32(k >> 32)
	}
	return ord, sl
}

// bestCut evaluates every query boundary on every column as a cut of node w and
// returns the admissible one that skips the most weighted rows (ok false when
// none skips anything).
func (b *builder) bestCut(w nodeWork) (cutSpec, int, bool) {
	n := len(w.rows)
	var best cutSpec
	bestK1, bestGain, bestBal := 0, 0.0, math.Inf(1)
	var shapes []nodeShape
	if len(b.shapes) > 0 {
		shapes = b.activeShapes(b.bbox(w.rows))
	}
	for c := range b.slots {
		// Candidate thresholds: the ends of the active queries' intervals.
		var ts []uint32
		for _, qi := range w.active {
			for _, bx := range b.queries[qi].boxes {
				ts = append(ts, bx[c].lo, bx[c].hi+1)
			}
		}
		model := false
		for _, ns := range shapes {
			if i := slices.Index(ns.sh.cols, c); i >= 0 {
				model = true
				for _, r := range ns.marg[i] {
					if !r.cont {
						ts = append(ts, r.iv.lo, r.iv.hi+1)
					}
				}
			}
		}
		if len(ts) == 0 && !(model && b.cont[c]) {
			continue
		}
		ord, sl := b.sortBy(w.rows, c)
		if model && b.cont[c] {
			// A continuous column: cuts anywhere, at quantiles of the node.
			m := min(max(modelCandidates, 4*w.k), n)
			for j := 1; j < m; j++ {
				ts = append(ts, sl[j*n/m])
			}
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		type cand struct {
			t    uint32
			pos  int
			k1   int
			l, r box
		}
		var cands []cand
		for _, t := range ts {
			pos, _ := slices.BinarySearch(sl, t) // rows with slot < t
			k1 := b.admissible(pos, n, w.k)
			if k1 == 0 || (len(cands) > 0 && cands[len(cands)-1].pos == pos) {
				continue
			}
			cands = append(cands, cand{t: t, pos: pos, k1: k1})
		}
		if len(cands) == 0 {
			continue
		}
		// Bounding boxes of each side at every candidate position: one sweep from
		// the left, one from the right.
		d := len(b.slots)
		run := make(box, d)
		for i := range run {
			run[i] = ival{math.MaxUint32, 0}
		}
		ci := 0
		for i := 0; i <= n && ci < len(cands); i++ {
			for ci < len(cands) && cands[ci].pos == i {
				cands[ci].l = slices.Clone(run)
				ci++
			}
			if i < n {
				r := ord[i]
				for cc := range d {
					v := b.slots[cc][r]
					run[cc].lo, run[cc].hi = min(run[cc].lo, v), max(run[cc].hi, v)
				}
			}
		}
		for i := range run {
			run[i] = ival{math.MaxUint32, 0}
		}
		ci = len(cands) - 1
		for i := n; i >= 0 && ci >= 0; i-- {
			if i < n {
				r := ord[i]
				for cc := range d {
					v := b.slots[cc][r]
					run[cc].lo, run[cc].hi = min(run[cc].lo, v), max(run[cc].hi, v)
				}
			}
			for ci >= 0 && cands[ci].pos == i {
				cands[ci].r = slices.Clone(run)
				ci--
			}
		}
		for _, cd := range cands {
			nl, nr := float64(cd.pos), float64(n-cd.pos)
			var gain float64
			for i := range shapes {
				ns := &shapes[i]
				gain += ns.sh.weight * (float64(n)*ns.p - nl*b.prob(ns, cd.l) - nr*b.prob(ns, cd.r))
			}
			for _, qi := range w.active {
				q := &b.queries[qi]
				if !q.mightMatch(cd.l) {
					gain += q.weight * nl
				}
				if !q.mightMatch(cd.r) {
					gain += q.weight * nr
				}
			}
			bal := math.Abs(float64(cd.k1) - float64(w.k)/2)
			if gain > bestGain*(1+1e-9) || (gain > 0 && gain >= bestGain*(1-1e-9) && bal < bestBal) {
				best, bestK1, bestGain, bestBal = cutSpec{col: c, t: cd.t}, cd.k1, gain, bal
			}
		}
	}
	return best, bestK1, bestGain > 0
}

// balancedCut cuts node w near its median on the column it spans most in
// quantile space (of the whole sample), trying the other columns in turn when
// that column cannot be cut admissibly; when no column can, it takes the cut
// whose sides come closest to a whole number of leaves (so a leaf may exceed the
// tolerance rather than hold two leaves' worth). ok is false only when every
// row is equal on every cut column.
func (b *builder) balancedCut(w nodeWork) (cutSpec, int, bool) {
	var filt []int
	for c := range b.slots {
		if !slices.Contains(b.unfiltered, c) {
			filt = append(filt, c)
		}
	}
	cols := append(b.byExtent(w.rows, filt), b.byExtent(w.rows, b.unfiltered)...)
	return b.medianCut(w, cols, true)
}

// byExtent returns cols ordered by the node's extent on them in quantile space
// (of the whole sample), widest first.
func (b *builder) byExtent(rows []int32, cols []int) []int {
	bb := b.bbox(rows)
	type ext struct {
		c int
		e float64
	}
	var exts []ext
	for _, c := range cols {
		cum := b.cum[c]
		exts = append(exts, ext{c, float64(cum[bb[c].hi+1]-cum[bb[c].lo]) / float64(max(b.n, 1))})
	}
	slices.SortStableFunc(exts, func(x, y ext) int { return cmp.Compare(y.e, x.e) })
	out := make([]int, len(exts))
	for i, e := range exts {
		out[i] = e.c
	}
	return out
}

// medianCut cuts node w near its median on the first of cols that can be cut
// admissibly; when none can and loose is set, it takes the cut whose sides
// come closest to a whole number of leaves. ok is false when no column of cols
// can be cut (admissibly, unless loose).
func (b *builder) medianCut(w nodeWork, cols []int, loose bool) (cutSpec, int, bool) {
	n := len(w.rows)
	k1 := w.k / 2
	target := float64(n) * float64(k1) / float64(w.k)
	var fallback cutSpec
	fallbackK, fallbackDev := 0, math.Inf(1)
	for _, c := range cols {
		_, sl := b.sortBy(w.rows, c)
		bestPos, bestK := -1, 0
		for pos := 1; pos < n; pos++ {
			if sl[pos] == sl[pos-1] {
				continue
			}
			if k := b.admissible(pos, n, w.k); k > 0 {
				if bestPos < 0 || math.Abs(float64(pos)-target) < math.Abs(float64(bestPos)-target) {
					bestPos, bestK = pos, k
				}
				continue
			}
			if bestPos < 0 {
				kk := min(max(int(math.Round(float64(pos)/b.unit)), 1), w.k-1)
				dev := math.Max(math.Abs(float64(pos)/(float64(kk)*b.unit)-1), math.Abs(float64(n-pos)/(float64(w.k-kk)*b.unit)-1))
				if dev < fallbackDev {
					fallback, fallbackK, fallbackDev = cutSpec{col: c, t: sl[pos]}, kk, dev
				}
			}
		}
		if bestPos >= 0 {
			return cutSpec{col: c, t: sl[bestPos]}, bestK, true
		}
	}
	if loose && fallbackK > 0 {
		return fallback, fallbackK, true
	}
	return cutSpec{}, 0, false
}

// reservedCut cuts an idle node w (no cut of a query boundary helps there) at
// its median on an unfiltered column, when the path to w has made fewer such
// cuts than the quota and w spans more of that column than of any filtered
// column, in quantile space (of the whole sample): a column that follows a
// filtered one (y = x + noise) is narrowed by the cuts on it already. Among
// several, the column cut least on the path goes first, then the widest.
func (b *builder) reservedCut(w nodeWork) (cutSpec, int, bool) {
	spent := 0
	for _, s := range w.spent {
		spent += s
	}
	if spent >= b.quota {
		return cutSpec{}, 0, false
	}
	bb := b.bbox(w.rows)
	ext := func(c int) float64 {
		return float64(b.cum[c][bb[c].hi+1]-b.cum[c][bb[c].lo]) / float64(max(b.n, 1))
	}
	widest := 0.0
	for c := range b.slots {
		if !slices.Contains(b.unfiltered, c) {
			widest = max(widest, ext(c))
		}
	}
	fewest := math.MaxInt
	for i, c := range b.unfiltered {
		if ext(c) > widest {
			fewest = min(fewest, w.spent[i])
		}
	}
	var cols []int
	for i, c := range b.unfiltered {
		if ext(c) > widest && w.spent[i] == fewest {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return cutSpec{}, 0, false
	}
	return b.medianCut(w, b.byExtent(w.rows, cols), false)
}

// tree assembles the result.
func (b *builder) tree(w *workload.Workload) *Tree {
	t := &Tree{Format: FormatName, Version: FormatVersion, Columns: b.colNames, SampleRows: int64(b.n), Tolerance: b.tol, Robustness: b.robust}
	t.Nodes = b.nodes
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		if nd.Leaf >= 0 {
			t.Leaves++
			continue
		}
		cs := b.cuts[i]
		nd.cut = b.valueCut(cs)
		nd.Cut = nd.cut.String(b.colNames[cs.col])
	}
	t.Workload = &Training{Fingerprint: w.Fingerprint(), Queries: w.Queries}
	t.TrainingReadFraction = b.readFraction(0, b.trainQ)
	return t
}

// valueCut turns a slot threshold into a cut on values.
func (b *builder) valueCut(cs cutSpec) cut {
	if cs.t <= 1 {
		return cut{col: cs.col, isNull: true}
	}
	pts := b.sp.pts[cs.col]
	if cs.t%2 == 0 { // left: slot ≤ 2j+1, i.e. v < p_j with t = 2j+2
		return cut{col: cs.col, val: pts.Value(int(cs.t/2 - 1))}
	}
	// t = 2j+3: left: slot ≤ 2j+2, i.e. v ≤ p_j
	return cut{col: cs.col, val: pts.Value(int((cs.t - 3) / 2)), inclusive: true}
}

// readFraction is the weighted share of sample rows that queries[from:to] read
// on the leaves (by the leaves' bounding boxes): the predicted fraction of data
// read.
func (b *builder) readFraction(from, to int) float64 {
	var sizes []float64
	var boxes []box
	b.leafBoxes(func(n float64, bb box) {
		sizes = append(sizes, n)
		boxes = append(boxes, bb)
	})
	var read, total float64
	for qi := from; qi < to; qi++ {
		q := &b.train[qi]
		for i, n := range sizes {
			if q.mightMatch(boxes[i]) {
				read += q.weight * n
			}
		}
		total += q.weight * float64(b.n)
	}
	if total == 0 {
		return 0
	}
	return read / total
}
