package qdtree

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/rank"
	"github.com/skiplake/skiplake/value"
)

// The slot space: every cut column is discretised by rank.Points built from the
// literals of the queries (and, for cut resolution, from values of the data), so
// that each query becomes a union of boxes of slot intervals that decide exactly,
// for a box of rows given by per-column minimum and maximum slots, whether the
// query may match a row inside it (min/max semantics, as file statistics).

// ival is an inclusive interval of slots.
type ival struct{ lo, hi uint32 }

// box is one interval per cut column.
type box []ival

// squery is a query in slot space: it may match a row only inside one of its
// boxes; no boxes means it matches nothing.
type squery struct {
	boxes  []box
	weight float64
}

// space is the slot space of the cut columns.
type space struct {
	names []string
	types []arrow.DataType
	pts   []*rank.Points
}

// full returns the box without constraints.
func (s *space) full() box {
	b := make(box, len(s.pts))
	for i, p := range s.pts {
		b[i] = ival{0, p.MaxSlot()}
	}
	return b
}

// column returns the index of the cut column a bound column refers to (by
// top-level name, case-insensitively; exact spelling first), or -1.
func (s *space) column(c *expr.BoundColumn) int {
	if c == nil || len(c.Path) != 1 {
		return -1
	}
	for i, n := range s.names {
		if n == c.Path[0] {
			return i
		}
	}
	for i, n := range s.names {
		if strings.EqualFold(n, c.Path[0]) {
			return i
		}
	}
	return -1
}

// literals appends, per cut column, every literal of p that a slot interval of
// the query will need: comparison values, IN lists, and both ends of a LIKE
// prefix range.
func literals(p expr.Pred, col func(*expr.BoundColumn) int, out [][]value.Value) {
	switch x := p.(type) {
	case *expr.CmpPred:
		if c := col(x.Col); c >= 0 {
			out[c] = append(out[c], x.Value)
		}
	case *expr.InPred:
		if c := col(x.Col); c >= 0 && !x.Negated {
			out[c] = append(out[c], x.Values...)
		}
	case *expr.LikePred:
		if c := col(x.Col); c >= 0 && !x.Negated {
			pre := x.Pattern.Prefix()
			if pre != "" {
				out[c] = append(out[c], value.String(pre))
				if end, ok := prefixEnd(pre); ok {
					out[c] = append(out[c], value.String(end))
				}
			}
		}
	case *expr.AndPred:
		for _, t := range x.Terms {
			literals(t, col, out)
		}
	case *expr.OrPred:
		for _, t := range x.Terms {
			literals(t, col, out)
		}
	}
}

// prefixEnd returns the smallest string greater than every string starting with
// p: p with its last byte below 0xff incremented and the rest dropped.
func prefixEnd(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// maxBoxes bounds the boxes of one query: beyond it, a union is replaced by its
// hull (still an over-approximation, so still sound).
const maxBoxes = 64

// toQuery converts a bound predicate to slot space.
func (s *space) toQuery(p expr.Pred, weight float64) squery {
	return squery{boxes: s.boxesOf(p), weight: weight}
}

func (s *space) boxesOf(p expr.Pred) []box {
	switch x := p.(type) {
	case *expr.ConstPred:
		if x.Value {
			return []box{s.full()}
		}
		return nil
	case *expr.AndPred:
		acc := []box{s.full()}
		for _, t := range x.Terms {
			acc = s.intersect(acc, s.boxesOf(t))
			if len(acc) == 0 {
				return nil
			}
		}
		return acc
	case *expr.OrPred:
		var acc []box
		for _, t := range x.Terms {
			acc = append(acc, s.boxesOf(t)...)
		}
		return s.cap(acc)
	case expr.Leaf:
		c := s.column(x.Column())
		if c < 0 {
			return []box{s.full()}
		}
		ivs := s.leafIntervals(x, c)
		out := make([]box, 0, len(ivs))
		for _, iv := range ivs {
			b := s.full()
			b[c] = iv
			out = append(out, b)
		}
		return s.cap(out)
	}
	// Column-to-column comparisons and anything unknown: no constraint.
	return []box{s.full()}
}

// leafIntervals returns the slot intervals on column c where leaf l may be TRUE.
func (s *space) leafIntervals(l expr.Leaf, c int) []ival {
	pts := s.pts[c]
	max := pts.MaxSlot()
	nonNull := []ival{{1, max}}
	slot := func(v value.Value) (uint32, bool) {
		sl, err := pts.Slot(v)
		return sl, err == nil && sl%2 == 0 && sl > 0 // literals are points: even slots
	}
	switch x := l.(type) {
	case *expr.CmpPred:
		sl, ok := slot(x.Value)
		if !ok {
			return nonNull
		}
		switch x.Op {
		case expr.OpEq, expr.OpNullSafeEq:
			return []ival{{sl, sl}}
		case expr.OpLt:
			return []ival{{1, sl - 1}}
		case expr.OpLe:
			return []ival{{1, sl}}
		case expr.OpGt:
			if sl+1 > max {
				return nil
			}
			return []ival{{sl + 1, max}}
		case expr.OpGe:
			return []ival{{sl, max}}
		}
		return nonNull
	case *expr.InPred:
		if x.Negated {
			return nonNull
		}
		out := make([]ival, 0, len(x.Values))
		for _, v := range x.Values {
			sl, ok := slot(v)
			if !ok {
				return nonNull
			}
			out = append(out, ival{sl, sl})
		}
		return out
	case *expr.NullPred:
		if x.Negated {
			return nonNull
		}
		return []ival{{0, 0}}
	case *expr.LikePred:
		if x.Negated {
			return nonNull
		}
		pre := x.Pattern.Prefix()
		if pre == "" {
			return nonNull
		}
		lo, ok := slot(value.String(pre))
		if !ok {
			return nonNull
		}
		if x.Pattern.IsExact() {
			return []ival{{lo, lo}}
		}
		hi := max
		if end, ok := prefixEnd(pre); ok {
			if e, ok := slot(value.String(end)); ok {
				hi = e - 1
			}
		}
		return []ival{{lo, hi}}
	}
	return []ival{{0, max}}
}

// intersect returns the pairwise intersections of two unions (empty ones
// dropped), capped.
func (s *space) intersect(a, b []box) []box {
	var out []box
	for _, x := range a {
	pairs:
		for _, y := range b {
			z := make(box, len(x))
			for c := range x {
				lo, hi := max(x[c].lo, y[c].lo), min(x[c].hi, y[c].hi)
				if lo > hi {
					continue pairs
				}
				z[c] = ival{lo, hi}
			}
			out = append(out, z)
		}
	}
	return s.cap(out)
}

// cap replaces a union of more than maxBoxes boxes by its hull.
func (s *space) cap(bs []box) []box {
	if len(bs) <= maxBoxes {
		return bs
	}
	h := make(box, len(bs[0]))
	copy(h, bs[0])
	for _, b := range bs[1:] {
		for c := range b {
			h[c].lo = min(h[c].lo, b[c].lo)
			h[c].hi = max(h[c].hi, b[c].hi)
		}
	}
	return []box{h}
}

// mightMatch reports whether q may match a row inside the bounding box bb
// (per-column min and max slots of the rows).
func (q *squery) mightMatch(bb box) bool {
boxes:
	for _, b := range q.boxes {
		for c, iv := range b {
			if iv.lo > bb[c].hi || iv.hi < bb[c].lo {
				continue boxes
			}
		}
		return true
	}
	return false
}
