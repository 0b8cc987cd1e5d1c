package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
	"github.com/skiplake/skiplake/workload"
)

// Review of issue 16 through the library's face: a workload OPTIMIZE leaves a
// reader 1 / writer 2 table at that protocol, and after full rebuilds VACUUM at a
// zero retention leaves exactly the current tree, through which the next
// OPTIMIZE still routes appended rows.
func TestWorkloadLayoutProtocolAndVacuum(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	tb, err := table.Create(ctx, st, schema, table.CreateOptions{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(16, 1))
	var id int64
	appendRows := func(n int) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for range n {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Int64Builder).Append(r.Int64N(1000))
			b.Field(2).(*array.Int64Builder).Append(r.Int64N(1000))
			id++
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		require.NoError(t, err)
	}
	for range 6 {
		appendRows(2000)
	}
	queries := func(seed uint64) *workload.Workload {
		q := rand.New(rand.NewPCG(seed, 2))
		var sb strings.Builder
		for range 30 {
			x, y := q.IntN(9)*100, q.IntN(9)*100
			fmt.Fprintf(&sb, "x >= %d AND x < %d AND y >= %d AND y < %d\n", x, x+100, y, y+200)
		}
		w, err := workload.Parse(strings.NewReader(sb.String()), "grid")
		require.NoError(t, err)
		return w
	}
	var size int64
	snap, err := tb.Log().Snapshot(ctx, -1)
	require.NoError(t, err)
	for _, a := range snap.Files() {
		size += a.Size
	}
	target := size / 6
	checkProtocol := func(step string) {
		t.Helper()
		snap, err := tb.Log().Snapshot(ctx, -1)
		require.NoError(t, err)
		p := snap.Protocol()
		require.Equal(t, 1, p.MinReaderVersion, step)
		require.Equal(t, 2, p.MinWriterVersion, step)
		require.Empty(t, p.ReaderFeatures, step)
		require.Empty(t, p.WriterFeatures, step)
		require.Empty(t, snap.DomainMetadata(), step)
	}
	liveTree := func() string {
		t.Helper()
		snap, err := tb.Log().Snapshot(ctx, -1)
		require.NoError(t, err)
		trees := map[string]bool{}
		for _, a := range snap.Files() {
			trees[a.Tags[optimize.TagTree]] = true
		}
		require.Len(t, trees, 1)
		for p := range trees {
			require.NotEmpty(t, p)
			return p
		}
		return ""
	}
	treeObjects := func() []string {
		t.Helper()
		objs, err := st.List(ctx, optimize.TreeDir, "")
		require.NoError(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, o.Path)
		}
		slices.Sort(out)
		return out
	}

	checkProtocol("created")
	var built []string
	for i, seed := range []uint64{1, 2, 3} {
		_, err := tb.Optimize(ctx, table.OptimizeOptions{Layout: "workload", Workload: queries(seed), Full: i > 0, TargetFileSize: target})
		require.NoError(t, err)
		checkProtocol(fmt.Sprintf("workload OPTIMIZE %d", i))
		built = append(built, liveTree())
	}
	require.Equal(t, built, slices.Compact(slices.Clone(built)), "every full run builds a new tree")
	all := slices.Clone(built)
	slices.Sort(all)
	require.Equal(t, all, treeObjects())
	rows := countRows(t, tb)

	// Past the minimum age of unreferenced files (a VACUUM never deletes younger ones).
	aged := tb.WithClock(func() time.Time { return time.Now().Add(vacuum.MinUnreferencedAge + time.Minute) })
	dry, err := aged.Vacuum(ctx, table.VacuumOptions{RetentionSet: true, Force: true, DryRun: true})
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.Subset(t, dry.Files, built[:2])
	require.NotContains(t, dry.Files, built[2])
	require.Equal(t, all, treeObjects(), "a dry run deletes nothing")

	res, err := aged.Vacuum(ctx, table.VacuumOptions{RetentionSet: true, Force: true})
	require.NoError(t, err)
	require.Equal(t, dry.Files, res.Files)
	require.Equal(t, []string{built[2]}, treeObjects())
	require.Equal(t, rows, countRows(t, tb))

	appendRows(13000) // doubles the table: routed by a re-split of the tree
	out, err := tb.Optimize(ctx, table.OptimizeOptions{Layout: "workload", TargetFileSize: target})
	require.NoError(t, err)
	checkProtocol("routed OPTIMIZE")
	bin := out.Plan.Partitions[0].Bins[0]
	require.Equal(t, "route", bin.Layout.Action)
	require.Equal(t, built[2], bin.Layout.Tree)
	require.Equal(t, rows+13000, countRows(t, tb))
}
