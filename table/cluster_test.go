package table_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// commitActions parses one commit file of the table in store.
func commitActions(t *testing.T, st storage.Storage, v int64) []log.Action {
	t.Helper()
	raw, err := st.Get(context.Background(), log.CommitPath(v))
	require.NoError(t, err)
	acts, err := log.ParseCommit("commit", strings.NewReader(string(raw)))
	require.NoError(t, err)
	return acts
}

// rawCommitInfo returns commit v's commitInfo as written.
func rawCommitInfo(t *testing.T, st storage.Storage, v int64) map[string]any {
	t.Helper()
	raw, err := st.Get(context.Background(), log.CommitPath(v))
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		var m map[string]map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["commitInfo"] != nil {
			return m["commitInfo"]
		}
	}
	t.Fatal("no commitInfo")
	return nil
}

func writeLayout(t *testing.T, tb *table.Table, r *rand.Rand, n int) *table.WriteResult {
	t.Helper()
	rec := layoutBatch(r, n, func(int) int64 { return r.Int64N(1 << 40) }, 0.05)
	defer rec.Release()
	res, err := tb.WriteBatches(context.Background(), []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	return res
}

// TestCreateClusteredTableFollowsProtocol checks a new clustered table against
// PROTOCOL.md "Clustered Table": writer version 7 with the clustering and
// domainMetadata features, the clustering columns in a delta.clustering domain, and
// statistics for the clustering columns on every add, even when the data-skipping
// properties would leave them out.
func TestCreateClusteredTableFollowsProtocol(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{ClusterBy: []string{"ID", "s"}})
	require.NoError(t, err)
	acts := commitActions(t, st, 0)
	var proto *log.Protocol
	var dom *log.DomainMetadata
	for _, a := range acts {
		if a.Protocol != nil {
			proto = a.Protocol
		}
		if a.DomainMetadata != nil {
			dom = a.DomainMetadata
		}
	}
	require.NotNil(t, proto)
	require.Equal(t, 7, proto.MinWriterVersion)
	require.Equal(t, 1, proto.MinReaderVersion, "clustering is a writer feature: every reader still reads the table")
	require.ElementsMatch(t, []string{"clustering", "domainMetadata"}, proto.WriterFeatures)
	require.NotNil(t, dom)
	require.Equal(t, log.DomainClustering, dom.Domain)
	require.JSONEq(t, `{"clusteringColumns":[["id"],["s"]]}`, dom.Configuration)
	require.False(t, dom.Removed)
	require.Equal(t, `["id","s"]`, rawCommitInfo(t, st, 0)["operationParameters"].(map[string]any)["clusterBy"])

	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	cols, err := snap.ClusteringColumns()
	require.NoError(t, err)
	require.Equal(t, []string{"id", "s"}, cols)

	// Statistics for the clustering columns even with no indexed columns at all.
	_, err = tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.dataSkippingNumIndexedCols": "0"}})
	require.NoError(t, err)
	res := writeLayout(t, tb, rand.New(rand.NewPCG(1, 1)), 500)
	for _, a := range commitActions(t, st, res.Version) {
		if a.Add == nil {
			continue
		}
		var s struct {
			MinValues, MaxValues, NullCount map[string]any
		}
		require.NoError(t, json.Unmarshal([]byte(a.Add.Stats), &s))
		for _, c := range []string{"id", "s"} {
			require.Contains(t, s.NullCount, c, "clustering column %s needs statistics", c)
			require.Contains(t, s.MinValues, c)
		}
		require.NotContains(t, s.NullCount, "d", "non-clustering columns follow the properties")
		require.Empty(t, a.Add.ClusteringProvider, "only files OPTIMIZE clusters carry clusteringProvider")
	}

	// Refusals, each naming the problem, and nothing written.
	for _, c := range []struct {
		name string
		opts table.CreateOptions
		msg  string
	}{
		{"partitioned and clustered", table.CreateOptions{ClusterBy: []string{"id"}, PartitionColumns: []string{"s"}}, "exclusive"},
		{"unknown column", table.CreateOptions{ClusterBy: []string{"nope"}}, "does not exist"},
		{"column without statistics", table.CreateOptions{ClusterBy: []string{"d"}, Properties: map[string]string{"delta.dataSkippingNumIndexedCols": "1"}}, "no statistics"},
		{"too many", table.CreateOptions{ClusterBy: []string{"id", "s", "d", "id", "s"}}, "at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := storage.NewMemory()
			_, err := table.Create(ctx, mem, layoutSchema(), c.opts)
			require.ErrorIs(t, err, table.ErrInvalidArgument)
			require.Contains(t, err.Error(), c.msg)
			objs, _ := mem.List(ctx, "", "")
			require.Empty(t, objs)
		})
	}
}

// TestAlterClusterByRewritesNothing changes clustering columns as a metadata-only
// commit: the live files and the objects in the store stay exactly as they were.
func TestAlterClusterByRewritesNothing(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{Properties: map[string]string{"delta.dataSkippingNumIndexedCols": "1"}})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 3; i++ {
		writeLayout(t, tb, r, 300)
	}
	listing := func() []string {
		objs, err := st.List(ctx, "", "")
		require.NoError(t, err)
		var out []string
		for _, o := range objs {
			if !strings.HasPrefix(o.Path, "_delta_log/") {
				out = append(out, o.Path)
			}
		}
		sort.Strings(out)
		return out
	}
	before := listing()
	snap0, _ := tb.Snapshot(ctx, table.Latest())

	res, err := tb.Alter(ctx, table.AlterOptions{ClusterBy: []string{"id"}})
	require.NoError(t, err)
	require.True(t, res.ProtocolUpgraded)
	require.Equal(t, "CLUSTER BY", res.Operation)
	require.Contains(t, res.WriterFeatures, "clustering")
	require.Equal(t, before, listing(), "CLUSTER BY must not write data files")
	acts := commitActions(t, st, res.Version)
	for _, a := range acts {
		require.Nil(t, a.Add, "no file actions")
		require.Nil(t, a.Remove, "no file actions")
		require.Nil(t, a.Metadata, "no metaData: concurrent writers are not disturbed")
	}
	snap1, _ := tb.Snapshot(ctx, table.Latest())
	require.Equal(t, snap0.Log().Files(), snap1.Log().Files())
	cols, _ := snap1.ClusteringColumns()
	require.Equal(t, []string{"id"}, cols)

	// s gets statistics only from now on: the old files lack them, so s cannot join.
	_, err = tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.dataSkippingNumIndexedCols": "2"}})
	require.NoError(t, err)
	_, err = tb.Alter(ctx, table.AlterOptions{ClusterBy: []string{"id", "s"}})
	require.ErrorIs(t, err, table.ErrMissingStats)
	require.Contains(t, err.Error(), "3 file(s)")
	// OPTIMIZE rewrites them with statistics; then the change is accepted.
	_, err = tb.Optimize(ctx, table.OptimizeOptions{})
	require.NoError(t, err)
	res, err = tb.Alter(ctx, table.AlterOptions{ClusterBy: []string{"s", "id"}})
	require.NoError(t, err)
	require.False(t, res.ProtocolUpgraded)
	ci := rawCommitInfo(t, st, res.Version)["operationParameters"].(map[string]any)
	require.Equal(t, `"id"`, ci["oldClusteringColumns"])
	require.Equal(t, `"s,id"`, ci["newClusteringColumns"])

	// CLUSTER BY NONE keeps the table clustered, with no columns.
	_, err = tb.Alter(ctx, table.AlterOptions{ClusterByNone: true})
	require.NoError(t, err)
	snap2, _ := tb.Snapshot(ctx, table.Latest())
	cols, err = snap2.ClusteringColumns()
	require.NoError(t, err)
	require.Equal(t, []string{}, cols)
	d, ok := snap2.Log().Domain(log.DomainClustering)
	require.True(t, ok)
	require.JSONEq(t, `{"clusteringColumns":[]}`, d.Configuration)

	// A partitioned table cannot be clustered.
	pt, err := table.Create(ctx, storage.NewMemory(), layoutSchema(), table.CreateOptions{PartitionColumns: []string{"s"}})
	require.NoError(t, err)
	_, err = pt.Alter(ctx, table.AlterOptions{ClusterBy: []string{"id"}})
	require.ErrorIs(t, err, table.ErrInvalidArgument)
	require.Contains(t, err.Error(), "exclusive")
}

// TestEnableRowTrackingBackfills turns row tracking on for a table with data: every
// live file gets row IDs in that commit without any data file being written, and
// later writes assign fresh ones above the high-water mark.
func TestEnableRowTrackingBackfills(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 3; i++ {
		writeLayout(t, tb, r, 100+i)
	}
	res, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.enableRowTracking": "true"}})
	require.NoError(t, err)
	require.True(t, res.ProtocolUpgraded)
	require.Contains(t, res.WriterFeatures, "rowTracking")
	require.Contains(t, res.WriterFeatures, "domainMetadata")
	writeLayout(t, tb, r, 50)
	h, err := tb.Log().History(ctx, 2)
	require.NoError(t, err)
	for _, c := range h {
		require.Equal(t, "true", c.CommitInfo.Tags[log.TagRowTrackingPreserved], "%s copies no row", c.Operation)
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.True(t, snap.Properties().EnableRowTracking)
	var total int64
	seen := map[int64]bool{}
	for _, f := range snap.Log().Files() {
		require.NotNil(t, f.BaseRowID, f.Path)
		require.NotNil(t, f.DefaultRowCommitVersion, f.Path)
		n, _ := f.NumRecords()
		for id := *f.BaseRowID; id < *f.BaseRowID+n; id++ {
			require.False(t, seen[id], "row ID %d assigned twice", id)
			seen[id] = true
		}
		total += n
	}
	require.Equal(t, int64(100+101+102+50), total)
	hwm, err := snap.Log().RowIDHighWaterMark()
	require.NoError(t, err)
	require.Equal(t, total-1, hwm)
}

func TestClusterByNestedColumnRefused(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	}, nil)
	_, err := table.Create(context.Background(), storage.NewMemory(), sch, table.CreateOptions{ClusterBy: []string{"st.x"}})
	require.ErrorIs(t, err, table.ErrInvalidArgument)
	require.Contains(t, err.Error(), "top-level")
}
