package optimize

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
)

// midFlight returns a Progress callback that, the first time OPTIMIZE reports
// writing progress, runs fn on another goroutine and waits for it to finish, so that
// fn's commit lands between OPTIMIZE's snapshot and its commit.
func midFlight(t *testing.T, fn func() error) (func(Progress), func() error) {
	var once sync.Once
	var ferr error
	done := make(chan struct{})
	cb := func(p Progress) {
		if p.Phase == "commit" {
			return
		}
		once.Do(func() {
			go func() {
				defer close(done)
				ferr = fn()
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("concurrent writer did not finish")
			}
		})
	}
	return cb, func() error { <-done; return ferr }
}

func TestConcurrentAppendDoesNotConflict(t *testing.T) {
	for _, curve := range []Curve{CurveNone, CurveHilbert} {
		t.Run(curve.String(), func(t *testing.T) {
			tt := smallTable(t, "", nil, 6, 1000)
			before := tt.rows(t)
			extra := genRecord(1000, 50_000, 42)
			defer extra.Release()
			cb, wait := midFlight(t, func() error {
				tt.appendFiles(t, []arrow.RecordBatch{extra}, nil)
				return nil
			})
			var cluster []string
			if curve != CurveNone {
				cluster = []string{"x", "y"}
			}
			plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: 1 << 30, Curve: curve, ClusterBy: cluster, Progress: cb, Parallelism: 2})
			if err != nil {
				t.Fatal(err)
			}
			m, err := Execute(context.Background(), plan)
			if err != nil {
				t.Fatalf("OPTIMIZE failed against a concurrent append: %v", err)
			}
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			if m.Retries != 0 {
				t.Errorf("append made OPTIMIZE retry %d times", m.Retries)
			}
			got := tt.rows(t)
			if len(got) != len(before)+1000 {
				t.Fatalf("rows: %d, want %d (before) + 1000 (appended)", len(got), len(before))
			}
			// Every original row is still there exactly once.
			for _, r := range before {
				if _, ok := slices.BinarySearch(got, r); !ok {
					t.Fatalf("row %q lost", r)
				}
			}
		})
	}
}

// removeInputFile commits a DELETE-like removal (dataChange=true) of the table's
// first file.
func removeInputFile(tt *testTable, t *testing.T) func() error {
	return func() error {
		snap, err := tt.lg.Snapshot(context.Background(), -1)
		if err != nil {
			return err
		}
		a := snap.Files()[0]
		now := time.Now().UnixMilli()
		txn := snap.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
		txn.ReadFiles(a.Path)
		txn.Remove(&log.Remove{Path: a.Path, DeletionTimestamp: &now, DataChange: true, ExtendedFileMetadata: true, PartitionValues: a.PartitionValues, Size: &a.Size})
		_, err = txn.Commit(context.Background(), log.CommitInfo{Operation: "DELETE"})
		return err
	}
}

func TestConcurrentRemoveOfInputFile(t *testing.T) {
	cases := []struct {
		name       string
		maxRetries int
		curve      Curve
	}{
		{"compaction retries on the new snapshot", 0, CurveNone},
		{"clustering retries on the new snapshot", 0, CurveZOrder},
		{"without retries it stops cleanly", -1, CurveNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tt := smallTable(t, "", nil, 6, 1000)
			first := tt.snapshot(t).Files()[0]
			all := tt.rows(t)
			n, _ := first.NumRecords()
			cb, wait := midFlight(t, removeInputFile(tt, t))
			var cluster []string
			if tc.curve != CurveNone {
				cluster = []string{"x", "y"}
			}
			plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: 1 << 30, Curve: tc.curve, ClusterBy: cluster,
				Progress: cb, MaxRetries: tc.maxRetries, Parallelism: 2})
			if err != nil {
				t.Fatal(err)
			}
			m, err := Execute(context.Background(), plan)
			if werr := wait(); werr != nil {
				t.Fatalf("concurrent delete failed: %v", werr)
			}
			got := tt.rows(t)
			if len(got) != len(all)-int(n) {
				t.Fatalf("rows after: %d, want %d - %d deleted", len(got), len(all), n)
			}
			for i := 1; i < len(got); i++ {
				if got[i] == got[i-1] {
					t.Fatalf("duplicated row %q", got[i])
				}
			}
			if tc.maxRetries < 0 {
				var ce *log.ConflictError
				if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) {
					t.Fatalf("got %v, want ErrConflict wrapping a log.ConflictError", err)
				}
			} else {
				if err != nil {
					t.Fatalf("OPTIMIZE did not recover: %v", err)
				}
				if m.Retries != 1 {
					t.Errorf("retries %d, want 1", m.Retries)
				}
			}
			// No orphans from the failed attempt: storage holds the live files and
			// the tombstoned ones only.
			snap := tt.snapshot(t)
			refs := map[string]bool{}
			for _, a := range snap.Files() {
				refs[a.Path] = true
			}
			for _, r := range snap.Tombstones() {
				refs[r.Path] = true
			}
			for _, o := range tt.objects(t) {
				if !refs[o] {
					t.Errorf("orphan file %s left behind", o)
				}
			}
		})
	}
}

func TestCancelLeavesTableUnchanged(t *testing.T) {
	tt := smallTable(t, "", nil, 6, 1000)
	v := tt.snapshot(t).Version()
	objs := len(tt.objects(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, Options{TargetFileSize: 1 << 30, Curve: CurveHilbert, ClusterBy: []string{"x", "y"},
		Progress: func(p Progress) { cancel() }, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Execute(ctx, plan)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	mem.AssertSize(t, 0) // a cancelled run releases every Arrow buffer it allocated
	if tt.snapshot(t).Version() != v {
		t.Fatal("cancelled OPTIMIZE committed")
	}
	if n := len(tt.objects(t)); n != objs {
		t.Fatalf("cancelled OPTIMIZE left %d new files", n-objs)
	}
}

func TestCommitEveryCommitsPerBatch(t *testing.T) {
	tt := smallTable(t, "p", []*string{ptr("a"), ptr("b"), ptr("c")}, 9, 500)
	before := tt.rows(t)
	_, m := runOptimize(t, tt, Options{TargetFileSize: 1 << 30, CommitEvery: 1})
	if len(m.Versions) != 3 || m.NumBins != 3 {
		t.Fatalf("versions %v bins %d, want 3 commits of one bin", m.Versions, m.NumBins)
	}
	if !slices.Equal(before, tt.rows(t)) {
		t.Fatal("O1 violated")
	}
}
