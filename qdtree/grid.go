package qdtree

import (
	"context"
	"math"
	"slices"
	"sort"
)

// Grid candidates. A greedy tree decides one cut at a time by what it lets
// the queries skip right away; a workload whose shapes each leave some column
// unconstrained (a dashboard of column pairs over three independent columns)
// is served best by a resolution per column set for the whole table: the
// constrained-most column cut at every grid literal, the others coarser (the
// idea of Flood, Nathan et al., SIGMOD 2020, which fits a grid's column
// counts to a workload). The builder therefore also builds nested grids (a
// tree that cuts the first column into m1 slabs, each slab into m2 slabs on
// the second column, and so on, every cut snapped to a bound the workload uses
// when one is near) for the column counts the fitted workload (model.go)
// predicts best, and keeps whichever tree, greedy or grid, reads the fewest
// rows under the fitted workload on the sample.

// gridLevel is one level of a nested grid: col cut into m slabs (the last
// level takes whatever units remain).
type gridLevel struct {
	col int
	m   int
}

// gridDim is a dimension of the grid search: a filtered column, or several
// strongly correlated ones (l_shipdate and l_receiptdate) counted as one and
// cut on the first.
type gridDim struct {
	cols []int
	// fixed, when > 0, is the slab count of an unfiltered column (its reserved
	// share of the cuts); filtered dimensions are searched.
	fixed int
}

// dimRange is a shape's range on a dimension in quantile space, as a share of
// the shape's weight.
type dimRange struct {
	x, s, w float64
	cont    bool
}

// gridCandidates returns up to tries nested grids, best first by the
// analytic cost of an aligned grid of equal slabs under the fitted workload.
func (b *builder) gridCandidates(tries int) [][]gridLevel {
	if len(b.shapes) == 0 || b.leaves < 4 {
		return nil
	}
	// Dimensions: the filtered columns, correlated ones merged.
	weight := make([]float64, len(b.slots))
	for _, sh := range b.shapes {
		for _, c := range sh.cols {
			weight[c] += sh.weight
		}
	}
	var filt []int
	for c := range b.slots {
		if weight[c] > 0 {
			filt = append(filt, c)
		}
	}
	slices.SortStableFunc(filt, func(x, y int) int {
		switch {
		case weight[x] > weight[y]:
			return -1
		case weight[x] < weight[y]:
			return 1
		}
		return 0
	})
	dimOf := make([]int, len(b.slots))
	for i := range dimOf {
		dimOf[i] = -1
	}
	var dims []gridDim
	for _, c := range filt {
		for di := range dims {
			if b.correlated(dims[di].cols[0], c) {
				dims[di].cols = append(dims[di].cols, c)
				dimOf[c] = di
				break
			}
		}
		if dimOf[c] < 0 {
			dimOf[c] = len(dims)
			dims = append(dims, gridDim{cols: []int{c}})
		}
	}
	searched := len(dims)
	if searched > gridMaxDims {
		return nil
	}
	// The unfiltered columns that follow no filtered one share the reserved
	// cuts of a path (Options.Unfiltered), round robin: 2^bits slabs each.
	fixedUnits := 1
	var free []int
	for _, u := range b.unfiltered {
		corr := false
		for _, c := range filt {
			corr = corr || b.correlated(c, u)
		}
		if !corr {
			free = append(free, u)
		}
	}
	for i, u := range free {
		bits := b.quota / len(free)
		if i < b.quota%len(free) {
			bits++
		}
		if bits > 0 {
			dims = append(dims, gridDim{cols: []int{u}, fixed: 1 << bits})
			fixedUnits <<= bits
		}
	}
	budget := float64(b.leaves) / float64(fixedUnits)
	if budget < 2 {
		return nil
	}
	// Each shape's ranges per searched dimension.
	type shapeDims struct {
		w      float64
		ranges [][]dimRange // [dim] nil when the shape leaves it free
	}
	var sds []shapeDims
	for _, sh := range b.shapes {
		sd := shapeDims{w: sh.weight, ranges: make([][]dimRange, searched)}
		for i, c := range sh.cols {
			di := dimOf[c]
			if sd.ranges[di] != nil {
				continue // two correlated columns: the first one stands for both
			}
			for _, r := range sh.marg[i] {
				x, e := b.quant(c, r.iv.lo), b.quant(c, r.iv.hi+1)
				sd.ranges[di] = append(sd.ranges[di], dimRange{x: x, s: e - x, w: r.w, cont: r.cont})
			}
		}
		sds = append(sds, sd)
	}
	// cost of m slabs per searched dimension: the expected share of cells read.
	hitShare := func(rs []dimRange, m float64) float64 {
		var e float64
		for _, r := range rs {
			if r.cont {
				e += r.w * math.Min(m, m*r.s+1)
				continue
			}
			lo, hi := r.x+gridSlack, r.x+r.s-gridSlack
			if hi < lo {
				hi = lo
			}
			e += r.w * (math.Min(math.Ceil(hi*m), m) - math.Floor(lo*m))
		}
		return e / m
	}
	cost := func(m []float64) float64 {
		var c float64
		for _, sd := range sds {
			p := sd.w
			for di, rs := range sd.ranges {
				if rs != nil {
					p *= hitShare(rs, m[di])
				}
			}
			c += p
		}
		return c
	}
	type cand struct {
		m    []float64
		last int
		cost float64
	}
	var cands []cand
	m := make([]float64, searched)
	for last := range searched {
		var rec func(di int, prod float64)
		rec = func(di int, prod float64) {
			if di == searched {
				m[last] = budget / prod
				if m[last] < 1 {
					return
				}
				cands = append(cands, cand{m: slices.Clone(m), last: last, cost: cost(m)})
				return
			}
			if di == last {
				rec(di+1, prod)
				return
			}
			for k := 1; prod*float64(k) <= budget; k++ {
				m[di] = float64(k)
				rec(di+1, prod*float64(k))
			}
		}
		rec(0, 1)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].cost < cands[j].cost })
	var out [][]gridLevel
	seen := map[string]bool{}
	for _, cd := range cands {
		if len(out) == tries {
			break
		}
		// Levels: the searched dimensions but the last by decreasing slab
		// count, the fixed ones, then the last (it takes the remaining units).
		var lv []gridLevel
		for di := range searched {
			if di != cd.last && cd.m[di] > 1 {
				lv = append(lv, gridLevel{col: dims[di].cols[0], m: int(cd.m[di])})
			}
		}
		slices.SortStableFunc(lv, func(x, y gridLevel) int { return y.m - x.m })
		for _, d := range dims[searched:] {
			lv = append(lv, gridLevel{col: d.cols[0], m: d.fixed})
		}
		lv = append(lv, gridLevel{col: dims[cd.last].cols[0], m: 0})
		key := ""
		for _, l := range lv {
			key += string(rune(l.col)) + string(rune(l.m))
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, lv)
		}
	}
	return out
}

// correlated reports whether columns x and y of the sample are strongly rank
// correlated (|Spearman ρ| ≥ gridCorrelation on up to 20,000 rows).
func (b *builder) correlated(x, y int) bool {
	step := max(1, b.n/20000)
	var sx, sy, sxx, syy, sxy, k float64
	for r := 0; r < b.n; r += step {
		qx := b.quant(x, b.slots[x][r]+1) - 0.5*(b.quant(x, b.slots[x][r]+1)-b.quant(x, b.slots[x][r]))
		qy := b.quant(y, b.slots[y][r]+1) - 0.5*(b.quant(y, b.slots[y][r]+1)-b.quant(y, b.slots[y][r]))
		sx += qx
		sy += qy
		sxx += qx * qx
		syy += qy * qy
		sxy += qx * qy
		k++
	}
	if k < 2 {
		return false
	}
	vx, vy := sxx/k-(sx/k)*(sx/k), syy/k-(sy/k)*(sy/k)
	if vx <= 0 || vy <= 0 {
		return false
	}
	rho := (sxy/k - (sx/k)*(sy/k)) / math.Sqrt(vx*vy)
	return math.Abs(rho) >= gridCorrelation
}

// buildGrid builds the nested grid levels into b.nodes and b.cuts.
func (b *builder) buildGrid(ctx context.Context, levels []gridLevel) error {
	b.nodes, b.cuts = nil, nil
	// Bounds the fitted workload uses, per column: where slab cuts snap to.
	b.gridBounds = make([][]uint32, len(b.slots))
	for _, sh := range b.shapes {
		for i, c := range sh.cols {
			for _, r := range sh.marg[i] {
				if !r.cont {
					b.gridBounds[c] = append(b.gridBounds[c], r.iv.lo, r.iv.hi+1)
				}
			}
		}
	}
	for c := range b.gridBounds {
		slices.Sort(b.gridBounds[c])
		b.gridBounds[c] = slices.Compact(b.gridBounds[c])
	}
	all := make([]int32, b.n)
	for i := range all {
		all[i] = int32(i)
	}
	leaf := 0
	first := levels[0].m
	if len(levels) == 1 {
		first = b.leaves
	}
	_, err := b.gridSplit(ctx, all, b.leaves, levels, 0, min(first, b.leaves), &leaf)
	return err
}

// gridSplit adds the subtree of a node of k units that level lv cuts into m
// slabs (m ≤ k), in preorder, and returns its id.
func (b *builder) gridSplit(ctx context.Context, rows []int32, k int, levels []gridLevel, lv, m int, leaf *int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for m == 1 && k > 1 {
		if lv < len(levels)-1 {
			lv++
		}
		m = k
		if lv < len(levels)-1 {
			m = min(levels[lv].m, k)
		}
	}
	id := b.addNode(len(rows), k)
	if k == 1 {
		b.nodes[id].Leaf = *leaf
		*leaf++
		return id, nil
	}
	col := levels[lv].col
	m1 := m / 2
	k1 := int(math.Round(float64(k) * float64(m1) / float64(m)))
	k1 = min(max(k1, m1, 1), k-(m-m1), k-1)
	cs, ok := b.slabCut(rows, col, k, k1, m)
	nextM := func(units, slabs int) int { return slabs }
	if !ok {
		// No cut on the level's column keeps both sides within tolerance:
		// cut as the greedy's fallback does and go on with whatever units each
		// side gets.
		w := nodeWork{rows: rows, k: k}
		var cols []int
		cols = append(cols, col)
		for c := range b.slots {
			if c != col {
				cols = append(cols, c)
			}
		}
		if cs, k1, ok = b.medianCut(w, cols, true); !ok {
			b.nodes[id].Leaf = *leaf
			*leaf++
			return id, nil
		}
		nextM = func(units, slabs int) int { return min(units, max(slabs, 1)) }
	}
	b.cuts[id] = cs
	left, right := b.partition(rows, cs)
	l, err := b.gridSplit(ctx, left, k1, levels, lv, min(nextM(k1, m1), k1), leaf)
	if err != nil {
		return 0, err
	}
	r, err := b.gridSplit(ctx, right, k-k1, levels, lv, min(nextM(k-k1, m-m1), k-k1), leaf)
	if err != nil {
		return 0, err
	}
	b.nodes[id].Left, b.nodes[id].Right = l, r
	return id, nil
}

// slabCut cuts rows on col so that the left side holds k1 of the node's k
// units: at the bound of the fitted workload nearest the target position when
// one keeps both sides within tolerance, else at the admissible position
// nearest the target.
func (b *builder) slabCut(rows []int32, col, k, k1, m int) (cutSpec, bool) {
	n := len(rows)
	_, sl := b.sortBy(rows, col)
	target := float64(n) * float64(k1) / float64(k)
	ok := func(pos int) bool {
		if pos <= 0 || pos >= n {
			return false
		}
		l := float64(pos) / (float64(k1) * b.unit)
		r := float64(n-pos) / (float64(k-k1) * b.unit)
		lo, hi := 1-b.tol, 1+b.over
		return l >= lo && l <= hi && r >= lo && r <= hi
	}
	best, bestD := cutSpec{}, math.Inf(1)
	for _, t := range b.gridBounds[col] {
		if t == 0 || t <= sl[0] || t > sl[n-1] {
			continue
		}
		pos, _ := slices.BinarySearch(sl, t)
		if d := math.Abs(float64(pos) - target); ok(pos) && d < bestD {
			best, bestD = cutSpec{col: col, t: t}, d
		}
	}
	// A bound within gridSnap of a slab's rows of the target wins; otherwise
	// the nearest admissible change of value.
	if bestD <= math.Max(gridSnap*float64(n)/float64(m), b.unit) {
		return best, true
	}
	at := int(math.Round(target))
	for d := 0; d < n; d++ {
		for _, pos := range []int{at - d, at + d} {
			if pos > 0 && pos < n && sl[pos] != sl[pos-1] && ok(pos) {
				if float64(d) < bestD {
					return cutSpec{col: col, t: sl[pos]}, true
				}
				return best, true
			}
		}
		if float64(d) > bestD {
			return best, true
		}
	}
	return best, !math.IsInf(bestD, 1)
}

// leafBoxes calls f with the sample rows and bounding box of every leaf of
// the tree in b.nodes that holds rows.
func (b *builder) leafBoxes(f func(n float64, bb box)) {
	var walk func(id int, rows []int32)
	walk = func(id int, rows []int32) {
		nd := &b.nodes[id]
		if nd.Leaf >= 0 {
			if len(rows) > 0 {
				f(float64(len(rows)), b.bbox(rows))
			}
			return
		}
		l, r := b.partition(rows, b.cuts[id])
		walk(nd.Left, l)
		walk(nd.Right, r)
	}
	all := make([]int32, b.n)
	for i := range all {
		all[i] = int32(i)
	}
	walk(0, all)
}

// modelCost is the weighted number of sample rows the tree in b.nodes makes
// the training read: the fitted workload's expected reads plus those of the
// plain (and generic) queries, each leaf judged by its rows' bounding box.
func (b *builder) modelCost() float64 {
	var cost float64
	b.leafBoxes(func(n float64, bb box) {
		for _, ns := range b.activeShapes(bb) {
			cost += ns.sh.weight * n * ns.p
		}
		for qi := range b.queries {
			if q := &b.queries[qi]; q.weight > 0 && q.mightMatch(bb) {
				cost += q.weight * n
			}
		}
	})
	return cost
}

// Constants of the grid candidates.
const (
	// gridMinQueries is the fewest training queries for which grids are
	// tried (each half of them must say something of the other).
	gridMinQueries = 20
	// gridMaxDims bounds the searched dimensions.
	gridMaxDims = 4
	// gridCorrelation is the rank correlation above which two columns are one
	// dimension.
	gridCorrelation = 0.9
	// gridSlack is the share of a column (quantile) by which a range may
	// overlap a slab without reading it: cuts snap to the workload's bounds.
	gridSlack = 0.002
	// gridSnap is how far (as a share of a slab's rows) a slab cut may move
	// to fall on a bound of the workload.
	gridSnap = 0.25
)
