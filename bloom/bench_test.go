package bloom

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

// BenchmarkProbe measures testing one precomputed literal against many per-file
// filters (the planning loop) and, for comparison, hashing the literal per filter.
func BenchmarkProbe(b *testing.B) {
	for _, ndv := range []int{1_000, 100_000} {
		const files = 256
		filters := make([]*Filter, files)
		for fi := range filters {
			bl, _ := NewBuilder("id", uint(ndv), 0.01)
			for i := 0; i < ndv; i++ {
				_ = bl.Add(value.Int64(int64(fi*ndv + i)))
			}
			filters[fi], _ = bl.Finish()
		}
		lit := value.Int64(-42) // absent everywhere: the common case when skipping
		b.Run(fmt.Sprintf("precomputed/ndv=%d/files=%d", ndv, files), func(b *testing.B) {
			p := NewProbe(lit)
			b.ReportAllocs()
			n, hits := 0, 0
			for b.Loop() {
				if filters[n%files].MightContainProbe(&p) {
					hits++
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/probe")
			b.ReportMetric(float64(hits)/float64(n), "fp-rate")
		})
		b.Run(fmt.Sprintf("hash-each/ndv=%d/files=%d", ndv, files), func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				filters[n%files].MightContain(lit)
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/probe")
		})
	}
}

// BenchmarkBuild measures building one file's filter from an int64 Arrow column of
// distinct values through AddArray and Finish.
func BenchmarkBuild(b *testing.B) {
	for _, rows := range []int{100_000} {
		mem := memory.NewGoAllocator()
		ib := array.NewInt64Builder(mem)
		for i := 0; i < rows; i++ {
			ib.Append(int64(i) * 7919)
		}
		arr := ib.NewArray()
		ib.Release()
		b.Run(fmt.Sprintf("rows=%.0e", float64(rows)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bl, _ := NewBuilder("id", 0, 0.01)
				if err := bl.AddArray(arr); err != nil {
					b.Fatal(err)
				}
				if _, err := bl.Finish(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		arr.Release()
	}
}
