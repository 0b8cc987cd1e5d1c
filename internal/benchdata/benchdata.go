// Package benchdata generates the rows of skiplake's write, export and rewrite
// benchmarks (table, cmd/skiplake, interop): six columns shaped like the
// measurements of the performance issue — a sorted int64 key, a small int32, a
// high-cardinality double, a three-valued string, a mid-cardinality string and a
// date — from one fixed seed, so every benchmark and every run sees the same rows.
// It is used by tests and benchmarks only.
package benchdata

import (
	"fmt"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Schema is the benchmark rows' schema: id, qty, price, flag, comment, day.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64},
	{Name: "flag", Type: arrow.BinaryTypes.String},
	{Name: "comment", Type: arrow.BinaryTypes.String},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
}, nil)

// Batches returns rows rows of Schema in batches of batch rows (the last one
// shorter). Row i has id i, and the other values are drawn from one seeded generator
// in row order, so the rows are the same whatever the batch size. The caller releases
// the batches.
func Batches(mem memory.Allocator, rows, batch int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(11, 12))
	var out []arrow.RecordBatch
	for start := 0; start < rows; start += batch {
		m := min(batch, rows-start)
		b := array.NewRecordBuilder(mem, Schema)
		for i := 0; i < m; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(start + i))
			b.Field(1).(*array.Int32Builder).Append(int32(rng.IntN(50) + 1))
			b.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(10_000_000)) / 100)
			b.Field(3).(*array.StringBuilder).Append([]string{"A", "N", "R"}[rng.IntN(3)])
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("comment %d about item %d", rng.IntN(1000), rng.IntN(100000)))
			b.Field(5).(*array.Date32Builder).Append(arrow.Date32(8000 + rng.IntN(2500)))
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}
