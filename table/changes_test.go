package table_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
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
	ver := sch.FieldIndices(log.CommitVersionColumn)
	typ := sch.FieldIndices(log.ChangeTypeColumn)
	var out []string
	for rd.Next() {
		rec := rd.RecordBatch()
		var cols []int
		for i, f := range sch.Fields() {
			if f.Name != log.CommitVersionColumn && f.Name != log.ChangeTypeColumn && f.Name != log.CommitTimestampColumn {
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
			if _, err := tb.Update(ctx, "id >= 3", table.UpdateOptions{Set: "qty = qty + 1"}); err != nil { // v4
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

// commitHasCDC reports whether the commit of version v has cdc actions.
func commitHasCDC(t *testing.T, st storage.Storage, v int64) bool {
	t.Helper()
	b, err := st.Get(context.Background(), log.CommitPath(v))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), `{"cdc":`)
}

// TestChangesWhichCommitsWriteChangeFiles: as in Delta Spark, a commit gets change
// data files exactly when its added and removed files alone would misstate its
// changes — an UPDATE, a copy-on-write rewrite, a MERGE that updates — and none for
// deletes by deletion vector or of whole files, appends and inserts-only MERGEs;
// OPTIMIZE (dataChange=false) contributes no change. Each version's changes read
// right either way.
func TestChangesWhichCommitsWriteChangeFiles(t *testing.T) {
	ctx := context.Background()
	dv := map[string]string{log.PropEnableChangeDataFeed: "true", log.PropEnableDeletionVectors: "true"}
	rows := []dmlRow{{1, sp("a"), ip(10), nil}, {2, sp("a"), ip(20), nil}, {3, sp("b"), ip(30), nil}, {4, sp("c"), ip(40), nil}}
	type step struct {
		name    string
		run     func(tb *table.Table) error
		wantCDC bool
		want    []string // type|id|grp|qty
	}
	merge := func(tb *table.Table, rows []dmlRow, opts table.MergeOptions) error {
		src := dmlBatch(rows)
		defer src.Release()
		rdr, _ := array.NewRecordReader(dmlSchema, []arrow.RecordBatch{src})
		_, err := tb.Merge(ctx, rdr, opts)
		return err
	}
	insertOnly := table.Upsert("id")
	insertOnly.WhenMatched = nil
	for _, c := range []struct {
		name  string
		props map[string]string
		parts []string
		steps []step
	}{
		{"deletion vectors", dv, []string{"grp"}, []step{
			{"DELETE by deletion vector", func(tb *table.Table) error {
				_, err := tb.Delete(ctx, "id = 1", table.DMLOptions{})
				return err
			}, false, []string{"delete|1|a|10"}},
			{"DELETE of a whole partition", func(tb *table.Table) error {
				_, err := tb.Delete(ctx, "grp = 'c'", table.DMLOptions{})
				return err
			}, false, []string{"delete|4|c|40"}},
			{"UPDATE", func(tb *table.Table) error {
				_, err := tb.Update(ctx, "id = 3", table.UpdateOptions{Set: "qty = 31"})
				return err
			}, true, []string{"update_preimage|3|b|30", "update_postimage|3|b|31"}},
			{"inserts-only MERGE", func(tb *table.Table) error {
				return merge(tb, []dmlRow{{2, sp("a"), ip(0), nil}, {5, sp("b"), ip(50), nil}}, insertOnly)
			}, false, []string{"insert|5|b|50"}},
			{"OPTIMIZE", func(tb *table.Table) error {
				_, err := tb.Optimize(ctx, table.OptimizeOptions{})
				return err
			}, false, nil},
		}},
		{"copy-on-write", cdfProps, nil, []step{
			{"DELETE rewriting a file", func(tb *table.Table) error {
				_, err := tb.Delete(ctx, "id = 1", table.DMLOptions{})
				return err
			}, true, []string{"delete|1|a|10"}},
			{"MERGE updating and inserting", func(tb *table.Table) error {
				return merge(tb, []dmlRow{{2, sp("a"), ip(21), nil}, {6, sp("c"), ip(60), nil}}, table.Upsert("id"))
			}, true, []string{"update_preimage|2|a|20", "update_postimage|2|a|21", "insert|6|c|60"}},
			{"DELETE of every row", func(tb *table.Table) error {
				_, err := tb.Delete(ctx, "id > 0", table.DMLOptions{})
				return err
			}, false, []string{"delete|2|a|21", "delete|3|b|30", "delete|4|c|40", "delete|6|c|60"}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, st := dmlTable(t, c.props, c.parts, rows)
			for _, s := range c.steps {
				before, err := tb.Snapshot(ctx, table.Latest())
				if err != nil {
					t.Fatal(err)
				}
				if err := s.run(tb); err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				v := before.Version() + 1
				if got := commitHasCDC(t, st, v); got != s.wantCDC {
					t.Errorf("%s (version %d): cdc actions %v, want %v", s.name, v, got, s.wantCDC)
				}
				got := changeRows(t, tb, table.AtVersion(v), table.Latest(), table.WithColumns("_change_type", "id", "grp", "qty"))
				sameStrings(t, s.name, got, s.want)
			}
		})
	}
}

// TestChangesAfterVacuum: a change data file that is gone (VACUUM deleted it)
// makes the read of its version fail naming the version; the versions around it
// still read.
func TestChangesAfterVacuum(t *testing.T) {
	ctx := context.Background()
	tb, st := dmlTable(t, cdfProps, nil, []dmlRow{{1, sp("a"), ip(10), nil}, {2, sp("b"), ip(20), nil}})
	if _, err := tb.Update(ctx, "id = 1", table.UpdateOptions{Set: "qty = 0"}); err != nil { // v2
		t.Fatal(err)
	}
	if _, err := tb.Delete(ctx, "id = 2", table.DMLOptions{}); err != nil { // v3
		t.Fatal(err)
	}
	objs, err := st.List(ctx, "_change_data/", "")
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, o := range objs {
		b, _ := st.Get(ctx, log.CommitPath(2))
		if strings.Contains(string(b), strings.TrimPrefix(o.Path, "_change_data/")) {
			gone = append(gone, o.Path)
			if err := st.Delete(ctx, o.Path); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(gone) == 0 {
		t.Fatalf("version 2 wrote no change data file (found %d under _change_data/)", len(objs))
	}
	rd, err := tb.Changes(ctx, table.AtVersion(1), table.Latest())
	if err != nil {
		t.Fatal(err) // planning reads the log only
	}
	for rd.Next() {
	}
	err = rd.Err()
	rd.Release()
	if !errors.Is(err, table.ErrChangesUnavailable) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), gone[0]) {
		t.Fatalf("err = %v, want ErrChangesUnavailable naming version 2 and %s", err, gone[0])
	}
	sameStrings(t, "version 3", changeRows(t, tb, table.AtVersion(3), table.Latest(), table.WithColumns("_change_type", "id")), []string{"delete|2"})
}

// TestChangesSchemaChanges: a column added within the range reads as NULL in the
// earlier versions' rows (as in Spark); a range ending before the change has the
// old columns.
func TestChangesSchemaChanges(t *testing.T) {
	ctx := context.Background()
	tb, _ := dmlTable(t, cdfProps, nil, []dmlRow{{1, sp("a"), ip(10), nil}}) // v1
	col, err := table.ParseColumn("extra int")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{col}}); err != nil { // v2
		t.Fatal(err)
	}
	if _, err := tb.Update(ctx, "id = 1", table.UpdateOptions{Set: "extra = 7"}); err != nil { // v3
		t.Fatal(err)
	}
	got := changeRows(t, tb, table.AtVersion(0), table.Latest(), table.WithColumns("_commit_version", "_change_type", "id", "extra"))
	sameStrings(t, "changes across ADD COLUMN", got, []string{"1|insert|1|NULL", "3|update_preimage|1|NULL", "3|update_postimage|1|7"})
	rd, err := tb.Changes(ctx, table.AtVersion(0), table.AtVersion(1))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	if rd.Schema().FieldIndices("extra") != nil {
		t.Fatalf("versions 0..1 have the columns of version 1: %v", rd.Schema())
	}
}

// TestChangesFilterSkipsFiles: a filter on the change columns skips the change and
// data files of other versions without reading them.
func TestChangesFilterSkipsFiles(t *testing.T) {
	ctx := context.Background()
	tb, _ := dmlTable(t, cdfProps, nil, []dmlRow{{1, sp("a"), ip(10), nil}}, []dmlRow{{2, sp("b"), ip(20), nil}}, []dmlRow{{3, sp("c"), ip(30), nil}})
	cs, err := tb.PlanChanges(ctx, table.AtVersion(0), table.Latest(), table.WithFilter("_commit_version = 2 OR id = 3"))
	if err != nil {
		t.Fatal(err)
	}
	if r := cs.Report(); r.Files.Total != 3 || r.Files.Skipped != 1 || cs.NumFiles() != 2 {
		t.Fatalf("files: %+v, %d to read; want 3, 1 skipped (version 1's by its version and statistics)", r.Files, cs.NumFiles())
	}
	rd, err := cs.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	cols, err := tb.PlanChanges(ctx, table.AtVersion(0), table.Latest(), table.WithColumns("id", "_change_type"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cols.Schema().String(); !strings.Contains(got, "id: type=int64") || cols.Schema().NumFields() != 2 {
		t.Fatalf("projection: %s", got)
	}
	got := readChangeRows(t, rd)
	sameStrings(t, "filtered", got, []string{"2|insert|2|b|20|NULL", "3|insert|3|c|30|NULL"})
}

// TestChangesOfOverwrites: an overwrite on a table with the change data feed reads as
// the deletes of every row it replaced and the inserts of the rows it wrote — whole
// or with replaceWhere, by deletion vector or copy-on-write (where the commit has
// change data files, which must hold the new rows too).
func TestChangesOfOverwrites(t *testing.T) {
	ctx := context.Background()
	rows := []dmlRow{{1, sp("a"), ip(10), nil}, {2, sp("a"), ip(20), nil}, {3, sp("b"), ip(30), nil}, {4, sp("b"), ip(40), nil}}
	for _, c := range []struct {
		name    string
		props   map[string]string
		where   string
		wantCDC bool
		want    []string
	}{
		{"whole table", cdfProps, "", false,
			[]string{"delete|1|10", "delete|2|20", "delete|3|30", "delete|4|40", "insert|7|35", "insert|8|45"}},
		{"replaceWhere copy-on-write", cdfProps, "qty >= 30", true,
			[]string{"delete|3|30", "delete|4|40", "insert|7|35", "insert|8|45"}},
		{"replaceWhere deletion vectors", map[string]string{log.PropEnableChangeDataFeed: "true", log.PropEnableDeletionVectors: "true"}, "qty >= 30", false,
			[]string{"delete|3|30", "delete|4|40", "insert|7|35", "insert|8|45"}},
		{"replaceWhere of a whole file", cdfProps, "qty >= 10", false,
			[]string{"delete|1|10", "delete|2|20", "delete|3|30", "delete|4|40", "insert|7|35", "insert|8|45"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, st := dmlTable(t, c.props, nil, rows) // v1
			rec := dmlBatch([]dmlRow{{7, sp("c"), ip(35), nil}, {8, sp("c"), ip(45), nil}})
			defer rec.Release()
			if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{Overwrite: true, ReplaceWhere: c.where}); err != nil { // v2
				t.Fatal(err)
			}
			if got := commitHasCDC(t, st, 2); got != c.wantCDC {
				t.Errorf("cdc actions %v, want %v", got, c.wantCDC)
			}
			got := changeRows(t, tb, table.AtVersion(2), table.Latest(), table.WithColumns("_change_type", "id", "qty"))
			sameStrings(t, "changes of the overwrite", got, c.want)
		})
	}
}

// TestChangesAcrossColumnMappingChanges: as Delta Spark refuses a batch change read
// across a rename or a drop under column mapping (the versions before it were
// written with another schema), so does Changes, naming the column; each side of the
// change reads on its own.
func TestChangesAcrossColumnMappingChanges(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		alter table.AlterOptions
		why   string
	}{
		{"rename", table.AlterOptions{RenameColumn: &table.ColumnRename{Column: "note", NewName: "memo"}}, `column "note" was dropped or renamed`},
		{"drop", table.AlterOptions{DropColumns: []string{"note"}}, `column "note" was dropped or renamed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, _ := dmlTable(t, cdfProps, nil, []dmlRow{{1, sp("a"), ip(10), sp("x")}}) // v1
			if _, err := tb.Alter(ctx, c.alter); err != nil {                            // v2
				t.Fatal(err)
			}
			if _, err := tb.Update(ctx, "id = 1", table.UpdateOptions{Set: "qty = 11"}); err != nil { // v3
				t.Fatal(err)
			}
			_, err := tb.Changes(ctx, table.AtVersion(0), table.Latest())
			if !errors.Is(err, table.ErrChangesUnavailable) || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("err = %v, want ErrChangesUnavailable saying %s", err, c.why)
			}
			sameStrings(t, "before", changeRows(t, tb, table.AtVersion(0), table.AtVersion(1), table.WithColumns("_change_type", "id", "qty")), []string{"insert|1|10"})
			sameStrings(t, "after", changeRows(t, tb, table.AtVersion(3), table.Latest(), table.WithColumns("_change_type", "id", "qty")),
				[]string{"update_preimage|1|10", "update_postimage|1|11"})
		})
	}
}

// TestChangesOfMergeWithSchemaEvolution: a MERGE that adds a column records its
// update preimages with the new column NULL and its postimages with the source's
// value, in change data files of the evolved schema.
func TestChangesOfMergeWithSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	tb, _ := dmlTable(t, cdfProps, nil, []dmlRow{{1, sp("a"), ip(10), nil}, {2, sp("b"), ip(20), nil}}) // v1
	sch := arrow.NewSchema(append(append([]arrow.Field(nil), dmlSchema.Fields()...), arrow.Field{Name: "extra", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "c"}, nil)
	b.Field(2).(*array.Int64Builder).AppendValues([]int64{11, 30}, nil)
	b.Field(3).AppendNulls(2)
	b.Field(4).(*array.Int64Builder).AppendValues([]int64{100, 300}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, _ := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
	opts := table.Upsert("id")
	opts.MergeSchema = true
	if _, err := tb.Merge(ctx, rdr, opts); err != nil { // v2
		t.Fatal(err)
	}
	got := changeRows(t, tb, table.AtVersion(0), table.Latest(), table.WithColumns("_commit_version", "_change_type", "id", "qty", "extra"))
	sameStrings(t, "changes", got, []string{"1|insert|1|10|NULL", "1|insert|2|20|NULL",
		"2|update_preimage|1|10|NULL", "2|update_postimage|1|11|100", "2|insert|3|30|300"})
}
