package skipping

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

// planFixture is a set of random files (genFiles) with Bloom filters on "id" and
// "s" for some of them, stored in a few index files, plus damaged coverage: tags
// naming a missing index file, tags without the column, index files without the
// file's entry.
type planFixture struct {
	files   []*propFile
	plan    []PlanFile
	indexes map[string][]byte
}

func newPlanFixture(t *testing.T, r *rand.Rand, mem memory.Allocator, n int) *planFixture {
	t.Helper()
	sc := propSchema()
	fx := &planFixture{files: genFiles(t, r, mem, sc, n), indexes: map[string][]byte{}}
	const nIndexes = 4
	entries := make([][]bloom.Entry, nIndexes)
	fx.plan = make([]PlanFile, n)
	for i, f := range fx.files {
		path := fmt.Sprintf("part-%05d.parquet", i)
		fx.plan[i] = PlanFile{Path: path, Size: int64(100 + i), Stats: f.stats, PartitionValues: f.pv}
		if r.IntN(3) == 0 {
			continue // not covered
		}
		ix := r.IntN(nIndexes)
		cols := []string{"id", "s"}[:1+r.IntN(2)]
		for _, c := range cols {
			b, err := bloom.NewBuilder(c, 0, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			col := f.rec.Column(f.rec.Schema().FieldIndices(c)[0])
			if err := b.AddArray(col); err != nil {
				t.Fatal(err)
			}
			flt, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if r.IntN(25) != 0 { // sometimes the index lacks the entry the tag promises
				entries[ix] = append(entries[ix], bloom.Entry{DataPath: path, Filter: flt})
			}
		}
		idxPath := fmt.Sprintf("%sindex-%d.bin", bloom.IndexDir, ix)
		if r.IntN(30) == 0 {
			idxPath = bloom.IndexDir + "missing.bin"
		}
		tag, err := bloom.EncodeTag(bloom.Tag{Path: idxPath, Columns: cols})
		if err != nil {
			t.Fatal(err)
		}
		fx.plan[i].BloomTag = tag
	}
	for ix, es := range entries {
		if len(es) == 0 {
			continue
		}
		data, err := bloom.MarshalIndex(es...)
		if err != nil {
			t.Fatal(err)
		}
		fx.indexes[fmt.Sprintf("%sindex-%d.bin", bloom.IndexDir, ix)] = data
	}
	return fx
}

func (fx *planFixture) release() {
	for _, f := range fx.files {
		f.rec.Release()
	}
}

func (fx *planFixture) load(_ context.Context, path string) ([]byte, error) {
	if b, ok := fx.indexes[path]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%s: %w", path, os.ErrNotExist)
}

// genPlanPredicate mixes the generic predicates with equality and IN on the
// Bloom columns (literals drawn from the files' own values half of the time).
func genPlanPredicate(r *rand.Rand, ls []leaf, fx *planFixture) expr.Expr {
	if r.IntN(2) == 0 {
		return genPredicate(r, ls, 2)
	}
	col := []string{"id", "s"}[r.IntN(2)]
	lit := func() value.Value {
		f := fx.files[r.IntN(len(fx.files))]
		if len(f.live) > 0 && r.IntN(2) == 0 {
			return f.live[r.IntN(len(f.live))][col]
		}
		if col == "id" {
			return genLiteral(r, propSchema().Field(0).Type)
		}
		return genLiteral(r, propSchema().Field(6).Type)
	}
	var e expr.Expr
	if r.IntN(2) == 0 {
		e = expr.Compare(expr.OpEq, expr.Col(col), expr.Lit(lit()))
	} else {
		list := make([]expr.Expr, 1+r.IntN(3))
		for i := range list {
			list[i] = expr.Lit(lit())
		}
		e = expr.In(expr.Col(col), list...)
	}
	switch r.IntN(3) {
	case 0:
		return expr.And(e, genPredicate(r, ls, 1))
	case 1:
		return expr.Or(e, expr.Compare(expr.OpEq, expr.Col(col), expr.Lit(lit())))
	}
	return e
}

// TestPlannerVerdictsAreSound checks the Planner against a brute-force oracle
// (invariants S1, S2, B1): a file holding a row the exact evaluator selects is never
// CannotMatch, a MustMatch file has every row selected, the pass named as deciding
// a verdict is consistent with it, the stats pass agrees with the reference
// EvaluateFile, and the level counters add up.
func TestPlannerVerdictsAreSound(t *testing.T) {
	ctx := context.Background()
	sc := propSchema()
	ls := leaves(sc)
	r := rand.New(rand.NewPCG(20261130, 7))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	nFiles, nPreds := 300, propertyN(t, 400)
	fx := newPlanFixture(t, r, mem, nFiles)
	defer fx.release()
	pl := NewPlanner(fx.plan, sc, PlannerOptions{Partitioned: true, Bloom: bloom.NewCache(fx.load, bloom.CacheOptions{})})

	var checks, byLevel [4]int
	warned := false
	bloomSkips := 0
	for k := 0; k < nPreds; k++ {
		e := genPlanPredicate(r, ls, fx)
		b, err := expr.Bind(e, sc)
		if err != nil {
			t.Fatalf("Bind(%s): %v", e, err)
		}
		fp, err := pl.Plan(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(fp.Warnings) > 0 {
			warned = true
		}
		var sum LevelStats
		for i, f := range fx.files {
			fv := fp.Files[i]
			sum.Add(fv.Verdict, fx.plan[i].Size)
			sel, err := b.Evaluate(f.rec)
			if err != nil {
				t.Fatal(err)
			}
			cnt := sel.Count()
			switch {
			case fv.Verdict == CannotMatch && cnt > 0:
				t.Fatalf("S1 violated: %s, file %d skipped by %s (%s) but %d of %d rows match\nstats: %s",
					b, i, fv.Level, fv.Reason, cnt, len(f.live), describeStats(f.stats))
			case fv.Verdict == MustMatch && cnt != len(f.live):
				t.Fatalf("S2 violated: %s, file %d must-match but %d of %d rows match", b, i, cnt, len(f.live))
			case fv.Verdict == MustMatch && fv.Level != StatsLevel:
				t.Fatalf("%s, file %d: must-match decided by %s, want stats", b, i, fv.Level)
			case fv.Verdict == 0 || fv.Reason == "" || fv.Level == NoLevel:
				t.Fatalf("%s, file %d: incomplete verdict %+v", b, i, fv)
			}
			// Whatever the partition and Bloom passes add, the stats pass alone
			// is the reference evaluator's verdict.
			if fv.Level == StatsLevel {
				if ref := EvaluateFile(b, f.stats, f.pv, nil); ref != fv.Verdict {
					t.Fatalf("%s, file %d: planner stats verdict %v, EvaluateFile %v", b, i, fv.Verdict, ref)
				}
			}
			if fv.Level == BloomLevel && fv.Verdict == MustMatch {
				t.Fatalf("%s, file %d: a Bloom filter cannot prove must-match", b, i)
			}
			if fv.Level == BloomLevel && fx.plan[i].BloomTag == "" {
				t.Fatalf("%s, file %d: Bloom pass on a file without a Bloom tag", b, i)
			}
			checks[fv.Verdict]++
			byLevel[fv.Level]++
			if fv.Level == BloomLevel && fv.Verdict == CannotMatch {
				bloomSkips++
			}
		}
		sum.Level, sum.Unit = "files", UnitFiles
		if sum != fp.Summary {
			t.Fatalf("%s: summary %+v, verdicts add up to %+v", b, fp.Summary, sum)
		}
		if len(fp.Levels) < 2 || fp.Levels[0].Level != "partition" || fp.Levels[1].Level != "stats" {
			t.Fatalf("%s: levels %+v", b, fp.Levels)
		}
		part, st := fp.Levels[0], fp.Levels[1]
		if part.Total != int64(nFiles) || st.Total != part.Kept {
			t.Fatalf("%s: partition pass saw %d files (want %d), stats pass %d (want %d)", b, part.Total, nFiles, st.Total, part.Kept)
		}
		skipped := part.Skipped + st.Skipped
		if len(fp.Levels) == 3 {
			bl := fp.Levels[2]
			if bl.Level != "bloom" || bl.Total > st.Kept-st.MustMatch || bl.MustMatch != 0 {
				t.Fatalf("%s: bloom level %+v after stats %+v", b, bl, st)
			}
			skipped += bl.Skipped
		}
		if skipped != fp.Summary.Skipped {
			t.Fatalf("%s: levels skipped %d, summary %d", b, skipped, fp.Summary.Skipped)
		}
	}
	t.Logf("verdicts: cannot %d, might %d, must %d; decided by partition %d, stats %d, bloom %d (%d skips)",
		checks[CannotMatch], checks[MightMatch], checks[MustMatch], byLevel[PartitionLevel], byLevel[StatsLevel], byLevel[BloomLevel], bloomSkips)
	for _, l := range []Level{PartitionLevel, StatsLevel, BloomLevel} {
		if byLevel[l] == 0 {
			t.Fatalf("no verdict was decided by the %s pass: the test would prove nothing about it", l)
		}
	}
	if checks[CannotMatch] == 0 || checks[MustMatch] == 0 {
		t.Fatal("the generator never produced a skip or a must")
	}
	if bloomSkips == 0 {
		t.Fatal("the Bloom pass never skipped a file")
	}
	if !warned {
		t.Fatal("no Bloom warning: the damaged-index cases were never exercised")
	}
}

// TestPlannerWithoutPredicateKeepsEverything: no filter, no pass, every file kept.
func TestPlannerWithoutPredicateKeepsEverything(t *testing.T) {
	pl := NewPlanner([]PlanFile{{Path: "a", Size: 3}, {Path: "b", Size: 4}}, propSchema(), PlannerOptions{})
	fp, err := pl.Plan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Levels) != 0 || fp.Summary.Kept != 2 || fp.Summary.BytesTotal != 7 {
		t.Fatalf("plan %+v", fp)
	}
	for _, f := range fp.Files {
		if f != (FileVerdict{Verdict: MightMatch, Level: NoLevel, Reason: ReasonNoFilter}) {
			t.Fatalf("verdict %+v", f)
		}
	}
	if got := fp.Kept(); len(got) != 2 {
		t.Fatalf("Kept() = %v", got)
	}
}

// Building a Planner takes memory in proportion to the files: quadrupling the files
// of a partitioned table about quadruples the bytes NewPlanner allocates (a slice of
// all files allocated per partitioned file made it sixteen times).
func TestNewPlannerAllocatesLinearly(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "p", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	files := func(n int) []PlanFile {
		out := make([]PlanFile, n)
		for i := range out {
			out[i] = PlanFile{Path: fmt.Sprint(i), Size: 1, PartitionValues: map[string]value.Value{"p": value.Int64(int64(i % 10))}}
		}
		return out
	}
	allocated := func(n int) uint64 {
		fs := files(n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		pl := NewPlanner(fs, sc, PlannerOptions{Partitioned: true})
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(pl)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(2000), allocated(8000)
	if r := float64(large) / float64(small); r > 6 {
		t.Fatalf("NewPlanner allocated %d bytes for 2,000 files and %d for 8,000 (%.1f times)", small, large, r)
	}
}
