package qdtree

import (
	"slices"
)

// The fitted workload. A hundred training queries are a small sample of the
// distribution later queries come from; a greedy tree that only counts them
// cuts at their exact bounds and overfits them (deep in the tree a node sees
// a handful). The builder therefore also scores cuts against a distribution
// fitted to the training queries:
//
//   - the one-box queries are grouped by shape, the set of cut columns they
//     constrain (a dashboard's column pairs; box2's six pairs);
//   - within a shape, each column's range is drawn independently from the
//     ranges the shape's queries put on that column (their weights as
//     probabilities), so the shape's q queries stand for q^d combinations;
//   - on a continuous column (the training queries' two-sided ranges rarely
//     share a bound: drawn from a continuum, not from a grid of literals) a
//     range keeps its width in quantile space but its start is uniform over
//     the column ([0, 1-width]): such a workload says which columns and widths
//     matter, not where.
//
// A side of a cut is read by a shape with the probability that every one of
// its columns' ranges meets the side's bounding box (a product over the
// columns), and a cut's gain is the expected number of rows the shape skips,
// weighted by the shape's share of the workload. For a grid of literals
// (templates) this keeps the cuts on the grid and the skew of where bounds
// fall; for continuous bounds it is the expected cost of a cell under random
// translations, whose greedy minimisation sets each column's resolution by how
// often and how narrowly it is constrained, anywhere along it.

// famTerm is one range of a continuous column: quantile width s, start
// uniform over [lo, hi].
type famTerm struct {
	s      float64
	lo, hi float64
}

// prob returns the probability that the range meets rows spanning the
// quantile extent [a, b]: that its start falls in (a-s, b).
func (f famTerm) prob(a, b float64) float64 {
	if f.hi <= f.lo {
		if f.lo > a-f.s && f.lo < b {
			return 1
		}
		return 0
	}
	in := min(b, f.hi) - max(a-f.s, f.lo)
	if in <= 0 {
		return 0
	}
	return min(in/(f.hi-f.lo), 1)
}

// mrange is one range of a shape's column marginal: a slot interval, or, on
// a continuous column, a family of translations.
type mrange struct {
	iv   ival
	w    float64 // share of the marginal (the ranges of one column sum to 1)
	fam  famTerm
	cont bool
}

// shape is a group of one-box training queries constraining the same cut
// columns, with the marginals of their ranges.
type shape struct {
	cols   []int
	weight float64
	marg   [][]mrange // [i] ranges on cols[i]
}

// fitModel marks the continuous columns and groups the one-box training
// queries into shapes, moving share of each query's weight (all of it for a
// query on continuous columns only) from the query to its shape; share ≤ 0
// fits nothing.
func (b *builder) fitModel(share float64) {
	d := len(b.slots)
	b.cont = make([]bool, d)
	for c := range d {
		mx := b.sp.pts[c].MaxSlot()
		var bounds []uint32
		for _, q := range b.queries[:b.trainQ] {
			if len(q.boxes) != 1 {
				continue
			}
			if iv := q.boxes[0][c]; iv.lo > 1 && iv.hi < mx {
				bounds = append(bounds, iv.lo, iv.hi+1)
			}
		}
		if len(bounds) < modelMinBounds {
			continue
		}
		all := len(bounds)
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		b.cont[c] = float64(len(bounds)) >= modelDistinct*float64(all)
	}
	if share <= 0 {
		return
	}
	byKey := map[string]int{}
	for qi := range b.trainQ {
		q := &b.queries[qi]
		if len(q.boxes) != 1 || q.weight <= 0 {
			continue
		}
		bx := q.boxes[0]
		var cols []int
		key := make([]byte, d)
		for c := range d {
			if bx[c].lo > 0 || bx[c].hi < b.sp.pts[c].MaxSlot() {
				cols = append(cols, c)
				key[c] = 1
			}
		}
		if len(cols) == 0 {
			continue
		}
		si, ok := byKey[string(key)]
		if !ok {
			si = len(b.shapes)
			byKey[string(key)] = si
			b.shapes = append(b.shapes, shape{cols: cols, marg: make([][]mrange, len(cols))})
		}
		sh := &b.shapes[si]
		// A query whose ranges are all on continuous columns says nothing
		// about where they fall: all of its weight goes to the model.
		w := q.weight * share
		allCont := true
		for _, c := range cols {
			allCont = allCont && b.cont[c] && bx[c].lo > 1 && bx[c].hi < b.sp.pts[c].MaxSlot()
		}
		if allCont {
			w = q.weight
		}
		sh.weight += w
		for i, c := range cols {
			iv := bx[c]
			r := mrange{iv: iv, w: w}
			if b.cont[c] && iv.lo > 1 && iv.hi < b.sp.pts[c].MaxSlot() {
				x, e := b.quant(c, iv.lo), b.quant(c, iv.hi+1)
				r.cont = true
				r.fam = famTerm{s: e - x, lo: 0, hi: max(1-(e-x), 0)}
			}
			sh.marg[i] = append(sh.marg[i], r)
		}
		q.weight -= w
	}
	for si := range b.shapes {
		sh := &b.shapes[si]
		for i := range sh.marg {
			for j := range sh.marg[i] {
				sh.marg[i][j].w /= sh.weight
			}
		}
	}
}

// quant is the share of sample rows with a slot below s on column c.
func (b *builder) quant(c int, s uint32) float64 {
	return float64(b.cum[c][s]) / float64(max(b.n, 1))
}

// hit is the probability that range r on column c meets rows whose slots on c
// span iv.
func (b *builder) hit(r *mrange, c int, iv ival) float64 {
	if r.cont {
		return r.fam.prob(b.quant(c, iv.lo), b.quant(c, iv.hi+1))
	}
	if r.iv.lo > iv.hi || r.iv.hi < iv.lo {
		return 0
	}
	return 1
}

// nodeShapes are a node's shapes restricted to the ranges that may meet it.
type nodeShape struct {
	sh   *shape
	marg [][]*mrange
	p    float64 // probability that the shape reads the node
}

// activeShapes returns the shapes that may read a node with bounding box bb.
func (b *builder) activeShapes(bb box) []nodeShape {
	var out []nodeShape
	for si := range b.shapes {
		sh := &b.shapes[si]
		ns := nodeShape{sh: sh, marg: make([][]*mrange, len(sh.cols)), p: 1}
		for i, c := range sh.cols {
			var pc float64
			for j := range sh.marg[i] {
				r := &sh.marg[i][j]
				if h := b.hit(r, c, bb[c]); h > 0 {
					ns.marg[i] = append(ns.marg[i], r)
					pc += r.w * h
				}
			}
			ns.p *= pc
		}
		if ns.p > 0 {
			out = append(out, ns)
		}
	}
	return out
}

// prob is the probability that shape ns reads rows with bounding box bb.
func (b *builder) prob(ns *nodeShape, bb box) float64 {
	p := 1.0
	for i, c := range ns.sh.cols {
		var pc float64
		for _, r := range ns.marg[i] {
			pc += r.w * b.hit(r, c, bb[c])
		}
		p *= pc
		if p == 0 {
			return 0
		}
	}
	return p
}

// Constants of the fitted model.
const (
	// modelMinBounds is the fewest two-sided bounds on a column from which it
	// may be judged continuous.
	modelMinBounds = 8
	// modelDistinct is the share of distinct bounds above which a column is
	// continuous.
	modelDistinct = 0.8
	// modelCandidates is the fewest quantiles of a node tried as cuts on a
	// continuous column (at least four per leaf of the node).
	modelCandidates = 256
)
