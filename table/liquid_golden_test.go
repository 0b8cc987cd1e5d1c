package table_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

// copyTree copies a golden table (log and data) so a test can write to it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	require.NoError(t, err)
	return dst
}

// rowIDRanges checks row tracking on a snapshot (every live file has row IDs, ranges
// are disjoint and below the high-water mark) and returns baseRowId by path.
func rowIDRanges(t *testing.T, snap *table.Snapshot) map[string]int64 {
	t.Helper()
	type rng struct {
		lo, hi int64
		path   string
	}
	var rs []rng
	out := map[string]int64{}
	for _, f := range snap.Log().Files() {
		require.NotNil(t, f.BaseRowID, "file %s has no baseRowId", f.Path)
		require.NotNil(t, f.DefaultRowCommitVersion, "file %s has no defaultRowCommitVersion", f.Path)
		require.LessOrEqual(t, *f.DefaultRowCommitVersion, snap.Version())
		n, ok := f.NumRecords()
		require.True(t, ok)
		rs = append(rs, rng{*f.BaseRowID, *f.BaseRowID + n, f.Path})
		out[f.Path] = *f.BaseRowID
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	hwm, err := snap.Log().RowIDHighWaterMark()
	require.NoError(t, err)
	for i, r := range rs {
		if i > 0 {
			require.LessOrEqual(t, rs[i-1].hi, r.lo, "row IDs of %s and %s overlap", rs[i-1].path, r.path)
		}
		require.LessOrEqual(t, r.hi-1, hwm, "file %s above the high-water mark", r.path)
	}
	return out
}

// TestOptimizeSparkLiquidTable reads the Databricks-written clustered table (the
// liquid preview feature, row tracking, deletion vectors enabled), OPTIMIZEs it —
// which clusters it by its clustering column — and reads it again: the same rows,
// the clustering domain untouched, the new file marked clusteringProvider "liquid",
// fresh row IDs above the old high-water mark, and the removes carrying the row IDs
// of the files they remove.
func TestOptimizeSparkLiquidTable(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, filepath.Join(goldenDir(t), "delta-rs", "table_with_liquid_clustering", "delta"))
	tb, err := table.OpenURL(ctx, dir)
	require.NoError(t, err)
	before := readAll(t, tb)
	defer before.Release()
	snap0, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	cols, err := snap0.ClusteringColumns()
	require.NoError(t, err)
	require.Equal(t, []string{"id"}, cols)
	oldIDs := rowIDRanges(t, snap0)
	stable0 := stableRowIDs(t, dir, snap0)
	require.Len(t, stable0, 10)
	liquidDomain, ok := snap0.Log().Domain(log.DomainLiquid)
	require.True(t, ok)

	res, err := tb.Optimize(ctx, table.OptimizeOptions{})
	require.NoError(t, err)
	require.True(t, res.Plan.Liquid)
	require.Equal(t, 10, res.Metrics.NumRemovedFiles)
	require.Equal(t, 1, res.Metrics.NumAddedFiles)

	after := readAll(t, tb)
	defer after.Release()
	compareMultiset(t, "after OPTIMIZE", after, before)
	snap1, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, snap0.Log().Protocol(), snap1.Log().Protocol(), "OPTIMIZE changes no feature")
	d, ok := snap1.Log().Domain(log.DomainLiquid)
	require.True(t, ok)
	require.Equal(t, liquidDomain, d, "the clustering domain is kept as it is")
	rowIDRanges(t, snap1)
	f := snap1.Log().Files()[0]
	require.Equal(t, log.ClusteringProviderLiquid, f.ClusteringProvider)
	require.Equal(t, int64(10), *f.BaseRowID, "fresh row IDs start above the old high-water mark 9")
	require.Equal(t, snap1.Version(), *f.DefaultRowCommitVersion)
	hwm, _ := snap1.Log().RowIDHighWaterMark()
	require.Equal(t, int64(19), hwm)
	for _, a := range commitActions(t, localStore(t, dir), snap1.Version()) {
		if a.Remove != nil {
			require.NotNil(t, a.Remove.BaseRowID)
			require.Equal(t, oldIDs[a.Remove.Path], *a.Remove.BaseRowID, "remove of %s", a.Remove.Path)
			require.False(t, a.Remove.DataChange)
		}
	}

	h, err := tb.History(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, `["id"]`, h[0].OperationParameters["clusterBy"])
	require.Equal(t, `[]`, h[0].OperationParameters["zOrderBy"])
	ci, err := tb.Log().History(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "true", ci[0].CommitInfo.Tags[log.TagRowTrackingPreserved], "OPTIMIZE keeps the stable row IDs of the rows it copies")
	require.Equal(t, stable0, stableRowIDs(t, dir, snap1), "every row keeps its stable row ID and row commit version")

	// A second OPTIMIZE has nothing to do: the file is clustered.
	res, err = tb.Optimize(ctx, table.OptimizeOptions{})
	require.NoError(t, err)
	require.Zero(t, res.Plan.NumFiles)

	// Appending and checkpointing keep row tracking consistent.
	rec := readAll(t, tb)
	defer rec.Release()
	tr := array.NewTableReader(rec, 1<<16)
	defer tr.Release()
	_, err = tb.Write(ctx, tr, table.WriteOptions{})
	require.NoError(t, err)
	_, err = tb.Checkpoint(ctx)
	require.NoError(t, err)
	snap2, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	rowIDRanges(t, snap2)
	hwm, _ = snap2.Log().RowIDHighWaterMark()
	require.Equal(t, int64(29), hwm)
}

// stableRowIDs reads every live file of snap directly and returns, per value of
// column id, the row's stable row ID and row commit version (PROTOCOL.md "Row IDs": the
// materialized column's value where present and not null, else baseRowId plus the
// row's position and defaultRowCommitVersion).
func stableRowIDs(t *testing.T, dir string, snap *table.Snapshot) map[int64][2]int64 {
	t.Helper()
	props := snap.Properties()
	out := map[int64][2]int64{}
	for _, a := range snap.Log().Files() {
		raw, err := os.ReadFile(filepath.Join(dir, a.Path))
		require.NoError(t, err)
		pr, err := file.NewParquetReader(bytes.NewReader(raw))
		require.NoError(t, err)
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
		require.NoError(t, err)
		tbl, err := fr.ReadTable(context.Background())
		require.NoError(t, err)
		col := func(name string) []*int64 {
			idx := tbl.Schema().FieldIndices(name)
			if len(idx) == 0 {
				return nil
			}
			var vals []*int64
			for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
				arr := ch.(*array.Int64)
				for i := 0; i < arr.Len(); i++ {
					if arr.IsNull(i) {
						vals = append(vals, nil)
					} else {
						v := arr.Value(i)
						vals = append(vals, &v)
					}
				}
			}
			return vals
		}
		ids, rid, ver := col("id"), col(props.MaterializedRowIDColumn), col(props.MaterializedRowCommitVersionColumn)
		for pos, id := range ids {
			r, v := *a.BaseRowID+int64(pos), *a.DefaultRowCommitVersion
			if rid != nil && rid[pos] != nil {
				r = *rid[pos]
			}
			if ver != nil && ver[pos] != nil {
				v = *ver[pos]
			}
			out[*id] = [2]int64{r, v}
		}
		tbl.Release()
		pr.Close()
	}
	return out
}

// TestOptimizeKeepsStableRowIDs: on a table with row tracking enabled, rows keep
// their stable row IDs and row commit versions through incremental and full
// OPTIMIZE runs, new rows get new ones, and all stay unique.
func TestOptimizeKeepsStableRowIDs(t *testing.T) {
	ctx := context.Background()
	rt := newRowTracked(t, []string{"id"}, 3, 0)
	tb, dir, write, snapshot := rt.tb, rt.dir, rt.write, rt.snapshot
	for i := 0; i < 3; i++ {
		write(700)
	}
	before := stableRowIDs(t, dir, snapshot())
	_, err := tb.Optimize(ctx, table.OptimizeOptions{})
	require.NoError(t, err)
	mid := stableRowIDs(t, dir, snapshot())
	require.Equal(t, before, mid)
	write(500)
	_, err = tb.Optimize(ctx, table.OptimizeOptions{Full: true})
	require.NoError(t, err)
	after := stableRowIDs(t, dir, snapshot())
	require.Len(t, after, int(rt.rows))
	seen := map[int64]bool{}
	for id, v := range after {
		if old, ok := before[id]; ok {
			require.Equal(t, old, v, "row %d", id)
		}
		require.False(t, seen[v[0]], "stable row ID %d twice", v[0])
		seen[v[0]] = true
	}
	rowIDRanges(t, snapshot())
}

// TestWorkloadLayoutKeepsStableRowIDs: OPTIMIZE with a workload tree on a table
// with row tracking copies every row's stable row ID and row commit version into
// the files it writes, on the run that builds the tree and on the run that routes
// new rows through it; the table stays unclustered (the tree lives in add.tags and
// a side file, never in the clustering domain metadata).
func TestWorkloadLayoutKeepsStableRowIDs(t *testing.T) {
	ctx := context.Background()
	rt := newRowTracked(t, nil, 5, 0.1)
	tb, dir, write, snapshot := rt.tb, rt.dir, rt.write, rt.snapshot
	for i := 0; i < 4; i++ {
		write(800)
	}
	wl, err := workload.Parse(strings.NewReader("id BETWEEN 100 AND 900\nd < -0.5\nid > 2500 AND d > 0\n"), "queries.sql")
	require.NoError(t, err)
	before := stableRowIDs(t, dir, snapshot())
	_, err = tb.Optimize(ctx, table.OptimizeOptions{Layout: "workload", Workload: wl})
	require.NoError(t, err)
	snap := snapshot()
	trees := 0
	for _, f := range snap.Log().Files() {
		if f.Tags[optimize.TagTree] != "" {
			trees++
		}
	}
	require.Positive(t, trees, "no file carries the tree's tags")
	require.Equal(t, before, stableRowIDs(t, dir, snap))
	c, err := snap.Log().Clustering()
	require.NoError(t, err)
	require.Nil(t, c, "a workload layout must not declare clustering columns")

	write(4000) // more than doubles the table: routed by a re-split of the tree
	before = stableRowIDs(t, dir, snapshot())
	out, err := tb.Optimize(ctx, table.OptimizeOptions{Layout: "workload"})
	require.NoError(t, err)
	require.Len(t, out.Plan.Partitions, 1)
	require.Equal(t, "route", out.Plan.Partitions[0].Bins[0].Layout.Action)
	after := stableRowIDs(t, dir, snapshot())
	require.Equal(t, before, after)
	require.Len(t, after, int(rt.rows))
	seen := map[int64]bool{}
	for id, v := range after {
		require.False(t, seen[v[0]], "stable row ID %d twice (row %d)", v[0], id)
		seen[v[0]] = true
	}
	rowIDRanges(t, snapshot())
}

// rowTracked is a table with row tracking and a 16 KB target file size whose
// writes append rows with ids 1, 2, 3, ... (layoutBatch).
type rowTracked struct {
	tb       *table.Table
	dir      string
	rows     int64 // rows written so far (the last id)
	write    func(n int)
	snapshot func() *table.Snapshot
}

func newRowTracked(t *testing.T, clusterBy []string, seed uint64, nulls float64) *rowTracked {
	t.Helper()
	ctx := context.Background()
	rt := &rowTracked{dir: t.TempDir()}
	tb, err := table.CreateURL(ctx, rt.dir, layoutSchema(), table.CreateOptions{ClusterBy: clusterBy,
		Properties: map[string]string{"delta.enableRowTracking": "true", "delta.targetFileSize": "16kb"}})
	require.NoError(t, err)
	rt.tb = tb
	r := rand.New(rand.NewPCG(seed, seed))
	rt.write = func(n int) {
		rec := layoutBatch(r, n, func(int) int64 { rt.rows++; return rt.rows }, nulls)
		defer rec.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		require.NoError(t, err)
	}
	rt.snapshot = func() *table.Snapshot {
		s, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		return s
	}
	return rt
}
