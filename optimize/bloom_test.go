package optimize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/vacuum"
	"github.com/skiplake/skiplake/value"
)

// bloomValue converts row i of a column of the test schema (id: int64, s: string)
// to the literal a reader would probe with.
func bloomValue(t *testing.T, col arrow.Array, i int) value.Value {
	t.Helper()
	switch a := col.(type) {
	case *array.Int64:
		return value.Int64(a.Value(i))
	case *array.String:
		return value.String(a.Value(i))
	}
	t.Fatalf("unexpected column type %s", col.DataType())
	return value.Null()
}

// checkBloomCoverage checks every live file of the table: its tag names an index
// file listing exactly cols, the index holds a filter per column for the file's
// path that contains every value of the file (B2, no false negatives) and rejects
// most absent ones, and every row group of the Parquet file carries a native
// split-block filter that contains every value of the row group and rejects most
// absent ones. It returns the distinct index files.
func checkBloomCoverage(t *testing.T, tt *testTable, cols []string) map[string]*bloom.Index {
	t.Helper()
	ctx := context.Background()
	indexes := map[string]*bloom.Index{}
	for _, a := range tt.snapshot(t).Files() {
		raw, ok := a.Tags[bloom.TagKey]
		if !ok {
			t.Fatalf("%s has no %s tag (tags %v)", a.Path, bloom.TagKey, a.Tags)
		}
		tag, err := bloom.DecodeTag(raw)
		if err != nil {
			t.Fatalf("%s: %v", a.Path, err)
		}
		if !slices.Equal(tag.Columns, cols) {
			t.Fatalf("%s: tag columns %q, want %q", a.Path, tag.Columns, cols)
		}
		ix := indexes[tag.Path]
		if ix == nil {
			data, err := tt.store.Get(ctx, tag.Path)
			if err != nil {
				t.Fatalf("%s: index file: %v", a.Path, err)
			}
			if ix, err = bloom.ReadIndex(data); err != nil {
				t.Fatalf("%s: index file %s: %v", a.Path, tag.Path, err)
			}
			indexes[tag.Path] = ix
		}
		for _, c := range cols {
			f, ok := ix.Filter(a.Path, c)
			if !ok {
				t.Fatalf("index %s has no filter for (%s, %s)", tag.Path, a.Path, c)
			}
			ci := tt.dataSch.FieldIndices(c)[0]
			var rows int
			tt.readRecords(t, a, func(rec arrow.RecordBatch) {
				for i := 0; i < int(rec.NumRows()); i++ {
					if rec.Column(ci).IsNull(i) {
						continue
					}
					rows++
					if v := bloomValue(t, rec.Column(ci), i); !f.MightContain(v) {
						t.Fatalf("%s: filter on %s misses value %v (false negative)", a.Path, c, v)
					}
				}
			})
			if rows == 0 {
				t.Fatalf("%s: no non-null values of %s read", a.Path, c)
			}
			// A working filter accepts about 1000×rate absent values; allow twice that
			// plus slack for chance (tables here use rates from 0.0001 to 0.05).
			if fp, limit := falsePositives(f.MightContain, c), int(2000*f.EstimatedFPP())+20; fp > limit {
				t.Fatalf("%s: filter on %s accepts %d of 1000 absent values (limit %d at estimated rate %.4f)", a.Path, c, fp, limit, f.EstimatedFPP())
			}
		}
		checkNativeFilters(t, tt, a, cols)
	}
	return indexes
}

// absent returns the i-th value of column c that the test tables never contain.
func absent(c string, i int) value.Value {
	if c == "id" {
		return value.Int64(int64(-1_000_000 - i))
	}
	return value.String(fmt.Sprintf("absent-%d", i))
}

func falsePositives(mightContain func(value.Value) bool, c string) int {
	n := 0
	for i := 0; i < 1000; i++ {
		if mightContain(absent(c, i)) {
			n++
		}
	}
	return n
}

// checkNativeFilters probes each row group's Parquet Bloom filter for every value
// of the row group, and for absent values.
func checkNativeFilters(t *testing.T, tt *testTable, a *log.Add, cols []string) {
	t.Helper()
	ctx := context.Background()
	p, err := a.DecodedPath()
	if err != nil {
		t.Fatal(err)
	}
	data, err := tt.store.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	md := rdr.MetaData()
	for _, c := range cols {
		leaf := md.Schema.ColumnIndexByName(c)
		if leaf < 0 {
			t.Fatalf("%s: no leaf column %s", p, c)
		}
		phys := md.Schema.Column(leaf).PhysicalType()
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			tbl, err := fr.ReadRowGroups(ctx, []int{leaf}, []int{rg})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, chunk := range tbl.Column(0).Data().Chunks() {
				for i := 0; i < chunk.Len(); i++ {
					if chunk.IsNull(i) {
						continue
					}
					v := bloomValue(t, chunk, i)
					if seen[v.String()] {
						continue
					}
					seen[v.String()] = true
					ok, err := bloom.RowGroupMightContain(rdr, rg, leaf, v, phys)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						t.Fatalf("%s row group %d: native filter on %s misses %v", p, rg, c, v)
					}
				}
			}
			tbl.Release()
			fp := falsePositives(func(v value.Value) bool {
				ok, err := bloom.RowGroupMightContain(rdr, rg, leaf, v, phys)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}, c)
			if fp > 100 {
				t.Fatalf("%s row group %d: native filter on %s accepts %d of 1000 absent values (missing filter?)", p, rg, c, fp)
			}
		}
	}
}

// checkIndexCoversCommit checks that an index file holds exactly one entry per
// (file, column) for the files tagged with it.
func checkIndexCoversCommit(t *testing.T, tt *testTable, indexes map[string]*bloom.Index, cols []string) {
	t.Helper()
	tagged := map[string]int{}
	for _, a := range tt.snapshot(t).Files() {
		tag, _ := bloom.DecodeTag(a.Tags[bloom.TagKey])
		tagged[tag.Path]++
	}
	for path, ix := range indexes {
		if ix.Len() != tagged[path]*len(cols) {
			t.Errorf("index %s has %d entries for %d files × %d columns", path, ix.Len(), tagged[path], len(cols))
		}
	}
}

func TestOptimizeWritesBloomFilters(t *testing.T) {
	parts := []*string{ptr("a"), ptr("b"), nil}
	cases := []struct {
		name        string
		partCol     string
		parts       []*string
		props       map[string]string
		opts        Options
		wantCols    []string
		wantIndexes int // index files (= commits)
	}{
		{"compaction with columns from the table property", "", nil,
			map[string]string{bloom.PropColumns: "id,s"}, Options{TargetFileSize: 1 << 30}, []string{"id", "s"}, 1},
		{"compaction with columns from options", "", nil,
			nil, Options{TargetFileSize: 1 << 30, BloomColumns: []string{"S", "id"}}, []string{"s", "id"}, 1},
		{"property and option columns are united", "p", parts,
			map[string]string{bloom.PropColumns: "id"}, Options{TargetFileSize: 1 << 30, BloomColumns: []string{"s", "ID"}}, []string{"id", "s"}, 1},
		{"one index file per commit", "p", parts,
			map[string]string{bloom.PropColumns: "id"}, Options{TargetFileSize: 1 << 30, CommitEvery: 1}, []string{"id"}, 3},
		{"z-order clustering", "", nil,
			map[string]string{bloom.PropColumns: "s"}, Options{TargetFileSize: 64 << 10, Curve: CurveZOrder, ClusterBy: []string{"x", "y"}}, []string{"s"}, 1},
		{"clustering through spill files", "", nil,
			nil, Options{TargetFileSize: 64 << 10, Curve: CurveHilbert, ClusterBy: []string{"x", "y"}, MemoryBudget: 64 << 10, BloomColumns: []string{"id"}}, []string{"id"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tt := newTestTable(t, c.partCol, c.props)
			var recs []arrow.RecordBatch
			for i := 0; i < 6; i++ {
				recs = append(recs, genRecord(600, int64(i*600), uint64(i+1)))
			}
			tt.appendFiles(t, recs, c.parts)
			for _, r := range recs {
				r.Release()
			}
			before := tt.rows(t)
			plan, m := runOptimize(t, tt, c.opts)
			if !slices.Equal(plan.BloomColumns, c.wantCols) {
				t.Fatalf("plan Bloom columns %q, want %q", plan.BloomColumns, c.wantCols)
			}
			if plan.BloomFPP != bloom.DefaultFPP {
				t.Fatalf("plan BloomFPP %v", plan.BloomFPP)
			}
			if m.NumBloomIndexFiles != c.wantIndexes || len(m.Versions) != c.wantIndexes {
				t.Fatalf("%d index files in %d commits, want %d", m.NumBloomIndexFiles, len(m.Versions), c.wantIndexes)
			}
			if c.opts.MemoryBudget > 0 && m.SpilledBytes == 0 {
				t.Fatal("the spill path was not taken")
			}
			if after := tt.rows(t); !slices.Equal(before, after) {
				t.Fatalf("rows changed: %d before, %d after", len(before), len(after))
			}
			indexes := checkBloomCoverage(t, tt, c.wantCols)
			if len(indexes) != c.wantIndexes {
				t.Fatalf("live files name %d index files, want %d", len(indexes), c.wantIndexes)
			}
			checkIndexCoversCommit(t, tt, indexes, c.wantCols)
			var idxObjects []string
			for _, o := range tt.objects(t) {
				if strings.HasPrefix(o, bloom.IndexDir) {
					idxObjects = append(idxObjects, o)
				}
			}
			if len(idxObjects) != c.wantIndexes {
				t.Fatalf("index objects in storage: %v", idxObjects)
			}
		})
	}
}

// TestBloomFPPOption checks that Options.BloomFPP overrides the table property and
// reaches the filters (a smaller rate means more bits per value).
func TestBloomFPPOption(t *testing.T) {
	bits := map[float64]float64{}
	for _, fpp := range []float64{0, 0.0001} {
		tt := newTestTable(t, "", map[string]string{bloom.PropColumns: "id", bloom.PropFPP: "0.05"})
		tt.appendFiles(t, []arrow.RecordBatch{genRecord(2000, 0, 1), genRecord(2000, 2000, 2)}, nil)
		plan, _ := runOptimize(t, tt, Options{TargetFileSize: 1 << 30, BloomFPP: fpp})
		want := fpp
		if fpp == 0 {
			want = 0.05
		}
		if plan.BloomFPP != want {
			t.Fatalf("BloomFPP %v: plan rate %v, want %v", fpp, plan.BloomFPP, want)
		}
		for _, ix := range checkBloomCoverage(t, tt, []string{"id"}) {
			for _, e := range ix.Entries() {
				bits[want] = float64(e.Filter.Bits()) / float64(e.Filter.Distinct())
			}
		}
	}
	if !(bits[0.0001] > 2*bits[0.05]) {
		t.Fatalf("bits per value: %v at 0.0001, %v at 0.05", bits[0.0001], bits[0.05])
	}
}

func TestBloomBackfill(t *testing.T) {
	ctx := context.Background()
	tt := smallTable(t, "p", []*string{ptr("a"), nil}, 4, 800)
	before := tt.rows(t)
	// Every file is "large" for compaction: without backfill nothing is planned.
	base := Options{TargetFileSize: 1 << 30, MinFileSize: 1}
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, base)
	if err != nil {
		t.Fatal(err)
	}
	if plan.NumBins != 0 {
		t.Fatalf("without Bloom columns %d bins planned", plan.NumBins)
	}

	opts := base
	opts.BloomColumns = []string{"id"}
	plan, m := runOptimize(t, tt, opts)
	if plan.NumBins != 2 || plan.NumFiles != 4 || plan.BackfillFiles != 4 {
		t.Fatalf("backfill plan: %d bins, %d files, %d backfill files; want 2, 4, 4", plan.NumBins, plan.NumFiles, plan.BackfillFiles)
	}
	if !slices.Equal(plan.NewBloomColumns, []string{"id"}) {
		t.Fatalf("new Bloom columns %q", plan.NewBloomColumns)
	}
	if len(m.Versions) != 1 {
		t.Fatalf("versions %v", m.Versions)
	}
	if got := tt.snapshot(t).Metadata().Configuration[bloom.PropColumns]; got != "id" {
		t.Fatalf("property after first backfill: %q", got)
	}
	checkBloomCoverage(t, tt, []string{"id"})

	// The property now lists id: the same run finds nothing to do and commits nothing.
	plan, m = runOptimize(t, tt, opts)
	if plan.NumBins != 0 || len(plan.NewBloomColumns) != 0 || len(m.Versions) != 0 {
		t.Fatalf("second run: %d bins, new columns %q, versions %v", plan.NumBins, plan.NewBloomColumns, m.Versions)
	}

	// A file that is covered and large stays alone even when backfilling another
	// column is requested explicitly but none is missing.
	plan, _ = runOptimize(t, tt, Options{TargetFileSize: 1 << 30, MinFileSize: 1, BackfillBloom: true})
	if plan.NumBins != 0 {
		t.Fatalf("explicit BackfillBloom with every file covered: %d bins", plan.NumBins)
	}

	// A new column: everything is rewritten again, the property is the union.
	opts.BloomColumns = []string{"s"}
	plan, _ = runOptimize(t, tt, opts)
	if plan.BackfillFiles == 0 || !slices.Equal(plan.BloomColumns, []string{"id", "s"}) {
		t.Fatalf("third run: %d backfill files, columns %q", plan.BackfillFiles, plan.BloomColumns)
	}
	if got := tt.snapshot(t).Metadata().Configuration[bloom.PropColumns]; got != "id,s" {
		t.Fatalf("property after second backfill: %q", got)
	}
	checkBloomCoverage(t, tt, []string{"id", "s"})
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatalf("rows changed by backfill")
	}
	tt.checkStats(t)
}

// TestBloomBackfillSingleFileBins checks that a lone uncovered file is rewritten on
// its own, which compaction otherwise never does.
func TestBloomBackfillSingleFileBins(t *testing.T) {
	tt := smallTable(t, "", nil, 1, 500)
	plan, m := runOptimize(t, tt, Options{BloomColumns: []string{"id"}})
	if plan.NumBins != 1 || m.NumAddedFiles != 1 || m.NumRemovedFiles != 1 {
		t.Fatalf("%d bins, %d added, %d removed", plan.NumBins, m.NumAddedFiles, m.NumRemovedFiles)
	}
	checkBloomCoverage(t, tt, []string{"id"})
}

// TestBloomBackfillKeepsFinishedCubes checks that a clustering run that backfills
// rewrites the files of a finished cube one by one, keeping their cube tags.
func TestBloomBackfillKeepsFinishedCubes(t *testing.T) {
	tt := smallTable(t, "", nil, 6, 800)
	cl := Options{TargetFileSize: 32 << 10, MinCubeSize: 1, Curve: CurveZOrder, ClusterBy: []string{"x", "y"}}
	runOptimize(t, tt, cl)
	cube := map[string]string{}
	for _, a := range tt.snapshot(t).Files() {
		cube[a.Tags[TagCubeID]] = a.Tags[TagCubeColumns]
	}
	if len(cube) != 1 {
		t.Fatalf("first run made cubes %v", cube)
	}
	boxesBefore := boxes(t, tt.snapshot(t))
	nFiles := len(boxesBefore)
	before := tt.rows(t)
	groupsBefore := rowGroupRows(t, tt)

	again := cl
	again.BloomColumns = []string{"s"}
	plan, m := runOptimize(t, tt, again)
	if plan.FinishedCubeFiles != 0 || plan.NumFiles != nFiles || plan.BackfillFiles != nFiles {
		t.Fatalf("plan: %d finished cube files, %d files, %d backfill files; table has %d files",
			plan.FinishedCubeFiles, plan.NumFiles, plan.BackfillFiles, nFiles)
	}
	for _, pp := range plan.Partitions {
		for _, b := range pp.Bins {
			if b.Kind != KindCompact || len(b.Files) != 1 {
				t.Fatalf("bin %s of %d files, want single-file compaction bins", b.Kind, len(b.Files))
			}
		}
	}
	if m.NumAddedFiles != nFiles {
		t.Fatalf("added %d files, want %d", m.NumAddedFiles, nFiles)
	}
	for _, a := range tt.snapshot(t).Files() {
		if _, ok := cube[a.Tags[TagCubeID]]; !ok || a.Tags[TagCubeCurve] != "zorder" || a.Tags[TagTargetSize] == "" {
			t.Fatalf("%s lost its cube tags: %v", a.Path, a.Tags)
		}
	}
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatal("rows changed")
	}
	if got := boxes(t, tt.snapshot(t)); !sameBoxes(got, boxesBefore) {
		t.Fatalf("file ranges changed: %v, was %v", got, boxesBefore)
	}
	checkBloomCoverage(t, tt, []string{"s"})
	// Each file keeps its row groups (issue 28 item 7: a backfill used to merge
	// them into row groups of the writer's target size).
	if got := rowGroupRows(t, tt); !slices.Equal(got, groupsBefore) {
		t.Fatalf("row groups (rows per row group, per file) %v, were %v", got, groupsBefore)
	}
	// Nothing is left to do for the same clustering.
	plan, _ = runOptimize(t, tt, again)
	if plan.NumBins != 0 {
		t.Fatalf("third run planned %d bins", plan.NumBins)
	}
}

// rowGroupRows lists, per live file, the rows of each of its row groups, files
// ordered by their first id (a rewrite renames them).
func rowGroupRows(t *testing.T, tt *testTable) []string {
	t.Helper()
	var out []string
	for _, a := range tt.snapshot(t).Files() {
		p, err := a.DecodedPath()
		if err != nil {
			t.Fatal(err)
		}
		data, err := tt.store.Get(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var rows []int64
		for rg := 0; rg < rdr.NumRowGroups(); rg++ {
			rows = append(rows, rdr.MetaData().RowGroup(rg).NumRows())
		}
		rdr.Close()
		out = append(out, fmt.Sprintf("%s %v", a.Stats[:min(len(a.Stats), 200)], rows))
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatal("no files")
	}
	return out
}

// TestBloomBackfillKeepsRowGroups: files clustered with small row groups keep
// them when a run with a larger target (larger row groups) backfills their Bloom
// filters; before, the backfill re-encoded each file into row groups of its own
// target size (issue 28 item 7: 184 row groups became 24).
func TestBloomBackfillKeepsRowGroups(t *testing.T) {
	rows := 20_000
	if testing.Short() {
		rows = 12_000
	}
	tt := smallTable(t, "", nil, 6, rows)
	cl := Options{TargetFileSize: 4 << 20, MinCubeSize: 1, Curve: CurveZOrder, ClusterBy: []string{"x", "y"}}
	runOptimize(t, tt, cl)
	before := tt.rows(t)
	groupsBefore := rowGroupRows(t, tt)
	several := 0
	for _, g := range groupsBefore {
		if strings.Count(g[strings.LastIndex(g, "["):], " ") > 0 {
			several++
		}
	}
	if several == 0 {
		t.Fatalf("test needs files of several row groups: %v", groupsBefore)
	}
	again := cl
	again.TargetFileSize = 256 << 20 // row groups of 32 MiB
	again.BloomColumns = []string{"id"}
	plan, _ := runOptimize(t, tt, again)
	if plan.BackfillFiles != len(groupsBefore) {
		t.Fatalf("%d backfill files, want %d", plan.BackfillFiles, len(groupsBefore))
	}
	checkBloomCoverage(t, tt, []string{"id"})
	if got := rowGroupRows(t, tt); !slices.Equal(got, groupsBefore) {
		t.Fatalf("row groups (rows per row group, per file) %v, were %v", got, groupsBefore)
	}
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatal("rows changed")
	}
}

func sameBoxes(a, b []fileBox) bool {
	key := func(x fileBox) string { return fmt.Sprint(x) }
	var ka, kb []string
	for _, x := range a {
		ka = append(ka, key(x))
	}
	for _, x := range b {
		kb = append(kb, key(x))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// TestBloomPropertyUpdate checks the metaData update: the union keeps the existing
// columns first, other properties are kept, a differently cased key is not read
// (reads use the canonical key only) and is replaced, and a run with nothing to
// rewrite still persists the columns.
func TestBloomPropertyUpdate(t *testing.T) {
	t.Run("a differently cased key is not read and is replaced", func(t *testing.T) {
		tt := newTestTable(t, "", map[string]string{"SKIPLAKE.BLOOMFILTER.COLUMNS": "s", "delta.appendOnly": "false"})
		tt.appendFiles(t, []arrow.RecordBatch{genRecord(300, 0, 1)}, nil)
		runOptimize(t, tt, Options{BloomColumns: []string{"id"}})
		conf := tt.snapshot(t).Metadata().Configuration
		if len(conf) != 2 || conf[bloom.PropColumns] != "id" || conf["delta.appendOnly"] != "false" {
			t.Fatalf("configuration %v, want only the canonical key with id, and delta.appendOnly", conf)
		}
	})
	t.Run("merged into the existing property", func(t *testing.T) {
		tt := newTestTable(t, "", map[string]string{bloom.PropColumns: "s", "delta.appendOnly": "false"})
		tt.appendFiles(t, []arrow.RecordBatch{genRecord(300, 0, 1), genRecord(300, 300, 2)}, nil)
		_, m := runOptimize(t, tt, Options{BloomColumns: []string{"id", "s"}})
		conf := tt.snapshot(t).Metadata().Configuration
		want := map[string]string{bloom.PropColumns: "s,id", "delta.appendOnly": "false"}
		if len(conf) != len(want) || conf[bloom.PropColumns] != want[bloom.PropColumns] || conf["delta.appendOnly"] != "false" {
			t.Fatalf("configuration %v, want %v", conf, want)
		}
		if len(m.Versions) != 1 {
			t.Fatalf("versions %v: the property must change in the rewrite's commit", m.Versions)
		}
		info := commitInfoAt(t, tt, m.Versions[0])
		if info.DisplayParameters()["bloomFilterColumns"] != `["s","id"]` || info.IsolationLevel != log.SnapshotIsolation {
			t.Fatalf("commitInfo %+v", info)
		}
	})
	t.Run("empty table commits only the property", func(t *testing.T) {
		tt := newTestTable(t, "", nil)
		plan, m := runOptimize(t, tt, Options{BloomColumns: []string{"id"}})
		if plan.NumBins != 0 || len(m.Versions) != 1 || m.NumAddedFiles != 0 {
			t.Fatalf("%d bins, versions %v, %d added", plan.NumBins, m.Versions, m.NumAddedFiles)
		}
		if got := tt.snapshot(t).Metadata().Configuration[bloom.PropColumns]; got != "id" {
			t.Fatalf("property %q", got)
		}
	})
	t.Run("dry run changes nothing", func(t *testing.T) {
		tt := newTestTable(t, "", nil)
		tt.appendFiles(t, []arrow.RecordBatch{genRecord(300, 0, 1)}, nil)
		v := tt.snapshot(t).Version()
		_, m := runOptimize(t, tt, Options{BloomColumns: []string{"id"}, DryRun: true})
		if !m.DryRun || tt.snapshot(t).Version() != v {
			t.Fatalf("dry run committed: version %d, was %d", tt.snapshot(t).Version(), v)
		}
	})
	t.Run("last batch carries the property", func(t *testing.T) {
		tt := smallTable(t, "p", []*string{ptr("a"), ptr("b"), ptr("c")}, 6, 200)
		_, m := runOptimize(t, tt, Options{BloomColumns: []string{"id"}, CommitEvery: 1})
		if len(m.Versions) != 3 || m.Retries != 0 {
			t.Fatalf("versions %v, retries %d", m.Versions, m.Retries)
		}
		for i, v := range m.Versions {
			snap, err := tt.lg.Snapshot(context.Background(), v)
			if err != nil {
				t.Fatal(err)
			}
			_, has := snap.Metadata().Configuration[bloom.PropColumns]
			if has != (i == len(m.Versions)-1) {
				t.Fatalf("version %d (batch %d): property present = %v", v, i, has)
			}
		}
		checkBloomCoverage(t, tt, []string{"id"})
	})
}

func commitInfoAt(t *testing.T, tt *testTable, v int64) log.CommitInfo {
	t.Helper()
	data, err := tt.store.Get(context.Background(), log.CommitPath(v))
	if err != nil {
		t.Fatal(err)
	}
	acts, err := log.ParseCommit(log.CommitPath(v), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.CommitInfo != nil {
			return *a.CommitInfo
		}
	}
	t.Fatalf("version %d has no commitInfo", v)
	return log.CommitInfo{}
}

func TestBloomColumnValidation(t *testing.T) {
	nested := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, nil)
	cases := []struct {
		name    string
		schema  *arrow.Schema
		props   map[string]string
		opts    Options
		want    error
		message string
	}{
		{"unknown column", dataSchema, nil, Options{BloomColumns: []string{"nope"}}, ErrBloomColumn, `bloom filter column "nope": no such column`},
		{"partition column", dataSchema, nil, Options{BloomColumns: []string{"P"}}, ErrBloomColumn, "is a partition column"},
		{"nested column", nested, nil, Options{BloomColumns: []string{"st"}}, ErrBloomColumn, "cannot be Bloom-indexed"},
		{"dotted path to a nested field", nested, nil, Options{BloomColumns: []string{"st.a"}}, ErrBloomColumn, "only top-level columns"},
		{"column given twice", dataSchema, nil, Options{BloomColumns: []string{"id", "ID"}}, ErrInvalidOptions, "given twice"},
		{"empty column name", dataSchema, nil, Options{BloomColumns: []string{" "}}, ErrInvalidOptions, "empty Bloom filter column"},
		{"rate out of range", dataSchema, nil, Options{BloomFPP: 0.7}, ErrInvalidOptions, "BloomFPP 0.7"},
		{"property names an unknown column", dataSchema, map[string]string{bloom.PropColumns: "zz"}, Options{}, ErrInvalidOptions, `"zz"`},
		{"property rate malformed", dataSchema, map[string]string{bloom.PropFPP: "often"}, Options{}, log.ErrInvalidProperty, bloom.PropFPP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tt := newTestTableSchema(t, storage.NewMemory(), c.schema, "p", c.props)
			_, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, c.opts)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("err = %v, want %v containing %q", err, c.want, c.message)
			}
		})
	}
	var bce *BloomColumnError
	tt := newTestTable(t, "", nil)
	_, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{BloomColumns: []string{"nope"}})
	if !errors.As(err, &bce) || bce.Column != "nope" {
		t.Fatalf("err = %#v, want *BloomColumnError naming the column", err)
	}
}

var errInjected = errors.New("injected storage failure")

// failingStore fails PutIfAbsent of paths for which fail returns true.
type failingStore struct {
	storage.Storage
	fail func(path string) bool
}

func (s *failingStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if s.fail(p) {
		return fmt.Errorf("injected failure writing %s: %w", p, errInjected)
	}
	return s.Storage.PutIfAbsent(ctx, p, data)
}

// TestBloomFailureCleanup checks that a failed index write or commit leaves no new
// data or index file behind and the table unchanged.
func TestBloomFailureCleanup(t *testing.T) {
	cases := []struct {
		name string
		fail func(path string) bool
	}{
		{"index file cannot be written", func(p string) bool { return strings.HasPrefix(p, bloom.IndexDir) }},
		{"commit cannot be written", func(p string) bool { return strings.HasPrefix(p, "_delta_log/") && strings.HasSuffix(p, ".json") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := storage.NewMemory()
			tt := newTestTableOn(t, mem, "", nil)
			tt.appendFiles(t, []arrow.RecordBatch{genRecord(300, 0, 1), genRecord(300, 300, 2), genRecord(300, 600, 3)}, nil)
			objs := tt.objects(t)
			v := tt.snapshot(t).Version()
			fs := &failingStore{Storage: mem, fail: c.fail}
			snap, err := log.New(fs).Snapshot(context.Background(), -1)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := NewPlan(context.Background(), snap, fs, Options{BloomColumns: []string{"id"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Execute(context.Background(), plan); !errors.Is(err, errInjected) {
				t.Fatalf("Execute: err = %v, want the injected failure", err)
			}
			if got := tt.objects(t); !slices.Equal(got, objs) {
				t.Fatalf("objects after failure %v, want %v", got, objs)
			}
			if tt.snapshot(t).Version() != v {
				t.Fatal("the table changed")
			}
		})
	}
}

// TestBloomConflictRetryCleansUp checks that the index file of a commit lost to a
// concurrent removal is deleted with its data files, and the retry writes its own.
func TestBloomConflictRetryCleansUp(t *testing.T) {
	tt := smallTable(t, "", nil, 6, 500)
	cb, wait := midFlight(t, removeInputFile(tt, t))
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{TargetFileSize: 1 << 30, BloomColumns: []string{"id"}, Progress: cb, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Execute(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if m.Retries != 1 {
		t.Fatalf("retries %d, want 1", m.Retries)
	}
	indexes := checkBloomCoverage(t, tt, []string{"id"})
	var stored []string
	for _, o := range tt.objects(t) {
		if strings.HasPrefix(o, bloom.IndexDir) {
			stored = append(stored, o)
		}
	}
	if len(stored) != 1 || indexes[stored[0]] == nil {
		t.Fatalf("index files in storage %v, live ones %d", stored, len(indexes))
	}
}

// TestVacuumRemovesReplacedIndex checks that once OPTIMIZE rewrites the files of an
// index, VACUUM keeps the old index file while the tombstones are young and deletes
// it after the retention period, keeping the live one.
func TestVacuumRemovesReplacedIndex(t *testing.T) {
	ctx := context.Background()
	tt := newTestTable(t, "", map[string]string{bloom.PropColumns: "id"})
	tt.appendFiles(t, []arrow.RecordBatch{genRecord(300, 0, 1), genRecord(300, 300, 2)}, nil)
	runOptimize(t, tt, Options{TargetFileSize: 1 << 30})
	old := checkBloomCoverage(t, tt, []string{"id"})
	if len(old) != 1 {
		t.Fatalf("%d index files", len(old))
	}
	tt.appendFiles(t, []arrow.RecordBatch{genRecord(300, 600, 3)}, nil)
	runOptimize(t, tt, Options{TargetFileSize: 1 << 30})
	live := checkBloomCoverage(t, tt, []string{"id"})
	var oldPath, livePath string
	for p := range old {
		oldPath = p
	}
	for p := range live {
		livePath = p
	}
	if oldPath == livePath {
		t.Fatal("second OPTIMIZE reused the index file")
	}
	young, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(young.Files) != 0 {
		t.Fatalf("vacuum inside the retention deleted %v", young.Files)
	}
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Files, oldPath) || slices.Contains(res.Files, livePath) {
		t.Fatalf("vacuum deleted %v; old index %s, live index %s", res.Files, oldPath, livePath)
	}
	if _, err := tt.store.Stat(ctx, livePath); err != nil {
		t.Fatalf("live index: %v", err)
	}
	checkBloomCoverage(t, tt, []string{"id"})
}

// TestBloomPropertyUpdateConcurrency pins down the isolation of the commit that adds
// Bloom columns to the table property: an append landing while OPTIMIZE runs does
// not make it fail or retry (its file is simply not covered, and the next backfill
// run rewrites it), while a writer that commits afterwards from a snapshot older than
// the metadata change conflicts with ErrMetadataChanged.
func TestBloomPropertyUpdateConcurrency(t *testing.T) {
	ctx := context.Background()
	tt := smallTable(t, "", nil, 4, 500)
	stale := tt.snapshot(t)
	extra := genRecord(500, 10_000, 77)
	defer extra.Release()
	cb, wait := midFlight(t, func() error {
		tt.appendFiles(t, []arrow.RecordBatch{extra}, nil)
		return nil
	})
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, Options{TargetFileSize: 1 << 30, BloomColumns: []string{"id"}, Progress: cb, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Execute(ctx, plan)
	if err != nil {
		t.Fatalf("OPTIMIZE failed against a concurrent append: %v", err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if m.Retries != 0 {
		t.Fatalf("retries %d", m.Retries)
	}
	snap := tt.snapshot(t)
	if snap.Metadata().Configuration[bloom.PropColumns] != "id" {
		t.Fatalf("property not set: %v", snap.Metadata().Configuration)
	}
	uncovered := 0
	for _, a := range snap.Files() {
		if _, ok := a.Tags[bloom.TagKey]; !ok {
			uncovered++
		}
	}
	if uncovered != 1 {
		t.Fatalf("%d uncovered files, want the concurrently appended one", uncovered)
	}
	// The next run (the property alone now names id) backfills it.
	plan, _ = runOptimize(t, tt, Options{TargetFileSize: 1 << 30, BackfillBloom: true})
	if plan.BackfillFiles != 1 {
		t.Fatalf("backfill files %d, want 1", plan.BackfillFiles)
	}
	checkBloomCoverage(t, tt, []string{"id"})

	txn := stale.NewTransaction(logTxn())
	txn.Add(tt.writeFile(t, nil, extra, time.Now().UnixMilli()))
	if _, err := txn.Commit(ctx, commitWrite()); !errors.Is(err, log.ErrMetadataChanged) {
		t.Fatalf("stale writer: err = %v, want log.ErrMetadataChanged", err)
	}
}
