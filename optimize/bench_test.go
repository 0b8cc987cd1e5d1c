package optimize

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/storage"
)

// lineitemSchema is a TPC-H lineitem-like subset.
var lineitemSchema = arrow.NewSchema([]arrow.Field{
	{Name: "l_orderkey", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "l_partkey", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "l_suppkey", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "l_quantity", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "l_extendedprice", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "l_discount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "l_shipdate", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "l_shipmode", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "l_comment", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func genLineitem(n int, start int64, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	modes := []string{"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
	words := []string{"carefully", "final", "deposits", "sleep", "furiously", "ironic", "packages", "boost", "quickly", "regular"}
	b := array.NewRecordBuilder(memory.DefaultAllocator, lineitemSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append((start + int64(i)) / 4)
		b.Field(1).(*array.Int64Builder).Append(rng.Int64N(200_000))
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(10_000))
		q := float64(1 + rng.IntN(50))
		b.Field(3).(*array.Float64Builder).Append(q)
		b.Field(4).(*array.Float64Builder).Append(q * (900 + rng.Float64()*1000))
		b.Field(5).(*array.Float64Builder).Append(float64(rng.IntN(11)) / 100)
		b.Field(6).(*array.Date32Builder).Append(arrow.Date32(8036 + rng.IntN(2526)))
		b.Field(7).(*array.StringBuilder).Append(modes[rng.IntN(len(modes))])
		b.Field(8).(*array.StringBuilder).Append(words[rng.IntN(10)] + " " + words[rng.IntN(10)] + " " + words[rng.IntN(10)])
	}
	return b.NewRecordBatch()
}

func benchRows() int {
	if s := os.Getenv("SKIPLAKE_OPTIMIZE_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 200_000
}

// lineitemTemplate builds a lineitem table of rows rows in files of 25k rows and
// returns its store (copied per iteration: OPTIMIZE changes the table).
func lineitemTemplate(b *testing.B, rows int) (*storage.Memory, int64) {
	store := storage.NewMemory()
	tt := newTestTableSchema(b, store, lineitemSchema, "", nil)
	const per = 25_000
	var recs []arrow.RecordBatch
	for i := 0; i*per < rows; i++ {
		recs = append(recs, genLineitem(min(per, rows-i*per), int64(i*per), uint64(i+1)))
	}
	tt.appendFiles(b, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	var total int64
	for _, a := range tt.snapshot(b).Files() {
		total += a.Size
	}
	return store, total
}

func copyStore(b *testing.B, src *storage.Memory) *storage.Memory {
	ctx := context.Background()
	dst := storage.NewMemory()
	objs, err := src.List(ctx, "", "")
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		data, err := src.Get(ctx, o.Path)
		if err != nil {
			b.Fatal(err)
		}
		if err := dst.Put(ctx, o.Path, data); err != nil {
			b.Fatal(err)
		}
	}
	return dst
}

// BenchmarkOptimize clusters lineitem-like data on (l_partkey, l_shipdate) and
// reports rows/s. Compare with BenchmarkRewriteCeiling (same data read and written
// back with no clustering) for the ratio to the Parquet stack's ceiling. Size knob:
// SKIPLAKE_OPTIMIZE_BENCH_ROWS.
func BenchmarkOptimize(b *testing.B) {
	rows := benchRows()
	tmpl, total := lineitemTemplate(b, rows)
	for _, c := range []Curve{CurveZOrder, CurveHilbert} {
		b.Run(fmt.Sprintf("curve=%s/rows=%d", c, rows), func(b *testing.B) {
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				store := copyStore(b, tmpl)
				plan, err := PlanLatest(context.Background(), store, Options{Curve: c, ClusterBy: []string{"l_partkey", "l_shipdate"},
					TargetFileSize: total / 4, Full: true})
				if err != nil {
					b.Fatal(err)
				}
				m, err := Execute(context.Background(), plan)
				if err != nil {
					b.Fatal(err)
				}
				n += m.NumRows
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkOptimizeBloom compacts lineitem-like data without and with Bloom filters
// (index file + native Parquet filters) and reports rows/s and the index bytes per
// row, for the cost of Bloom indexing in OPTIMIZE. Size knob:
// SKIPLAKE_OPTIMIZE_BENCH_ROWS.
func BenchmarkOptimizeBloom(b *testing.B) {
	rows := benchRows()
	tmpl, total := lineitemTemplate(b, rows)
	for _, cols := range [][]string{nil, {"l_orderkey"}, {"l_orderkey", "l_partkey", "l_comment"}} {
		b.Run(fmt.Sprintf("bloom=%d/rows=%d", len(cols), rows), func(b *testing.B) {
			b.ReportAllocs()
			var n, indexBytes int64
			for b.Loop() {
				store := copyStore(b, tmpl)
				plan, err := PlanLatest(context.Background(), store, Options{TargetFileSize: total, BloomColumns: cols})
				if err != nil {
					b.Fatal(err)
				}
				m, err := Execute(context.Background(), plan)
				if err != nil {
					b.Fatal(err)
				}
				n += m.NumRows
				objs, err := store.List(context.Background(), bloom.IndexDir, "")
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range objs {
					indexBytes += o.Size
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(indexBytes)/float64(max(n, 1)), "indexBytes/row")
		})
	}
}

// BenchmarkRewriteCeiling reads every file with datafile and writes it back with the
// same writer settings and statistics (no ranking, no sort, no commit), on
// Parallelism goroutines like OPTIMIZE: the rewrite speed OPTIMIZE cannot beat.
func BenchmarkRewriteCeiling(b *testing.B) {
	rows := benchRows()
	tmpl, total := lineitemTemplate(b, rows)
	b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		mem := memory.DefaultAllocator
		var n int64
		for b.Loop() {
			store := copyStore(b, tmpl)
			plan, err := PlanLatest(ctx, store, Options{})
			if err != nil {
				b.Fatal(err)
			}
			files := plan.snap.Files()
			out, err := datafile.NewOutput(store, datafile.Spec{Schema: lineitemSchema, TargetFileSize: total / 4, Allocator: mem})
			if err != nil {
				b.Fatal(err)
			}
			err = parallel(ctx, runtime.GOMAXPROCS(0), len(files), func(ctx context.Context, i int) error {
				f, err := out.Create(ctx, datafile.FileOptions{Parallelism: 1})
				if err != nil {
					return err
				}
				err = readFile(ctx, store, files[i], lineitemSchema, mem, func(rec arrow.RecordBatch, _ int64) error { return f.Write(rec) })
				if err != nil {
					f.Abort()
					return err
				}
				_, err = f.Close(ctx)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			n += int64(rows)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
	})
}
