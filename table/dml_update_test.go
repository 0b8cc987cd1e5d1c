package table_test

import (
	"context"
	"testing"

	"github.com/skiplake/skiplake/table"
)

func TestUpdateBasic(t *testing.T) {
	ctx := context.Background()
	for _, dvOn := range []bool{false, true} {
		for _, parts := range [][]string{nil, {"grp"}} {
			props := map[string]string{}
			if dvOn {
				props = dvProps
			}
			rows := dmlSampleRows(200, func(i int) string { return []string{"a", "b", "c"}[i%3] })
			tb, _ := dmlTable(t, props, parts, rows[:100], rows[100:])
			res, err := tb.Update(ctx, "qty = 3 OR id >= 190", table.UpdateOptions{Set: "qty = qty * 10, note = 'upd', grp = 'z'"})
			if err != nil {
				t.Fatal(err)
			}
			var want []dmlRow
			for _, r := range rows {
				if *r.qty == 3 || r.id >= 190 {
					r.qty = ip(*r.qty * 10)
					r.note = sp("upd")
					r.grp = sp("z")
				}
				want = append(want, r)
			}
			got := dmlRowsAt(t, tb, table.Latest())
			w := dmlRowStrings(want)
			if len(got) != len(w) {
				t.Fatalf("%d rows, want %d", len(got), len(w))
			}
			for i := range w {
				if got[i] != w[i] {
					t.Fatalf("dv=%v parts=%v row %d: %s, want %s", dvOn, parts, i, got[i], w[i])
				}
			}
			if res.RowsUpdated != 37 || lastCommit(t, tb).OperationMetrics["numUpdatedRows"] != "37" {
				t.Fatalf("result %+v", res)
			}
		}
	}
}
