package table_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/table"
)

// TestDeletionVectorOutOfRangeRowsRefused: a deletion vector that deletes row
// 1,000,000 of a 10-row file (a damaged or foreign log) names no row. Every reader
// must refuse it, naming the file and the version: before, scan returned the row,
// count subtracted it, and DELETE and OPTIMIZE refused without naming the file.
func TestDeletionVectorOutOfRangeRowsRefused(t *testing.T) {
	ctx := context.Background()
	rows := make([]dmlRow, 10)
	for i := range rows {
		rows[i] = dmlRow{id: int64(i), grp: sp("a"), qty: ip(int64(i))}
	}
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			tb, st := dmlTable(t, map[string]string{"delta.enableDeletionVectors": "true"}, nil, rows, rows[:3])
			snap, err := tb.Snapshot(ctx, table.Latest())
			if err != nil {
				t.Fatal(err)
			}
			var bad string
			for _, a := range snap.Log().Files() {
				if n, _ := a.NumRecords(); n == 10 {
					bad = a.Path
				}
			}
			v := proofDeleteRows(t, tb, st, map[string][]uint64{bad: {1_000_000}}, inline)
			want := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, table.ErrInvalidDeletionVector) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", v)) ||
					!strings.Contains(err.Error(), "row 1000000") {
					t.Errorf("%s: %v; want ErrInvalidDeletionVector naming %s, version %d and the row", op, err, bad, v)
				}
			}
			_, _, err = tb.Count(ctx)
			want("count (from metadata)", err)
			_, _, err = tb.Count(ctx, table.WithFilter("qty >= 0"))
			want("count (reading)", err)
			_, err = tb.ReadAll(ctx)
			want("scan", err)
			_, err = tb.ReadAll(ctx, table.WithFilter("id = 3"))
			want("scan with a filter", err)
			_, err = tb.Delete(ctx, "id = 3", table.DMLOptions{})
			want("delete", err)
			_, err = tb.Update(ctx, "id = 3", table.UpdateOptions{Set: "qty = 1"})
			want("update", err)
			_, err = tb.Optimize(ctx, table.OptimizeOptions{})
			want("optimize", err)
			src := dmlBatch(rows[:1])
			defer src.Release()
			rdr, err := array.NewRecordReader(src.Schema(), []arrow.RecordBatch{src})
			if err != nil {
				t.Fatal(err)
			}
			defer rdr.Release()
			_, err = tb.Merge(ctx, rdr, table.Upsert("id"))
			want("merge", err)
			if after, err := tb.Snapshot(ctx, table.Latest()); err != nil || after.Version() != v {
				t.Fatalf("something committed: version %v, %v", after.Version(), err)
			}
		})
	}
}
