package qdtree

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/workload"
)

// TestFamTermProbMatchesBruteForce checks famTerm.prob against counting, on a
// fine grid of starts, those whose range [x, x+s] meets (a, b).
func TestFamTermProbMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct{ s, lo, hi, a, b float64 }{
		{0.1, 0, 0.9, 0, 1},     // the whole column: always read
		{0.1, 0, 0.9, 0.5, 0.6}, // interior cell: (s+c)/(1-s)
		{0.1, 0, 0.9, 0, 0.05},  // first cell: c/(1-s)
		{0.1, 0, 0.9, 0.95, 1},  // last cell
		{0, 0, 1, 0.2, 0.3},     // points: the cell's extent
		{0.3, 0.2, 0.2, 0.4, 0.5},
		{0.3, 0.2, 0.2, 0.6, 0.7},
	}
	for range 200 {
		s := r.Float64() * 0.5
		a := r.Float64()
		cases = append(cases, struct{ s, lo, hi, a, b float64 }{s, 0, 1 - s, a, a + r.Float64()*(1-a)})
	}
	for _, c := range cases {
		f := famTerm{s: c.s, lo: c.lo, hi: c.hi}
		got := f.prob(c.a, c.b)
		const steps = 200_000
		hits, total := 0, 0
		for i := range steps + 1 {
			x := c.lo + (c.hi-c.lo)*float64(i)/steps
			total++
			if x < c.b && x+c.s > c.a {
				hits++
			}
		}
		want := float64(hits) / float64(total)
		if math.Abs(got-want) > 1e-4 {
			t.Errorf("famTerm%+v.prob(%v, %v) = %v, brute force %v", f, c.a, c.b, got, want)
		}
	}
}

// indepData makes n rows of a, b, c (independent, uniform) and d = a + noise
// (1% of the range), named as evalLayout reads them.
func indepData(n int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 3))
	names := []string{"a", "b", "c", "d"}
	fields := make([]arrow.Field, len(names))
	bs := make([]*array.Int64Builder, len(names))
	for i, nm := range names {
		fields[i] = arrow.Field{Name: nm, Type: arrow.PrimitiveTypes.Int64}
		bs[i] = array.NewInt64Builder(memory.DefaultAllocator)
	}
	for range n {
		x := r.Int64N(1_000_000)
		bs[0].Append(x)
		bs[1].Append(r.Int64N(1_000_000))
		bs[2].Append(r.Int64N(1_000_000))
		bs[3].Append(x + int64(r.NormFloat64()*10_000))
	}
	arrs := make([]arrow.Array, len(bs))
	for i, b := range bs {
		arrs[i] = b.NewArray()
		b.Release()
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
}

// pairWorkload draws n queries, each a range on both columns of one of pairs
// (indexes into rec's columns): on a grid of 20 quantiles (the first column
// 1..3 steps, skewed to high values; the second 1..4 steps, uniform) unless
// continuous, when each range covers width of the quantiles at a uniform
// position.
func pairWorkload(rec arrow.RecordBatch, n int, seed uint64, pairs [][2]int, continuous bool, width float64) *workload.Workload {
	r := rand.New(rand.NewPCG(seed, 4))
	sorted := make([][]int64, rec.NumCols())
	for c := range sorted {
		sorted[c] = slices.Clone(colVals(rec, c))
		slices.Sort(sorted[c])
	}
	at := func(c int, q float64) int64 {
		v := sorted[c]
		return v[min(int(q*float64(len(v))), len(v)-1)]
	}
	w := &workload.Workload{}
	for range n {
		p := pairs[r.IntN(len(pairs))]
		var f string
		for k, c := range p {
			var lo, hi float64
			switch {
			case continuous:
				lo = r.Float64() * (1 - width)
				hi = lo + width
			case k == 0:
				steps := 1 + r.IntN(3)
				u := r.Float64()
				g0 := max((20-steps)-int(math.Floor(float64(20-steps+1)*u*u)), 0)
				lo, hi = float64(g0)/20, float64(g0+steps)/20
			default:
				steps := 1 + r.IntN(4)
				g0 := r.IntN(20 - steps + 1)
				lo, hi = float64(g0)/20, float64(g0+steps)/20
			}
			if k > 0 {
				f += " AND "
			}
			name := rec.Schema().Field(c).Name
			f += fmt.Sprintf("%s >= %d AND %s < %d", name, at(c, lo), name, at(c, hi))
		}
		q, err := workload.NewQuery(f, 1)
		if err != nil {
			panic(err)
		}
		w.Queries = append(w.Queries, q)
	}
	return w
}

// heldOut routes rec through a tree built with opts and returns the held-out
// workload's mean share of files read and geometric mean ratio to the lower
// bound.
func heldOut(t *testing.T, rec arrow.RecordBatch, train, test *workload.Workload, opts Options) (pct, ratio float64, tr *Tree) {
	t.Helper()
	tr, err := Build(context.Background(), rec, train, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tr.Router(rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	leaves := make([]int32, rec.NumRows())
	if err := r.Route(rec, leaves); err != nil {
		t.Fatal(err)
	}
	pct, ratio = evalLayout(t, rec, leaves, tr.Leaves, test)
	return pct, ratio, tr
}

// TestFitModelShapesAndContinuity checks the fitted workload: one-box queries
// grouped by the columns they constrain, marginals that sum to one, and a
// column judged continuous exactly when its bounds rarely repeat.
func TestFitModelShapesAndContinuity(t *testing.T) {
	rec := indepData(20_000, 1)
	defer rec.Release()
	grid := pairWorkload(rec, 60, 2, [][2]int{{0, 1}, {0, 2}}, false, 0)
	cont := pairWorkload(rec, 60, 3, [][2]int{{0, 1}, {0, 2}}, true, 0.1)
	for _, c := range []struct {
		name string
		w    *workload.Workload
		cont bool
	}{{"grid", grid, false}, {"continuous", cont, true}} {
		t.Run(c.name, func(t *testing.T) {
			b, err := newBuilder(rec, []int{0, 1, 2, 3}, mustBind(t, c.w, rec.Schema()), c.w, Options{Leaves: 10, Resolution: 16, Augment: -1, Fit: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			if len(b.shapes) != 2 {
				t.Fatalf("%d shapes, want 2 (a,b and a,c)", len(b.shapes))
			}
			var total float64
			for _, sh := range b.shapes {
				total += sh.weight
				if sh.cols[0] != 0 || len(sh.cols) != 2 {
					t.Errorf("shape on columns %v, want a and b or c", sh.cols)
				}
				for i := range sh.marg {
					var s float64
					for _, r := range sh.marg[i] {
						s += r.w
						if r.cont != c.cont {
							t.Errorf("range on column %d continuous=%v, want %v", sh.cols[i], r.cont, c.cont)
						}
					}
					if math.Abs(s-1) > 1e-9 {
						t.Errorf("marginal of column %d sums to %v", sh.cols[i], s)
					}
				}
			}
			// Continuous queries give all their weight to the model, grid ones half.
			want := 60.0
			if !c.cont {
				want = 30
			}
			if math.Abs(total-want) > 1e-9 {
				t.Errorf("shapes hold weight %v, want %v", total, want)
			}
			for col, got := range b.cont {
				if want := c.cont && col <= 2; got != want {
					t.Errorf("column %d continuous=%v, want %v", col, got, want)
				}
			}
		})
	}
}

// TestFittedWorkloadServesContinuousBoxes checks that the fitted workload
// generalizes: for uniform random boxes on column pairs (continuous bounds),
// a tree scored by the expected rows each cut skips under translations of the
// training boxes reads fewer files on held-out boxes than one that counts the
// training boxes (with their synthetic copies) where they fell.
func TestFittedWorkloadServesContinuousBoxes(t *testing.T) {
	rec := indepData(100_000, 5)
	defer rec.Release()
	pairs := [][2]int{{0, 1}, {0, 2}, {1, 2}}
	train := pairWorkload(rec, 100, 6, pairs, true, 0.1)
	test := pairWorkload(rec, 200, 7, pairs, true, 0.1)
	opts := Options{Leaves: 500, Columns: []string{"a", "b", "c"}}
	plainOpts := opts
	plainOpts.Fit = -1
	plain, plainRatio, _ := heldOut(t, rec, train, test, plainOpts)
	fitted, fittedRatio, _ := heldOut(t, rec, train, test, opts)
	t.Logf("held-out boxes: plain %.2f%% files (ratio %.2f), fitted %.2f%% (ratio %.2f)", plain, plainRatio, fitted, fittedRatio)
	if fitted > 0.95*plain {
		t.Errorf("fitted tree reads %.2f%% of the files, plain %.2f%%: want at least 5%% fewer", fitted, plain)
	}
}

// TestGridServesThreeIndependentColumns checks the grid candidates: a
// dashboard over three independent columns whose every query leaves one of
// them unconstrained (a with b twice as often as a with c) is served by a
// nested grid, which the builder prefers and which reads fewer files, closer
// to the lower bound, than the greedy tree.
func TestGridServesThreeIndependentColumns(t *testing.T) {
	rec := indepData(100_000, 8)
	defer rec.Release()
	pairs := [][2]int{{0, 1}, {0, 1}, {0, 2}}
	train := pairWorkload(rec, 100, 9, pairs, false, 0)
	test := pairWorkload(rec, 200, 10, pairs, false, 0)
	opts := Options{Leaves: 500, Columns: []string{"a", "b", "c"}}
	greedyOpts := opts
	greedyOpts.Grids = -1
	gp, gr, _ := heldOut(t, rec, train, test, greedyOpts)
	wp, wr, _ := heldOut(t, rec, train, test, opts)
	t.Logf("held-out dashboard: greedy %.2f%% files (ratio %.2f), default %.2f%% (ratio %.2f)", gp, gr, wp, wr)
	if wr > 0.95*gr || wp > gp {
		t.Errorf("default tree: %.2f%% files at ratio %.2f, greedy %.2f%% at %.2f", wp, wr, gp, gr)
	}
}

// TestGridChoiceIsDeterministic checks Q4 where grids and the greedy tree
// are compared: equal inputs give equal trees.
func TestGridChoiceIsDeterministic(t *testing.T) {
	rec := indepData(30_000, 11)
	defer rec.Release()
	w := pairWorkload(rec, 60, 12, [][2]int{{0, 1}, {0, 1}, {0, 2}}, false, 0)
	var first []byte
	for range 2 {
		tr, err := Build(context.Background(), rec, w, Options{Leaves: 120, Columns: []string{"a", "b", "c", "d"}})
		if err != nil {
			t.Fatal(err)
		}
		data, err := tr.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
		} else if string(first) != string(data) {
			t.Fatal("Q4: equal inputs gave different trees")
		}
	}
}
