package table_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// cdfProps turns the change data feed on.
var cdfProps = map[string]string{log.PropEnableChangeDataFeed: "true"}

// changeRows reads the changes from..to with opts and renders each row as
// "version|type|<table columns...>" (only the columns read), sorted.
func changeRows(t testing.TB, tb *table.Table, from, to table.Ref, opts ...table.ScanOption) []string {
	t.Helper()
	rd, err := tb.Changes(context.Background(), from, to, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	return readChangeRows(t, rd.Reader)
}

func readChangeRows(t testing.TB, rd *table.Reader) []string {
	t.Helper()
	sch := rd.Schema()
	ver := sch.FieldIndices(table.CommitVersionColumn)
	typ := sch.FieldIndices(table.ChangeTypeColumn)
	var out []string
	for rd.Next() {
		rec := rd.RecordBatch()
		var cols []int
		for i, f := range sch.Fields() {
			if f.Name != table.CommitVersionColumn && f.Name != table.ChangeTypeColumn && f.Name != table.CommitTimestampColumn {
				cols = append(cols, i)
			}
		}
		proj := projectCols(rec, cols)
		for i := 0; i < int(rec.NumRows()); i++ {
			var head []string
			if len(ver) == 1 {
				head = append(head, rec.Column(ver[0]).ValueStr(i))
			}
			if len(typ) == 1 {
				head = append(head, rec.Column(typ[0]).ValueStr(i))
			}
			out = append(out, strings.Join(append(head, rowString(proj, i)), "|"))
		}
		proj.Release()
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func projectCols(rec arrow.RecordBatch, cols []int) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for k, c := range cols {
		fields[k] = rec.Schema().Field(c)
		arrs[k] = rec.Column(c)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
}

func sameStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	w := append([]string(nil), want...)
	sort.Strings(w)
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Fatalf("%s:\ngot\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
	}
}

// TestChangesOfDML: DELETE, UPDATE and MERGE on a table with the change data feed
// on record exactly their changed rows, copy-on-write and with deletion vectors
// alike; appends read as inserts.
func TestChangesOfDML(t *testing.T) {
	for _, mode := range []struct {
		name  string
		props map[string]string
		parts []string
	}{
		{"copy-on-write", cdfProps, nil},
		{"deletion vectors", map[string]string{log.PropEnableChangeDataFeed: "true", log.PropEnableDeletionVectors: "true"}, nil},
		{"partitioned", cdfProps, []string{"grp"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			tb, _ := dmlTable(t, mode.props, mode.parts,
				[]dmlRow{{1, sp("a"), ip(10), sp("x")}, {2, sp("a"), ip(20), nil}, {3, sp("b"), ip(30), sp("y")}},
				[]dmlRow{{4, sp("b"), ip(40), nil}, {5, sp("c"), ip(50), sp("z")}})
			if _, err := tb.Delete(ctx, "qty = 20 OR id = 5", table.DMLOptions{}); err != nil { // v3
				t.Fatal(err)
			}
			if _, err := tb.Update(ctx, "qty = qty + 1", "id >= 3", table.DMLOptions{}); err != nil { // v4
				t.Fatal(err)
			}
			src := dmlBatch([]dmlRow{{1, sp("a"), ip(100), sp("m")}, {6, sp("c"), ip(60), nil}})
			rdr, _ := array.NewRecordReader(dmlSchema, []arrow.RecordBatch{src})
			if _, err := tb.Merge(ctx, rdr, table.Upsert("id")); err != nil { // v5
				t.Fatal(err)
			}
			src.Release()
			got := changeRows(t, tb, table.AtVersion(0), table.Latest(), table.WithColumns("_commit_version", "_change_type", "id", "grp", "qty", "note"))
			want := []string{
				"1|insert|1|a|10|x", "1|insert|2|a|20|NULL", "1|insert|3|b|30|y",
				"2|insert|4|b|40|NULL", "2|insert|5|c|50|z",
				"3|delete|2|a|20|NULL", "3|delete|5|c|50|z",
				"4|update_preimage|3|b|30|y", "4|update_postimage|3|b|31|y",
				"4|update_preimage|4|b|40|NULL", "4|update_postimage|4|b|41|NULL",
				"5|update_preimage|1|a|10|x", "5|update_postimage|1|a|100|m", "5|insert|6|c|60|NULL",
			}
			sameStrings(t, "changes", got, want)
		})
	}
}

// TestChangesNotEnabled: versions before the change data feed was enabled are
// refused, naming the version.
func TestChangesNotEnabled(t *testing.T) {
	ctx := context.Background()
	tb, _ := dmlTable(t, nil, nil, []dmlRow{{1, sp("a"), ip(1), nil}})
	if _, err := tb.Alter(ctx, table.AlterOptions{SetProperties: cdfProps}); err != nil {
		t.Fatal(err)
	}
	_, err := tb.Changes(ctx, table.AtVersion(0), table.Latest())
	if !errors.Is(err, table.ErrChangesUnavailable) || !strings.Contains(err.Error(), "version 0") {
		t.Fatalf("err = %v", err)
	}
	got := changeRows(t, tb, table.AtVersion(2), table.Latest())
	if len(got) != 0 {
		t.Fatalf("%v", got)
	}
}
