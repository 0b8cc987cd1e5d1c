package table_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/value"
)

// TestPlannedFilesCarryRowsAndFilterColumnStats: Scan.Files gives each kept file's
// row count and, per filter column, what its statistics (or its partition value)
// say, in the filter's column order.
func TestPlannedFilesCarryRowsAndFilterColumnStats(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), simpleSchema(), table.CreateOptions{PartitionColumns: []string{"v"}})
	require.NoError(t, err)
	rec := simpleBatch(simpleSchema(), []int64{5, 9, 7, 1}, []string{"a", "a", "a", "<null>"})
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)

	sc, err := tb.Scan(ctx, table.WithFilter("k > 2 OR v IS NULL"))
	require.NoError(t, err)
	files := sc.Files()
	require.Len(t, files, 2)
	byPart := map[bool]table.PlannedFile{}
	for _, f := range files {
		byPart[f.PartitionValues["v"] == nil] = f
	}
	a, null := byPart[false], byPart[true]
	require.Equal(t, int64(3), a.NumRecords)
	require.Equal(t, []table.ColumnStats{
		{Column: "k", Min: value.Int64(5), Max: value.Int64(9), NullCount: 0},
		{Column: "v", Min: value.String("a"), Max: value.String("a"), NullCount: 0},
	}, a.FilterColumns)
	require.Equal(t, int64(1), null.NumRecords)
	require.Equal(t, table.ColumnStats{Column: "v", Min: value.Null(), Max: value.Null(), NullCount: 1}, null.FilterColumns[1],
		"a NULL partition value: every row is null")

	unfiltered, err := tb.Scan(ctx)
	require.NoError(t, err)
	for _, f := range unfiltered.Files() {
		require.Nil(t, f.FilterColumns, "no filter, no filter columns")
	}
}
