package table_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/value"
)

var checkpointStatsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	{Name: "p", Type: arrow.BinaryTypes.String},
}, nil)

// checkpointStatsTable writes four files (two partitions, two commits) of rows with
// distinct id ranges into a table with the given properties and checkpoints it.
func checkpointStatsTable(t *testing.T, props map[string]string) (*table.Table, storage.Storage) {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, checkpointStatsSchema, table.CreateOptions{PartitionColumns: []string{"p"}, Properties: props})
	require.NoError(t, err)
	for c := range 2 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, checkpointStatsSchema)
		for i := range 20 {
			id := int64(c*100 + i)
			b.Field(0).(*array.Int64Builder).Append(id)
			if i%5 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%03d", id))
			}
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(id * 101))
			b.Field(3).(*array.Float64Builder).Append(float64(id) / 3)
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(19000 + id))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + id*1_000_123))
			b.Field(6).(*array.BooleanBuilder).Append(i%2 == 0)
			sb := b.Field(7).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(-id))
			b.Field(8).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	_, err = tb.Checkpoint(ctx)
	require.NoError(t, err)
	return tb, st
}

// checkpointAddColumns reads the checkpoint's add.stats and (if present)
// add.stats_parsed columns, one entry per add row.
func checkpointAddColumns(t *testing.T, st storage.Storage, version int64) (statsJSON []string, parsed *arrow.StructType, parsedValid []bool) {
	t.Helper()
	ctx := context.Background()
	pr := openParquet(t, st, log.CheckpointPath(version))
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(ctx)
	require.NoError(t, err)
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices("add")[0]
	for _, chunk := range tbl.Column(idx).Data().Chunks() {
		add := chunk.(*array.Struct)
		at := add.DataType().(*arrow.StructType)
		si, _ := at.FieldIdx("stats")
		pi, hasParsed := at.FieldIdx("stats_parsed")
		if hasParsed {
			parsed = at.Field(pi).Type.(*arrow.StructType)
		}
		for r := 0; r < add.Len(); r++ {
			if add.IsNull(r) {
				continue
			}
			s := add.Field(si).(*array.String)
			if s.IsNull(r) {
				statsJSON = append(statsJSON, "")
			} else {
				statsJSON = append(statsJSON, s.Value(r))
			}
			if hasParsed {
				parsedValid = append(parsedValid, add.Field(pi).IsValid(r))
			}
		}
	}
	return statsJSON, parsed, parsedValid
}

// filesStats returns each live file's typed statistics as the table's log reads them
// (fresh, so from the checkpoint).
func filesStats(t *testing.T, st storage.Storage) map[string]*stats.File {
	t.Helper()
	ctx := context.Background()
	snap, err := log.New(st).Snapshot(ctx, -1)
	require.NoError(t, err)
	schema, err := snap.Schema()
	require.NoError(t, err)
	phys, err := log.ToArrow(schema, log.ArrowOptions{})
	require.NoError(t, err)
	out := map[string]*stats.File{}
	for _, a := range snap.Files() {
		if a.Stats == "" {
			out[a.Path] = nil
			continue
		}
		f, err := stats.Parse(a.Stats, phys)
		require.NoError(t, err)
		out[a.Path] = f
	}
	return out
}

func TestCheckpointStatsProperties(t *testing.T) {
	ctx := context.Background()
	// The statistics the commits carry, as the reference.
	_, refStore := checkpointStatsTable(t, nil)
	want := filesStats(t, refStore)
	require.Len(t, want, 4)
	for p, f := range want {
		require.NotNil(t, f, p)
		require.NotNil(t, f.Column("at").Max, p)
	}

	t.Run("default: JSON stats, no struct", func(t *testing.T) {
		js, parsed, _ := checkpointAddColumns(t, refStore, 2)
		require.Nil(t, parsed, "no stats_parsed column unless asked")
		require.Len(t, js, 4)
		for _, s := range js {
			require.NotEmpty(t, s)
		}
	})

	t.Run("struct only", func(t *testing.T) {
		_, st := checkpointStatsTable(t, map[string]string{
			"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "true"})
		js, parsed, valid := checkpointAddColumns(t, st, 2)
		require.NotNil(t, parsed, "stats_parsed column written")
		for _, s := range js {
			require.Empty(t, s, "writeStatsAsJson=false leaves add.stats null")
		}
		require.Equal(t, []bool{true, true, true, true}, valid)
		for _, name := range []string{"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"} {
			_, ok := parsed.FieldIdx(name)
			require.True(t, ok, "stats_parsed has %s", name)
		}
		minT, _ := parsed.FieldByName("minValues")
		mins := minT.Type.(*arrow.StructType)
		_, hasPart := mins.FieldIdx("p")
		_, hasBool := mins.FieldIdx("ok")
		require.False(t, hasPart, "partition columns have no statistics")
		require.False(t, hasBool, "booleans have no bounds")
		// A fresh reader recovers the same typed statistics from the struct alone.
		got := filesStats(t, st)
		require.Len(t, got, len(want))
		gotByRows, wantByRows := statsByFirstID(t, got), statsByFirstID(t, want)
		require.Equal(t, len(wantByRows), len(gotByRows))
		for id, w := range wantByRows {
			g := gotByRows[id]
			require.NotNil(t, g, "file starting at id %d", id)
			require.Equal(t, w.NumRecords, g.NumRecords)
			for _, col := range [][]string{{"id"}, {"name"}, {"amount"}, {"score"}, {"day"}, {"at"}, {"st", "x"}} {
				wc, gc := w.Column(col...), g.Column(col...)
				require.NotNil(t, gc, "column %v", col)
				require.Equal(t, wc.Min.String(), gc.Min.String(), "min of %v", col)
				// Timestamps go through the struct at microsecond precision and back to
				// JSON at milliseconds, where a maximum is widened by 1 ms: still a bound.
				if col[0] == "at" {
					c, ok := value.Compare(gc.Max, wc.Max)
					require.True(t, ok && c >= 0, "max of at %s below %s", gc.Max, wc.Max)
				} else {
					require.Equal(t, wc.Max.String(), gc.Max.String(), "max of %v", col)
				}
				require.Equal(t, wc.NullCount, gc.NullCount, "null count of %v", col)
			}
		}
		// And skipping uses them: a point lookup skips the first commit's two files
		// (ids 0-19) and reads the second's (ids 100-119, one file per partition).
		tb, err := table.Open(ctx, st)
		require.NoError(t, err)
		sc, err := tb.Scan(ctx, table.WithFilter("id = 105"))
		require.NoError(t, err)
		require.Equal(t, 2, sc.NumFiles())
	})

	t.Run("neither: no statistics in the checkpoint", func(t *testing.T) {
		_, st := checkpointStatsTable(t, map[string]string{"delta.checkpoint.writeStatsAsJson": "false"})
		js, parsed, _ := checkpointAddColumns(t, st, 2)
		require.Nil(t, parsed)
		for _, s := range js {
			require.Empty(t, s)
		}
		for p, f := range filesStats(t, st) {
			require.Nil(t, f, "%s has no statistics", p)
		}
	})

	t.Run("both", func(t *testing.T) {
		_, st := checkpointStatsTable(t, map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"})
		js, parsed, valid := checkpointAddColumns(t, st, 2)
		require.NotNil(t, parsed)
		require.Equal(t, []bool{true, true, true, true}, valid)
		for _, s := range js {
			require.NotEmpty(t, s)
		}
	})
}

func statsByFirstID(t *testing.T, m map[string]*stats.File) map[int64]*stats.File {
	t.Helper()
	out := map[int64]*stats.File{}
	for _, f := range m {
		require.NotNil(t, f)
		out[f.Column("id").Min.AsInt64()] = f
	}
	return out
}
