package scanexec

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestParallelRanges checks that parallelRanges covers [0, n) exactly once, in ranges
// of at most chunk elements, with 1 and 4 goroutines.
func TestParallelRanges(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		for _, tc := range []struct{ n, chunk int }{{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 4096}, {10000, 4096}, {1000, 3}, {7, 1}} {
			seen := make([]atomic.Int32, tc.n)
			parallelRanges(tc.n, tc.chunk, func(lo, hi int) {
				if hi-lo > tc.chunk || lo >= hi && tc.n > 0 {
					t.Errorf("n %d chunk %d: range [%d, %d)", tc.n, tc.chunk, lo, hi)
				}
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("GOMAXPROCS %d, n %d chunk %d: index %d visited %d times", procs, tc.n, tc.chunk, i, c)
				}
			}
		}
	}
}
