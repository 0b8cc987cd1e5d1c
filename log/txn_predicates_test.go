package log

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestReadPredicateConflicts checks Delta's per-isolation-level rules for
// transactions that read the table through a predicate: which concurrent commits
// conflict with a DML command that read "part = x".
func TestReadPredicateConflicts(t *testing.T) {
	ctx := context.Background()
	// The predicate selects rows of files whose path starts with "x" (a stand-in for
	// "partition value x" that needs no statistics parsing in this package).
	pred := ReadPredicate{Text: "part = 'x'", MightMatch: func(a *Add) bool { return strings.HasPrefix(a.Path, "x") }}
	blindAppend := func(path string) func(*Transaction) {
		return func(tx *Transaction) { tx.Add(newAdd(path, 1)) }
	}
	update := func(path string) func(*Transaction) {
		// Not a blind append: it removes a file and adds its replacement.
		return func(tx *Transaction) { tx.Remove(&Remove{Path: "b", DataChange: true}); tx.Add(newAdd(path, 1)) }
	}
	compaction := func(tx *Transaction) {
		tx.Remove(&Remove{Path: "a", DataChange: false})
		c := newAdd("xc", 10)
		c.DataChange = false
		tx.Add(c)
	}
	cases := []struct {
		name   string
		level  string
		winner func(*Transaction)
		want   error
		files  string
		rearr  bool
	}{
		{"WriteSerializable: matching blind append is serialised after", WriteSerializable, blindAppend("x1"), nil, "", false},
		{"Serializable: matching blind append conflicts", Serializable, blindAppend("x1"), ErrConcurrentAppend, "x1", false},
		{"Serializable: non-matching blind append is fine", Serializable, blindAppend("y1"), nil, "", false},
		{"WriteSerializable: matching rows of an update conflict", WriteSerializable, update("x2"), ErrConcurrentAppend, "x2", false},
		{"WriteSerializable: non-matching rows of an update are fine", WriteSerializable, update("y2"), nil, "", false},
		{"compaction adds (dataChange=false) never conflict by predicate", Serializable, compaction, nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(memStore())
			createTable(t, l, nil, "a", "b", "c")
			snap, err := l.Snapshot(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if v, err := commitAt(t, snap, c.winner); err != nil || v != 1 {
				t.Fatalf("winner: %d %v", v, err)
			}
			tx := snap.NewTransaction(TxnOptions{IsolationLevel: c.level, DisableCheckpoint: true})
			tx.AddReadPredicate(pred)
			tx.Remove(&Remove{Path: "c", DataChange: true})
			v, err := tx.Commit(ctx, CommitInfo{Operation: "DELETE"})
			if c.want == nil {
				if err != nil || v != 2 {
					t.Fatalf("loser: %d %v, want version 2", v, err)
				}
				return
			}
			var ce *ConflictError
			if !errors.Is(err, c.want) || !errors.As(err, &ce) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
			if strings.Join(ce.Files, ",") != c.files || ce.Rearrangement != c.rearr {
				t.Fatalf("files %v rearrangement %v, want %q %v", ce.Files, ce.Rearrangement, c.files, c.rearr)
			}
		})
	}
}

// TestConflictRearrangement: a conflict caused by a commit that only rearranged
// data (OPTIMIZE) says so; one caused by a data change does not.
func TestConflictRearrangement(t *testing.T) {
	ctx := context.Background()
	for _, dataChange := range []bool{false, true} {
		l := New(memStore())
		createTable(t, l, nil, "a", "b")
		snap, _ := l.Snapshot(ctx, 0)
		if _, err := commitAt(t, snap, func(tx *Transaction) {
			tx.Remove(&Remove{Path: "a", DataChange: dataChange})
			c := newAdd("c", 10)
			c.DataChange = dataChange
			tx.Add(c)
		}); err != nil {
			t.Fatal(err)
		}
		_, err := commitAt(t, snap, func(tx *Transaction) { tx.ReadFiles("a"); tx.Remove(&Remove{Path: "b", DataChange: true}) })
		var ce *ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, ErrConcurrentDeleteRead) {
			t.Fatalf("dataChange=%v: want a delete-read conflict, got %v", dataChange, err)
		}
		if ce.Rearrangement == dataChange {
			t.Errorf("dataChange=%v: Rearrangement = %v", dataChange, ce.Rearrangement)
		}
	}
}

// TestReadPredicateNotBlind: a transaction with a read predicate is not a blind append.
func TestReadPredicateNotBlind(t *testing.T) {
	l := New(memStore())
	createTable(t, l, nil, "a")
	snap, _ := l.Snapshot(context.Background(), 0)
	tx := snap.NewTransaction(TxnOptions{})
	tx.AddReadPredicate(ReadPredicate{Text: "true"})
	tx.Add(newAdd("n", 1))
	if _, blind := tx.isolation(); blind {
		t.Fatal("a transaction that read through a predicate was marked a blind append")
	}
}

// ExampleTransaction_AddReadPredicate: a DELETE that read the table through the
// predicate "day = '2026-01-02'" (here tested on partition values) conflicts, at
// Serializable, with a concurrent append into that day, and not with one into another
// day; at WriteSerializable blind appends never conflict.
func ExampleTransaction_AddReadPredicate() {
	ctx := context.Background()
	day := func(d string) *Add {
		return &Add{Path: "day=" + d + "/f.parquet", PartitionValues: map[string]*string{"day": &d}, Size: 1, DataChange: true, Stats: `{"numRecords":1}`}
	}
	for _, c := range []struct {
		level, appended string
	}{{Serializable, "2026-01-02"}, {Serializable, "2026-01-03"}, {WriteSerializable, "2026-01-02"}} {
		l := New(memStore())
		md := testMetadata()
		md.SchemaString = `{"type":"struct","fields":[{"name":"day","type":"string","nullable":true,"metadata":{}}]}`
		md.PartitionColumns = []string{"day"}
		if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, []*Add{day("2026-01-01")}, CommitInfo{}); err != nil {
			fmt.Println(err)
			return
		}
		snap, _ := l.Snapshot(ctx, 0)
		del := snap.NewTransaction(TxnOptions{IsolationLevel: c.level})
		del.AddReadPredicate(ReadPredicate{Text: "day = '2026-01-02'", MightMatch: func(a *Add) bool {
			v, null := a.PartitionValue("day")
			return null || v == "2026-01-02"
		}})
		del.Remove(day("2026-01-01").RemoveAction(0, true))

		app := snap.NewTransaction(TxnOptions{})
		app.Add(day(c.appended))
		if _, err := app.Commit(ctx, CommitInfo{Operation: "WRITE"}); err != nil {
			fmt.Println(err)
			return
		}
		_, err := del.Commit(ctx, CommitInfo{Operation: "DELETE"})
		fmt.Printf("%s, append into %s: conflict=%v\n", c.level, c.appended, errors.Is(err, ErrConcurrentAppend))
	}
	// Output:
	// Serializable, append into 2026-01-02: conflict=true
	// Serializable, append into 2026-01-03: conflict=false
	// WriteSerializable, append into 2026-01-02: conflict=false
}
