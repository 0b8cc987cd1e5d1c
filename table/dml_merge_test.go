package table_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
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

// TestMergeFindsFilesWithEveryLevel: the MERGE key predicate prunes with partition
// values, file statistics, the Bloom index (files whose key ranges overlap) and, inside
// the files read, row groups and pages.
func TestMergeFindsFilesWithEveryLevel(t *testing.T) {
	ctx := context.Background()
	t.Run("bloom index on interleaved keys", func(t *testing.T) {
		// Ten files whose key ranges all overlap (file k holds ids = k mod 10): only the
		// Bloom index tells them apart.
		var commits [][]dmlRow
		for k := 0; k < 10; k++ {
			var rows []dmlRow
			for i := k; i < 1000; i += 10 {
				rows = append(rows, dmlRow{id: int64(i), grp: sp("a"), qty: ip(1), note: sp("n")})
			}
			commits = append(commits, rows)
		}
		tb, _ := dmlTable(t, map[string]string{log.PropEnableDeletionVectors: "true", log.PropBloomFilterColumns: "id"}, nil, commits...)
		src := []dmlRow{{id: 13, qty: ip(2)}, {id: 57, qty: ip(2)}, {id: 5000, qty: ip(2)}}
		rdr := mergeSourceOf(src)
		res, err := tb.Merge(ctx, rdr, table.Upsert("id"))
		rdr.Release()
		require.NoError(t, err)
		require.Equal(t, 2, res.FilesRead, "files read: only the two holding keys 13 and 57")
		require.EqualValues(t, 8, res.Report.Level("bloom").Skipped, "the Bloom index skipped the others")
		require.EqualValues(t, 2, res.RowsUpdated)
		require.EqualValues(t, 1, res.RowsInserted)
	})
	t.Run("partition values", func(t *testing.T) {
		rows := dmlSampleRows(300, func(i int) string { return []string{"a", "b", "c"}[i%3] })
		tb, _ := dmlTable(t, dvProps, []string{"grp"}, rows)
		src := []dmlRow{{id: 3, grp: sp("a"), qty: ip(9)}}
		rdr := mergeSourceOf(src)
		res, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id", "grp"}, WhenMatched: []table.MergeClause{{Action: table.MergeUpdate}}})
		rdr.Release()
		require.NoError(t, err)
		require.Equal(t, 1, res.FilesRead)
		require.EqualValues(t, 2, res.Report.Level("partition").Skipped)
	})
	t.Run("row groups and pages", func(t *testing.T) {
		// One file of many row groups and pages sorted by id.
		var rows []dmlRow
		for i := 0; i < 300_000; i++ {
			rows = append(rows, dmlRow{id: int64(i), grp: sp("g"), qty: ip(int64(i % 97)), note: sp(fmt.Sprintf("note %d %d", i, i*7919%100003))})
		}
		tb, _ := dmlTable(t, map[string]string{log.PropEnableDeletionVectors: "true", log.PropTargetFileSize: "2mb"}, nil, rows)
		src := []dmlRow{{id: 123_456, qty: ip(-1), grp: sp("g")}, {id: 250_001, qty: ip(-1), grp: sp("g")}}
		rdr := mergeSourceOf(src)
		res, err := tb.Merge(ctx, rdr, table.Upsert("id"))
		rdr.Release()
		require.NoError(t, err)
		rg, pg := res.Report.Level("rowgroup"), res.Report.Level("page")
		t.Logf("row groups %+v, pages (rows) %+v", rg, pg)
		require.Greater(t, rg.Total, int64(2), "the file has several row groups")
		require.GreaterOrEqual(t, rg.Skipped, rg.Total-2, "row groups without the keys are skipped")
		require.Greater(t, pg.Skipped, int64(0), "pages without the keys are skipped")
		require.EqualValues(t, 2, res.RowsUpdated)
	})
}

// TestMergeSpillsAndCleansUp: a source over the memory budget is partitioned into spill
// files in SpillDir, merged in several passes, and the spill files are gone afterwards.
func TestMergeSpillsAndCleansUp(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(2000, func(i int) string { return "a" })
	tb, _ := dmlTable(t, dvProps, nil, rows[:1000], rows[1000:])
	var src []dmlRow
	for i := 500; i < 3500; i++ {
		src = append(src, dmlRow{id: int64(i), grp: sp("b"), qty: ip(1), note: sp("s")})
	}
	spill := t.TempDir()
	opts := table.Upsert("id")
	opts.MemoryBudget, opts.SpillDir = 20<<10, spill
	rdr := mergeSourceOf(src)
	res, err := tb.Merge(ctx, rdr, opts)
	rdr.Release()
	require.NoError(t, err)
	require.Greater(t, res.Passes, 2)
	require.EqualValues(t, 1500, res.RowsUpdated)
	require.EqualValues(t, 1500, res.RowsInserted)
	// Rows 500..999 of the first file were updated over several passes: one vector; the
	// second file was replaced whole.
	require.Equal(t, 1, res.DeletionVectorsAdded, "one deletion vector per file, whatever the passes")
	require.Equal(t, 1, res.FilesRemoved)
	for _, f := range res.Files {
		if f.Action == table.FileDeletionVector {
			require.EqualValues(t, 500, f.RowsDeleted)
		}
	}
	left, err := os.ReadDir(spill)
	require.NoError(t, err)
	require.Empty(t, left, "spill files left behind")
	want := dmlRowStrings(upsertOracle(rows, src))
	require.Equal(t, want, dmlRowsAt(t, tb, table.Latest()))
}

// TestMergeSourceTypesConverted: source columns of other (convertible) types than the
// table's — an int32 key, a large_string — are converted for matching and inserting;
// an extra source column is usable in conditions; a missing one fails clearly.
func TestMergeSourceTypesConverted(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(20, func(int) string { return "a" })
	tb, _ := dmlTable(t, dvProps, nil, rows)
	srcSchema := arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int32},
		{Name: "grp", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "op", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, srcSchema)
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{2, 3, 100}, nil)
	b.Field(1).(*array.LargeStringBuilder).AppendValues([]string{"x", "x", "y"}, nil)
	b.Field(2).(*array.Int64Builder).AppendValues([]int64{7, 7, 7}, nil)
	b.Field(3).(*array.StringBuilder).AppendValues([]string{"s", "s", "s"}, nil)
	b.Field(4).(*array.StringBuilder).AppendValues([]string{"upsert", "delete", "upsert"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	rdr, _ := array.NewRecordReader(srcSchema, []arrow.RecordBatch{rec})
	res, err := tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"id"},
		WhenMatched: []table.MergeClause{
			{Action: table.MergeDelete, Condition: "source.op = 'delete'"},
			{Action: table.MergeUpdate},
		},
		WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert, Condition: "op = 'upsert'"}},
	})
	rdr.Release()
	require.NoError(t, err)
	require.EqualValues(t, 1, res.RowsUpdated)
	require.EqualValues(t, 1, res.RowsDeleted)
	require.EqualValues(t, 1, res.RowsInserted)
	var want []dmlRow
	for _, r := range rows {
		switch r.id {
		case 2:
			want = append(want, dmlRow{id: 2, grp: sp("x"), qty: ip(7), note: sp("s")})
		case 3:
		default:
			want = append(want, r)
		}
	}
	want = append(want, dmlRow{id: 100, grp: sp("y"), qty: ip(7), note: sp("s")})
	require.Equal(t, dmlRowStrings(want), dmlRowsAt(t, tb, table.Latest()))

	// A source without some table columns: UPDATE SET * keeps the target's values
	// of them, INSERT * writes NULL (as Delta's MERGE does).
	short := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	sb := array.NewRecordBuilder(memory.DefaultAllocator, short)
	sb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 500}, nil)
	sb.Field(1).(*array.Int32Builder).AppendValues([]int32{70, 71}, nil)
	srec := sb.NewRecordBatch()
	sb.Release()
	defer srec.Release()
	rdr, _ = array.NewRecordReader(short, []arrow.RecordBatch{srec})
	res, err = tb.Merge(ctx, rdr, table.Upsert("id"))
	rdr.Release()
	require.NoError(t, err)
	require.EqualValues(t, 1, res.RowsUpdated)
	require.EqualValues(t, 1, res.RowsInserted)
	for i, r := range want {
		if r.id == 1 {
			want[i].qty = ip(70)
		}
	}
	want = append(want, dmlRow{id: 500, qty: ip(71)})
	require.Equal(t, dmlRowStrings(want), dmlRowsAt(t, tb, table.Latest()))

	// A NOT NULL column the source lacks cannot be inserted.
	noKey := arrow.NewSchema([]arrow.Field{{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	nb := array.NewRecordBuilder(memory.DefaultAllocator, noKey)
	nb.Field(0).(*array.Int64Builder).AppendValues([]int64{1}, nil)
	nb.Field(1).(*array.Int64Builder).AppendValues([]int64{1}, nil)
	nrec := nb.NewRecordBatch()
	nb.Release()
	defer nrec.Release()
	rdr, _ = array.NewRecordReader(noKey, []arrow.RecordBatch{nrec})
	_, err = tb.Merge(ctx, rdr, table.MergeOptions{On: []string{"qty"}, WhenNotMatched: []table.MergeClause{{Action: table.MergeInsert}}})
	rdr.Release()
	require.ErrorIs(t, err, table.ErrNullInNonNullable)
	require.Contains(t, err.Error(), `no column "id"`)
}

// TestDMLDryRunMatchesRun: a dry run of UPDATE and MERGE on a partitioned table
// reports the rows, the files read and removed and the files added (one per partition
// written, the rows being few) that the real command then reports, and commits
// nothing.
func TestDMLDryRunMatchesRun(t *testing.T) {
	ctx := context.Background()
	type cmd struct {
		name string
		run  func(tb *table.Table, dry bool) (*table.DMLResult, error)
	}
	cmds := []cmd{
		{"UPDATE moving rows to new partitions", func(tb *table.Table, dry bool) (*table.DMLResult, error) {
			return tb.Update(ctx, "qty = 3", table.UpdateOptions{Set: "grp = 'x' || grp", DMLOptions: table.DMLOptions{DryRun: dry}})
		}},
		{"MERGE updating and inserting into several partitions", func(tb *table.Table, dry bool) (*table.DMLResult, error) {
			src := []dmlRow{{id: 1, grp: sp("a"), qty: ip(9)}, {id: 2, grp: sp("new1"), qty: ip(9)}, {id: 500, grp: sp("new2"), qty: ip(9)},
				{id: 501, grp: sp("new3"), qty: ip(9)}, {id: 502, grp: nil, qty: ip(9)}}
			rdr := mergeSourceOf(src)
			defer rdr.Release()
			opts := table.Upsert("id")
			opts.DryRun = dry
			return tb.Merge(ctx, rdr, opts)
		}},
	}
	for _, c := range cmds {
		for _, dvOn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dv=%v", c.name, dvOn), func(t *testing.T) {
				props := map[string]string{}
				if dvOn {
					props = dvProps
				}
				rows := dmlSampleRows(90, func(i int) string { return []string{"a", "b", "c"}[i%3] })
				tb, _ := dmlTable(t, props, []string{"grp"}, rows[:45], rows[45:])
				head, err := tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				dry, err := c.run(tb, true)
				require.NoError(t, err)
				now, err := tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				require.Equal(t, head.Version(), now.Version(), "a dry run committed")
				require.Equal(t, dmlRowStrings(rows), dmlRowsAt(t, tb, table.Latest()))
				real, err := c.run(tb, false)
				require.NoError(t, err)
				require.True(t, dry.DryRun)
				require.EqualValues(t, -1, dry.Version)
				require.Greater(t, real.FilesAdded, 1, "the rows go to several partitions")
				type counts struct {
					Updated, Inserted, Deleted         int64
					Read, Removed, Added, DVs, Entries int
				}
				of := func(r *table.DMLResult) counts {
					return counts{r.RowsUpdated, r.RowsInserted, r.RowsDeleted, r.FilesRead, r.FilesRemoved, r.FilesAdded, r.DeletionVectorsAdded, len(r.Files)}
				}
				require.Equal(t, of(real), of(dry))
			})
		}
	}
}

// TestMergeBudgetCapsRowGroups: under a MemoryBudget, the files MERGE writes have row
// groups of at most budget/8 (at least 1 MiB; the writer holds an open row group's
// pages until it ends), cut as any row group is (overshooting by at most a slice); the
// default budget keeps the row groups of the target file size. The rows are all there
// either way.
func TestMergeBudgetCapsRowGroups(t *testing.T) {
	ctx := context.Background()
	const tableRows, srcRows = 1000, 200_000
	for _, c := range []struct {
		budget    int64
		maxRG     int64 // compressed bytes allowed per row group (cap plus a slice)
		minGroups int
	}{
		{budget: 8 << 20, maxRG: (1 << 20) * 3 / 2, minGroups: 2},
		{budget: 0, maxRG: 24 << 20, minGroups: 1},
	} {
		t.Run(fmt.Sprintf("budget=%d", c.budget), func(t *testing.T) {
			dir := t.TempDir()
			dmlBenchBase(t, dir, tableRows, 1)
			tb, err := table.OpenURL(ctx, dir)
			require.NoError(t, err)
			opts := table.Upsert("id")
			opts.MemoryBudget = c.budget
			var recs []arrow.RecordBatch
			for start := tableRows; start < tableRows+srcRows; start += 50_000 {
				ids := make([]int64, 50_000)
				for i := range ids {
					ids[i] = int64(start + i)
				}
				recs = append(recs, dmlBenchBatch(ids, uint64(start)))
			}
			src, err := array.NewRecordReader(dmlBenchSchema, recs)
			require.NoError(t, err)
			for _, r := range recs {
				r.Release()
			}
			defer src.Release()
			res, err := tb.Merge(ctx, src, opts)
			require.NoError(t, err)
			require.Equal(t, int64(srcRows), res.RowsInserted)
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			var total int64
			groups := 0
			for _, a := range snap.Log().Files() {
				p, err := a.DecodedPath()
				require.NoError(t, err)
				md := openParquet(t, tb.Storage(), p).MetaData()
				for rg := 0; rg < md.NumRowGroups(); rg++ {
					g := md.RowGroup(rg)
					total += g.NumRows()
					require.LessOrEqual(t, g.TotalCompressedSize(), c.maxRG, "%s row group %d", p, rg)
				}
				if md.NumRows > int64(tableRows) {
					groups = max(groups, md.NumRowGroups())
				}
			}
			require.GreaterOrEqual(t, groups, c.minGroups)
			if c.budget == 0 {
				require.Equal(t, 1, groups, "default budget: one row group for a small file")
			}
			require.Equal(t, int64(tableRows+srcRows), total)
		})
	}
}
