package table_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

func TestParseSchemaTakesDDLAndDeltaJSON(t *testing.T) {
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	ddl, err := table.ParseSchema("id bigint, name string")
	require.NoError(t, err)
	require.True(t, want.Equal(ddl), "DDL: %s", ddl)
	js, err := table.ParseSchema(` {"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}]}`)
	require.NoError(t, err)
	require.True(t, want.Equal(js), "JSON: %s", js)

	for _, bad := range []string{"id bigint,", "id nosuchtype", `{"type":"struct","fields":[`} {
		_, err := table.ParseSchema(bad)
		require.Error(t, err, bad)
	}
}

func TestPropertyDifferences(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), simpleSchema(), table.CreateOptions{
		Properties: map[string]string{"delta.checkpointInterval": "20"},
	})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)

	d, err := snap.PropertyDifferences(nil)
	require.NoError(t, err)
	require.Empty(t, d)
	d, err = snap.PropertyDifferences(map[string]string{"DELTA.CHECKPOINTINTERVAL": "20"})
	require.NoError(t, err)
	require.Empty(t, d, "the same property in another letter case is the same setting")

	d, err = snap.PropertyDifferences(map[string]string{"delta.checkpointInterval": "10", "delta.appendOnly": "true"})
	require.NoError(t, err)
	require.Equal(t, []string{
		"delta.appendOnly=true (the table has no value)",
		"delta.checkpointInterval=10 (the table has 20)",
	}, d)

	d, err = snap.PropertyDifferences(map[string]string{"delta.feature.deletionVectors": "supported"})
	require.NoError(t, err)
	require.Contains(t, d, "delta.feature.deletionVectors=supported (the table does not have the feature)")

	_, err = snap.PropertyDifferences(map[string]string{"delta.checkpointInterval": "often"})
	require.ErrorIs(t, err, log.ErrInvalidProperty)
	require.ErrorContains(t, err, "delta.checkpointInterval")
}
