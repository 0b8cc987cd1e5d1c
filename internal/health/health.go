package health

import (
	"math"
	"sort"

	"github.com/skiplake/skiplake/value"
)

// FileRange is what the log records about one file for one column.
type FileRange struct {
	// Min and Max bound the file's non-null values; used when Bounded.
	Min, Max value.Value
	// Bounded is true when both bounds are known (and are not NaN).
	Bounded bool
	// AllNull is true when every row of the file is null in the column.
	AllNull bool
	// Rows is the file's live row count (its weight).
	Rows int64
}

// Column is the skipping health of one column.
type Column struct {
	// Column names the column (dotted path).
	Column string `json:"column"`
	// Files is how many files the table has; FilesWithoutBounds how many have no
	// usable bounds for the column (they are read by every query on it).
	Files              int `json:"files"`
	FilesWithoutBounds int `json:"filesWithoutBounds"`
	// AverageDepth is the row-weighted average number of files whose range contains
	// a value (see the package comment); MaxDepth the largest depth of any piece
	// holding rows.
	AverageDepth float64 `json:"averageDepth"`
	MaxDepth     int     `json:"maxDepth"`
	// PointReadPercent is the expected percentage of files a query c = v reads for
	// the value v of a random row.
	PointReadPercent float64 `json:"pointReadPercent"`
	// RangeFraction is the fraction of rows the range queries select (0.01) and
	// RangeReadPercent the expected percentage of files such a query reads.
	RangeFraction    float64 `json:"rangeFraction"`
	RangeReadPercent float64 `json:"rangeReadPercent"`
}

// pieces is the piece model of one column (see the package comment).
type pieces struct {
	files     int
	unbounded int       // files covering every piece
	lo, hi    []int     // piece span of each bounded file (inclusive)
	weight    []float64 // row weight of each piece
	depth     []int     // files covering each piece
	startsLE  []int     // startsLE[p]: bounded files whose span starts at or before p
	endsLT    []int     // endsLT[p]: bounded files whose span ends before p
}

func build(files []FileRange) *pieces {
	pc := &pieces{files: len(files)}
	var ends []value.Value
	var bounded []FileRange
	var unboundedRows float64
	for _, f := range files {
		switch {
		case f.AllNull:
		case f.Bounded:
			ends = append(ends, f.Min, f.Max)
			bounded = append(bounded, f)
		default:
			pc.unbounded++
			unboundedRows += float64(f.Rows)
		}
	}
	sort.Slice(ends, func(i, j int) bool { c, _ := value.Compare(ends[i], ends[j]); return c < 0 })
	uniq := ends[:0]
	for _, e := range ends {
		if len(uniq) == 0 {
			uniq = append(uniq, e)
			continue
		}
		if c, _ := value.Compare(uniq[len(uniq)-1], e); c != 0 {
			uniq = append(uniq, e)
		}
	}
	idx := func(v value.Value) int {
		return sort.Search(len(uniq), func(i int) bool { c, _ := value.Compare(uniq[i], v); return c >= 0 })
	}
	n := 0
	if len(uniq) > 0 {
		n = 2*len(uniq) - 1
	} else if pc.unbounded > 0 {
		n = 1 // one piece: the whole (unknown) domain
	}
	pc.weight = make([]float64, n)
	pc.depth = make([]int, n)
	diff := make([]int, n+1)
	wdiff := make([]float64, n+1)
	for _, f := range bounded {
		lo, hi := 2*idx(f.Min), 2*idx(f.Max)
		if hi < lo { // min > max: a broken writer; treat as covering both
			lo, hi = hi, lo
		}
		pc.lo, pc.hi = append(pc.lo, lo), append(pc.hi, hi)
		diff[lo]++
		diff[hi+1]--
		per := float64(f.Rows) / float64(hi-lo+1)
		wdiff[lo] += per
		wdiff[hi+1] -= per
	}
	pc.startsLE = make([]int, n)
	pc.endsLT = make([]int, n)
	starts := make([]int, n)
	endsAt := make([]int, n)
	for i := range pc.lo {
		starts[pc.lo[i]]++
		endsAt[pc.hi[i]]++
	}
	for p := 0; p < n; p++ {
		pc.startsLE[p] = starts[p]
		if p > 0 {
			pc.startsLE[p] += pc.startsLE[p-1]
			pc.endsLT[p] = pc.endsLT[p-1] + endsAt[p-1]
		}
	}
	d, w := 0, 0.0
	for p := 0; p < n; p++ {
		d += diff[p]
		w += wdiff[p]
		pc.depth[p] = d + pc.unbounded
		pc.weight[p] = math.Max(w, 0) + unboundedRows/float64(n)
	}
	return pc
}

// Analyze computes the health of one column from its file ranges; rangeFraction is
// the fraction of rows the range queries select (0 means 0.01).
func Analyze(name string, files []FileRange, rangeFraction float64) Column {
	if rangeFraction <= 0 {
		rangeFraction = 0.01
	}
	pc := build(files)
	c := Column{Column: name, Files: len(files), FilesWithoutBounds: pc.unbounded, RangeFraction: rangeFraction}
	var W, dw float64
	for p := range pc.weight {
		W += pc.weight[p]
		dw += pc.weight[p] * float64(pc.depth[p])
		if pc.weight[p] > 0 && pc.depth[p] > c.MaxDepth {
			c.MaxDepth = pc.depth[p]
		}
	}
	if W <= 0 || c.Files == 0 {
		return c
	}
	c.AverageDepth = dw / W
	c.PointReadPercent = 100 * c.AverageDepth / float64(c.Files)
	c.RangeReadPercent = 100 * pc.expectedRangeReads(rangeFraction) / float64(c.Files)
	return c
}

// expectedRangeReads is the expected number of files a window of q·W rows reads, the
// window's start uniform over [0, (1-q)·W]: the start axis is cut where a window end
// crosses a piece boundary, and on each cut segment the pieces touched — hence the
// files read — are constant.
func (pc *pieces) expectedRangeReads(q float64) float64 {
	n := len(pc.weight)
	cum := make([]float64, n+1) // cum[p] = weight before piece p
	for p := 0; p < n; p++ {
		cum[p+1] = cum[p] + pc.weight[p]
	}
	W := cum[n]
	if q >= 1 {
		return float64(pc.readsBetween(0, n-1))
	}
	L := q * W
	span := W - L
	// Breakpoints of s in (0, span): s = cum[p] (the window start enters piece p) and
	// s = cum[p] - L (the window end enters piece p).
	bps := []float64{0, span}
	for p := 1; p < n; p++ {
		for _, s := range []float64{cum[p], cum[p] - L} {
			if s > 0 && s < span {
				bps = append(bps, s)
			}
		}
	}
	sort.Float64s(bps)
	// Pieces with weight touched by [s, s+L]: from the piece holding s to the piece
	// holding s+L (zero-weight pieces between them are touched too: the range
	// predicate covers their values).
	first := func(x float64) int { // the positive-weight piece containing position x (right-continuous)
		p := sort.Search(n, func(i int) bool { return cum[i+1] > x })
		if p >= n {
			p = n - 1
		}
		return p
	}
	last := func(x float64) int { // the positive-weight piece containing position x (left-continuous)
		p := sort.Search(n, func(i int) bool { return cum[i+1] >= x })
		if p >= n {
			p = n - 1
		}
		for p > 0 && pc.weight[p] == 0 {
			p--
		}
		return p
	}
	if span <= 0 {
		return float64(pc.readsBetween(first(0), last(W)))
	}
	total := 0.0
	for i := 0; i+1 < len(bps); i++ {
		a, b := bps[i], bps[i+1]
		if b <= a {
			continue
		}
		mid := (a + b) / 2
		lo, hi := first(mid), last(mid+L)
		if hi < lo {
			hi = lo
		}
		total += (b - a) * float64(pc.readsBetween(lo, hi))
	}
	return total / span
}

// readsBetween counts the files that cover at least one piece in [a, b]: those
// starting at or before b, less those ending before a (which start before a too).
func (pc *pieces) readsBetween(a, b int) int {
	return pc.unbounded + pc.startsLE[b] - pc.endsLT[a]
}
