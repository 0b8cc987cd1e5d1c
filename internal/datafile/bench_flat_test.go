package datafile

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// scanShapeFile writes rows of the interop peer scan's shape (int64 id, timestamp,
// a 20-value category string, float64 amount, a 21-byte unique name and a 260-letter
// random payload; zstd, this package's writer defaults) and returns the file.
func scanShapeFile(tb testing.TB, rows int) ([]byte, *arrow.Schema) {
	tb.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "category", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "payload", Type: arrow.BinaryTypes.String},
	}, nil)
	rng := rand.New(rand.NewPCG(27, 4))
	var buf bytes.Buffer
	w, err := NewWriter(&buf, sc, WriterOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	payload := make([]byte, 260)
	for off := 0; off < rows; off += 8192 {
		n := min(8192, rows-off)
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := range n {
			id := int64(off + i)
			bld.Field(0).(*array.Int64Builder).Append(id)
			bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_735_689_600_000_000 + id*1000))
			bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("category-%d", id*31%20))
			bld.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(1_000_000)) / 100)
			bld.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("cust-%016x", rng.Uint64()))
			for j := range payload {
				payload[j] = 'a' + byte(rng.IntN(26))
			}
			bld.Field(5).(*array.StringBuilder).Append(string(payload))
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		if err := w.Write(rec); err != nil {
			tb.Fatal(err)
		}
		rec.Release()
	}
	if _, err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), sc
}

// BenchmarkReadScanShape reads a whole file of the interop peer scan's shape the
// way a table scan does (flat columns, batches from a BufferPool released as they
// arrive): the read path of the full-scan comparison with DuckDB, without the table
// layers around it. cpu-ms/op (the process's user+sys CPU per read, which a loaded
// machine disturbs less than wall time) is the figure to compare.
func BenchmarkReadScanShape(b *testing.B) {
	const rows = 200_000
	data, sc := scanShapeFile(b, rows)
	pool := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20})
	var decoded int64
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{Allocator: pool})
		if err != nil {
			b.Fatal(err)
		}
		n := int64(0)
		decoded = 0
		if err := r.Read(context.Background(), sc, nil, func(rec arrow.RecordBatch, _ int64) error {
			n += rec.NumRows()
			for _, c := range rec.Columns() {
				for _, buf := range c.Data().Buffers() {
					if buf != nil {
						decoded += int64(buf.Len())
					}
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		r.Close()
		if n != rows {
			b.Fatalf("read %d rows, want %d", n, rows)
		}
	}
	b.ReportMetric((processCPU()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(decoded)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
}
