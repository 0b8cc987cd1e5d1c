package bloom

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortDigestsMatchesReference checks the radix sort against slices.Sort on
// random, duplicate-heavy, constant-byte and short inputs.
func TestSortDigestsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	gen := map[string]func(n int) []uint64{
		"uniform": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = r.Uint64()
			}
			return a
		},
		"few distinct": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = uint64(r.IntN(5)) << 40
			}
			return a
		},
		"small values (high bytes constant)": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = uint64(r.IntN(1 << 16))
			}
			return a
		},
		"descending": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = uint64(n - i)
			}
			return a
		},
	}
	var tmp []uint64
	for name, g := range gen {
		for _, n := range []int{0, 1, 7, radixMin - 1, radixMin, 5000, 40_000} {
			a := g(n)
			want := slices.Clone(a)
			slices.Sort(want)
			tmp = sortDigests(a, tmp)
			if !slices.Equal(a, want) {
				t.Fatalf("%s n=%d: radix sort differs from slices.Sort", name, n)
			}
		}
	}
}
