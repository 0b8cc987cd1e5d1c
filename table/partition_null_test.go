package table_test

import (
	"context"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/table"
)

// A NULL partition value and the string "__HIVE_DEFAULT_PARTITION__" are different
// partitions (issue 31 item 2): an append or MERGE carrying both writes one file per
// value with its own partitionValues (null vs the string), a scan returns each row's
// own value, and partition pruning tells them apart.
func TestNullAndDefaultPartitionStringStayDistinct(t *testing.T) {
	ctx := context.Background()
	hive := partition.DefaultPartitionName
	check := func(t *testing.T, tb *table.Table, want []string) {
		t.Helper()
		require := func(cond bool, format string, args ...any) {
			t.Helper()
			if !cond {
				t.Fatalf(format, args...)
			}
		}
		got := dmlRowsAt(t, tb, table.Latest())
		require(equalStrings(got, want), "rows:\n got %q\nwant %q", got, want)
		snap := snapshotAt(t, tb, table.Latest())
		var nulls, strs int
		for _, a := range snap.Log().Files() {
			v, ok := a.PartitionValues["grp"]
			switch {
			case !ok || v == nil:
				nulls++
			case *v == hive:
				strs++
			}
		}
		require(nulls >= 1 && strs >= 1, "want files with a null and with the string partition value, got %d and %d", nulls, strs)
		for filter, n := range map[string]int64{"grp IS NULL": countWant(want, "NULL"), "grp = '" + hive + "'": countWant(want, hive)} {
			got, _, err := countOf(ctx, tb, table.WithFilter(filter))
			require(err == nil && got == n, "count %s = %d (%v), want %d", filter, got, err, n)
		}
	}

	t.Run("append, then OPTIMIZE", func(t *testing.T) {
		rows := []dmlRow{{id: 1, grp: nil, qty: ip(1)}, {id: 2, grp: sp(hive), qty: ip(2)}, {id: 3, grp: nil, qty: ip(3)}, {id: 4, grp: sp("x"), qty: ip(4)}}
		more := []dmlRow{{id: 5, grp: sp(hive), qty: ip(5)}, {id: 6, grp: nil, qty: ip(6)}}
		tb, _ := dmlTable(t, nil, []string{"grp"}, rows, more)
		all := dmlRowStrings(append(append([]dmlRow(nil), rows...), more...))
		check(t, tb, all)
		if _, err := tb.Optimize(ctx, table.OptimizeOptions{}); err != nil {
			t.Fatal(err)
		}
		check(t, tb, all) // compaction keeps the two partitions apart
	})
	t.Run("append, string first", func(t *testing.T) {
		rows := []dmlRow{{id: 2, grp: sp(hive), qty: ip(2)}, {id: 1, grp: nil, qty: ip(1)}}
		tb, _ := dmlTable(t, nil, []string{"grp"}, rows)
		check(t, tb, dmlRowStrings(rows))
	})
	t.Run("merge", func(t *testing.T) {
		tb, _ := dmlTable(t, nil, []string{"grp"}, []dmlRow{{id: 1, grp: sp("x"), qty: ip(1)}})
		src := dmlBatch([]dmlRow{{id: 1, grp: nil, qty: ip(10)}, {id: 2, grp: sp(hive), qty: ip(20)}, {id: 3, grp: nil, qty: ip(30)}})
		defer src.Release()
		rdr, err := array.NewRecordReader(dmlSchema, []arrow.RecordBatch{src})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if _, err := tb.Merge(ctx, rdr, table.Upsert("id")); err != nil {
			t.Fatal(err)
		}
		check(t, tb, dmlRowStrings([]dmlRow{{id: 1, grp: nil, qty: ip(10)}, {id: 2, grp: sp(hive), qty: ip(20)}, {id: 3, grp: nil, qty: ip(30)}}))
	})
}

func equalStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// countWant counts the rows of want (dmlRow strings) whose grp is g.
func countWant(want []string, g string) int64 {
	var n int64
	for _, w := range want {
		r := dmlParseGrp(w)
		if r == g {
			n++
		}
	}
	return n
}

// dmlParseGrp returns the grp field of a dmlRow string ("id|grp|qty|note").
func dmlParseGrp(s string) string {
	start := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '|' {
			if start < 0 {
				start = i + 1
				continue
			}
			return s[start:i]
		}
	}
	return ""
}
