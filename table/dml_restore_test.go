package table_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/table"
)

func TestRestoreUndoesDML(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(100, func(i int) string { return []string{"a", "b"}[i%2] })
	tb, _ := dmlTable(t, dvProps, []string{"grp"}, rows[:50], rows[50:])
	before := dmlRowsAt(t, tb, table.Latest()) // version 2
	if _, err := tb.Delete(ctx, "qty < 3", table.DMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Update(ctx, "note = 'x'", "", table.DMLOptions{}); err != nil {
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
	if _, err := tb.Update(ctx, "note = 'y'", "TRUE", table.DMLOptions{}); err != nil { // file removed
		t.Fatal(err)
	}
	if _, err := tb.Delete(ctx, "qty = 2", table.DMLOptions{}); err != nil { // DV on the new file
		t.Fatal(err)
	}
	want := dmlRowsAt(t, tb, table.Latest())
	v, err := tb.Vacuum(ctx, table.VacuumOptions{Retention: time.Nanosecond, Force: true})
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
