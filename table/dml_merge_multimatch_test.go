package table_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// MERGE cardinality (Spark's rule): one source row may match several target rows
// (each is updated or deleted once); several source rows matching one target row are
// an error (ErrMergeCardinality, nothing committed) unless the only WHEN MATCHED
// clause is an unconditional DELETE (or there is none). The tests below check both
// against a brute-force oracle on tables whose keys repeat.

// mmClause is a MERGE clause with its meaning on the oracle's rows: cond (nil:
// always) says whether it applies to target row t and source row s (s only for
// matched clauses, t only for by-source clauses, s only for inserts: then t is s);
// set (update only; nil: the source row, Spark's UPDATE SET *) the updated row.
type mmClause struct {
	clause table.MergeClause
	cond   func(t, s dmlRow) bool
	set    func(t, s dmlRow) dmlRow
}

// mmVariant is a set of MERGE clauses with their meaning.
type mmVariant struct {
	name                       string
	matched, notMatched, bySrc []mmClause
	multiMatchAllowed          bool // several source rows may match one target row
}

func (v mmVariant) options(on []string) table.MergeOptions {
	o := table.MergeOptions{On: on}
	for _, c := range v.matched {
		o.WhenMatched = append(o.WhenMatched, c.clause)
	}
	for _, c := range v.notMatched {
		o.WhenNotMatched = append(o.WhenNotMatched, c.clause)
	}
	for _, c := range v.bySrc {
		o.WhenNotMatchedBySource = append(o.WhenNotMatchedBySource, c.clause)
	}
	return o
}

func mmVariants() []mmVariant {
	isStr := func(p *string, s string) bool { return p != nil && *p == s }
	updateAll := mmClause{clause: table.MergeClause{Action: table.MergeUpdate}}
	insertAll := mmClause{clause: table.MergeClause{Action: table.MergeInsert}}
	return []mmVariant{
		{name: "upsert", matched: []mmClause{updateAll}, notMatched: []mmClause{insertAll}},
		{name: "conditional delete, conditional SET update, conditional insert, by-source delete",
			matched: []mmClause{
				{clause: table.MergeClause{Action: table.MergeDelete, Condition: "source.note = 'del'"},
					cond: func(t, s dmlRow) bool { return isStr(s.note, "del") }},
				{clause: table.MergeClause{Action: table.MergeUpdate, Condition: "source.qty > qty", Set: "qty = source.qty + qty, note = 'upd'"},
					cond: func(t, s dmlRow) bool { return t.qty != nil && s.qty != nil && *s.qty > *t.qty },
					set: func(t, s dmlRow) dmlRow {
						t.qty = ip(*s.qty + *t.qty) // the condition made both non-NULL
						t.note = sp("upd")
						return t
					}},
			},
			notMatched: []mmClause{{clause: table.MergeClause{Action: table.MergeInsert, Condition: "qty > 0"},
				cond: func(_, s dmlRow) bool { return s.qty != nil && *s.qty > 0 }}},
			bySrc: []mmClause{{clause: table.MergeClause{Action: table.MergeDelete, Condition: "grp = 'b'"},
				cond: func(t, _ dmlRow) bool { return isStr(t.grp, "b") }}},
		},
		{name: "unconditional SET update, by-source update",
			matched: []mmClause{{clause: table.MergeClause{Action: table.MergeUpdate, Set: "note = source.note, qty = qty * 10"},
				set: func(t, s dmlRow) dmlRow {
					t.note = s.note
					if t.qty != nil {
						t.qty = ip(*t.qty * 10)
					}
					return t
				}}},
			bySrc: []mmClause{{clause: table.MergeClause{Action: table.MergeUpdate, Condition: "note IS NULL", Set: "note = 'orphan'"},
				cond: func(t, _ dmlRow) bool { return t.note == nil },
				set:  func(t, _ dmlRow) dmlRow { t.note = sp("orphan"); return t }}},
		},
		{name: "unconditional delete only, by-source delete", multiMatchAllowed: true,
			matched: []mmClause{{clause: table.MergeClause{Action: table.MergeDelete}}},
			bySrc: []mmClause{{clause: table.MergeClause{Action: table.MergeDelete, Condition: "qty = 3"},
				cond: func(t, _ dmlRow) bool { return t.qty != nil && *t.qty == 3 }}},
		},
		{name: "insert only", multiMatchAllowed: true, notMatched: []mmClause{insertAll}},
		{name: "conditional delete only",
			matched: []mmClause{{clause: table.MergeClause{Action: table.MergeDelete, Condition: "source.qty > 4"},
				cond: func(_, s dmlRow) bool { return s.qty != nil && *s.qty > 4 }}},
		},
	}
}

// mmKey is the oracle's join key of r over on ("id" or "id","grp"); ok is false when
// a component is NULL (such a row matches nothing).
func mmKey(r dmlRow, on []string) (string, bool) {
	if len(on) == 1 {
		return fmt.Sprint(r.id), true
	}
	if r.grp == nil {
		return "", false
	}
	return fmt.Sprintf("%d|%s", r.id, *r.grp), true
}

// mmOracle is the brute-force MERGE: it returns the rows afterwards and the counts of
// updated, deleted and inserted rows, or ErrMergeCardinality. fan counts the source
// rows that matched several target rows.
func mmOracle(target, src []dmlRow, on []string, v mmVariant) (rows []dmlRow, upd, del, ins, fan int64, err error) {
	perKey := map[string]int{}
	for _, t := range target {
		if k, ok := mmKey(t, on); ok {
			perKey[k]++
		}
	}
	bySrcKey := map[string][]int{}
	for i, s := range src {
		if k, ok := mmKey(s, on); ok {
			bySrcKey[k] = append(bySrcKey[k], i)
		}
	}
	hit := make([]bool, len(src))
	for _, t := range target {
		var ss []int
		if k, ok := mmKey(t, on); ok {
			ss = bySrcKey[k]
		}
		if len(ss) == 0 {
			applied := false
			for _, c := range v.bySrc {
				if c.cond != nil && !c.cond(t, dmlRow{}) {
					continue
				}
				applied = true
				if c.clause.Action == table.MergeDelete {
					del++
				} else {
					upd++
					rows = append(rows, c.set(t, dmlRow{}))
				}
				break
			}
			if !applied {
				rows = append(rows, t)
			}
			continue
		}
		if len(ss) > 1 && !v.multiMatchAllowed {
			return nil, 0, 0, 0, 0, table.ErrMergeCardinality
		}
		for _, i := range ss {
			hit[i] = true
		}
		s := src[ss[0]]
		applied := false
		for _, c := range v.matched {
			if c.cond != nil && !c.cond(t, s) {
				continue
			}
			applied = true
			switch {
			case c.clause.Action == table.MergeDelete:
				del++
			case c.set == nil:
				upd++
				rows = append(rows, s)
			default:
				upd++
				rows = append(rows, c.set(t, s))
			}
			break
		}
		if !applied {
			rows = append(rows, t)
		}
	}
	for i, s := range src {
		if k, ok := mmKey(s, on); ok && perKey[k] > 1 {
			fan++
		}
		if hit[i] {
			continue
		}
		for _, c := range v.notMatched {
			if c.cond != nil && !c.cond(s, s) {
				continue
			}
			ins++
			rows = append(rows, s)
			break
		}
	}
	return rows, upd, del, ins, fan, nil
}

// TestMergeOneSourceRowManyTargetRows: a source row whose key several target rows
// share (in several files, with and without deletion vectors) updates each of them
// once; its update is written once per target row, not once per source row.
func TestMergeOneSourceRowManyTargetRows(t *testing.T) {
	ctx := context.Background()
	for _, dvOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dvOn), func(t *testing.T) {
			props := map[string]string{}
			if dvOn {
				props = dvProps
			}
			// Key 7 three times over two files, key 8 twice in one file.
			a := []dmlRow{{id: 7, grp: sp("a"), qty: ip(1)}, {id: 8, grp: sp("a"), qty: ip(2)}, {id: 7, grp: sp("b"), qty: ip(3)}, {id: 9, grp: sp("a"), qty: ip(4)}}
			b := []dmlRow{{id: 7, grp: sp("c"), qty: ip(5)}, {id: 8, grp: sp("c"), qty: ip(6)}, {id: 10, grp: sp("c"), qty: ip(7)}}
			tb, _ := dmlTable(t, props, nil, a, b)
			src := []dmlRow{{id: 7, grp: sp("s"), qty: ip(70), note: sp("x")}, {id: 8, grp: sp("s"), qty: ip(80), note: sp("y")}, {id: 11, grp: sp("s"), qty: ip(1)}}
			rdr := mergeSourceOf(src)
			res, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"},
				WhenMatched:    []table.MergeClause{{Action: table.MergeUpdate, Set: "qty = qty + source.qty, note = source.note"}},
				WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert}}})
			rdr.Release()
			require.NoError(t, err)
			require.EqualValues(t, 5, res.RowsUpdated, "every target row of keys 7 and 8, once")
			require.EqualValues(t, 1, res.RowsInserted)
			require.EqualValues(t, 0, res.RowsDeleted)
			want := []dmlRow{
				{id: 7, grp: sp("a"), qty: ip(71), note: sp("x")}, {id: 7, grp: sp("b"), qty: ip(73), note: sp("x")}, {id: 7, grp: sp("c"), qty: ip(75), note: sp("x")},
				{id: 8, grp: sp("a"), qty: ip(82), note: sp("y")}, {id: 8, grp: sp("c"), qty: ip(86), note: sp("y")},
				{id: 9, grp: sp("a"), qty: ip(4)}, {id: 10, grp: sp("c"), qty: ip(7)}, {id: 11, grp: sp("s"), qty: ip(1)},
			}
			require.Equal(t, dmlRowStrings(want), dmlRowsAt(t, tb, table.Latest()))
			ci := lastCommit(t, tb)
			require.Equal(t, "5", ci.OperationMetrics["numTargetRowsUpdated"])
			require.Equal(t, "5", ci.OperationMetrics["numTargetRowsMatchedUpdated"])
			require.Equal(t, "3", ci.OperationMetrics["numSourceRows"])
		})
	}
}

// TestMergeCardinalityRefusedCommitsNothing: two source rows for one target row fail
// with ErrMergeCardinality naming the key, whatever the clause (conditional delete,
// update, SET update), and the table keeps its version and rows; with no WHEN MATCHED
// clause (insert only) both source rows are inserted.
func TestMergeCardinalityRefusedCommitsNothing(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(30, func(i int) string { return []string{"a", "b"}[i%2] })
	tb, _ := dmlTable(t, dvProps, []string{"grp"}, rows[:15], rows[15:])
	src := []dmlRow{{id: 4, grp: sp("a"), qty: ip(9), note: sp("1")}, {id: 20, grp: sp("a"), qty: ip(9)}, {id: 4, grp: sp("a"), qty: ip(8), note: sp("2")}}
	before, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	for _, matched := range [][]table.MergeClause{
		{{Action: table.MergeUpdate}},
		{{Action: table.MergeUpdate, Set: "qty = source.qty"}},
		{{Action: table.MergeDelete, Condition: "source.qty > 0"}},
		{{Action: table.MergeDelete, Condition: "source.qty > 100"}, {Action: table.MergeDelete}},
	} {
		rdr := mergeSourceOf(src)
		_, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"}, WhenMatched: matched, WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert}}})
		rdr.Release()
		require.ErrorIs(t, err, table.ErrMergeCardinality, "clauses %+v", matched)
		require.Contains(t, err.Error(), "id=4")
		now, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		require.Equal(t, before.Version(), now.Version(), "a refused MERGE committed")
	}
	require.Equal(t, dmlRowStrings(rows), dmlRowsAt(t, tb, table.Latest()))

	// Insert only: no target row is changed, so duplicates are no error (key 40 is new).
	ins := []dmlRow{{id: 4, grp: sp("a")}, {id: 4, grp: sp("a")}, {id: 40, grp: sp("b")}, {id: 40, grp: sp("b"), note: sp("again")}}
	rdr := mergeSourceOf(ins)
	res, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"}, WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert}}})
	rdr.Release()
	require.NoError(t, err)
	require.EqualValues(t, 2, res.RowsInserted)
	require.Equal(t, dmlRowStrings(append(append([]dmlRow(nil), rows...), ins[2:]...)), dmlRowsAt(t, tb, table.Latest()))
}

// TestMergeMultiMatchOracle is the property test of MERGE cardinality: random tables
// whose keys repeat (partitioned or not, deletion vectors on or off) take random
// MERGEs (keys id or id,grp with NULLs; sources with and without repeated keys; one or
// several passes). When the oracle refuses (a target row matched by several source
// rows under a clause set that forbids it) MERGE fails with ErrMergeCardinality and
// commits nothing; otherwise the table holds exactly the oracle's rows and the result
// counts the oracle's updated, deleted and inserted rows.
func TestMergeMultiMatchOracle(t *testing.T) {
	ctx := context.Background()
	seeds := proofEnvInt(t, "SKIPLAKE_DML_SEEDS", 4)
	if testing.Short() {
		seeds = 2
	}
	var multiApplied, refused, applied int
	for seed := 0; seed < seeds; seed++ {
		for layout := 0; layout < 4; layout++ {
			partitioned, dvOn := layout&1 != 0, layout&2 != 0
			rng := rand.New(rand.NewPCG(uint64(seed), 0x3a7c))
			props := map[string]string{log.PropTargetFileSize: "2kb"}
			if dvOn {
				props[log.PropEnableDeletionVectors] = "true"
			}
			var parts []string
			if partitioned {
				parts = []string{"grp"}
			}
			grps := []*string{sp("a"), sp("b"), sp("c"), nil}
			n := 60 + rng.IntN(60)
			var rows []dmlRow
			for i := 0; i < n; i++ {
				r := dmlRow{id: int64(rng.IntN(n / 3)), grp: grps[rng.IntN(len(grps))], qty: ip(int64(rng.IntN(8))), note: sp(fmt.Sprintf("n%d", rng.IntN(3)))}
				if rng.IntN(6) == 0 {
					r.qty = nil
				}
				if rng.IntN(6) == 0 {
					r.note = nil
				}
				rows = append(rows, r)
			}
			tb, _ := dmlTable(t, props, parts, rows[:n/3], rows[n/3:2*n/3], rows[2*n/3:])
			for step := 0; step < 8; step++ {
				v := mmVariants()[rng.IntN(len(mmVariants()))]
				on := []string{"id"}
				if rng.IntN(2) == 0 {
					on = []string{"id", "grp"}
				}
				dupKeys := rng.IntN(3) == 0
				var src []dmlRow
				seen := map[string]bool{}
				for k := 1 + rng.IntN(12); k > 0; k-- {
					s := dmlRow{id: int64(rng.IntN(n/3 + 5)), grp: grps[rng.IntN(len(grps))], qty: ip(int64(rng.IntN(8))), note: sp([]string{"s", "del"}[rng.IntN(2)])}
					if rng.IntN(8) == 0 {
						s.qty = nil
					}
					if key, ok := mmKey(s, on); ok && !dupKeys {
						if seen[key] {
							continue
						}
						seen[key] = true
					}
					src = append(src, s)
				}
				if dupKeys && len(src) > 0 {
					src = append(src, src[rng.IntN(len(src))]) // a key twice, at least
				}
				opts := v.options(on)
				if rng.IntN(3) == 0 {
					opts.MemoryBudget = 500 // several passes
				}
				what := fmt.Sprintf("seed %d layout part=%v dv=%v step %d: MERGE (%s) ON %v budget %d, source %v",
					seed, partitioned, dvOn, step, v.name, on, opts.MemoryBudget, dmlRowStrings(src))
				want, upd, del, ins, fan, oerr := mmOracle(rows, src, on, v)
				before, err := tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				rdr := mergeSourceOf(src)
				res, err := tb.Merge(ctx, rdr, opts)
				rdr.Release()
				if oerr != nil {
					require.ErrorIs(t, err, table.ErrMergeCardinality, what)
					now, serr := tb.Snapshot(ctx, table.Latest())
					require.NoError(t, serr)
					require.Equal(t, before.Version(), now.Version(), "%s: a refused MERGE committed", what)
					require.Equal(t, dmlRowStrings(rows), dmlRowsAt(t, tb, table.Latest()), what)
					refused++
					continue
				}
				if errors.Is(err, table.ErrInvalidArgument) && strings.Contains(err.Error(), "no row") {
					err = nil // nothing to change
				}
				require.NoError(t, err, what)
				got := dmlRowsAt(t, tb, table.Latest())
				if w := dmlRowStrings(want); strings.Join(got, "\n") != strings.Join(w, "\n") {
					t.Fatalf("%s: table has %d rows, oracle %d\n%s", what, len(got), len(w), diffRows(got, w))
				}
				if res != nil {
					require.Equal(t, [3]int64{upd, del, ins}, [3]int64{res.RowsUpdated, res.RowsDeleted, res.RowsInserted}, "%s: updated, deleted, inserted", what)
				}
				rows = want
				applied++
				if fan > 0 && upd+del > 0 {
					multiApplied++
				}
			}
		}
	}
	t.Logf("%d MERGEs applied (%d with a source row matching several target rows), %d refused", applied, multiApplied, refused)
	require.Positive(t, multiApplied, "no MERGE had a source row matching several target rows")
	require.Positive(t, refused, "no MERGE was refused for cardinality")
}
