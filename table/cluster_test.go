package table_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
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
	require.Equal(t, "id", ci["oldClusteringColumns"])
	require.Equal(t, "s,id", ci["newClusteringColumns"])

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

// nestedSchema has a clustering candidate nested in a struct (st.x), and leaves
// that cannot cluster: inside an array, inside a map, a struct, a boolean.
func nestedSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "in", Type: arrow.StructOf(arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
			arrow.Field{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		), Nullable: true},
		{Name: "arr", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true})), Nullable: true},
	}, nil)
}

// nestedBatch makes n rows: id and st.x uniform and independent (st.x in
// [0, 10000)), st NULL on about 3% of rows and st.x NULL on about 3% more.
func nestedBatch(r *rand.Rand, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, nestedSchema())
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(r.Int64N(1 << 40))
		sb := b.Field(1).(*array.StructBuilder)
		if r.IntN(32) == 0 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if r.IntN(32) == 0 {
				sb.FieldBuilder(0).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(r.IntN(10000)))
			}
			sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", r.IntN(100)))
			in := sb.FieldBuilder(2).(*array.StructBuilder)
			in.Append(true)
			in.FieldBuilder(0).(*array.Float64Builder).Append(r.Float64())
			sb.FieldBuilder(3).(*array.BooleanBuilder).Append(r.IntN(2) == 0)
			mb := sb.FieldBuilder(4).(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Int32Builder).Append(int32(i))
		}
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		eb := lb.ValueBuilder().(*array.StructBuilder)
		eb.Append(true)
		eb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
	}
	return b.NewRecordBatch()
}

// TestClusterByNestedColumn clusters a table by (id, st.x), st.x a leaf nested in a
// struct: the domain stores ["st","x"], every write collects statistics on the
// nested leaf even when the data-skipping properties leave it out, and OPTIMIZE
// (in memory and through spill files) clusters by the leaf's values: the rows are
// the same multiset, every file is marked liquid, and a filter on st.x reads fewer
// files than before.
func TestClusterByNestedColumn(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		budget int64
		spill  bool
	}{{"in memory", 0, false}, {"spill", 64 << 10, true}} {
		t.Run(c.name, func(t *testing.T) {
			st := storage.NewMemory()
			tb, err := table.Create(ctx, st, nestedSchema(), table.CreateOptions{ClusterBy: []string{"id", "ST.x"}})
			require.NoError(t, err)
			var dom *log.DomainMetadata
			for _, a := range commitActions(t, st, 0) {
				if a.DomainMetadata != nil {
					dom = a.DomainMetadata
				}
			}
			require.NotNil(t, dom)
			require.Equal(t, log.DomainClustering, dom.Domain)
			require.JSONEq(t, `{"clusteringColumns":[["id"],["st","x"]]}`, dom.Configuration)
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			cols, err := snap.ClusteringColumns()
			require.NoError(t, err)
			require.Equal(t, []string{"id", "st.x"}, cols)

			// Statistics on the nested leaf even when the properties index id only.
			_, err = tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.dataSkippingNumIndexedCols": "1"}})
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(15, 1))
			var want []string
			for i := 0; i < 8; i++ {
				rec := nestedBatch(r, 2000)
				want = append(want, tableRows(t, rec)...)
				res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				rec.Release()
				require.NoError(t, err)
				for _, a := range commitActions(t, st, res.Version) {
					if a.Add == nil {
						continue
					}
					var s struct {
						MinValues, NullCount map[string]any
					}
					require.NoError(t, json.Unmarshal([]byte(a.Add.Stats), &s))
					require.Contains(t, s.MinValues, "id")
					require.Contains(t, s.MinValues, "st", "clustering column st.x needs statistics")
					require.Contains(t, s.MinValues["st"], "x")
					require.NotContains(t, s.MinValues["st"], "name", "other nested leaves follow the properties")
					require.Contains(t, s.NullCount["st"], "x")
				}
			}
			sort.Strings(want)
			const filter = "st.x >= 2000 AND st.x < 2100"
			filesRead := func() (read, total int) {
				snap, err := tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				sc, err := snap.Scan(ctx, table.WithFilter(filter))
				require.NoError(t, err)
				return sc.NumFiles(), len(snap.Log().Files())
			}
			before, total := filesRead()
			require.Equal(t, 8, total)
			require.Equal(t, total, before, "every appended file spans the whole range of st.x")

			res, err := tb.Optimize(ctx, table.OptimizeOptions{TargetFileSize: 16 << 10, MemoryBudget: c.budget})
			require.NoError(t, err)
			require.True(t, res.Plan.Liquid)
			require.Equal(t, []string{"id", "st.x"}, res.Plan.ClusterBy)
			require.Equal(t, c.spill, res.Metrics.SpilledBytes > 0, "spilled %d bytes", res.Metrics.SpilledBytes)
			require.Equal(t, want, readAllRows(t, tb), "OPTIMIZE keeps the multiset of rows")
			snap, err = tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			files := snap.Log().Files()
			require.Greater(t, len(files), 4)
			for _, a := range files {
				require.Equal(t, log.ClusteringProviderLiquid, a.ClusteringProvider, a.Path)
			}
			ci := rawCommitInfo(t, st, snap.Version())["operationParameters"].(map[string]any)
			require.Equal(t, `["id","st.x"]`, ci["clusterBy"])
			after, total := filesRead()
			t.Logf("filter %s: %d of %d files before OPTIMIZE, %d of %d after", filter, before, 8, after, total)
			require.Less(t, after, total, "st.x statistics skip files after clustering")
			require.Less(t, 2*after, total+1, "clustering by (id, st.x) keeps a narrow st.x range to about half the files or fewer")
			// The filter's rows come back whole.
			got := readAllRows(t, tb, table.WithFilter(filter))
			var wantIn []string
			for _, row := range want {
				if x, ok := nestedX(row); ok && x >= 2000 && x < 2100 {
					wantIn = append(wantIn, row)
				}
			}
			require.Equal(t, wantIn, got)

			// A second OPTIMIZE finds everything clustered.
			res, err = tb.Optimize(ctx, table.OptimizeOptions{TargetFileSize: 16 << 10, MemoryBudget: c.budget})
			require.NoError(t, err)
			require.Zero(t, res.Plan.NumFiles)
		})
	}
}

// nestedX extracts st.x from a row tableRows rendered (id|st|arr, st as
// map[... x:N]), false when st or st.x is NULL.
func nestedX(row string) (int, bool) {
	m := regexp.MustCompile(` x:(-?[0-9]+)\]$`).FindStringSubmatch(strings.Split(row, "|")[1])
	if m == nil {
		return 0, false
	}
	x, err := strconv.Atoi(m[1])
	return x, err == nil
}

// TestClusterByNestedColumnRefused: leaves inside arrays or maps, structs and leaves
// of types without statistics cannot be clustering columns; the error names the
// problem and nothing is written, for Create and Alter alike.
func TestClusterByNestedColumnRefused(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), nestedSchema(), table.CreateOptions{})
	require.NoError(t, err)
	for _, c := range []struct {
		col, msg string
	}{
		{"arr.x", `"arr" is not a struct`},
		{"st.m.key", `"st.m" is not a struct`},
		{"st.m", "no statistics"},
		{"arr", "no statistics"},
		{"st", "is a struct"},
		{"st.in", "is a struct"},
		{"st.flag", "no statistics"},
		{"st.nope", "does not exist"},
	} {
		t.Run(c.col, func(t *testing.T) {
			mem := storage.NewMemory()
			_, err := table.Create(ctx, mem, nestedSchema(), table.CreateOptions{ClusterBy: []string{"id", c.col}})
			require.ErrorIs(t, err, table.ErrInvalidArgument)
			require.Contains(t, err.Error(), c.msg)
			objs, _ := mem.List(ctx, "", "")
			require.Empty(t, objs)

			_, err = tb.Alter(ctx, table.AlterOptions{ClusterBy: []string{c.col}})
			require.ErrorIs(t, err, table.ErrInvalidArgument)
			require.Contains(t, err.Error(), c.msg)
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			require.Zero(t, snap.Version(), "nothing committed")
		})
	}
	// Two levels down is fine.
	_, err = tb.Alter(ctx, table.AlterOptions{ClusterBy: []string{"st.in.y"}})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	d, ok := snap.Log().Domain(log.DomainClustering)
	require.True(t, ok)
	require.JSONEq(t, `{"clusteringColumns":[["st","in","y"]]}`, d.Configuration)
}

// TestZOrderByNestedColumn: an explicit curve may name a leaf nested in a struct
// too (st.x) on a table that is not clustered: rows kept, the cube tags name the
// columns as given, and a filter on st.x reads fewer files. A nested map or a
// workload layout on a nested column is refused, naming the column.
func TestZOrderByNestedColumn(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), nestedSchema(), table.CreateOptions{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(15, 2))
	var want []string
	for i := 0; i < 6; i++ {
		rec := nestedBatch(r, 2000)
		want = append(want, tableRows(t, rec)...)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	sort.Strings(want)
	filesRead := func() (int, int) {
		snap, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		sc, err := snap.Scan(ctx, table.WithFilter("st.x < 500"))
		require.NoError(t, err)
		return sc.NumFiles(), len(snap.Log().Files())
	}
	before, total := filesRead()
	require.Equal(t, total, before)

	for _, c := range []struct {
		opts table.OptimizeOptions
		msg  string
	}{
		{table.OptimizeOptions{HilbertBy: []string{"st.m"}}, "st.m"},
		{table.OptimizeOptions{ZOrderBy: []string{"st.nope"}}, `no field "nope"`},
		{table.OptimizeOptions{ZOrderBy: []string{"arr.x"}}, "not a struct"},
		{table.OptimizeOptions{Layout: "workload", WorkloadColumns: []string{"st.x"}, Workload: mustWorkload(t, "st.x < 10")}, "top-level columns only"},
	} {
		_, err := tb.Optimize(ctx, c.opts)
		require.Error(t, err)
		require.Contains(t, err.Error(), c.msg)
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, int64(6), snap.Version(), "refusals commit nothing")

	res, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"ST.X", "id"}, TargetFileSize: 16 << 10})
	require.NoError(t, err)
	require.Equal(t, []string{"st.x", "id"}, res.Plan.ClusterBy, "the schema's spelling")
	require.Equal(t, want, readAllRows(t, tb))
	snap, err = tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	for _, a := range snap.Log().Files() {
		require.Equal(t, `["st.x","id"]`, a.Tags["ZCUBE_ZORDER_BY"], a.Path)
		require.Empty(t, a.ClusteringProvider, "not a clustered table")
	}
	after, total := filesRead()
	t.Logf("st.x < 500: %d of %d files before, %d of %d after", before, before, after, total)
	require.Less(t, 2*after, total+1)
}

func mustWorkload(t *testing.T, queries string) *workload.Workload {
	t.Helper()
	wl, err := workload.Parse(strings.NewReader(queries), "queries.sql")
	require.NoError(t, err)
	return wl
}

// TestOptimizedWriteSortsByNestedColumn: an optimized write on a table clustered
// by st.x sorts each file by the nested leaf's values (NULL first, a struct that is
// NULL counting as NULL); without optimized writes the rows keep their order.
func TestOptimizedWriteSortsByNestedColumn(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		st := storage.NewMemory()
		props := map[string]string{"delta.targetFileSize": "64kb"}
		if on {
			props["delta.autoOptimize.optimizeWrite"] = "true"
		}
		tb, err := table.Create(ctx, st, nestedSchema(), table.CreateOptions{ClusterBy: []string{"st.x"}, Properties: props})
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(15, 3))
		var recs []arrow.RecordBatch
		for i := 0; i < 10; i++ {
			recs = append(recs, nestedBatch(r, 1000))
		}
		res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{})
		for _, rec := range recs {
			rec.Release()
		}
		require.NoError(t, err)
		require.Greater(t, res.FilesAdded, 1)
		snap, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		total, sortedFiles, files := 0, 0, 0
		for _, a := range snap.Log().Files() {
			p, err := a.DecodedPath()
			require.NoError(t, err)
			raw, err := st.Get(ctx, p)
			require.NoError(t, err)
			pr, err := file.NewParquetReader(bytes.NewReader(raw))
			require.NoError(t, err)
			fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
			require.NoError(t, err)
			tbl, err := fr.ReadTable(ctx)
			pr.Close()
			require.NoError(t, err)
			var xs []int64 // NULL as -1
			for _, ch := range tbl.Column(1).Data().Chunks() {
				s := ch.(*array.Struct)
				x := s.Field(0).(*array.Int32)
				for i := 0; i < s.Len(); i++ {
					if s.IsNull(i) || x.IsNull(i) {
						xs = append(xs, -1)
					} else {
						xs = append(xs, int64(x.Value(i)))
					}
				}
			}
			tbl.Release()
			files++
			total += len(xs)
			if slices.IsSorted(xs) {
				sortedFiles++
			}
		}
		require.Equal(t, 10000, total)
		if on {
			require.Equal(t, files, sortedFiles, "every file sorted by st.x")
		} else {
			require.Zero(t, sortedFiles, "without optimized writes rows keep their order")
		}
	}
}
