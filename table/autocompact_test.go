package table_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// failingReads fails every read of a data file while on is set.
type failingReads struct {
	storage.Storage
	on atomic.Bool
}

var errInjected = errors.New("injected read failure")

func (f *failingReads) Get(ctx context.Context, p string) ([]byte, error) {
	if f.on.Load() && !strings.HasPrefix(p, "_delta_log/") {
		return nil, errInjected
	}
	return f.Storage.Get(ctx, p)
}

func (f *failingReads) Open(ctx context.Context, p string) (storage.File, error) {
	if f.on.Load() && !strings.HasPrefix(p, "_delta_log/") {
		return nil, errInjected
	}
	return f.Storage.Open(ctx, p)
}

func partSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "p", Type: arrow.BinaryTypes.String},
	}, nil)
}

func partBatch(r *rand.Rand, part string, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, partSchema())
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(r.Int64N(1 << 30))
		b.Field(1).(*array.StringBuilder).Append(part)
	}
	return b.NewRecordBatch()
}

func filesIn(t *testing.T, tb *table.Table, part string) int {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	n := 0
	for _, a := range snap.Log().Files() {
		if v, _ := a.PartitionValue("p"); v == part {
			n++
		}
	}
	return n
}

// TestAutoCompaction: with delta.autoOptimize.autoCompact, the write that brings a
// partition to skiplake.autoCompact.minNumFiles small files compacts that partition
// in a separate commit; partitions the write did not touch are left alone; a failing
// compaction never fails the write.
func TestAutoCompaction(t *testing.T) {
	ctx := context.Background()
	st := &failingReads{Storage: storage.NewMemory()}
	r := rand.New(rand.NewPCG(4, 4))
	tb, err := table.Create(ctx, st, partSchema(), table.CreateOptions{PartitionColumns: []string{"p"}})
	require.NoError(t, err)
	write := func(part string) *table.WriteResult {
		rec := partBatch(r, part, 50)
		defer rec.Release()
		res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		require.NoError(t, err)
		return res
	}
	for i := 0; i < 6; i++ {
		require.Nil(t, write("B").AutoCompact, "auto-compaction is off by default")
	}
	_, err = tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{
		"delta.autoOptimize.autoCompact": "true", "skiplake.autoCompact.minNumFiles": "5"}})
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		require.Nil(t, write("A").AutoCompact, "below the threshold nothing happens")
	}
	res := write("A")
	require.NotNil(t, res.AutoCompact)
	require.NoError(t, res.AutoCompact.Err)
	require.Len(t, res.AutoCompact.Versions, 1)
	require.Equal(t, res.Version+1, res.AutoCompact.Versions[0], "a separate commit right after the write")
	require.Equal(t, 5, res.AutoCompact.FilesRemoved)
	require.Equal(t, 1, filesIn(t, tb, "A"))
	require.Equal(t, 6, filesIn(t, tb, "B"), "partitions the write did not touch are left alone")
	h, err := tb.History(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "OPTIMIZE", h[0].Operation)

	// Failure: the write stands, the failure is reported.
	for i := 0; i < 3; i++ {
		write("A")
	}
	st.on.Store(true)
	rec := partBatch(r, "A", 50)
	defer rec.Release()
	res, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	st.on.Store(false)
	require.NoError(t, err, "a failed auto-compaction never fails the write")
	require.NotNil(t, res.AutoCompact)
	require.ErrorIs(t, res.AutoCompact.Err, errInjected)
	require.Empty(t, res.AutoCompact.Versions)
	require.Equal(t, 5, filesIn(t, tb, "A"), "the write committed, nothing was compacted")
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, res.Version, snap.Version())
}

// TestAutoCompactionClustersClusteredTables: on a clustered table auto-compaction
// clusters the new files incrementally (clusteringProvider liquid on its files).
func TestAutoCompactionClustersClusteredTables(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(6, 6))
	tb, err := table.Create(ctx, storage.NewMemory(), layoutSchema(), table.CreateOptions{ClusterBy: []string{"id", "s"},
		Properties: map[string]string{"delta.autoOptimize.autoCompact": "auto", "skiplake.autoCompact.minNumFiles": "4"}})
	require.NoError(t, err)
	var last *table.WriteResult
	for i := 0; i < 4; i++ {
		last = writeLayout(t, tb, r, 200)
	}
	require.NotNil(t, last.AutoCompact)
	require.NoError(t, last.AutoCompact.Err)
	require.True(t, last.AutoCompact.Clustered)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	for _, a := range snap.Log().Files() {
		require.Equal(t, log.ClusteringProviderLiquid, a.ClusteringProvider)
	}
	require.Equal(t, int64(800), countRows(t, tb))
}

// TestOptimizedWriteSortsClusteredFiles: with delta.autoOptimize.optimizeWrite on a
// clustered table, every file a write produces is sorted by the clustering key (one
// column: a plain sort), and the files are not marked clustered; without it the rows
// keep their input order.
func TestOptimizedWriteSortsClusteredFiles(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		st := storage.NewMemory()
		props := map[string]string{"delta.targetFileSize": "32kb"}
		if on {
			props["delta.autoOptimize.optimizeWrite"] = "true"
		}
		tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{ClusterBy: []string{"id"}, Properties: props})
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(8, 8))
		var recs []arrow.RecordBatch
		for i := 0; i < 20; i++ {
			recs = append(recs, layoutBatch(r, 500, func(int) int64 { return r.Int64N(1 << 40) }, 0))
		}
		res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{})
		for _, rec := range recs {
			rec.Release()
		}
		require.NoError(t, err)
		require.Greater(t, res.FilesAdded, 2)
		snap, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		ids := proofFileIDs(t, st, snap, "id")
		sortedFiles := 0
		total := 0
		for _, v := range ids {
			total += len(v)
			if slices.IsSorted(v) {
				sortedFiles++
			}
		}
		require.Equal(t, 10000, total)
		if on {
			require.Equal(t, len(ids), sortedFiles, "every file sorted by the clustering column")
		} else {
			require.Zero(t, sortedFiles, "without optimized writes rows keep their order")
		}
		for _, a := range snap.Log().Files() {
			require.Empty(t, a.ClusteringProvider)
		}
	}
}
