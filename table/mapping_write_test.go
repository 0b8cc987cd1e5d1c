package table_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/goldentest"
	"github.com/skiplake/skiplake/internal/render"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// mappedSchema is a column-mapped table's Delta schema: physical names unlike the
// logical ones, ids, a nested struct and a partition column.
const mappedSchema = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a1"}},
 {"name":"Name","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b2"}},
 {"name":"st","type":{"type":"struct","fields":[
   {"name":"x","type":"integer","nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-d4"}},
   {"name":"y","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-e5"}}]},
  "nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-c3"}},
 {"name":"part","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":6,"delta.columnMapping.physicalName":"col-f6"}}]}`

// createMappedTable commits version 0 of a column-mapped table (protocol 2/5, as
// Spark creates them) straight through the log: table.Create does not make
// column-mapped tables.
func createMappedTable(t *testing.T, store storage.Storage, mode log.ColumnMapping, props map[string]string) *table.Table {
	t.Helper()
	conf := map[string]string{log.ColumnMappingModeKey: string(mode), "delta.columnMapping.maxColumnId": "6"}
	for k, v := range props {
		conf[k] = v
	}
	md := log.Metadata{ID: "6d7c1b6e-0000-4000-8000-00000000000" + fmt.Sprint(len(mode)), Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: strings.Join(strings.Fields(mappedSchema), ""), PartitionColumns: []string{"part"}, Configuration: conf}
	_, err := log.New(store).Create(context.Background(), md, log.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, nil, log.CommitInfo{Operation: "CREATE TABLE"})
	require.NoError(t, err)
	tb, err := table.Open(context.Background(), store)
	require.NoError(t, err)
	return tb
}

func mappedRows(t *testing.T, mem memory.Allocator, sch *arrow.Schema, from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, sch)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i%37))
		}
		sb := b.Field(2).(*array.StructBuilder)
		if i%7 == 0 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(-i))
			sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("y", i))
		}
		b.Field(3).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
	}
	return b.NewRecordBatch()
}

// tableRows returns the rows of a table (or of recs) rendered as JSON values, sorted.
func tableRows(t *testing.T, recs ...arrow.RecordBatch) []string {
	var out []string
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			var cells []string
			for c := 0; c < int(r.NumCols()); c++ {
				cells = append(cells, fmt.Sprint(render.JSONValue(r.Column(c), i)))
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	sort.Strings(out)
	return out
}

func readAllRows(t *testing.T, tb *table.Table, opts ...table.ScanOption) []string {
	t.Helper()
	all, err := tb.ReadAll(context.Background(), opts...)
	require.NoError(t, err)
	defer all.Release()
	tr := array.NewTableReader(all, 0)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		r := tr.RecordBatch()
		r.Retain()
		recs = append(recs, r)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return tableRows(t, recs...)
}

// Writes to column-mapped tables (name and id mode) store physical names, field ids
// in id mode, partition values and directories by physical name, statistics and Bloom
// filters keyed by physical names; the table reads back exactly what was written,
// skipping files by those statistics and filters.
func TestWriteColumnMappedTables(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		t.Run(string(mode), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			store := storage.NewMemory()
			tb := createMappedTable(t, store, mode, nil)
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			sch := snap.Schema()
			first, second := mappedRows(t, mem, sch, 0, 3000), mappedRows(t, mem, sch, 3000, 3000)
			want := tableRows(t, first, second)
			_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{first}, table.WriteOptions{Allocator: mem})
			require.NoError(t, err)
			_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{second}, table.WriteOptions{Allocator: mem})
			require.NoError(t, err)
			first.Release()
			second.Release()
			mem.AssertSize(t, 0)

			snap, err = tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			require.Equal(t, 4, snap.Log().NumFiles())
			for _, a := range snap.Log().Files() {
				require.True(t, strings.HasPrefix(a.Path, "col-f6="), a.Path)
				require.Contains(t, a.PartitionValues, "col-f6")
				require.Contains(t, a.Stats, `"col-a1"`)
				require.NotContains(t, a.Stats, `"id"`)
				requirePhysicalColumns(t, store, a, mode)
			}

			require.Equal(t, want, readAllRows(t, tb))
			// File statistics (physical keys) skip the first commit's files.
			sc, err := tb.Scan(ctx, table.WithFilter("id >= 4000 AND st.x < -5990"))
			require.NoError(t, err)
			rd, err := sc.Read(ctx)
			require.NoError(t, err)
			var n int64
			for rd.Next() {
				n += rd.RecordBatch().NumRows()
			}
			require.NoError(t, rd.Err())
			rd.Release()
			require.Equal(t, int64(7), n) // ids 5991..5999 but 5992 and 5999 (st is null)
			require.Equal(t, int64(2), sc.Report().Files.Skipped)

			// The Bloom index (physical column name) rejects an absent name. (A default
			// allocator: arrow-go frees the Parquet Bloom filters of files with nested
			// columns through GC cleanups, which a checked allocator reports as leaks.)
			bt := createMappedTable(t, storage.NewMemory(), mode, map[string]string{"skiplake.bloomFilter.columns": "Name"})
			rec := mappedRows(t, memory.DefaultAllocator, sch, 0, 3000)
			_, err = bt.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
			rec.Release()
			require.NoError(t, err)
			bsnap, err := bt.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			for _, a := range bsnap.Log().Files() {
				require.Contains(t, a.Tags["skiplake.bloom"], `"cols":["col-b2"]`)
			}
			sc, err = bt.Scan(ctx, table.WithFilter("Name = 'no such name'"))
			require.NoError(t, err)
			require.Equal(t, int64(2), sc.Report().Files.Skipped)
		})
	}
}

// Spark's column-mapped golden table takes appends: its own rows written back (every
// type, nested lists, maps and structs) read as the original rows twice, and the file
// written has Spark's Parquet schema elements: the same physical names and the same
// field ids at every level (name mode; struct, list and map groups included, none on
// the list and map internals).
func TestAppendToGoldenColumnMappedTable(t *testing.T) {
	src := filepath.Join(goldentest.Dir(t), "delta-golden", "table-with-columnmapping-mode-name", "delta")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	ctx := context.Background()
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
	res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{})
	for _, r := range recs {
		r.Release()
	}
	require.NoError(t, err)
	require.Equal(t, int64(6), res.RowsWritten)
	after := readAllRows(t, tb)
	want := append(append([]string(nil), before...), before...)
	sort.Strings(want)
	require.Equal(t, want, after)
	requireSparkFieldIDs(t, dir, res.Version)
}

// requireSparkFieldIDs compares the Parquet schema elements (paths, field ids,
// repetition) of every file the commit at version added to the golden name-mode table
// copied to dir with those of the table's Spark-written files.
func requireSparkFieldIDs(t *testing.T, dir string, version int64) {
	t.Helper()
	spark, err := filepath.Glob(filepath.Join(goldentest.Dir(t), "delta-golden", "table-with-columnmapping-mode-name", "delta", "part-*.parquet"))
	require.NoError(t, err)
	require.NotEmpty(t, spark)
	sparkData, err := os.ReadFile(spark[0])
	require.NoError(t, err)
	want := parquetSchemaNodes(t, sparkData)
	require.Contains(t, want, "col-bd5b1c73-a03c-4003-9f20-87824bdc7bdf id=13 optional") // the nested_struct group
	b, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", version)))
	require.NoError(t, err)
	acts, err := log.ParseCommit("commit", bytes.NewReader(b))
	require.NoError(t, err)
	n := 0
	for _, a := range acts {
		if a.Add == nil {
			continue
		}
		p, err := a.Add.DecodedPath()
		require.NoError(t, err)
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		require.NoError(t, err)
		require.Equal(t, want, parquetSchemaNodes(t, data), "file %s", p)
		n++
	}
	require.Positive(t, n, "version %d adds no file", version)
}

// requirePhysicalColumns asserts that the data file of a, written to a table made by
// createMappedTable, stores its columns under their physical names with their column
// ids as Parquet field ids — in name mode as in id mode (PROTOCOL.md "Writer
// Requirements for Column Mapping"), the struct group included.
func requirePhysicalColumns(t *testing.T, store storage.Storage, a *log.Add, mode log.ColumnMapping) {
	t.Helper()
	p, err := a.DecodedPath()
	require.NoError(t, err)
	data, err := store.Get(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, []string{"col-a1 id=1 required", "col-b2 id=2 optional", "col-c3 id=3 optional",
		"col-c3.col-d4 id=4 optional", "col-c3.col-e5 id=5 optional"}, parquetSchemaNodes(t, data), "%s mode", mode)
}

// parquetSchemaNodes lists the Parquet schema elements of a file below the root, in
// order: dotted path, field id (-1: none) and repetition.
func parquetSchemaNodes(t *testing.T, data []byte) []string {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	var out []string
	var walk func(n schema.Node, path string)
	walk = func(n schema.Node, path string) {
		if path != "" {
			path += "."
		}
		path += n.Name()
		out = append(out, fmt.Sprintf("%s id=%d %s", path, n.FieldID(), strings.ToLower(n.RepetitionType().String())))
		if g, ok := n.(*schema.GroupNode); ok {
			for i := 0; i < g.NumFields(); i++ {
				walk(g.Field(i), path)
			}
		}
	}
	root := pr.MetaData().Schema.Root()
	for i := 0; i < root.NumFields(); i++ {
		walk(root.Field(i), "")
	}
	return out
}
