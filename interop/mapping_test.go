package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// mapColumns gives every field of s (nested structs included) a physical name
// unlike its logical one and an id, as Spark does when column mapping is enabled,
// and returns the largest id.
func mapColumns(s *log.StructType, next int64) int64 {
	for i := range s.Fields {
		f := &s.Fields[i]
		next++
		if f.Metadata == nil {
			f.Metadata = map[string]any{}
		}
		f.Metadata[log.FieldIDKey] = json.Number(fmt.Sprint(next))
		f.Metadata[log.PhysicalNameKey] = "col-" + uuid.NewString()
		if sub, ok := f.Type.(*log.StructType); ok {
			next = mapColumns(sub, next)
		}
	}
	return next
}

// TestColumnMappedTablesReadByDuckDB writes column-mapped tables (name and id mode,
// partitioned) with skiplake and has DuckDB replay the log and read the Parquet
// files by the physical names the schema assigns, attaching partition values from
// the add actions (keyed by physical names): the rows must equal skiplake's ReadAll.
func TestColumnMappedTablesReadByDuckDB(t *testing.T) {
	rows := rowsKnob(t, 1200)
	for i, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			ds, err := log.FromArrow(mixedSchema())
			require.NoError(t, err)
			maxID := mapColumns(ds, 0)
			parts := []string{"p_str", "p_int"}
			md := log.Metadata{ID: uuid.NewString(), Format: log.Format{Provider: "parquet", Options: map[string]string{}},
				SchemaString: ds.JSON(), PartitionColumns: parts, Configuration: map[string]string{
					log.ColumnMappingModeKey: string(mode), "delta.columnMapping.maxColumnId": fmt.Sprint(maxID)}}
			store, err := storage.NewLocal(dir)
			require.NoError(t, err)
			_, err = log.New(store).Create(bg, md, log.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, nil, log.CommitInfo{Operation: "CREATE TABLE"})
			require.NoError(t, err)
			tb, err := table.OpenURL(bg, dir)
			require.NoError(t, err)

			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			g := newGen(seedKnob(t, uint64(500+i)))
			for step := range 2 {
				rec := g.mixedBatch(t, mem, rows)
				_, err := tb.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{TargetFileSize: int64(32<<10) * int64(step+1), Allocator: mem})
				rec.Release()
				require.NoError(t, err)
			}
			mem.AssertSize(t, 0)

			all, err := tb.ReadAll(bg)
			require.NoError(t, err)
			ours := arrowRows(t, all)
			all.Release()
			require.Len(t, ours, 2*rows)

			// DuckDB's side: the physical schema (for rendering structs by their
			// physical field names) and the files its own log replay finds.
			phys, err := log.ToArrow(ds, log.ArrowOptions{PhysicalNames: true})
			require.NoError(t, err)
			db := openDuck(t)
			files := duckReplay(t, db, dir, -1)
			require.NotEmpty(t, files)
			physParts := []string{ds.Fields[len(ds.Fields)-3].PhysicalName(), ds.Fields[len(ds.Fields)-2].PhysicalName()}
			for _, f := range files {
				require.True(t, strings.HasPrefix(f.Path, physParts[0]+"="), "partition directory by physical name: %s", f.Path)
			}
			theirs := duckRows(t, db, duckTableSQL(t, dir, phys, physParts, files), phys)
			require.NoError(t, sameMultiset(ours, theirs, 5))
		})
	}
}
