package table_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
)

// beforeCommitStore calls hook once, before the first commit file (a
// _delta_log/<version>.json put-if-absent) that is put through it: the point where
// a writer's data files are in storage and its commit is not.
type beforeCommitStore struct {
	storage.Storage
	once sync.Once
	hook func()
}

func (s *beforeCommitStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if strings.HasPrefix(path, "_delta_log/") && strings.HasSuffix(path, ".json") && !strings.Contains(path[len("_delta_log/"):], "/") {
		s.once.Do(s.hook)
	}
	return s.Storage.PutIfAbsent(ctx, path, data)
}

// TestForcedVacuumKeepsInFlightWrites: with delta.deletedFileRetentionDuration at 0,
// maintain and VACUUM refuse to vacuum unless forced (the retention is below the
// 7-day safety floor), and even forced with retention 0 they keep the data files of
// an append that has written them but not committed yet (younger than
// VacuumMinUnreferencedAge): the append then commits and every row is readable.
// Before, maintain deleted those files and the table failed with "data file missing".
func TestForcedVacuumKeepsInFlightWrites(t *testing.T) {
	ctx := context.Background()
	base := storage.NewMemory()
	first := []dmlRow{{id: 1, grp: sp("a"), qty: ip(1)}, {id: 2, grp: sp("b"), qty: ip(2)}}
	tb, err := table.Create(ctx, base, dmlSchema, table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := dmlBatch(first)
	defer rec.Release()
	if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	alt, err := tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.deletedFileRetentionDuration": "interval 0 seconds"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(alt.Warnings) != 1 || !strings.Contains(alt.Warnings[0], "below VACUUM's safety floor of 7 days") {
		t.Fatalf("setting the retention to 0 warned %q", alt.Warnings)
	}

	// Not forced: refused, naming the floor; maintain's other tasks still run.
	// The refusal names the field this caller sets (not the vacuum package's).
	if _, err := tb.Vacuum(ctx, table.VacuumOptions{}); !errors.Is(err, vacuum.ErrRetentionTooShort) || !strings.Contains(err.Error(), "safety floor") ||
		!strings.Contains(err.Error(), "set VacuumOptions.Force to vacuum anyway") {
		t.Fatalf("vacuum with the table's retention 0: %v", err)
	}
	rep, err := tb.Maintain(ctx, table.MaintainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if vt := rep.Task(table.TaskVacuum); vt == nil || vt.Status != table.StatusFailed || !strings.Contains(vt.Error, "safety floor") ||
		!strings.Contains(vt.Error, "set MaintainOptions.Force") || !rep.Failed {
		t.Fatalf("maintain's vacuum task: %+v", vt)
	}

	// Forced, while an append has written its files but not committed.
	var vacRes *vacuum.Result
	var maintainRep *table.MaintainReport
	hooked := &beforeCommitStore{Storage: base}
	hooked.hook = func() {
		other, err := table.Open(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		if maintainRep, err = other.Maintain(ctx, table.MaintainOptions{Force: true}); err != nil {
			t.Error(err)
		}
		if vacRes, err = other.Vacuum(ctx, table.VacuumOptions{RetentionSet: true, Force: true}); err != nil {
			t.Error(err)
		}
	}
	writer, err := table.Open(ctx, hooked)
	if err != nil {
		t.Fatal(err)
	}
	second := []dmlRow{{id: 3, grp: sp("c"), qty: ip(3)}}
	rec2 := dmlBatch(second)
	defer rec2.Release()
	if _, err := writer.WriteBatches(ctx, []arrow.RecordBatch{rec2}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if vacRes == nil || maintainRep == nil {
		t.Fatal("the hook did not run between the append's files and its commit")
	}
	if vt := maintainRep.Task(table.TaskVacuum); vt == nil || vt.Status == table.StatusFailed {
		t.Fatalf("forced maintain's vacuum task: %+v", vt)
	}
	if vacRes.KeptRecent == 0 {
		t.Fatalf("forced VACUUM kept no recent file: %+v", vacRes)
	}
	got := dmlRowsAt(t, tb, table.Latest())
	if want := dmlRowStrings(append(first, second...)); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("rows after the append committed: %v, want %v", got, want)
	}
}
