package log

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func dvDesc(id string, off int32, card int64) *DeletionVectorDescriptor {
	return &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: id, Offset: &off, SizeInBytes: 40, Cardinality: card}
}

func TestRemoveActionMirrorsTheAdd(t *testing.T) {
	pv := "x"
	a := &Add{Path: "p%20q/f.parquet", PartitionValues: map[string]*string{"part": &pv}, Size: 123, ModificationTime: 9,
		DataChange: true, Stats: `{"numRecords":5}`, Tags: map[string]string{"k": "v"},
		DeletionVector: dvDesc("abcdefghijabcdefghij", 1, 2), BaseRowID: ptr(int64(7)), DefaultRowCommitVersion: ptr(int64(3))}
	r := a.RemoveAction(4242, true)
	if r.Path != a.Path || *r.DeletionTimestamp != 4242 || !r.DataChange || !r.ExtendedFileMetadata ||
		*r.Size != 123 || r.PartitionValues["part"] != &pv || r.Tags["k"] != "v" || r.Stats != a.Stats ||
		*r.BaseRowID != 7 || *r.DefaultRowCommitVersion != 3 {
		t.Fatalf("remove does not mirror the add: %+v", r)
	}
	if r.Key() != a.Key() {
		t.Fatalf("remove key %q differs from add key %q: it would not cancel the add", r.Key(), a.Key())
	}
	if r.DeletionVector == a.DeletionVector {
		t.Fatal("remove shares the add's descriptor pointer")
	}
	if r2 := a.RemoveAction(1, false); r2.DataChange {
		t.Fatal("dataChange=false was not kept")
	}
}

func TestReplaceDeletionVectorStats(t *testing.T) {
	cases := []struct {
		name    string
		stats   string
		old     *DeletionVectorDescriptor
		want    string
		wantErr string
	}{
		{"tight stats without a vector get tightBounds false appended, order kept",
			`{"numRecords":10,"minValues":{"a":1,"s":"x"},"maxValues":{"a":99.50},"nullCount":{"a":10,"s":0}}`, nil,
			`{"numRecords":10,"minValues":{"a":1,"s":"x"},"maxValues":{"a":99.50},"nullCount":{"a":10,"s":0},"tightBounds":false}`, ""},
		{"explicit tightBounds true is flipped in place",
			`{"numRecords":10,"tightBounds":true,"nullCount":{"a":3}}`, nil,
			`{"numRecords":10,"tightBounds":false,"nullCount":{"a":3}}`, ""},
		{"tight stats with an old vector: all-remaining-null counts become numRecords, nested too",
			`{"numRecords":10,"nullCount":{"a":8,"b":0,"c":5,"st":{"x":8,"y":1}}}`, dvDesc("aaaaaaaaaaaaaaaaaaaa", 1, 2),
			`{"numRecords":10,"nullCount":{"a":10,"b":0,"c":5,"st":{"x":10,"y":1}},"tightBounds":false}`, ""},
		{"wide stats are kept as they are",
			`{"numRecords":10,"nullCount":{"a":8},"tightBounds":false}`, dvDesc("aaaaaaaaaaaaaaaaaaaa", 1, 2),
			`{"numRecords":10,"nullCount":{"a":8},"tightBounds":false}`, ""},
		{"no stats", "", nil, "", "no stats"},
		{"no numRecords", `{"minValues":{}}`, nil, "", "no numRecords"},
		{"numRecords not a count", `{"numRecords":"ten"}`, nil, "", "not a row count"},
		{"not an object", `[1]`, nil, "", "not a JSON object"},
		{"trailing garbage", `{"numRecords":10} x`, nil, "", "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := newAdd("f.parquet", 0)
			live.Stats, live.DeletionVector = c.stats, c.old
			card := int64(3)
			if c.old != nil {
				card = c.old.Cardinality + 1
			}
			rm, add, err := ReplaceDeletionVector(live, dvDesc("bbbbbbbbbbbbbbbbbbbb", 1, card), 77)
			if c.wantErr != "" {
				if !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want an ErrInvalidTransaction mentioning %q", err, c.wantErr)
				}
				if !strings.Contains(err.Error(), "f.parquet") {
					t.Fatalf("error does not name the file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if add.Stats != c.want {
				t.Fatalf("stats\n got %s\nwant %s", add.Stats, c.want)
			}
			if rm.Stats != c.stats {
				t.Fatalf("remove should carry the old stats, got %s", rm.Stats)
			}
			if n, ok := add.NumRecords(); !ok || n != 10 {
				t.Fatalf("numRecords of the new add: %d %v", n, ok)
			}
		})
	}
}

func TestReplaceDeletionVectorRefusals(t *testing.T) {
	live := newAdd("f.parquet", 10)
	live.DeletionVector = dvDesc("aaaaaaaaaaaaaaaaaaaa", 1, 4)
	cases := []struct {
		name string
		live *Add
		dv   *DeletionVectorDescriptor
		want string
	}{
		{"nil file", nil, dvDesc("b", 1, 1), "nil"},
		{"nil vector", live, nil, "nil"},
		{"same id as the current vector", live, dvDesc("aaaaaaaaaaaaaaaaaaaa", 1, 5), "current id"},
		{"shrinking vector (D1)", live, dvDesc("bbbbbbbbbbbbbbbbbbbb", 1, 3), "only grows"},
		{"every row deleted", live, dvDesc("bbbbbbbbbbbbbbbbbbbb", 1, 10), "remove the file instead"},
		{"more rows than the file has", live, dvDesc("bbbbbbbbbbbbbbbbbbbb", 1, 11), "remove the file instead"},
		{"empty vector", live, dvDesc("bbbbbbbbbbbbbbbbbbbb", 1, 0), "deletes 0 rows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rm, add, err := ReplaceDeletionVector(c.live, c.dv, 1)
			if !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), c.want) || rm != nil || add != nil {
				t.Fatalf("got %v (%v, %v), want ErrInvalidTransaction mentioning %q", err, rm, add, c.want)
			}
		})
	}
}

// TestReplaceDeletionVectorReconciles commits DML-style pairs and checks that every
// snapshot (JSON replay and checkpoint) shows the file once, with the newest vector,
// and the replaced (path, dv) keys as tombstones.
func TestReplaceDeletionVectorReconciles(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	l.now = func() time.Time { return time.UnixMilli(1_000_000) }
	createTable(t, l, nil, "a.parquet", "b.parquet")
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	upgrade := Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{FeatureDeletionVectors},
		WriterFeatures: []string{FeatureAppendOnly, FeatureInvariants, FeatureDeletionVectors}}
	dvs := []*DeletionVectorDescriptor{
		dvDesc("11111111111111111111", 1, 2),
		{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 3},
		dvDesc("11111111111111111111", 43, 5),
	}
	for i, d := range dvs {
		var live *Add
		for _, f := range snap.Files() {
			if f.Path == "a.parquet" {
				live = f
			}
		}
		if live == nil {
			t.Fatalf("step %d: a.parquet is not live", i)
		}
		rm, add, err := ReplaceDeletionVector(live, d, l.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		tx := snap.NewTransaction(TxnOptions{IsolationLevel: WriteSerializable})
		if i == 0 {
			tx.SetProtocol(upgrade)
		}
		tx.ReadFiles(live.Path)
		tx.Remove(rm)
		tx.Add(add)
		if _, err := tx.Commit(ctx, CommitInfo{Operation: "DELETE"}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, cp := range []bool{false, true} {
			if cp {
				s, err := l.Snapshot(ctx, -1)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Checkpoint(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			if snap, err = l.Snapshot(ctx, -1); err != nil {
				t.Fatal(err)
			}
			var got []*Add
			for _, f := range snap.Files() {
				if f.Path == "a.parquet" {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].DeletionVector.UniqueID() != d.UniqueID() {
				t.Fatalf("step %d (checkpoint %v): a.parquet appears %d times, want once with %s", i, cp, len(got), d.UniqueID())
			}
			if snap.NumFiles() != 2 {
				t.Fatalf("step %d: %d live files, want 2", i, snap.NumFiles())
			}
			if !strings.Contains(got[0].Stats, `"tightBounds":false`) {
				t.Fatalf("step %d: stats %s", i, got[0].Stats)
			}
			tomb := 0
			for _, r := range snap.Tombstones() {
				if r.Path == "a.parquet" {
					tomb++
					if *r.DeletionTimestamp != 1_000_000 {
						t.Fatalf("deletionTimestamp %d, want the log clock", *r.DeletionTimestamp)
					}
				}
			}
			if tomb != i+1 {
				t.Fatalf("step %d: %d tombstones for a.parquet, want %d", i, tomb, i+1)
			}
		}
	}
}
