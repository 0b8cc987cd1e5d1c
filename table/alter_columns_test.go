package table_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

var colSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	field("day", arrow.FixedWidthTypes.Date32),
	field("qty", arrow.PrimitiveTypes.Int32),
	field("price", &arrow.Decimal128Type{Precision: 10, Scale: 2}),
	field("f", arrow.PrimitiveTypes.Float32),
	field("st", arrow.StructOf(field("a", arrow.PrimitiveTypes.Int16), field("b", arrow.BinaryTypes.String))),
	field("tags", arrow.ListOf(arrow.PrimitiveTypes.Int32)),
	field("note", arrow.BinaryTypes.String),
}, nil)

const colRows = `[{"id":1,"day":"2024-03-01","qty":7,"price":"12.50","f":1.5,"st":{"a":3,"b":"x"},"tags":[1,2],"note":"n1"},
	{"id":2,"day":"2024-03-02","qty":2147483647,"price":"-0.25","f":-2.25,"st":null,"tags":null,"note":null}]`

// newColTable creates a partitioned (by day) table of colSchema holding colRows.
func newColTable(t *testing.T, props map[string]string) (*table.Table, storage.Storage) {
	t.Helper()
	st := storage.NewMemory()
	tb, err := table.Create(context.Background(), st, colSchema, table.CreateOptions{PartitionColumns: []string{"day"},
		Properties: props})
	require.NoError(t, err)
	_, err = writeJSON(t, tb, colSchema, colRows, table.WriteOptions{})
	require.NoError(t, err)
	return tb, st
}

// TestAlterRenameColumn: renaming enables column mapping (name mode, the current
// names as physical names) on a table without it, in the same commit; no data file
// is rewritten and every version reads as before; the partition column, nested
// fields and the column-list properties follow renames; the commit is Spark's
// RENAME COLUMN.
func TestAlterRenameColumn(t *testing.T) {
	ctx := context.Background()
	tb, st := newColTable(t, map[string]string{"delta.dataSkippingStatsColumns": "id,qty,st.a", log.PropBloomFilterColumns: "qty"})
	v1 := rowsJSON(t, tb, table.Latest())
	files := listing(t, st)

	res, err := tb.Alter(ctx, table.AlterOptions{RenameColumn: &table.ColumnRename{Column: "qty", NewName: "quantity"}})
	require.NoError(t, err)
	require.Equal(t, "RENAME COLUMN", res.Operation)
	require.True(t, res.ProtocolUpgraded)
	require.Equal(t, []string{"columnMapping"}, res.ReaderFeatures)
	require.Equal(t, map[string]any{"oldColumnPath": "qty", "newColumnPath": "quantity"}, paramsOf(t, st, res.Version))
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, "qty", snap.DeltaSchema().Field("quantity").PhysicalName(), "the old name is the physical name")
	require.Equal(t, "id,quantity,st.a", snap.Configuration()["delta.dataSkippingStatsColumns"])
	require.Equal(t, "quantity", snap.Configuration()[log.PropBloomFilterColumns])
	for _, p := range listing(t, st) {
		if !isLog(p) {
			require.Contains(t, files, p, "no data file was written")
		}
	}

	// The partition column and a struct field, too; only the letter case of a name.
	for _, r := range []table.ColumnRename{{Column: "day", NewName: "d"}, {Column: "st.a", NewName: "alpha"}, {Column: "note", NewName: "Note"}} {
		_, err = tb.Alter(ctx, table.AlterOptions{RenameColumn: &r})
		require.NoError(t, err, r)
	}
	snap, err = tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, []string{"d"}, snap.PartitionColumns())
	require.Equal(t, "id,quantity,st.alpha", snap.Configuration()["delta.dataSkippingStatsColumns"])
	require.Equal(t, []string{
		`{"Note":"n1","d":"2024-03-01","f":"1.5","id":"1","price":"12.5","quantity":"7","st":{"alpha":3,"b":"x"},"tags":[1,2]}`,
		`{"Note":null,"d":"2024-03-02","f":"-2.25","id":"2","price":"-0.25","quantity":"2147483647","st":null,"tags":null}`,
	}, rowsJSON(t, tb, table.Latest()))
	require.Equal(t, v1, rowsJSON(t, tb, table.AtVersion(1)), "time travel before the renames")
	// Filters and partition pruning use the new names.
	n, _, err := tb.Count(ctx, table.WithFilter("d = DATE '2024-03-01' AND quantity = 7"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	// A new append by the new names.
	renamed := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, field("d", arrow.FixedWidthTypes.Date32), field("quantity", arrow.PrimitiveTypes.Int32)}, nil)
	_, err = writeJSON(t, tb, renamed, `[{"id":3,"d":"2024-03-01","quantity":9}]`, table.WriteOptions{})
	require.NoError(t, err)
	n, _, err = tb.Count(ctx, table.WithFilter("d = DATE '2024-03-01'"))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)

	// Refused: an existing name (case-insensitively), an unknown column, an element.
	for _, r := range []table.ColumnRename{{Column: "quantity", NewName: "ID"}, {Column: "nosuch", NewName: "x"}, {Column: "tags.element", NewName: "x"}, {Column: "id", NewName: " "}} {
		assertNothingCommitted(t, tb, st, func() error {
			_, err := tb.Alter(ctx, table.AlterOptions{RenameColumn: &r})
			return err
		}, log.ErrInvalidColumnChange)
	}
}

func isLog(p string) bool { return len(p) >= 11 && p[:11] == "_delta_log/" }

// assertNothingCommitted runs op, which must fail with want, and checks that the
// table's version and stored objects are unchanged.
func assertNothingCommitted(t *testing.T, tb *table.Table, st storage.Storage, op func() error, want error) {
	t.Helper()
	v := latestVersion(t, tb)
	before := listing(t, st)
	err := op()
	require.ErrorIs(t, err, want)
	require.Equal(t, v, latestVersion(t, tb), "nothing committed (%v)", err)
	require.Equal(t, before, listing(t, st), "no files left (%v)", err)
}

// TestAlterDropColumn: dropping enables column mapping as renaming does; the
// dropped column is gone from the latest version but time travel still sees it;
// partition and clustering columns, the last data column and a struct's last
// field cannot be dropped.
func TestAlterDropColumn(t *testing.T) {
	ctx := context.Background()
	tb, st := newColTable(t, map[string]string{"delta.dataSkippingStatsColumns": "id,note,st.b"})
	res, err := tb.Alter(ctx, table.AlterOptions{DropColumns: []string{"note", "st.b"}})
	require.NoError(t, err)
	require.Equal(t, "DROP COLUMNS", res.Operation)
	require.Equal(t, map[string]any{"columns": `["note","st.b"]`}, paramsOf(t, st, res.Version))
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, "id", snap.Configuration()["delta.dataSkippingStatsColumns"])
	require.Equal(t, []string{
		`{"day":"2024-03-01","f":"1.5","id":"1","price":"12.5","qty":"7","st":{"a":3},"tags":[1,2]}`,
		`{"day":"2024-03-02","f":"-2.25","id":"2","price":"-0.25","qty":"2147483647","st":null,"tags":null}`,
	}, rowsJSON(t, tb, table.Latest()))
	require.Contains(t, rowsJSON(t, tb, table.AtVersion(1))[0], `"note":"n1"`)
	// A column added again under the dropped name is a new column: NULL in the old files.
	_, err = tb.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{mustColumn(t, "note string")}})
	require.NoError(t, err)
	n, _, err := tb.Count(ctx, table.WithFilter("note IS NULL"))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)

	for _, drop := range [][]string{{"day"}, {"st.a"}, {"nosuch"}, {"tags.element"}} {
		assertNothingCommitted(t, tb, st, func() error {
			_, err := tb.Alter(ctx, table.AlterOptions{DropColumns: drop})
			return err
		}, log.ErrInvalidColumnChange)
	}
	// The last data column: a table of a partition column and one data column.
	two := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, field("p", arrow.PrimitiveTypes.Int32)}, nil)
	st2 := storage.NewMemory()
	tb2, err := table.Create(ctx, st2, two, table.CreateOptions{PartitionColumns: []string{"p"}})
	require.NoError(t, err)
	assertNothingCommitted(t, tb2, st2, func() error {
		_, err := tb2.Alter(ctx, table.AlterOptions{DropColumns: []string{"id"}})
		return err
	}, log.ErrInvalidColumnChange)
	// A clustering column.
	st3 := storage.NewMemory()
	tb3, err := table.Create(ctx, st3, colSchema, table.CreateOptions{ClusterBy: []string{"qty"}})
	require.NoError(t, err)
	assertNothingCommitted(t, tb3, st3, func() error {
		_, err := tb3.Alter(ctx, table.AlterOptions{DropColumns: []string{"QTY"}})
		return err
	}, log.ErrInvalidColumnChange)
	_, err = tb3.Alter(ctx, table.AlterOptions{DropColumns: []string{"note"}})
	require.NoError(t, err, "another column of a clustered table")
}

// TestAlterChangeType: Delta's widenings under the typeWidening feature (enabled
// by the change when the table lacks it), recorded in delta.typeChanges as the
// protocol says; files written before read back widened, filters and partition
// pruning on widened columns stay exact; anything else is refused.
func TestAlterChangeType(t *testing.T) {
	ctx := context.Background()
	tb, st := newColTable(t, nil)
	changes := []table.ColumnType{
		{Column: "qty", Type: "bigint"},
		{Column: "f", Type: "double"},
		{Column: "price", Type: "decimal(14,4)"},
		{Column: "st.a", Type: "int"},
		{Column: "tags.element", Type: "bigint"},
		{Column: "day", Type: "timestamp_ntz"},
	}
	for i, c := range changes {
		res, err := tb.Alter(ctx, table.AlterOptions{ChangeType: &c})
		require.NoError(t, err, c)
		require.Equal(t, "CHANGE COLUMN", res.Operation)
		if i == 0 {
			require.True(t, res.ProtocolUpgraded)
			require.Contains(t, res.ReaderFeatures, "typeWidening")
			require.Contains(t, res.WriterFeatures, "typeWidening")
		}
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.True(t, snap.Properties().EnableTypeWidening)
	typeChanges := func(name string) string {
		b, err := json.Marshal(snap.DeltaSchema().Field(name).Metadata[log.TypeChangesKey])
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, `[{"fromType":"integer","toType":"long"}]`, typeChanges("qty"))
	require.Equal(t, `[{"fromType":"float","toType":"double"}]`, typeChanges("f"))
	require.Equal(t, `[{"fromType":"decimal(10,2)","toType":"decimal(14,4)"}]`, typeChanges("price"))
	require.Equal(t, `[{"fieldPath":"element","fromType":"integer","toType":"long"}]`, typeChanges("tags"))
	require.Equal(t, `[{"fromType":"date","toType":"timestamp_ntz"}]`, typeChanges("day"))
	sta := snap.DeltaSchema().Field("st").Type.(*log.StructType).Field("a")
	b, _ := json.Marshal(sta.Metadata[log.TypeChangesKey])
	require.Equal(t, `[{"fromType":"short","toType":"integer"}]`, string(b))

	// The files of version 1 read back widened.
	require.Equal(t, []string{
		`{"day":"2024-03-01T00:00:00","f":"1.5","id":"1","note":"n1","price":"12.5","qty":"7","st":{"a":3,"b":"x"},"tags":[1,2]}`,
		`{"day":"2024-03-02T00:00:00","f":"-2.25","id":"2","note":null,"price":"-0.25","qty":"2147483647","st":null,"tags":null}`,
	}, rowsJSON(t, tb, table.Latest()))
	// New values beyond the old types, next to the old files; filters stay exact.
	wide := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, field("day", &arrow.TimestampType{Unit: arrow.Microsecond}),
		field("qty", arrow.PrimitiveTypes.Int64), field("price", &arrow.Decimal128Type{Precision: 14, Scale: 4})}, nil)
	_, err = writeJSON(t, tb, wide, `[{"id":3,"day":"2024-03-01T12:00:00","qty":4294967296,"price":"1234567890.1234"}]`, table.WriteOptions{})
	require.NoError(t, err)
	for filter, want := range map[string]int64{
		"qty > 2147483646": 2,
		"qty = 7":          1,
		"day = TIMESTAMP_NTZ '2024-03-01 00:00:00'":                                                1,
		"day >= TIMESTAMP_NTZ '2024-03-01 00:00:00' AND day < TIMESTAMP_NTZ '2024-03-02 00:00:00'": 2,
		"price > 12.4999": 2,
		"f = -2.25":       1,
	} {
		n, _, err := tb.Count(ctx, table.WithFilter(filter))
		require.NoError(t, err, filter)
		require.EqualValues(t, want, n, filter)
	}
	require.Len(t, rowsJSON(t, tb, table.AtVersion(1)), 2)

	// Refused: narrowing, non-widenings, complex types, the same type.
	for _, c := range []table.ColumnType{
		{Column: "qty", Type: "int"},
		{Column: "note", Type: "int"},
		{Column: "id", Type: "string"},
		{Column: "price", Type: "decimal(14,5)"},
		{Column: "id", Type: "decimal(19,0)"},
		{Column: "st", Type: "struct<a: bigint>"},
		{Column: "qty", Type: "bigint"},
		{Column: "f", Type: "float"},
	} {
		assertNothingCommitted(t, tb, st, func() error {
			_, err := tb.Alter(ctx, table.AlterOptions{ChangeType: &c})
			return err
		}, log.ErrInvalidColumnChange)
	}
	// A table that turned type widening off refuses.
	tb2, st2 := newColTable(t, map[string]string{log.PropEnableTypeWidening: "false"})
	assertNothingCommitted(t, tb2, st2, func() error {
		_, err := tb2.Alter(ctx, table.AlterOptions{ChangeType: &table.ColumnType{Column: "qty", Type: "bigint"}})
		return err
	}, log.ErrInvalidColumnChange)
}

// TestAlterComment: a column comment is the field's "comment" metadata; an empty
// text removes it; the commit is Spark's CHANGE COLUMN with the field.
func TestAlterComment(t *testing.T) {
	ctx := context.Background()
	tb, st := newColTable(t, nil)
	res, err := tb.Alter(ctx, table.AlterOptions{SetComment: &table.ColumnComment{Column: "st.b", Comment: "the b"}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"column": `{"name":"st.b","type":"string","nullable":true,"metadata":{"comment":"the b"}}`}, paramsOf(t, st, res.Version))
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, "the b", snap.DeltaSchema().Field("st").Type.(*log.StructType).Field("b").Metadata["comment"])
	require.False(t, res.ProtocolUpgraded)
	_, err = tb.Alter(ctx, table.AlterOptions{SetComment: &table.ColumnComment{Column: "st.b"}})
	require.NoError(t, err)
	snap, err = tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.NotContains(t, snap.DeltaSchema().Field("st").Type.(*log.StructType).Field("b").Metadata, "comment")
	assertNothingCommitted(t, tb, st, func() error {
		_, err := tb.Alter(ctx, table.AlterOptions{SetComment: &table.ColumnComment{Column: "tags.element", Comment: "x"}})
		return err
	}, log.ErrInvalidColumnChange)
	_, err = tb.Alter(ctx, table.AlterOptions{SetComment: &table.ColumnComment{Column: "id", Comment: "x"}, RenameColumn: &table.ColumnRename{Column: "id", NewName: "k"}})
	require.ErrorIs(t, err, table.ErrInvalidArgument, "one kind of change per commit")
}

// TestAlterColumnsConcurrency: a column change conflicts as any metaData change
// does: a write that read the version before it fails (tested in
// TestSchemaChangeConflicts); an ALTER whose snapshot an append overtook commits
// after it (an ALTER reads no data).
func TestAlterColumnsConcurrency(t *testing.T) {
	ctx := context.Background()
	tb, st := newColTable(t, nil)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	_, err = writeJSON(t, tb, colSchema, `[{"id":9,"day":"2024-03-09"}]`, table.WriteOptions{})
	require.NoError(t, err)
	p, md, _, err := log.RenameColumn(snap.Log().Protocol(), snap.Log().Metadata(), []string{"note"}, "remark")
	require.NoError(t, err)
	txn := snap.Log().NewTransaction(log.TxnOptions{})
	txn.SetMetadata(md)
	txn.SetProtocol(p)
	v, err := txn.Commit(ctx, log.CommitInfo{Operation: "RENAME COLUMN"})
	require.NoError(t, err)
	require.EqualValues(t, 3, v)
	require.Len(t, rowsJSON(t, tb, table.Latest()), 3)
	_ = st
}
