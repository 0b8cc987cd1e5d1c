package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

func benchScalarRecord(n int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	r := rand.New(rand.NewPCG(1, 1))
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer rb.Release()
	for range n {
		if r.IntN(10) == 0 {
			rb.Field(0).AppendNull()
		} else {
			rb.Field(0).(*array.Int32Builder).Append(int32(r.IntN(1000)))
		}
		rb.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(r.IntN(1_000_000))))
		rb.Field(2).(*array.Float64Builder).Append(r.Float64() * 100)
		rb.Field(3).(*array.StringBuilder).Append([]string{"alpha", "beta", "gamma"}[r.IntN(3)])
	}
	return rb.NewRecordBatch()
}

var benchScalarExprs = []struct{ name, expr string }{
	{"int-add", "qty + 1"},
	{"double-mul", "x * 1.5e0 + 2e0"},
	{"decimal-mul", "price * qty"},
	{"decimal-div", "price / 3"},
	{"concat", "s || '-' || CAST(qty AS string)"},
	{"case", "CASE WHEN qty > 500 THEN x * 2e0 ELSE x END"},
}

// BenchmarkScalarEvaluate measures vectorised evaluation of UPDATE-style expressions
// over a 64Ki-row batch (10% NULL in qty), reporting rows/s.
func BenchmarkScalarEvaluate(b *testing.B) {
	benchScalar(b, func(b *testing.B, bs *BoundScalar, rec arrow.RecordBatch) func() {
		return func() {
			arr, err := bs.Evaluate(rec, nil, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			arr.Release()
		}
	})
}

// BenchmarkScalarEvaluateRow is the same work through the row oracle (EvaluateRow on
// values already extracted), the baseline the vectorised path is compared with.
func BenchmarkScalarEvaluateRow(b *testing.B) {
	benchScalar(b, func(b *testing.B, bs *BoundScalar, rec arrow.RecordBatch) func() {
		all := make([][]value.Value, rec.NumRows())
		for i := range all {
			v, err := bs.RowValues(rec, i)
			if err != nil {
				b.Fatal(err)
			}
			all[i] = v
		}
		return func() {
			for _, row := range all {
				if _, err := bs.EvaluateRow(row); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// benchScalar runs one sub-benchmark per expression; prepare returns the timed work.
func benchScalar(b *testing.B, prepare func(*testing.B, *BoundScalar, arrow.RecordBatch) func()) {
	const n = 1 << 16
	rec := benchScalarRecord(n)
	defer rec.Release()
	for _, c := range benchScalarExprs {
		bs, err := BindScalar(mustParseScalar(b, c.expr), rec.Schema())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("expr=%s/rows=%d", c.name, n), func(b *testing.B) {
			work := prepare(b, bs, rec)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				work()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func mustParseScalar(tb testing.TB, s string) Expr {
	e, err := ParseScalar(s)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}
