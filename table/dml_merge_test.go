package table_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/table"
)

func mergeSourceOf(rows []dmlRow) array.RecordReader {
	rec := dmlBatch(rows)
	defer rec.Release()
	rdr, _ := array.NewRecordReader(dmlSchema, []arrow.RecordBatch{rec})
	return rdr
}

// upsertOracle applies an upsert of src (by id) to rows.
func upsertOracle(rows, src []dmlRow) []dmlRow {
	byID := map[int64]int{}
	out := append([]dmlRow(nil), rows...)
	for i, r := range out {
		byID[r.id] = i
	}
	for _, s := range src {
		if i, ok := byID[s.id]; ok {
			out[i] = s
		} else {
			out = append(out, s)
		}
	}
	return out
}

func TestMergeUpsert(t *testing.T) {
	ctx := context.Background()
	for _, dvOn := range []bool{false, true} {
		for _, parts := range [][]string{nil, {"grp"}} {
			for _, budget := range []int64{0, 2048} {
				props := map[string]string{}
				if dvOn {
					props = dvProps
				}
				rows := dmlSampleRows(300, func(i int) string { return []string{"a", "b", "c"}[i%3] })
				tb, _ := dmlTable(t, props, parts, rows[:100], rows[100:200], rows[200:])
				var src []dmlRow
				for i := 250; i < 350; i += 2 {
					src = append(src, dmlRow{id: int64(i), grp: sp("b"), qty: ip(int64(-i)), note: sp("m")})
				}
				opts := table.Upsert("id")
				opts.MemoryBudget = budget
				rdr := mergeSourceOf(src)
				res, err := tb.Merge(ctx, rdr, opts)
				rdr.Release()
				if err != nil {
					t.Fatal(err)
				}
				want := dmlRowStrings(upsertOracle(rows, src))
				got := dmlRowsAt(t, tb, table.Latest())
				if len(got) != len(want) {
					t.Fatalf("dv=%v parts=%v budget=%d: %d rows, want %d", dvOn, parts, budget, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("dv=%v parts=%v budget=%d row %d: %s want %s", dvOn, parts, budget, i, got[i], want[i])
					}
				}
				if res.RowsUpdated != 25 || res.RowsInserted != 25 {
					t.Fatalf("result %+v", res)
				}
				if budget > 0 && res.Passes < 2 {
					t.Fatalf("budget %d: %d passes", budget, res.Passes)
				}
				t.Logf("dv=%v parts=%v budget=%d: passes %d read %d/%d files", dvOn, parts, budget, res.Passes, res.FilesRead, res.FilesConsidered)
			}
		}
	}
}

func TestMergeCardinality(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(10, func(int) string { return "a" })
	tb, _ := dmlTable(t, dvProps, nil, rows)
	src := []dmlRow{{id: 3, qty: ip(1)}, {id: 3, qty: ip(2)}}
	rdr := mergeSourceOf(src)
	_, err := tb.Merge(ctx, rdr, table.Upsert("id"))
	rdr.Release()
	if !errors.Is(err, table.ErrMergeCardinality) {
		t.Fatalf("two source rows for one target row: %v", err)
	}
	// An unconditional delete as the only matched clause is allowed.
	rdr = mergeSourceOf(src)
	res, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"}, WhenMatched: []table.MergeClause{{Action: table.MergeDelete}}})
	rdr.Release()
	if err != nil || res.RowsDeleted != 1 {
		t.Fatalf("delete: %+v %v", res, err)
	}
}

func TestMergeClauses(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(20, func(i int) string { return []string{"a", "b"}[i%2] })
	tb, _ := dmlTable(t, dvProps, nil, rows)
	src := []dmlRow{
		{id: 1, qty: ip(100), note: sp("del")},
		{id: 2, qty: ip(100), note: sp("x")},
		{id: 4, qty: ip(0), note: sp("x")},
		{id: 50, qty: ip(5), note: sp("new"), grp: sp("c")},
		{id: 51, qty: ip(-5), note: sp("skip"), grp: sp("c")},
	}
	rdr := mergeSourceOf(src)
	res, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"},
		WhenMatched: []table.MergeClause{
			{Action: table.MergeDelete, Condition: "source.note = 'del'"},
			{Action: table.MergeUpdate, Condition: "source.qty > qty", Set: "qty = source.qty + qty, note = 'upd'"},
		},
		WhenNotMatched:         []table.MergeClause{{Action: table.MergeInsert, Condition: "qty > 0"}},
		WhenNotMatchedBySource: []table.MergeClause{{Action: table.MergeDelete, Condition: "grp = 'b' AND id > 10"}},
	})
	rdr.Release()
	if err != nil {
		t.Fatal(err)
	}
	var want []dmlRow
	for _, r := range rows {
		switch {
		case r.id == 1:
			continue
		case r.id == 2:
			r.qty = ip(100 + *r.qty)
			r.note = sp("upd")
		case r.id == 4:
		case *r.grp == "b" && r.id > 10:
			continue
		}
		want = append(want, r)
	}
	want = append(want, src[3])
	w := dmlRowStrings(want)
	got := dmlRowsAt(t, tb, table.Latest())
	if len(got) != len(w) {
		t.Fatalf("%d rows, want %d: %v", len(got), len(w), got)
	}
	for i := range w {
		if got[i] != w[i] {
			t.Fatalf("row %d: %s want %s", i, got[i], w[i])
		}
	}
	ci := lastCommit(t, tb)
	t.Logf("%+v\n%+v", res, ci)
}
