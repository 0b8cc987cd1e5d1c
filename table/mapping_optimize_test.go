package table_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/goldentest"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// OPTIMIZE on column-mapped tables (name and id mode): compaction, Z-order and
// Hilbert read the files by physical name (id mode: field id) and write files with
// physical names, field ids in id mode, partition directories and values by
// physical name, statistics and Bloom tags keyed by physical names. The rows are
// unchanged (O1) and still skip by those statistics.
func TestOptimizeColumnMappedTables(t *testing.T) {
	ctx := context.Background()
	kinds := []struct {
		name string
		opts table.OptimizeOptions
	}{
		{"compaction", table.OptimizeOptions{}},
		{"zorder", table.OptimizeOptions{ZOrderBy: []string{"id", "Name"}}},
		{"hilbert", table.OptimizeOptions{HilbertBy: []string{"id"}, BloomColumns: []string{"Name"}}},
		// A budget below the data: clustering spills (keys from the mapped columns).
		{"hilbert-spill", table.OptimizeOptions{HilbertBy: []string{"id"}, MemoryBudget: 32 << 10}},
	}
	for _, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		for _, k := range kinds {
			t.Run(string(mode)+"/"+k.name, func(t *testing.T) {
				store := storage.NewMemory()
				tb := createMappedTable(t, store, mode, nil)
				snap, err := tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				sch := snap.Schema()
				var recs []arrow.RecordBatch
				for i := 3; i >= 0; i-- { // descending: the input order is not the id order
					rec := mappedRows(t, memory.DefaultAllocator, sch, i*1500, 1500)
					_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
					require.NoError(t, err)
					recs = append(recs, rec)
				}
				want := tableRows(t, recs...)
				for _, r := range recs {
					r.Release()
				}
				require.Equal(t, want, readAllRows(t, tb))

				res, err := tb.Optimize(ctx, k.opts)
				require.NoError(t, err)
				require.NotNil(t, res.Metrics)
				require.Equal(t, 8, res.Metrics.NumRemovedFiles) // 4 writes × 2 partitions
				if k.opts.MemoryBudget > 0 {
					require.Positive(t, res.Metrics.SpilledBytes)
					// On one column the curve is the column's order: the file of a
					// partition holds its ids ascending (keys read through the mapping).
					all, err := tb.ReadAll(ctx, table.WithFilter("part = 'a'"), table.WithColumns("id"))
					require.NoError(t, err)
					var ids []int64
					tr := array.NewTableReader(all, 0)
					for tr.Next() {
						ids = append(ids, tr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
					}
					tr.Release()
					all.Release()
					require.Len(t, ids, 3000)
					require.True(t, slices.IsSorted(ids), "ids not in curve order")
				}
				require.Equal(t, want, readAllRows(t, tb))

				snap, err = tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				require.Equal(t, 2, snap.Log().NumFiles()) // a file per partition
				for _, a := range snap.Log().Files() {
					require.False(t, a.DataChange)
					require.True(t, strings.HasPrefix(a.Path, "col-f6="), a.Path)
					require.Contains(t, a.PartitionValues, "col-f6")
					require.Contains(t, a.Stats, `"col-a1"`)
					require.NotContains(t, a.Stats, `"id"`)
					if len(k.opts.BloomColumns) > 0 {
						require.Contains(t, a.Tags["skiplake.bloom"], `"cols":["col-b2"]`)
					}
					requirePhysicalColumns(t, store, a, mode)
				}
				// The new files' statistics (physical keys) still skip.
				sc, err := tb.Scan(ctx, table.WithFilter("part = 'a' AND id >= 0"))
				require.NoError(t, err)
				require.Equal(t, int64(1), sc.Report().Files.Skipped)
				require.Equal(t, readAllRows(t, tb, table.WithFilter("id < 100")), filterRows(want, 100))

				// A second run finds nothing to do, or compacts again without change.
				_, err = tb.Optimize(ctx, k.opts)
				require.NoError(t, err)
				require.Equal(t, want, readAllRows(t, tb))
			})
		}
	}
}

// filterRows keeps the rendered rows of mappedRows whose id (first cell) is below n.
func filterRows(rows []string, n int) []string {
	var out []string
	for _, r := range rows {
		id := 0
		for _, c := range r[:strings.IndexByte(r, '|')] {
			id = id*10 + int(c-'0')
		}
		if id < n {
			out = append(out, r)
		}
	}
	return out
}

// Spark's column-mapped golden table (every type; nested lists, maps and structs)
// with its rows appended again: compaction and Z-order each leave the rows
// unchanged, and the files they write read back through the table's mapping. (ALTER
// CLUSTER BY refuses this protocol 2/5 table: its implied writer features include
// generatedColumns and changeDataFeed; liquid clustering is tested on a table-features
// table below.)
func TestOptimizeGoldenColumnMappedTable(t *testing.T) {
	src := filepath.Join(goldentest.Dir(t), "delta-golden", "table-with-columnmapping-mode-name", "delta")
	ctx := context.Background()
	cases := []struct {
		name    string
		cluster []string
		opts    table.OptimizeOptions
	}{
		{"compaction", nil, table.OptimizeOptions{}},
		{"zorder", nil, table.OptimizeOptions{ZOrderBy: []string{"IntegerType", "StringType"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
			tb, err := table.OpenURL(ctx, dir)
			require.NoError(t, err)
			before := readAllRows(t, tb)
			require.Len(t, before, 6)
			all, err := tb.ReadAll(ctx)
			require.NoError(t, err)
			tr := array.NewTableReader(all, 0)
			var recs []arrow.RecordBatch
			for tr.Next() {
				r := tr.RecordBatch()
				r.Retain()
				recs = append(recs, r)
			}
			tr.Release()
			all.Release()
			_, err = tb.WriteBatches(ctx, recs, table.WriteOptions{})
			for _, r := range recs {
				r.Release()
			}
			require.NoError(t, err)
			want := readAllRows(t, tb)
			require.Len(t, want, 12)
			if c.cluster != nil {
				_, err := tb.Alter(ctx, table.AlterOptions{ClusterBy: c.cluster})
				require.NoError(t, err)
			}
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			nFiles := snap.Log().NumFiles()
			res, err := tb.Optimize(ctx, c.opts)
			require.NoError(t, err)
			require.NotNil(t, res.Metrics)
			require.Equal(t, nFiles, res.Metrics.NumRemovedFiles)
			require.Equal(t, want, readAllRows(t, tb))
			require.Len(t, res.Metrics.Versions, 1)
			requireSparkFieldIDs(t, dir, res.Metrics.Versions[0])
			snap, err = tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			require.Equal(t, 1, snap.Log().NumFiles())
			for _, a := range snap.Log().Files() {
				require.Contains(t, a.Stats, `"col-d378faa6-75c4-4548-99b3-37da6e514f77"`) // LongType's physical name
				require.NotContains(t, a.Stats, `"LongType"`)
			}
			// Reopened from storage: the log and files read back as written.
			tb, err = table.OpenURL(ctx, dir)
			require.NoError(t, err)
			require.Equal(t, want, readAllRows(t, tb))
		})
	}
}

// Liquid clustering on a column-mapped table (name and id mode, protocol 3/7, made
// clustered by ALTER CLUSTER BY, whose domain stores physical names): OPTIMIZE
// clusters by the logical columns the domain maps to, reading and writing through
// the mapping, and the rows are unchanged.
func TestOptimizeLiquidColumnMappedTable(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		t.Run(string(mode), func(t *testing.T) {
			store := storage.NewMemory()
			md := log.Metadata{ID: "6d7c1b6e-0000-4000-8000-0000000000aa", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
				SchemaString:  strings.Join(strings.Fields(mappedSchema), ""),
				Configuration: map[string]string{log.ColumnMappingModeKey: string(mode), "delta.columnMapping.maxColumnId": "6"}}
			proto := log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
				ReaderFeatures: []string{log.FeatureColumnMapping}, WriterFeatures: []string{log.FeatureColumnMapping, log.FeatureDomainMetadata}}
			_, err := log.New(store).Create(ctx, md, proto, nil, log.CommitInfo{Operation: "CREATE TABLE"})
			require.NoError(t, err)
			tb, err := table.Open(ctx, store)
			require.NoError(t, err)
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			var recs []arrow.RecordBatch
			for i := range 4 {
				rec := mappedRows(t, memory.DefaultAllocator, snap.Schema(), i*1500, 1500)
				_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				require.NoError(t, err)
				recs = append(recs, rec)
			}
			want := tableRows(t, recs...)
			for _, r := range recs {
				r.Release()
			}
			_, err = tb.Alter(ctx, table.AlterOptions{ClusterBy: []string{"Name", "id"}})
			require.NoError(t, err)
			snap, err = tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			c, err := snap.Log().Clustering()
			require.NoError(t, err)
			require.Equal(t, [][]string{{"col-b2"}, {"col-a1"}}, c.Physical)
			nFiles := snap.Log().NumFiles()

			res, err := tb.Optimize(ctx, table.OptimizeOptions{})
			require.NoError(t, err)
			require.True(t, res.Plan.Liquid)
			require.Equal(t, nFiles, res.Metrics.NumRemovedFiles)
			require.Equal(t, want, readAllRows(t, tb))
			snap, err = tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			for _, a := range snap.Log().Files() {
				require.Contains(t, a.Stats, `"col-b2"`)
				require.NotContains(t, a.Stats, `"Name"`)
			}
			n, _, err := tb.Count(ctx, table.WithFilter("Name = 'name-3'"))
			require.NoError(t, err)
			require.Positive(t, n)
			require.Equal(t, int64(len(filterName(want, "name-3"))), n)
		})
	}
}

// filterName keeps the rendered rows of mappedRows whose Name (second cell) is name.
func filterName(rows []string, name string) []string {
	var out []string
	for _, r := range rows {
		if strings.Split(r, "|")[1] == `"`+name+`"` || strings.Split(r, "|")[1] == name {
			out = append(out, r)
		}
	}
	return out
}
