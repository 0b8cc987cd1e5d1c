package datafile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// benchBatches builds rows of the all-types schema in batches of 8192.
func benchBatches(b *testing.B, rows int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	for off := 0; off < rows; off += 8192 {
		recs = append(recs, allTypesBatch(b, memory.DefaultAllocator, min(8192, rows-off), off))
	}
	b.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}

// BenchmarkWrite compares this package's writer (byte-sized row groups through
// WriteBuffered, page index, 64 KiB pages) with plain pqarrow Write (one row group per
// batch) at the same codec.
func BenchmarkWrite(b *testing.B) {
	for _, rows := range []int{65536} {
		recs := benchBatches(b, rows)
		for _, page := range []int64{64 << 10, DefaultDataPageBytes, 1 << 20} {
			b.Run(fmt.Sprintf("impl=datafile/pages=%dKiB/rows=%d", page>>10, rows), func(b *testing.B) {
				b.ReportAllocs()
				var size int64
				for b.Loop() {
					w, err := NewWriter(io.Discard, recs[0].Schema(), WriterOptions{DataPageBytes: page})
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range recs {
						if err := w.Write(r); err != nil {
							b.Fatal(err)
						}
					}
					res, err := w.Close()
					if err != nil {
						b.Fatal(err)
					}
					size = res.Size
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(size), "file-bytes")
			})
		}
		b.Run(fmt.Sprintf("impl=pqarrow/rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(3))
				w, err := pqarrow.NewFileWriter(recs[0].Schema(), io.Discard, props,
					pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithCoerceTimestamps(arrow.Microsecond)))
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if err := w.Write(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkRead compares Reader.Read (schema conformance on every batch) with plain
// pqarrow.ReadTable on the same file.
func BenchmarkRead(b *testing.B) {
	for _, rows := range []int{65536} {
		recs := benchBatches(b, rows)
		var buf bytes.Buffer
		w, err := NewWriter(&buf, recs[0].Schema(), WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		want := recs[0].Schema()
		b.Run(fmt.Sprintf("impl=datafile/rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := int64(0)
				if err := r.Read(context.Background(), want, nil, func(rec arrow.RecordBatch, _ int64) error {
					n += rec.NumRows()
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				r.Close()
				if n != int64(rows) {
					b.Fatalf("read %d rows", n)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run(fmt.Sprintf("impl=pqarrow/rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil,
					pqarrow.ArrowReadProperties{BatchSize: DefaultBatchSize}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				tbl.Release()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkWriteLowCardinality writes one dictionary-encoded column — strings of
// three values (the flag column of the export and compaction benchmarks) or int32s
// of fifty (qty) — through pqarrow's encoder (impl=pqarrow) and the column-parallel
// one with its dictionary shortcut (impl=datafile, see dictShortcut): one column, so
// one core each; cpu-ms/op is the process's user+system CPU time per op.
func BenchmarkWriteLowCardinality(b *testing.B) {
	const rows = 1 << 20
	for _, col := range []string{"flag", "qty"} {
		var schema *arrow.Schema
		var recs []arrow.RecordBatch
		for off := 0; off < rows; off += 32 << 10 {
			var arr arrow.Array
			if col == "flag" {
				schema = arrow.NewSchema([]arrow.Field{{Name: col, Type: arrow.BinaryTypes.String}}, nil)
				sb := array.NewStringBuilder(memory.DefaultAllocator)
				for i := 0; i < 32<<10; i++ {
					sb.Append([]string{"A", "N", "R"}[(off+i)*7919%11%3])
				}
				arr = sb.NewArray()
				sb.Release()
			} else {
				schema = arrow.NewSchema([]arrow.Field{{Name: col, Type: arrow.PrimitiveTypes.Int32}}, nil)
				ib := array.NewInt32Builder(memory.DefaultAllocator)
				for i := 0; i < 32<<10; i++ {
					ib.Append(int32((off+i)*7919%53%50 + 1))
				}
				arr = ib.NewArray()
				ib.Release()
			}
			recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len())))
			arr.Release()
		}
		b.Cleanup(func() {
			for _, r := range recs {
				r.Release()
			}
		})
		for _, serial := range []bool{true, false} {
			name := "col=" + col + "/impl=datafile"
			if serial {
				name = "col=" + col + "/impl=pqarrow"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					w, err := NewWriter(io.Discard, schema, WriterOptions{Dictionary: DictionaryAll, serial: serial})
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range recs {
						if err := w.Write(r); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric((processCPU()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// processCPU is the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
