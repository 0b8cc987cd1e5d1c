package rank

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// cpuNanos returns the process's user+system CPU time; on the shared dev VM
// wall-clock time is inflated by other jobs (cpu-ns less so).
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkRanks measures Boundaries.Ranks on 64Ki values against 16383
// buckets (a 64Ki sample, 14 bits); strings are 48 bytes with a shared
// 40-byte prefix.
func BenchmarkRanks(b *testing.B) {
	const rows = 1 << 16
	rng := rand.New(rand.NewPCG(1, 1))
	mem := memory.NewGoAllocator()
	ints := make([]int64, rows)
	strs := make([]string, rows)
	for i := range ints {
		ints[i] = rng.Int64()
		strs[i] = fmt.Sprintf("%040d%08d", 0, rng.IntN(1e8))
	}
	arrays := []struct {
		name string
		arr  arrow.Array
	}{
		{"int64", int64Array(b, mem, ints, nil)},
		{"string", stringArray(b, mem, strs)},
	}
	for _, a := range arrays {
		b.Run(fmt.Sprintf("type=%s/rows=%d", a.name, rows), func(b *testing.B) {
			s := NewSampler(rows, 1)
			if err := s.Add(a.arr); err != nil {
				b.Fatal(err)
			}
			bd, err := s.Boundaries(14)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]uint32, rows)
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				if err := bd.Ranks(a.arr, 0, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/value")
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N)/rows, "cpu-ns/value")
		})
		a.arr.Release()
	}
}

// BenchmarkSamplerAdd measures reservoir sampling of int64 values.
func BenchmarkSamplerAdd(b *testing.B) {
	const rows = 1 << 16
	rng := rand.New(rand.NewPCG(2, 2))
	ints := make([]int64, rows)
	for i := range ints {
		ints[i] = rng.Int64()
	}
	arr := int64Array(b, memory.NewGoAllocator(), ints, nil)
	defer arr.Release()
	b.Run(fmt.Sprintf("type=int64/rows=%d/k=4096", rows), func(b *testing.B) {
		s := NewSampler(4096, 1)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Add(arr); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/value")
	})
}
