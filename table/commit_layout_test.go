package table

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

func t1Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

func t1Rows(n int) array.RecordReader {
	b := array.NewRecordBuilder(memory.DefaultAllocator, t1Schema())
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, _ := array.NewRecordReader(t1Schema(), []arrow.RecordBatch{rec})
	return rr
}

// T1 at the commit gate: files written for the layout of another table state (other
// physical names or field ids, another mapping mode, other partition columns) are
// refused by commitWrite with a *tableview.LayoutError naming what differs, before
// anything reaches the log; the table keeps its version, and the writer's cleanup
// leaves no file behind.
func TestCommitRefusesFilesWrittenForAnotherLayout(t *testing.T) {
	ctx := context.Background()
	mapped := CreateOptions{PartitionColumns: []string{"p"}, Properties: map[string]string{log.PropColumnMappingMode: "name"}}
	cases := []struct {
		name        string
		table, data CreateOptions
		kinds       []tableview.DiffKind
	}{
		// Each new column-mapped table gets fresh physical names.
		{"other physical names", mapped, mapped, []tableview.DiffKind{tableview.DiffPhysical}},
		{"mapping mode", CreateOptions{PartitionColumns: []string{"p"}}, mapped, []tableview.DiffKind{tableview.DiffMapping, tableview.DiffPhysical}},
		{"partitioning", CreateOptions{}, CreateOptions{PartitionColumns: []string{"p"}}, []tableview.DiffKind{tableview.DiffPartitioning}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			tb, err := Create(ctx, store, t1Schema(), tc.table)
			require.NoError(t, err)
			target, err := tb.Snapshot(ctx, Latest())
			require.NoError(t, err)
			nt, err := newTableMetadata(t1Schema(), tc.data)
			require.NoError(t, err)
			other, err := newSnapshot(store, tb.log.NewTableSnapshot(nt.md, nt.proto))
			require.NoError(t, err)

			w, err := writeset.New(store, other.view, writeset.Settings{})
			require.NoError(t, err)
			adds, rows, err := w.Run(ctx, t1Rows(100))
			require.NoError(t, err)
			require.NotEmpty(t, adds)
			_, err = tb.commitWrite(ctx, target, w, adds, rows, WriteOptions{})
			require.ErrorIs(t, err, ErrLayoutChanged)
			var le *tableview.LayoutError
			require.True(t, errors.As(err, &le), "%v", err)
			require.EqualValues(t, -1, le.Written)
			require.EqualValues(t, 0, le.Target)
			for _, k := range tc.kinds {
				require.True(t, le.Diff.Has(k), "%v lacks a %v difference", le.Diff, k)
			}
			v, err := tb.log.LatestVersion(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 0, v, "nothing committed")
			w.Cleanup()
			objs, err := store.List(ctx, "", "")
			require.NoError(t, err)
			for _, o := range objs {
				require.True(t, strings.HasPrefix(o.Path, "_delta_log/"), "left behind: %s", o.Path)
			}
		})
	}
}

// The footer check (run at every commit in -race and -tags invariants builds) reads
// what the files really hold: files written for another column-mapped table's
// physical names are refused against this table's view and accepted against their
// own.
func TestVerifyFilesReadsFooters(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	opts := CreateOptions{PartitionColumns: []string{"p"}, Properties: map[string]string{log.PropColumnMappingMode: "id"}}
	tb, err := Create(ctx, store, t1Schema(), opts)
	require.NoError(t, err)
	target, err := tb.Snapshot(ctx, Latest())
	require.NoError(t, err)
	nt, err := newTableMetadata(t1Schema(), opts)
	require.NoError(t, err)
	other, err := newSnapshot(store, tb.log.NewTableSnapshot(nt.md, nt.proto))
	require.NoError(t, err)
	w, err := writeset.New(store, other.view, writeset.Settings{})
	require.NoError(t, err)
	adds, _, err := w.Run(ctx, t1Rows(10))
	require.NoError(t, err)
	defer w.Cleanup()
	require.NoError(t, tableview.VerifyFiles(ctx, store, other.view, adds))
	err = tableview.VerifyFiles(ctx, store, target.view, adds)
	require.ErrorIs(t, err, tableview.ErrLayoutChanged)
	require.Contains(t, err.Error(), "partition values keyed by", "the partition column's physical name differs first")
}
