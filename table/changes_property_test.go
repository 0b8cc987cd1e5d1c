package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// The change data feed property test: random tables with the change data feed on
// (partitioned or not, deletion vectors on or off, Z-order clustered or not) take
// random DELETE, UPDATE, MERGE, OPTIMIZE, RESTORE, append and replaceWhere overwrite
// commands. Replaying the change
// rows from version 0 — inserts and update postimages add a row, deletes and update
// preimages remove one that must be there — must rebuild every version exactly, as
// time travel reads it (the brute-force oracle is the multiset of rows); OPTIMIZE
// versions must have no change; and reading the whole range at once must give the
// same rows as reading it version by version.
func TestChangesPropertyReplay(t *testing.T) {
	seeds := proofEnvInt(t, "SKIPLAKE_CDF_SEEDS", 10)
	steps := proofEnvInt(t, "SKIPLAKE_CDF_STEPS", 10)
	if testing.Short() {
		seeds, steps = 2, 6
	}
	for seed := 0; seed < seeds; seed++ {
		for layout := 0; layout < 8; layout++ {
			partitioned, dvOn, clustered := layout&1 != 0, layout&2 != 0, layout&4 != 0
			name := fmt.Sprintf("seed=%d/part=%v/dv=%v/clustered=%v", seed, partitioned, dvOn, clustered)
			t.Run(name, func(t *testing.T) { changesPropertyRun(t, uint64(seed), partitioned, dvOn, clustered, false, steps) })
		}
	}
}

// TestChangesPropertyReplayColumnMapping is TestChangesPropertyReplay on tables with
// delta.columnMapping.mode=name whose schema also changes between the DML steps:
// a column is added (additive: a change read may span it, the column NULL before),
// renamed and renamed back, or dropped — the changes Spark refuses to read across
// (DeltaColumnMapping.hasNoColumnMappingSchemaChanges: a logical name whose physical
// name differs at the end of the range). Besides the replay, a read of the whole
// range must fail with ErrChangesUnavailable naming the column when it spans such a
// change, while each stretch between them reads whole, equal to its versions read
// one by one; and every change data file must name its columns by their physical
// names (col-…), never the logical ones, while the rows read back carry the logical
// names.
func TestChangesPropertyReplayColumnMapping(t *testing.T) {
	seeds := proofEnvInt(t, "SKIPLAKE_CDF_SEEDS", 6)
	steps := proofEnvInt(t, "SKIPLAKE_CDF_STEPS", 12)
	if testing.Short() {
		seeds, steps = 1, 8
	}
	for seed := 0; seed < seeds; seed++ {
		for layout := 0; layout < 8; layout++ {
			partitioned, dvOn, clustered := layout&1 != 0, layout&2 != 0, layout&4 != 0
			name := fmt.Sprintf("seed=%d/part=%v/dv=%v/clustered=%v", seed, partitioned, dvOn, clustered)
			t.Run(name, func(t *testing.T) {
				changesPropertyRun(t, uint64(seed)+1000, partitioned, dvOn, clustered, true, steps)
			})
		}
	}
}

func changesPropertyRun(t *testing.T, seed uint64, partitioned, dvOn, clustered, mapped bool, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0xcdf))
	props := map[string]string{log.PropEnableChangeDataFeed: "true", log.PropTargetFileSize: "4kb"}
	if mapped {
		props[log.PropColumnMappingMode] = "name"
	}
	if dvOn {
		props[log.PropEnableDeletionVectors] = "true"
	}
	var parts []string
	if partitioned {
		parts = []string{"grp"}
	}
	n := 120 + rng.IntN(120)
	var rows []dmlRow
	for i := 0; i < n; i++ {
		r := dmlRow{id: int64(i), grp: sp([]string{"a", "b", "c"}[rng.IntN(3)]), qty: ip(int64(rng.IntN(8))), note: sp(fmt.Sprintf("n%d", rng.IntN(5)))}
		if rng.IntN(6) == 0 {
			r.qty = nil
		}
		if rng.IntN(8) == 0 {
			r.note = nil
		}
		rows = append(rows, r)
	}
	cut := n / 2
	tb, st := dmlTable(t, props, parts, rows[:cut], rows[cut:])
	rearranged := map[int64]bool{} // versions with dataChange=false only
	if clustered {
		if _, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"id", "qty"}, TargetFileSize: 4 << 10}); err != nil {
			t.Fatal(err)
		}
		rearranged[3] = true // after the create and the two appends
	}
	nextID := int64(n)
	// barriers are the versions whose schema change a change read cannot span
	// (mapped only); extra says whether the added column exists.
	var barriers []int64
	extra := false
	renamed := map[int64]bool{} // versions at which note is named memo
	lastAlter := int64(1)       // RESTORE goes no further back: the schema stays the one the steps use
	for step := 0; step < steps; step++ {
		var what string
		var err error
		if mapped && (rng.IntN(4) == 0 || step == steps/2 && len(barriers) == 0) {
			var alters []table.AlterOptions
			switch {
			case !extra && rng.IntN(2) == 0:
				what = "ADD COLUMNS extra"
				c, perr := table.ParseColumn("extra bigint")
				if perr != nil {
					t.Fatal(perr)
				}
				alters = []table.AlterOptions{{AddColumns: []table.NewColumn{c}}}
				extra = true
			case extra && rng.IntN(2) == 0:
				what = "DROP COLUMNS extra"
				alters = []table.AlterOptions{{DropColumns: []string{"extra"}}}
				extra = false
			default:
				what = "RENAME COLUMN note TO memo, and back"
				alters = []table.AlterOptions{{RenameColumn: &table.ColumnRename{Column: "note", NewName: "memo"}},
					{RenameColumn: &table.ColumnRename{Column: "memo", NewName: "note"}}}
			}
			for _, a := range alters {
				res, err := tb.Alter(ctx, a)
				if err != nil {
					t.Fatalf("step %d %s: %v", step, what, err)
				}
				if a.AddColumns == nil {
					barriers = append(barriers, res.Version)
				}
				lastAlter = res.Version
				if a.RenameColumn != nil && a.RenameColumn.NewName == "memo" {
					renamed[res.Version] = true
				}
			}
			t.Logf("step %d: %s", step, what)
			continue
		}
		switch op := rng.IntN(11); {
		case op == 10:
			k := int64(rng.IntN(8))
			var add []dmlRow
			for j := rng.IntN(6); j > 0; j-- {
				add = append(add, dmlRow{id: nextID, grp: sp([]string{"a", "c"}[rng.IntN(2)]), qty: ip(k + rng.Int64N(8-k)), note: sp("rw")})
				nextID++
			}
			where := fmt.Sprintf("qty >= %d", k)
			what = "overwrite with replaceWhere " + where
			rec := dmlBatch(add)
			_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{Overwrite: true, ReplaceWhere: where})
			rec.Release()
		case op < 2:
			p := randomPred(rng, nextID, 2)
			what = "DELETE WHERE " + p.sql
			_, err = tb.Delete(ctx, p.sql, table.DMLOptions{})
		case op < 4:
			p := randomPred(rng, nextID, 1)
			s := randomSet(rng)
			what = "UPDATE SET " + s.sql + " WHERE " + p.sql
			_, err = tb.Update(ctx, p.sql, table.UpdateOptions{Set: s.sql})
		case op < 7:
			m := randomMerge(rng)
			cur := dmlRowsAt(t, tb, table.Latest())
			var src []dmlRow
			used := map[int64]bool{}
			for k := rng.IntN(25); k > 0 && len(cur) > 0; k-- {
				var id int64
				fmt.Sscan(strings.SplitN(cur[rng.IntN(len(cur))], "|", 2)[0], &id)
				if used[id] {
					continue
				}
				used[id] = true
				src = append(src, dmlRow{id: id, grp: sp("b"), qty: ip(int64(rng.IntN(8))), note: sp("s")})
			}
			for k := rng.IntN(8); k > 0; k-- {
				src = append(src, dmlRow{id: nextID, grp: sp("c"), qty: ip(int64(rng.IntN(8))), note: sp("new")})
				nextID++
			}
			opts := m.opts
			if rng.IntN(3) == 0 {
				opts.MemoryBudget = 600 // several passes
			}
			what = fmt.Sprintf("MERGE (%s) of %d rows", m.desc, len(src))
			rdr := mergeSourceOf(src)
			_, err = tb.Merge(ctx, rdr, opts)
			rdr.Release()
		case op < 8:
			what = "OPTIMIZE"
			before, _ := tb.Snapshot(ctx, table.Latest())
			_, err = tb.Optimize(ctx, table.OptimizeOptions{TargetFileSize: 8 << 10})
			after, _ := tb.Snapshot(ctx, table.Latest())
			for v := before.Version() + 1; v <= after.Version(); v++ {
				rearranged[v] = true
			}
		case op < 9:
			what = "append"
			var add []dmlRow
			for k := 1 + rng.IntN(20); k > 0; k-- {
				add = append(add, dmlRow{id: nextID, grp: sp([]string{"a", "b"}[rng.IntN(2)]), qty: ip(int64(rng.IntN(8))), note: nil})
				nextID++
			}
			rec := dmlBatch(add)
			_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
			rec.Release()
		default:
			head, _ := tb.Snapshot(ctx, table.Latest())
			if head.Version()-lastAlter < 1 {
				continue
			}
			v := lastAlter + rng.Int64N(head.Version()-lastAlter)
			what = fmt.Sprintf("RESTORE to version %d", v)
			_, err = tb.Restore(ctx, table.AtVersion(v), table.RestoreOptions{})
		}
		if err != nil {
			if errors.Is(err, table.ErrMergeCardinality) {
				continue
			}
			t.Fatalf("step %d %s: %v", step, what, err)
		}
		t.Logf("step %d: %s", step, what)
	}
	head, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	// Replay version by version; each version must read as the replay says.
	state := map[string]int{}
	var all []string
	for v := int64(0); v <= head.Version(); v++ {
		if renamed[v] {
			// The version where note is memo: a schema change, no row changed.
			if got := changeRows(t, tb, table.AtVersion(v), table.AtVersion(v), table.WithColumns("_change_type", "id", "memo")); len(got) > 0 {
				t.Fatalf("version %d renamed a column, yet has %d changes, such as %v", v, len(got), got[0])
			}
			continue
		}
		got := changeRows(t, tb, table.AtVersion(v), table.AtVersion(v), table.WithColumns("_commit_version", "_change_type", "id", "grp", "qty", "note"))
		if rearranged[v] && len(got) > 0 {
			t.Fatalf("version %d only rearranged data, yet has %d changes, such as %v", v, len(got), got[0])
		}
		pre, post := 0, 0
		for _, r := range got {
			f := strings.SplitN(r, "|", 3)
			if f[0] != fmt.Sprint(v) {
				t.Fatalf("version %d read row %s", v, r)
			}
			row := f[2]
			switch f[1] {
			case table.ChangeInsert, table.ChangeUpdatePostimage:
				state[row]++
			case table.ChangeDelete, table.ChangeUpdatePreimage:
				if state[row] == 0 {
					t.Fatalf("version %d: %s of a row the table did not have: %s", v, f[1], row)
				}
				state[row]--
			default:
				t.Fatalf("version %d: change type %q", v, f[1])
			}
			if f[1] == table.ChangeUpdatePreimage {
				pre++
			}
			if f[1] == table.ChangeUpdatePostimage {
				post++
			}
		}
		if pre != post {
			t.Fatalf("version %d: %d preimages, %d postimages", v, pre, post)
		}
		var replayed []string
		for row, c := range state {
			for ; c > 0; c-- {
				replayed = append(replayed, row)
			}
		}
		sort.Strings(replayed)
		want := dmlRowsAt(t, tb, table.AtVersion(v))
		if strings.Join(replayed, "\n") != strings.Join(want, "\n") {
			t.Fatalf("version %d: the replayed changes give %d rows, the version has %d\n%s", v, len(replayed), len(want), diffRows(replayed, want))
		}
		all = append(all, got...)
	}
	cols := table.WithColumns("_commit_version", "_change_type", "id", "grp", "qty", "note")
	if len(barriers) > 0 {
		_, err := tb.Changes(ctx, table.AtVersion(0), table.Latest(), cols)
		if !errors.Is(err, table.ErrChangesUnavailable) || !strings.Contains(err.Error(), "was dropped or renamed") {
			t.Fatalf("reading versions 0..%d across the schema changes at versions %v: err = %v, want ErrChangesUnavailable saying a column was dropped or renamed", head.Version(), barriers, err)
		}
	}
	// Each stretch between schema changes reads whole as its versions one by one.
	from := int64(0)
	for _, end := range append(append([]int64(nil), barriers...), head.Version()+1) {
		if end-1 >= from && !renamed[end-1] {
			var want []string
			for _, r := range all {
				var v int64
				fmt.Sscan(strings.SplitN(r, "|", 2)[0], &v)
				if v >= from && v <= end-1 {
					want = append(want, r)
				}
			}
			sort.Strings(want)
			whole := changeRows(t, tb, table.AtVersion(from), table.AtVersion(end-1), cols)
			if strings.Join(whole, "\n") != strings.Join(want, "\n") {
				t.Fatalf("reading versions %d..%d at once gives %d rows, version by version %d\n%s", from, end-1, len(whole), len(want), diffRows(whole, want))
			}
		}
		from = end
	}
	if mapped {
		checkChangeFilesPhysical(t, st)
	}
}

// checkChangeFilesPhysical: under column mapping every change data file of the table
// names its columns by physical name (or _change_type), none by a logical name.
func checkChangeFilesPhysical(t *testing.T, st storage.Storage) {
	t.Helper()
	ctx := context.Background()
	logical := map[string]bool{"id": true, "grp": true, "qty": true, "note": true, "memo": true, "extra": true}
	objs, err := st.List(ctx, "_change_data/", "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if !strings.HasSuffix(o.Path, ".parquet") {
			continue
		}
		data, err := st.Get(ctx, o.Path)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", o.Path, err)
		}
		root := pr.MetaData().Schema.Root()
		for i := 0; i < root.NumFields(); i++ {
			name := root.Field(i).Name()
			if logical[name] || !strings.HasPrefix(name, "col-") && name != log.ChangeTypeColumn {
				t.Fatalf("change data file %s has column %q: want physical names (col-…) and %s", o.Path, name, log.ChangeTypeColumn)
			}
		}
		pr.Close()
		n++
	}
	if n == 0 {
		t.Log("no change data file was written")
	}
}
