package optimize

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/vacuum"
)

// TestDeletionVectorsAreApplied deletes rows of one file with a deletion vector
// file, compacts (and clusters) the table, and checks that the deleted rows are gone,
// the others kept exactly once, and the new files carry no deletion vector.
func TestDeletionVectorsAreApplied(t *testing.T) {
	for _, curve := range []Curve{CurveNone, CurveZOrder} {
		t.Run(curve.String(), func(t *testing.T) {
			ctx := context.Background()
			tt := smallTable(t, "", nil, 4, 500)
			snap := tt.snapshot(t)
			victim := snap.Files()[0]
			var victimRows []string
			tt.readRecords(t, victim, func(rec arrow.RecordBatch) {
				for i := 0; i < int(rec.NumRows()); i++ {
					victimRows = append(victimRows, rec.Column(0).ValueStr(i))
				}
			})
			rel := deleteRows(t, tt, victim, 0, 7, 100, 499)
			before := tt.allRows(t)
			var cluster []string
			if curve != CurveNone {
				cluster = []string{"x", "y"}
			}
			_, m := runOptimize(t, tt, Options{TargetFileSize: 1 << 30, Curve: curve, ClusterBy: cluster})
			if m.NumRows != 4*500-4 {
				t.Fatalf("rewrote %d rows, want %d", m.NumRows, 4*500-4)
			}
			after := tt.rows(t)
			if !slices.Equal(before, after) {
				t.Fatalf("rows differ: %d before (DV applied), %d after", len(before), len(after))
			}
			for _, deleted := range []int{0, 7, 100, 499} {
				id := victimRows[deleted] + "|"
				if i, ok := slices.BinarySearchFunc(after, id, func(row, id string) int { return strings.Compare(row[:min(len(row), len(id))], id) }); ok {
					t.Fatalf("deleted row %q is back: %q", victimRows[deleted], after[i])
				}
			}
			for _, a := range tt.snapshot(t).Files() {
				if a.DeletionVector != nil {
					t.Fatalf("%s still has a deletion vector", a.Path)
				}
			}
			// VACUUM keeps the DV file while the tombstone is young, drops it after.
			res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Now: func() time.Time { return time.Now().Add(time.Hour) }, Retention: time.Minute, Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(res.Files, rel) {
				t.Fatalf("vacuum kept the DV file of a removed file: deleted %v", res.Files)
			}
		})
	}
}

// deleteRows deletes rows (positions in the file) of victim, a file of tt's latest
// snapshot, with a deletion vector: one DELETE commit re-adding the file with it. It
// returns the deletion vector file's path.
func deleteRows(t *testing.T, tt *testTable, victim *log.Add, rows ...uint64) string {
	t.Helper()
	ctx := context.Background()
	snap := tt.snapshot(t)
	bm := roaring64.New()
	bm.AddMany(rows)
	file, d, err := dv.EncodeFile(bm, uuid.New(), "dv")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := d.RelativePath("")
	if err != nil {
		t.Fatal(err)
	}
	if err := tt.store.PutIfAbsent(ctx, rel, file); err != nil {
		t.Fatal(err)
	}
	withDV := *victim
	off := d.Offset
	withDV.DeletionVector = &log.DeletionVectorDescriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		Offset: &off, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	withDV.DataChange = true
	now := time.Now().UnixMilli()
	txn := snap.NewTransaction(logTxn())
	txn.Remove(&log.Remove{Path: victim.Path, DeletionTimestamp: &now, DataChange: true})
	txn.Add(&withDV)
	if _, err := txn.Commit(ctx, log.CommitInfo{Operation: "DELETE"}); err != nil {
		t.Fatal(err)
	}
	return rel
}
