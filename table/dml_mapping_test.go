package table_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// TestDMLColumnMappedTables: DELETE, UPDATE and MERGE on column-mapped tables (name and
// id mode; copy-on-write, then deletion vectors after ALTER enables them) give the rows
// the same commands give on an unmapped copy of the table.
func TestDMLColumnMappedTables(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		for _, dvOn := range []bool{false, true} {
			t.Run(string(mode)+map[bool]string{false: "/cow", true: "/dv"}[dvOn], func(t *testing.T) {
				mem := memory.NewGoAllocator()
				var mapped *table.Table
				store := storage.NewMemory()
				if dvOn {
					mapped = createMappedDVTable(t, store, mode)
				} else {
					mapped = createMappedTable(t, store, mode, nil)
				}
				snap, err := mapped.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				sch := snap.Schema()
				plain, err := table.Create(ctx, storage.NewMemory(), sch, table.CreateOptions{PartitionColumns: []string{"part"}})
				require.NoError(t, err)
				if dvOn {
					_, err := plain.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{log.PropEnableDeletionVectors: "true"}})
					require.NoError(t, err)
				}
				for _, tb := range []*table.Table{mapped, plain} {
					for k := 0; k < 2; k++ {
						rec := mappedRows(t, mem, sch, k*500, 500)
						_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
						rec.Release()
						require.NoError(t, err)
					}
					_, err = tb.Delete(ctx, "id < 100 OR Name = 'name-3'", table.DMLOptions{})
					require.NoError(t, err)
					res, err := tb.Update(ctx, "id BETWEEN 400 AND 450", table.UpdateOptions{Set: "Name = 'renamed', part = 'c'"})
					require.NoError(t, err)
					require.Equal(t, dvOn, res.Mode == table.ModeDeletionVectors)
					src := mappedRows(t, mem, sch, 900, 300)
					rdr, _ := array.NewRecordReader(sch, []arrow.RecordBatch{src})
					_, err = tb.Merge(ctx, rdr, table.Upsert("id"))
					rdr.Release()
					src.Release()
					require.NoError(t, err)
				}
				require.Equal(t, readAllRows(t, plain), readAllRows(t, mapped))
				// Every file DML wrote (copy-on-write copies, updated rows, merged rows)
				// carries the physical names and field ids.
				msnap, err := mapped.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				for _, a := range msnap.Log().Files() {
					requirePhysicalColumns(t, store, a, mode)
				}
				require.Len(t, readAllRows(t, mapped, table.WithFilter("part = 'c'")), 51-1) // id 400..450 minus Name = 'name-3'
			})
		}
	}
}

// createMappedDVTable is createMappedTable with table features: columnMapping and
// deletionVectors (reader 3 / writer 7), deletion vectors enabled.
func createMappedDVTable(t *testing.T, store storage.Storage, mode log.ColumnMapping) *table.Table {
	t.Helper()
	conf := map[string]string{log.ColumnMappingModeKey: string(mode), "delta.columnMapping.maxColumnId": "6", log.PropEnableDeletionVectors: "true"}
	md := log.Metadata{ID: "6d7c1b6e-0000-4000-8000-0000000000d" + fmt.Sprint(len(mode)), Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: strings.Join(strings.Fields(mappedSchema), ""), PartitionColumns: []string{"part"}, Configuration: conf}
	p := log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{log.FeatureColumnMapping, log.FeatureDeletionVectors},
		WriterFeatures: []string{log.FeatureColumnMapping, log.FeatureDeletionVectors}}
	_, err := log.New(store).Create(context.Background(), md, p, nil, log.CommitInfo{Operation: "CREATE TABLE"})
	require.NoError(t, err)
	tb, err := table.Open(context.Background(), store)
	require.NoError(t, err)
	return tb
}
