package skipping

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// propertyN scales the randomized tests: SKIPLAKE_PROPERTY_N overrides the default
// (given for normal mode; -short divides it by 5).
func propertyN(t testing.TB, def int) int {
	if s := os.Getenv("SKIPLAKE_PROPERTY_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("SKIPLAKE_PROPERTY_N=%q is not a positive integer", s)
		}
		return n
	}
	if testing.Short() {
		return max(1, def/5)
	}
	return def
}

type propFile struct {
	live  []row
	rec   arrow.RecordBatch // live rows
	stats *stats.File
	pv    map[string]value.Value
}

// collectStats computes a file's statistics with the writer's collector.
func collectStats(t testing.TB, mem memory.Allocator, sc *arrow.Schema, rows []row, prefix int) *stats.File {
	c, err := stats.NewCollector(sc, []string{"part"}, stats.Config{NumIndexedCols: stats.IndexAllColumns, StringPrefixLength: prefix})
	if err != nil {
		t.Fatal(err)
	}
	rec := buildRecord(mem, sc, rows)
	defer rec.Release()
	if err := c.Update(rec); err != nil {
		t.Fatal(err)
	}
	return c.Result()
}

// degrade removes information the way real logs do: missing columns, bounds,
// null counts or record counts.
func degrade(r *rand.Rand, f *stats.File) {
	if r.IntN(20) == 0 {
		f.NumRecords = -1
	}
	for k, c := range f.Columns {
		switch r.IntN(25) {
		case 0:
			delete(f.Columns, k)
		case 1:
			c.Min = value.Null()
		case 2:
			c.Max = value.Null()
		case 3:
			c.HasNullCount, c.NullCount = false, 0
		}
	}
}

func genFiles(t testing.TB, r *rand.Rand, mem memory.Allocator, sc *arrow.Schema, nFiles int) []*propFile {
	files := make([]*propFile, nFiles)
	for i := range files {
		nullPct := map[string]int{}
		for _, l := range leaves(sc) {
			nullPct[l.path[len(l.path)-1]] = []int{0, 0, 15, 50, 100}[r.IntN(5)]
		}
		n := r.IntN(13)
		if r.IntN(40) == 0 {
			n = 0
		}
		live := genRows(r, sc, n, nullPct)
		part := genValue(r, arrow.PrimitiveTypes.Int32, 15)
		for _, rw := range live {
			rw["part"] = part
		}
		prefix := []int{3, 8, 32}[r.IntN(3)]
		pf := &propFile{live: live, pv: map[string]value.Value{"part": part}}
		if r.IntN(5) == 0 {
			// deletion vectors: stats over the physical rows, bounds not tight
			phys := append(append([]row(nil), live...), genRows(r, sc, 1+r.IntN(5), nullPct)...)
			for _, rw := range phys {
				rw["part"] = part
			}
			pf.stats = collectStats(t, mem, sc, phys, prefix)
			pf.stats.TightBounds = false
		} else {
			pf.stats = collectStats(t, mem, sc, live, prefix)
		}
		degrade(r, pf.stats)
		if r.IntN(30) == 0 {
			pf.stats = nil // a file without stats
		}
		pf.rec = buildRecord(mem, sc, live)
		files[i] = pf
	}
	return files
}

// TestFileVerdictsAreSound checks invariants S1 and S2 for files against a
// brute-force oracle: for random files (stats computed by the writer's collector,
// some degraded or loose) and random predicates, a file with a row the exact
// evaluator selects is never CannotMatch, and a MustMatch file has every row
// selected. It also checks that the columnar FileIndex agrees with the reference
// EvaluateFile.
func TestFileVerdictsAreSound(t *testing.T) {
	sc := propSchema()
	ls := leaves(sc)
	r := rand.New(rand.NewPCG(20261129, 1))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	nFiles, nPreds := 500, propertyN(t, 220)
	files := genFiles(t, r, mem, sc, nFiles)
	defer func() {
		for _, f := range files {
			f.rec.Release()
		}
	}()
	fstats := make([]*stats.File, nFiles)
	pvs := make([]map[string]value.Value, nFiles)
	for i, f := range files {
		fstats[i], pvs[i] = f.stats, f.pv
	}
	// half the predicates see "part" as a partition column, half only stats
	withParts := NewFileIndex(fstats, sc, WithPartitionValues(pvs))
	statsOnly := NewFileIndex(fstats, sc)
	out := make([]Verdict, nFiles)
	checks, skipped, must := 0, 0, 0
	for k := 0; k < nPreds; k++ {
		e := genPredicate(r, ls, 2)
		b, err := expr.Bind(e, sc)
		if err != nil {
			t.Fatalf("Bind(%s): %v", e, err)
		}
		usePV := k%2 == 0
		idx := statsOnly
		if usePV {
			idx = withParts
		}
		if err := idx.Evaluate(b, out); err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			var pv map[string]value.Value
			if usePV {
				pv = f.pv
			}
			ref := EvaluateFile(b, f.stats, pv, nil)
			if ref != out[i] {
				t.Fatalf("predicate %s, file %d: FileIndex says %v, EvaluateFile says %v (stats %+v)", b, i, out[i], ref, f.stats)
			}
			sel, err := b.Evaluate(f.rec)
			if err != nil {
				t.Fatal(err)
			}
			cnt := sel.Count()
			switch {
			case out[i] == CannotMatch && cnt > 0:
				t.Fatalf("S1 violated: predicate %s (from %s), file %d skipped but %d of %d rows match\nstats: %s",
					b, e, i, cnt, len(f.live), describeStats(f.stats))
			case out[i] == MustMatch && cnt != len(f.live):
				t.Fatalf("S2 violated: predicate %s (from %s), file %d must-match but only %d of %d rows match\nstats: %s",
					b, e, i, cnt, len(f.live), describeStats(f.stats))
			}
			checks++
			if out[i] == CannotMatch {
				skipped++
			}
			if out[i] == MustMatch {
				must++
			}
		}
	}
	t.Logf("%d (file, predicate) checks: %d cannot-match, %d must-match", checks, skipped, must)
	if !testing.Short() && checks < 100000 && os.Getenv("SKIPLAKE_PROPERTY_N") == "" {
		t.Fatalf("only %d checks; the property test must run at least 100000", checks)
	}
	if skipped == 0 || must == 0 {
		t.Fatalf("the generator never produced a skip (%d) or a must (%d): the test would prove nothing", skipped, must)
	}
}

func describeStats(f *stats.File) string {
	if f == nil {
		return "<no stats>"
	}
	s := "numRecords=" + strconv.FormatInt(f.NumRecords, 10) + " tight=" + strconv.FormatBool(f.TightBounds)
	for k, c := range f.Columns {
		s += "\n  " + k + ": min=" + c.Min.String() + " max=" + c.Max.String()
		if c.HasNullCount {
			s += " nc=" + strconv.FormatInt(c.NullCount, 10)
		}
	}
	return s
}
