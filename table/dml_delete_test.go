package table_test

import (
	"context"
	"testing"

	"github.com/skiplake/skiplake/table"
)

func dmlSampleRows(n int, grp func(i int) string) []dmlRow {
	rows := make([]dmlRow, n)
	for i := range rows {
		rows[i] = dmlRow{id: int64(i), grp: sp(grp(i)), qty: ip(int64(i % 7)), note: sp("n")}
		if i%5 == 0 {
			rows[i].note = nil
		}
	}
	return rows
}

func TestDeleteBasic(t *testing.T) {
	ctx := context.Background()
	for _, dvOn := range []bool{false, true} {
		for _, parts := range [][]string{nil, {"grp"}} {
			props := map[string]string{}
			if dvOn {
				props = dvProps
			}
			rows := dmlSampleRows(200, func(i int) string { return []string{"a", "b", "c"}[i%3] })
			tb, _ := dmlTable(t, props, parts, rows[:100], rows[100:])
			res, err := tb.Delete(ctx, "qty = 3 OR id >= 190", table.DMLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var want []dmlRow
			for _, r := range rows {
				if !(*r.qty == 3 || r.id >= 190) {
					want = append(want, r)
				}
			}
			got := dmlRowsAt(t, tb, table.Latest())
			if len(got) != len(want) || res.RowsDeleted != int64(len(rows)-len(want)) {
				t.Fatalf("dv=%v parts=%v: %d rows left (want %d), result %+v", dvOn, parts, len(got), len(want), res)
			}
			for i, w := range dmlRowStrings(want) {
				if got[i] != w {
					t.Fatalf("row %d: %s, want %s", i, got[i], w)
				}
			}
			ci := lastCommit(t, tb)
			if ci.Operation != "DELETE" || ci.OperationMetrics["numDeletedRows"] != itoaTest(res.RowsDeleted) {
				t.Fatalf("commit info %+v", ci)
			}
			wantMode := table.ModeCopyOnWrite
			if dvOn {
				wantMode = table.ModeDeletionVectors
			}
			if res.Mode != wantMode {
				t.Fatalf("mode %s", res.Mode)
			}
			t.Logf("dv=%v parts=%v: %+v", dvOn, parts, res)
		}
	}
}
