package table

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/input"
	"github.com/skiplake/skiplake/internal/datafile"
)

// appendMemSchema is the input of TestAppendMemoryIndependentOfInputSize: eight
// columns, about 90 bytes a row decoded.
var appendMemSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "account", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "rate", Type: arrow.PrimitiveTypes.Float64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "code", Type: arrow.BinaryTypes.String},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// writeOneRowGroupInput writes rows rows of appendMemSchema to path as a Parquet file
// with a single row group, uncompressed and plain-encoded, so that the file's one
// column chunk per column is as large as the column's decoded data: a reader that
// holds a column chunk, or a row group, whole holds the input. It returns the rows'
// decoded (Arrow) size.
func writeOneRowGroupInput(t *testing.T, path string, rows int, pageBytes int64) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(rows)+1),
		parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDictionaryDefault(false),
		parquet.WithStats(false), parquet.WithDataPageSize(pageBytes))
	w, err := pqarrow.NewFileWriter(appendMemSchema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(17, 42))
	var decoded int64
	var buf []byte
	const chunk = 50_000
	for start := 0; start < rows; start += chunk {
		n := min(chunk, rows-start)
		b := array.NewRecordBuilder(memory.DefaultAllocator, appendMemSchema)
		for i := range n {
			b.Field(0).(*array.Int64Builder).Append(int64(start + i))
			b.Field(1).(*array.Int64Builder).Append(rng.Int64N(1 << 40))
			b.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(100_000_000)) / 100)
			b.Field(3).(*array.Float64Builder).Append(rng.Float64())
			if rng.IntN(10) == 0 {
				b.Field(4).AppendNull()
			} else {
				b.Field(4).(*array.Int32Builder).Append(int32(rng.IntN(1000)))
			}
			b.Field(5).(*array.Date32Builder).Append(arrow.Date32(18000 + rng.IntN(3000)))
			buf = strconv.AppendInt(append(buf[:0], "C-"...), rng.Int64N(1<<30), 36)
			b.Field(6).(*array.StringBuilder).BinaryBuilder.Append(buf)
			if rng.IntN(20) == 0 {
				b.Field(7).AppendNull()
			} else {
				buf = append(buf[:0], "order "...)
				buf = strconv.AppendInt(buf, rng.Int64N(1<<50), 16)
				buf = append(buf, " shipped to "...)
				buf = strconv.AppendInt(buf, rng.Int64N(1<<40), 36)
				b.Field(7).(*array.StringBuilder).BinaryBuilder.Append(buf)
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		decoded += datafile.RecordBytes(rec)
		err := w.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return decoded
}

// heapPeak samples the live Go heap (as marked by the most recent GC) every
// millisecond until stop is called, and returns the highest sample. The live heap
// after a GC is what the program holds, whatever GOGC lets the heap grow to between
// collections; sampling it needs no timing assumption (a slow machine only samples
// more often per unit of work).
func heapPeak() (stop func() int64) {
	var (
		mu   sync.Mutex
		peak int64
	)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, int64(sample[0].Value.Uint64()))
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// liveHeapBytes is the live Go heap after a full collection.
func liveHeapBytes() int64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// zstdEncoderBytes is the state of one of arrow-go's pooled zstd encoders at the
// writer's default level (klauspost/compress: an 8 MiB window of history plus its
// match tables).
const zstdEncoderBytes = 10 << 20

// TestAppendMemoryIndependentOfInputSize appends, through the CLI's path
// (input.OpenParquet with the CLI's batch size, then CreateWriteURL), a Parquet input
// whose rows are all in ONE uncompressed row group, and checks that the growth of the
// live heap over the heap live before the append stays under a bound computed from
// the configured sizes alone, far below the input's decoded size. A reader that
// decodes a column chunk or a row group whole, or a writer that queues batches or
// buffers row groups beyond its target, exceeds the bound. It asserts no times, and
// pins the write parallelism so the bound is the same on every machine.
//
// Size knob: SKIPLAKE_APPEND_MEM_ROWS (rows of about 94 decoded bytes; default
// 3,500,000, about 310 MiB decoded, twice the bound; 1,800,000 with -short, just over
// it). The input file is written uncompressed, so it takes the decoded size on disk.
func TestAppendMemoryIndependentOfInputSize(t *testing.T) {
	if raceEnabled {
		t.Skip("a bound on the heap, not a concurrency check: millions of rows under -race take minutes")
	}
	rows := 3_500_000
	if testing.Short() {
		rows = 1_800_000
	}
	if s := os.Getenv("SKIPLAKE_APPEND_MEM_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("SKIPLAKE_APPEND_MEM_ROWS=%q: want a positive number of rows", s)
		}
		rows = n
	}
	// The configured sizes: the CLI reads batches of 64Ki rows (cmd/skiplake
	// openParquet); the input has arrow-go's default 1 MiB pages; the table's files
	// aim at 16 MiB, so its row groups at RowGroupTarget(16 MiB) = 2 MiB.
	const (
		batchRows   = 64 << 10
		pageBytes   = 1 << 20
		targetFile  = 16 << 20
		parallelism = 2
	)
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.parquet")
	decoded := writeOneRowGroupInput(t, in, rows, pageBytes)
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := file.OpenParquetFile(in, false); err != nil {
		t.Fatal(err)
	} else if n := f.NumRowGroups(); f.Close() != nil || n != 1 {
		t.Fatalf("input has %d row groups, want 1", n)
	}

	cols := int64(appendMemSchema.NumFields())
	batchBytes := decoded * batchRows / int64(rows)
	rowGroup := datafile.RowGroupTarget(targetFile)
	// Reading: each column chunk streams through its buffer and holds the page being
	// decoded, compressed and decompressed; the batch being built and the last one
	// emitted. Writing: the batch being split into slices, up to 3 slices queued to
	// the column encoders (datafile maxInFlight), the open row group buffered
	// compressed plus its pages not yet cut, and a pooled zstd encoder per column at
	// most. Plus 8 MiB of fixed state (writer footers, statistics, the log).
	reading := cols*(datafile.DefaultStreamBufferBytes+2*pageBytes) + 2*batchBytes
	writing := (3+2)*batchBytes + 2*rowGroup + cols*zstdEncoderBytes
	bound := reading + writing + 8<<20
	t.Logf("input: %d rows in one row group, %.1f MiB on disk, %.1f MiB decoded; bound %.1f MiB = reading %.1f + writing %.1f + 8 (batches of %.2f MiB, row groups of %.1f MiB)",
		rows, mib(st.Size()), mib(decoded), mib(bound), mib(reading), mib(writing), mib(batchBytes), mib(rowGroup))
	if bound >= decoded {
		t.Fatalf("input too small to test anything: the bound (%.1f MiB) is not below its decoded size (%.1f MiB); raise SKIPLAKE_APPEND_MEM_ROWS",
			mib(bound), mib(decoded))
	}

	base := liveHeapBytes()
	stop := heapPeak()
	rdr, err := input.OpenParquet(ctx, in, input.Options{ParquetBatchRows: batchRows})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	_, res, err := CreateWriteURL(ctx, filepath.Join(dir, "t"), rdr.Schema(), CreateOptions{}, rdr,
		WriteOptions{TargetFileSize: targetFile, Parallelism: parallelism})
	rdr.Release()
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	growth := max(peak-base, 0)
	t.Logf("live heap %.1f MiB before, peak growth %.1f MiB (%.0f%% of the bound, %.0f%% of the decoded input); %d files, %.1f MiB written",
		mib(base), mib(growth), 100*float64(growth)/float64(bound), 100*float64(growth)/float64(decoded), res.FilesAdded, mib(res.BytesWritten))
	if res.RowsWritten != int64(rows) {
		t.Fatalf("wrote %d rows, want %d", res.RowsWritten, rows)
	}
	if growth > bound {
		t.Errorf("appending a %.1f MiB (decoded) one-row-group input grew the live heap by %.1f MiB, over the bound of %.1f MiB from the configured sizes",
			mib(decoded), mib(growth), mib(bound))
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
