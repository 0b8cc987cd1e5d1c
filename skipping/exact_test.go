package skipping

import (
	"runtime"
	"testing"

	"github.com/skiplake/skiplake/value"
)

// TestExactValuesRanges checks the exact partition column filled over ranges of
// files on several goroutines against the same fill on one: the same values, found
// by exact and case-insensitive name, and a file without the column anywhere (first
// range, last range) makes it fall back to statistics either way.
func TestExactValuesRanges(t *testing.T) {
	n := 3*exactMinRange + 11
	shared := []map[string]value.Value{
		{"day": value.Date(1)}, {"Day": value.Date(2)}, {"day": value.Null()}, {"day": value.Date(4), "x": value.Int64(1)},
	}
	for _, missing := range []int{-1, 5, exactMinRange + 3, n - 1} {
		parts := make([]map[string]value.Value, n)
		for i := range parts {
			parts[i] = shared[(i/7)%len(shared)]
		}
		if missing >= 0 {
			parts[missing] = map[string]value.Value{"other": value.Int64(0)}
		}
		run := func(procs int) ([]value.Value, bool) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			out := make([]value.Value, n)
			return out, exactValues(out, parts, "day")
		}
		one, okOne := run(1)
		many, okMany := run(4)
		if okOne != okMany || okOne != (missing < 0) {
			t.Fatalf("missing at %d: complete %v on one goroutine, %v on several", missing, okOne, okMany)
		}
		if !okOne {
			continue
		}
		for i := range one {
			if one[i].String() != many[i].String() || one[i].String() != lookupMust(t, parts[i]).String() {
				t.Fatalf("file %d: %v on one goroutine, %v on several", i, one[i], many[i])
			}
		}
	}
}

func lookupMust(t *testing.T, pv map[string]value.Value) value.Value {
	t.Helper()
	v, ok := lookupPartition(pv, "day")
	if !ok {
		t.Fatal("no day")
	}
	return v
}
