package table_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// The DML property test: random tables (partitioned or not, deletion vectors on or
// off, Z-order clustered or not, Bloom-indexed key) take random sequences of DELETE,
// UPDATE, MERGE (and OPTIMIZE); after every command the table holds exactly the rows a
// brute-force oracle computes from the same command, and at the end every version read
// by time travel equals the oracle's state after that version's command.

// tri is SQL three-valued logic: false, true, unknown.
type tri uint8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

func (a tri) and(b tri) tri {
	switch {
	case a == triFalse || b == triFalse:
		return triFalse
	case a == triTrue && b == triTrue:
		return triTrue
	}
	return triUnknown
}

func (a tri) or(b tri) tri {
	switch {
	case a == triTrue || b == triTrue:
		return triTrue
	case a == triFalse && b == triFalse:
		return triFalse
	}
	return triUnknown
}

func (a tri) not() tri {
	switch a {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triUnknown
}

// oraclePred is a predicate with its SQL text and its row-at-a-time meaning.
type oraclePred struct {
	sql  string
	eval func(r dmlRow) tri
}

func cmpNull[T int64 | string](p *T, f func(T) bool) tri {
	if p == nil {
		return triUnknown
	}
	return triOf(f(*p))
}

// randomPred draws a predicate over id, grp, qty and note.
// deleteFrom is DELETE's oracle: the rows p does not hold for (false or unknown) stay.
func (p oraclePred) deleteFrom(rows []dmlRow) []dmlRow {
	var keep []dmlRow
	for _, r := range rows {
		if p.eval(r) != triTrue {
			keep = append(keep, r)
		}
	}
	return keep
}

// updateWhere is UPDATE's oracle: s applied, in place, to the rows p holds for.
func (s oracleSet) updateWhere(p oraclePred, rows []dmlRow) {
	for i, r := range rows {
		if p.eval(r) == triTrue {
			rows[i] = s.apply(r)
		}
	}
}

// mergeStep runs MERGE m with src on tb (a third of the time under a 600-byte budget,
// so that it takes several passes) and, when it commits, returns the oracle's rows
// after it; a MERGE the oracle refuses but the table accepted fails the test.
func mergeStep(ctx context.Context, t *testing.T, rng *rand.Rand, tb *table.Table, m oracleMerge, src, rows []dmlRow) (what string, res *table.DMLResult, after []dmlRow, err error) {
	t.Helper()
	opts := m.opts
	if rng.IntN(3) == 0 {
		opts.MemoryBudget = 600 // several passes
	}
	what = fmt.Sprintf("MERGE (%s) of %d rows, budget %d", m.desc, len(src), opts.MemoryBudget)
	rdr := mergeSourceOf(src)
	res, err = tb.Merge(ctx, rdr, opts)
	rdr.Release()
	if err != nil {
		return what, res, rows, err
	}
	after, oerr := m.apply(rows, src)
	if oerr != nil {
		t.Fatalf("%s: oracle says %v, MERGE succeeded", what, oerr)
	}
	return what, res, after, nil
}

func randomPred(rng *rand.Rand, maxID int64, depth int) oraclePred {
	if depth > 0 && rng.IntN(3) == 0 {
		a, b := randomPred(rng, maxID, depth-1), randomPred(rng, maxID, depth-1)
		switch rng.IntN(3) {
		case 0:
			return oraclePred{"(" + a.sql + ") AND (" + b.sql + ")", func(r dmlRow) tri { return a.eval(r).and(b.eval(r)) }}
		case 1:
			return oraclePred{"(" + a.sql + ") OR (" + b.sql + ")", func(r dmlRow) tri { return a.eval(r).or(b.eval(r)) }}
		default:
			return oraclePred{"NOT (" + a.sql + ")", func(r dmlRow) tri { return a.eval(r).not() }}
		}
	}
	k := rng.Int64N(maxID + 1)
	q := int64(rng.IntN(8))
	g := []string{"a", "b", "c", "z"}[rng.IntN(4)]
	switch rng.IntN(8) {
	case 0:
		return oraclePred{fmt.Sprintf("id < %d", k), func(r dmlRow) tri { return triOf(r.id < k) }}
	case 1:
		return oraclePred{fmt.Sprintf("id >= %d", k), func(r dmlRow) tri { return triOf(r.id >= k) }}
	case 2:
		return oraclePred{fmt.Sprintf("qty = %d", q), func(r dmlRow) tri { return cmpNull(r.qty, func(v int64) bool { return v == q }) }}
	case 3:
		q2 := int64(rng.IntN(8))
		return oraclePred{fmt.Sprintf("qty IN (%d, %d)", q, q2), func(r dmlRow) tri {
			return cmpNull(r.qty, func(v int64) bool { return v == q || v == q2 })
		}}
	case 4:
		return oraclePred{"note IS NULL", func(r dmlRow) tri { return triOf(r.note == nil) }}
	case 5:
		return oraclePred{fmt.Sprintf("grp = '%s'", g), func(r dmlRow) tri { return cmpNull(r.grp, func(v string) bool { return v == g }) }}
	case 6:
		return oraclePred{fmt.Sprintf("id BETWEEN %d AND %d", k, k+20), func(r dmlRow) tri { return triOf(r.id >= k && r.id <= k+20) }}
	default:
		return oraclePred{"note LIKE 'n%'", func(r dmlRow) tri { return cmpNull(r.note, func(v string) bool { return strings.HasPrefix(v, "n") }) }}
	}
}

// oracleSet is an UPDATE SET list with its meaning.
type oracleSet struct {
	sql   string
	apply func(r dmlRow) dmlRow
}

func randomSet(rng *rand.Rand) oracleSet {
	sets := []oracleSet{
		{"qty = qty + 1", func(r dmlRow) dmlRow {
			if r.qty != nil {
				r.qty = ip(*r.qty + 1)
			}
			return r
		}},
		{"note = 'u'", func(r dmlRow) dmlRow { r.note = sp("u"); return r }},
		{"note = note || 'x', qty = NULL", func(r dmlRow) dmlRow {
			if r.note != nil {
				r.note = sp(*r.note + "x")
			}
			r.qty = nil
			return r
		}},
		{"grp = 'z', qty = 7", func(r dmlRow) dmlRow { r.grp = sp("z"); r.qty = ip(7); return r }},
		{"qty = id * 2", func(r dmlRow) dmlRow { r.qty = ip(r.id * 2); return r }},
	}
	return sets[rng.IntN(len(sets))]
}

// oracleMerge is a MERGE with its meaning on the oracle's rows.
type oracleMerge struct {
	desc  string
	opts  table.MergeOptions
	apply func(rows, src []dmlRow) ([]dmlRow, error)
}

func randomMerge(rng *rand.Rand) oracleMerge {
	q := int64(rng.IntN(8))
	variants := []oracleMerge{
		{"upsert", table.Upsert("id"), func(rows, src []dmlRow) ([]dmlRow, error) { return upsertOracle(rows, src), nil }},
		{"update if source.qty > qty, else insert", table.MergeOptions{On: []string{"id"},
			WhenMatched:    []table.MergeClause{{Action: table.MergeUpdate, Condition: "source.qty > qty"}},
			WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert}}},
			func(rows, src []dmlRow) ([]dmlRow, error) {
				return mergeOracle(rows, src, func(t, s dmlRow) (dmlRow, bool, bool) {
					if t.qty != nil && s.qty != nil && *s.qty > *t.qty {
						return s, true, false
					}
					return t, false, false
				}, true, nil)
			}},
		{"delete matched, delete unmatched by source with qty = q", table.MergeOptions{On: []string{"id"},
			WhenMatched:            []table.MergeClause{{Action: table.MergeDelete}},
			WhenNotMatchedBySource: []table.MergeClause{{Action: table.MergeDelete, Condition: fmt.Sprintf("qty = %d", q)}}},
			func(rows, src []dmlRow) ([]dmlRow, error) {
				return mergeOracle(rows, src, func(t, s dmlRow) (dmlRow, bool, bool) { return t, false, true }, false,
					func(t dmlRow) (dmlRow, bool, bool) { return t, false, t.qty != nil && *t.qty == q })
			}},
		{"set qty from source, note by source", table.MergeOptions{On: []string{"id"},
			WhenMatched:            []table.MergeClause{{Action: table.MergeUpdate, Set: "qty = source.qty + 100, note = 'm'"}},
			WhenNotMatchedBySource: []table.MergeClause{{Action: table.MergeUpdate, Condition: "note IS NULL", Set: "note = 'orphan'"}}},
			func(rows, src []dmlRow) ([]dmlRow, error) {
				return mergeOracle(rows, src, func(t, s dmlRow) (dmlRow, bool, bool) {
					t.note = sp("m")
					if s.qty == nil {
						t.qty = nil
					} else {
						t.qty = ip(*s.qty + 100)
					}
					return t, true, false
				}, false, func(t dmlRow) (dmlRow, bool, bool) {
					if t.note == nil {
						t.note = sp("orphan")
						return t, true, false
					}
					return t, false, false
				})
			}},
	}
	return variants[rng.IntN(len(variants))]
}

// mergeOracle applies a MERGE by id: matched(t, s) returns the new row and whether it
// was updated or deleted; insert says whether unmatched source rows are inserted;
// bySource handles unmatched target rows. Several source rows for one target row are
// an error unless the only matched action is an unconditional delete (the caller's
// merged clause set decides; here: deletes always allowed).
func mergeOracle(rows, src []dmlRow, matched func(t, s dmlRow) (dmlRow, bool, bool), insert bool, bySource func(t dmlRow) (dmlRow, bool, bool)) ([]dmlRow, error) {
	bySrc := map[int64][]dmlRow{}
	for _, s := range src {
		bySrc[s.id] = append(bySrc[s.id], s)
	}
	hit := map[int64]bool{}
	var out []dmlRow
	for _, t := range rows {
		ss := bySrc[t.id]
		if len(ss) == 0 {
			if bySource != nil {
				n, _, del := bySource(t)
				if del {
					continue
				}
				t = n
			}
			out = append(out, t)
			continue
		}
		hit[t.id] = true
		_, _, del := matched(t, ss[0])
		if len(ss) > 1 && !del {
			return nil, table.ErrMergeCardinality
		}
		n, _, del := matched(t, ss[0])
		if del {
			continue
		}
		out = append(out, n)
	}
	if insert {
		for _, s := range src {
			if !hit[s.id] {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func TestDMLPropertyOracle(t *testing.T) {
	seeds := proofEnvInt(t, "SKIPLAKE_DML_SEEDS", 4)
	steps := proofEnvInt(t, "SKIPLAKE_DML_STEPS", 10)
	if testing.Short() {
		seeds, steps = 3, 6
	}
	if raceEnabled {
		seeds, steps = 1, 5 // every layout once under -race
	}
	for seed := 0; seed < seeds; seed++ {
		for layout := 0; layout < 8; layout++ {
			partitioned, dvOn, clustered := layout&1 != 0, layout&2 != 0, layout&4 != 0
			name := fmt.Sprintf("seed=%d/part=%v/dv=%v/clustered=%v", seed, partitioned, dvOn, clustered)
			t.Run(name, func(t *testing.T) { dmlPropertyRun(t, uint64(seed), partitioned, dvOn, clustered, steps) })
		}
	}
}

func dmlPropertyRun(t *testing.T, seed uint64, partitioned, dvOn, clustered bool, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0xd31))
	props := map[string]string{"skiplake.bloomFilter.columns": "id", log.PropTargetFileSize: "4kb"}
	if dvOn {
		props[log.PropEnableDeletionVectors] = "true"
	}
	var parts []string
	if partitioned {
		parts = []string{"grp"}
	}
	n := 150 + rng.IntN(150)
	var rows []dmlRow
	for i := 0; i < n; i++ {
		r := dmlRow{id: int64(i), grp: sp([]string{"a", "b", "c"}[rng.IntN(3)]), qty: ip(int64(rng.IntN(8))), note: sp(fmt.Sprintf("n%d", rng.IntN(5)))}
		if rng.IntN(6) == 0 {
			r.qty = nil
		}
		if rng.IntN(6) == 0 {
			r.note = nil
		}
		if rng.IntN(10) == 0 {
			r.grp = nil
		}
		rows = append(rows, r)
	}
	cut := n / 3
	tb, _ := dmlTable(t, props, parts, rows[:cut], rows[cut:2*cut], rows[2*cut:])
	if clustered {
		if _, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"id", "qty"}, TargetFileSize: 4 << 10}); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := tb.Snapshot(ctx, table.Latest())
	history := map[int64][]string{head.Version(): dmlRowStrings(rows)}
	check := func(what string) {
		t.Helper()
		got := dmlRowsAt(t, tb, table.Latest())
		want := dmlRowStrings(rows)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("after %s: table has %d rows, oracle %d\n%s", what, len(got), len(want), diffRows(got, want))
		}
		s, _ := tb.Snapshot(ctx, table.Latest())
		history[s.Version()] = want
	}
	nextID := int64(n)
	for step := 0; step < steps; step++ {
		var what string
		var err error
		switch op := rng.IntN(7); {
		case op < 2:
			p := randomPred(rng, nextID, 2)
			what = "DELETE WHERE " + p.sql
			_, err = tb.Delete(ctx, p.sql, table.DMLOptions{})
			if err == nil {
				rows = p.deleteFrom(rows)
			}
		case op < 4:
			p := randomPred(rng, nextID, 1)
			s := randomSet(rng)
			what = "UPDATE SET " + s.sql + " WHERE " + p.sql
			_, err = tb.Update(ctx, p.sql, table.UpdateOptions{Set: s.sql})
			if err == nil {
				s.updateWhere(p, rows)
			}
		case op < 6:
			m := randomMerge(rng)
			var src []dmlRow
			used := map[int64]bool{}
			for k := rng.IntN(30); k > 0 && len(rows) > 0; k-- {
				r := rows[rng.IntN(len(rows))]
				if used[r.id] {
					continue
				}
				used[r.id] = true
				src = append(src, dmlRow{id: r.id, grp: r.grp, qty: ip(int64(rng.IntN(8))), note: sp("s")})
			}
			for k := rng.IntN(10); k > 0; k-- {
				src = append(src, dmlRow{id: nextID, grp: sp("b"), qty: ip(int64(rng.IntN(8))), note: sp("new")})
				nextID++
			}
			what, _, rows, err = mergeStep(ctx, t, rng, tb, m, src, rows)
		default:
			what = "OPTIMIZE"
			_, err = tb.Optimize(ctx, table.OptimizeOptions{TargetFileSize: 8 << 10})
		}
		if err != nil {
			if errors.Is(err, table.ErrInvalidArgument) && strings.Contains(err.Error(), "no row") {
				continue
			}
			t.Fatalf("step %d %s: %v", step, what, err)
		}
		check(what)
		t.Logf("step %d: %s -> %d rows", step, what, len(rows))
	}
	// Time travel: every version equals the oracle's state after that version.
	versions := make([]int64, 0, len(history))
	for v := range history {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(a, b int) bool { return versions[a] < versions[b] })
	for _, v := range versions {
		got := dmlRowsAt(t, tb, table.AtVersion(v))
		if strings.Join(got, "\n") != strings.Join(history[v], "\n") {
			t.Fatalf("time travel to version %d: %d rows, oracle had %d\n%s", v, len(got), len(history[v]), diffRows(got, history[v]))
		}
	}
}

// diffRows shows up to ten rows only one side has.
func diffRows(got, want []string) string {
	g, w := map[string]int{}, map[string]int{}
	for _, r := range got {
		g[r]++
	}
	for _, r := range want {
		w[r]++
	}
	var out []string
	for r, c := range g {
		if w[r] < c {
			out = append(out, "extra   "+r)
		}
	}
	for r, c := range w {
		if g[r] < c {
			out = append(out, "missing "+r)
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = out[:10]
	}
	return strings.Join(out, "\n")
}
