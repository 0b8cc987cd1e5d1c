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
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	params := info.DisplayParameters()
	var names []string
	if err := json.Unmarshal([]byte(params["workloadTrees"]), &names); err != nil || len(names) != 1 {
		t.Fatalf("commitInfo workloadTrees %q: %v", params["workloadTrees"], err)
	}
	if params["clusteringCurve"] != "workload" {
		t.Errorf("clusteringCurve %q", params["clusteringCurve"])
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
	checkRoutedBelowTag(t, tt)
	// Nothing new: nothing to do.
	if plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload}); err != nil || plan.NumBins != 0 {
		t.Fatalf("plan without new files: %v %+v", err, plan)
	}
	// Appends of 10% each, as two files spanning the whole tree: they wait where
	// they are (at the root) until the table has doubled, then one run re-splits
	// every leaf with its new rows.
	base := int64(8 * 3000)
	var appended int64
	// A different workload: the plan reports drift (it does not change the
	// routing); Full at the end rebuilds a new tree.
	other := gridWorkload(t, 10, 99)
	for round := 0; ; round++ {
		if round == 14 {
			t.Fatalf("no re-split after %d appends of 10%%", round)
		}
		recs := []arrow.RecordBatch{genRecord(1200, int64(100_000+round*10_000), uint64(50+round)), genRecord(1200, int64(105_000+round*10_000), uint64(80+round))}
		tt.appendFiles(t, recs, nil)
		for _, r := range recs {
			r.Release()
		}
		appended += 2400
		before := tt.rows(t)
		files := tt.snapshot(t).Files()
		plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: other})
		if err != nil {
			t.Fatal(err)
		}
		if plan.NumBins == 0 {
			if appended >= base*11/10 {
				t.Fatalf("round %d: %d rows appended to %d, still no re-split", round, appended, base)
			}
			continue
		}
		if appended < base*8/10 {
			t.Fatalf("round %d: re-split after only %d new rows on %d", round, appended, base)
		}
		if d := plan.Partitions[0].Drift; d == nil || d.Fingerprint == d.TrainingFingerprint || d.SeenWeight > 0.5 {
			t.Fatalf("drift %+v", d)
		}
		l := plan.Partitions[0].Bins[0].Layout
		if l.Action != "route" || l.Resplit != 1 || !slices.Equal(l.resplit, []int{0}) || l.NewFiles != 2*(round+1) || l.ResplitFiles != 8 || l.NewWaiting != 0 {
			t.Fatalf("round %d: plan %+v", round, l)
		}
		m, err := Execute(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		if after := tt.rows(t); !slices.Equal(before, after) {
			t.Fatalf("round %d: O1: the rows changed", round)
		}
		if m.NumRemovedFiles != len(files) {
			t.Fatalf("round %d: removed %d of %d files", round, m.NumRemovedFiles, len(files))
		}
		// Each row written once: about the bytes read.
		if float64(m.NumAddedBytes) > 1.2*float64(m.NumRemovedBytes) {
			t.Fatalf("round %d: wrote %d bytes for %d", round, m.NumAddedBytes, m.NumRemovedBytes)
		}
		checkExactSkipping(t, tt, w)
		head := checkRoutedBelowTag(t, tt)
		if head.Generation != 1 || head.Leaves < 13 || head.Leaves > 19 {
			t.Fatalf("round %d: re-split into generation %d with %d leaves", round, head.Generation, head.Leaves)
		}
		for i := range tr.Nodes {
			if head.NodeIndex(tr.NodeKey(i)) < 0 {
				t.Fatalf("node key %d of the first tree is gone", i)
			}
		}
		after := tt.snapshot(t).Files()
		if len(after) < head.Leaves || len(after) > head.Leaves*3/2 {
			t.Fatalf("%d files for %d leaves", len(after), head.Leaves)
		}
		for _, a := range after {
			r, _ := fileTree(a)
			if head.Nodes[head.NodeIndex(r.node)].Leaf < 0 || a.Tags[TagTreeWaiting] != "" {
				t.Fatalf("after the re-split %s is at internal node key %d (tags %v)", a.Path, r.node, a.Tags)
			}
		}
		break
	}
	if plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload}); err != nil || plan.NumBins != 0 {
		t.Fatalf("plan right after the re-split: %v %+v", err, plan)
	}
	recs := []arrow.RecordBatch{genRecord(500, 900_000, 7)}
	tt.appendFiles(t, recs, nil)
	recs[0].Release()
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: other, Full: true})
	trees := treeFiles(t, tt)
	if len(trees) != 1 || trees[path] != nil {
		t.Fatalf("full run kept the old tree: %v", trees)
	}
	for p := range trees {
		if tr, err := loadTree(context.Background(), tt.store, p); err != nil || tr.Version != qdtree.FormatVersion {
			t.Fatalf("full run: tree %s: %v", p, err)
		}
	}
}

// TestWorkloadLayoutBoundedMemory rewrites the same bin with a budget that holds one
// destination at a time and with one that holds them all, gathering the rows from
// the batches as read and from their concatenation: the same files (by node, and
// by their rows in order) result.
func TestWorkloadLayoutBoundedMemory(t *testing.T) {
	layout := func(budget int64, chunked bool) map[string]string {
		defer func(was bool) { gatherChunked = was }(gatherChunked)
		gatherChunked = chunked
		tt := smallTable(t, "", nil, 6, 2000)
		w := gridWorkload(t, 30, 3)
		runOptimize(t, tt, Options{TargetFileSize: avgFileSize(t, tt), Curve: CurveWorkload, Workload: w, MemoryBudget: budget})
		out := map[string]string{}
		for _, a := range tt.snapshot(t).Files() {
			r, _ := fileTree(a)
			var ids []string
			tt.readRecords(t, a, func(rec arrow.RecordBatch) {
				for i := range int(rec.NumRows()) {
					ids = append(ids, rec.Column(0).ValueStr(i))
				}
			})
			k := strconv.Itoa(r.node) + "/" + strconv.Itoa(len(ids))
			if _, dup := out[k]; dup {
				k += "/" + ids[0]
			}
			out[k] = strings.Join(ids, ",")
		}
		return out
	}
	want := layout(1<<30, true)
	for _, tc := range []struct {
		name    string
		budget  int64
		chunked bool
	}{{"one destination at a time", 1, true}, {"concatenated", 1 << 30, false}, {"concatenated, one at a time", 1, false}} {
		got := layout(tc.budget, tc.chunked)
		if len(got) != len(want) {
			t.Fatalf("%s: %d files, want %d", tc.name, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: file %s differs", tc.name, k)
			}
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
	if _, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{Curve: CurveWorkload}); !errors.Is(err, ErrCorruptLayoutTree) || !errors.Is(err, qdtree.ErrCorrupt) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "unreadable workload layout tree file") || strings.Contains(err.Error(), "data file") {
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

// checkRoutedBelowTag checks O4 and returns the current tree: every file with
// a tree tag is laid out by the current lineage, names a node of its newest generation, and
// its rows route to leaves under that node — and under the node in the tree
// generation that wrote the file.
func checkRoutedBelowTag(t *testing.T, tt *testTable) *qdtree.Tree {
	t.Helper()
	ctx := context.Background()
	files := tt.snapshot(t).Files()
	headPath, head, err := CurrentTree(ctx, tt.store, files)
	if err != nil || head == nil {
		t.Fatalf("current tree: %v", err)
	}
	lineage := lineageOf(headPath, head)
	hr, err := head.Router(dataSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range files {
		ref, ok := fileTree(a)
		if !ok {
			continue // a new file, waiting where it was written
		}
		own, err := loadTree(ctx, tt.store, ref.path)
		if err != nil {
			t.Fatal(err)
		}
		if l := lineageOf(ref.path, own); l != lineage {
			t.Fatalf("%s is laid out by %s of lineage %s, the current lineage is %s", a.Path, ref.path, l, lineage)
		}
		or, err := own.Router(dataSchema)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			tr *qdtree.Tree
			r  *qdtree.Router
		}{{head, hr}, {own, or}} {
			node := c.tr.NodeIndex(ref.node)
			if node < 0 {
				t.Fatalf("%s names node key %d, missing in a tree of generation %d", a.Path, ref.node, c.tr.Generation)
			}
			first, end := c.tr.LeafRange(node)
			tt.readRecords(t, a, func(rec arrow.RecordBatch) {
				leaves := make([]int32, rec.NumRows())
				if err := c.r.Route(rec, leaves); err != nil {
					t.Fatal(err)
				}
				for _, l := range leaves {
					if int(l) < first || int(l) >= end {
						t.Fatalf("O4: %s (node key %d, leaves [%d,%d) of generation %d) holds a row of leaf %d", a.Path, ref.node, first, end, c.tr.Generation, l)
					}
				}
			})
		}
	}
	return head
}

// genBox makes n rows like genRecord with x in [x0, x1) and y in [y0, y1).
func genBox(n int, start int64, seed uint64, x0, x1, y0, y1 int64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := array.NewRecordBuilder(memory.DefaultAllocator, dataSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(start + int64(i))
		b.Field(1).(*array.Int64Builder).Append(x0 + rng.Int64N(x1-x0))
		b.Field(2).(*array.Int64Builder).Append(y0 + rng.Int64N(y1-y0))
		b.Field(3).(*array.Float64Builder).Append(rng.Float64() * 100)
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("customer-shared-prefix-0000000000-%06d", rng.IntN(5000)))
	}
	return b.NewRecordBatch()
}

// TestWorkloadLayoutResplitsASubtree appends skewed rows (a corner of the x/y
// plane): the new files wait at their home, the lowest node whose subtree holds
// them by their statistics, and once that subtree has doubled, a run re-splits
// it alone — reading only its files and the new files at home in it — while
// every other file stays as it is.
func TestWorkloadLayoutResplitsASubtree(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 3000)
	w := gridWorkload(t, 40, 2)
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: w})
	tr := checkRoutedBelowTag(t, tt)
	for round := 0; ; round++ {
		if round == 30 {
			t.Fatal("the corner's subtree was never re-split")
		}
		recs := []arrow.RecordBatch{genBox(1500, int64(100_000+round*10_000), uint64(round), 0, 450_000, 0, 1_000_000)}
		tt.appendFiles(t, recs, nil)
		recs[0].Release()
		before := tt.rows(t)
		files := tt.snapshot(t).Files()
		plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload})
		if err != nil {
			t.Fatal(err)
		}
		if plan.NumBins == 0 {
			continue
		}
		l := plan.Partitions[0].Bins[0].Layout
		if len(l.resplit) != 1 || l.resplit[0] == 0 || l.NewFiles != round+1 {
			t.Fatalf("round %d: plan %+v, want one subtree below the root re-split with every new file", round, l)
		}
		root := l.resplit[0]
		first, end := tr.LeafRange(root)
		// The inputs: the new files and the files laid out in the subtree.
		inputs := map[string]bool{}
		for _, a := range plan.Partitions[0].Bins[0].adds {
			inputs[a.Path] = true
		}
		for _, a := range files {
			r, ok := fileTree(a)
			in := !ok
			if ok {
				l0, l1 := tr.LeafRange(tr.NodeIndex(r.node))
				in = l0 >= first && l1 <= end
			}
			if in != inputs[a.Path] {
				t.Fatalf("round %d: %s (tags %v) input %v, want %v (subtree leaves [%d,%d))", round, a.Path, a.Tags, inputs[a.Path], in, first, end)
			}
		}
		if _, err := Execute(context.Background(), plan); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(before, tt.rows(t)) {
			t.Fatalf("round %d: O1: the rows changed", round)
		}
		checkExactSkipping(t, tt, w)
		head := checkRoutedBelowTag(t, tt)
		if head.Generation != 1 || head.Leaves <= tr.Leaves {
			t.Fatalf("generation %d, %d leaves (was %d)", head.Generation, head.Leaves, tr.Leaves)
		}
		// Only the subtree grew: every other leaf is still a leaf.
		for lf := range tr.Leaves {
			if lf >= first && lf < end {
				continue
			}
			if head.Nodes[head.NodeIndex(tr.NodeKey(tr.LeafNode(lf)))].Leaf < 0 {
				t.Fatalf("leaf %d outside the re-split subtree was split", lf)
			}
		}
		t.Logf("round %d: subtree %d of leaves [%d,%d) re-split into %d leaves in all", round, root, first, end, head.Leaves)
		left := map[string]bool{}
		for _, a := range tt.snapshot(t).Files() {
			left[a.Path] = true
		}
		for _, a := range files {
			if !inputs[a.Path] && !left[a.Path] {
				t.Fatalf("%s, outside the subtree, was rewritten", a.Path)
			}
		}
		return
	}
}

// TestWorkloadLayoutNewFileWithoutStats: a new file without statistics is at
// home at the root and counts its bytes' worth of rows: a small one waits, one
// that doubles the table is routed by a re-split of the whole tree.
func TestWorkloadLayoutNewFileWithoutStats(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 3000)
	w := gridWorkload(t, 40, 3)
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: w})
	appendBare := func(rows int, seed uint64) {
		t.Helper()
		rec := genRecord(rows, int64(1_000_000+seed*100_000), seed)
		defer rec.Release()
		snap := tt.snapshot(t)
		txn := snap.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
		a := tt.writeFile(t, nil, rec, time.Now().UnixMilli())
		a.Stats = ""
		txn.Add(a)
		if _, err := txn.Commit(context.Background(), log.CommitInfo{Operation: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
	appendBare(2000, 1)
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: target, Curve: CurveWorkload})
	if err != nil || plan.NumBins != 0 {
		t.Fatalf("a small file without statistics: %v %+v", err, plan)
	}
	appendBare(24_000, 2)
	before := tt.rows(t)
	plan, _ = runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload})
	if plan.NumBins != 1 || !slices.Equal(plan.Partitions[0].Bins[0].Layout.resplit, []int{0}) || plan.Partitions[0].Bins[0].Layout.NewFiles != 2 {
		t.Fatalf("plan %+v", plan.Partitions)
	}
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1: the rows changed")
	}
	if head := checkRoutedBelowTag(t, tt); head.Generation != 1 {
		t.Fatalf("generation %d", head.Generation)
	}
	checkExactSkipping(t, tt, w)
}

// TestWorkloadLayoutMaxBytes: a workload bin larger than Options.MaxBytes is
// deferred whole (a re-split needs every file of its subtree), not cut into a
// plain clustering bin; with room for it, it runs.
func TestWorkloadLayoutMaxBytes(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 3000)
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 30, 7)})
	tt.appendFiles(t, tt.recs(4, 7000), nil)
	before := tt.rows(t)
	files := len(tt.snapshot(t).Files())
	plan, m := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, MaxBytes: target * 5})
	if plan.NumBins != 0 || plan.DeferredFiles != files || m.NumAddedFiles != 0 {
		t.Fatalf("MaxBytes below the bin: %d bins, %d deferred of %d files, %d added", plan.NumBins, plan.DeferredFiles, files, m.NumAddedFiles)
	}
	plan, _ = runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, MaxBytes: 1 << 40})
	if plan.NumBins != 1 || plan.Partitions[0].Bins[0].Layout == nil || plan.Partitions[0].Bins[0].Layout.Resplit != 1 {
		t.Fatalf("plan %+v", plan.Partitions)
	}
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1: the rows changed")
	}
	checkRoutedBelowTag(t, tt)
}

// TestWorkloadLayoutResplitsPartitions: each partition has its own tree, and
// doubling both re-splits each into the next generation of its own lineage.
func TestWorkloadLayoutResplitsPartitions(t *testing.T) {
	parts := []*string{ptr("a"), ptr("b")}
	tt := smallTable(t, "p", parts, 8, 2000)
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 30, 4)})
	first := treeFiles(t, tt)
	tt.appendFiles(t, tt.recs(4, 4500), parts)
	before := tt.rows(t)
	plan, _ := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload})
	if len(plan.Partitions) != 2 {
		t.Fatalf("%d partitions planned", len(plan.Partitions))
	}
	for _, pp := range plan.Partitions {
		if l := pp.Bins[0].Layout; l.Resplit != 1 || l.NewFiles != 2 {
			t.Fatalf("partition %v: %+v", pp.Values, l)
		}
	}
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1: the rows changed")
	}
	after := treeFiles(t, tt)
	if len(after) != 2 {
		t.Fatalf("%d trees for two partitions", len(after))
	}
	for p := range after {
		tr, err := loadTree(context.Background(), tt.store, p)
		if err != nil || tr.Generation != 1 || first[tr.Lineage] == nil {
			t.Fatalf("tree %s (%v): generation %d of %q, want the next generation of a first tree", p, err, tr.Generation, tr.Lineage)
		}
	}
}
