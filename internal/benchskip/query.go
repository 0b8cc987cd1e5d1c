package benchskip

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// term is one range of a query on a column: lo ≤ value ≤ hi, held both as
// order codes (for exact row counting) and as typed values (for the
// predicate and the min/max cross-check).
type term struct {
	col      *column
	ci       int // index among the clustering columns, -1 if not one
	lo, hi   uint32
	loV, hiV value.Value
	absent   bool // a point lookup of a value the column does not hold
}

// query is one generated query of a workload.
type query struct {
	text     string
	bound    *expr.Bound
	terms    []term
	bloom    bool
	probe    bloom.Probe
	matching int64
}

// predicate renders the terms as filter text for expr.Parse.
func predicate(terms []term) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		name := expr.QuoteName(t.col.field.Name)
		if c, _ := value.Compare(t.loV, t.hiV); c == 0 {
			parts[i] = name + " = " + expr.FormatValue(t.loV)
			continue
		}
		parts[i] = name + " >= " + expr.FormatValue(t.loV) + " AND " + name + " <= " + expr.FormatValue(t.hiV)
	}
	return strings.Join(parts, " AND ")
}

// quantileRange picks a random range of c covering frac of its quantiles.
func quantileRange(r *rand.Rand, c *column, ci int, frac float64, rows int) term {
	q0 := r.Float64() * (1 - frac)
	pos0 := int64(q0 * float64(rows))
	pos1 := int64(math.Ceil((q0+frac)*float64(rows))) - 1
	pos1 = min(max(pos1, pos0), int64(rows)-1)
	lo, hi := c.codeAtPos(pos0), c.codeAtPos(pos1)
	return term{col: c, ci: ci, lo: lo, hi: hi, loV: c.codeValue(lo), hiV: c.codeValue(hi)}
}

// absentValue draws a value of the key column's type that the column does not
// hold: a random integer between its extremes, or a fresh random UUID string.
func absentValue(r *rand.Rand, c *column) (value.Value, bool) {
	first, last := c.codeValue(0), c.codeValue(uint32(c.distinct()-1))
	for range 1000 {
		var v value.Value
		switch first.Kind() {
		case value.KindInt64:
			lo, hi := first.AsInt64(), last.AsInt64()
			v = value.Int64(lo + r.Int64N(hi-lo+1))
		case value.KindDate:
			lo, hi := first.AsInt64(), last.AsInt64()
			v = value.Date(lo + r.Int64N(hi-lo+1))
		case value.KindString:
			id, _ := uuid.NewRandomFromReader(randReader{r})
			v = value.String(id.String())
		default:
			return value.Null(), false
		}
		if _, found := c.findCode(v); !found {
			return v, true
		}
	}
	return value.Null(), false
}

// genQueries generates the queries of workload w. It returns a note instead
// of queries when the workload cannot run on this data.
func (p *prepared) genQueries(w Workload, name string, n int, seed uint64) ([]*query, string, error) {
	return p.genQueriesStream(w, name, n, seed, hashName(name))
}

// genQueriesStream is genQueries drawing from the random stream (seed, stream).
func (p *prepared) genQueriesStream(w Workload, name string, n int, seed, stream uint64) ([]*query, string, error) {
	r := rand.New(rand.NewPCG(seed, stream))
	out := make([]*query, 0, n)
	for range n {
		q := &query{bloom: w.Bloom}
		switch w.Kind {
		case WorkloadBox:
			frac := math.Pow(w.Selectivity, 1/float64(w.Dims))
			for _, ci := range r.Perm(len(p.cl))[:w.Dims] {
				q.terms = append(q.terms, quantileRange(r, p.cl[ci], ci, frac, p.d.rows))
			}
			q.matching = p.count.count(q.terms)
		case WorkloadTemplate:
			q.terms = p.templateQuery(r, w.Dims == 3)
			q.matching = p.count.count(q.terms)
		case WorkloadUnclustered:
			t := quantileRange(r, p.unclustered, -1, w.Selectivity, p.d.rows)
			q.terms = []term{t}
			q.matching = t.col.cum[t.hi+1] - t.col.cum[t.lo]
		case WorkloadPoint:
			k := p.key.codes[r.IntN(p.d.rows)]
			v := p.key.codeValue(k)
			q.terms = []term{{col: p.key, ci: -1, lo: k, hi: k, loV: v, hiV: v}}
			q.matching = p.key.cum[k+1] - p.key.cum[k]
		case WorkloadAbsent:
			v, ok := absentValue(r, p.key)
			if !ok {
				return nil, "no absent value of " + p.key.field.Name + " found; workload skipped", nil
			}
			q.terms = []term{{col: p.key, ci: -1, loV: v, hiV: v, absent: true}}
		}
		q.text = predicate(q.terms)
		e, err := expr.Parse(q.text)
		if err != nil {
			return nil, "", errorf(ErrInternal, "workload %s: parse %q: %v", name, q.text, err)
		}
		if q.bound, err = expr.Bind(e, p.d.schema); err != nil {
			return nil, "", errorf(ErrInternal, "workload %s: bind %q: %v", name, q.text, err)
		}
		if w.Bloom {
			q.probe = bloom.NewProbe(q.terms[0].loV)
		}
		out = append(out, q)
	}
	return out, "", nil
}

// hashName is a small FNV-1a hash so each workload draws its own stream.
func hashName(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// boxMightMatch is the direct box-intersection test on typed statistics (the
// cross-check of package skipping): a file may hold a matching row unless some
// term's range lies entirely below the column's Min or above its Max. Missing
// or NULL bounds prove nothing.
func boxMightMatch(f *stats.File, terms []term) bool {
	for _, t := range terms {
		c := f.Column(t.col.field.Name)
		if c == nil {
			continue
		}
		if c.HasNullCount && f.NumRecords >= 0 && c.NullCount == f.NumRecords {
			return false // every value NULL: no range matches
		}
		if cmpMax, ok := value.Compare(c.Max, t.loV); ok && cmpMax < 0 {
			return false
		}
		if cmpMin, ok := value.Compare(c.Min, t.hiV); ok && cmpMin > 0 {
			return false
		}
	}
	return true
}

// countIndex counts the rows matching a box exactly: a k-d tree over the
// clustering columns' codes with small leaves, whose per-leaf code ranges
// decide most leaves without looking at rows.
type countIndex struct {
	rows      []int32
	leafStart []int
	lo, hi    [][]uint32 // [clustering column][leaf]
	cl        []*column
}

const countLeafRows = 1024

func newCountIndex(cl []*column, n int) *countIndex {
	leaves := max(1, (n+countLeafRows-1)/countLeafRows)
	ix := &countIndex{rows: make([]int32, n), cl: cl}
	for i := range ix.rows {
		ix.rows[i] = int32(i)
	}
	kdSplit(ix.rows, cl, leaves, 1)
	ix.leafStart = make([]int, leaves+1)
	for l := range ix.leafStart {
		ix.leafStart[l] = cut(n, leaves, l)
	}
	ix.lo = make([][]uint32, len(cl))
	ix.hi = make([][]uint32, len(cl))
	for ci, c := range cl {
		ix.lo[ci] = make([]uint32, leaves)
		ix.hi[ci] = make([]uint32, leaves)
		for l := range leaves {
			lo, hi := uint32(math.MaxUint32), uint32(0)
			for _, r := range ix.rows[ix.leafStart[l]:ix.leafStart[l+1]] {
				lo, hi = min(lo, c.codes[r]), max(hi, c.codes[r])
			}
			ix.lo[ci][l], ix.hi[ci][l] = lo, hi
		}
	}
	return ix
}

// count returns the number of rows inside every term (terms on clustering
// columns only).
func (ix *countIndex) count(terms []term) int64 {
	var n int64
leaves:
	for l := range len(ix.leafStart) - 1 {
		inside := true
		for _, t := range terms {
			lo, hi := ix.lo[t.ci][l], ix.hi[t.ci][l]
			if hi < t.lo || lo > t.hi {
				continue leaves
			}
			if lo < t.lo || hi > t.hi {
				inside = false
			}
		}
		rows := ix.rows[ix.leafStart[l]:ix.leafStart[l+1]]
		if inside {
			n += int64(len(rows))
			continue
		}
	rowLoop:
		for _, r := range rows {
			for _, t := range terms {
				if c := t.col.codes[r]; c < t.lo || c > t.hi {
					continue rowLoop
				}
			}
			n++
		}
	}
	return n
}
