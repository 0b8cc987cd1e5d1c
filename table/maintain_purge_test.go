package table_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// purgeTable makes a table of two 200-row files (none small for the 1 KB target)
// with deletion vectors: 10% of the first file's rows deleted, 1% of the second's.
func purgeTable(t *testing.T, props map[string]string) (*table.Table, storage.Storage) {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	p := map[string]string{"delta.enableDeletionVectors": "true", "delta.targetFileSize": "1kb"}
	for k, v := range props {
		p[k] = v
	}
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{Properties: p})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(8, 9))
	for _, base := range []int64{0, 1000} {
		rec := layoutBatch(r, 200, func(i int) int64 { return base + int64(i) }, 0)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{TargetFileSize: 1 << 30})
		require.NoError(t, err)
		rec.Release()
	}
	res, err := tb.Delete(ctx, "id < 20 OR id = 1000 OR id = 1001", table.DMLOptions{})
	require.NoError(t, err)
	require.Equal(t, "deletion-vectors", res.Mode)
	return tb, st
}

// TestDeletionDebtAndPurge: describe --layout's report and maintain's findings
// count the rows deleted but not purged, per file and in total; maintain purges
// the file past skiplake.optimize.maxDeletedRowsRatio (default 5%) in a commit
// recorded as Delta records REORG ... APPLY (PURGE), keeps the other, and reads
// the same rows; a higher threshold purges nothing.
func TestDeletionDebtAndPurge(t *testing.T) {
	ctx := context.Background()
	tb, st := purgeTable(t, nil)
	want := readAllRows(t, tb)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	lay, err := snap.Layout(ctx, table.LayoutOptions{})
	require.NoError(t, err)
	d := lay.DeletionVectors
	require.Equal(t, int64(400), d.Rows)
	require.Equal(t, int64(22), d.DeletedRows)
	require.InDelta(t, 22.0/400, d.Ratio, 1e-12)
	require.Equal(t, 2, d.Files)
	require.Equal(t, 0.05, d.Threshold)
	require.Equal(t, 1, d.PurgeFiles)
	require.Equal(t, int64(20), d.PurgeDeletedRows)
	require.Len(t, d.PerFile, 2)
	require.True(t, d.PerFile[0].Purge)
	require.Equal(t, int64(20), d.PerFile[0].DeletedRows)
	require.False(t, d.PerFile[1].Purge)
	purged := d.PerFile[0].Path

	rep, err := tb.Maintain(ctx, table.MaintainOptions{})
	require.NoError(t, err)
	require.False(t, rep.Failed, "%+v", rep.Tasks)
	require.Equal(t, int64(22), rep.Found.DeletedRows)
	require.Equal(t, 1, rep.Found.PurgeFiles)
	purge := rep.Task(table.TaskPurge)
	require.Equal(t, table.StatusDone, purge.Status, "%+v", purge)
	require.Equal(t, 1, purge.Files)
	require.Len(t, purge.Versions, 1)
	require.Equal(t, table.StatusNotNeeded, rep.Task(table.TaskCompact).Status)
	op, removed := commitRemoves(t, st, purge.Versions[0])
	require.Equal(t, "REORG", op)
	require.Equal(t, []string{purged}, removed)
	require.Equal(t, want, readAllRows(t, tb))

	snap, err = tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	lay, err = snap.Layout(ctx, table.LayoutOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(2), lay.DeletionVectors.DeletedRows, "the file under the threshold keeps its deleted rows")
	require.Equal(t, 0, lay.DeletionVectors.PurgeFiles)
	require.Equal(t, int64(180+200), lay.DeletionVectors.Rows)

	again, err := tb.Maintain(ctx, table.MaintainOptions{})
	require.NoError(t, err)
	require.False(t, again.WorkRemains)
	require.Empty(t, again.Commits, "nothing left to purge")

	// A threshold above the first file's share purges nothing.
	tb, _ = purgeTable(t, map[string]string{log.PropMaxDeletedRowsRatio: "0.2"})
	rep, err = tb.Maintain(ctx, table.MaintainOptions{})
	require.NoError(t, err)
	require.Equal(t, table.StatusNotNeeded, rep.Task(table.TaskPurge).Status)
	require.Empty(t, rep.Commits)
	require.Equal(t, 0, rep.Found.PurgeFiles)
	require.Equal(t, int64(22), rep.Found.DeletedRows)
}
