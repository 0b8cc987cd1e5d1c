package optimize

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// randomFilter draws a filter over the test table's columns: ranges, IN lists,
// NULL tests, LIKE prefixes, OR and NOT.
func randomFilter(r *rand.Rand) string {
	term := func() string {
		switch r.IntN(7) {
		case 0:
			a := r.Int64N(1_000_000)
			return fmt.Sprintf("x >= %d AND x < %d", a, a+r.Int64N(300_000))
		case 1:
			a := r.Int64N(1_000_000)
			return fmt.Sprintf("y BETWEEN %d AND %d", a, a+r.Int64N(200_000))
		case 2:
			return fmt.Sprintf("id IN (%d, %d, %d)", r.Int64N(30_000), r.Int64N(30_000), r.Int64N(30_000))
		case 3:
			return "f IS NULL"
		case 4:
			return fmt.Sprintf("s LIKE 'customer-shared-prefix-0000000000-00%d%%'", r.IntN(50))
		case 5:
			return fmt.Sprintf("f > %g", r.Float64()*100)
		default:
			return fmt.Sprintf("NOT (x < %d)", r.Int64N(1_000_000))
		}
	}
	switch r.IntN(3) {
	case 0:
		return term()
	case 1:
		return term() + " AND " + term()
	}
	return "(" + term() + ") OR (" + term() + ")"
}

// checkStatsSkipExactly checks S1 for a filter on every file of the table: a
// file that its statistics rule out holds no row for which the filter is TRUE.
func checkStatsSkipExactly(t *testing.T, tt *testTable, filter string) {
	t.Helper()
	e, err := expr.Parse(filter)
	if err != nil {
		t.Fatal(err)
	}
	b, err := expr.Bind(e, dataSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tt.snapshot(t).Files() {
		f, err := stats.Parse(a.Stats, dataSchema)
		if err != nil {
			t.Fatal(err)
		}
		if skipping.EvaluateFile(b, f, map[string]value.Value{}, nil) != skipping.CannotMatch {
			continue
		}
		tt.readRecords(t, a, func(rec arrow.RecordBatch) {
			sel, err := b.Evaluate(rec)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Count() > 0 {
				t.Fatalf("S1: statistics of %s (tags %v) rule out %q, yet %d of its rows match", a.Path, a.Tags, filter, sel.Count())
			}
		})
	}
}

// TestWorkloadLayoutProperties builds workload layouts for random workloads and
// routes random appends through them (waiting at their home, re-splitting the
// subtrees that double, the whole tree at least once), checking after every
// run that the rows are exactly those written (O1: every row in exactly one
// live file), that every file's rows route under its tagged node in its own
// and in the newest generation of the tree (O4), and that file statistics never
// skip a file holding a matching row for random filters (S1).
// SKIPLAKE_WORKLOAD_ROUNDS sets the number of random tables (default 3).
func TestWorkloadLayoutProperties(t *testing.T) {
	rounds := 3
	if s := os.Getenv("SKIPLAKE_WORKLOAD_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		rounds = 1
	}
	for seed := range rounds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 77))
			tt := smallTable(t, "", nil, 3+r.IntN(4), 1000+r.IntN(2000))
			var sb strings.Builder
			for range 10 + r.IntN(30) {
				fmt.Fprintf(&sb, "%d: %s\n", 1+r.IntN(5), randomFilter(r))
			}
			w, err := workload.Parse(strings.NewReader(sb.String()), "random")
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{TargetFileSize: avgFileSize(t, tt) / int64(1+r.IntN(3)), Curve: CurveWorkload, Workload: w,
				Robustness: []float64{0, 0.3}[r.IntN(2)]}
			if r.IntN(2) == 0 {
				opts.ClusterBy = []string{"x", "y"}
			}
			want := tt.rows(t)
			runOptimize(t, tt, opts)
			opts.Workload, opts.Robustness, opts.ClusterBy = nil, 0, nil
			resplits := 0
			for round := range 5 {
				if !slices.Equal(want, tt.rows(t)) {
					t.Fatalf("round %d: O1: the rows changed", round)
				}
				checkRoutedBelowTag(t, tt)
				for range 6 {
					checkStatsSkipExactly(t, tt, randomFilter(r))
				}
				// Small appends spanning the plane or a strip of x (they wait at
				// their home); round 2 doubles the table (a re-split of the root).
				n := 200 + r.IntN(3000)
				if round == 2 {
					n = len(want) + 500
				}
				var rec arrow.RecordBatch
				if r.IntN(2) == 0 {
					rec = genRecord(n, int64(100_000*(round+1)), uint64(seed*10+round))
				} else {
					x0 := r.Int64N(800_000)
					rec = genBox(n, int64(100_000*(round+1)), uint64(seed*10+round), x0, x0+1+r.Int64N(200_000), 0, 1_000_000)
				}
				tt.appendFiles(t, []arrow.RecordBatch{rec}, nil)
				rec.Release()
				want = tt.rows(t)
				plan, _ := runOptimize(t, tt, opts)
				for _, pp := range plan.Partitions {
					for _, b := range pp.Bins {
						resplits += b.Layout.Resplit
					}
				}
			}
			if resplits == 0 {
				t.Error("no run re-split a subtree")
			}
		})
	}
}
