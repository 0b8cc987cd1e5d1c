package optimize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/workload"
)

// gridWorkload filters x and y on a grid of tenths of their range [0, 1e6).
func gridWorkload(t testing.TB, n int, seed uint64) *workload.Workload {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 8))
	var sb strings.Builder
	for range n {
		x0, y0 := r.IntN(9), r.IntN(9)
		fmt.Fprintf(&sb, "x >= %d AND x < %d AND y >= %d AND y < %d\n", x0*100_000, (x0+1)*100_000, y0*100_000, (y0+1+r.IntN(2))*100_000)
	}
	w, err := workload.Parse(strings.NewReader(sb.String()), "grid")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// treeFiles returns every live file's tree tag, checking that each has one.
func treeFiles(t *testing.T, tt *testTable) map[string][]treeRef {
	t.Helper()
	out := map[string][]treeRef{}
	for _, a := range tt.snapshot(t).Files() {
		r, ok := fileTree(a)
		if !ok {
			t.Fatalf("file %s has no tree tags: %v", a.Path, a.Tags)
		}
		out[r.path] = append(out[r.path], r)
	}
	return out
}

// checkExactSkipping checks S1 on the table's statistics for the grid queries:
// every file holding a row inside a query's box is read (its x/y box meets the
// query's), and returns the mean number of files read.
func checkExactSkipping(t *testing.T, tt *testTable, w *workload.Workload) float64 {
	t.Helper()
	snap := tt.snapshot(t)
	bs := boxes(t, snap)
	var read float64
	for _, q := range w.Queries {
		var x0, x1, y0, y1 float64
		if _, err := fmt.Sscanf(q.Filter, "x >= %g AND x < %g AND y >= %g AND y < %g", &x0, &x1, &y0, &y1); err != nil {
			t.Fatalf("%q: %v", q.Filter, err)
		}
		for i, a := range snap.Files() {
			hit := bs[i].maxX >= x0 && bs[i].minX <= x1-1 && bs[i].maxY >= y0 && bs[i].minY <= y1-1
			if hit {
				read++
				continue
			}
			tt.readRecords(t, a, func(rec arrow.RecordBatch) {
				xs := rec.Column(1).(*array.Int64)
				ys := rec.Column(2).(*array.Int64)
				for j := range xs.Len() {
					if xs.IsValid(j) && ys.IsValid(j) && float64(xs.Value(j)) >= x0 && float64(xs.Value(j)) < x1 && float64(ys.Value(j)) >= y0 && float64(ys.Value(j)) < y1 {
						t.Fatalf("S1: %s holds a row of %q but its statistics skip it", a.Path, q.Filter)
					}
				}
			})
		}
	}
	return read / float64(w.Len())
}

func TestWorkloadLayoutBuildsTreeAndKeepsRows(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 3000)
	before := tt.rows(t)
	w := gridWorkload(t, 40, 1)
	readBefore := checkExactSkipping(t, tt, w)
	total := avgFileSize(t, tt) * 8
	plan, m := runOptimize(t, tt, Options{TargetFileSize: total / 8, Curve: CurveWorkload, Workload: w})
	if len(plan.Partitions) != 1 || plan.Partitions[0].Bins[0].Layout.Action != "build" {
		t.Fatalf("plan %+v", plan.Partitions)
	}
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatal("O1: the rows changed")
	}
	trees := treeFiles(t, tt)
	if len(trees) != 1 {
		t.Fatalf("%d trees", len(trees))
	}
	for path, refs := range trees {
		tr, err := loadTree(context.Background(), tt.store, path)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Leaves != 8 || tr.Workload == nil || tr.Workload.Fingerprint != w.Fingerprint() {
			t.Fatalf("tree: %d leaves, workload %v", tr.Leaves, tr.Workload)
		}
		for _, r := range refs {
			if tr.Nodes[r.node].Leaf < 0 {
				t.Errorf("a file of a full build is at internal node %d", r.node)
			}
		}
		if len(refs) < 7 || len(refs) > 11 {
			t.Errorf("%d files for 8 leaves", len(refs))
		}
		if m.NumAddedFiles != len(refs) {
			t.Errorf("metrics: %d files added, %d tagged", m.NumAddedFiles, len(refs))
		}
	}
	readAfter := checkExactSkipping(t, tt, w)
	if readAfter > readBefore/3 {
		t.Errorf("files read per query: %.2f before, %.2f after", readBefore, readAfter)
	}
	// commitInfo names the tree.
	info := lastCommitInfo(t, tt)
	var names []string
	if err := json.Unmarshal([]byte(info.OperationParameters["workloadTrees"]), &names); err != nil || len(names) != 1 {
		t.Fatalf("commitInfo workloadTrees %q: %v", info.OperationParameters["workloadTrees"], err)
	}
	if info.OperationParameters["clusteringCurve"] != `"workload"` {
		t.Errorf("clusteringCurve %q", info.OperationParameters["clusteringCurve"])
	}
}

func lastCommitInfo(t *testing.T, tt *testTable) log.CommitInfo {
	t.Helper()
	snap := tt.snapshot(t)
	_ = snap
	hist, err := tt.lg.History(context.Background(), 1)
	if err != nil || len(hist) == 0 {
		t.Fatalf("history: %v", err)
	}
	return *hist[0].CommitInfo
}

func TestWorkloadLayoutRoutesNewRows(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 3000)
	w := gridWorkload(t, 40, 2)
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: w})
	var path string
	for p := range treeFiles(t, tt) {
		path = p
	}
	tr, err := loadTree(context.Background(), tt.store, path)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing new: nothing to do.
	if plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload}); err != nil || plan.NumBins != 0 {
		t.Fatalf("plan without new files: %v %+v", err, plan)
	}
	sawInternal, sawNewLeaf := false, false
	for round := range 8 {
		// Appends of 10% each, as two files.
		recs := []arrow.RecordBatch{genRecord(1200, int64(100_000+round*10_000), uint64(50+round)), genRecord(1200, int64(105_000+round*10_000), uint64(80+round))}
		tt.appendFiles(t, recs, nil)
		for _, r := range recs {
			r.Release()
		}
		before := tt.rows(t)
		plan, _ := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload})
		if len(plan.Partitions) != 1 || plan.Partitions[0].Bins[0].Layout.Action != "route" || plan.Partitions[0].Bins[0].Layout.NewFiles != 2 {
			t.Fatalf("round %d: plan %+v", round, plan.Partitions[0].Bins[0].Layout)
		}
		if after := tt.rows(t); !slices.Equal(before, after) {
			t.Fatalf("round %d: O1: the rows changed", round)
		}
		trees := treeFiles(t, tt)
		if len(trees) != 1 || trees[path] == nil {
			t.Fatalf("round %d: new rows went to another tree: %v", round, trees)
		}
		leafFiles := 0
		for _, r := range trees[path] {
			if tr.Nodes[r.node].Leaf < 0 {
				sawInternal = true
			} else {
				leafFiles++
			}
		}
		if leafFiles > 8 {
			sawNewLeaf = true
		}
		checkExactSkipping(t, tt, w)
		checkRoutedBelowTag(t, tt, tr)
	}
	if !sawInternal || !sawNewLeaf {
		t.Errorf("new rows never waited at an internal node (%v) or never reached a leaf (%v)", sawInternal, sawNewLeaf)
	}
	// A different workload: the plan reports drift; Full rebuilds a new tree.
	other := gridWorkload(t, 10, 99)
	recs := []arrow.RecordBatch{genRecord(500, 900_000, 7)}
	tt.appendFiles(t, recs, nil)
	recs[0].Release()
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: other})
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Partitions[0].Drift; d == nil || d.Fingerprint == d.TrainingFingerprint || d.SeenWeight > 0.5 {
		t.Fatalf("drift %+v", d)
	}
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: other, Full: true})
	trees := treeFiles(t, tt)
	if len(trees) != 1 || trees[path] != nil {
		t.Fatalf("full run kept the old tree: %v", trees)
	}
}

// TestWorkloadLayoutBoundedMemory rewrites the same bin with a budget that
// holds one destination at a time: the same files (by node and rows) result.
func TestWorkloadLayoutBoundedMemory(t *testing.T) {
	layout := func(budget int64) map[string]int {
		tt := smallTable(t, "", nil, 6, 2000)
		w := gridWorkload(t, 30, 3)
		runOptimize(t, tt, Options{TargetFileSize: avgFileSize(t, tt), Curve: CurveWorkload, Workload: w, MemoryBudget: budget})
		out := map[string]int{}
		for _, a := range tt.snapshot(t).Files() {
			r, _ := fileTree(a)
			n, _ := a.NumRecords()
			out[strconv.Itoa(r.node)+"/"+strconv.FormatInt(n, 10)]++
		}
		return out
	}
	big, small := layout(1<<30), layout(1)
	if len(big) != len(small) {
		t.Fatalf("budget changed the layout: %v vs %v", big, small)
	}
	for k, v := range big {
		if small[k] != v {
			t.Fatalf("budget changed the layout: %v vs %v", big, small)
		}
	}
}

func TestWorkloadLayoutPartitionsAndErrors(t *testing.T) {
	parts := []*string{ptr("a"), ptr("b")}
	tt := smallTable(t, "p", parts, 8, 2000)
	w := gridWorkload(t, 30, 4)
	wp, err := workload.Parse(strings.NewReader("p = 'a' AND x < 500000\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	w.Queries = append(w.Queries, wp.Queries...)
	// No workload and no tree yet.
	if _, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{Curve: CurveWorkload}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("no workload: %v", err)
	}
	if err := (Options{Curve: CurveHilbert, ClusterBy: []string{"x"}, Workload: w}).Validate(); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("workload with another curve: %v", err)
	}
	before := tt.rows(t)
	runOptimize(t, tt, Options{TargetFileSize: avgFileSize(t, tt), Curve: CurveWorkload, Workload: w})
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1: the rows changed")
	}
	if trees := treeFiles(t, tt); len(trees) != 2 {
		t.Fatalf("%d trees for two partitions", len(trees))
	}
	// A broken tree file is an error naming it, not a silent rebuild.
	var path string
	for p := range treeFiles(t, tt) {
		path = p
	}
	if err := tt.store.Delete(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	if err := tt.store.PutIfAbsent(context.Background(), path, []byte("{")); err != nil {
		t.Fatal(err)
	}
	recs := []arrow.RecordBatch{genRecord(100, 1, 1), genRecord(100, 2, 2)}
	tt.appendFiles(t, recs, parts)
	for _, r := range recs {
		r.Release()
	}
	if _, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{Curve: CurveWorkload}); !errors.Is(err, ErrCorruptData) || !errors.Is(err, qdtree.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt tree: %v", err)
	}
}

// TestWorkloadLayoutCancelLeavesNoTree cancels a build while it writes and
// checks that neither data files nor the tree file are left behind.
func TestWorkloadLayoutCancelLeavesNoTree(t *testing.T) {
	tt := smallTable(t, "", nil, 6, 2000)
	before := tt.objects(t)
	w := gridWorkload(t, 30, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, Options{TargetFileSize: avgFileSize(t, tt), Curve: CurveWorkload, Workload: w,
		Progress: func(p Progress) {
			if p.Phase == "write" {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(ctx, plan); !errors.Is(err, context.Canceled) {
		t.Fatalf("execute: %v", err)
	}
	if after := tt.objects(t); !slices.Equal(before, after) {
		t.Fatalf("objects left behind: %v", after)
	}
}

// checkRoutedBelowTag checks O4: every row of a file routes to a leaf under the
// node its tag names.
func checkRoutedBelowTag(t *testing.T, tt *testTable, tr *qdtree.Tree) {
	t.Helper()
	r, err := tr.Router(dataSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tt.snapshot(t).Files() {
		ref, _ := fileTree(a)
		first, end := tr.LeafRange(ref.node)
		tt.readRecords(t, a, func(rec arrow.RecordBatch) {
			leaves := make([]int32, rec.NumRows())
			if err := r.Route(rec, leaves); err != nil {
				t.Fatal(err)
			}
			for _, l := range leaves {
				if int(l) < first || int(l) >= end {
					t.Fatalf("O4: %s (node %d, leaves [%d,%d)) holds a row of leaf %d", a.Path, ref.node, first, end, l)
				}
			}
		})
	}
}
