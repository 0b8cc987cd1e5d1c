package skipping

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// BenchmarkFileIndex measures deciding a 3-conjunct predicate (long range, double
// bound, string prefix) for every file of a snapshot, and reports files/s and the
// fraction of files skipped.
func BenchmarkFileIndex(b *testing.B) {
	for _, n := range []int{1_000_000} {
		b.Run(fmt.Sprintf("files=%d/conjuncts=3", n), func(b *testing.B) {
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			}, nil)
			r := rand.New(rand.NewPCG(1, 2))
			files := make([]*stats.File, n)
			letters := "abcdefghijklmnopqrstuvwxyz"
			for i := range files {
				lo := int64(i) * 1000
				x := r.Float64() * 100
				c := letters[r.IntN(26)]
				files[i] = &stats.File{NumRecords: 1000, TightBounds: true, Columns: map[string]*stats.Column{
					"id": {Min: value.Int64(lo), Max: value.Int64(lo + 999), HasNullCount: true},
					"x":  {Min: value.Float64(x), Max: value.Float64(x + 10), HasNullCount: true, NullCount: int64(r.IntN(2))},
					"s":  {Min: value.String(string(c) + "aa"), Max: value.String(string(c) + "zz"), HasNullCount: true},
				}}
			}
			idx := NewFileIndex(files, sc)
			pred, err := expr.Bind(expr.MustParse("id >= 250000000 AND x < 50.5 AND s LIKE 'q%'"), sc)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]Verdict, n)
			b.ReportAllocs()
			total := 0
			for b.Loop() {
				if err := idx.Evaluate(pred, out); err != nil {
					b.Fatal(err)
				}
				total += n
			}
			skipped := 0
			for _, v := range out {
				if v == CannotMatch {
					skipped++
				}
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "files/s")
			b.ReportMetric(100*float64(skipped)/float64(n), "skipped%")
		})
	}
}
