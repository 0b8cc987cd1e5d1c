package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/benchdata"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/table"
)

// exportRows is the size of the export benchmark's table: SKIPLAKE_BENCH_ROWS, else
// 1,000,000.
func exportRows() int {
	if n, err := strconv.Atoi(os.Getenv("SKIPLAKE_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// exportTable writes n seeded rows (6 columns) to a local table in files of 8 MiB
// and returns its directory and data files.
func exportTable(b *testing.B, n int) (string, []string) {
	dir := filepath.Join(b.TempDir(), "t")
	ctx := context.Background()
	tb, err := table.CreateURL(ctx, dir, benchdata.Schema, table.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	recs := benchdata.Batches(memory.DefaultAllocator, n, 64<<10)
	_, err = tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 8 << 20})
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		b.Fatal(err)
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		b.Fatal(err)
	}
	var files []string
	for _, a := range snap.Log().Files() {
		p, err := a.DecodedPath()
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, filepath.Join(dir, filepath.FromSlash(p)))
	}
	return dir, files
}

// plainExport is the baseline of BenchmarkExport: one goroutine reading every data
// file with pqarrow and writing the batches to one Parquet file with exactly the
// settings of skiplake's writer (datafile.WriterOptions.Properties: codec, pages,
// page index, statistics, the same dictionary choice) and row groups cut by bytes at
// the same target. It returns the output size.
func plainExport(b *testing.B, files []string, out string) int64 {
	ctx := context.Background()
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	opts := datafile.WriterOptions{}
	var w *pqarrow.FileWriter
	var rows int64
	for _, path := range files {
		in, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		pr, err := file.NewParquetReader(in)
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
			rec := rr.RecordBatch()
			if w == nil {
				// The dictionary choice skiplake's writer makes from the first batch.
				dw, err := datafile.NewWriter(io.Discard, rec.Schema(), opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := dw.Write(rec); err != nil {
					b.Fatal(err)
				}
				props, arrProps := opts.Properties(dw.DictionaryChoices())
				dw.Abort()
				if w, err = pqarrow.NewFileWriter(rec.Schema(), f, props, arrProps); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.WriteBuffered(rec); err != nil {
				b.Fatal(err)
			}
			rows += rec.NumRows()
			if w.RowGroupTotalBytesWritten() >= datafile.DefaultTargetRowGroupBytes {
				if err := w.NewBufferedRowGroupChecked(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := rr.Err(); err != nil {
			b.Fatal(err)
		}
		rr.Release()
		pr.Close()
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

// BenchmarkExport compares `skiplake scan TABLE --format parquet --output F` (the
// CLI in-process: a scan reading ahead on every core, columns encoded in parallel)
// with plainExport, a single-goroutine pqarrow read→write loop with identical
// writer settings, on a local table of exportRows rows in 8 MiB files. Report
// rows/s(skiplake) / rows/s(pqarrow); run the two in separate processes
// (scripts/abbench.sh). cpu-s/op is the process's CPU time per op (every thread):
// on a loaded machine, where two cores are not to be had, compare that
// (scripts/abbench.sh ... cpu-s/op).
func BenchmarkExport(b *testing.B) {
	n := exportRows()
	dir, files := exportTable(b, n)
	out := filepath.Join(b.TempDir(), "out.parquet")
	size := fmt.Sprintf("rows=%d/files=%d", n, len(files))
	b.Run("impl=pqarrow/"+size, func(b *testing.B) {
		var bytes int64
		cpu0 := processCPU()
		for b.Loop() {
			bytes = plainExport(b, files, out)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(bytes), "bytes")
		b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	})
	b.Run("impl=skiplake/"+size, func(b *testing.B) {
		var errb strings.Builder
		cpu0 := processCPU()
		for b.Loop() {
			e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &errb}
			if code := run(context.Background(), e, []string{"scan", dir, "--format", "parquet", "--output", out}); code != 0 {
				b.Fatalf("scan exited %d: %s", code, errb.String())
			}
		}
		st, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(st.Size()), "bytes")
		b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	})
}

// processCPU is the user+system CPU time the process has used (every thread).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
