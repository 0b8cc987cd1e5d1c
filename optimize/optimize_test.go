package optimize

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/value"
)

// smallTable appends nFiles files of rowsPer rows (over the given partitions).
func smallTable(t *testing.T, partCol string, parts []*string, nFiles, rowsPer int) *testTable {
	t.Helper()
	tt := newTestTable(t, partCol, nil)
	var recs []arrow.RecordBatch
	for i := 0; i < nFiles; i++ {
		recs = append(recs, genRecord(rowsPer, int64(i*rowsPer), uint64(i+1)))
	}
	tt.appendFiles(t, recs, parts)
	for _, r := range recs {
		r.Release()
	}
	return tt
}

func avgFileSize(t *testing.T, tt *testTable) int64 {
	var n int64
	files := tt.snapshot(t).Files()
	for _, a := range files {
		n += a.Size
	}
	return n / int64(len(files))
}

func runOptimize(t *testing.T, tt *testTable, opts Options) (*Plan, *Metrics) {
	t.Helper()
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, opts)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	m, err := Execute(context.Background(), plan)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	return plan, m
}

func TestOptimizeKeepsRows(t *testing.T) {
	parts := []*string{ptr("a"), ptr("b"), nil}
	cases := []struct {
		name    string
		partCol string
		parts   []*string
		curve   Curve
		cluster []string
		budget  int64 // 0: default (in memory)
	}{
		{"compaction unpartitioned", "", nil, CurveNone, nil, 0},
		{"compaction partitioned with null partition", "p", parts, CurveNone, nil, 0},
		{"linear sort", "", nil, CurveLinear, []string{"x", "y"}, 0},
		{"zorder unpartitioned", "", nil, CurveZOrder, []string{"x", "y"}, 0},
		{"zorder partitioned", "p", parts, CurveZOrder, []string{"x", "y"}, 0},
		{"hilbert unpartitioned", "", nil, CurveHilbert, []string{"x", "y"}, 0},
		{"hilbert three columns incl. nulls and strings", "p", parts, CurveHilbert, []string{"x", "f", "s"}, 0},
		{"hilbert spilled (budget below input)", "", nil, CurveHilbert, []string{"x", "y"}, 512 << 10},
		{"zorder spilled partitioned", "p", parts, CurveZOrder, []string{"y", "x"}, 512 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tt := smallTable(t, tc.partCol, tc.parts, 12, 2000)
			before := tt.rows(t)
			nBefore := tt.snapshot(t).NumFiles()
			orig := map[string]bool{}
			for _, a := range tt.snapshot(t).Files() {
				orig[a.Path] = true
			}
			target := avgFileSize(t, tt) * 4
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			plan, m := runOptimize(t, tt, Options{TargetFileSize: target, Curve: tc.curve, ClusterBy: tc.cluster, MemoryBudget: tc.budget, Parallelism: 2, Allocator: mem})
			mem.AssertSize(t, 0) // every Arrow buffer OPTIMIZE allocated is released
			after := tt.rows(t)
			if !slices.Equal(before, after) {
				t.Fatalf("O1 violated: %d rows before, %d after", len(before), len(after))
			}
			tt.checkStats(t)
			snap := tt.snapshot(t)
			if m.NumRemovedFiles == 0 || snap.NumFiles() >= nBefore {
				t.Fatalf("nothing compacted: %d files before, %d after, metrics %+v", nBefore, snap.NumFiles(), m)
			}
			var planned int64
			for _, pp := range plan.Partitions {
				for _, b := range pp.Bins {
					planned += b.Rows
				}
			}
			if m.NumRows != planned || m.NumRemovedFiles != plan.NumFiles {
				t.Errorf("metrics rows %d files %d, plan %d rows %d files", m.NumRows, m.NumRemovedFiles, planned, plan.NumFiles)
			}
			if tc.budget > 0 && m.SpilledBytes == 0 {
				t.Errorf("budget %d below input but nothing spilled", tc.budget)
			}
			for _, a := range snap.Files() {
				if orig[a.Path] {
					continue
				}
				if a.DataChange {
					t.Errorf("%s: dataChange=true", a.Path)
				}
				if tc.curve != CurveNone && a.Tags[TagCubeCurve] != tc.curve.String() {
					t.Errorf("%s: tags %v", a.Path, a.Tags)
				}
				if tc.partCol != "" && !strings.HasPrefix(a.Path, tc.partCol+"=") {
					t.Errorf("%s: not in a partition directory", a.Path)
				}
			}
			checkCommitInfo(t, tt, tc.curve, m)
		})
	}
}

func checkCommitInfo(t *testing.T, tt *testTable, c Curve, m *Metrics) {
	t.Helper()
	h, err := tt.lg.History(context.Background(), 1)
	if err != nil || len(h) == 0 {
		t.Fatalf("history: %v", err)
	}
	raw, _ := json.Marshal(h[0])
	s := string(raw)
	for _, want := range []string{`"OPTIMIZE"`, `SnapshotIsolation`, `numAddedFiles`, `p50FileSize`, `zOrderBy`, `predicate`} {
		if !strings.Contains(s, want) {
			t.Errorf("commit record lacks %s: %s", want, s)
		}
	}
	if c != CurveNone && !strings.Contains(s, `clusteringCurve`) {
		t.Errorf("commit record lacks the curve: %s", s)
	}
	if len(m.Versions) == 0 {
		t.Errorf("no versions in metrics")
	}
}

func TestClusteredFilesHaveDisjointSortedRanges(t *testing.T) {
	for _, budget := range []int64{0, 512 << 10} {
		tt := smallTable(t, "", nil, 10, 3000)
		target := avgFileSize(t, tt) * 2
		_, m := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveHilbert, ClusterBy: []string{"x"}, MemoryBudget: budget})
		if m.NumAddedFiles < 3 {
			t.Fatalf("budget %d: only %d output files", budget, m.NumAddedFiles)
		}
		type rng struct{ lo, hi int64 }
		var ranges []rng
		for _, a := range tt.snapshot(t).Files() {
			r := rng{1 << 62, -1}
			prev := int64(-1)
			tt.readRecords(t, a, func(rec arrow.RecordBatch) {
				xs := rec.Column(1).(*array.Int64)
				for i := 0; i < xs.Len(); i++ {
					v := xs.Value(i)
					if v < prev {
						t.Fatalf("budget %d: %s not sorted by x: %d after %d", budget, a.Path, v, prev)
					}
					prev = v
					r.lo, r.hi = min(r.lo, v), max(r.hi, v)
				}
			})
			ranges = append(ranges, r)
		}
		slices.SortFunc(ranges, func(a, b rng) int { return int(a.lo - b.lo) })
		for i := 1; i < len(ranges); i++ {
			// Ranges may touch at one value (a heavy hitter spread over two files) but
			// never overlap.
			if ranges[i].lo < ranges[i-1].hi {
				t.Errorf("budget %d: file ranges overlap: %v and %v", budget, ranges[i-1], ranges[i])
			}
		}
	}
}

func TestCompactionBinsFollowModificationTime(t *testing.T) {
	tt := newTestTable(t, "", nil)
	snap := tt.snapshot(t)
	txn := snap.NewTransaction(log.TxnOptions{})
	// Modification times out of path order; sizes all small.
	mtimes := []int64{50, 10, 40, 20, 30, 60}
	var adds []*log.Add
	for i, mt := range mtimes {
		r := genRecord(100, int64(i*100), uint64(i))
		adds = append(adds, tt.writeFile(t, nil, r, mt))
		r.Release()
	}
	txn.Add(adds...)
	if _, err := txn.Commit(context.Background(), log.CommitInfo{Operation: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	size := adds[0].Size
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: size*2 + size/2, MinFileSize: size * 2})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NumBins != 3 {
		t.Fatalf("want 3 bins of 2 files, got %d: %+v", plan.NumBins, plan.Partitions)
	}
	var got [][]int64
	for _, b := range plan.Partitions[0].Bins {
		var ts []int64
		for _, f := range b.Files {
			ts = append(ts, f.ModificationTime)
		}
		got = append(got, ts)
	}
	want := [][]int64{{10, 20}, {30, 40}, {50, 60}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("bins by modification time: got %v, want %v", got, want)
		}
	}
	// A dry run writes nothing and the plan is JSON.
	js, err := json.Marshal(plan)
	if err != nil || !strings.Contains(string(js), `"kind":"compact"`) {
		t.Fatalf("plan JSON %s: %v", js, err)
	}
}

func TestPlanSkipsWhatIsDone(t *testing.T) {
	tt := smallTable(t, "", nil, 6, 1000)
	big := avgFileSize(t, tt)
	cases := []struct {
		name string
		opts Options
	}{
		{"files at least MinFileSize are left alone", Options{TargetFileSize: big * 10, MinFileSize: big / 2}},
		{"single-file bins are dropped", Options{TargetFileSize: big + big/2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if plan.NumBins != 0 {
				t.Fatalf("want no bins, got %+v", plan.Partitions)
			}
		})
	}
}

func TestPartitionFilter(t *testing.T) {
	tt := smallTable(t, "p", []*string{ptr("a"), ptr("b")}, 8, 500)
	opts := Options{TargetFileSize: 1 << 30, Predicate: "p = 'a'", PartitionFilter: func(v map[string]value.Value) bool {
		return v["p"].AsString() == "a"
	}}
	plan, _ := runOptimize(t, tt, opts)
	if len(plan.Partitions) != 1 || *plan.Partitions[0].Values["p"] != "a" {
		t.Fatalf("plan covers %+v, want only p=a", plan.Partitions)
	}
	var na, nb int
	for _, a := range tt.snapshot(t).Files() {
		if v, _ := a.PartitionValue("p"); v == "a" {
			na++
		} else {
			nb++
		}
	}
	if na != 1 || nb != 4 {
		t.Fatalf("after OPTIMIZE WHERE p='a': %d files in a, %d in b; want 1 and 4", na, nb)
	}
}

func TestIncrementalClustering(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 2000)
	target := avgFileSize(t, tt) * 2
	opts := Options{TargetFileSize: target, Curve: CurveZOrder, ClusterBy: []string{"x", "y"}, MinCubeSize: target}
	runOptimize(t, tt, opts)
	cube := map[string]bool{}
	for _, a := range tt.snapshot(t).Files() {
		cube[a.Path] = true
	}
	// Nothing new: the next run has nothing to do.
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if plan.NumBins != 0 || plan.FinishedCubeFiles != len(cube) {
		t.Fatalf("re-run planned %d bins, %d finished cube files (want 0, %d)", plan.NumBins, plan.FinishedCubeFiles, len(cube))
	}
	// New data: only the new files are clustered; the finished cube stays.
	more := []arrow.RecordBatch{genRecord(2000, 100000, 77), genRecord(2000, 102000, 78)}
	tt.appendFiles(t, more, nil)
	before := tt.rows(t)
	plan, m := runOptimize(t, tt, opts)
	if plan.NumFiles != 2 {
		t.Fatalf("incremental run rewrote %d files, want the 2 new ones", plan.NumFiles)
	}
	kept := 0
	for _, a := range tt.snapshot(t).Files() {
		if cube[a.Path] {
			kept++
		}
	}
	if kept != len(cube) || m.NumRemovedFiles != 2 {
		t.Fatalf("finished cube files kept %d/%d, removed %d", kept, len(cube), m.NumRemovedFiles)
	}
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1 violated by the incremental run")
	}
	// Full re-clusters everything into one cube.
	opts.Full = true
	_, m = runOptimize(t, tt, opts)
	ids := map[string]bool{}
	for _, a := range tt.snapshot(t).Files() {
		ids[a.Tags[TagCubeID]] = true
	}
	if len(ids) != 1 || m.NumRemovedFiles != len(cube)+m.NumRemovedFiles-len(cube) {
		t.Fatalf("full run left %d cubes", len(ids))
	}
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1 violated by the full run")
	}
}

func TestClusterColumnValidation(t *testing.T) {
	tt := newTestTable(t, "p", map[string]string{"delta.dataSkippingNumIndexedCols": "3"})
	cases := []struct {
		name string
		cols []string
		want string
	}{
		{"unknown column", []string{"nope"}, "no such column"},
		{"partition column", []string{"p"}, "partition column"},
		{"column without statistics", []string{"s"}, "no statistics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{Curve: CurveZOrder, ClusterBy: tc.cols})
			var ce *ClusterColumnError
			if !errors.As(err, &ce) || !errors.Is(err, ErrClusterColumn) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a ClusterColumnError about %q", err, tc.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name     string
		opts     Options
		problems int
	}{
		{"zero value is valid", Options{}, 0},
		{"curve needs columns", Options{Curve: CurveHilbert}, 1},
		{"columns need a curve", Options{ClusterBy: []string{"x"}}, 1},
		{"negatives and duplicates all reported", Options{TargetFileSize: -1, Parallelism: -2, Curve: CurveZOrder, ClusterBy: []string{"x", "X"}}, 3},
		{"too many columns", Options{Curve: CurveZOrder, ClusterBy: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.problems == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *InvalidOptionsError
			if !errors.As(err, &ie) || len(ie.Problems) != tc.problems || !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("got %v, want %d problems", err, tc.problems)
			}
		})
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	tt := smallTable(t, "", nil, 5, 500)
	v := tt.snapshot(t).Version()
	objs := len(tt.objects(t))
	plan, m := runOptimize(t, tt, Options{TargetFileSize: 1 << 30, DryRun: true})
	if !m.DryRun || m.NumRemovedFiles != plan.NumFiles || plan.NumFiles != 5 {
		t.Fatalf("dry run metrics %+v for plan of %d files", m, plan.NumFiles)
	}
	if tt.snapshot(t).Version() != v || len(tt.objects(t)) != objs {
		t.Fatal("dry run changed the table")
	}
}
