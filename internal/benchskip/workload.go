package benchskip

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/workload"
)

// Workload-aware layouts (issue 16): a tree of cuts (package qdtree) trained on
// Config.TrainQueries queries of the workload Config.Train, drawn from the same
// generator as the evaluated workloads but from a separate random stream, so
// that every evaluated query is held out.

// TemplateGrid is the number of grid steps of the template workload: bounds are
// the column's 1/TemplateGrid quantiles (5% steps).
const TemplateGrid = 20

// templatePairs returns the column pairs (indexes into the clustering columns)
// of the template workloads. With four columns (date, date, key, key, as
// lineitem's defaults are), "template" pairs each date with the first key and
// "template3" adds the first date with the second key: three independent
// dimensions instead of two.
func templatePairs(n int, three bool) [][2]int {
	switch {
	case n >= 4 && three:
		return [][2]int{{0, 2}, {1, 2}, {0, 3}}
	case n >= 3:
		return [][2]int{{0, 2}, {1, 2}}
	case n == 2:
		return [][2]int{{0, 1}}
	}
	return [][2]int{{0, 0}}
}

// templateQuery draws one dashboard query: a pair of templatePairs, the first
// column a range of 1..3 grid steps placed with a bias toward the highest
// values (recent dates), the second a range of 1..4 grid steps placed
// uniformly. Bounds are grid points: [start, end) in quantile steps.
func (p *prepared) templateQuery(r *rand.Rand, three bool) []term {
	pairs := templatePairs(len(p.cl), three)
	pr := pairs[r.IntN(len(pairs))]
	var terms []term
	for k, ci := range pr {
		if k == 1 && ci == pr[0] {
			break
		}
		steps := 1 + r.IntN(3)
		var g0 int
		if k == 0 {
			u := r.Float64()
			g0 = (TemplateGrid - steps) - int(math.Floor(float64(TemplateGrid-steps+1)*u*u))
			g0 = max(g0, 0)
		} else {
			steps = 1 + r.IntN(4)
			g0 = r.IntN(TemplateGrid - steps + 1)
		}
		c := p.cl[ci]
		rows := int64(p.d.rows)
		lo := c.codeAtPos(int64(g0) * rows / TemplateGrid)
		var hi uint32
		if g0+steps >= TemplateGrid {
			hi = uint32(c.distinct() - 1)
		} else {
			// The grid point itself is excluded: the range ends just below it.
			end := c.codeAtPos(int64(g0+steps) * rows / TemplateGrid)
			hi = max(end, lo+1) - 1
		}
		terms = append(terms, term{col: c, ci: ci, lo: lo, hi: hi, loV: c.codeValue(lo), hiV: c.codeValue(hi)})
	}
	return terms
}

// trainingWorkload generates Config.TrainQueries queries of Config.Train from a
// random stream disjoint from the evaluated queries' streams.
func (p *prepared) trainingWorkload() (*workload.Workload, error) {
	cfg := p.cfg
	w, _ := ParseWorkload(cfg.Train) // validated
	qs, note, err := p.genQueriesStream(w, cfg.Train, cfg.TrainQueries, cfg.Seed, hashName("train:"+cfg.Train))
	if err != nil {
		return nil, err
	}
	if note != "" {
		return nil, errorf(ErrInvalidConfig, "training workload %s: %s", cfg.Train, note)
	}
	out := &workload.Workload{}
	for _, q := range qs {
		wq, err := workload.NewQuery(q.text, 1)
		if err != nil {
			return nil, errorf(ErrInternal, "training query %q: %v", q.text, err)
		}
		out.Queries = append(out.Queries, wq)
	}
	return out, nil
}

// treeLayout orders rows by the leaves of a tree trained on the training
// workload and cut on the clustering columns (robust: with Config.Robustness
// of generic queries blended in): rows of leaf i before those of leaf i+1, each leaf's rows in the
// Hilbert order of the clustering columns' ranks (files are cut at leaf
// boundaries, row groups split a file in that order). The tree is built on a sample of Config.TrainSample rows (all rows
// when there are fewer) and routes every row; a leaf of several units becomes
// that many files of equal rows. It returns the permutation and the file starts.
func (p *prepared) treeLayout(ctx context.Context, robust bool) ([]int32, []int, error) {
	cfg := p.cfg
	n := p.d.rows
	cols := make([]arrow.Array, len(p.cl))
	fields := make([]arrow.Field, len(p.cl))
	for i, c := range p.cl {
		cols[i], fields[i] = c.arr, c.field
	}
	sch := arrow.NewSchema(fields, nil)
	all := array.NewRecordBatch(sch, cols, int64(n))
	defer all.Release()
	sample := all
	if cfg.TrainSample < n {
		r := rand.New(rand.NewPCG(cfg.Seed, 0x74726565)) // "tree"
		idx := make([]int32, 0, cfg.TrainSample)
		step := float64(n) / float64(cfg.TrainSample)
		for i := range cfg.TrainSample {
			idx = append(idx, int32(math.Min(float64(n-1), (float64(i)+r.Float64())*step)))
		}
		rec, err := p.d.gatherColumns(sch, p.cl, idx)
		if err != nil {
			return nil, nil, err
		}
		defer rec.Release()
		sample = rec
	}
	// Every clustering column may be cut: those the workload does not filter
	// on get the tree's reserved share of cuts (and, robust, generic queries),
	// so that queries the training workload never showed still skip.
	opts := qdtree.Options{Leaves: cfg.Files, Columns: cfg.Columns, Seed: cfg.Seed, Tolerance: cfg.Tolerance}
	if robust {
		opts.Robustness = cfg.Robustness
	}
	tr, err := qdtree.Build(ctx, sample, p.train, opts)
	if err != nil {
		return nil, nil, errorf(ErrInternal, "workload tree: %v", err)
	}
	router, err := tr.Router(sch)
	if err != nil {
		return nil, nil, errorf(ErrInternal, "workload tree: %v", err)
	}
	leaves := make([]int32, n)
	if err := router.Route(all, leaves); err != nil {
		return nil, nil, errorf(ErrInternal, "workload tree: %v", err)
	}
	units := make([]int, tr.Leaves)
	for _, nd := range tr.Nodes {
		if nd.Leaf >= 0 {
			units[nd.Leaf] = nd.Units
		}
	}
	count := make([]int, tr.Leaves+1)
	for _, l := range leaves {
		count[l+1]++
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	perm := make([]int32, n)
	next := append([]int(nil), count[:tr.Leaves]...)
	for row, l := range leaves {
		perm[next[l]] = int32(row)
		next[l]++
	}
	// Inside each leaf, rows follow the Hilbert order of the clustering
	// columns' ranks (as OPTIMIZE sorts each file), so that row groups skip too.
	hp := make([]int32, n)
	for i := range hp {
		hp[i] = int32(i)
	}
	hp, err = rankCurve(LayoutHilbert, hp, p.cl, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	pos := make([]int32, n) // row -> position in Hilbert order
	for i, r := range hp {
		pos[r] = int32(i)
	}
	for l := range tr.Leaves {
		seg := perm[count[l]:count[l+1]]
		slices.SortFunc(seg, func(a, b int32) int { return cmp.Compare(pos[a], pos[b]) })
	}
	fileStart := make([]int, 0, cfg.Files+1)
	for l := range tr.Leaves {
		a, b := count[l], count[l+1]
		for u := range units[l] {
			fileStart = append(fileStart, a+cut(b-a, units[l], u))
		}
	}
	fileStart = append(fileStart, n)
	return perm, fileStart, nil
}

// gatherColumns builds a batch of the given columns holding rows idx.
func (d *dataset) gatherColumns(sch *arrow.Schema, cols []*column, idx []int32) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		a, err := gatherArray(memory.DefaultAllocator, c.arr, idx)
		if err != nil {
			for _, x := range arrs[:i] {
				x.Release()
			}
			return nil, errorf(ErrInternal, "gather %q: %v", c.field.Name, err)
		}
		arrs[i] = a
	}
	rec := array.NewRecordBatch(sch, arrs, int64(len(idx)))
	for _, a := range arrs {
		a.Release()
	}
	return rec, nil
}
