package dml

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// changeRows reads the change data files of cdcs back and returns the ids each
// _change_type holds, sorted.
func changeRows(t *testing.T, store storage.Storage, cdcs []*log.CDC) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, c := range cdcs {
		data, err := store.Get(context.Background(), c.Path)
		require.NoError(t, err)
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		require.NoError(t, err)
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		require.NoError(t, err)
		tbl, err := fr.ReadTable(context.Background())
		require.NoError(t, err)
		tr := array.NewTableReader(tbl, 0)
		for tr.Next() {
			rec := tr.RecordBatch()
			ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
			kinds := rec.Column(rec.Schema().FieldIndices(tableview.ChangeTypeField.Name)[0]).(*array.String)
			for i := range int(rec.NumRows()) {
				out[kinds.Value(i)] = append(out[kinds.Value(i)], ids.Value(i))
			}
		}
		tr.Release()
		tbl.Release()
		require.NoError(t, pf.Close())
	}
	for _, ids := range out {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return out
}

// startedChangeSink returns a started ChangeSink on a new unpartitioned table in
// memory, its allocator checked for leaks when the test ends (after the sink's
// files were read back).
func startedChangeSink(t *testing.T) (*memory.CheckedAllocator, storage.Storage, *tableview.View, *ChangeSink) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	store := storage.NewMemory()
	v := sinkView(t, store, nil)
	c := NewChangeSink(store, v, writeset.Settings{Allocator: mem}, mem)
	require.NoError(t, c.Start(context.Background()))
	return mem, store, v, c
}

// A commit needs change files exactly when it updates rows or rewrites a file
// copy-on-write; otherwise what was written is discarded and Finish returns no cdc
// action. Finish before Decide is an error.
func TestChangeSinkDecide(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		update  bool
		rewrite []string
		needed  bool
	}{
		{"deletes and inserts only", false, nil, false},
		{"update", true, nil, true},
		{"copy-on-write rewrite", false, []string{"f1"}, true},
		{"both", true, []string{"f1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, store, v, c := startedChangeSink(t)
			ins := sinkRows(mem, v, 100, 103, 2, false)
			defer ins.Release()
			require.NoError(t, c.Insert(ctx, ins))
			del := sinkRows(mem, v, 10, 12, 2, false)
			defer del.Release()
			require.NoError(t, c.Delete(ctx, del))
			if tc.update {
				pre := sinkRows(mem, v, 20, 22, 2, false)
				defer pre.Release()
				require.NoError(t, c.Update(ctx, pre, pre))
			}
			require.False(t, c.Needed(), "nothing is needed before Decide")
			if !tc.update {
				_, err := c.Finish(ctx)
				require.ErrorContains(t, err, "before the commit's files were classified")
			}
			c.Decide(tc.rewrite)
			require.Equal(t, tc.needed, c.Needed())
			cdcs, err := c.Finish(ctx)
			require.NoError(t, err)
			objs, err := store.List(ctx, "", "")
			require.NoError(t, err)
			if !tc.needed {
				require.Empty(t, cdcs)
				require.Empty(t, objs, "change files of a commit that needs none are deleted")
				return
			}
			require.NotEmpty(t, cdcs)
			for _, cd := range cdcs {
				require.Contains(t, cd.Path, "_change_data/")
			}
			want := map[string][]int64{tableview.ChangeInsert: {100, 101, 102}, tableview.ChangeDelete: {10, 11}}
			if tc.update {
				want[tableview.ChangeUpdatePreimage] = []int64{20, 21}
				want[tableview.ChangeUpdatePostimage] = []int64{20, 21}
			}
			require.Equal(t, want, changeRows(t, store, cdcs))
		})
	}
}

// Rows recorded by position are kept per file from any number of goroutines;
// Rewritten writes, of a rewritten file's batch, the rows pending and not copied;
// DeleteSelected writes the rows its selection picks. Mismatched update images are
// refused.
func TestChangeSinkPending(t *testing.T) {
	ctx := context.Background()
	mem, store, v, c := startedChangeSink(t)

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.DeletedAt("cow", []int64{int64(g), int64(g + 4)})
			c.DeletedAt("dv", []int64{int64(10 + g)})
			c.DeletedAt("none", nil)
		}()
	}
	wg.Wait()
	c.Decide([]string{"cow"})
	bm, done := c.Pending("cow")
	require.True(t, done)
	require.Equal(t, []uint64{0, 1, 2, 3, 4, 5, 6, 7}, bm.ToArray())
	bm, done = c.Pending("dv")
	require.False(t, done)
	require.Equal(t, []uint64{10, 11, 12, 13}, bm.ToArray())
	bm, done = c.Pending("none")
	require.False(t, done)
	require.Nil(t, bm, "an empty DeletedAt records nothing")

	rows := sinkRows(mem, v, 0, 10, 2, false)
	defer rows.Release()
	b := LiveBatch{Rec: rows, Pos: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
	// Rows 1 and 4 are copied (kept); 8 and 9 were never deleted.
	keep := []bool{false, true, false, false, true, false, false, false, true, true}
	require.NoError(t, c.Rewritten(ctx, "cow", b, keep))
	require.NoError(t, c.Rewritten(ctx, "dv", LiveBatch{Pos: []int64{0}}, []bool{false}), "no pending row of dv is at position 0")
	require.NoError(t, c.Rewritten(ctx, "unknown", b, keep))
	dvRows := sinkRows(mem, v, 10, 14, 2, false)
	defer dvRows.Release()
	require.NoError(t, c.DeleteSelected(ctx, LiveBatch{Rec: dvRows, Pos: []int64{10, 11, 12, 13}}, func(i int) bool { return i%2 == 1 }))
	require.NoError(t, c.DeleteSelected(ctx, LiveBatch{Rec: dvRows, Pos: []int64{10, 11, 12, 13}}, func(int) bool { return false }))

	short := sinkRows(mem, v, 0, 1, 2, false)
	defer short.Release()
	require.ErrorContains(t, c.Update(ctx, short, rows), "1 update preimages for 10 postimages")

	cdcs, err := c.Finish(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string][]int64{tableview.ChangeDelete: {0, 2, 3, 5, 6, 7, 11, 13}}, changeRows(t, store, cdcs))
}
