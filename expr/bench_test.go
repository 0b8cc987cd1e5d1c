package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkEvaluate measures the exact recheck: a 3-conjunct predicate over a batch
// of long, double and string columns with 10% nulls.
func BenchmarkEvaluate(b *testing.B) {
	for _, n := range []int{1_000_000} {
		b.Run(fmt.Sprintf("rows=%d/conjuncts=3", n), func(b *testing.B) {
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			}, nil)
			r := rand.New(rand.NewPCG(1, 1))
			rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
			defer rb.Release()
			ids := rb.Field(0).(*array.Int64Builder)
			xs := rb.Field(1).(*array.Float64Builder)
			ss := rb.Field(2).(*array.StringBuilder)
			words := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
			for i := 0; i < n; i++ {
				if r.IntN(10) == 0 {
					ids.AppendNull()
				} else {
					ids.Append(int64(i))
				}
				xs.Append(r.Float64() * 100)
				ss.Append(words[r.IntN(len(words))])
			}
			rec := rb.NewRecordBatch()
			defer rec.Release()
			bd, err := Bind(MustParse("id >= 1000 AND x < 50.5 AND s <> 'beta'"), sc)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				sel, err := bd.Evaluate(rec)
				if err != nil {
					b.Fatal(err)
				}
				rows += sel.Len()
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
