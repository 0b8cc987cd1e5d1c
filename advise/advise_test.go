package advise

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.PrimitiveTypes.Int64},
	{Name: "b", Type: arrow.PrimitiveTypes.Int64},
	{Name: "c", Type: arrow.PrimitiveTypes.Int64},
	{Name: "region", Type: arrow.BinaryTypes.String},
}, nil)

// testRows: a and b uniform and independent, c = a + noise, region one of three.
func testRows(n int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 3))
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	for range n {
		a := r.Int64N(100_000)
		b.Field(0).(*array.Int64Builder).Append(a)
		b.Field(1).(*array.Int64Builder).Append(r.Int64N(100_000))
		b.Field(2).(*array.Int64Builder).Append(a + r.Int64N(2_000))
		b.Field(3).(*array.StringBuilder).Append([]string{"eu", "us", "ap"}[r.IntN(3)])
	}
	return b.NewRecordBatch()
}

// gridWorkload filters a and b on a grid of 10ths of their range.
func gridWorkload(n int, seed uint64) *workload.Workload {
	r := rand.New(rand.NewPCG(seed, 4))
	w := &workload.Workload{}
	for range n {
		a0, b0 := r.IntN(9), r.IntN(9)
		f := fmt.Sprintf("a >= %d AND a < %d AND b >= %d AND b < %d", a0*10_000, (a0+1)*10_000, b0*10_000, (b0+1+r.IntN(2))*10_000)
		q, err := workload.NewQuery(f, float64(1+r.IntN(3)))
		if err != nil {
			panic(err)
		}
		w.Queries = append(w.Queries, q)
	}
	return w
}

func TestSimulateRanksCandidates(t *testing.T) {
	rec := testRows(20_000, 1)
	defer rec.Release()
	w := gridWorkload(60, 2)
	rep, err := Simulate(context.Background(), rec, w, Options{Files: 50, Table: "/data/t", Queries: "q.sql"})
	if err != nil {
		t.Fatal(err)
	}
	// Two columns: two sorts, three curves on the pair, two workload trees.
	if len(rep.Candidates) != 7 {
		t.Fatalf("%d candidates: %+v", len(rep.Candidates), rep.Candidates)
	}
	for i := 1; i < len(rep.Candidates); i++ {
		if rep.Candidates[i].FilesReadPct < rep.Candidates[i-1].FilesReadPct {
			t.Fatal("candidates are not sorted by files read")
		}
	}
	byName := map[string]Candidate{}
	for _, c := range rep.Candidates {
		byName[c.Name] = c
		if c.Files < 45 || c.Files > 50 {
			t.Errorf("%s has %d files", c.Name, c.Files)
		}
		if c.RatioGeoMean < 1 || c.FilesRead < c.LowerBound*0.999 {
			t.Errorf("%s beats the lower bound: %+v", c.Name, c)
		}
	}
	if rep.Best.Kind != KindWorkload {
		t.Errorf("best for a grid workload is %s, want the workload tree", rep.Best.Name)
	}
	if h := byName["hilbert(a,b)"]; rep.Best.FilesReadPct > h.FilesReadPct/2 {
		t.Errorf("tree %.2f%% vs hilbert %.2f%%: expected under half", rep.Best.FilesReadPct, h.FilesReadPct)
	}
	if byName["workload"].Command != "skiplake optimize /data/t --layout workload --queries q.sql --full" ||
		byName["workload-robust"].Command != "skiplake optimize /data/t --layout workload --queries q.sql --robustness 0.2 --workload-columns a,b --full" ||
		byName["zorder(a,b)"].Command != "skiplake optimize /data/t --zorder-by a,b --full" ||
		byName["sort(b)"].Command != "skiplake optimize /data/t --sort-by b --full" {
		t.Errorf("commands: %q %q %q", byName["workload"].Command, byName["zorder(a,b)"].Command, byName["sort(b)"].Command)
	}
	// A workload on a alone: sorting on a reads about the lower bound.
	one := &workload.Workload{}
	for i := range 20 {
		q, _ := workload.NewQuery(fmt.Sprintf("a >= %d AND a < %d", i*4_000, i*4_000+3_000), 1)
		one.Queries = append(one.Queries, q)
	}
	rep1, err := Simulate(context.Background(), rec, one, Options{Files: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep1.Candidates) != 3 || rep1.Best.RatioGeoMean > 1.5 {
		t.Errorf("one-column workload: best %+v of %d", rep1.Best, len(rep1.Candidates))
	}
}

// TestScoreMatchesDirectCount checks the simulated statistics and skipping
// against a direct count: a file is read exactly when, on every column a box
// query constrains, the file's min/max range meets the query's range.
func TestScoreMatchesDirectCount(t *testing.T) {
	rec := testRows(5_000, 5)
	defer rec.Release()
	w := gridWorkload(30, 6)
	s, err := newSim(rec, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.curveLayout(context.Background(), 3 /* hilbert */, []int{0, 1}, 20)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.score(l)
	if err != nil {
		t.Fatal(err)
	}
	av := rec.Column(0).(*array.Int64).Int64Values()
	bv := rec.Column(1).(*array.Int64).Int64Values()
	type mm struct{ a0, a1, b0, b1 int64 }
	box := make([]mm, l.nfiles)
	for i := range box {
		box[i] = mm{math.MaxInt64, math.MinInt64, math.MaxInt64, math.MinInt64}
	}
	for row, f := range l.file {
		m := &box[f]
		m.a0, m.a1, m.b0, m.b1 = min(m.a0, av[row]), max(m.a1, av[row]), min(m.b0, bv[row]), max(m.b1, bv[row])
	}
	var want float64
	for qi, b := range s.bound {
		lo, hi := map[string]int64{}, map[string]int64{}
		for _, term := range b.Root().(*expr.AndPred).Terms {
			cp := term.(*expr.CmpPred)
			if cp.Op == expr.OpGe {
				lo[cp.Col.Path[0]] = cp.Value.AsInt64()
			} else {
				hi[cp.Col.Path[0]] = cp.Value.AsInt64() - 1
			}
		}
		read := 0
		for _, m := range box {
			if m.a1 >= lo["a"] && m.a0 <= hi["a"] && m.b1 >= lo["b"] && m.b0 <= hi["b"] {
				read++
			}
		}
		want += w.Queries[qi].Weight * float64(read)
	}
	want /= w.TotalWeight()
	if math.Abs(sc.filesRead-want) > 1e-9 {
		t.Fatalf("simulated %.4f files read, direct count %.4f", sc.filesRead, want)
	}
}

func TestTableAdvisor(t *testing.T) {
	ctx := context.Background()
	tbl, err := table.Create(ctx, storage.NewMemory(), testSchema, table.CreateOptions{PartitionColumns: []string{"region"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		rec := testRows(5_000, uint64(10+i))
		_, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	w := gridWorkload(40, 7)
	q, _ := workload.NewQuery("region = 'eu' AND a < 20000", 2)
	w.Queries = append(w.Queries, q)
	var stages []string
	rep, err := Table(ctx, tbl, w, Options{Files: 30, SampleRows: 8_000, Progress: func(stage string, done, total int) {
		if done == total {
			stages = append(stages, stage)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != 20_000 || rep.SampleRows < 7_000 || rep.SampleRows > 9_000 {
		t.Fatalf("rows %d, sample %d", rep.Rows, rep.SampleRows)
	}
	var cur *Candidate
	for i := range rep.Candidates {
		if rep.Candidates[i].Kind == KindCurrent {
			cur = &rep.Candidates[i]
		}
	}
	if cur == nil || cur.Files != 12 || cur.Command != "" {
		t.Fatalf("current layout: %+v", cur)
	}
	// Appended files are spread over the whole range of a and b: every box query
	// reads every file of its partitions, the region query a third of them.
	if cur.FilesReadPct < 90 {
		t.Errorf("current layout reads %.1f%%", cur.FilesReadPct)
	}
	if rep.Best.Kind == KindCurrent || rep.Best.FilesReadPct > 30 {
		t.Errorf("best %+v", rep.Best)
	}
	if strings.Join(stages, ",") != "sample,candidates" {
		t.Errorf("progress stages %v", stages)
	}
	var txt, js, svg bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + txt.String())
	if !strings.Contains(txt.String(), "apply: skiplake optimize TABLE ") || !strings.Contains(txt.String(), "current  ") {
		t.Errorf("text report:\n%s", txt.String())
	}
	if err := rep.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"kind": "current"`) {
		t.Errorf("json report: %v\n%s", err, js.String())
	}
	for _, chart := range []string{ChartFiles, ChartBoxes} {
		svg.Reset()
		if err := rep.WriteSVG(&svg, chart); err != nil || !strings.HasPrefix(svg.String(), "<svg") {
			t.Errorf("%s chart: %v", chart, err)
		}
	}
	// Filters that do not fit the table fail before any work, naming the filter.
	bad := &workload.Workload{}
	bq, _ := workload.NewQuery("nope = 1", 1)
	bad.Queries = append(bad.Queries, bq)
	if _, err := Table(ctx, tbl, bad, Options{}); !errors.Is(err, workload.ErrBind) {
		t.Fatalf("unknown column: %v", err)
	}
	if _, err := Table(ctx, tbl, w, Options{Columns: []string{"region"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("partition column as candidate: %v", err)
	}
}

// TestHoldout builds the trees from one workload and scores on another: the
// report describes the scored workload, the curves (which do not depend on the
// queries) score the same, and the tree differs from one trained on the scored
// queries.
func TestHoldout(t *testing.T) {
	rec := testRows(20_000, 8)
	defer rec.Release()
	train, held := gridWorkload(60, 9), gridWorkload(30, 10)
	own, err := Simulate(context.Background(), rec, held, Options{Files: 40, Robustness: -1})
	if err != nil {
		t.Fatal(err)
	}
	ho, err := Simulate(context.Background(), rec, train, Options{Files: 40, Robustness: -1, Holdout: held})
	if err != nil {
		t.Fatal(err)
	}
	if ho.Queries != 30 || ho.Fingerprint != held.Fingerprint() {
		t.Fatalf("held-out report describes %d queries (%s)", ho.Queries, ho.Fingerprint)
	}
	pct := func(r *Report, name string) float64 { return candidatePct(t, r, name) }
	if pct(ho, "workload") == pct(own, "workload") {
		t.Errorf("the held-out tree scores exactly as the tree of the scored queries (%.2f%%): was it built from them?", pct(ho, "workload"))
	}
	if pct(ho, "hilbert(a,b)") != pct(own, "hilbert(a,b)") {
		t.Errorf("curves do not depend on the training queries: %.2f vs %.2f", pct(ho, "hilbert(a,b)"), pct(own, "hilbert(a,b)"))
	}
}

// TestCrossValidation: a tree scored on the queries it was cut for flatters
// itself on a workload of distinct boxes; by default such a workload scores its
// trees by two-fold cross-validation (the prediction rises, the curves' do not
// move, the report says so), NoCrossValidation scores them on their own queries,
// and a workload under MinCrossValidationQueries queries is never split.
func TestCrossValidation(t *testing.T) {
	rec := testRows(20_000, 11)
	defer rec.Release()
	boxes := func(n int, seed uint64) *workload.Workload {
		r := rand.New(rand.NewPCG(seed, 12))
		w := &workload.Workload{}
		for range n {
			a0, b0 := r.Int64N(95_000), r.Int64N(90_000)
			q, err := workload.NewQuery(fmt.Sprintf("a BETWEEN %d AND %d AND b BETWEEN %d AND %d", a0, a0+4_000, b0, b0+9_000), 1)
			if err != nil {
				t.Fatal(err)
			}
			w.Queries = append(w.Queries, q)
		}
		return w
	}
	pct := func(r *Report, name string) float64 { return candidatePct(t, r, name) }
	hasNote := func(r *Report) bool {
		for _, n := range r.Notes {
			if strings.Contains(n, "cross-validation") {
				return true
			}
		}
		return false
	}
	w := boxes(60, 13)
	cv, err := Simulate(context.Background(), rec, w, Options{Files: 40, Robustness: -1})
	if err != nil {
		t.Fatal(err)
	}
	own, err := Simulate(context.Background(), rec, w, Options{Files: 40, Robustness: -1, NoCrossValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(cv) || hasNote(own) {
		t.Errorf("notes: cross-validated %q, own queries %q", cv.Notes, own.Notes)
	}
	if pct(cv, "workload") <= pct(own, "workload") {
		t.Errorf("cross-validated tree %.2f%% is not above the tree scored on its own queries %.2f%%", pct(cv, "workload"), pct(own, "workload"))
	}
	if pct(cv, "hilbert(a,b)") != pct(own, "hilbert(a,b)") {
		t.Errorf("curves do not depend on cross-validation: %.2f vs %.2f", pct(cv, "hilbert(a,b)"), pct(own, "hilbert(a,b)"))
	}
	few := boxes(MinCrossValidationQueries-1, 14)
	a, err := Simulate(context.Background(), rec, few, Options{Files: 40, Robustness: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(context.Background(), rec, few, Options{Files: 40, Robustness: -1, NoCrossValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if hasNote(a) || pct(a, "workload") != pct(b, "workload") {
		t.Errorf("%d queries were split for cross-validation (%.2f%% vs %.2f%%)", few.Len(), pct(a, "workload"), pct(b, "workload"))
	}
}

// candidatePct is the predicted share of files read of r's candidate name.
func candidatePct(t *testing.T, r *Report, name string) float64 {
	t.Helper()
	for _, c := range r.Candidates {
		if c.Name == name {
			return c.FilesReadPct
		}
	}
	t.Fatalf("no candidate %s", name)
	return 0
}

// TestWorkloadTreeCutsAsOptimize checks that the plain workload candidate is
// the tree `optimize --layout workload` builds with the candidate's command:
// candidate columns the workload never filters (b) are named with
// --workload-columns and get the tree's reserved cuts, and the tree is the one
// qdtree.Build makes with those columns, as OPTIMIZE calls it.
func TestWorkloadTreeCutsAsOptimize(t *testing.T) {
	rec := testRows(20_000, 5)
	defer rec.Release()
	w := &workload.Workload{}
	for i := range 40 {
		q, _ := workload.NewQuery(fmt.Sprintf("a >= %d AND a < %d", i*2_400, i*2_400+1_500), 1)
		w.Queries = append(w.Queries, q)
	}
	rep, err := Simulate(context.Background(), rec, w, Options{Files: 64, Columns: []string{"a", "b"}, Table: "T", Queries: "q.sql", NoCrossValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	var plain *Candidate
	for i := range rep.Candidates {
		if rep.Candidates[i].Name == "workload" {
			plain = &rep.Candidates[i]
		}
	}
	if plain == nil {
		t.Fatal("no workload candidate")
	}
	if got := strings.Join(plain.Columns, ","); got != "a,b" {
		t.Errorf("plain tree cuts %s, want a,b", got)
	}
	if want := "skiplake optimize T --layout workload --queries q.sql --workload-columns a,b --full"; plain.Command != want {
		t.Errorf("command %q, want %q", plain.Command, want)
	}
	tr := rep.Trees["workload"]
	onB := 0
	for _, nd := range tr.Nodes {
		if strings.HasPrefix(nd.Cut, "b ") {
			onB++
		}
	}
	if onB == 0 {
		t.Error("no reserved cut on b")
	}
	want, err := qdtree.Build(context.Background(), rec, w, qdtree.Options{Leaves: rep.SimulatedFiles, Columns: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := tr.Encode()
	exp, _ := want.Encode()
	if !bytes.Equal(got, exp) {
		t.Error("the advisor's tree is not the one qdtree.Build makes with OPTIMIZE's columns")
	}
}

// TestEveryWeightedColumnIsACandidate: a column the workload weighs is never
// left out of the candidates, however many columns the workload filters on (the
// fifth column by weight used to be dropped).
func TestEveryWeightedColumnIsACandidate(t *testing.T) {
	var fields []arrow.Field
	for i := range 6 {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i+1), Type: arrow.PrimitiveTypes.Int64})
	}
	sch := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	r := rand.New(rand.NewPCG(5, 5))
	for range 5_000 {
		for i := range fields {
			b.Field(i).(*array.Int64Builder).Append(r.Int64N(10_000))
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, tc := range []struct {
		name       string
		weights    []int // weight of c1, c2, ...
		maxColumns int
	}{
		{"five columns", []int{9, 8, 7, 6, 5}, 0},
		{"six columns, two combined", []int{1, 2, 3, 4, 5, 6}, 2},
		{"one column", []int{5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &workload.Workload{}
			var want []string
			for i, wt := range tc.weights {
				col := fmt.Sprintf("c%d", i+1)
				want = append(want, col)
				q, err := workload.NewQuery(fmt.Sprintf("%s < 1000", col), float64(wt))
				if err != nil {
					t.Fatal(err)
				}
				w.Queries = append(w.Queries, q)
			}
			rep, err := Simulate(context.Background(), rec, w, Options{Files: 20, MaxColumns: tc.maxColumns})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Columns) != len(want) {
				t.Fatalf("columns %v, want every weighted column %v", rep.Columns, want)
			}
			for _, col := range want {
				if !slices.Contains(rep.Columns, col) {
					t.Errorf("column %s missing from %v", col, rep.Columns)
				}
				candidatePct(t, rep, "sort("+col+")")
			}
		})
	}
}

// TestTableAdvisesWhatOptimizeAccepts: on a clustered (liquid) table OPTIMIZE
// refuses explicit curves and workload layouts, so advise must not recommend
// them: it models the liquid clustering instead (a Hilbert curve over the
// clustering columns, applied by `optimize --full`) and names `alter
// --cluster-by` for other columns; on a plain table every candidate it lists
// passes OPTIMIZE's planning.
func TestTableAdvisesWhatOptimizeAccepts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		create    table.CreateOptions
		wantKinds bool // candidates besides the current layout remain
	}{
		{"clustered", table.CreateOptions{ClusterBy: []string{"a"}}, true},
		{"clustered2", table.CreateOptions{ClusterBy: []string{"b", "a"}}, true},
		{"plain", table.CreateOptions{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *table.Table {
				tbl, err := table.Create(ctx, storage.NewMemory(), testSchema, tc.create)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 4 {
					rec := testRows(3_000, uint64(20+i))
					_, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
					rec.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
				return tbl
			}
			tbl := build()
			w := gridWorkload(30, 9)
			rep, err := Table(ctx, tbl, w, Options{})
			if err != nil {
				t.Fatal(err)
			}
			others, liquid := 0, 0
			for _, c := range rep.Candidates {
				if c.Kind == KindCurrent {
					continue
				}
				others++
				o := table.OptimizeOptions{Full: true, DryRun: true}
				switch c.Kind {
				case KindLinear:
					o.LinearBy = c.Columns
				case KindZOrder:
					o.ZOrderBy = c.Columns
				case KindHilbert:
					o.HilbertBy = c.Columns
				case KindWorkload:
					o.Layout, o.Workload, o.Robustness = "workload", w, c.Robustness
				case KindLiquid:
					liquid++
					if !slices.Equal(c.Columns, tc.create.ClusterBy) || !strings.HasSuffix(c.Command, " --full") || strings.Contains(c.Command, "-by") {
						t.Errorf("liquid candidate %+v, want columns %v and plain `optimize --full`", c, tc.create.ClusterBy)
					}
				}
				if c.Kind != KindLiquid && len(tc.create.ClusterBy) > 0 {
					t.Errorf("advise lists %s on a liquid table", c.Name)
				}
				if _, err := tbl.Optimize(ctx, o); err != nil {
					t.Errorf("advise lists %s (%s), which optimize refuses: %v", c.Name, c.Command, err)
				}
			}
			if (others > 0) != tc.wantKinds {
				t.Fatalf("%d candidates besides the current layout: %+v", others, rep.Candidates)
			}
			if rep.Best == nil {
				t.Fatal("no recommendation")
			}
			if len(tc.create.ClusterBy) > 0 {
				if liquid != 1 {
					t.Errorf("%d liquid candidates, want 1: %+v", liquid, rep.Candidates)
				}
				if rep.Best.Kind != KindLiquid && rep.Best.Kind != KindCurrent {
					t.Errorf("best %s on a liquid table", rep.Best.Name)
				}
				if !slices.ContainsFunc(rep.Notes, func(n string) bool {
					return strings.Contains(n, "optimize refuses") && strings.Contains(n, "clustered")
				}) {
					t.Errorf("notes do not say why the candidates were left out: %v", rep.Notes)
				}
				if !slices.ContainsFunc(rep.Notes, func(n string) bool {
					return strings.Contains(n, "liquid-clustered") && strings.Contains(n, "alter") && strings.Contains(n, "--cluster-by")
				}) {
					t.Errorf("notes do not name alter --cluster-by: %v", rep.Notes)
				}
				// The liquid candidate is what `optimize --full` does: its
				// modelled share matches the rewritten table's measured one.
				snap, err := tbl.Snapshot(ctx, table.Latest())
				if err != nil {
					t.Fatal(err)
				}
				var size int64
				for _, a := range snap.Log().Files() {
					size += a.Size
				}
				target := size/8 + 1
				if _, err := tbl.Optimize(ctx, table.OptimizeOptions{Full: true, TargetFileSize: target}); err != nil {
					t.Fatal(err)
				}
				after, err := Table(ctx, tbl, w, Options{})
				if err != nil {
					t.Fatal(err)
				}
				// The same table before the rewrite, modelled at the file count
				// the rewrite wrote.
				before, err := Table(ctx, build(), w, Options{Files: after.Files})
				if err != nil {
					t.Fatal(err)
				}
				var cur, liq float64
				for _, c := range before.Candidates {
					if c.Kind == KindLiquid {
						liq = c.FilesReadPct
					}
				}
				for _, c := range after.Candidates {
					if c.Kind == KindCurrent {
						cur = c.FilesReadPct
					}
				}
				if math.Abs(cur-liq) > 15 {
					t.Errorf("liquid candidate predicted %.1f%% of files read, optimize --full gave %.1f%% (%d files)", liq, cur, after.Files)
				}
			}
		})
	}
}

// TestTableComparesAtEqualFileCounts: by default the candidates have the
// current layout's file count (they used to have the table's bytes over the
// target size, a couple of files against the current dozen), and a current
// layout that candidates cannot beat is recommended with a warning that a
// rewrite gains nothing, while one they beat is not.
func TestTableComparesAtEqualFileCounts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		sorted      bool // each appended file holds one range of a
		wantRewrite bool
	}{
		{"clustered by the filter column already", true, false},
		{"appended at random", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := table.Create(ctx, storage.NewMemory(), testSchema, table.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := testRowsOrdered(12_000, 31, tc.sorted)
			defer rec.Release()
			const files = 12
			for i := range files {
				part := rec.NewSlice(int64(i*1000), int64((i+1)*1000))
				_, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{part}, table.WriteOptions{})
				part.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			w := &workload.Workload{}
			for i := range 10 {
				// Point lookups: one file each at best, which the sorted
				// table already achieves.
				q, err := workload.NewQuery(fmt.Sprintf("a = %d", i*9_000+17), 1)
				if err != nil {
					t.Fatal(err)
				}
				w.Queries = append(w.Queries, q)
			}
			rep, err := Table(ctx, tbl, w, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Files != files {
				t.Fatalf("candidates have %d files, the current layout %d", rep.Files, files)
			}
			for _, c := range rep.Candidates {
				if c.Files != files {
					t.Errorf("%s has %d files, want %d", c.Name, c.Files, files)
				}
			}
			if rewrite := rep.Best.Kind != KindCurrent; rewrite != tc.wantRewrite {
				t.Fatalf("best %s (%.1f%%), want a rewrite %v; candidates %+v", rep.Best.Name, rep.Best.FilesReadPct, tc.wantRewrite, rep.Candidates)
			}
			if gotWarning := len(rep.Warnings) > 0; gotWarning == tc.wantRewrite {
				t.Errorf("warnings %v", rep.Warnings)
			}
			var txt bytes.Buffer
			if err := rep.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(txt.String(), "warning: a rewrite would gain nothing") == tc.wantRewrite {
				t.Errorf("text report:\n%s", txt.String())
			}
		})
	}
}

// testRowsOrdered is testRows, sorted by a when sorted is set.
func testRowsOrdered(n int, seed uint64, sorted bool) arrow.RecordBatch {
	rec := testRows(n, seed)
	if !sorted {
		return rec
	}
	defer rec.Release()
	a := rec.Column(0).(*array.Int64)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(a.Value(x), a.Value(y)) })
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	for _, i := range order {
		for c := range 3 {
			b.Field(c).(*array.Int64Builder).Append(rec.Column(c).(*array.Int64).Value(i))
		}
		b.Field(3).(*array.StringBuilder).Append(rec.Column(3).(*array.String).Value(i))
	}
	return b.NewRecordBatch()
}
