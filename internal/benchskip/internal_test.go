package benchskip

import (
	"bytes"
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/value"
)

func TestLineitemFollowsSpec(t *testing.T) {
	const sf = 0.01
	d, err := genLineitem(memory.NewGoAllocator(), sf, lineitemRows(sf), 7, keepSet(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer d.release()
	if d.rows != 60012 {
		t.Fatalf("rows = %d, want round(6001215×0.01) = 60012", d.rows)
	}
	i64 := func(name string) []int64 { return d.col(name).arr.(*array.Int64).Int64Values() }
	dec := func(name string) *array.Decimal128 { return d.col(name).arr.(*array.Decimal128) }
	date := func(name string) *array.Date32 { return d.col(name).arr.(*array.Date32) }
	str := func(name string) *array.String { return d.col(name).arr.(*array.String) }
	okey, pkey, skey := i64("l_orderkey"), i64("l_partkey"), i64("l_suppkey")
	line := d.col("l_linenumber").arr.(*array.Int32).Int32Values()
	qty, price, disc, tax := dec("l_quantity"), dec("l_extendedprice"), dec("l_discount"), dec("l_tax")
	ship, commit, receipt := date("l_shipdate"), date("l_commitdate"), date("l_receiptdate")
	flag, status, instr, mode, comment := str("l_returnflag"), str("l_linestatus"), str("l_shipinstruct"), str("l_shipmode"), str("l_comment")
	parts, supps := int64(2000), int64(100)
	qtySeen := map[int64]bool{}
	orders := 0
	for i := range d.rows {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("row %d: "+format, append([]any{i}, args...)...)
		}
		if (okey[i]-1)%32 >= 8 {
			fail("orderkey %d is not sparse (§4.2.3: first 8 of every 32)", okey[i])
		}
		if line[i] == 1 {
			orders++
		} else if i == 0 || okey[i-1] != okey[i] || line[i-1] != line[i]-1 {
			fail("line number %d does not follow the previous line of order %d", line[i], okey[i])
		}
		if line[i] < 1 || line[i] > 7 {
			fail("linenumber %d outside [1,7]", line[i])
		}
		if pkey[i] < 1 || pkey[i] > parts {
			fail("partkey %d outside [1,%d]", pkey[i], parts)
		}
		okSupp := false
		for s := range int64(4) {
			okSupp = okSupp || skey[i] == suppkeyFor(pkey[i], s, supps)
		}
		if !okSupp || skey[i] < 1 || skey[i] > supps {
			fail("suppkey %d is not a supplier of part %d", skey[i], pkey[i])
		}
		q := int64(qty.Value(i).LowBits())
		if q%100 != 0 || q < 100 || q > 5000 {
			fail("quantity %d/100 outside 1..50", q)
		}
		qtySeen[q/100] = true
		if p := int64(price.Value(i).LowBits()); p != q/100*retailPriceCents(pkey[i]) {
			fail("extendedprice %d ≠ quantity × retailprice", p)
		}
		if v := int64(disc.Value(i).LowBits()); v < 0 || v > 10 {
			fail("discount %d/100 outside [0.00,0.10]", v)
		}
		if v := int64(tax.Value(i).LowBits()); v < 0 || v > 8 {
			fail("tax %d/100 outside [0.00,0.08]", v)
		}
		s, c, r := int32(ship.Value(i)), int32(commit.Value(i)), int32(receipt.Value(i))
		if s < tpchStartDate+1 || s > tpchEndDate-151+121 {
			fail("shipdate %d outside the order-date window + [1,121]", s)
		}
		if r-s < 1 || r-s > 30 {
			fail("receiptdate − shipdate = %d outside [1,30]", r-s)
		}
		if c-s < 30-121 || c-s > 90-1 {
			fail("commitdate − shipdate = %d impossible", c-s)
		}
		f := flag.Value(i)
		if (r <= tpchCurrentDate && f != "R" && f != "A") || (r > tpchCurrentDate && f != "N") {
			fail("returnflag %q for receiptdate %d", f, r)
		}
		if st := status.Value(i); (s > tpchCurrentDate) != (st == "O") || (st != "O" && st != "F") {
			fail("linestatus %q for shipdate %d", st, s)
		}
		if !slices.Contains(tpchInstructions, instr.Value(i)) || !slices.Contains(tpchModes, mode.Value(i)) {
			fail("shipinstruct %q / shipmode %q not in §4.2.2.13 lists", instr.Value(i), mode.Value(i))
		}
		if n := len(comment.Value(i)); n < 10 || n > 43 {
			fail("comment length %d outside [10,43]", n)
		}
	}
	if len(qtySeen) != 50 {
		t.Errorf("saw %d distinct quantities, want all 50", len(qtySeen))
	}
	if avg := float64(d.rows) / float64(orders); avg < 3.8 || avg > 4.2 {
		t.Errorf("mean lines per order %.2f, want ≈ 4 (uniform 1..7)", avg)
	}
}

func TestSyntheticColumns(t *testing.T) {
	d, err := genSynthetic(memory.NewGoAllocator(), 20000, 3, keepSet(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer d.release()
	u := d.col("uniform").arr.(*array.Int64).Int64Values()
	z := d.col("zipf").arr.(*array.Int64).Int64Values()
	ln := d.col("lognormal").arr.(*array.Float64).Float64Values()
	x := d.col("x").arr.(*array.Int64).Int64Values()
	y := d.col("y").arr.(*array.Int64).Int64Values()
	pre, ids := d.col("prefixed").arr.(*array.String), d.col("uuid").arr.(*array.String)
	zeros, far := 0, 0
	for i := range d.rows {
		if u[i] < 0 || u[i] >= SyntheticUniformMax || z[i] < 0 || z[i] > SyntheticZipfMax || ln[i] <= 0 || x[i] < 0 || x[i] >= SyntheticXMax {
			t.Fatalf("row %d: value out of range: uniform %d zipf %d lognormal %g x %d", i, u[i], z[i], ln[i], x[i])
		}
		if z[i] == 0 {
			zeros++
		}
		if math.Abs(float64(y[i]-x[i])) > 3*SyntheticNoiseSigma {
			far++
		}
		if p := pre.Value(i); !strings.HasPrefix(p, SyntheticPrefix) || len(p) != len(SyntheticPrefix)+12 {
			t.Fatalf("row %d: prefixed %q", i, p)
		}
		id, err := uuid.Parse(ids.Value(i))
		if err != nil || id.Version() != 4 {
			t.Fatalf("row %d: uuid %q: %v", i, ids.Value(i), err)
		}
	}
	if len(SyntheticPrefix) != 40 {
		t.Errorf("prefix is %d bytes, want 40", len(SyntheticPrefix))
	}
	// P(0) = 1/ζ(1.2) truncated ≈ 0.18; y − x beyond 3σ ≈ 0.27%.
	if f := float64(zeros) / float64(d.rows); f < 0.12 || f > 0.25 {
		t.Errorf("zipf: %.3f of rows are 0, want ≈ 0.18", f)
	}
	if f := float64(far) / float64(d.rows); f > 0.01 {
		t.Errorf("y = x + noise: %.4f of rows beyond 3σ", f)
	}
}

func TestNthElementPartitionsLikeSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		key := make([]uint32, n)
		for i := range key {
			key[i] = uint32(r.IntN(1 + trial%20)) // many ties
		}
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { a[i], a[j] = a[j], a[i] })
		k := r.IntN(n + 1)
		nthElement(a, k, key)
		want := slices.Clone(a)
		slices.SortFunc(want, func(x, y int32) int {
			if c := cmp.Compare(key[x], key[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		got := slices.Clone(a[:k])
		slices.SortFunc(got, func(x, y int32) int {
			if c := cmp.Compare(key[x], key[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		})
		if !slices.Equal(got, want[:k]) {
			t.Fatalf("trial %d: a[:%d] is not the %d smallest", trial, k, k)
		}
	}
}

// smallPrepared builds a prepared run for internal tests.
func smallPrepared(t *testing.T, cfg Config) *prepared {
	t.Helper()
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := prepare(context.Background(), cfg, func(string, int, int) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.d.release)
	return p
}

func TestLayoutsArePermutationsWithEqualFiles(t *testing.T) {
	for _, ds := range []string{DatasetSynthetic, DatasetLineitem} {
		p := smallPrepared(t, Config{Dataset: ds, Rows: 5003, Files: 17, RowGroups: 3, Queries: 1, Workloads: []string{"box1-1%"}})
		for _, name := range DefaultLayouts {
			perm, err := layoutPerm(name, p.d, p.cl, 17, 3, 1)
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, p.d.rows)
			for _, r := range perm {
				if seen[r] {
					t.Fatalf("%s/%s: row %d placed twice", ds, name, r)
				}
				seen[r] = true
			}
			if len(perm) != p.d.rows {
				t.Fatalf("%s/%s: %d rows placed of %d", ds, name, len(perm), p.d.rows)
			}
			// Multiset equality of the values themselves, column by column.
			for _, c := range p.cl {
				orig := slices.Clone(c.codes)
				laid := make([]uint32, len(perm))
				for i, r := range perm {
					laid[i] = c.codes[r]
				}
				slices.Sort(orig)
				slices.Sort(laid)
				if !slices.Equal(orig, laid) {
					t.Fatalf("%s/%s: column %s values differ after layout", ds, name, c.field.Name)
				}
			}
		}
		fs, _ := fileRanges(p.d.rows, 17, 3, nil)
		for f := range 17 {
			if n := fs[f+1] - fs[f]; n != p.d.rows/17 && n != p.d.rows/17+1 {
				t.Fatalf("file %d has %d rows", f, n)
			}
		}
	}
}

func TestKDTreeOnOneColumnIsRangePartition(t *testing.T) {
	p := smallPrepared(t, Config{Dataset: DatasetSynthetic, Rows: 4000, Files: 10, RowGroups: 4, Columns: []string{"zipf"}, Queries: 1, Workloads: []string{"box1-1%"}})
	perm, err := layoutPerm(LayoutKDTree, p.d, p.cl, 10, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, rg := fileRanges(p.d.rows, 10, 4, nil)
	codes := p.cl[0].codes
	for g := 0; g+1 < len(rg)-1; g++ {
		maxHere, minNext := uint32(0), uint32(math.MaxUint32)
		for _, r := range perm[rg[g]:rg[g+1]] {
			maxHere = max(maxHere, codes[r])
		}
		for _, r := range perm[rg[g+1]:rg[g+2]] {
			minNext = min(minNext, codes[r])
		}
		if maxHere > minNext {
			t.Fatalf("row group %d max code %d > next row group's min %d", g, maxHere, minNext)
		}
	}
}

// interleave16 is the plain oracle of raw Z-order: the bits of each column's
// 16-byte encoding, interleaved most significant first, column 0 first.
func interleave16(encs [][2]uint64) []byte {
	out := make([]byte, 16*len(encs))
	bit := 0
	for level := range 128 {
		for _, e := range encs {
			w, sh := e[level/64], 63-level%64
			if w>>sh&1 == 1 {
				out[bit/8] |= 0x80 >> (bit % 8)
			}
			bit++
		}
	}
	return out
}

func TestRawZOrderMatchesInterleavingOracle(t *testing.T) {
	for _, cols := range [][]string{{"l_shipdate", "l_partkey"}, {"l_quantity", "l_comment", "l_orderkey"}, {"l_extendedprice"}} {
		p := smallPrepared(t, Config{Dataset: DatasetLineitem, Rows: 3000, Files: 10, Columns: cols, Queries: 1, Workloads: []string{"box1-1%"}, Unclustered: "l_tax"})
		perm, err := layoutPerm(LayoutZOrderRaw, p.d, p.cl, 10, 8, 0)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([][]byte, p.d.rows)
		for r := range p.d.rows {
			encs := make([][2]uint64, len(p.cl))
			for ci, c := range p.cl {
				encs[ci] = rawBytes(c, c.codes[r])
			}
			keys[r] = interleave16(encs)
		}
		for i := 1; i < len(perm); i++ {
			a, b := perm[i-1], perm[i]
			if c := bytes.Compare(keys[a], keys[b]); c > 0 || (c == 0 && a > b) {
				t.Fatalf("%v: rows %d, %d out of Morton order", cols, a, b)
			}
		}
	}
}

func TestRawBytesPreserveOrder(t *testing.T) {
	for _, name := range []string{"uniform", "lognormal", "prefixed", "zipf"} {
		p := smallPrepared(t, Config{Dataset: DatasetSynthetic, Rows: 2000, Columns: []string{name}, Unclustered: "y", Queries: 1, Workloads: []string{"box1-1%"}})
		c := p.cl[0]
		for k := 1; k < c.distinct(); k++ {
			a, b := rawBytes(c, uint32(k-1)), rawBytes(c, uint32(k))
			if a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]) {
				t.Fatalf("%s: encoding of code %d above code %d", name, k-1, k)
			}
		}
	}
}

func TestCountIndexMatchesBruteForce(t *testing.T) {
	p := smallPrepared(t, Config{Dataset: DatasetSynthetic, Rows: 9000, Queries: 1, Workloads: []string{"box1-1%"}})
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 100 {
		d := 1 + trial%4
		var terms []term
		for _, ci := range r.Perm(len(p.cl))[:d] {
			terms = append(terms, quantileRange(r, p.cl[ci], ci, r.Float64(), p.d.rows))
		}
		var want int64
		for row := range p.d.rows {
			in := true
			for _, t := range terms {
				c := t.col.codes[row]
				in = in && c >= t.lo && c <= t.hi
			}
			if in {
				want++
			}
		}
		if got := p.count.count(terms); got != want {
			t.Fatalf("trial %d: count %d, brute force %d", trial, got, want)
		}
	}
}

// TestSkippingNeverDropsMatchingFiles checks S1 end to end: every file that
// holds a matching row (found by evaluating the bound predicate on the rows)
// is read, for every layout and workload.
func TestSkippingNeverDropsMatchingFiles(t *testing.T) {
	for _, ds := range []string{DatasetSynthetic, DatasetLineitem} {
		p := smallPrepared(t, Config{Dataset: ds, Rows: 6000, Files: 12, RowGroups: 4, Queries: 8, Train: "template", TrainQueries: 30, Layouts: AllLayouts})
		rec := p.d.record()
		defer rec.Release()
		for _, name := range AllLayouts {
			lf, err := p.buildLayout(context.Background(), name, func(string, int, int) {})
			if err != nil {
				t.Fatal(err)
			}
			fileOf := make([]int, p.d.rows)
			for f := range p.cfg.Files {
				for _, r := range lf.perm[lf.fileStart[f]:lf.fileStart[f+1]] {
					fileOf[r] = f
				}
			}
			fi := skipping.NewFileIndex(lf.fileStats, p.d.schema)
			ri := skipping.NewFileIndex(lf.rgStats, p.d.schema)
			fv, rv := make([]skipping.Verdict, fi.Len()), make([]skipping.Verdict, ri.Len())
			for wi, wl := range p.workloads {
				for _, q := range p.queries[wi] {
					ev, err := p.evaluate(q, lf, fi, ri, fv, rv)
					if err != nil {
						t.Fatal(err)
					}
					sel, err := q.bound.Evaluate(rec)
					if err != nil {
						t.Fatal(err)
					}
					var matching int64
					for r := range p.d.rows {
						if sel.Contains(r) {
							matching++
							if !ev.fileRead[fileOf[r]] {
								t.Fatalf("%s/%s/%s: %q: file %d holds row %d but was skipped", ds, name, wl, q.text, fileOf[r], r)
							}
						}
					}
					if matching != q.matching {
						t.Fatalf("%s/%s: %q: %d rows match, query says %d", ds, wl, q.text, matching, q.matching)
					}
					if ev.fig.FilesRead < ev.fig.LowerBound {
						t.Fatalf("%s/%s/%s: read %d files < lower bound %d", ds, name, wl, ev.fig.FilesRead, ev.fig.LowerBound)
					}
					if ev.mismatches != 0 {
						t.Fatalf("%s/%s/%s: %q: %d cross-check mismatches", ds, name, wl, q.text, ev.mismatches)
					}
				}
			}
		}
	}
}

func TestAbsentValueIsAbsent(t *testing.T) {
	p := smallPrepared(t, Config{Dataset: DatasetLineitem, Rows: 3000, Queries: 1, Workloads: []string{"box1-1%"}})
	r := rand.New(rand.NewPCG(9, 9))
	for range 50 {
		v, ok := absentValue(r, p.key)
		if !ok {
			t.Fatal("no absent key found")
		}
		for row := range p.d.rows {
			if c, _ := value.Compare(valueAt(p.key.arr, row), v); c == 0 {
				t.Fatalf("absent value %v is at row %d", v, row)
			}
		}
	}
}

// TestWorkloadLayoutFiles checks the workload layouts: a permutation of the
// rows in exactly Files files (Q2's units), each within the tree's tolerance of
// the average plus the sample's error, and training queries held out (no
// evaluated query equals a training query's text).
func TestWorkloadLayoutFiles(t *testing.T) {
	p := smallPrepared(t, Config{Dataset: DatasetLineitem, Rows: 30_000, Files: 20, RowGroups: 2, Queries: 30, Train: "template",
		TrainQueries: 40, Workloads: []string{"template", "box2-1%"}, Layouts: []string{LayoutWorkload, LayoutWorkloadRobust}})
	if p.train == nil || p.train.Len() != 40 {
		t.Fatalf("training workload %v", p.train)
	}
	train := map[string]bool{}
	for _, q := range p.train.Queries {
		train[q.Filter] = true
	}
	held := 0
	for _, q := range p.queries[0] {
		if !train[q.bound.Source().String()] {
			held++
		}
	}
	if held < len(p.queries[0])*3/4 {
		t.Errorf("only %d of %d evaluated template queries differ from every training query", held, len(p.queries[0]))
	}
	for _, robust := range []bool{false, true} {
		perm, starts, err := p.treeLayout(context.Background(), robust)
		if err != nil {
			t.Fatal(err)
		}
		if len(starts) != 21 || starts[0] != 0 || starts[20] != p.d.rows {
			t.Fatalf("robust=%v: file starts %v", robust, starts)
		}
		seen := make([]bool, p.d.rows)
		for _, r := range perm {
			if seen[r] {
				t.Fatalf("row %d placed twice", r)
			}
			seen[r] = true
		}
		avg := float64(p.d.rows) / 20
		for f := range 20 {
			if n := float64(starts[f+1] - starts[f]); n < 0.6*avg || n > 1.4*avg {
				t.Errorf("robust=%v: file %d holds %.0f rows, average %.0f", robust, f, n, avg)
			}
		}
	}
}

// TestAdviceCheck runs the advisor check on a small table: one check per box or
// template workload, whose predicted and best candidates are among the
// advisor's candidates, with consistent shares.
func TestAdviceCheck(t *testing.T) {
	res, err := Run(context.Background(), Config{Dataset: DatasetLineitem, Rows: 20_000, Files: 20, RowGroups: 2, Queries: 20,
		Layouts: []string{LayoutHilbert}, Workloads: []string{"template", "point-present", "box2-10%"}, TrainQueries: 20, Advise: true, AdviseSample: 5_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Advice) != 2 || res.Advice[0].Workload != "template" || res.Advice[1].Workload != "box2-10%" {
		t.Fatalf("advice %+v", res.Advice)
	}
	for _, c := range res.Advice {
		names := map[string]bool{}
		for _, row := range c.Candidates {
			names[row.Name] = true
		}
		if !names[c.Predicted] || !names[c.Best] || c.SampleRows != 5_000 {
			t.Errorf("%s: predicted %q / best %q not among the candidates", c.Workload, c.Predicted, c.Best)
		}
		if c.BestPct > c.ActualPct || c.Excess < 0 || c.Candidates[0].ActualPct != c.BestPct {
			t.Errorf("%s: inconsistent shares %+v", c.Workload, c)
		}
	}
	var sb strings.Builder
	if err := res.WriteText(&sb); err != nil || !strings.Contains(sb.String(), "advice template: advisor") {
		t.Fatalf("text: %v\n%s", err, sb.String())
	}
}
