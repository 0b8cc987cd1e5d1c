package health

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/skiplake/skiplake/value"
)

func rng(lo, hi int64, rows int64) FileRange {
	return FileRange{Min: value.Int64(lo), Max: value.Int64(hi), Bounded: true, Rows: rows}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestAnalyzeKnownLayouts(t *testing.T) {
	cases := []struct {
		name              string
		files             []FileRange
		depth, point, rng float64
		maxDepth          int
	}{
		{"disjoint sorted files: depth 1", []FileRange{rng(0, 9, 10), rng(10, 19, 10), rng(20, 29, 10), rng(30, 39, 10)}, 1, 25, -1, 1},
		{"identical ranges: every file everywhere", []FileRange{rng(0, 9, 10), rng(0, 9, 10), rng(0, 9, 10)}, 3, 100, 100, 3},
		{"one file", []FileRange{rng(5, 5, 7)}, 1, 100, 100, 1},
		// The gap (9, 10) holds only the unbounded file's share of rows: depth 1 there.
		{"file without bounds is read by every query", []FileRange{rng(0, 9, 10), rng(10, 19, 10), {Rows: 5}}, 345.0 / 7 / 25, 100 * 345.0 / 7 / 25 / 3, -1, 2},
		{"all-null file is never read", []FileRange{rng(0, 9, 10), {AllNull: true, Rows: 5}}, 1, 50, 50, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			col := Analyze("c", c.files, 0.01)
			if !near(col.AverageDepth, c.depth) || !near(col.PointReadPercent, c.point) || col.MaxDepth != c.maxDepth {
				t.Fatalf("depth %v point %v max %d, want %v %v %d", col.AverageDepth, col.PointReadPercent, col.MaxDepth, c.depth, c.point, c.maxDepth)
			}
			if c.rng >= 0 && !near(col.RangeReadPercent, c.rng) {
				t.Fatalf("range %v, want %v", col.RangeReadPercent, c.rng)
			}
			if want := oracle(c.files, 0.01); !near(col.RangeReadPercent, want.RangeReadPercent) {
				t.Fatalf("range %v, oracle %v", col.RangeReadPercent, want.RangeReadPercent)
			}
		})
	}
	// Range queries read more than point queries, and sorted files beat random ones.
	var sorted, random []FileRange
	r := rand.New(rand.NewPCG(1, 2))
	for i := int64(0); i < 100; i++ {
		sorted = append(sorted, rng(i*100, i*100+99, 100))
		a, b := r.Int64N(10000), r.Int64N(10000)
		random = append(random, rng(min(a, b), max(a, b), 100))
	}
	s, x := Analyze("c", sorted, 0.01), Analyze("c", random, 0.01)
	if !(s.RangeReadPercent >= s.PointReadPercent && s.RangeReadPercent < 3 && x.RangeReadPercent > 10*s.RangeReadPercent) {
		t.Fatalf("sorted %+v random %+v", s, x)
	}
}

// oracle evaluates the definitions of the package comment directly: pieces built
// one by one, every file checked against every piece, and the range expectation as
// a sum over every pair of first and last piece a window can touch of the measure of
// window starts that touch exactly those pieces.
func oracle(files []FileRange, q float64) Column {
	var ends []int64
	for _, f := range files {
		if f.Bounded && !f.AllNull {
			ends = append(ends, f.Min.AsInt64(), f.Max.AsInt64())
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	var u []int64
	for _, e := range ends {
		if len(u) == 0 || u[len(u)-1] != e {
			u = append(u, e)
		}
	}
	// Piece k: even k is the point u[k/2]; odd k the gap (u[k/2], u[k/2+1]).
	n := 2*len(u) - 1
	if len(u) == 0 {
		n = 1
	}
	covers := func(f FileRange, k int) bool {
		if f.AllNull {
			return false
		}
		if !f.Bounded {
			return true
		}
		lo, hi := f.Min.AsInt64(), f.Max.AsInt64()
		if k%2 == 0 {
			v := u[k/2]
			return lo <= v && v <= hi
		}
		return lo <= u[k/2] && u[k/2+1] <= hi
	}
	w := make([]float64, n)
	d := make([]int, n)
	for _, f := range files {
		cnt := 0
		for k := 0; k < n; k++ {
			if covers(f, k) {
				cnt++
			}
		}
		for k := 0; k < n; k++ {
			if covers(f, k) {
				w[k] += float64(f.Rows) / float64(cnt)
				d[k]++
			}
		}
	}
	c := Column{Files: len(files)}
	var W, dw float64
	for k := range w {
		W += w[k]
		dw += w[k] * float64(d[k])
	}
	if W == 0 {
		return c
	}
	c.AverageDepth = dw / W
	c.PointReadPercent = 100 * c.AverageDepth / float64(len(files))
	reads := func(i, j int) int {
		r := 0
		for _, f := range files {
			for k := i; k <= j; k++ {
				if covers(f, k) {
					r++
					break
				}
			}
		}
		return r
	}
	cum := make([]float64, n+1)
	for k := 0; k < n; k++ {
		cum[k+1] = cum[k] + w[k]
	}
	L := q * W
	span := W - L
	total := 0.0
	for i := 0; i < n; i++ {
		if w[i] == 0 {
			continue
		}
		for j := i; j < n; j++ {
			if w[j] == 0 {
				continue
			}
			// Starts s in [cum[i], cum[i+1]) with the end s+L in (cum[j], cum[j+1]].
			lo := math.Max(math.Max(cum[i], cum[j]-L), 0)
			hi := math.Min(math.Min(cum[i+1], cum[j+1]-L), span)
			if hi > lo {
				total += (hi - lo) * float64(reads(i, j))
			}
		}
	}
	c.RangeReadPercent = 100 * total / span / float64(len(files))
	return c
}

func TestAnalyzeMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 300; trial++ {
		nf := 1 + r.IntN(25)
		domain := int64(1 + r.IntN(60))
		files := make([]FileRange, nf)
		for i := range files {
			a, b := r.Int64N(domain), r.Int64N(domain)
			files[i] = rng(min(a, b), max(a, b), 1+r.Int64N(50))
			switch r.IntN(12) {
			case 0:
				files[i] = FileRange{Rows: files[i].Rows}
			case 1:
				files[i] = FileRange{AllNull: true, Rows: files[i].Rows}
			}
		}
		q := []float64{0.01, 0.1, 0.5, 0.001}[r.IntN(4)]
		got, want := Analyze("c", files, q), oracle(files, q)
		if !near(got.AverageDepth, want.AverageDepth) || !near(got.PointReadPercent, want.PointReadPercent) ||
			math.Abs(got.RangeReadPercent-want.RangeReadPercent) > 1e-6 {
			t.Fatalf("trial %d (q=%v, files %v):\n got  %+v\n want %+v", trial, q, fmt.Sprint(files), got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	files := []File{
		{Size: 10 << 10, Partition: "a"},
		{Size: 100 << 10, Partition: "a", Clustered: true, ClusteredByCurrent: true},
		{Size: 2 << 20, Partition: "b", Clustered: true},
		{Size: 2 << 30, Partition: "b"},
	}
	s := Summarize(files, 1<<20)
	if s.Files != 4 || s.Partitions != 2 || s.SmallFiles != 2 || s.SmallBytes != 110<<10 {
		t.Fatalf("%+v", s)
	}
	if s.Histogram[0].Files != 1 || s.Histogram[1].Files != 1 || s.Histogram[3].Files != 1 || s.Histogram[8].Files != 1 {
		t.Fatalf("histogram %+v", s.Histogram)
	}
	if s.Histogram[8].Label() != ">= 1 GiB" || s.Histogram[1].Label() != "64 KiB-256 KiB" {
		t.Fatalf("labels %q %q", s.Histogram[8].Label(), s.Histogram[1].Label())
	}
	wantFrac := float64(100<<10+2<<20) / float64(s.Bytes)
	if !near(s.ClusteredFraction, wantFrac) || !near(s.ClusteredByCurrentFraction, float64(100<<10)/float64(s.Bytes)) {
		t.Fatalf("fractions %v %v", s.ClusteredFraction, s.ClusteredByCurrentFraction)
	}
	if w := NewWriteAmplification(0, 5, 100, 150); w.Ratio != 2.5 {
		t.Fatalf("ratio %v", w.Ratio)
	}
	if FormatBytes(1536) != "1.5 KiB" || FormatBytes(12) != "12 B" {
		t.Fatal(FormatBytes(1536))
	}
}
