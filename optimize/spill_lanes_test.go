package optimize

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// A spilled bin whose budget holds two writers writes two lanes side by side: the
// memory it accounts at once (the runs being sorted and the second writer) stays
// within the budget, and its files hold the rows of the one-lane (sequential) write
// in the same order — every file a contiguous stretch of the clustering order
// (SortByClustering of the bin's batches), the files together all of it — at the
// same row count; two runs with lanes cut the same files.
func TestSpillLanesWriteSideBySide(t *testing.T) {
	defer func(c int64) { spillWriterCharge = c }(spillWriterCharge)
	spillWriterCharge = 256 << 10 // a small table's writers, so that a small budget holds two
	store := storage.NewMemory()
	tt := newTestTableOn(t, store, "", nil)
	var recs []arrow.RecordBatch
	for i := range 12 {
		recs = append(recs, genRecord(8000, int64(i)*8000, uint64(i+1)))
	}
	tt.appendFiles(t, recs, nil)
	var total int64
	for _, a := range tt.snapshot(t).Files() {
		total += a.Size
	}
	const budget = 2 << 20
	for _, c := range []Curve{CurveHilbert, CurveZOrder} {
		t.Run(c.String(), func(t *testing.T) {
			ctx := context.Background()
			want, err := SortByClustering(ctx, recs, []int{1, 2}, c, memory.DefaultAllocator)
			require.NoError(t, err)
			defer want.Release()
			order := make([]int64, want.NumRows())
			for i := range order {
				order[i] = want.Column(0).(interface{ Value(int) int64 }).Value(i)
			}
			run := func(par int) (files [][]int64, peak int64) {
				work := cloneMemory(t, store)
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				spill := t.TempDir()
				plan, err := PlanLatest(ctx, work, Options{Curve: c, ClusterBy: []string{"x", "y"}, TargetFileSize: total / 4,
					Full: true, MemoryBudget: budget, SpillDir: spill, Parallelism: par, Allocator: mem})
				require.NoError(t, err)
				spillPeakAccounted.Store(0)
				m, err := Execute(ctx, plan)
				require.NoError(t, err)
				mem.AssertSize(t, 0)
				require.Greater(t, m.SpilledBytes, int64(0), "nothing spilled")
				left, err := os.ReadDir(spill)
				require.NoError(t, err)
				require.Empty(t, left, "spill files left behind")
				snap, err := log.New(work).Snapshot(ctx, -1)
				require.NoError(t, err)
				for _, a := range snap.Files() {
					var ids []int64
					require.NoError(t, readFile(ctx, work, a, dataSchema, memory.DefaultAllocator, func(rec arrow.RecordBatch, _ int64) error {
						for i := 0; i < int(rec.NumRows()); i++ {
							ids = append(ids, rec.Column(0).(interface{ Value(int) int64 }).Value(i))
						}
						return nil
					}))
					files = append(files, ids)
				}
				return files, spillPeakAccounted.Load()
			}
			seq, seqPeak := run(1)
			require.Zero(t, seqPeak, "one lane accounted lanes' memory")
			par, parPeak := run(2)
			t.Logf("sequential: %d files; two lanes: %d files, peak accounted %d of budget %d", len(seq), len(par), parPeak, budget)
			require.Greater(t, parPeak, int64(spillWriterCharge), "the lanes were not written side by side")
			require.LessOrEqual(t, parPeak, int64(budget), "accounted memory over the budget")
			require.GreaterOrEqual(t, len(par), 2)
			checkStretches(t, seq, order)
			cuts := checkStretches(t, par, order)
			again, _ := run(2)
			require.Equal(t, cuts, checkStretches(t, again, order), "two runs with lanes cut different files")
		})
	}
	for _, r := range recs {
		r.Release()
	}
}

// checkStretches checks that every file's rows (ids) are a contiguous stretch of
// order, the stretches disjoint and together all of order, and returns where in
// order each file starts, in order.
func checkStretches(t *testing.T, files [][]int64, order []int64) []int {
	t.Helper()
	at := make(map[int64]int, len(order))
	for i, id := range order {
		at[id] = i
	}
	type stretch struct{ lo, hi int }
	var got []stretch
	for f, ids := range files {
		require.NotEmpty(t, ids, "file %d is empty", f)
		lo, ok := at[ids[0]]
		require.True(t, ok, "file %d: row %d is not in the input", f, ids[0])
		require.LessOrEqual(t, lo+len(ids), len(order), "file %d runs past the order", f)
		if !slices.Equal(order[lo:lo+len(ids)], ids) {
			t.Fatalf("file %d (%d rows from %d) is not a stretch of the clustering order", f, len(ids), lo)
		}
		got = append(got, stretch{lo, lo + len(ids)})
	}
	slices.SortFunc(got, func(a, b stretch) int { return a.lo - b.lo })
	next := 0
	var starts []int
	for _, s := range got {
		require.Equal(t, next, s.lo, "rows %d..%d missing or written twice", next, s.lo)
		starts = append(starts, s.lo)
		next = s.hi
	}
	require.Equal(t, len(order), next, "rows missing at the end")
	return starts
}

// runSplits puts lane boundaries at whole files' quantiles of the sample, gives each
// lane its share of the runs, keeps boundaries distinct (equal keys in one run,
// lanes merged when their boundary keys coincide), and with one lane chooses the
// quantiles of the whole sample.
func TestRunSplits(t *testing.T) {
	seq := func(n int) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = uint64(i) * 10
		}
		return s
	}
	cases := []struct {
		name          string
		sample        []uint64
		nRuns, nFiles int
		lanes         int
		splits        []uint64
		laneStart     []int
	}{
		{"one lane", seq(100), 4, 4, 1, []uint64{250, 500, 750}, []int{0}},
		{"two lanes of two files", seq(100), 4, 4, 2, []uint64{250, 500, 750}, []int{0, 2}},
		{"two lanes, more runs", seq(100), 8, 2, 2, []uint64{120, 250, 370, 500, 620, 750, 870}, []int{0, 4}},
		{"three files in two lanes", seq(90), 3, 3, 2, []uint64{300, 600}, []int{0, 2}},
		{"equal keys merge lanes", []uint64{5, 5, 5, 5, 5, 5, 5, 9}, 4, 2, 2, []uint64{5}, []int{0}},
		{"no sample", nil, 4, 4, 2, nil, []int{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			splits, laneStart := runSplits(c.sample, c.nRuns, c.nFiles, c.lanes)
			require.Equal(t, c.splits, splits)
			require.Equal(t, c.laneStart, laneStart)
			for i := 1; i < len(splits); i++ {
				require.Less(t, splits[i-1], splits[i])
			}
		})
	}
}

// spillLanes gives up to Parallelism lanes, one per file at most, as many as keep
// the extra writers within half the budget, and sizes runs to a quarter of a lane's
// share.
func TestSpillLanes(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		budget      int64
		par, nFiles int
		lanes       int
		perRun      int64
	}{
		{1024 * mib, 2, 4, 2, (1024*mib - writerOverhead) / 8},
		{1024 * mib, 8, 3, 3, (1024*mib - 2*writerOverhead) / 12},
		{1024 * mib, 2, 1, 1, 256 * mib},
		{1024 * mib, 1, 8, 1, 256 * mib},
		{64 * mib, 2, 8, 1, 16 * mib}, // one more writer is over half the budget
		{192 * mib, 8, 8, 3, (192*mib - 2*writerOverhead) / 12},
	}
	for _, c := range cases {
		lanes, perRun := spillLanes(Options{MemoryBudget: c.budget, Parallelism: c.par}, c.nFiles)
		require.Equal(t, c.lanes, lanes, "%+v", c)
		require.Equal(t, c.perRun, perRun, "%+v", c)
	}
}
