package table_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// rateClock is a MaxDuration clock that moves only as work is reported: each byte
// of rewrite progress costs 1/rate seconds and each commit a fixed overhead, so a
// duration budget is a byte budget at a known rate, without sleeping.
type rateClock struct {
	mu     sync.Mutex
	t      time.Time
	rate   float64 // bytes per second
	commit time.Duration
	prev   int64
}

func (c *rateClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *rateClock) progress(p table.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case p.Phase == "commit":
		if p.Done == 1 {
			c.t = c.t.Add(c.commit)
		}
	case p.Unit == "bytes":
		if p.Done > c.prev {
			c.t = c.t.Add(time.Duration(float64(p.Done-c.prev) / c.rate * float64(time.Second)))
		}
		c.prev = p.Done // a new piece starts again from what the run committed
	}
}

// budgetTable makes a random table for the convergence test: plain, partitioned,
// Z-ordered before more appends, or liquid-clustered; small files of random sizes,
// some rows deleted by deletion vectors.
func budgetTable(t *testing.T, r *rand.Rand) (*table.Table, string) {
	t.Helper()
	ctx := context.Background()
	kind := []string{"plain", "partitioned", "zorder", "liquid"}[r.IntN(4)]
	props := map[string]string{"delta.targetFileSize": "6kb", "delta.enableDeletionVectors": "true"}
	copts := table.CreateOptions{Properties: props}
	switch kind {
	case "partitioned":
		copts.PartitionColumns = []string{"s"}
	case "liquid":
		copts.ClusterBy = []string{"id", "d"}
	}
	tb, err := table.Create(ctx, storage.NewMemory(), layoutSchema(), copts)
	require.NoError(t, err)
	write := func(n int) {
		var recs []arrow.RecordBatch
		for i := 0; i < n; i++ {
			recs = append(recs, budgetBatch(r, 10+r.IntN(80), kind == "partitioned"))
		}
		_, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 1})
		require.NoError(t, err)
		for _, rec := range recs {
			rec.Release()
		}
	}
	write(6 + r.IntN(14))
	if kind == "zorder" {
		_, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"id", "d"}})
		require.NoError(t, err)
		write(6 + r.IntN(10))
	}
	if r.IntN(2) == 0 {
		_, err := tb.Delete(ctx, fmt.Sprintf("id < %d", r.Int64N(1<<28)), table.DMLOptions{})
		require.NoError(t, err)
	}
	return tb, kind
}

// budgetBatch makes n rows like layoutBatch, with s one of three values when
// partitioned (the partition column).
func budgetBatch(r *rand.Rand, n int, partitioned bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, layoutSchema())
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(r.Int64N(1 << 30))
		if partitioned {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", r.IntN(3)))
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("k%05d", r.IntN(50000)))
		}
		b.Field(2).(*array.Float64Builder).Append(r.NormFloat64())
	}
	return b.NewRecordBatch()
}

// rowsAt reads every row of version v.
func rowsAt(t *testing.T, tb *table.Table, v int64) []string {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, table.AtVersion(v))
	require.NoError(t, err)
	sc, err := snap.Scan(ctx)
	require.NoError(t, err)
	all, err := sc.ReadAll(ctx)
	require.NoError(t, err)
	defer all.Release()
	tr := array.NewTableReader(all, 0)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	return tableRows(t, recs...)
}

// TestMaintainBudgetConverges: nightly maintenance under a fixed budget always
// makes progress. On random tables (plain, partitioned, Z-ordered, liquid) with a
// random budget — bytes, or a duration on a clock that moves with the work (no
// sleeping) — repeated runs reach a run with no work left that the budget can do,
// within about ceil(W/B) runs (W: the work one unbounded run would do; B: the
// budget in bytes), and every version any run commits reads exactly the original
// rows. Each run's report counts only what it committed.
func TestMaintainBudgetConverges(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { maintainConverges(t, uint64(seed)) })
	}
}

func maintainConverges(t *testing.T, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 77))
	tb, kind := budgetTable(t, r)
	want := readAllRows(t, tb)
	start, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)

	// W: what one unbounded run would rewrite (a dry run says, without writing).
	dry, err := tb.Maintain(ctx, table.MaintainOptions{DryRun: true})
	require.NoError(t, err)
	var work int64
	for _, name := range []string{table.TaskCompact, table.TaskCluster, table.TaskPurge} {
		work += dry.Task(name).Bytes
	}
	require.Positive(t, work, "the random table has work to do")
	t0 := time.Now()

	const rate = 16 << 10  // bytes per second on the test clock
	const target = 6 << 10 // delta.targetFileSize: no compaction bin or file is larger
	byBytes := r.IntN(2) == 0
	// A budget of a few files' worth at least: below one file no piece fits, and
	// such work is reported beyond the budget rather than converging.
	budget := max(work/int64(2+r.IntN(7)), 4*target)
	opts := table.MaintainOptions{Parallelism: 1}
	var clk *rateClock
	if byBytes {
		opts.MaxBytes = budget
	} else {
		clk = &rateClock{t: time.Unix(1_000_000, 0), rate: rate, commit: 20 * time.Millisecond}
		opts.MaxDuration = time.Duration(float64(budget) / rate * float64(time.Second))
		opts.Progress = clk.progress
		opts = table.WithBudgetClock(opts, clk.now)
	}
	// The bound: every run but the last rewrites more than B − b, where b is the
	// largest bin or unit that did not fit what was left (at most the target file
	// size: compaction bins and the files and unfinished cubes clustering pieces are
	// made of are no larger); a bin that a whole budget holds waits for the next
	// run whole, and a larger one is cut into pieces that fill a run. A duration
	// budget fills 80% of the time its measured rate allows, after spending up to
	// a tenth of its first piece measuring it. So the runs are about ceil(W/B) when
	// B is several files' worth.
	effective := float64(budget)
	if !byBytes {
		effective *= 0.8 * 0.9
	}
	ideal := int((work + budget - 1) / budget)
	bound := int(math.Ceil(float64(work)/(effective-target))) + 1
	t.Logf("%s table, W=%d bytes, budget %d bytes (byBytes=%v): ceil(W/B) = %d, bound %d runs", kind, work, budget, byBytes, ideal, bound)

	runs := 0
	for ; ; runs++ {
		require.LessOrEqual(t, runs, bound, "no convergence within %d runs", bound)
		if clk != nil {
			clk.mu.Lock()
			clk.prev = 0
			clk.mu.Unlock()
		}
		rep, err := tb.Maintain(ctx, opts)
		require.NoError(t, err)
		require.False(t, rep.Failed, "run %d: %+v", runs, rep.Tasks)
		var committed int64
		for _, c := range rep.Commits {
			committed += c.Bytes
		}
		var reported int64
		for _, name := range []string{table.TaskCompact, table.TaskCluster, table.TaskPurge} {
			reported += rep.Task(name).Bytes
		}
		require.Equal(t, committed, reported, "run %d: the tasks report exactly the commits", runs)
		if testing.Verbose() {
			t.Logf("run %d: %d commits, %d bytes; %+v", runs, len(rep.Commits), committed, rep.Commits)
		}
		if byBytes {
			require.LessOrEqual(t, committed, budget, "run %d: within the byte budget", runs)
		}
		if !rep.WorkRemains {
			break
		}
		require.NotEmpty(t, rep.Commits, "run %d: work remains but nothing was committed: %+v", runs, rep.Tasks)
	}
	t.Logf("converged after %d runs (ceil(W/B) = %d) in %s", runs+1, ideal, time.Since(t0))

	// Every version committed since the start reads the original rows.
	end, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	for v := start.Version() + 1; v <= end.Version(); v++ {
		require.Equal(t, want, rowsAt(t, tb, v), "version %d", v)
	}
	t.Logf("%d versions read (%s)", end.Version()-start.Version(), time.Since(t0))
}
