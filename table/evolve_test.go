package table_test

import (
	"context"
	"errors"
	"sort"
	"strconv"
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

// jsonBatch builds a batch of schema from JSON rows.
func jsonBatch(t *testing.T, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	require.NoError(t, err, rows)
	return rec
}

// writeJSON writes JSON rows of schema to tb.
func writeJSON(t *testing.T, tb *table.Table, schema *arrow.Schema, rows string, opts table.WriteOptions) (*table.WriteResult, error) {
	t.Helper()
	rec := jsonBatch(t, schema, rows)
	defer rec.Release()
	return tb.WriteBatches(context.Background(), []arrow.RecordBatch{rec}, opts)
}

// listing is every object in the store (path and size), sorted: the evidence that
// a refused operation left nothing behind.
func listing(t *testing.T, st storage.Storage) []string {
	t.Helper()
	objs, err := st.List(context.Background(), "", "")
	require.NoError(t, err)
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Path
	}
	sort.Strings(out)
	return out
}

// rowsJSON reads version ref as sorted JSON rows.
func rowsJSON(t *testing.T, tb *table.Table, ref table.Ref) []string {
	t.Helper()
	rows, _ := evoRowsAt(t, tb, ref)
	return rows
}

func latestVersion(t *testing.T, tb *table.Table) int64 {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	return snap.Version()
}

func field(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

var evoBase = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	field("qty", &arrow.Decimal128Type{Precision: 15, Scale: 2}),
	field("addr", arrow.StructOf(field("city", arrow.BinaryTypes.String))),
	field("items", arrow.ListOf(arrow.StructOf(field("sku", arrow.BinaryTypes.String)))),
}, nil)

// TestMergeSchemaAppend: a write with MergeSchema adds new top-level columns and
// struct fields (also inside arrays) in the same commit as its data, with column
// mapping ids and physical names; older versions keep their schema; without
// MergeSchema the same data is refused and nothing is left behind.
func TestMergeSchemaAppend(t *testing.T) {
	for _, mode := range []string{"none", "name"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			st := storage.NewMemory()
			props := map[string]string{}
			if mode == "name" {
				props[log.PropColumnMappingMode] = "name"
			}
			tb, err := table.Create(ctx, st, evoBase, table.CreateOptions{Properties: props})
			require.NoError(t, err)
			_, err = writeJSON(t, tb, evoBase, `[{"id":1,"qty":"1.50","addr":{"city":"Lyon"},"items":[{"sku":"a"}]}]`, table.WriteOptions{})
			require.NoError(t, err)
			wider := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64},
				field("addr", arrow.StructOf(field("city", arrow.BinaryTypes.String), field("zip", arrow.PrimitiveTypes.Int32))),
				field("items", arrow.ListOf(arrow.StructOf(field("sku", arrow.BinaryTypes.String), field("n", arrow.PrimitiveTypes.Int64)))),
				field("note", arrow.BinaryTypes.String),
			}, nil)
			rows := `[{"id":2,"addr":{"city":"Nice","zip":6000},"items":[{"sku":"b","n":3}],"note":"new"}]`

			before := listing(t, st)
			_, err = writeJSON(t, tb, wider, rows, table.WriteOptions{})
			require.ErrorIs(t, err, table.ErrSchemaMismatch)
			require.Equal(t, before, listing(t, st), "a refused write leaves nothing")

			res, err := writeJSON(t, tb, wider, rows, table.WriteOptions{MergeSchema: true})
			require.NoError(t, err)
			require.EqualValues(t, 2, res.Version)
			acts := commitActions(t, st, 2)
			var md *log.Metadata
			adds := 0
			for _, a := range acts {
				if a.Metadata != nil {
					md = a.Metadata
				}
				if a.Add != nil {
					adds++
				}
			}
			require.NotNil(t, md, "the new metaData is in the data's commit")
			require.Equal(t, 1, adds)
			require.Equal(t, true, paramsOf(t, st, 2)["canMergeSchema"], "a JSON boolean, as Spark writes it")
			schema, err := md.Schema()
			require.NoError(t, err)
			require.Equal(t, []string{"id", "qty", "addr.city", "addr.zip", "items", "note"}, schema.LeafColumns())
			if mode == "name" {
				zip := schema.Field("addr").Type.(*log.StructType).Field("zip")
				id, ok := zip.FieldID()
				require.True(t, ok)
				require.True(t, strings.HasPrefix(zip.PhysicalName(), "col-"))
				n := schema.Field("items").Type.(*log.ArrayType).ElementType.(*log.StructType).Field("n")
				nid, _ := n.FieldID()
				note := schema.Field("note")
				noteID, _ := note.FieldID()
				maxID := md.Configuration[log.PropColumnMappingMaxColumnID]
				require.ElementsMatch(t, []int64{id, nid, noteID}, []int64{7, 8, 9}, "fresh ids above the old maximum (6)")
				require.Equal(t, "9", maxID)
			}
			require.Equal(t, []string{
				`{"addr":{"city":"Lyon","zip":null},"id":"1","items":[{"n":null,"sku":"a"}],"note":null,"qty":"1.5"}`,
				`{"addr":{"city":"Nice","zip":6000},"id":"2","items":[{"n":3,"sku":"b"}],"note":"new","qty":null}`,
			}, rowsJSON(t, tb, table.Latest()))
			// Time travel: version 1 has its own schema and rows.
			require.Equal(t, []string{`{"addr":{"city":"Lyon"},"id":"1","items":[{"sku":"a"}],"qty":"1.5"}`}, rowsJSON(t, tb, table.AtVersion(1)))
		})
	}
}

func paramsOf(t *testing.T, st storage.Storage, v int64) map[string]any {
	t.Helper()
	ci := rawCommitInfo(t, st, v)
	p, _ := ci["operationParameters"].(map[string]any)
	return p
}

// TestAppendFillsMissingColumns: a file without a column added by ALTER ADD COLUMNS
// is appended with NULLs there (as Spark writes a DataFrame without a nullable
// column); a NOT NULL column missing is refused.
func TestAppendFillsMissingColumns(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, evoBase, table.CreateOptions{})
	require.NoError(t, err)
	_, err = tb.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{mustColumn(t, "note string")}})
	require.NoError(t, err)
	old := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	_, err = writeJSON(t, tb, old, `[{"id":1}]`, table.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{`{"addr":null,"id":"1","items":null,"note":null,"qty":null}`}, rowsJSON(t, tb, table.Latest()))
	noID := arrow.NewSchema([]arrow.Field{field("note", arrow.BinaryTypes.String)}, nil)
	before := listing(t, st)
	_, err = writeJSON(t, tb, noID, `[{"note":"x"}]`, table.WriteOptions{})
	require.ErrorIs(t, err, table.ErrNullInNonNullable)
	require.Contains(t, err.Error(), `column "id" (bigint) is NOT NULL and missing`)
	require.Equal(t, before, listing(t, st))
}

// TestNarrowingCheckedValueByValue: a decimal(16,2) source (DuckDB types qty + 1
// so) fills a decimal(15,2) column when every value fits — in an append and in a
// MERGE — and a value that does not fit is an error naming the column, both types
// and the row (of the source, not a target file); nothing is committed or left.
func TestNarrowingCheckedValueByValue(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, evoBase, table.CreateOptions{})
	require.NoError(t, err)
	wide := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, field("qty", &arrow.Decimal128Type{Precision: 16, Scale: 2})}, nil)
	_, err = writeJSON(t, tb, wide, `[{"id":1,"qty":"9999999999999.99"},{"id":2,"qty":"-1.25"}]`, table.WriteOptions{})
	require.NoError(t, err)

	before := listing(t, st)
	_, err = writeJSON(t, tb, wide, `[{"id":3,"qty":"1.00"},{"id":4,"qty":"10000000000000.00"}]`, table.WriteOptions{})
	var ce *table.CastError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "qty", ce.Column)
	require.Equal(t, "decimal(16,2)", ce.From)
	require.Equal(t, "decimal(15,2)", ce.To)
	require.EqualValues(t, 1, ce.Row)
	require.Contains(t, err.Error(), "at row 2")
	require.Equal(t, before, listing(t, st))

	// MERGE: the source's decimal(16,2) updates and inserts.
	src := jsonBatch(t, wide, `[{"id":2,"qty":"3.50"},{"id":5,"qty":"7.00"}]`)
	rdr, _ := array.NewRecordReader(wide, []arrow.RecordBatch{src})
	_, err = tb.Merge(ctx, rdr, table.Upsert("id"))
	rdr.Release()
	src.Release()
	require.NoError(t, err)
	got := rowsJSON(t, tb, table.Latest())
	require.Contains(t, got, `{"addr":null,"id":"2","items":null,"qty":"3.5"}`)
	require.Contains(t, got, `{"addr":null,"id":"5","items":null,"qty":"7"}`)

	before = listing(t, st)
	src = jsonBatch(t, wide, `[{"id":1,"qty":"1.00"},{"id":6,"qty":"99999999999999.99"}]`)
	rdr, _ = array.NewRecordReader(wide, []arrow.RecordBatch{src})
	_, err = tb.Merge(ctx, rdr, table.Upsert("id"))
	rdr.Release()
	src.Release()
	require.ErrorAs(t, err, &ce)
	require.EqualValues(t, 1, ce.Row, "the row of the source")
	require.NotContains(t, err.Error(), ".parquet", "the error blames the source, not a target file")
	require.Equal(t, before, listing(t, st))
}

// TestOverwrite: an overwrite removes every file with dataChange=true and adds the
// new ones in one commit recorded as Spark's WRITE with mode Overwrite.
func TestOverwrite(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, evoBase, table.CreateOptions{})
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		_, err = writeJSON(t, tb, evoBase, `[{"id":1},{"id":2}]`, table.WriteOptions{})
		require.NoError(t, err)
	}
	res, err := writeJSON(t, tb, evoBase, `[{"id":9}]`, table.WriteOptions{Overwrite: true})
	require.NoError(t, err)
	require.Equal(t, 2, res.FilesRemoved)
	removes := 0
	for _, a := range commitActions(t, st, res.Version) {
		if a.Remove != nil {
			removes++
			require.True(t, a.Remove.DataChange)
		}
	}
	require.Equal(t, 2, removes)
	ci := rawCommitInfo(t, st, res.Version)
	require.Equal(t, "WRITE", ci["operation"])
	require.Equal(t, false, ci["isBlindAppend"])
	require.Equal(t, map[string]any{"mode": "Overwrite", "partitionBy": "[]"}, ci["operationParameters"])
	require.Equal(t, []string{`{"addr":null,"id":"9","items":null,"qty":null}`}, rowsJSON(t, tb, table.Latest()))
	require.Len(t, rowsJSON(t, tb, table.AtVersion(2)), 4)
}

var rwSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	field("day", arrow.FixedWidthTypes.Date32),
	field("v", arrow.BinaryTypes.String),
}, nil)

// TestReplaceWhere: an overwrite with a predicate replaces exactly the rows it
// selects. A partition predicate removes the matching partitions' files without
// reading them; a data predicate deletes the matching rows of the files it touches
// (deletion vectors or a rewrite, as the table says). New rows outside the
// predicate are refused with nothing committed and nothing left. The commit is a
// WRITE with mode Overwrite and the predicate, as Spark records it.
func TestReplaceWhere(t *testing.T) {
	for _, dv := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy-on-write", true: "deletion vectors"}[dv], func(t *testing.T) {
			ctx := context.Background()
			st := storage.NewMemory()
			props := map[string]string{}
			if dv {
				props[log.PropEnableDeletionVectors] = "true"
			}
			tb, err := table.Create(ctx, st, rwSchema, table.CreateOptions{PartitionColumns: []string{"day"}, Properties: props})
			require.NoError(t, err)
			_, err = writeJSON(t, tb, rwSchema, `[{"id":1,"day":"2024-03-01","v":"a"},{"id":2,"day":"2024-03-01","v":"b"},
				{"id":3,"day":"2024-03-02","v":"c"},{"id":4,"day":"2024-03-02","v":"d"},{"id":5,"day":"2024-03-03","v":"e"}]`, table.WriteOptions{})
			require.NoError(t, err)

			// Partition predicate: the 2024-03-02 file goes, unread.
			res, err := writeJSON(t, tb, rwSchema, `[{"id":30,"day":"2024-03-02","v":"x"}]`,
				table.WriteOptions{Overwrite: true, ReplaceWhere: "day = DATE '2024-03-02'"})
			require.NoError(t, err)
			require.EqualValues(t, 2, res.Version)
			require.Equal(t, 1, res.FilesRemoved)
			require.EqualValues(t, 2, res.RowsDeleted)
			params := paramsOf(t, st, 2)
			require.Equal(t, "day = DATE '2024-03-02'", params["predicate"])
			require.Equal(t, "Overwrite", params["mode"])
			metrics := rawCommitInfo(t, st, 2)["operationMetrics"].(map[string]any)
			require.Equal(t, "0", metrics["numCopiedRows"])
			require.Equal(t, "2", metrics["numDeletedRows"])
			require.Equal(t, []string{
				`{"day":"2024-03-01","id":"1","v":"a"}`, `{"day":"2024-03-01","id":"2","v":"b"}`,
				`{"day":"2024-03-02","id":"30","v":"x"}`, `{"day":"2024-03-03","id":"5","v":"e"}`,
			}, rowsJSON(t, tb, table.Latest()))

			// Data predicate: row 1 of the 2024-03-01 file is replaced.
			res, err = writeJSON(t, tb, rwSchema, `[{"id":1,"day":"2024-03-01","v":"A"}]`,
				table.WriteOptions{Overwrite: true, ReplaceWhere: "id = 1"})
			require.NoError(t, err)
			require.EqualValues(t, 1, res.RowsDeleted)
			var sawDV, sawRewrite bool
			var addedFiles, addedBytes int64
			for _, a := range commitActions(t, st, res.Version) {
				if a.Remove != nil {
					require.True(t, a.Remove.DataChange)
				}
				if a.Add != nil && a.Add.DeletionVector == nil { // written, not a file re-added with its DV
					addedFiles++
					addedBytes += a.Add.Size
				}
				if a.Add != nil && a.Add.DeletionVector != nil {
					sawDV = true
				}
				if a.Add != nil && strings.HasPrefix(a.Add.Path, "day=2024-03-01") && a.Add.DeletionVector == nil {
					sawRewrite = true
				}
			}
			require.Equal(t, dv, sawDV, "deletion vector iff the table has them")
			require.True(t, sawRewrite, "the new row (and, copy-on-write, the copied row)")
			// Spark's replaceWhere metrics: the files, bytes and rows written count
			// the copies of the surviving rows (id 2, copy-on-write) with the new row.
			metrics = rawCommitInfo(t, st, res.Version)["operationMetrics"].(map[string]any)
			copied := map[bool]string{false: "1", true: "0"}[dv]
			require.Equal(t, copied, metrics["numCopiedRows"])
			require.Equal(t, map[bool]string{false: "2", true: "1"}[dv], metrics["numOutputRows"])
			require.Equal(t, strconv.FormatInt(addedFiles, 10), metrics["numFiles"])
			require.Equal(t, strconv.FormatInt(addedBytes, 10), metrics["numOutputBytes"])
			require.Equal(t, []string{
				`{"day":"2024-03-01","id":"1","v":"A"}`, `{"day":"2024-03-01","id":"2","v":"b"}`,
				`{"day":"2024-03-02","id":"30","v":"x"}`, `{"day":"2024-03-03","id":"5","v":"e"}`,
			}, rowsJSON(t, tb, table.Latest()))

			// A row outside the predicate (or for which it is NULL) is refused.
			for _, bad := range []string{`[{"id":7,"day":"2024-03-02","v":"ok"},{"id":8,"day":"2024-03-05","v":"no"}]`, `[{"id":9,"day":null,"v":"null day"}]`} {
				before := listing(t, st)
				_, err = writeJSON(t, tb, rwSchema, bad, table.WriteOptions{Overwrite: true, ReplaceWhere: "day = DATE '2024-03-02'", TargetFileSize: 1})
				var rw *table.ReplaceWhereError
				require.ErrorAs(t, err, &rw)
				require.ErrorIs(t, err, table.ErrReplaceWhereMismatch)
				require.Contains(t, rw.Values, "day=")
				require.Equal(t, before, listing(t, st), "nothing committed, no files left")
			}
			// Options that do not go together.
			_, err = writeJSON(t, tb, rwSchema, `[]`, table.WriteOptions{ReplaceWhere: "id = 1"})
			require.ErrorIs(t, err, table.ErrInvalidArgument)
			_, err = writeJSON(t, tb, rwSchema, `[]`, table.WriteOptions{Overwrite: true, ReplaceWhere: "id = 1", OverwriteSchema: true})
			require.ErrorIs(t, err, table.ErrInvalidArgument)
			_, err = writeJSON(t, tb, rwSchema, `[]`, table.WriteOptions{Overwrite: true, ReplaceWhere: "nosuch = 1"})
			require.ErrorIs(t, err, table.ErrInvalidArgument)
		})
	}
}

// TestOverwriteSchema: an overwrite with OverwriteSchema replaces schema and
// partitioning; the table keeps its id and properties, a column of the same path
// and type keeps its column-mapping id and physical name, and time travel reads
// the old versions with their schema.
func TestOverwriteSchema(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, rwSchema, table.CreateOptions{PartitionColumns: []string{"day"},
		Properties: map[string]string{log.PropColumnMappingMode: "name", "delta.checkpointInterval": "7"}})
	require.NoError(t, err)
	_, err = writeJSON(t, tb, rwSchema, `[{"id":1,"day":"2024-03-01","v":"a"}]`, table.WriteOptions{})
	require.NoError(t, err)
	s1, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	oldID := s1.DeltaSchema().Field("id")
	fresh := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, field("region", arrow.BinaryTypes.String), field("n", arrow.PrimitiveTypes.Int32)}, nil)
	res, err := writeJSON(t, tb, fresh, `[{"id":5,"region":"eu","n":1}]`,
		table.WriteOptions{Overwrite: true, OverwriteSchema: true, PartitionBy: []string{"region"}})
	require.NoError(t, err)
	require.Equal(t, true, paramsOf(t, st, res.Version)["canOverwriteSchema"])
	s2, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, []string{"region"}, s2.PartitionColumns())
	require.Equal(t, s1.Log().Metadata().ID, s2.Log().Metadata().ID)
	require.Equal(t, "7", s2.Configuration()["delta.checkpointInterval"])
	newID := s2.DeltaSchema().Field("id")
	require.Equal(t, oldID.PhysicalName(), newID.PhysicalName(), "same path and type: same physical name")
	a, _ := oldID.FieldID()
	b, _ := newID.FieldID()
	require.Equal(t, a, b)
	require.NotEqual(t, "region", s2.DeltaSchema().Field("region").PhysicalName())
	require.Equal(t, []string{`{"id":"5","n":"1","region":"eu"}`}, rowsJSON(t, tb, table.Latest()))
	require.Equal(t, []string{`{"day":"2024-03-01","id":"1","v":"a"}`}, rowsJSON(t, tb, table.AtVersion(1)))
	// Without partition columns the table becomes unpartitioned (Spark's rule).
	_, err = writeJSON(t, tb, fresh, `[{"id":6}]`, table.WriteOptions{Overwrite: true, OverwriteSchema: true})
	require.NoError(t, err)
	s3, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Empty(t, s3.PartitionColumns())
	// OverwriteSchema needs Overwrite; PartitionBy needs OverwriteSchema.
	_, err = writeJSON(t, tb, fresh, `[]`, table.WriteOptions{OverwriteSchema: true})
	require.ErrorIs(t, err, table.ErrInvalidArgument)
	_, err = writeJSON(t, tb, fresh, `[]`, table.WriteOptions{PartitionBy: []string{"id"}})
	require.ErrorIs(t, err, table.ErrInvalidArgument)
}

// TestSchemaChangeConflicts: a write that changes the metadata (MergeSchema,
// OverwriteSchema) conflicts with a concurrent blind append (Spark's
// ConflictChecker: the appended files were written for the metadata it replaces),
// and a write that committed after an ALTER of the schema fails with the metadata
// change; a plain overwrite under WriteSerializable does not conflict with a blind
// append.
func TestSchemaChangeConflicts(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, rwSchema, table.CreateOptions{})
	require.NoError(t, err)
	_, err = writeJSON(t, tb, rwSchema, `[{"id":1}]`, table.WriteOptions{})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	// An append lands first (at version 2); then a transaction that read version 1
	// and changes the schema tries to commit.
	_, err = writeJSON(t, tb, rwSchema, `[{"id":2}]`, table.WriteOptions{})
	require.NoError(t, err)
	wider := arrow.NewSchema(append(rwSchema.Fields(), field("extra", arrow.PrimitiveTypes.Int32)), nil)
	p, md, added, err := log.MergeSchema(snap.Log().Protocol(), snap.Log().Metadata(), wider)
	require.NoError(t, err)
	require.Equal(t, []string{"extra"}, added)
	txn := snap.Log().WithChange(md, p).NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	txn.ReadWholeTable()
	_, err = txn.Commit(ctx, log.CommitInfo{Operation: "WRITE"})
	require.ErrorIs(t, err, log.ErrConcurrentAppend)
	// Without the metadata change, the blind append does not conflict.
	txn = snap.Log().NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	txn.ReadWholeTable()
	_, err = txn.Commit(ctx, log.CommitInfo{Operation: "WRITE"})
	require.NoError(t, err)

	// An ALTER lands between a write's snapshot and its commit: the write fails
	// with the metadata change and leaves nothing.
	gate := make(chan struct{})
	done := make(chan error, 1)
	rdr := &gatedReader{schema: rwSchema, rec: jsonBatch(t, rwSchema, `[{"id":3}]`), gate: gate, started: make(chan struct{})}
	defer rdr.rec.Release()
	go func() {
		_, err := tb.Write(ctx, rdr, table.WriteOptions{})
		done <- err
	}()
	<-rdr.started
	_, err = tb.Alter(ctx, table.AlterOptions{RenameColumn: &table.ColumnRename{Column: "v", NewName: "w"}})
	require.NoError(t, err)
	close(gate)
	err = <-done
	require.Error(t, err)
	require.True(t, errors.Is(err, log.ErrMetadataChanged) || errors.Is(err, table.ErrLayoutChanged), "%v", err)
}

// gatedReader hands out one batch after gate is closed (started is closed when
// the writer asks for it).
type gatedReader struct {
	schema  *arrow.Schema
	rec     arrow.RecordBatch
	gate    chan struct{}
	started chan struct{}
	n       int
}

func (r *gatedReader) Retain()                        {}
func (r *gatedReader) Release()                       {}
func (r *gatedReader) Schema() *arrow.Schema          { return r.schema }
func (r *gatedReader) RecordBatch() arrow.RecordBatch { return r.rec }
func (r *gatedReader) Record() arrow.RecordBatch      { return r.rec }
func (r *gatedReader) Err() error                     { return nil }
func (r *gatedReader) Next() bool {
	if r.n > 0 {
		return false
	}
	r.n++
	close(r.started)
	<-r.gate
	return true
}
