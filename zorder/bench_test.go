package zorder

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
)

// cpuNanos returns the process's user+system CPU time. On the shared 2-core
// dev VM wall-clock ns/key is inflated by other jobs; cpu-ns/key less so.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkMorton measures the batch hot path with 16 bits per column
// (cols=2..4 use the 64-bit API, cols=8 the 128-bit one). ns/key is the cost
// of one key.
func BenchmarkMorton(b *testing.B) {
	const rows = 4096
	const bits = 16
	for _, cols := range []int{2, 3, 4, 8} {
		b.Run(fmt.Sprintf("cols=%d/bits=%d/rows=%d", cols, bits, rows), func(b *testing.B) {
			e, err := NewEncoder(cols, bits)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(cols)))
			in := make([][]uint32, cols)
			for c := range in {
				in[c] = make([]uint32, rows)
				for i := range in[c] {
					in[c][i] = uint32(rng.IntN(1 << bits))
				}
			}
			k64 := make([]uint64, rows)
			k128 := make([]Key, rows)
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				if cols*bits <= 64 {
					err = e.EncodeBatch64(in, k64)
				} else {
					err = e.EncodeBatch(in, k128)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/key")
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N)/rows, "cpu-ns/key")
		})
	}
}

// BenchmarkMortonReference is the bit-by-bit oracle, for comparison: the same 4096
// random points per op as BenchmarkMorton, so ns/key averages thousands of keys at
// any -benchtime (one point per op at -benchtime 5x timed five cold calls and
// overstated the speed-up 1.4-7x).
func BenchmarkMortonReference(b *testing.B) {
	const rows = 4096
	for _, cols := range []int{2, 4, 8} {
		b.Run(fmt.Sprintf("cols=%d/bits=16/rows=%d", cols, rows), func(b *testing.B) {
			bits := equalBits(cols, 16)
			rng := rand.New(rand.NewPCG(1, uint64(cols)))
			pts := make([][]uint32, rows)
			for i := range pts {
				pts[i] = make([]uint32, cols)
				for c := range pts[i] {
					pts[i][c] = uint32(rng.IntN(1 << 16))
				}
			}
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				for _, p := range pts {
					if _, err := ReferenceEncode(bits, p); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/key")
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N)/rows, "cpu-ns/key")
		})
	}
}
