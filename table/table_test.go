package table_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// allTypes is a schema with every Delta type, nested ones included.
var allTypes = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "sh", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}, Nullable: true},
	{Name: "dsmall", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
}, nil)

var longPrefix = strings.Repeat("p", 40)

// randomBatch fills every column with random values, nulls, NaN, empty and long
// strings, extreme timestamps and negative decimals.
func randomBatch(rng *rand.Rand, start int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, allTypes)
	defer b.Release()
	null := func() bool { return rng.IntN(10) == 0 }
	for r := 0; r < n; r++ {
		b.Field(0).(*array.Int64Builder).Append(start + int64(r))
		for c := 1; c < len(allTypes.Fields()); c++ {
			fb := b.Field(c)
			if null() {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.Int8Builder:
				x.Append(int8(rng.IntN(256) - 128))
			case *array.Int16Builder:
				x.Append(int16(rng.IntN(65536) - 32768))
			case *array.Int32Builder:
				x.Append(rng.Int32() - math.MaxInt32/2)
			case *array.Float32Builder:
				x.Append([]float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), rng.Float32()*1e6 - 5e5}[rng.IntN(5)])
			case *array.Float64Builder:
				x.Append([]float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(-1), math.MaxFloat64, rng.NormFloat64() * 1e9}[rng.IntN(6)])
			case *array.Decimal128Builder:
				dt := x.Type().(*arrow.Decimal128Type)
				if dt.Precision == 38 {
					hi := rng.Int64N(1<<40) - 1<<39
					x.Append(decimal128.New(hi, rng.Uint64()))
				} else {
					x.Append(decimal128.FromI64(rng.Int64N(199999) - 99999))
				}
			case *array.StringBuilder:
				x.Append([]string{"", "a", "é€😀", longPrefix + fmt.Sprint(rng.IntN(1000)), strings.Repeat("\U0010FFFF", 40)}[rng.IntN(5)])
			case *array.BinaryBuilder:
				buf := make([]byte, rng.IntN(20))
				for i := range buf {
					buf[i] = byte(rng.IntN(256))
				}
				x.Append(buf)
			case *array.BooleanBuilder:
				x.Append(rng.IntN(2) == 0)
			case *array.Date32Builder:
				x.Append(arrow.Date32([]int32{-719162, 2932896, 0, int32(rng.IntN(40000))}[rng.IntN(4)]))
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp([]int64{-62135596800000000, 253402300799999999, 0, -1, rng.Int64N(4e15)}[rng.IntN(5)]))
			case *array.StructBuilder:
				x.Append(true)
				x.FieldBuilder(0).(*array.Int32Builder).Append(rng.Int32())
				if rng.IntN(3) == 0 {
					x.FieldBuilder(1).AppendNull()
				} else {
					x.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint(rng.IntN(100)))
				}
			case *array.ListBuilder:
				x.Append(true)
				for k := rng.IntN(4); k > 0; k-- {
					x.ValueBuilder().(*array.Int64Builder).Append(rng.Int64())
				}
			case *array.MapBuilder:
				x.Append(true)
				for k := rng.IntN(3); k > 0; k-- {
					x.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", k))
					x.ItemBuilder().(*array.Float64Builder).Append(rng.Float64())
				}
			default:
				panic(fmt.Sprintf("unhandled builder %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

func tableOf(recs ...arrow.RecordBatch) arrow.Table {
	return array.NewTableFromRecords(recs[0].Schema(), recs)
}

func TestRoundTripAllTypes(t *testing.T) {
	for _, parts := range [][]string{nil, {"ok"}, {"day", "s"}} {
		t.Run(fmt.Sprintf("partitioned=%v", parts), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			tb, err := table.CreateURL(ctx, dir, allTypes, table.CreateOptions{PartitionColumns: parts,
				Properties: map[string]string{"delta.checkpointInterval": "3"}})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(7, uint64(len(parts))))
			var written []arrow.RecordBatch
			for commit := 0; commit < 7; commit++ { // crosses two checkpoints
				rec := randomBatch(rng, int64(commit*1000), 300)
				written = append(written, rec)
				res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				require.NoError(t, err)
				require.Equal(t, int64(commit+1), res.Version)
				require.Equal(t, int64(300), res.RowsWritten)
			}
			want := tableOf(written...)
			defer want.Release()
			if len(parts) == 2 {
				// Delta cannot tell an empty-string partition value from NULL: both are
				// written as null, so "" in partition column s reads back as NULL.
				want = emptyToNull(t, want, "s")
				defer want.Release()
			}
			// Reopen from disk: checkpoint + later commits.
			tb2, err := table.OpenURL(ctx, dir)
			require.NoError(t, err)
			got, err := tb2.ReadAll(ctx)
			require.NoError(t, err)
			defer got.Release()
			require.True(t, got.Schema().Equal(allTypes) || schemaNamesEqual(got.Schema(), allTypes), "schema %v", got.Schema())
			compareMultiset(t, "all types", got, want)
			// Time travel to version 2 sees exactly the first two batches.
			v2, err := readAllOf(ctx, snapshotAt(t, tb2, table.AtVersion(2)))
			require.NoError(t, err)
			defer v2.Release()
			want2 := tableOf(written[:2]...)
			defer want2.Release()
			if len(parts) == 2 {
				want2 = emptyToNull(t, want2, "s")
				defer want2.Release()
			}
			compareMultiset(t, "v2", v2, want2)
			snap, err := tb2.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			require.GreaterOrEqual(t, snap.Log().CheckpointVersion(), int64(6), "automatic checkpoints every 3 commits")
			for _, a := range snap.Log().Files() {
				n, ok := a.NumRecords()
				require.True(t, ok, "every file has stats: %s", a.Path)
				require.Positive(t, n)
			}
		})
	}
}

func schemaNamesEqual(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		if a.Field(i).Name != b.Field(i).Name {
			return false
		}
	}
	return true
}

func simpleSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

func simpleBatch(schema *arrow.Schema, ks []int64, vs []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ks, nil)
	for _, v := range vs {
		if v == "<null>" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(v)
		}
	}
	return b.NewRecordBatch()
}

func TestOverwriteAndHistory(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	r1 := simpleBatch(simpleSchema(), []int64{1, 2}, []string{"a", "b"})
	defer r1.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{r1}, table.WriteOptions{})
	require.NoError(t, err)
	r2 := simpleBatch(simpleSchema(), []int64{3}, []string{"<null>"})
	defer r2.Release()
	res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{r2}, table.WriteOptions{Overwrite: true})
	require.NoError(t, err)
	require.Equal(t, 1, res.FilesRemoved)
	got, err := tb.ReadAll(ctx)
	require.NoError(t, err)
	defer got.Release()
	compareMultiset(t, "after overwrite", got, tableOf(r2))
	h, err := tb.History(ctx, 0)
	require.NoError(t, err)
	require.Len(t, h, 3)
	require.Equal(t, "WRITE", h[0].Operation)
	require.Equal(t, "Overwrite", h[0].OperationParameters["mode"])
	require.Equal(t, "CREATE TABLE", h[2].Operation)
}

func TestWriteRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	wrong := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, wrong)
	b.Field(0).(*array.StringBuilder).Append("1")
	b.Field(1).(*array.StringBuilder).Append("x")
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.ErrorIs(t, err, table.ErrSchemaMismatch)
	require.Contains(t, err.Error(), `"k"`)
	require.Contains(t, err.Error(), "table has bigint, data has string", "Delta's type names")

	// NULL in the NOT NULL column k.
	nb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	nb.Field(0).AppendNull()
	nb.Field(1).(*array.StringBuilder).Append("x")
	nrec := nb.NewRecordBatch()
	nb.Release()
	defer nrec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{nrec}, table.WriteOptions{})
	require.ErrorIs(t, err, table.ErrNullInNonNullable)

	// Nothing was committed and no data file was left behind.
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, int64(0), snap.Version())
	objs, err := st.List(ctx, "", "")
	require.NoError(t, err)
	for _, o := range objs {
		require.True(t, strings.HasPrefix(o.Path, "_delta_log/"), "stray file %s", o.Path)
	}
}

func TestWriteRefusesUnsupportedWriterFeatures(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	// Another engine upgrades the protocol to a writer feature skiplake does not
	// implement (our own log refuses to commit such a protocol, so write it directly).
	require.NoError(t, st.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json",
		[]byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["someFutureFeature"]}}`+"\n")))
	rec := simpleBatch(simpleSchema(), []int64{1}, []string{"a"})
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.ErrorIs(t, err, log.ErrUnsupportedFeature)
	require.Contains(t, err.Error(), "someFutureFeature")
	// Reads are still allowed.
	got, err := tb.ReadAll(ctx)
	require.NoError(t, err)
	got.Release()
}

func TestIdempotentWrite(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	rec := simpleBatch(simpleSchema(), []int64{1}, []string{"a"})
	defer rec.Release()
	opts := table.WriteOptions{AppID: "ingest-7", AppVersion: 42}
	res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, opts)
	require.NoError(t, err)
	require.False(t, res.Skipped)
	res, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, opts)
	require.NoError(t, err)
	require.True(t, res.Skipped)
	got, err := tb.ReadAll(ctx)
	require.NoError(t, err)
	defer got.Release()
	require.Equal(t, int64(1), got.NumRows())
}

func TestMissingDataFileIsNamed(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	rec := simpleBatch(simpleSchema(), []int64{1}, []string{"a"})
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	p, err := snap.Log().Files()[0].DecodedPath()
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, p))
	_, err = tb.ReadAll(ctx)
	require.ErrorIs(t, err, table.ErrMissingDataFile)
	require.Contains(t, err.Error(), p)
}

func TestLargeWriteMakesSeveralFilesAndRowGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~16 MB")
	}
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), allTypes, table.CreateOptions{})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []arrow.RecordBatch
	for i := 0; i < 20; i++ {
		recs = append(recs, randomBatch(rng, int64(i*5000), 5000))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0) // every Arrow buffer the write and the scan allocated is released
	res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 2 << 20, Allocator: mem})
	require.NoError(t, err)
	require.Greater(t, res.FilesAdded, 2, "a 2 MiB target splits the write")
	got, err := tb.ReadAll(ctx, table.WithAllocator(mem), table.WithFilter("id >= 0"))
	require.NoError(t, err)
	defer got.Release()
	require.Equal(t, int64(100000), got.NumRows())
}

func TestTimeTravelByTimestamp(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	// Each write commits a minute after the previous one (the table's clock), so the
	// commit timestamps are ordered without waiting.
	start := time.Now().Add(time.Hour)
	for i := 0; i < 3; i++ {
		at := start.Add(time.Duration(i) * time.Minute)
		rec := simpleBatch(simpleSchema(), []int64{int64(i)}, []string{"x"})
		_, err = tb.WithClock(func() time.Time { return at }).WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	h, err := tb.History(ctx, 0)
	require.NoError(t, err)
	at := h[1].Timestamp // version 2
	got, err := readAllOf(ctx, snapshotAt(t, tb, table.AtTimestamp(at)))
	require.NoError(t, err)
	defer got.Release()
	require.Equal(t, int64(2), got.NumRows())
	_, err = tb.Snapshot(ctx, table.AtTimestamp(time.Unix(0, 0)))
	require.Error(t, err)
	var e *log.UnsupportedFeatureError
	require.False(t, errors.As(err, &e))
}

// emptyToNull returns tbl with empty strings in column col replaced by NULL.
func emptyToNull(t *testing.T, tbl arrow.Table, col string) arrow.Table {
	t.Helper()
	idx := tbl.Schema().FieldIndices(col)[0]
	tr := array.NewTableReader(tbl, 1<<16)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		sb := array.NewStringBuilder(memory.DefaultAllocator)
		src := rec.Column(idx).(*array.String)
		for i := 0; i < src.Len(); i++ {
			if src.IsNull(i) || src.Value(i) == "" {
				sb.AppendNull()
			} else {
				sb.Append(src.Value(i))
			}
		}
		cols := append([]arrow.Array(nil), rec.Columns()...)
		cols[idx] = sb.NewArray()
		sb.Release()
		recs = append(recs, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
		cols[idx].Release()
	}
	out := array.NewTableFromRecords(tbl.Schema(), recs)
	for _, r := range recs {
		r.Release()
	}
	return out
}
