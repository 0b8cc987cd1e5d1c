package table_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// liveIDs returns the sorted values of column id in the latest version.
func liveIDs(t *testing.T, tb *table.Table) []int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	sc, err := snap.Scan(ctx, table.WithColumns("id"))
	require.NoError(t, err)
	tbl, err := sc.ReadAll(ctx)
	require.NoError(t, err)
	defer tbl.Release()
	var out []int64
	for _, ch := range tbl.Column(0).Data().Chunks() {
		out = append(out, ch.(*array.Int64).Int64Values()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestDMLOnRowTrackedTable: on a table with row tracking and deletion vectors
// enabled, DELETE and a MERGE without update clauses move no row, so every remaining
// row keeps its stable row ID and row commit version, inserted rows get fresh unique
// IDs, and the commits say delta.rowTracking.preserved=true. Commands that would copy
// rows to new files (UPDATE, an upsert, copy-on-write) are refused naming row
// tracking, with nothing committed.
func TestDMLOnRowTrackedTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tb, err := table.CreateURL(ctx, dir, layoutSchema(), table.CreateOptions{Properties: map[string]string{
		log.PropEnableRowTracking: "true", log.PropEnableDeletionVectors: "true"}})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 3; i++ {
		rec := layoutBatch(r, 700, func(j int) int64 { return int64(i*700 + j + 1) }, 0.1)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	latest := func() *table.Snapshot {
		s, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		return s
	}
	before := stableRowIDs(t, dir, latest())
	preserved := func(op string) {
		t.Helper()
		h, err := tb.Log().History(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, op, h[0].CommitInfo.Operation)
		require.Equal(t, "true", h[0].CommitInfo.Tags[log.TagRowTrackingPreserved], "%s moves no row", op)
	}
	// keep checks that every live row other than the inserted ones has the stable
	// row ID and commit version it had before, and that all IDs are unique.
	keep := func(inserted map[int64]bool) {
		t.Helper()
		snap := latest()
		rowIDRanges(t, snap)
		now := stableRowIDs(t, dir, snap)
		seen := map[int64]bool{}
		for _, id := range liveIDs(t, tb) {
			v, ok := now[id]
			require.True(t, ok, "row %d", id)
			if inserted[id] {
				require.Equal(t, snap.Version(), v[1], "inserted row %d: row commit version", id)
			} else {
				require.Equal(t, before[id], v, "row %d keeps its stable row ID and row commit version", id)
			}
			require.False(t, seen[v[0]], "stable row ID %d twice", v[0])
			seen[v[0]] = true
		}
	}

	// Part of the first file (a deletion vector) and all of the second (removed).
	res, err := tb.Delete(ctx, "id <= 50 OR (id > 700 AND id <= 1400)", table.DMLOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(750), res.RowsDeleted)
	require.Equal(t, 1, res.FilesRemoved)
	require.Equal(t, 1, res.DeletionVectorsAdded)
	preserved("DELETE")
	keep(nil)
	require.Len(t, liveIDs(t, tb), 2100-750)

	// MERGE: matched rows deleted, unmatched source rows inserted.
	src := layoutBatch(r, 20, func(j int) int64 {
		if j < 10 {
			return int64(1400 + 1 + j*50) // existing, in the third file
		}
		return int64(5000 + j) // new
	}, 0)
	rdr, err := array.NewRecordReader(src.Schema(), []arrow.RecordBatch{src})
	require.NoError(t, err)
	res, err = tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"},
		WhenMatched:    []table.MergeClause{{Action: table.MergeDelete}},
		WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert}}})
	rdr.Release()
	src.Release()
	require.NoError(t, err)
	require.Equal(t, int64(10), res.RowsDeleted)
	require.Equal(t, int64(10), res.RowsInserted)
	preserved("MERGE")
	inserted := map[int64]bool{}
	for j := 10; j < 20; j++ {
		inserted[int64(5000+j)] = true
	}
	keep(inserted)

	// What would copy rows is refused before anything is written.
	v := latest().Version()
	upsert := layoutBatch(r, 2, func(j int) int64 { return int64(60 + j) }, 0)
	defer upsert.Release()
	refused := map[string]func() error{
		"UPDATE": func() error {
			_, err := tb.Update(ctx, "id = 60", table.UpdateOptions{Set: "d = 0e0"})
			return err
		},
		"DELETE copy-on-write": func() error {
			_, err := tb.Delete(ctx, "id = 60", table.DMLOptions{RewriteFiles: true})
			return err
		},
		"upsert": func() error {
			rdr, err := array.NewRecordReader(upsert.Schema(), []arrow.RecordBatch{upsert})
			require.NoError(t, err)
			defer rdr.Release()
			_, err = tb.Merge(ctx, rdr, table.Upsert("id"))
			return err
		},
	}
	for name, run := range refused {
		err := run()
		require.True(t, errors.Is(err, log.ErrUnsupportedFeature), "%s: %v", name, err)
		require.ErrorContains(t, err, log.PropEnableRowTracking, name)
		require.Equal(t, v, latest().Version(), "%s committed nothing", name)
	}
}

// TestDMLRowTrackingSupportedNotEnabled: with the rowTracking feature supported but
// delta.enableRowTracking off, rows have no stable IDs to keep: UPDATE and
// copy-on-write DELETE run, and every file still gets unique row IDs.
func TestDMLRowTrackingSupportedNotEnabled(t *testing.T) {
	ctx := context.Background()
	tb, _ := dmlTable(t, map[string]string{"delta.feature.rowTracking": "supported"}, nil,
		[]dmlRow{{id: 1, qty: ip(1)}, {id: 2, qty: ip(2)}, {id: 3, qty: ip(3)}},
		[]dmlRow{{id: 4, qty: ip(4)}, {id: 5, qty: ip(5)}})
	_, err := tb.Update(ctx, "id = 2", table.UpdateOptions{Set: "qty = qty * 10"})
	require.NoError(t, err)
	_, err = tb.Delete(ctx, "id = 4", table.DMLOptions{})
	require.NoError(t, err)
	require.Equal(t, dmlRowStrings([]dmlRow{{id: 1, qty: ip(1)}, {id: 2, qty: ip(20)}, {id: 3, qty: ip(3)}, {id: 5, qty: ip(5)}}),
		dmlRowsAt(t, tb, table.Latest()))
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.True(t, snap.Log().Protocol().Supports(log.FeatureRowTracking))
	rowIDRanges(t, snap)
}
