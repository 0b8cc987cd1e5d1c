package skipping

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// lazyFixture is a set of files whose statistics are JSON (the writer's, rendered by
// stats.ToJSON; some malformed, some absent) and the same statistics parsed whole.
type lazyFixture struct {
	json   []string
	parsed []*stats.File
	pvs    []map[string]value.Value
	parser *stats.Parser
}

func newLazyFixture(t *testing.T, r *rand.Rand, n int) *lazyFixture {
	t.Helper()
	sc := propSchema()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	files := genFiles(t, r, mem, sc, n)
	fx := &lazyFixture{json: make([]string, n), parsed: make([]*stats.File, n), pvs: make([]map[string]value.Value, n),
		parser: stats.NewParser(sc, stats.ParseOptions{})}
	for i, f := range files {
		f.rec.Release()
		fx.pvs[i] = f.pv
		switch {
		case f.stats == nil:
			continue
		case r.IntN(25) == 0:
			fx.json[i] = `{"numRecords":3,"minValues":{"id":1},` // malformed: no statistics (S1)
		default:
			js, err := stats.ToJSON(f.stats, sc)
			if err != nil {
				t.Fatal(err)
			}
			fx.json[i] = js
		}
		if p, err := fx.parser.Parse(fx.json[i]); err == nil {
			fx.parsed[i] = p
		}
	}
	return fx
}

// TestLazyFileIndexMatchesEager checks NewLazyFileIndex against NewFileIndex over
// the same statistics: for random predicates evaluated one after another on one lazy
// index (so columns are converted a few at a time, and reused), every verdict is
// the eager index's, with and without partition values.
func TestLazyFileIndexMatchesEager(t *testing.T) {
	sc := propSchema()
	r := rand.New(rand.NewPCG(20261206, 27))
	fx := newLazyFixture(t, r, 300)
	ls := leaves(sc)
	for _, parts := range []bool{false, true} {
		var opts []FileIndexOption
		if parts {
			opts = append(opts, WithPartitionValues(fx.pvs))
		}
		eager := NewFileIndex(fx.parsed, sc, opts...)
		lazy := NewLazyFileIndex(fx.json, nil, fx.parser, sc, opts...)
		sameVerdicts(t, fmt.Sprintf("partitions %v", parts), r, propertyN(t, 200), ls, sc, eager, lazy, fx.json)
	}
}

func firstDiff(a, b []Verdict) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestLazyPlannerParsesOnlyFilterColumns counts what a lazy Planner parses: nothing
// for a plan without a predicate, exactly the columns a predicate reads (one pass
// over the files per plan that needs a new column, none for a column already
// converted), numRecords alone for a predicate on partition columns only. Plans
// and reasons are those of a Planner given the statistics parsed whole.
func TestLazyPlannerParsesOnlyFilterColumns(t *testing.T) {
	sc := propSchema()
	fx := newLazyFixture(t, rand.New(rand.NewPCG(7, 27)), 200)
	eagerFiles := make([]PlanFile, len(fx.json))
	lazyFiles := make([]PlanFile, len(fx.json))
	for i := range fx.json {
		eagerFiles[i] = PlanFile{Path: fmt.Sprint(i), Size: 1, Stats: fx.parsed[i], PartitionValues: fx.pvs[i]}
		lazyFiles[i] = PlanFile{Path: fmt.Sprint(i), Size: 1, StatsJSON: fx.json[i], PartitionValues: fx.pvs[i]}
	}
	eager := NewPlanner(eagerFiles, sc, PlannerOptions{Partitioned: true})
	lazy := NewPlanner(lazyFiles, sc, PlannerOptions{Partitioned: true, Stats: fx.parser})
	lz := lazy.index.lazy
	steps := []struct {
		filter string
		passes int      // parses so far
		keys   []string // columns converted so far, in order
	}{
		{"", 0, nil},
		{"id > 3", 1, []string{"id"}},
		{"id < 2 OR id IS NULL", 1, []string{"id"}},
		{"i = 4 AND id > 0", 2, []string{"id", "i"}},
		{"part = 3", 2, []string{"id", "i"}},
		{"s LIKE 'a%' OR dbl > 1.5", 3, []string{"id", "i", "dbl", "s"}},
	}
	for _, st := range steps {
		var b *expr.Bound
		if st.filter != "" {
			e, err := expr.Parse(st.filter)
			if err != nil {
				t.Fatal(err)
			}
			if b, err = expr.Bind(e, sc); err != nil {
				t.Fatal(err)
			}
		}
		want, err := eager.Plan(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lazy.Plan(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Files {
			if want.Files[i] != got.Files[i] {
				t.Fatalf("%q, file %d: lazy %+v, eager %+v", st.filter, i, got.Files[i], want.Files[i])
			}
		}
		lz.mu.Lock()
		passes, keys := lz.parses, slices.Clone(lz.keys)
		lz.mu.Unlock()
		if passes != st.passes || !slices.Equal(keys, st.keys) {
			t.Fatalf("after %q: %d parse passes over columns %q, want %d over %q", st.filter, passes, keys, st.passes, st.keys)
		}
	}
	// The one case with no column to convert and nothing parsed before: a predicate
	// on the partition column still reads numRecords (an empty file cannot match).
	fresh := NewPlanner(lazyFiles, sc, PlannerOptions{Partitioned: true, Stats: fx.parser})
	e, err := expr.Parse("part > 3")
	if err != nil {
		t.Fatal(err)
	}
	b, err := expr.Bind(e, sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Plan(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if lz := fresh.index.lazy; lz.parses != 1 || len(lz.keys) != 0 {
		t.Fatalf("partition-only predicate: %d passes over %q, want 1 over none", lz.parses, lz.keys)
	}
	for i := range fx.json {
		if s := lazy.Stats(i); (s == nil) != (fx.parsed[i] == nil) || s != nil && len(s.Columns) != len(fx.parsed[i].Columns) {
			t.Fatalf("Stats(%d) = %+v, want the whole parse %+v", i, s, fx.parsed[i])
		}
	}
}

// TestLazyFileIndexConcurrent evaluates predicates on distinct columns of one lazy
// index from many goroutines (run with -race): each gets the eager verdicts.
func TestLazyFileIndexConcurrent(t *testing.T) {
	sc := propSchema()
	fx := newLazyFixture(t, rand.New(rand.NewPCG(11, 27)), 200)
	eager := NewFileIndex(fx.parsed, sc)
	lazy := NewLazyFileIndex(fx.json, nil, fx.parser, sc)
	ls := leaves(sc)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			want, got := make([]Verdict, len(fx.json)), make([]Verdict, len(fx.json))
			for range 20 {
				b, err := expr.Bind(genPredicate(r, ls, 1), sc)
				if err != nil {
					errs <- err
					return
				}
				_ = eager.Evaluate(b, want)
				_ = lazy.Evaluate(b, got)
				if i := firstDiff(want, got); i >= 0 {
					errs <- fmt.Errorf("predicate %s, file %d: lazy %v, eager %v", b, i, got[i], want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestLazyFileIndexParsesConcurrently checks the lazy index over more files than one
// goroutine parses at a time (statistics parsed over file ranges concurrently) against
// the eager index, with 1 and 4 goroutines: the same verdicts and the same columns
// converted.
func TestLazyFileIndexParsesConcurrently(t *testing.T) {
	sc := propSchema()
	r := rand.New(rand.NewPCG(20261206, 2727))
	fx := newLazyFixture(t, r, 250)
	// Repeat the fixture past three chunks, so that ranges end mid-way and the last is short.
	big := &lazyFixture{parser: fx.parser}
	for len(big.json) < 3*parseChunk+100 {
		big.json = append(big.json, fx.json...)
		big.parsed = append(big.parsed, fx.parsed...)
		big.pvs = append(big.pvs, fx.pvs...)
	}
	ls := leaves(sc)
	eager := NewFileIndex(big.parsed, sc)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var keys [][]string
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		pr := rand.New(rand.NewPCG(5, 27))
		lazy := NewLazyFileIndex(big.json, nil, big.parser, sc)
		sameVerdicts(t, fmt.Sprintf("GOMAXPROCS %d", procs), pr, propertyN(t, 40), ls, sc, eager, lazy, big.json)
		keys = append(keys, slices.Clone(lazy.lazy.keys))
	}
	if !slices.Equal(keys[0], keys[1]) {
		t.Errorf("columns converted: %v with 1 goroutine, %v with 4", keys[0], keys[1])
	}
}

// sameVerdicts evaluates n random predicates over the leaves ls with both indexes and
// fails at the first file whose verdicts differ, naming it (what, the predicate, the
// file's stats JSON).
func sameVerdicts(t *testing.T, what string, r *rand.Rand, n int, ls []leaf, sc *arrow.Schema, eager, lazy *FileIndex, statsJSON []string) {
	t.Helper()
	want, got := make([]Verdict, len(statsJSON)), make([]Verdict, len(statsJSON))
	for k := range n {
		b, err := expr.Bind(genPredicate(r, ls, 2), sc)
		if err != nil {
			t.Fatal(err)
		}
		if err := eager.Evaluate(b, want); err != nil {
			t.Fatal(err)
		}
		if err := lazy.Evaluate(b, got); err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(want, got); i >= 0 {
			t.Fatalf("%s, predicate %d %s, file %d (stats %q): lazy %v, eager %v", what, k, b, i, statsJSON[i], got[i], want[i])
		}
	}
}
