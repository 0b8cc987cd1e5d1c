package table_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
)

func TestRestoreUndoesDML(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(100, func(i int) string { return []string{"a", "b"}[i%2] })
	tb, _ := dmlTable(t, dvProps, []string{"grp"}, rows[:50], rows[50:])
	before := dmlRowsAt(t, tb, table.Latest()) // version 2
	if _, err := tb.Delete(ctx, "qty < 3", table.DMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Update(ctx, "", table.UpdateOptions{Set: "note = 'x'"}); err != nil {
		t.Fatal(err)
	}
	res, err := tb.Restore(ctx, table.AtVersion(2), table.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := dmlRowsAt(t, tb, table.Latest())
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("restore to version 2 gave %d rows, want %d", len(after), len(before))
	}
	ci := lastCommit(t, tb)
	if ci.Operation != "RESTORE" || ci.OperationParameters["version"] != "2" || ci.OperationMetrics["numRestoredFiles"] != itoaTest(int64(res.FilesRestored)) {
		t.Fatalf("commit %+v", ci)
	}
	if res.FilesRestored == 0 || res.FilesRemoved == 0 {
		t.Fatalf("result %+v", res)
	}
	if _, err := tb.Restore(ctx, table.AtVersion(res.Version), table.RestoreOptions{}); !errors.Is(err, table.ErrInvalidArgument) {
		t.Fatalf("restoring the latest version: %v", err)
	}
}

// TestRestoreRefusesVacuumedFiles: when VACUUM deleted files the restored version
// needs, RESTORE fails naming them and commits nothing. VACUUM keeps the deletion
// vector files live files reference.
func TestRestoreRefusesVacuumedFiles(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(100, func(int) string { return "a" })
	tb, _ := dmlTable(t, dvProps, nil, rows)
	if _, err := tb.Delete(ctx, "qty = 1", table.DMLOptions{}); err != nil { // a DV on the file
		t.Fatal(err)
	}
	if _, err := tb.Update(ctx, "TRUE", table.UpdateOptions{Set: "note = 'y'"}); err != nil { // file removed
		t.Fatal(err)
	}
	if _, err := tb.Delete(ctx, "qty = 2", table.DMLOptions{}); err != nil { // DV on the new file
		t.Fatal(err)
	}
	want := dmlRowsAt(t, tb, table.Latest())
	// Past the minimum age of unreferenced files (a VACUUM never deletes younger ones).
	aged := tb.WithClock(func() time.Time { return time.Now().Add(vacuum.MinUnreferencedAge + time.Minute) })
	v, err := aged.Vacuum(ctx, table.VacuumOptions{Retention: time.Nanosecond, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := dmlRowsAt(t, tb, table.Latest()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("VACUUM changed the latest version (deleted a referenced deletion vector?): %+v", v)
	}
	head, _ := tb.Snapshot(ctx, table.Latest())
	_, err = tb.Restore(ctx, table.AtVersion(1), table.RestoreOptions{})
	if !errors.Is(err, table.ErrRestoreMissingFiles) || !strings.Contains(err.Error(), ".parquet") {
		t.Fatalf("restore of a vacuumed version: %v", err)
	}
	now, _ := tb.Snapshot(ctx, table.Latest())
	if now.Version() != head.Version() {
		t.Fatalf("a refused restore committed version %d", now.Version())
	}
}

// TestRestoreToTimestamp: RESTORE to a timestamp restores the newest version committed
// at or before it — at a commit's exact time and between two commits — so that the
// table's rows afterwards equal the rows time travel reads at that timestamp, and the
// commit records the timestamp (not a version). A timestamp before the first commit
// fails with log.ErrTimestampOutOfRange naming it, one at or after the latest commit
// with ErrInvalidArgument; neither commits anything.
func TestRestoreToTimestamp(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(60, func(i int) string { return []string{"a", "b", "c"}[i%3] })
	tb0, _ := dmlTable(t, dvProps, nil) // version 0 at the real time
	// Later commits one minute apart, all after version 0.
	base := time.Now().Add(time.Hour).Truncate(time.Minute)
	tick := 0
	tb := tb0.WithClock(func() time.Time { return base.Add(time.Duration(tick) * time.Minute) })
	step := func(f func() error) {
		t.Helper()
		tick++
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	step(func() error {
		rec := dmlBatch(rows[:30])
		defer rec.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		return err
	}) // version 1
	step(func() error {
		rec := dmlBatch(rows[30:])
		defer rec.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		return err
	}) // version 2
	step(func() error { _, err := tb.Delete(ctx, "qty < 3", table.DMLOptions{}); return err }) // version 3
	step(func() error {
		_, err := tb.Update(ctx, "grp = 'b'", table.UpdateOptions{Set: "note = 'x'"})
		return err
	}) // version 4
	step(func() error {
		rdr := mergeSourceOf([]dmlRow{{id: 5, grp: sp("z"), qty: ip(50)}, {id: 100, grp: sp("z"), qty: ip(1)}})
		defer rdr.Release()
		_, err := tb.Merge(ctx, rdr, table.Upsert("id"))
		return err
	}) // version 5
	hist, err := tb.History(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := map[int64]time.Time{}
	rowsAt := map[int64][]string{}
	for _, h := range hist {
		at[h.Version] = h.Timestamp
		rowsAt[h.Version] = dmlRowsAt(t, tb, table.AtVersion(h.Version))
	}
	if len(at) != 6 {
		t.Fatalf("history has %d versions, want 6", len(at))
	}
	for v := int64(1); v <= 5; v++ {
		if want := base.Add(time.Duration(v) * time.Minute); !at[v].Equal(want) {
			t.Fatalf("version %d committed at %v, want %v", v, at[v], want)
		}
	}

	cases := []struct {
		name string
		ts   time.Time
		want int64
	}{
		{"exact time of version 2", at[2], 2},
		{"between versions 3 and 4", at[3].Add(30 * time.Second), 3},
		{"just before version 4", at[4].Add(-time.Millisecond), 3},
		{"between versions 0 and 1", at[0].Add(time.Millisecond), 0},
		{"exact time of version 4", at[4], 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tick++
			head, err := tb.Snapshot(ctx, table.Latest())
			if err != nil {
				t.Fatal(err)
			}
			// Time travel and RESTORE agree on the version the timestamp means.
			if got := dmlRowsAt(t, tb, table.AtTimestamp(c.ts)); strings.Join(got, "\n") != strings.Join(rowsAt[c.want], "\n") {
				t.Fatalf("time travel to %v: %d rows, want version %d's %d", c.ts, len(got), c.want, len(rowsAt[c.want]))
			}
			res, err := tb.Restore(ctx, table.AtTimestamp(c.ts), table.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.RestoredVersion != c.want || res.ReadVersion != head.Version() || res.Version != head.Version()+1 {
				t.Fatalf("restore to %v: %+v, want version %d restored over %d", c.ts, res, c.want, head.Version())
			}
			if got := dmlRowsAt(t, tb, table.Latest()); strings.Join(got, "\n") != strings.Join(rowsAt[c.want], "\n") {
				t.Fatalf("after restoring %v: %d rows, want version %d's %d\n%s", c.ts, len(got), c.want, len(rowsAt[c.want]), diffRows(got, rowsAt[c.want]))
			}
			ci := lastCommit(t, tb)
			if ci.Operation != "RESTORE" || ci.OperationParameters["version"] != "null" || !strings.Contains(ci.OperationParameters["timestamp"], c.ts.UTC().Format("2006-01-02T15:04:05")) {
				t.Fatalf("commit %+v", ci)
			}
			if ci.OperationMetrics["numOfFilesAfterRestore"] != itoaTest(int64(res.FilesAfter)) {
				t.Fatalf("metrics %+v, result %+v", ci.OperationMetrics, res)
			}
		})
	}

	head, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	before := at[0].Add(-time.Second)
	_, err = tb.Restore(ctx, table.AtTimestamp(before), table.RestoreOptions{})
	if !errors.Is(err, log.ErrTimestampOutOfRange) || !strings.Contains(err.Error(), before.UTC().Format("2006-01-02T15:04:05")) ||
		!strings.Contains(err.Error(), "version 0 at "+at[0].UTC().Format(time.RFC3339Nano)) {
		t.Fatalf("restore to a timestamp before the first commit: %v", err)
	}
	_, err = tb.Restore(ctx, table.AtTimestamp(base.Add(time.Hour)), table.RestoreOptions{})
	if !errors.Is(err, table.ErrInvalidArgument) {
		t.Fatalf("restore to a timestamp after the latest commit: %v", err)
	}
	if _, err := tb.Restore(ctx, table.AtTimestamp(before), table.RestoreOptions{DryRun: true}); !errors.Is(err, log.ErrTimestampOutOfRange) {
		t.Fatalf("dry run to a timestamp before the first commit: %v", err)
	}
	now, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	if now.Version() != head.Version() {
		t.Fatalf("a refused restore committed version %d", now.Version())
	}
}
