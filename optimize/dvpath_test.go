package optimize

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/vacuum"
)

// withAbsoluteDV stores a deletion vector file for the table's first file, deleting
// rows, and commits it as a 'p' descriptor whose path is absURI(relative path).
// It returns the DV file's storage path.
func withAbsoluteDV(t *testing.T, tt *testTable, rows []uint64, absURI func(rel string) string) string {
	t.Helper()
	ctx := context.Background()
	snap := tt.snapshot(t)
	victim := snap.Files()[0]
	bm := roaring64.New()
	bm.AddMany(rows)
	data, d, err := dv.EncodeFile(bm, uuid.New(), "")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := d.RelativePath("")
	if err != nil {
		t.Fatal(err)
	}
	if err := tt.store.PutIfAbsent(ctx, rel, data); err != nil {
		t.Fatal(err)
	}
	withDV := *victim
	off := d.Offset
	withDV.DeletionVector = &log.DeletionVectorDescriptor{StorageType: dv.StorageAbsolute, PathOrInlineDv: absURI(rel),
		Offset: &off, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	now := time.Now().UnixMilli()
	txn := snap.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	txn.Remove(&log.Remove{Path: victim.Path, DeletionTimestamp: &now, DataChange: true})
	txn.Add(&withDV)
	if _, err := txn.Commit(ctx, log.CommitInfo{Operation: "DELETE"}); err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestAbsoluteDeletionVectors checks deletion vectors stored by absolute path ('p')
// on a local table: VACUUM keeps the DV file while its file is live, OPTIMIZE
// resolves it against the table root and drops the deleted rows.
func TestAbsoluteDeletionVectors(t *testing.T) {
	ctx := context.Background()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tt := newTestTableOn(t, local, "", nil)
	recs := []arrow.RecordBatch{genRecord(400, 0, 1), genRecord(400, 400, 2), genRecord(400, 800, 3)}
	tt.appendFiles(t, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	rel := withAbsoluteDV(t, tt, []uint64{0, 5, 399}, func(rel string) string { return "file://" + local.Root() + "/" + rel })
	before := tt.rows(t)
	if len(before) != 1200-3 {
		t.Fatalf("%d live rows before OPTIMIZE, want %d", len(before), 1200-3)
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Retention: time.Minute, Force: true, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Files, rel) {
		t.Fatalf("vacuum deleted the live absolute-path DV file %s", rel)
	}
	_, m := runOptimize(t, tt, Options{TargetFileSize: 1 << 30})
	if m.NumRows != 1200-3 {
		t.Fatalf("rewrote %d rows, want %d", m.NumRows, 1200-3)
	}
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatalf("rows differ: %d before, %d after", len(before), len(after))
	}
	res, err = vacuum.Run(ctx, tt.lg, vacuum.Options{Retention: time.Minute, Force: true, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Files, rel) {
		t.Fatalf("vacuum kept the DV file of a removed file: deleted %v", res.Files)
	}
}

// TestAbsoluteDeletionVectorWithoutRoot checks a store with no local root: OPTIMIZE
// fails with an error naming the file (it cannot place the DV), and VACUUM keeps any
// file an unresolvable absolute DV path ends with.
func TestAbsoluteDeletionVectorWithoutRoot(t *testing.T) {
	ctx := context.Background()
	tt := smallTable(t, "", nil, 2, 300)
	rel := withAbsoluteDV(t, tt, []uint64{1}, func(rel string) string { return "s3://bucket/tables/t/" + rel })
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{Retention: time.Minute, Force: true, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Files, rel) {
		t.Fatalf("vacuum deleted %s, which a live absolute DV path names", rel)
	}
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, Options{TargetFileSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Execute(ctx, plan)
	if !errors.Is(err, dv.ErrOutsideTable) {
		t.Fatalf("err = %v, want dv.ErrOutsideTable", err)
	}
}
