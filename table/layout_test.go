package table_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/health"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/value"
)

// pathRecorder records the paths a store is asked to read.
type pathRecorder struct {
	storage.Storage
	mu    sync.Mutex
	reads []string
}

func (r *pathRecorder) record(p string) {
	r.mu.Lock()
	r.reads = append(r.reads, p)
	r.mu.Unlock()
}

func (r *pathRecorder) Get(ctx context.Context, p string) ([]byte, error) {
	r.record(p)
	return r.Storage.Get(ctx, p)
}

func (r *pathRecorder) Open(ctx context.Context, p string) (storage.File, error) {
	r.record(p)
	return r.Storage.Open(ctx, p)
}

func (r *pathRecorder) dataReads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.reads {
		if !strings.HasPrefix(p, "_delta_log/") {
			out = append(out, p)
		}
	}
	return out
}

func layoutSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
}

// layoutBatch makes n rows: ids from gen, s a short string derived from a random
// number (null with probability nulls), d a random double.
func layoutBatch(r *rand.Rand, n int, gen func(i int) int64, nulls float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, layoutSchema())
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(gen(i))
		if r.Float64() < nulls {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("k%05d", r.IntN(50000)))
		}
		b.Field(2).(*array.Float64Builder).Append(r.NormFloat64())
	}
	return b.NewRecordBatch()
}

// TestLayoutFromLogEqualsBruteForce checks the layout report against the same figures
// computed from the data: each file's min, max and row count read from its rows, the
// histogram and sizes from the files themselves, and write amplification from what
// the writes and OPTIMIZE reported. The report itself must read no data file.
func TestLayoutFromLogEqualsBruteForce(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemory()
	r := rand.New(rand.NewPCG(3, 4))
	tb, err := table.Create(ctx, mem, layoutSchema(), table.CreateOptions{Properties: map[string]string{"delta.targetFileSize": "24kb"}})
	require.NoError(t, err)
	var dataBytes, rearranged int64
	write := func(rec arrow.RecordBatch) {
		defer rec.Release()
		res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		require.NoError(t, err)
		dataBytes += res.BytesWritten
	}
	// Random ids, then an all-null s column in one write, then sorted ids.
	for i := 0; i < 6; i++ {
		write(layoutBatch(r, 1500, func(int) int64 { return r.Int64N(1_000_000) }, 0.1))
	}
	write(layoutBatch(r, 300, func(int) int64 { return r.Int64N(1_000_000) }, 1))
	res, err := tb.Optimize(ctx, table.OptimizeOptions{HilbertBy: []string{"id", "s"}})
	require.NoError(t, err)
	rearranged += res.Metrics.NumAddedBytes
	for i := 0; i < 3; i++ {
		base := int64(i) * 2000
		write(layoutBatch(r, 2000, func(j int) int64 { return base + int64(j) }, 0))
	}

	rec := &pathRecorder{Storage: mem}
	tr, err := table.Open(ctx, rec)
	require.NoError(t, err)
	rep, err := tr.Layout(ctx, table.LayoutOptions{Columns: []string{"id", "S", "d"}})
	require.NoError(t, err)
	require.Empty(t, rec.dataReads(), "the layout report must read no data file")
	require.Len(t, rep.Columns, 3)
	require.Equal(t, "s", rep.Columns[1].Column, "columns are reported in the schema's spelling")

	// Brute force: read every live file.
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	files := snap.Log().Files()
	ranges := make([][]health.FileRange, 3)
	var hf []health.File
	for _, a := range files {
		raw, err := mem.Get(ctx, a.Path)
		require.NoError(t, err)
		hf = append(hf, health.File{Size: int64(len(raw)), Clustered: a.Tags["ZCUBE_ID"] != "",
			ClusteredByCurrent: a.Tags["ZCUBE_ZORDER_BY"] == `["id","s","d"]`})
		cols := readColumns(t, raw)
		for c := range cols {
			ranges[c] = append(ranges[c], rangeOf(cols[c]))
		}
	}
	want := health.Summarize(hf, rep.TargetFileSize*3/4)
	require.Equal(t, want, rep.Summary)
	require.Equal(t, len(files), rep.Files)
	require.Greater(t, rep.ClusteredFraction, 0.0)
	for c, name := range []string{"id", "s", "d"} {
		w := health.Analyze(name, ranges[c], 0.01)
		got := rep.Columns[c]
		if got.FilesWithoutBounds != w.FilesWithoutBounds || got.MaxDepth != w.MaxDepth ||
			!closeTo(got.AverageDepth, w.AverageDepth) || !closeTo(got.PointReadPercent, w.PointReadPercent) ||
			!closeTo(got.RangeReadPercent, w.RangeReadPercent) {
			t.Fatalf("column %s: from the log %+v, from the data %+v", name, got, w)
		}
	}
	// The sorted appends cluster id, so it skips better than the random double.
	require.Less(t, rep.Columns[0].RangeReadPercent, rep.Columns[2].RangeReadPercent)
	require.NotNil(t, rep.WriteAmplification)
	require.Equal(t, dataBytes, rep.WriteAmplification.DataBytes)
	require.Equal(t, rearranged, rep.WriteAmplification.RearrangedBytes)
	require.InDelta(t, float64(dataBytes+rearranged)/float64(dataBytes), rep.WriteAmplification.Ratio, 1e-12)

	// Defaults: the last clustering run's columns are analysed.
	def, err := tr.Layout(ctx, table.LayoutOptions{SkipHistory: true})
	require.NoError(t, err)
	require.Nil(t, def.WriteAmplification)
	require.Len(t, def.Columns, 2)
	require.Equal(t, "id", def.Columns[0].Column)
	_, err = tr.Layout(ctx, table.LayoutOptions{Columns: []string{"nope"}})
	require.ErrorIs(t, err, table.ErrUnknownColumn)
}

func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// readColumns reads a Parquet file's columns into values, one slice per column.
func readColumns(t *testing.T, raw []byte) [][]value.Value {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	require.NoError(t, err)
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(context.Background())
	require.NoError(t, err)
	defer tbl.Release()
	out := make([][]value.Value, tbl.NumCols())
	for c := 0; c < int(tbl.NumCols()); c++ {
		for _, ch := range tbl.Column(c).Data().Chunks() {
			for i := 0; i < ch.Len(); i++ {
				if ch.IsNull(i) {
					out[c] = append(out[c], value.Null())
					continue
				}
				switch a := ch.(type) {
				case *array.Int64:
					out[c] = append(out[c], value.Int64(a.Value(i)))
				case *array.String:
					out[c] = append(out[c], value.String(a.Value(i)))
				case *array.Float64:
					out[c] = append(out[c], value.Float64(a.Value(i)))
				default:
					t.Fatalf("type %T", ch)
				}
			}
		}
	}
	return out
}

// rangeOf is a column's [min, max] and row count from its values.
func rangeOf(vals []value.Value) health.FileRange {
	fr := health.FileRange{Rows: int64(len(vals)), AllNull: true}
	for _, v := range vals {
		if v.IsNull() {
			continue
		}
		if fr.AllNull {
			fr.Min, fr.Max, fr.AllNull, fr.Bounded = v, v, false, true
			continue
		}
		if c, _ := value.Compare(v, fr.Min); c < 0 {
			fr.Min = v
		}
		if c, _ := value.Compare(v, fr.Max); c > 0 {
			fr.Max = v
		}
	}
	return fr
}
