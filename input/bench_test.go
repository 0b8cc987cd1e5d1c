package input_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/input"
)

// BenchmarkCSVIntegers reads 100,000 CSV rows of four integer columns of every
// width (the per-value parse and append path of CSV ingest).
func BenchmarkCSVIntegers(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int8},
		{Name: "b", Type: arrow.PrimitiveTypes.Int16},
		{Name: "c", Type: arrow.PrimitiveTypes.Int32},
		{Name: "d", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	var buf bytes.Buffer
	buf.WriteString("a,b,c,d\n")
	const rows = 100_000
	for i := range rows {
		fmt.Fprintf(&buf, "%d,%d,%d,%d\n", i%100, i%30000, i*7, int64(i)*1_000_003)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := input.NewCSVReader("bench.csv", bytes.NewReader(data), schema, input.Options{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n += int(r.RecordBatch().NumRows())
		}
		if err := r.Err(); err != nil || n != rows {
			b.Fatalf("read %d rows: %v", n, err)
		}
		r.Release()
	}
}
