package table_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/benchdata"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// benchRows is the benchmark size (SKIPLAKE_BENCH_ROWS, default 1,000,000).
func benchRows() int {
	if s := os.Getenv("SKIPLAKE_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

var benchSchema = benchdata.Schema

func benchBatches(n int) []arrow.RecordBatch {
	return benchdata.Batches(memory.DefaultAllocator, n, 64<<10)
}

// plainWrite is the baseline of BenchmarkWrite: a plain pqarrow loop writing recs
// to one file with exactly the settings of skiplake's writer (codec and level, page
// and dictionary sizes, page index, statistics, the dictionary choice skiplake made
// for this data, the Arrow schema stored) and row groups cut by bytes at the same
// target, one column after the other, with no Delta statistics and no log.
func plainWrite(b *testing.B, recs []arrow.RecordBatch, props *parquet.WriterProperties, arrProps pqarrow.ArrowWriterProperties, rgBytes int64) int64 {
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(benchSchema, &buf, props, arrProps)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		if err := w.WriteBuffered(r); err != nil {
			b.Fatal(err)
		}
		if w.RowGroupTotalBytesWritten() >= rgBytes {
			if err := w.NewBufferedRowGroupChecked(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return int64(buf.Len())
}

// sameSettings returns the writer properties skiplake's writer uses for benchSchema
// (dictionary choice included) and its row-group target for default-size files.
func sameSettings(b *testing.B, recs []arrow.RecordBatch) (*parquet.WriterProperties, pqarrow.ArrowWriterProperties, int64) {
	rg := datafile.RowGroupTarget(log.DefaultTargetFileSize)
	opts := datafile.WriterOptions{TargetRowGroupBytes: rg}
	w, err := datafile.NewWriter(io.Discard, benchSchema, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(recs[0]); err != nil {
		b.Fatal(err)
	}
	dict := w.DictionaryChoices()
	w.Abort()
	props, arrProps := opts.Properties(dict)
	return props, arrProps, rg
}

// BenchmarkWrite compares table.Write (Delta statistics, the log commit, files and
// row groups cut by size, columns encoded in parallel; in-memory storage) with a plain
// pqarrow loop writing the same batches with the same writer settings (plainWrite).
// The ratio is rows/s(skiplake) / rows/s(pqarrow). Run each impl in its own process,
// interleaved (scripts/abbench.sh does): in one process the second sub-benchmark
// pays for the first one's garbage, which flipped the ratio with the order.
func BenchmarkWrite(b *testing.B) {
	n := benchRows()
	recs := benchBatches(n)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	b.Run(fmt.Sprintf("impl=pqarrow/rows=%d", n), func(b *testing.B) {
		props, arrProps, rg := sameSettings(b, recs)
		b.ReportAllocs()
		var size int64
		for b.Loop() {
			size = plainWrite(b, recs, props, arrProps, rg)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(size), "bytes")
	})
	b.Run(fmt.Sprintf("impl=skiplake/rows=%d", n), func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		var size int64
		for b.Loop() {
			tb, err := table.Create(ctx, storage.NewMemory(), benchSchema, table.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{})
			if err != nil {
				b.Fatal(err)
			}
			size = res.BytesWritten
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(size), "bytes")
	})
}

// BenchmarkScan compares a full-table scan with plain pqarrow reading the same files
// one after the other in one goroutine (streaming, 64Ki-row batches), on two layouts:
// storage=memory with 8 MiB files (the historical case) and storage=local with the
// default target file size on local disk, where whole-file buffering would show in
// memory. skiplake runs with parallelism 1 (like for like) and with the default
// (GOMAXPROCS); limit=10 is the time to the first rows. peak-heap-MB samples the
// live heap while the benchmark runs.
func BenchmarkScan(b *testing.B) {
	n := benchRows()
	recs := benchBatches(n)
	ctx := context.Background()
	type layout struct {
		name   string
		store  storage.Storage
		target int64
	}
	local, err := storage.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	layouts := []layout{{"memory", storage.NewMemory(), 8 << 20}, {"local", local, 0}}
	tables := make([]*table.Table, len(layouts))
	for i, l := range layouts {
		tb, err := table.Create(ctx, l.store, benchSchema, table.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: l.target}); err != nil {
			b.Fatal(err)
		}
		tables[i] = tb
	}
	for _, r := range recs {
		r.Release()
	}
	for i, l := range layouts {
		tb := tables[i]
		snap, err := tb.Snapshot(ctx, table.Latest())
		if err != nil {
			b.Fatal(err)
		}
		var files []storage.File
		for _, a := range snap.Log().Files() {
			p, _ := a.DecodedPath()
			f, err := l.store.Open(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			files = append(files, f)
		}
		size := fmt.Sprintf("storage=%s/rows=%d/files=%d", l.name, n, len(files))
		b.Run("impl=pqarrow/"+size, func(b *testing.B) {
			b.ReportAllocs()
			peak := startPeakHeap()
			for b.Loop() {
				if rows := pqarrowScan(b, files, -1); rows != int64(n) {
					b.Fatalf("read %d rows", rows)
				}
			}
			peak.report(b)
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		for _, par := range []int{1, 0} {
			b.Run(fmt.Sprintf("impl=skiplake/parallelism=%d/%s", par, size), func(b *testing.B) {
				b.ReportAllocs()
				peak := startPeakHeap()
				for b.Loop() {
					if rows, _ := scanRows(b, snap, table.WithParallelism(par)); rows != int64(n) {
						b.Fatalf("read %d rows", rows)
					}
				}
				peak.report(b)
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
		b.Run("impl=pqarrow/limit=10/"+size, func(b *testing.B) {
			peak := startPeakHeap()
			for b.Loop() {
				if rows := pqarrowScan(b, files, 10); rows != 10 {
					b.Fatalf("read %d rows", rows)
				}
			}
			peak.report(b)
		})
		b.Run("impl=skiplake/limit=10/"+size, func(b *testing.B) {
			peak := startPeakHeap()
			for b.Loop() {
				if rows, _ := scanRows(b, snap, table.WithLimit(10)); rows != 10 {
					b.Fatalf("read %d rows", rows)
				}
			}
			peak.report(b)
		})
	}
}

// pqarrowScan reads files one after the other with pqarrow (every column, 64Ki-row
// batches, one goroutine) and returns the rows read; limit >= 0 stops after that many.
func pqarrowScan(b *testing.B, files []storage.File, limit int64) int64 {
	ctx := context.Background()
	var rows int64
	for _, f := range files {
		pr, err := file.NewParquetReader(io.NewSectionReader(f, 0, f.Size()))
		if err != nil {
			b.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for rr.Next() {
			rows += rr.RecordBatch().NumRows()
			if limit >= 0 && rows >= limit {
				rows = limit
				break
			}
		}
		rr.Release()
		pr.Close()
		if limit >= 0 && rows >= limit {
			break
		}
	}
	return rows
}

// peakHeap samples the bytes of live heap objects until report.
type peakHeap struct {
	stop chan struct{}
	done chan uint64
}

func startPeakHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{}), done: make(chan uint64)}
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-p.stop:
				p.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) report(b *testing.B) {
	close(p.stop)
	b.ReportMetric(float64(<-p.done)/(1<<20), "peak-heap-MB")
}

// scanRows reads every row of src's scan and returns how many there were, with the
// reader's report.
func scanRows(b *testing.B, src scanner, opts ...table.ScanOption) (int64, *table.ScanReport) {
	ctx := context.Background()
	sc, err := src.Scan(ctx, opts...)
	if err != nil {
		b.Fatal(err)
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Release()
	var rows int64
	for rd.Next() {
		rows += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		b.Fatal(err)
	}
	return rows, rd.Report()
}

// BenchmarkSelectiveScan measures a 0.1%-selective filter on a table of about 1,000
// files clustered on the filter column against a full scan of the same table, and
// counts the files each reads (skipping must read no more files than the stats allow).
func BenchmarkSelectiveScan(b *testing.B) {
	n := benchRows()
	recs := benchBatches(n) // id is ascending: the table is clustered on id
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), benchSchema, table.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// About 40 bytes per row compressed: aim for ~1,000 files.
	if _, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: int64(n) * 40 / 1000, Parallelism: 1}); err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		b.Fatal(err)
	}
	files := snap.Log().NumFiles()
	lo := int64(n / 2)
	filter := fmt.Sprintf("id >= %d AND id < %d", lo, lo+int64(n/1000))
	scan := func(b *testing.B, opts ...table.ScanOption) (rows int64, read int64) {
		rows, rep := scanRows(b, snap, opts...)
		return rows, rep.Files.Kept
	}
	b.Run(fmt.Sprintf("scan=full/rows=%d/files=%d", n, files), func(b *testing.B) {
		var read int64
		for b.Loop() {
			_, read = scan(b)
		}
		b.ReportMetric(float64(read)*100/float64(files), "files-read%")
	})
	b.Run(fmt.Sprintf("scan=0.1%%/rows=%d/files=%d", n, files), func(b *testing.B) {
		var rows, read int64
		for b.Loop() {
			rows, read = scan(b, table.WithFilter(filter))
		}
		if rows != int64(n/1000) {
			b.Fatalf("filter returned %d rows, want %d", rows, n/1000)
		}
		// The rows sit in at most two adjacent files of a table clustered on id.
		if read > 2 {
			b.Fatalf("read %d files; stats allow at most 2", read)
		}
		b.ReportMetric(float64(read)*100/float64(files), "files-read%")
	})
}

// BenchmarkScanOneColumn measures the one-column aggregate (sum of the double column
// price) through a projected scan, against a one-goroutine pqarrow loop reading the
// same column of the same files, on local disk (8 MiB files). Besides rows/s it
// reports cpu-ms/op, the process's user+system CPU per operation, which moves much
// less than wall time on a loaded machine. Size knob: SKIPLAKE_BENCH_ROWS (default
// 1,000,000).
func BenchmarkScanOneColumn(b *testing.B) {
	n := benchRows()
	recs := benchBatches(n)
	ctx := context.Background()
	local, err := storage.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tb, err := table.Create(ctx, local, benchSchema, table.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 8 << 20}); err != nil {
		b.Fatal(err)
	}
	var want float64
	for _, r := range recs {
		for _, v := range r.Column(2).(*array.Float64).Float64Values() {
			want += v
		}
		r.Release()
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		b.Fatal(err)
	}
	var files []storage.File
	for _, a := range snap.Log().Files() {
		p, _ := a.DecodedPath()
		f, err := local.Open(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	check := func(b *testing.B, rows int64, sum float64) {
		if rows != int64(n) || math.Abs(sum-want) > 1e-6*math.Abs(want) {
			b.Fatalf("read %d rows summing to %g, want %d rows summing to %g", rows, sum, n, want)
		}
	}
	report := func(b *testing.B, cpu0 time.Duration) {
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
	size := fmt.Sprintf("rows=%d/files=%d", n, len(files))
	b.Run("impl=pqarrow/"+size, func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			var rows int64
			var sum float64
			for _, f := range files {
				pr, err := file.NewParquetReader(io.NewSectionReader(f, 0, f.Size()))
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				rr, err := fr.GetRecordReader(ctx, []int{2}, nil)
				if err != nil {
					b.Fatal(err)
				}
				for rr.Next() {
					rec := rr.RecordBatch()
					rows += rec.NumRows()
					for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
						sum += v
					}
				}
				rr.Release()
				pr.Close()
			}
			check(b, rows, sum)
		}
		report(b, cpu0)
	})
	b.Run("impl=skiplake/"+size, func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			sc, err := snap.Scan(ctx, table.WithColumns("price"))
			if err != nil {
				b.Fatal(err)
			}
			rd, err := sc.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var rows int64
			var sum float64
			for rd.Next() {
				rec := rd.RecordBatch()
				rows += rec.NumRows()
				for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
					sum += v
				}
			}
			if err := rd.Err(); err != nil {
				b.Fatal(err)
			}
			rd.Release()
			check(b, rows, sum)
		}
		report(b, cpu0)
	})
}

// cpuTime is the process's user+system CPU time so far (0 where getrusage fails).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
