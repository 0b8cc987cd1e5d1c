package hilbert

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

// BenchmarkHilbert measures the batch hot path with 16 bits per dimension
// (dims=2..4 use the 64-bit API, dims=8 the 128-bit one and the loop path).
func BenchmarkHilbert(b *testing.B) {
	const rows = 4096
	const bits = 16
	for _, dims := range []int{2, 3, 4, 8} {
		b.Run(fmt.Sprintf("dims=%d/bits=%d/rows=%d", dims, bits, rows), func(b *testing.B) {
			c, err := New(dims, bits)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(2, uint64(dims)))
			in := make([][]uint32, dims)
			for d := range in {
				in[d] = make([]uint32, rows)
				for i := range in[d] {
					in[d][i] = uint32(rng.IntN(1 << bits))
				}
			}
			k64 := make([]uint64, rows)
			k128 := make([]Key, rows)
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				if dims*bits <= 64 {
					err = c.EncodeBatch64(in, k64)
				} else {
					err = c.EncodeBatch(in, k128)
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

// BenchmarkHilbertReference is the reference encoder, for comparison: the same 4096
// random points per op as BenchmarkHilbert, so ns/key averages thousands of keys at
// any -benchtime (one point per op at -benchtime 5x timed five cold calls and
// overstated the speed-up 1.4-7x).
func BenchmarkHilbertReference(b *testing.B) {
	const rows = 4096
	for _, dims := range []int{2, 4, 8} {
		b.Run(fmt.Sprintf("dims=%d/bits=16/rows=%d", dims, rows), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, uint64(dims)))
			pts := make([][]uint32, rows)
			for i := range pts {
				pts[i] = make([]uint32, dims)
				for d := range pts[i] {
					pts[i][d] = uint32(rng.IntN(1 << 16))
				}
			}
			b.ReportAllocs()
			cpu0 := cpuNanos()
			for b.Loop() {
				for _, p := range pts {
					if _, err := ReferenceEncode(dims, 16, p); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/key")
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N)/rows, "cpu-ns/key")
		})
	}
}
