package optimize

import (
	"context"
	"sync"
	"testing"
)

// TestProgressCountsBinsAndFiles checks that every progress report carries the
// plan's bin and file totals, that the counts only grow, and that the last report
// shows every bin and every input file done, for each way a bin is rewritten
// (compaction, in-memory and spilled clustering, workload layout) and with one or
// several commits.
func TestProgressCountsBinsAndFiles(t *testing.T) {
	parts := []*string{ptr("a"), ptr("b"), nil}
	cases := []struct {
		name        string
		partCol     string
		parts       []*string
		curve       Curve
		cluster     []string
		budget      int64
		commitEvery int
		workload    bool
		copy        bool // row groups copied (StitchMinRowGroupBytes 1)
	}{
		{"compaction partitioned", "p", parts, CurveNone, nil, 0, 0, false, false},
		{"compaction commit per bin", "p", parts, CurveNone, nil, 0, 1, false, false},
		{"compaction copying row groups", "p", parts, CurveNone, nil, 0, 0, false, true},
		{"zorder in memory", "p", parts, CurveZOrder, []string{"x", "y"}, 0, 0, false, false},
		{"hilbert spilled", "p", parts, CurveHilbert, []string{"x", "y"}, 512 << 10, 0, false, false},
		{"workload layout", "", nil, CurveWorkload, nil, 0, 0, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tt := smallTable(t, tc.partCol, tc.parts, 12, 2000)
			var (
				mu      sync.Mutex
				reports []Progress
			)
			opts := Options{TargetFileSize: avgFileSize(t, tt) * 4, Curve: tc.curve, ClusterBy: tc.cluster, MemoryBudget: tc.budget,
				CommitEvery: tc.commitEvery, Parallelism: 2, Progress: func(p Progress) {
					mu.Lock()
					reports = append(reports, p)
					mu.Unlock()
				}}
			if tc.copy {
				opts.StitchMinRowGroupBytes = 1
			}
			if tc.workload {
				opts.Workload = gridWorkload(t, 30, 5)
				opts.TargetFileSize = avgFileSize(t, tt)
			}
			plan, m := runOptimize(t, tt, opts)
			if plan.NumBins < 1 || plan.NumFiles < 4 || tc.partCol != "" && plan.NumBins < 2 {
				t.Fatalf("test needs several bins and files: plan has %d bins, %d files", plan.NumBins, plan.NumFiles)
			}
			if len(reports) == 0 {
				t.Fatal("no progress reported")
			}
			var prev Progress
			commits := 0
			for i, p := range reports {
				if p.BinsTotal != int64(plan.NumBins) || p.FilesTotal != int64(plan.NumFiles) {
					t.Fatalf("report %d %+v: totals differ from the plan's %d bins, %d files", i, p, plan.NumBins, plan.NumFiles)
				}
				if p.BinsDone < prev.BinsDone || p.FilesDone < prev.FilesDone || p.BinsDone > p.BinsTotal || p.FilesDone > p.FilesTotal {
					t.Fatalf("report %d %+v after %+v: counts went back or past the totals", i, p, prev)
				}
				if p.Unit == "bytes" && (p.Done < prev.Done && prev.Unit == "bytes" || p.Done > p.Total) {
					t.Fatalf("report %d %+v after %+v: bytes went back or past the total", i, p, prev)
				}
				if p.Phase == "commit" && p.Done == 1 {
					commits++
				}
				if p.Unit == "bytes" {
					prev = p
				} else {
					prev.BinsDone, prev.FilesDone = p.BinsDone, p.FilesDone
				}
			}
			last := reports[len(reports)-1]
			if last.Phase != "commit" || last.BinsDone != last.BinsTotal || last.FilesDone != last.FilesTotal {
				t.Fatalf("last report %+v: want the commit with every bin and file done", last)
			}
			if tc.copy && (m.NumCopiedBins != plan.NumBins || m.NumReencodedBins != 0) {
				t.Fatalf("metrics %+v: want every bin copied", m)
			}
			if commits != len(m.Versions) {
				t.Fatalf("%d commits reported, %d versions committed", commits, len(m.Versions))
			}
		})
	}
}

// TestProgressCountsCanceled checks that a run cancelled on its first report never
// reports a bin it did not finish.
func TestProgressCountsCanceled(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last Progress
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, Options{TargetFileSize: avgFileSize(t, tt) * 100, Curve: CurveZOrder, ClusterBy: []string{"x", "y"},
		Parallelism: 1, Progress: func(p Progress) { last = p; cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if plan.NumBins != 1 {
		t.Fatalf("want one bin, plan has %d", plan.NumBins)
	}
	if _, err := Execute(ctx, plan); err == nil {
		t.Fatal("cancelled run succeeded")
	}
	if last.BinsDone != 0 || last.FilesDone != 0 {
		t.Fatalf("cancelled run reported work done: %+v", last)
	}
}
