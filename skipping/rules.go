package skipping

import (
	"math"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// nullState is what a unit's null count proves.
type nullState uint8

const (
	nullsUnknown nullState = iota // no usable null count, or some but not all rows null
	nullsNone                     // no row is null
	nullsAll                      // every row is null
)

// colStats is one column's statistics in one unit, normalised for the rules:
// lo/hi are a lower and an upper bound of the non-null values in Spark order
// (NULL when unknown); exact units (partitions) carry the single value instead.
type colStats struct {
	lo, hi value.Value
	nulls  nullState
	exact  bool
	val    value.Value // exact: the value of every row (NULL for all-null)
}

// nullStateOf interprets a null count under Delta's tightBounds rule: when bounds
// are not tight only 0 and n are meaningful.
func nullStateOf(hasNC bool, nc, n int64, tight bool) nullState {
	switch {
	case !hasNC || nc < 0 || (n >= 0 && nc > n):
		return nullsUnknown
	case nc == 0:
		return nullsNone
	case n >= 0 && nc == n:
		return nullsAll
	}
	_ = tight // 0 < nc < n proves nothing either way for our rules
	return nullsUnknown
}

// fromStatsColumn converts a stats.Column into rule form for a column of kind k.
// Bounds of another kind are dropped (unknown). A NaN lower bound is dropped: it
// would claim every value is NaN, which stats producers do not promise.
func fromStatsColumn(c *stats.Column, k value.Kind, n int64, tight bool) colStats {
	cs := colStats{nulls: nullStateOf(c.HasNullCount, c.NullCount, n, tight)}
	if c.Min.Kind() == k && !isNaN(c.Min) {
		cs.lo = c.Min
	}
	if c.Max.Kind() == k {
		cs.hi = c.Max
	}
	return cs
}

func isNaN(v value.Value) bool { return v.Kind() == value.KindFloat64 && math.IsNaN(v.AsFloat64()) }

// cmpRule decides `col op v` from the signs of (lo - v) and (hi - v).
func cmpRule(op expr.Op, hasLo bool, loV int, hasHi bool, hiV int, noNull bool) Verdict {
	switch op {
	case expr.OpEq:
		if (hasLo && loV > 0) || (hasHi && hiV < 0) {
			return CannotMatch
		}
		if hasLo && hasHi && loV == 0 && hiV == 0 && noNull {
			return MustMatch
		}
	case expr.OpNe:
		if hasLo && hasHi && loV == 0 && hiV == 0 {
			return CannotMatch
		}
		if noNull && ((hasLo && loV > 0) || (hasHi && hiV < 0)) {
			return MustMatch
		}
	case expr.OpLt:
		if hasLo && loV >= 0 {
			return CannotMatch
		}
		if hasHi && hiV < 0 && noNull {
			return MustMatch
		}
	case expr.OpLe:
		if hasLo && loV > 0 {
			return CannotMatch
		}
		if hasHi && hiV <= 0 && noNull {
			return MustMatch
		}
	case expr.OpGt:
		if hasHi && hiV <= 0 {
			return CannotMatch
		}
		if hasLo && loV > 0 && noNull {
			return MustMatch
		}
	case expr.OpGe:
		if hasHi && hiV < 0 {
			return CannotMatch
		}
		if hasLo && loV >= 0 && noNull {
			return MustMatch
		}
	}
	return MightMatch
}

// prefixRule decides whether some / every string in [lo, hi] starts with p.
// possible: some string with prefix p lies in [lo, hi] (strings with prefix p form
// the interval [p, p+"\U0010FFFF..."), so it is enough that hi >= p and that lo is
// below the end of that interval). all: both bounds start with p, so everything
// between them does.
func prefixRule(p string, hasLo bool, lo string, hasHi bool, hi string) (possible, all bool) {
	possible = !(hasHi && hi < p) && !(hasLo && lo > p && !strings.HasPrefix(lo, p))
	all = p == "" || (hasLo && hasHi && strings.HasPrefix(lo, p) && strings.HasPrefix(hi, p))
	return possible, all
}

func likeRule(lp *expr.LikePattern, negated bool, hasLo bool, lo string, hasHi bool, hi string, noNull bool) Verdict {
	p := lp.Prefix()
	switch {
	case lp.IsExact():
		op := expr.OpEq
		if negated {
			op = expr.OpNe
		}
		return cmpRule(op, hasLo, strings.Compare(lo, p), hasHi, strings.Compare(hi, p), noNull)
	case lp.IsPrefixOnly():
		possible, all := prefixRule(p, hasLo, lo, hasHi, hi)
		if !negated {
			if !possible {
				return CannotMatch
			}
			if all && noNull {
				return MustMatch
			}
			return MightMatch
		}
		if all {
			return CannotMatch
		}
		if !possible && noNull {
			return MustMatch
		}
		return MightMatch
	}
	if !negated && p != "" {
		if possible, _ := prefixRule(p, hasLo, lo, hasHi, hi); !possible {
			return CannotMatch
		}
	}
	return MightMatch
}

// leafRule applies the rules table to one leaf and one unit's column statistics.
func leafRule(l expr.Leaf, cs colStats) Verdict {
	col := l.Column()
	if cs.exact {
		v := cs.val
		if !v.IsNull() && v.Kind() != col.Kind {
			return MightMatch
		}
		if l.Matches(v) {
			return MustMatch
		}
		return CannotMatch
	}
	if np, ok := l.(*expr.NullPred); ok {
		switch {
		case cs.nulls == nullsNone && np.Negated, cs.nulls == nullsAll && !np.Negated:
			return MustMatch
		case cs.nulls == nullsNone && !np.Negated, cs.nulls == nullsAll && np.Negated:
			return CannotMatch
		}
		return MightMatch
	}
	if cs.nulls == nullsAll {
		return CannotMatch // every other leaf needs a non-null value
	}
	noNull := cs.nulls == nullsNone
	hasLo, hasHi := !cs.lo.IsNull(), !cs.hi.IsNull()
	cmpB := func(b value.Value, has bool, v value.Value) int {
		if !has {
			return 0
		}
		c, _ := value.Compare(b, v)
		return c
	}
	switch p := l.(type) {
	case *expr.CmpPred:
		return cmpRule(p.Op, hasLo, cmpB(cs.lo, hasLo, p.Value), hasHi, cmpB(cs.hi, hasHi, p.Value), noNull)
	case *expr.InPred:
		return inRule(len(p.Values), p.Negated, hasLo, hasHi, noNull, func(i int) (int, int) {
			return cmpB(cs.lo, hasLo, p.Values[i]), cmpB(cs.hi, hasHi, p.Values[i])
		}, func() bool { return hasLo && hasHi && cmpB(cs.lo, true, cs.hi) == 0 })
	case *expr.LikePred:
		return likeRule(p.Pattern, p.Negated, hasLo, cs.lo.AsString(), hasHi, cs.hi.AsString(), noNull)
	}
	return MightMatch
}

// inRule decides `col [NOT] IN (v0..vk-1)`; at(i) gives the signs of (lo - vi) and
// (hi - vi); point reports whether lo == hi (the unit holds a single value).
func inRule(k int, negated, hasLo, hasHi, noNull bool, at func(i int) (int, int), point func() bool) Verdict {
	inside, onPoint := false, false
	for i := 0; i < k; i++ {
		lv, hv := at(i)
		if !(hasLo && lv > 0) && !(hasHi && hv < 0) {
			inside = true
			if hasLo && hasHi && lv == 0 && hv == 0 {
				onPoint = true
			}
		}
	}
	if !negated {
		switch {
		case !inside:
			return CannotMatch
		case onPoint && noNull:
			return MustMatch
		}
		return MightMatch
	}
	switch {
	case onPoint && point():
		return CannotMatch
	case !inside && noNull:
		return MustMatch
	}
	return MightMatch
}

// evalTree evaluates a bound predicate against one unit's statistics. lookup
// returns a column's statistics (false: none). n is the unit's row count (-1 when
// unknown); an empty unit cannot match.
func evalTree(p expr.Pred, lookup func(*expr.BoundColumn) (colStats, bool), n int64) Verdict {
	if n == 0 {
		return CannotMatch
	}
	return evalNode(p, lookup)
}

func evalNode(p expr.Pred, lookup func(*expr.BoundColumn) (colStats, bool)) Verdict {
	switch p := p.(type) {
	case *expr.ConstPred:
		if p.Value {
			return MustMatch
		}
		return CannotMatch
	case *expr.AndPred:
		v := MustMatch
		for _, t := range p.Terms {
			if v = v.And(evalNode(t, lookup)); v == CannotMatch {
				break
			}
		}
		return v
	case *expr.OrPred:
		v := CannotMatch
		for _, t := range p.Terms {
			if v = v.Or(evalNode(t, lookup)); v == MustMatch {
				break
			}
		}
		return v
	case expr.Leaf:
		cs, ok := lookup(p.Column())
		if !ok {
			return MightMatch
		}
		return leafRule(p, cs)
	}
	return MightMatch // column-to-column comparisons and anything unknown
}
