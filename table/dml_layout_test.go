package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// The layout property test: tables clustered by Z-order, Hilbert or liquid
// clustering on (id, qty), partitioned or not, with or without deletion vectors,
// take random DELETE, UPDATE and MERGE commands. After every command the rows equal
// a brute-force oracle's (as in TestDMLPropertyOracle), every row unchanged since
// the clustering run is still in a clustered file, each file of the run has at
// most one clustered descendant, and every clustered file the command wrote keeps
// its tags only where they are true: its rows are, in
// order, a subsequence of one file the clustering run wrote (so they lie inside
// that file's range of the cube and stay sorted by its key), with the clustering
// values and partition values of those rows, and the tags and clusteringProvider
// of that file.

// layoutOrigin is where a row was when the clustering run wrote it.
type layoutOrigin struct {
	file string // the clustering run's file
	pos  int    // its position in that file
	id   int64
	qty  *int64
	grp  *string
	row  string // the whole row, as the run wrote it
}

// fileRowsInOrder reads the live rows of a data file in file order (dmlSchema's
// columns; a partition column from the add's partition values).
func fileRowsInOrder(t *testing.T, st storage.Storage, a *log.Add) []dmlRow {
	t.Helper()
	ctx := context.Background()
	p, err := a.DecodedPath()
	if err != nil {
		t.Fatal(err)
	}
	data, err := st.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	opts := datafile.ReadOptions{}
	if a.DeletionVector != nil {
		if opts.Deleted, err = datafile.LoadDeletionVector(ctx, st, a.DeletionVector); err != nil {
			t.Fatal(err)
		}
	}
	r, err := datafile.Open(bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []dmlRow
	err = r.Read(ctx, r.Schema(), nil, func(rec arrow.RecordBatch, _ int64) error {
		col := func(name string) arrow.Array {
			for i, f := range rec.Schema().Fields() {
				if f.Name == name {
					return rec.Column(i)
				}
			}
			return nil
		}
		ids, qty, note, grp := col("id").(*array.Int64), col("qty").(*array.Int64), col("note").(*array.String), col("grp")
		for i := 0; i < int(rec.NumRows()); i++ {
			r := dmlRow{id: ids.Value(i)}
			if qty.IsValid(i) {
				r.qty = ip(qty.Value(i))
			}
			if note.IsValid(i) {
				r.note = sp(note.Value(i))
			}
			switch {
			case grp != nil && grp.IsValid(i):
				r.grp = sp(grp.(*array.String).Value(i))
			case grp == nil:
				if v := a.PartitionValues["grp"]; v != nil {
					r.grp = sp(*v)
				}
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDMLKeepsLayout(t *testing.T) {
	seeds := proofEnvInt(t, "SKIPLAKE_DML_SEEDS", 3)
	steps := proofEnvInt(t, "SKIPLAKE_DML_STEPS", 8)
	if testing.Short() {
		seeds, steps = 2, 5
	}
	for seed := 0; seed < seeds; seed++ {
		for _, curve := range []string{"zorder", "hilbert", "liquid"} {
			for _, dvOn := range []bool{false, true} {
				for _, partitioned := range []bool{false, true} {
					if curve == "liquid" && partitioned {
						continue // a clustered table is not partitioned
					}
					name := fmt.Sprintf("seed=%d/%s/dv=%v/part=%v", seed, curve, dvOn, partitioned)
					t.Run(name, func(t *testing.T) { dmlLayoutRun(t, uint64(seed), curve, dvOn, partitioned, steps) })
				}
			}
		}
	}
}

func dmlLayoutRun(t *testing.T, seed uint64, curve string, dvOn, partitioned bool, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x1a7))
	// The clustering run writes files of about 3 KiB; DML rolls at 64 KiB, so that a
	// rewritten file is one file again.
	props := map[string]string{log.PropTargetFileSize: "64kb"}
	if dvOn {
		props[log.PropEnableDeletionVectors] = "true"
	}
	copts := table.CreateOptions{Properties: props}
	if partitioned {
		copts.PartitionColumns = []string{"grp"}
	}
	if curve == "liquid" {
		copts.ClusterBy = []string{"id", "qty"}
	}
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, dmlSchema, copts)
	if err != nil {
		t.Fatal(err)
	}
	n := 3000 + rng.IntN(1000)
	var rows []dmlRow
	for i := 0; i < n; i++ {
		r := dmlRow{id: int64(rng.IntN(4 * n)), grp: sp([]string{"a", "b", "c"}[rng.IntN(3)]), qty: ip(int64(rng.IntN(20))), note: sp(fmt.Sprintf("n%d-%x", rng.IntN(5), rng.Uint32()))}
		if rng.IntN(8) == 0 {
			r.qty = nil
		}
		if rng.IntN(6) == 0 {
			r.note = nil
		}
		rows = append(rows, r)
	}
	// ids unique (the oracle and the origin map key rows by id)
	seen := map[int64]bool{}
	uniq := rows[:0]
	for _, r := range rows {
		if !seen[r.id] {
			seen[r.id] = true
			uniq = append(uniq, r)
		}
	}
	rows = uniq
	for _, part := range [][]dmlRow{rows[:len(rows)/2], rows[len(rows)/2:]} {
		rec := dmlBatch(part)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	oo := table.OptimizeOptions{TargetFileSize: 3 << 10}
	switch curve {
	case "zorder":
		oo.ZOrderBy = []string{"id", "qty"}
	case "hilbert":
		oo.HilbertBy = []string{"id", "qty"}
	}
	if _, err := tb.Optimize(ctx, oo); err != nil {
		t.Fatal(err)
	}
	// Where every row is in the clustering run's files.
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	origin := map[int64]layoutOrigin{}
	originAdd := map[string]*log.Add{}
	clusteredFiles := 0
	for _, a := range snap.Log().Files() {
		if !tableview.IsClustered(a) {
			continue
		}
		clusteredFiles++
		originAdd[a.Path] = a
		for i, r := range fileRowsInOrder(t, st, a) {
			origin[r.id] = layoutOrigin{file: a.Path, pos: i, id: r.id, qty: r.qty, grp: r.grp, row: r.String()}
		}
	}
	if clusteredFiles < 3 {
		t.Fatalf("the clustering run wrote %d clustered files; the test needs several", clusteredFiles)
	}
	checkLayout := func(what string) {
		t.Helper()
		snap, err := tb.Snapshot(ctx, table.Latest())
		if err != nil {
			t.Fatal(err)
		}
		descendants := map[string]int{}
		for _, a := range snap.Log().Files() {
			if !tableview.IsClustered(a) {
				// Rows the command copied (unchanged since the clustering run)
				// stay in clustered files.
				for _, r := range fileRowsInOrder(t, st, a) {
					if o, ok := origin[r.id]; ok && o.row == r.String() {
						t.Fatalf("after %s: row %v, unchanged since the clustering run, is in the unclustered file %s", what, r, a.Path)
					}
				}
				continue
			}
			if _, ok := originAdd[a.Path]; ok {
				continue // the clustering run's own file (a deletion vector at most)
			}
			got := fileRowsInOrder(t, st, a)
			if len(got) == 0 {
				t.Fatalf("after %s: clustered file %s is empty", what, a.Path)
			}
			from := origin[got[0].id].file
			o := originAdd[from]
			if o == nil {
				t.Fatalf("after %s: clustered file %s holds row %d, which no clustering run wrote", what, a.Path, got[0].id)
			}
			descendants[from]++
			for k, want := range []string{optimize.TagCubeID, optimize.TagCubeColumns, optimize.TagCubeCurve, optimize.TagTargetSize} {
				if a.Tags[want] != o.Tags[want] {
					t.Fatalf("after %s: file %s tag %d %s = %q, its input %s had %q", what, a.Path, k, want, a.Tags[want], from, o.Tags[want])
				}
			}
			if a.ClusteringProvider != o.ClusteringProvider {
				t.Fatalf("after %s: file %s clusteringProvider %q, its input had %q", what, a.Path, a.ClusteringProvider, o.ClusteringProvider)
			}
			if !slices.Equal(partValues(a), partValues(o)) {
				t.Fatalf("after %s: file %s partition %v, its input %v", what, a.Path, partValues(a), partValues(o))
			}
			last := -1
			for _, r := range got {
				org, ok := origin[r.id]
				if !ok || org.file != from {
					t.Fatalf("after %s: file %s (from %s) holds row %v, which the clustering run wrote to %q: outside the file's cube range",
						what, a.Path, from, r, org.file)
				}
				if org.pos <= last {
					t.Fatalf("after %s: file %s: row %d (position %d in %s) comes after position %d: not in the file's key order",
						what, a.Path, r.id, org.pos, from, last)
				}
				last = org.pos
				if !eqPtr(r.qty, org.qty) || (partitioned && !eqPtr(r.grp, org.grp)) {
					t.Fatalf("after %s: file %s keeps its cube tags but row %d changed its clustering values: qty %v -> %v, grp %v -> %v",
						what, a.Path, r.id, ptrStr(org.qty), ptrStr(r.qty), ptrStr(org.grp), ptrStr(r.grp))
				}
			}
		}
		for from, k := range descendants {
			if k > 1 {
				t.Fatalf("after %s: %s was rewritten into %d clustered files (want one per input)", what, from, k)
			}
		}
	}
	nextID := int64(4*n + 1)
	check := func(what string) {
		t.Helper()
		got := dmlRowsAt(t, tb, table.Latest())
		want := dmlRowStrings(rows)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("after %s: table has %d rows, oracle %d\n%s", what, len(got), len(want), diffRows(got, want))
		}
		checkLayout(what)
	}
	check("OPTIMIZE")
	for step := 0; step < steps; step++ {
		var what string
		var err error
		var res *table.DMLResult
		switch op := rng.IntN(6); {
		case op < 1:
			p := randomPred(rng, nextID, 1)
			what = "DELETE WHERE " + p.sql
			res, err = tb.Delete(ctx, p.sql, table.DMLOptions{})
			if err == nil {
				rows = p.deleteFrom(rows)
			}
		case op < 3:
			p := randomPred(rng, nextID, 1)
			s := randomSet(rng)
			if rng.IntN(2) == 0 {
				s = oracleSet{"note = 'u'", func(r dmlRow) dmlRow { r.note = sp("u"); return r }}
			}
			what = "UPDATE SET " + s.sql + " WHERE " + p.sql
			res, err = tb.Update(ctx, p.sql, table.UpdateOptions{Set: s.sql})
			if err == nil {
				s.updateWhere(p, rows)
			}
		default:
			m := randomMerge(rng)
			var src []dmlRow
			used := map[int64]bool{}
			for k := rng.IntN(40); k > 0 && len(rows) > 0; k-- {
				r := rows[rng.IntN(len(rows))]
				if used[r.id] {
					continue
				}
				used[r.id] = true
				s := r
				s.note = sp("s")
				if rng.IntN(3) == 0 {
					s.qty = ip(int64(rng.IntN(20))) // moves in the clustering
				}
				src = append(src, s)
			}
			for k := rng.IntN(10); k > 0; k-- {
				src = append(src, dmlRow{id: nextID, grp: sp("b"), qty: ip(int64(rng.IntN(20))), note: sp("new")})
				nextID++
			}
			what, res, rows, err = mergeStep(ctx, t, rng, tb, m, src, rows)
		}
		if err != nil {
			if errors.Is(err, table.ErrInvalidArgument) && strings.Contains(err.Error(), "no row") {
				continue
			}
			t.Fatalf("step %d %s: %v", step, what, err)
		}
		wantMode := table.ModeCopyOnWrite
		if dvOn {
			wantMode = table.ModeDeletionVectors
		}
		if res.Mode != wantMode {
			t.Fatalf("%s: mode %s, want %s", what, res.Mode, wantMode)
		}
		check(what)
		t.Logf("step %d: %s -> %d rows (%d files rewritten, %d added)", step, what, len(rows), res.FilesRewritten, res.FilesAdded)
	}
}

// partValues renders a file's partition values in key order.
func partValues(a *log.Add) []string {
	var out []string
	for k, v := range a.PartitionValues {
		s := k + "=NULL"
		if v != nil {
			s = k + "=" + *v
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func ptrStr[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

// hilbertTable is a table of n rows (ids 0..n-1 shuffled, qty = id % 50, notes of
// noteBytes random bytes in hex) in two files, Hilbert-clustered on (id, qty) into
// files of about target bytes; DML rolls at 64 KiB unless props say otherwise. It
// returns the table and its store.
func hilbertTable(t *testing.T, n, noteBytes int, target int64, props map[string]string) (*table.Table, storage.Storage) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	all := map[string]string{log.PropTargetFileSize: "64kb"}
	for k, v := range props {
		all[k] = v
	}
	var rows []dmlRow
	for _, i := range rng.Perm(n) {
		note := make([]byte, noteBytes)
		for k := range note {
			note[k] = byte(rng.Uint32())
		}
		rows = append(rows, dmlRow{id: int64(i), grp: sp("g"), qty: ip(int64(i % 50)), note: sp(fmt.Sprintf("n-%x", note))})
	}
	tb, st := dmlTable(t, all, nil, rows[:n/2], rows[n/2:])
	if _, err := tb.Optimize(ctx, table.OptimizeOptions{HilbertBy: []string{"id", "qty"}, TargetFileSize: target}); err != nil {
		t.Fatal(err)
	}
	return tb, st
}

// TestDMLLayoutReportStaysClustered: a copy-on-write UPDATE and an upsert MERGE that
// leave the clustering columns alone rewrite each touched file into one file that
// keeps its tags: the table stays 100% clustered with as many files as before, and
// plain compaction finds nothing to merge.
func TestDMLLayoutReportStaysClustered(t *testing.T) {
	ctx := context.Background()
	tb, _ := hilbertTable(t, 4000, 4, 3<<10, nil)
	before, err := tb.Layout(ctx, table.LayoutOptions{SkipHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	if before.ClusteredFraction != 1 || before.Files < 5 {
		t.Fatalf("after OPTIMIZE: %d files, %.2f clustered; want several files, all clustered", before.Files, before.ClusteredFraction)
	}
	res, err := tb.Update(ctx, "qty < 25", table.UpdateOptions{Set: "note = 'updated'"})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRewritten < 2 || res.FilesAdded != res.FilesRewritten {
		t.Fatalf("UPDATE: %d files rewritten, %d added; want several, one output per input and no new rows", res.FilesRewritten, res.FilesAdded)
	}
	var src []dmlRow
	for i := int64(3); i < 4000; i += 100 {
		src = append(src, dmlRow{id: i, grp: sp("g"), qty: ip(i % 50), note: sp("merged")})
	}
	rdr := mergeSourceOf(src)
	res, err = tb.Merge(ctx, rdr, table.Upsert("id"))
	rdr.Release()
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsUpdated != int64(len(src)) || res.RowsInserted != 0 {
		t.Fatalf("MERGE: %d updated, %d inserted; want %d, 0", res.RowsUpdated, res.RowsInserted, len(src))
	}
	after, err := tb.Layout(ctx, table.LayoutOptions{SkipHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	if after.ClusteredFraction != 1 || after.Files != before.Files {
		t.Fatalf("after UPDATE and MERGE: %d files, %.3f clustered; want %d files, all clustered", after.Files, after.ClusteredFraction, before.Files)
	}
	if n, _, err := tb.Count(ctx, table.WithFilter("note = 'updated'")); err != nil || n != 2000-int64(len(src)) {
		t.Fatalf("rows with the UPDATE's note: %d (%v)", n, err)
	}
	opt, err := tb.Optimize(ctx, table.OptimizeOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if opt.Plan.NumBins != 0 {
		t.Fatalf("plain compaction after the DML plans %d bins over %d files; clustered files must be left alone", opt.Plan.NumBins, opt.Plan.NumFiles)
	}
}

// TestDMLNewRowsSorted: the rows a MERGE inserts (and the rows it updates out of
// their files' range) go to new files sorted by the table's clustering key, here a
// Z-order on one column, which is a plain sort.
func TestDMLNewRowsSorted(t *testing.T) {
	ctx := context.Background()
	for _, dvOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dvOn), func(t *testing.T) {
			props := map[string]string{log.PropTargetFileSize: "1mb"}
			if dvOn {
				props[log.PropEnableDeletionVectors] = "true"
			}
			var rows []dmlRow
			for i := int64(0); i < 2000; i++ {
				rows = append(rows, dmlRow{id: i * 10, grp: sp("g"), qty: ip(i % 9), note: sp("old")})
			}
			tb, st := dmlTable(t, props, nil, rows)
			if _, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"qty"}, TargetFileSize: 2 << 10}); err != nil {
				t.Fatal(err)
			}
			before, _ := tb.Snapshot(ctx, table.Latest())
			old := map[string]bool{}
			for _, a := range before.Log().Files() {
				old[a.Path] = true
			}
			rng := rand.New(rand.NewPCG(3, 3))
			var src []dmlRow
			for _, k := range rng.Perm(300) {
				src = append(src, dmlRow{id: int64(k*10 + 5), grp: sp("g"), qty: ip(int64(rng.IntN(9))), note: sp("new")}) // inserts
			}
			for i := int64(0); i < 2000; i += 50 {
				src = append(src, dmlRow{id: i * 10, grp: sp("g"), qty: ip((i + 4) % 9), note: sp("moved")}) // updates that change qty
			}
			rdr := mergeSourceOf(src)
			_, err := tb.Merge(ctx, rdr, table.Upsert("id"))
			rdr.Release()
			if err != nil {
				t.Fatal(err)
			}
			after, _ := tb.Snapshot(ctx, table.Latest())
			newRows := 0
			for _, a := range after.Log().Files() {
				if old[a.Path] || tableview.IsClustered(a) {
					continue
				}
				got := fileRowsInOrder(t, st, a)
				newRows += len(got)
				for i := 1; i < len(got); i++ {
					if *got[i].qty < *got[i-1].qty {
						t.Fatalf("new file %s: row %d has qty %d after %d: not sorted by the clustering key", a.Path, i, *got[i].qty, *got[i-1].qty)
					}
				}
			}
			if want := 300 + 40; newRows != want {
				t.Fatalf("new files hold %d rows; want the %d inserted and moved", newRows, want)
			}
		})
	}
}

// rowGroupRows returns the row counts of a data file's row groups.
func rowGroupRows(t *testing.T, st storage.Storage, a *log.Add) []int64 {
	t.Helper()
	p, err := a.DecodedPath()
	if err != nil {
		t.Fatal(err)
	}
	data, err := st.Get(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := datafile.Open(bytes.NewReader(data), int64(len(data)), datafile.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := make([]int64, r.NumRowGroups())
	for i := range out {
		out[i] = r.Metadata().RowGroup(i).NumRows()
	}
	return out
}

// TestDMLRewriteKeepsRowGroups: a clustered file rewritten by an UPDATE that moves
// no row keeps its row groups (each ends where the input's did), although the
// table's target size (64 KiB) would give it a single one: row-group skipping
// stays as fine as the clustering run made it.
//
// (Row groups are at least 256 KiB, datafile.RowGroupTarget: the files are 1 MiB.)
func TestDMLRewriteKeepsRowGroups(t *testing.T) {
	ctx := context.Background()
	tb, st := hilbertTable(t, 60000, 24, 1<<20, nil)
	snap, _ := tb.Snapshot(ctx, table.Latest())
	before := map[int64][]int64{} // by the file's first id
	multi := 0
	for _, a := range snap.Log().Files() {
		rg := rowGroupRows(t, st, a)
		if len(rg) > 1 {
			multi++
		}
		before[fileRowsInOrder(t, st, a)[0].id] = rg
	}
	if multi == 0 {
		t.Fatal("the clustering run wrote no file with several row groups; the test needs some")
	}
	if _, err := tb.Update(ctx, "", table.UpdateOptions{Set: "note = 'x'"}); err != nil {
		t.Fatal(err)
	}
	snap, _ = tb.Snapshot(ctx, table.Latest())
	if len(snap.Log().Files()) != len(before) {
		t.Fatalf("%d files after the UPDATE, %d before", len(snap.Log().Files()), len(before))
	}
	for _, a := range snap.Log().Files() {
		got := rowGroupRows(t, st, a)
		want, ok := before[fileRowsInOrder(t, st, a)[0].id]
		if !ok || !slices.Equal(got, want) {
			t.Fatalf("rewritten file %s has row groups of %v rows; its input had %v", a.Path, got, want)
		}
	}
}

// TestDMLLayoutKeepsCheckingConstraints: the updated rows a clustered file's own
// rewrite holds (they bypass the row sink) are checked against the table's CHECK
// constraints like every other written row; a violation commits nothing.
func TestDMLLayoutKeepsCheckingConstraints(t *testing.T) {
	ctx := context.Background()
	tb, _ := hilbertTable(t, 4000, 4, 3<<10, nil)
	// grp is not a clustering column: the updated row stays in its file's place.
	if _, err := tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "grp_ok", Expr: "grp <> 'bad'"}}); err != nil {
		t.Fatal(err)
	}
	v := version(t, tb)
	if _, err := tb.Update(ctx, "id = 7", table.UpdateOptions{Set: "grp = 'bad'"}); !errors.Is(err, table.ErrConstraintViolated) {
		t.Fatalf("UPDATE breaking grp_ok on a clustered file: %v, want ErrConstraintViolated", err)
	}
	if got := version(t, tb); got != v {
		t.Fatalf("the refused UPDATE committed version %d", got)
	}
	if _, err := tb.Update(ctx, "id = 7", table.UpdateOptions{Set: "grp = 'ok'"}); err != nil {
		t.Fatal(err)
	}
}
