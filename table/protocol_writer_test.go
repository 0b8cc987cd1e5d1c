package table_test

// Protocol tests of the writer against Spark-written golden tables (issue 25): each
// compares what skiplake writes — commit JSON and checkpoint Parquet — field by field
// with what Delta Spark wrote for the same feature, and cites the PROTOCOL.md rule.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/goldentest"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// rawAction is one line of a commit file: the action's name and its JSON object.
type rawAction struct {
	kind string
	body json.RawMessage
}

func parseRawActions(t *testing.T, data []byte) []rawAction {
	t.Helper()
	var out []rawAction
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(line, &m), "line %s", line)
		require.Len(t, m, 1, "line %s", line)
		for k, v := range m {
			out = append(out, rawAction{k, v})
		}
	}
	return out
}

// commitOf reads version v of the table in st as raw actions.
func commitOf(t *testing.T, st storage.Storage, v int64) []rawAction {
	t.Helper()
	data, err := st.Get(context.Background(), fmt.Sprintf("_delta_log/%020d.json", v))
	require.NoError(t, err)
	return parseRawActions(t, data)
}

// goldenCommit reads version v of a golden table.
func goldenCommit(t *testing.T, name string, v int64) []rawAction {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldentest.Dir(t), name, "delta", "_delta_log", fmt.Sprintf("%020d.json", v)))
	require.NoError(t, err)
	return parseRawActions(t, data)
}

func actionsOf(acts []rawAction, kind string) []json.RawMessage {
	var out []json.RawMessage
	for _, a := range acts {
		if a.kind == kind {
			out = append(out, a.body)
		}
	}
	return out
}

// objectKeys returns the keys of a JSON object in the order they are written.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, "%s is not an object", raw)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

func objectFields(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// jsonKind names a JSON value's type; a string holding a JSON list or object (Spark's
// way of recording lists and maps in operationParameters) is "string(list)" or
// "string(object)".
func jsonKind(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "null":
		return "null"
	case s == "true" || s == "false":
		return "bool"
	case strings.HasPrefix(s, "{"):
		return "object"
	case strings.HasPrefix(s, "["):
		return "list"
	case strings.HasPrefix(s, `"`):
		var in string
		if json.Unmarshal(raw, &in) == nil {
			var v any
			if json.Unmarshal([]byte(in), &v) == nil {
				switch v.(type) {
				case []any:
					return "string(list)"
				case map[string]any:
					return "string(object)"
				}
			}
		}
		return "string"
	}
	return "number"
}

// requireSparkShape checks ours against Spark's JSON object field by field: every
// Spark field is present with the same JSON type, in Spark's relative order.
func requireSparkShape(t *testing.T, spark, ours json.RawMessage, what string) {
	t.Helper()
	sk, ok := objectKeys(t, spark), objectKeys(t, ours)
	sf, of := objectFields(t, spark), objectFields(t, ours)
	last := -1
	for _, k := range sk {
		i := slices.Index(ok, k)
		require.GreaterOrEqual(t, i, 0, "%s: Spark writes %q, skiplake does not:\nspark %s\nours  %s", what, k, spark, ours)
		require.Greater(t, i, last, "%s: %q out of Spark's order (%v vs %v)", what, k, sk, ok)
		last = i
		require.Equal(t, jsonKind(sf[k]), jsonKind(of[k]), "%s: %q is %s in Spark's log, %s in skiplake's", what, k, sf[k], of[k])
	}
}

func protoSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "col1", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "col2", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// protoRows builds n rows of protoSchema: part = i % parts, col1 = from + i.
func protoRows(t *testing.T, from, n, parts int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, protoSchema())
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(i % parts))
		b.Field(1).(*array.Int32Builder).Append(int32(from + i))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("foo", i%parts))
	}
	return b.NewRecordBatch()
}

func writeRows(t *testing.T, tb *table.Table, rec arrow.RecordBatch, opts table.WriteOptions) *table.WriteResult {
	t.Helper()
	defer rec.Release()
	res, err := tb.WriteBatches(context.Background(), []arrow.RecordBatch{rec}, opts)
	require.NoError(t, err)
	return res
}

// PROTOCOL.md "Add File and Remove File": when extendedFileMetadata is true, the
// fields partitionValues and size are present. Spark writes "partitionValues":{} on
// unpartitioned tables; skiplake's removes (overwrite, DELETE, OPTIMIZE) have Spark's
// fields, types and order, partitioned or not. Spark's own removes read and written
// back are unchanged.
func TestProtocolRemoveCarriesExtendedFileMetadata(t *testing.T) {
	ctx := context.Background()
	sparkFlat := actionsOf(goldenCommit(t, "dat/with_schema_change", 1), "remove")
	sparkPart := actionsOf(goldenCommit(t, "delta-golden/dv-partitioned-with-checkpoint", 1), "remove")
	require.NotEmpty(t, sparkFlat)
	require.NotEmpty(t, sparkPart)
	require.JSONEq(t, `{}`, string(objectFields(t, sparkFlat[0])["partitionValues"]))

	check := func(t *testing.T, st storage.Storage, v int64, spark json.RawMessage, partitioned bool) {
		removes := actionsOf(commitOf(t, st, v), "remove")
		require.NotEmpty(t, removes, "version %d removes nothing", v)
		for _, r := range removes {
			requireSparkShape(t, spark, r, fmt.Sprintf("remove of version %d", v))
			f := objectFields(t, r)
			require.JSONEq(t, "true", string(f["extendedFileMetadata"]))
			if !partitioned {
				require.JSONEq(t, `{}`, string(f["partitionValues"]))
			}
		}
	}
	t.Run("unpartitioned", func(t *testing.T) {
		st := storage.NewMemory()
		sch := arrow.NewSchema(protoSchema().Fields()[1:], nil)
		tb, err := table.Create(ctx, st, sch, table.CreateOptions{})
		require.NoError(t, err)
		flatRows := func(from, n int) arrow.RecordBatch {
			rec := protoRows(t, from, n, 1)
			defer rec.Release()
			return array.NewRecordBatch(sch, rec.Columns()[1:], rec.NumRows())
		}
		for i := range 3 {
			writeRows(t, tb, flatRows(10*i, 10), table.WriteOptions{})
		}
		del, err := tb.Delete(ctx, "col1 < 10", table.DMLOptions{}) // a whole file, removed unread
		require.NoError(t, err)
		check(t, st, del.Version, sparkFlat[0], false)
		opt, err := tb.Optimize(ctx, table.OptimizeOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, opt.Metrics.Versions)
		check(t, st, opt.Metrics.Versions[0], sparkFlat[0], false)
		over := writeRows(t, tb, flatRows(0, 5), table.WriteOptions{Overwrite: true})
		check(t, st, over.Version, sparkFlat[0], false)
	})
	t.Run("partitioned", func(t *testing.T) {
		st := storage.NewMemory()
		tb, err := table.Create(ctx, st, protoSchema(), table.CreateOptions{PartitionColumns: []string{"part"}})
		require.NoError(t, err)
		writeRows(t, tb, protoRows(t, 0, 30, 3), table.WriteOptions{})
		del, err := tb.Delete(ctx, "part = 1", table.DMLOptions{})
		require.NoError(t, err)
		check(t, st, del.Version, sparkPart[0], true)
		for _, r := range actionsOf(commitOf(t, st, del.Version), "remove") {
			require.JSONEq(t, `{"part":"1"}`, string(objectFields(t, r)["partitionValues"]))
		}
	})
	// Reading others' logs is unaffected: Spark's removes (with and without
	// extendedFileMetadata) parse and render back to the same JSON.
	for _, src := range []struct {
		name string
		v    int64
	}{{"dat/with_schema_change", 1}, {"delta-golden/dv-partitioned-with-checkpoint", 1}, {"delta-golden/basic-with-inserts-overwrite-restore", 1}} {
		for _, r := range actionsOf(goldenCommit(t, src.name, src.v), "remove") {
			var rm log.Remove
			require.NoError(t, json.Unmarshal(r, &rm))
			back, err := json.Marshal(rm)
			require.NoError(t, err)
			require.JSONEq(t, string(r), string(back), "%s version %d", src.name, src.v)
		}
	}
}

// parquetFields lists a Parquet file's schema elements below the root in order:
// dotted path, physical type (groups: "group"), logical type and repetition.
func parquetFields(t *testing.T, data []byte) []string {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	var out []string
	var walk func(n schema.Node, prefix string)
	walk = func(n schema.Node, prefix string) {
		p := prefix + n.Name()
		rep := strings.ToLower(n.RepetitionType().String())
		switch x := n.(type) {
		case *schema.GroupNode:
			out = append(out, fmt.Sprintf("%s group %s %s", p, x.LogicalType(), rep))
			for i := 0; i < x.NumFields(); i++ {
				walk(x.Field(i), p+".")
			}
		case *schema.PrimitiveNode:
			lt := x.LogicalType().String()
			// A signed integer of the physical type's own width is what an unannotated
			// INT32/INT64 means (Spark writes none, arrow-go the annotation).
			if it, ok := x.LogicalType().(schema.IntLogicalType); ok && it.IsSigned() &&
				((x.PhysicalType() == parquet.Types.Int32 && it.BitWidth() == 32) || (x.PhysicalType() == parquet.Types.Int64 && it.BitWidth() == 64)) {
				lt = "None"
			}
			out = append(out, fmt.Sprintf("%s %s %s %s", p, x.PhysicalType(), lt, rep))
		}
	}
	root := pr.MetaData().Schema.Root()
	for i := 0; i < root.NumFields(); i++ {
		walk(root.Field(i), "")
	}
	return out
}

// requireSparkCheckpointSchema checks our checkpoint's schema elements against a
// Spark-written checkpoint's: each of Spark's is in ours with the same types and
// repetition, in Spark's order; ours adds only what extra lists (by prefix).
func requireSparkCheckpointSchema(t *testing.T, spark, ours []string, extra ...string) {
	t.Helper()
	last := -1
	for _, s := range spark {
		i := slices.Index(ours, s)
		require.GreaterOrEqual(t, i, 0, "Spark's checkpoint has %q, skiplake's does not:\n%s", s, strings.Join(ours, "\n"))
		require.Greater(t, i, last, "%q out of Spark's order", s)
		last = i
	}
	for _, o := range ours {
		if slices.Contains(spark, o) {
			continue
		}
		allowed := false
		for _, e := range extra {
			allowed = allowed || strings.HasPrefix(o, e)
		}
		require.True(t, allowed, "skiplake's checkpoint has %q, Spark's does not", o)
	}
}

// PROTOCOL.md "Checkpoints": add.partitionValues_parsed is required when the table
// is partitioned and delta.checkpoint.writeStatsAsStruct is true — the partition
// columns, typed, named by physical name. The checkpoint skiplake writes has Spark's
// schema (Delta 3.2's checkpoint of a date-partitioned table, Delta 3.0's of an
// int-partitioned one) element by element, plus stats_parsed; its
// partitionValues_parsed values are the typed partition values; removes carry no tags.
func TestProtocolCheckpointPartitionValuesParsed(t *testing.T) {
	ctx := context.Background()
	golden := goldentest.Dir(t)
	cases := []struct {
		name       string
		checkpoint string // a Spark-written checkpoint of a table partitioned like this one
		part       arrow.DataType
		value      func(i int) any
	}{
		{"date partition (Delta 3.2)", "delta-rs/checkpoint-cdf-table/delta/_delta_log/00000000000000000003.checkpoint.parquet",
			arrow.FixedWidthTypes.Date32, func(i int) any { return arrow.Date32(19000 + i%3) }},
		{"int partition (Delta 3.0)", "delta-golden/dv-partitioned-with-checkpoint/delta/_delta_log/00000000000000000010.checkpoint.parquet",
			arrow.PrimitiveTypes.Int32, func(i int) any { return int32(i % 3) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sparkData, err := os.ReadFile(filepath.Join(golden, c.checkpoint))
			require.NoError(t, err)
			spark := parquetFields(t, sparkData)
			partCol := ""
			for _, f := range spark {
				if p, ok := strings.CutPrefix(f, "add.partitionValues_parsed."); ok {
					partCol = strings.Fields(p)[0]
				}
			}
			require.NotEmpty(t, partCol, "the golden checkpoint has partitionValues_parsed")

			sch := arrow.NewSchema([]arrow.Field{{Name: partCol, Type: c.part, Nullable: true},
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
			st := storage.NewMemory()
			tb, err := table.Create(ctx, st, sch, table.CreateOptions{PartitionColumns: []string{partCol},
				Properties: map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"}})
			require.NoError(t, err)
			b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
			for i := range 9 {
				switch v := c.value(i).(type) {
				case arrow.Date32:
					b.Field(0).(*array.Date32Builder).Append(v)
				case int32:
					b.Field(0).(*array.Int32Builder).Append(v)
				}
				b.Field(1).(*array.Int64Builder).Append(int64(i))
			}
			b.Field(0).AppendNull() // a NULL partition
			b.Field(1).(*array.Int64Builder).Append(99)
			writeRows(t, tb, b.NewRecordBatch(), table.WriteOptions{})
			b.Release()
			_, err = tb.Delete(ctx, "id = 1", table.DMLOptions{}) // a tombstone
			require.NoError(t, err)
			v, err := tb.Checkpoint(ctx)
			require.NoError(t, err)
			data, err := st.Get(ctx, fmt.Sprintf("_delta_log/%020d.checkpoint.parquet", v))
			require.NoError(t, err)
			ours := parquetFields(t, data)
			requireSparkCheckpointSchema(t, spark, ours, "add.stats_parsed", "add.clusteringProvider")
			require.NotContains(t, strings.Join(ours, "\n"), "remove.tags", "PROTOCOL.md: checkpoint removes carry no tags")

			// The typed values are the log's partition values.
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			want := map[string]string{} // path -> partition value ("" for null)
			for _, a := range snap.Log().Files() {
				val, _ := a.PartitionValue(partCol)
				want[a.Path] = val
			}
			got := checkpointParsedPartitions(t, data, partCol)
			require.Equal(t, want, got)

			// A fresh reader starts from the checkpoint and sees the same files.
			again, err := table.Open(ctx, st)
			require.NoError(t, err)
			snap2, err := again.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			require.Equal(t, snap.Log().NumFiles(), snap2.Log().NumFiles())
			require.Equal(t, readAllRows(t, tb), readAllRows(t, again))
		})
	}
}

// checkpointParsedPartitions reads a checkpoint's add rows: path -> the
// partitionValues_parsed value of col rendered as the log spells it ("" for NULL).
func checkpointParsedPartitions(t *testing.T, data []byte, col string) map[string]string {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(context.Background())
	require.NoError(t, err)
	defer tbl.Release()
	out := map[string]string{}
	idx := tbl.Schema().FieldIndices("add")
	require.Len(t, idx, 1)
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		add := chunk.(*array.Struct)
		at := add.DataType().(*arrow.StructType)
		pi, _ := at.FieldIdx("path")
		ppi, ok := at.FieldIdx("partitionValues_parsed")
		require.True(t, ok)
		paths := add.Field(pi).(*array.String)
		parsed := add.Field(ppi).(*array.Struct)
		ci, ok := parsed.DataType().(*arrow.StructType).FieldIdx(col)
		require.True(t, ok)
		vals := parsed.Field(ci)
		for i := 0; i < add.Len(); i++ {
			if add.IsNull(i) {
				continue
			}
			require.False(t, parsed.IsNull(i), "partitionValues_parsed is set on every add")
			s := ""
			if !vals.IsNull(i) {
				switch a := vals.(type) {
				case *array.Date32:
					s = a.Value(i).FormattedString()
				case *array.Int32:
					s = fmt.Sprint(a.Value(i))
				default:
					t.Fatalf("unexpected type %s", a.DataType())
				}
			}
			out[paths.Value(i)] = s
		}
	}
	return out
}

// A column-mapped table (name mode) partitioned by timestamp, decimal and string
// columns: partitionValues_parsed names the fields by physical name, in
// metaData.partitionColumns order, typed (timestamp[us, UTC], decimal), NULL where the
// value is null; the table reads the same from the checkpoint as from the JSON log.
func TestProtocolCheckpointPartitionValuesParsedColumnMapped(t *testing.T) {
	ctx := context.Background()
	const schemaJSON = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a1"}},
 {"name":"ts","type":"timestamp","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b2"}},
 {"name":"amount","type":"decimal(12,2)","nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-c3"}},
 {"name":"s","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-d4"}}]}`
	st := storage.NewMemory()
	md := log.Metadata{ID: "2b1b5b36-0000-4000-8000-000000000025", Format: log.Format{Provider: "parquet"},
		SchemaString: strings.Join(strings.Fields(schemaJSON), ""), PartitionColumns: []string{"s", "ts", "amount"},
		Configuration: map[string]string{log.ColumnMappingModeKey: "name", "delta.columnMapping.maxColumnId": "4",
			"delta.checkpoint.writeStatsAsStruct": "true"}}
	_, err := log.New(st).Create(ctx, md, log.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, nil, log.CommitInfo{Operation: "CREATE TABLE"})
	require.NoError(t, err)
	tb, err := table.Open(ctx, st)
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	sch := snap.Schema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for i := range 8 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%4 == 3 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1709287200000000 + int64(i%2)*1500))
		}
		b.Field(2).(*array.Decimal128Builder).AppendValueFromString(fmt.Sprintf("%d.25", i%3))
		if i%3 == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append("s" + fmt.Sprint(i%2))
		}
	}
	writeRows(t, tb, b.NewRecordBatch(), table.WriteOptions{})
	b.Release()
	want := readAllRows(t, tb)
	v, err := tb.Checkpoint(ctx)
	require.NoError(t, err)
	data, err := st.Get(ctx, fmt.Sprintf("_delta_log/%020d.checkpoint.parquet", v))
	require.NoError(t, err)
	fields := parquetFields(t, data)
	var parsed []string
	for _, f := range fields {
		if p, ok := strings.CutPrefix(f, "add.partitionValues_parsed."); ok {
			parsed = append(parsed, p)
		}
	}
	require.Equal(t, []string{
		"col-d4 BYTE_ARRAY String optional",
		"col-b2 INT64 Timestamp(isAdjustedToUTC=true, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false) optional",
		"col-c3 INT64 Decimal(precision=12, scale=2) optional",
	}, parsed)

	// Every file's typed values equal its partitionValues, parsed.
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(ctx)
	require.NoError(t, err)
	defer tbl.Release()
	files := map[string]*log.Add{}
	for _, a := range snap.Log().Files() {
		files[a.Path] = a
	}
	snapAfter, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	for _, a := range snapAfter.Log().Files() {
		files[a.Path] = a
	}
	n := 0
	for _, chunk := range tbl.Column(tbl.Schema().FieldIndices("add")[0]).Data().Chunks() {
		add := chunk.(*array.Struct)
		at := add.DataType().(*arrow.StructType)
		pi, _ := at.FieldIdx("path")
		ppi, _ := at.FieldIdx("partitionValues_parsed")
		p := add.Field(ppi).(*array.Struct)
		for i := 0; i < add.Len(); i++ {
			if add.IsNull(i) {
				continue
			}
			a := files[add.Field(pi).(*array.String).Value(i)]
			require.NotNil(t, a)
			sv, sNull := a.PartitionValue("col-d4")
			require.Equal(t, sNull, p.Field(0).IsNull(i))
			if !sNull {
				require.Equal(t, sv, p.Field(0).(*array.String).Value(i))
			}
			tv, tNull := a.PartitionValue("col-b2")
			require.Equal(t, tNull, p.Field(1).IsNull(i))
			if !tNull {
				require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, tv, "ISO 8601 in the log")
				at, err := time.Parse(time.RFC3339Nano, tv)
				require.NoError(t, err)
				require.Equal(t, at.UnixMicro(), int64(p.Field(1).(*array.Timestamp).Value(i)))
			}
			dv, _ := a.PartitionValue("col-c3")
			require.Equal(t, dv, p.Field(2).(*array.Decimal128).ValueStr(i))
			n++
		}
	}
	require.Equal(t, snapAfter.Log().NumFiles(), n)
	again, err := table.Open(ctx, st)
	require.NoError(t, err)
	require.Equal(t, want, readAllRows(t, again))
	require.Len(t, readAllRows(t, again, table.WithFilter("ts = TIMESTAMP '2024-03-01 10:00:00.0015+00:00' AND s = 's1'")), 2)
}

// goldenCommitInfo finds the first commitInfo of an operation in the golden tables
// written by Apache Spark (else Databricks), with the table it came from.
func goldenCommitInfo(t *testing.T, operation string) (json.RawMessage, string) {
	t.Helper()
	root := goldentest.Dir(t)
	logs, err := filepath.Glob(filepath.Join(root, "*", "*", "delta", "_delta_log", "*.json"))
	require.NoError(t, err)
	slices.Sort(logs)
	var fallback json.RawMessage
	var fallbackFrom string
	for _, p := range logs {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, a := range parseRawActions(t, data) {
			if a.kind != "commitInfo" {
				continue
			}
			var ci struct {
				Operation  string          `json:"operation"`
				EngineInfo string          `json:"engineInfo"`
				Params     json.RawMessage `json:"operationParameters"`
			}
			require.NoError(t, json.Unmarshal(a.body, &ci))
			if ci.Operation != operation {
				continue
			}
			rel, _ := filepath.Rel(root, p)
			if strings.HasPrefix(ci.EngineInfo, "Apache-Spark") {
				return ci.Params, rel
			}
			if fallback == nil && strings.HasPrefix(ci.EngineInfo, "Databricks") {
				fallback, fallbackFrom = ci.Params, rel
			}
		}
	}
	return fallback, fallbackFrom
}

// PROTOCOL.md leaves commitInfo free-form; Delta Spark writes operationParameters
// with each value's JSON text once (its JsonMapSerializer), typed as its
// DeltaOperations say. For every operation skiplake commits: the parameter names Delta
// Spark's operation has, each with Spark's JSON type — checked against the spec below
// (DeltaOperations.scala) and, where a golden table has the operation, against what
// Spark wrote.
func TestProtocolCommitInfoParameters(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, protoSchema(), table.CreateOptions{PartitionColumns: []string{"part"},
		Properties: map[string]string{"delta.checkpointInterval": "100"}})
	require.NoError(t, err)
	params := func(v int64) (string, json.RawMessage) {
		t.Helper()
		for _, a := range commitOf(t, st, v) {
			if a.kind == "commitInfo" {
				var ci struct {
					Operation string          `json:"operation"`
					Params    json.RawMessage `json:"operationParameters"`
				}
				require.NoError(t, json.Unmarshal(a.body, &ci))
				return ci.Operation, ci.Params
			}
		}
		t.Fatalf("version %d has no commitInfo", v)
		return "", nil
	}
	var versions []int64
	add := func(v int64) { versions = append(versions, v) }
	add(0) // CREATE TABLE
	add(writeRows(t, tb, protoRows(t, 0, 30, 3), table.WriteOptions{}).Version)
	add(writeRows(t, tb, protoRows(t, 100, 30, 3), table.WriteOptions{}).Version)
	res, err := tb.Delete(ctx, "col1 = 5", table.DMLOptions{})
	require.NoError(t, err)
	add(res.Version)
	res, err = tb.Update(ctx, "col1 < 3", table.UpdateOptions{Set: "col2 = 'x'"})
	require.NoError(t, err)
	add(res.Version)
	src := protoRows(t, 0, 6, 3)
	rdr, err := array.NewRecordReader(protoSchema(), []arrow.RecordBatch{src})
	require.NoError(t, err)
	res, err = tb.Merge(ctx, rdr, table.Upsert("col1"))
	rdr.Release()
	src.Release()
	require.NoError(t, err)
	add(res.Version)
	opt, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"col1", "col2"}})
	require.NoError(t, err)
	add(opt.Metrics.Versions[0])
	rst, err := tb.Restore(ctx, table.AtVersion(1), table.RestoreOptions{})
	require.NoError(t, err)
	add(rst.Version)
	alt, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.appendOnly": "false"}})
	require.NoError(t, err)
	add(alt.Version)
	alt, err = tb.Alter(ctx, table.AlterOptions{UnsetProperties: []string{"delta.appendOnly"}})
	require.NoError(t, err)
	add(alt.Version)
	col, err := table.ParseColumn("note string")
	require.NoError(t, err)
	alt, err = tb.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{col}})
	require.NoError(t, err)
	add(alt.Version)
	h, err := tb.History(ctx, 0)
	require.NoError(t, err)
	var at time.Time
	for _, e := range h {
		if e.Version == 2 {
			at = e.Timestamp
		}
	}
	rst, err = tb.Restore(ctx, table.AtTimestamp(at), table.RestoreOptions{})
	require.NoError(t, err)
	add(rst.Version)
	// (The timestamp restore went back to version 2's schema, without note.)
	add(writeRows(t, tb, protoRows(t, 0, 3, 3), table.WriteOptions{Overwrite: true}).Version)

	cst := storage.NewMemory()
	ct, err := table.Create(ctx, cst, protoSchema(), table.CreateOptions{ClusterBy: []string{"col1"}})
	require.NoError(t, err)
	alt, err = ct.Alter(ctx, table.AlterOptions{ClusterBy: []string{"col1", "col2"}})
	require.NoError(t, err)
	_, clusterParams := func() (string, json.RawMessage) {
		for _, a := range commitOf(t, cst, alt.Version) {
			if a.kind == "commitInfo" {
				var ci struct {
					Operation string          `json:"operation"`
					Params    json.RawMessage `json:"operationParameters"`
				}
				require.NoError(t, json.Unmarshal(a.body, &ci))
				require.Equal(t, "CLUSTER BY", ci.Operation)
				return ci.Operation, ci.Params
			}
		}
		return "", nil
	}()

	// Delta Spark's parameters per operation (DeltaOperations.scala) and their JSON
	// types; "|" separates the types a parameter may have.
	spec := map[string]map[string]string{
		"WRITE":               {"mode": "string", "partitionBy": "string(list)"},
		"CREATE TABLE":        {"isManaged": "string", "description": "null|string", "partitionBy": "string(list)", "clusterBy": "string(list)", "properties": "string(object)"},
		"DELETE":              {"predicate": "string(list)"},
		"UPDATE":              {"predicate": "string(list)"},
		"MERGE":               {"predicate": "string(list)", "matchedPredicates": "string(list)", "notMatchedPredicates": "string(list)", "notMatchedBySourcePredicates": "string(list)"},
		"OPTIMIZE":            {"predicate": "string(list)", "zOrderBy": "string(list)", "clusterBy": "string(list)", "auto": "bool"},
		"RESTORE":             {"version": "number|null", "timestamp": "string|null"},
		"SET TBLPROPERTIES":   {"properties": "string(object)"},
		"UNSET TBLPROPERTIES": {"properties": "string(list)", "ifExists": "bool"},
		"ADD COLUMNS":         {"columns": "string(list)"},
		"CLUSTER BY":          {"oldClusteringColumns": "string", "newClusteringColumns": "string"},
	}
	// skiplake's own parameters beside Spark's (optimize.Plan.operationParameters).
	extra := map[string][]string{"OPTIMIZE": {"clusteringCurve", "hilbertBy", "sortBy", "workloadColumns", "workloadTrees", "bloomFilterColumns"}}
	checkOp := func(op string, raw json.RawMessage, what string) {
		t.Helper()
		want, ok := spec[op]
		require.True(t, ok, "%s: no spec for %s", what, op)
		got := objectFields(t, raw)
		for k, kinds := range want {
			v, ok := got[k]
			require.True(t, ok, "%s: %s has no %q: %s", what, op, k, raw)
			require.Contains(t, strings.Split(kinds, "|"), jsonKind(v), "%s: %s %q is %s", what, op, k, v)
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				require.Contains(t, extra[op], k, "%s: %s has a parameter Spark does not: %q", what, op, k)
			}
		}
	}
	seen := map[string]bool{}
	for _, v := range versions {
		op, raw := params(v)
		checkOp(op, raw, fmt.Sprintf("skiplake version %d", v))
		seen[op] = true
	}
	checkOp("CLUSTER BY", clusterParams, "skiplake CLUSTER BY")
	seen["CLUSTER BY"] = true
	for op := range spec {
		require.True(t, seen[op], "no skiplake commit of %s checked", op)
	}
	// The spec is Spark's: every golden commit of these operations agrees with it
	// (Databricks' extra parameters aside).
	checkedGolden := 0
	for op, want := range spec {
		raw, from := goldenCommitInfo(t, op)
		if raw == nil {
			continue
		}
		got := objectFields(t, raw)
		for k, kinds := range want {
			v, ok := got[k]
			if !ok {
				continue // an older Spark (CREATE TABLE without clusterBy)
			}
			require.Contains(t, strings.Split(kinds, "|"), jsonKind(v), "%s: %s %q is %s", from, op, k, v)
		}
		checkedGolden++
	}
	require.GreaterOrEqual(t, checkedGolden, 7)

	// Values written once, read back as Spark's DESCRIBE HISTORY shows them.
	h, err = tb.History(ctx, 0)
	require.NoError(t, err)
	byVersion := map[int64]table.HistoryEntry{}
	for _, e := range h {
		byVersion[e.Version] = e
	}
	require.Equal(t, map[string]string{"mode": "Append", "partitionBy": `["part"]`}, byVersion[versions[1]].OperationParameters)
	require.Equal(t, "Overwrite", byVersion[versions[len(versions)-1]].OperationParameters["mode"])
	require.Equal(t, map[string]string{"version": "1", "timestamp": "null"}, byVersion[versions[7]].OperationParameters)
	_, raw := params(versions[7])
	require.JSONEq(t, `{"version":1,"timestamp":null}`, string(raw))
}

// Issue 25 item 6: OPTIMIZE records what it did, in Spark's words where Spark has one
// (zOrderBy, clusterBy, auto), and in skiplake's own beside them where it has none
// (hilbertBy, sortBy): a Hilbert run is not recorded as a Z-order.
func TestProtocolOptimizeRecordsTheLayout(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		opts table.OptimizeOptions
		want map[string]string
	}{
		{"compaction", table.OptimizeOptions{}, map[string]string{"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": "false"}},
		{"z-order", table.OptimizeOptions{ZOrderBy: []string{"col1", "col2"}},
			map[string]string{"predicate": "[]", "zOrderBy": `["col1","col2"]`, "clusterBy": "[]", "auto": "false", "clusteringCurve": "zorder"}},
		{"hilbert", table.OptimizeOptions{HilbertBy: []string{"col1", "col2"}, Where: "part = 1"},
			map[string]string{"predicate": `["part = 1"]`, "zOrderBy": "[]", "clusterBy": "[]", "auto": "false", "hilbertBy": `["col1","col2"]`, "clusteringCurve": "hilbert"}},
		{"sort", table.OptimizeOptions{LinearBy: []string{"col2"}},
			map[string]string{"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": "false", "sortBy": `["col2"]`, "clusteringCurve": "linear"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, err := table.Create(ctx, storage.NewMemory(), protoSchema(), table.CreateOptions{PartitionColumns: []string{"part"}})
			require.NoError(t, err)
			for i := range 3 {
				writeRows(t, tb, protoRows(t, 100*i, 40, 3), table.WriteOptions{})
			}
			res, err := tb.Optimize(ctx, c.opts)
			require.NoError(t, err)
			require.NotEmpty(t, res.Metrics.Versions)
			h, err := tb.History(ctx, 1)
			require.NoError(t, err)
			require.Equal(t, "OPTIMIZE", h[0].Operation)
			require.Equal(t, c.want, h[0].OperationParameters)
		})
	}
	t.Run("liquid", func(t *testing.T) {
		tb, err := table.Create(ctx, storage.NewMemory(), protoSchema(), table.CreateOptions{ClusterBy: []string{"col1", "col2"}})
		require.NoError(t, err)
		for i := range 3 {
			writeRows(t, tb, protoRows(t, 100*i, 40, 3), table.WriteOptions{})
		}
		_, err = tb.Optimize(ctx, table.OptimizeOptions{})
		require.NoError(t, err)
		h, err := tb.History(ctx, 1)
		require.NoError(t, err)
		p := h[0].OperationParameters
		require.Equal(t, `["col1","col2"]`, p["clusterBy"], "liquid clustering is recorded under Spark's clusterBy")
		require.Equal(t, "[]", p["zOrderBy"])
		require.NotContains(t, p, "hilbertBy")
	})
	t.Run("auto-compaction", func(t *testing.T) {
		tb, err := table.Create(ctx, storage.NewMemory(), protoSchema(), table.CreateOptions{PartitionColumns: []string{"part"},
			Properties: map[string]string{"delta.autoOptimize.autoCompact": "true", "skiplake.autoCompact.minNumFiles": "2"}})
		require.NoError(t, err)
		var compacted bool
		for i := range 3 {
			res := writeRows(t, tb, protoRows(t, 100*i, 30, 3), table.WriteOptions{})
			compacted = compacted || (res.AutoCompact != nil && len(res.AutoCompact.Versions) > 0)
		}
		require.True(t, compacted, "auto-compaction ran")
		h, err := tb.History(ctx, 0)
		require.NoError(t, err)
		n := 0
		for _, e := range h {
			if e.Operation == "OPTIMIZE" {
				require.Equal(t, "true", e.OperationParameters["auto"])
				n++
			}
		}
		require.Positive(t, n)
	})
}

// PROTOCOL.md "Partition Value Serialization": timestamps should be written adjusted
// to UTC in ISO 8601 (what Delta Spark writes since write.utcTimestampPartitionValues);
// timestamp_ntz without a zone. For the partition values of Spark's golden tables,
// skiplake writes the ISO form in the log for timestamp (the same spelling for
// timestamp_ntz as Spark), Spark's directory names for both, and reads the older
// spelling and the ISO one as the same partition.
func TestProtocolTimestampPartitionValues(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		golden string
		col    string
		typ    *arrow.TimestampType
	}{
		{"delta-golden/kernel-timestamp-int96", "part", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{"delta-golden/data-reader-timestamp_ntz", "tsNtzPartition", &arrow.TimestampType{Unit: arrow.Microsecond}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			// Spark's adds: partition value -> directory.
			sparkDirs := map[string]string{}
			for v := int64(0); ; v++ {
				p := filepath.Join(goldentest.Dir(t), c.golden, "delta", "_delta_log", fmt.Sprintf("%020d.json", v))
				if _, err := os.Stat(p); err != nil {
					break
				}
				for _, a := range actionsOf(goldenCommit(t, c.golden, v), "add") {
					var add log.Add
					require.NoError(t, json.Unmarshal(a, &add))
					if val, isNull := add.PartitionValue(c.col); !isNull {
						sparkDirs[val] = path.Dir(add.Path)
					}
				}
			}
			require.GreaterOrEqual(t, len(sparkDirs), 2)
			sch := arrow.NewSchema([]arrow.Field{{Name: c.col, Type: c.typ, Nullable: true},
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
			st := storage.NewMemory()
			tb, err := table.Create(ctx, st, sch, table.CreateOptions{PartitionColumns: []string{c.col}})
			require.NoError(t, err)
			b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
			var vals []string
			for s := range sparkDirs {
				vals = append(vals, s)
				ts, err := time.Parse("2006-01-02 15:04:05.999999", s)
				require.NoError(t, err)
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
				b.Field(1).(*array.Int64Builder).Append(int64(len(vals)))
			}
			res := writeRows(t, tb, b.NewRecordBatch(), table.WriteOptions{})
			b.Release()
			n := 0
			for _, a := range actionsOf(commitOf(t, st, res.Version), "add") {
				var add log.Add
				require.NoError(t, json.Unmarshal(a, &add))
				got, _ := add.PartitionValue(c.col)
				dir := path.Dir(add.Path)
				var spark string
				for s, d := range sparkDirs {
					if d == dir {
						spark = s
					}
				}
				require.NotEmpty(t, spark, "directory %s is not one of Spark's (%v)", dir, sparkDirs)
				if c.typ.TimeZone == "" {
					require.Equal(t, spark, got, "timestamp_ntz: Spark's spelling, no zone")
				} else {
					ts, _ := time.Parse("2006-01-02 15:04:05.999999", spark)
					require.Equal(t, ts.UTC().Format("2006-01-02T15:04:05.000000Z"), got, "timestamp: ISO 8601 in UTC")
				}
				n++
			}
			require.Equal(t, len(sparkDirs), n)

			// Spark's older spelling and the ISO one are one partition to a reader.
			dir := copyTree(t, filepath.Join(goldentest.Dir(t), c.golden, "delta"))
			gt, err := table.OpenURL(ctx, dir)
			require.NoError(t, err)
			before := readAllRows(t, gt)
			all, err := gt.ReadAll(ctx)
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
			_, err = gt.WriteBatches(ctx, recs, table.WriteOptions{})
			for _, r := range recs {
				r.Release()
			}
			require.NoError(t, err)
			after := readAllRows(t, gt)
			want := append(append([]string(nil), before...), before...)
			slices.Sort(want)
			require.Equal(t, want, after)
			lit := "TIMESTAMP '" + vals[0] + "+00:00'"
			if c.typ.TimeZone == "" {
				lit = "TIMESTAMP_NTZ '" + vals[0] + "'"
			}
			filter := fmt.Sprintf("%s = %s", c.col, lit)
			matching := readAllRows(t, gt, table.WithFilter(filter))
			require.NotEmpty(t, matching)
			require.Zero(t, len(matching)%2, "%s: the rows written in both spellings match alike", filter)

			// OPTIMIZE takes a partition's files in either spelling as one partition:
			// each partition ends as one file.
			snap, err := gt.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			parts := map[string]bool{}
			for _, a := range snap.Log().Files() {
				parts[path.Dir(a.Path)] = true
			}
			_, err = gt.Optimize(ctx, table.OptimizeOptions{})
			require.NoError(t, err)
			snap, err = gt.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			require.Equal(t, len(parts), snap.Log().NumFiles(), "one file per partition after OPTIMIZE")
			require.Equal(t, want, readAllRows(t, gt))
		})
	}
}
