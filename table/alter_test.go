package table_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

func newAlterTable(t *testing.T, st storage.Storage, props map[string]string) *table.Table {
	t.Helper()
	ctx := context.Background()
	tb, err := table.Create(ctx, st, propsSchema, table.CreateOptions{Properties: props})
	require.NoError(t, err)
	rec := incompressibleBatch(memory.DefaultAllocator, 5, 50)
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	return tb
}

func commitInfo(t *testing.T, tb *table.Table, version int64) table.HistoryEntry {
	t.Helper()
	h, err := tb.History(context.Background(), 0)
	require.NoError(t, err)
	for _, e := range h {
		if e.Version == version {
			return e
		}
	}
	t.Fatalf("no commit %d", version)
	return table.HistoryEntry{}
}

func TestAlterSetPropertiesUpgradesTheProtocol(t *testing.T) {
	ctx := context.Background()
	tb := newAlterTable(t, storage.NewMemory(), nil)
	res, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"Delta.EnableDeletionVectors": "true", "delta.checkpointinterval": "5"}})
	require.NoError(t, err)
	require.Equal(t, &table.AlterResult{Version: 2, Operation: "SET TBLPROPERTIES", ProtocolUpgraded: true, MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"appendOnly", "invariants", "deletionVectors"}}, res)
	e := commitInfo(t, tb, 2)
	require.Equal(t, "SET TBLPROPERTIES", e.Operation)
	require.JSONEq(t, `{"delta.enableDeletionVectors":"true","delta.checkpointInterval":"5"}`, e.OperationParameters["properties"])
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "5"}, snap.Configuration())
	require.True(t, snap.Properties().EnableDeletionVectors)
	require.EqualValues(t, 5, snap.Properties().CheckpointInterval)

	// The table stays writable and readable after the upgrade.
	rec := incompressibleBatch(memory.DefaultAllocator, 6, 10)
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	n, _, err := tb.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 60, n)

	// Unset; then a second unset of the same key fails unless IfExists.
	res, err = tb.Alter(ctx, table.AlterOptions{UnsetProperties: []string{"DELTA.CHECKPOINTINTERVAL"}})
	require.NoError(t, err)
	require.Equal(t, "UNSET TBLPROPERTIES", res.Operation)
	require.False(t, res.ProtocolUpgraded)
	require.Equal(t, `["delta.checkpointInterval"]`, commitInfo(t, tb, res.Version).OperationParameters["properties"])
	_, err = tb.Alter(ctx, table.AlterOptions{UnsetProperties: []string{"delta.checkpointInterval"}})
	require.ErrorIs(t, err, log.ErrInvalidProperty)
	_, err = tb.Alter(ctx, table.AlterOptions{UnsetProperties: []string{"delta.checkpointInterval"}, IfExists: true})
	require.NoError(t, err)
}

func TestAlterRefusesAndLeavesTheTableAlone(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb := newAlterTable(t, st, nil)
	col, err := table.ParseColumn("extra int")
	require.NoError(t, err)
	cases := []struct {
		name string
		opts table.AlterOptions
		want error
		msg  string
	}{
		{"nothing to do", table.AlterOptions{}, table.ErrInvalidArgument, "exactly one kind"},
		{"two kinds at once", table.AlterOptions{SetProperties: map[string]string{"delta.appendOnly": "true"}, AddColumns: []table.NewColumn{col}}, table.ErrInvalidArgument, "exactly one kind"},
		{"unknown key", table.AlterOptions{SetProperties: map[string]string{"delta.appendOnlyy": "true"}}, log.ErrUnknownProperty, "delta.appendOnlyy"},
		{"row tracking while suspended", table.AlterOptions{SetProperties: map[string]string{"delta.enableRowTracking": "true", "delta.rowTrackingSuspended": "true"}}, log.ErrInvalidProperty, "suspended"},
		{"internal row tracking key", table.AlterOptions{SetProperties: map[string]string{"delta.rowTracking.materializedRowIdColumnName": "x"}}, log.ErrInvalidProperty, "internal"},
		{"cluster by and none at once", table.AlterOptions{ClusterBy: []string{"id"}, ClusterByNone: true}, table.ErrInvalidArgument, "together"},
		{"stats column that does not exist", table.AlterOptions{SetProperties: map[string]string{"delta.dataSkippingStatsColumns": "nosuch"}}, log.ErrInvalidProperty, "nosuch"},
		{"column mapping to id", table.AlterOptions{SetProperties: map[string]string{"delta.columnMapping.mode": "id"}}, log.ErrInvalidProperty, "only none to name"},
		{"existing column", table.AlterOptions{AddColumns: []table.NewColumn{{Path: []string{"ID"}, Type: log.Primitive(log.TypeLong)}}}, log.ErrInvalidSchema, "exists already"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, err := st.List(ctx, "_delta_log/", "")
			require.NoError(t, err)
			_, err = tb.Alter(ctx, c.opts)
			require.ErrorIs(t, err, c.want)
			require.Contains(t, err.Error(), c.msg)
			after, err := st.List(ctx, "_delta_log/", "")
			require.NoError(t, err)
			require.Equal(t, len(before), len(after), "a refused alter wrote to the log")
		})
	}
}

func TestAlterAddColumnsThenWriteAndRead(t *testing.T) {
	ctx := context.Background()
	tb := newAlterTable(t, storage.NewMemory(), nil)
	var cols []table.NewColumn
	for _, def := range []string{"note string", "price decimal(10,2)"} {
		c, err := table.ParseColumn(def)
		require.NoError(t, err)
		cols = append(cols, c)
	}
	res, err := tb.Alter(ctx, table.AlterOptions{AddColumns: cols})
	require.NoError(t, err)
	require.Equal(t, "ADD COLUMNS", res.Operation)
	require.Contains(t, commitInfo(t, tb, res.Version).OperationParameters["columns"], `"name":"price","type":"decimal(10,2)"`)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, []string{"id", "x", "s", "note", "price"}, fieldNamesOf(snap.Schema()))

	// New rows carry the new columns; old rows read them as null.
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, snap.Schema())
	b.Field(0).(*array.Int64Builder).Append(-1)
	b.Field(1).(*array.Float64Builder).Append(0.5)
	b.Field(2).(*array.StringBuilder).Append("new")
	b.Field(3).(*array.StringBuilder).Append("hello")
	b.Field(4).AppendNull()
	rec := b.NewRecordBatch()
	b.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{Allocator: mem})
	rec.Release()
	require.NoError(t, err)
	out, err := tb.ReadAll(ctx, table.WithFilter("note IS NOT NULL"), table.WithAllocator(mem))
	require.NoError(t, err)
	require.EqualValues(t, 1, out.NumRows())
	out.Release()
	n, _, err := tb.Count(ctx, table.WithFilter("note IS NULL"))
	require.NoError(t, err)
	require.EqualValues(t, 50, n)
}

func TestAlterColumnMappingThenAddColumnReads(t *testing.T) {
	ctx := context.Background()
	tb := newAlterTable(t, storage.NewMemory(), nil)
	res, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.columnMapping.mode": "name"}})
	require.NoError(t, err)
	require.Equal(t, []string{"columnMapping"}, res.ReaderFeatures)
	c, err := table.ParseColumn("tag string")
	require.NoError(t, err)
	_, err = tb.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{c}})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	f := snap.DeltaSchema().Field("tag")
	id, ok := f.FieldID()
	require.True(t, ok)
	require.EqualValues(t, 4, id)
	require.True(t, strings.HasPrefix(f.PhysicalName(), "col-"))
	require.Equal(t, "id", snap.DeltaSchema().Field("id").PhysicalName(), "existing columns keep their names as physical names")
	require.Equal(t, "4", snap.Configuration()["delta.columnMapping.maxColumnId"])
	// The files written before column mapping stay readable; the new column is null.
	n, _, err := tb.Count(ctx, table.WithFilter("tag IS NULL AND id IS NOT NULL"))
	require.NoError(t, err)
	require.EqualValues(t, 50, n)
}

func TestAlterCheckpointPolicyV2(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb := newAlterTable(t, st, nil)
	res, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "1"}})
	require.NoError(t, err)
	// The protocol Spark writes for the same change (golden table v2-checkpoint-json).
	require.Equal(t, []string{"v2Checkpoint"}, res.ReaderFeatures)
	require.Equal(t, []string{"appendOnly", "invariants", "v2Checkpoint"}, res.WriterFeatures)
	rec := incompressibleBatch(memory.DefaultAllocator, 7, 10)
	defer rec.Release()
	w, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	objs, err := st.List(ctx, "_delta_log/", "")
	require.NoError(t, err)
	var v2 int
	for _, o := range objs {
		if strings.HasPrefix(o.Path, fmt.Sprintf("_delta_log/%020d.checkpoint.", w.Version)) && strings.HasSuffix(o.Path, ".json") {
			v2++
		}
	}
	require.Equal(t, 1, v2, "one UUID-named v2 checkpoint at version %d in %v", w.Version, objs)
	fresh, err := table.Open(ctx, st)
	require.NoError(t, err)
	snap, err := fresh.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, w.Version, snap.Log().CheckpointVersion())
	n, _, err := fresh.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 60, n)
}

// raceStore runs hook once, just before the first commit file at or after
// version from is created: a concurrent writer that wins that version.
type raceStore struct {
	storage.Storage
	from int64
	once sync.Once
	hook func()
}

func (s *raceStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if strings.HasPrefix(path, "_delta_log/") && strings.HasSuffix(path, ".json") && path >= log.CommitPath(s.from) {
		s.once.Do(s.hook)
	}
	return s.Storage.PutIfAbsent(ctx, path, data)
}

// racingTable returns a table (at version 1) whose next commit attempt is preceded by
// race, run once through another handle on the same store.
func racingTable(t *testing.T, race func(other *table.Table)) *table.Table {
	t.Helper()
	ctx := context.Background()
	mem := storage.NewMemory()
	newAlterTable(t, mem, nil)
	other, err := table.Open(ctx, mem)
	require.NoError(t, err)
	tb, err := table.Open(ctx, &raceStore{Storage: mem, from: 2, hook: func() { race(other) }})
	require.NoError(t, err)
	return tb
}

func TestAlterConflictsWithConcurrentMetadataChange(t *testing.T) {
	ctx := context.Background()
	tb := racingTable(t, func(other *table.Table) {
		_, err := other.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.appendOnly": "true"}})
		require.NoError(t, err)
	})
	_, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.checkpointInterval": "3"}})
	var ce *log.ConflictError
	require.True(t, errors.As(err, &ce), "err = %v", err)
	require.ErrorIs(t, err, log.ErrMetadataChanged)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"delta.appendOnly": "true"}, snap.Configuration(), "the loser committed nothing")
}

func TestAlterRetriesPastAConcurrentAppend(t *testing.T) {
	ctx := context.Background()
	tb := racingTable(t, func(other *table.Table) {
		rec := incompressibleBatch(memory.DefaultAllocator, 9, 5)
		defer rec.Release()
		_, err := other.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		require.NoError(t, err)
	})
	res, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.checkpointInterval": "3"}})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Version)
	n, _, err := tb.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 55, n)
}

func fieldNamesOf(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}
