package optimize

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// tiedRecord makes n rows of dataSchema whose clustering candidates x and y take few
// values (x NULL in about one row in 20), so that many rows share a key and a value:
// the order among them is the tie-break's and, past it, the rows' positions.
func tiedRecord(n int, start int64, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 5))
	b := array.NewRecordBuilder(memory.DefaultAllocator, dataSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(start + int64(i))
		if rng.IntN(20) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(rng.Int64N(40))
		}
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(3))
		if rng.IntN(10) == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(1000)))
		}
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("s-%d", rng.IntN(500)))
	}
	return b.NewRecordBatch()
}

func cloneMemory(t *testing.T, src *storage.Memory) *storage.Memory {
	t.Helper()
	ctx := context.Background()
	dst := storage.NewMemory()
	objs, err := src.List(ctx, "", "")
	require.NoError(t, err)
	for _, o := range objs {
		data, err := src.Get(ctx, o.Path)
		require.NoError(t, err)
		require.NoError(t, dst.Put(ctx, o.Path, data))
	}
	return dst
}

// outputFile is one file an OPTIMIZE added: its size, statistics and rows in file
// order.
type outputFile struct {
	size  int64
	stats string
	rows  []string
}

// optimizedFiles runs OPTIMIZE on store and returns the files it added, ordered by
// their first row.
func optimizedFiles(t *testing.T, store *storage.Memory, opts Options) []outputFile {
	t.Helper()
	ctx := context.Background()
	plan, err := PlanLatest(ctx, store, opts)
	require.NoError(t, err)
	_, err = Execute(ctx, plan)
	require.NoError(t, err)
	snap, err := log.New(store).Snapshot(ctx, -1)
	require.NoError(t, err)
	var out []outputFile
	for _, a := range snap.Files() {
		f := outputFile{size: a.Size, stats: a.Stats}
		err := readFile(ctx, store, a, dataSchema, memory.DefaultAllocator, func(rec arrow.RecordBatch, _ int64) error {
			for i := 0; i < int(rec.NumRows()); i++ {
				var sb strings.Builder
				for c := 0; c < int(rec.NumCols()); c++ {
					sb.WriteString(rec.Column(c).ValueStr(i))
					sb.WriteByte('|')
				}
				f.rows = append(f.rows, sb.String())
			}
			return nil
		})
		require.NoError(t, err)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rows[0] < out[j].rows[0] })
	return out
}

// The clustering, in memory and spilled (each run), gathers the rows from the batches
// as they were read (packed row IDs) instead of from their concatenation: the files it writes are the
// same — the same rows in the same order, cut at the same places (same sizes), with
// the same statistics — on both curves, with many equal keys and values, and with
// files read in several batches (40,000 rows: 32,768 and the rest).
func TestChunkedGatherWritesWhatConcatenationWrites(t *testing.T) {
	store := storage.NewMemory()
	tt := newTestTableOn(t, store, "", nil)
	var recs []arrow.RecordBatch
	for i, n := range []int{40_000, 1, 7_000, 40_000} {
		recs = append(recs, tiedRecord(n, int64(i)*100_000, uint64(i+1)))
	}
	tt.appendFiles(t, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"in memory", 0}, {"spilled", 256 << 10}} {
		for _, c := range []Curve{CurveHilbert, CurveZOrder} {
			t.Run(tc.name+"/"+c.String(), func(t *testing.T) {
				chunkedWritesWhatConcatenationWrites(t, store, Options{Curve: c, ClusterBy: []string{"x", "y"},
					TargetFileSize: 200 << 10, Full: true, MemoryBudget: tc.budget})
			})
		}
	}
}

// chunkedWritesWhatConcatenationWrites optimizes copies of store with opts, gathering
// from the batches as read and from their concatenation, and compares the files.
func chunkedWritesWhatConcatenationWrites(t *testing.T, store *storage.Memory, opts Options) {
	got := optimizedFiles(t, cloneMemory(t, store), opts)
	gatherChunked = false
	defer func() { gatherChunked = true }()
	want := optimizedFiles(t, cloneMemory(t, store), opts)
	require.Greater(t, len(want), 1, "the test needs several output files")
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i].size, got[i].size, "file %d size", i)
		require.True(t, jsonEqual(t, want[i].stats, got[i].stats), "file %d stats %s, want %s", i, got[i].stats, want[i].stats)
		require.Equal(t, want[i].rows, got[i].rows, "file %d rows", i)
	}
}

// concatBytes is datafile.RecordBytes of the concatenation, for every chunked type,
// with and without NULLs, sliced or not.
func TestConcatBytesIsTheConcatenationsSize(t *testing.T) {
	rec := tiedRecord(1000, 0, 9)
	defer rec.Release()
	cases := [][][2]int64{{{0, 1000}}, {{0, 10}, {10, 10}, {500, 1000}}, {{3, 4}}}
	for _, bounds := range cases {
		for c := 0; c < int(rec.NumCols()); c++ {
			var arrs []arrow.Array
			for _, b := range bounds {
				s := array.NewSlice(rec.Column(c), b[0], b[1])
				s.NullN()
				defer s.Release()
				arrs = append(arrs, s)
			}
			cat, err := array.Concatenate(arrs, memory.DefaultAllocator)
			require.NoError(t, err)
			one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{dataSchema.Field(c)}, nil), []arrow.Array{cat}, int64(cat.Len()))
			require.Equal(t, datafile.RecordBytes(one), concatBytes(arrs), "column %d, slices %v", c, bounds)
			one.Release()
			cat.Release()
		}
	}
}

// The heap pacer of an in-memory bin collects once per interval of bytes counted
// (budget/32, at least minPacerBytes), from any goroutine; a nil pacer does nothing.
func TestHeapPacerCollectsPerInterval(t *testing.T) {
	h := newHeapPacer(1 << 30)
	require.Equal(t, int64(32<<20), h.every)
	require.Equal(t, int64(minPacerBytes), newHeapPacer(1<<20).every)
	// Count the pacer's own collections (the process's NumForcedGC also counts any
	// other runtime.GC, such as a collection of a goroutine another test left behind).
	var collections atomic.Int32
	h.collect = func() { collections.Add(1) }
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				h.add(2 << 20) // 4 goroutines x 10 x 2 MiB = 80 MiB: two intervals
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(2), collections.Load())
	var none *heapPacer
	none.add(1 << 40)
	require.Equal(t, int32(2), collections.Load())
}

// The clustering of one bin, in memory or spilled, writes its rows in the order
// SortByClustering gives the same batches (the same sample, keys, tie-break and
// position order: the order the clustering had before it sampled columns on several
// workers and gathered from the batches as read), when the bin's output is one file.
func TestClusteringOrderIsSortByClustering(t *testing.T) {
	store := storage.NewMemory()
	tt := newTestTableOn(t, store, "", nil)
	var recs []arrow.RecordBatch
	for i, n := range []int{40_000, 3_000, 40_000} {
		recs = append(recs, tiedRecord(n, int64(i)*100_000, uint64(i+7)))
	}
	tt.appendFiles(t, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	// The spilled path (a budget below the bin: key-range runs filled by Parallelism
	// concurrent readers) must give the same order: its runs put rows back in input
	// order before sorting, so ties do not come out in the order the readers finished.
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"in memory", 0}, {"spilled", 256 << 10}} {
		for _, c := range []Curve{CurveHilbert, CurveZOrder} {
			t.Run(tc.name+"/"+c.String(), func(t *testing.T) {
				clusteringOrderIsSortByClustering(t, store, c, tc.budget)
			})
		}
	}
}

// clusteringOrderIsSortByClustering clusters store's one bin at budget (0: in memory)
// and checks its one output file against SortByClustering of the bin's batches.
func clusteringOrderIsSortByClustering(t *testing.T, store *storage.Memory, c Curve, budget int64) {
	work := cloneMemory(t, store)
	ctx := context.Background()
	plan, err := PlanLatest(ctx, work, Options{Curve: c, ClusterBy: []string{"x", "y"}, TargetFileSize: 1 << 30, Full: true,
		MemoryBudget: budget, Parallelism: 2})
	require.NoError(t, err)
	require.Len(t, plan.Partitions, 1)
	require.Len(t, plan.Partitions[0].Bins, 1)
	var in []arrow.RecordBatch
	for _, a := range plan.Partitions[0].Bins[0].adds {
		require.NoError(t, readFile(ctx, work, a, dataSchema, memory.DefaultAllocator, func(rec arrow.RecordBatch, _ int64) error {
			rec.Retain()
			in = append(in, rec)
			return nil
		}))
	}
	want, err := SortByClustering(ctx, in, []int{1, 2}, c, memory.DefaultAllocator)
	require.NoError(t, err)
	for _, r := range in {
		r.Release()
	}
	m, err := Execute(ctx, plan)
	require.NoError(t, err)
	require.Equal(t, budget > 0, m.SpilledBytes > 0, "spilled %d bytes at budget %d", m.SpilledBytes, budget)
	snap, err := log.New(work).Snapshot(ctx, -1)
	require.NoError(t, err)
	require.Len(t, snap.Files(), 1)
	var got []string
	require.NoError(t, readFile(ctx, work, snap.Files()[0], dataSchema, memory.DefaultAllocator, func(rec arrow.RecordBatch, _ int64) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			got = append(got, rec.Column(0).ValueStr(i))
		}
		return nil
	}))
	require.Len(t, got, int(want.NumRows()))
	for i := range got {
		require.Equal(t, want.Column(0).ValueStr(i), got[i], "row %d", i)
	}
	want.Release()
}
