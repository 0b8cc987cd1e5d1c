package table_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// interposer runs hook once, just before the first commit-file write whose path
// matches, so that a concurrent commit lands between a command's plan and its commit.
type interposer struct {
	storage.Storage
	mu     sync.Mutex
	hook   func()
	armed  bool
	always bool // fire before every commit, not only the first
}

func (s *interposer) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	s.mu.Lock()
	fire := s.armed && strings.HasPrefix(path, "_delta_log/") && strings.HasSuffix(path, ".json")
	if fire && !s.always {
		s.armed = false
	}
	hook := s.hook
	s.mu.Unlock()
	if fire {
		hook()
	}
	return s.Storage.PutIfAbsent(ctx, path, data)
}

// TestDMLReplansAfterConcurrentOptimize: an OPTIMIZE that commits between a DML
// command's plan and its commit removes files the command read; the command re-plans
// on the new snapshot and commits (where Spark fails with ConcurrentDeleteReadException).
func TestDMLReplansAfterConcurrentOptimize(t *testing.T) {
	ctx := context.Background()
	ops := map[string]func(tb *table.Table) (*table.DMLResult, error){
		"delete": func(tb *table.Table) (*table.DMLResult, error) { return tb.Delete(ctx, "qty = 1", table.DMLOptions{}) },
		"update": func(tb *table.Table) (*table.DMLResult, error) {
			return tb.Update(ctx, "qty = 1", table.UpdateOptions{Set: "note = 'u'"})
		},
		"merge": func(tb *table.Table) (*table.DMLResult, error) {
			rdr := mergeSourceOf([]dmlRow{{id: 1, qty: ip(-1), grp: sp("a")}, {id: 1000, qty: ip(5), grp: sp("a")}})
			defer rdr.Release()
			return tb.Merge(ctx, rdr, table.Upsert("id"))
		},
	}
	for name, op := range ops {
		for _, props := range []map[string]string{nil, dvProps} {
			t.Run(fmt.Sprintf("%s/dv=%v", name, props != nil), func(t *testing.T) {
				rows := dmlSampleRows(60, func(int) string { return "a" })
				_, st := dmlTable(t, props, nil, rows[:20], rows[20:40], rows[40:])
				ip := &interposer{Storage: st}
				tb, err := table.Open(ctx, ip)
				if err != nil {
					t.Fatal(err)
				}
				other, _ := table.Open(ctx, st)
				ip.hook = func() {
					if _, err := other.Optimize(ctx, table.OptimizeOptions{}); err != nil {
						t.Errorf("optimize: %v", err)
					}
				}
				ip.armed = true
				twin, _ := dmlTable(t, props, nil, rows[:20], rows[20:40], rows[40:])
				if _, err := op(twin); err != nil {
					t.Fatal(err)
				}
				want := dmlRowsAt(t, twin, table.Latest())
				res, err := op(tb)
				if err != nil {
					t.Fatalf("%s after a concurrent OPTIMIZE: %v", name, err)
				}
				if res.Attempts != 2 {
					t.Fatalf("attempts %d, want 2 (one re-plan)", res.Attempts)
				}
				// The same command on a twin of the table without the race gives the same rows.
				if got := dmlRowsAt(t, tb, table.Latest()); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("rows after the re-planned %s differ from the same command without the race", name)
				}
				noOrphans(t, tb, st)
				h, _ := tb.History(ctx, 3)
				if h[0].Operation != strings.ToUpper(name) || h[1].Operation != "OPTIMIZE" {
					t.Fatalf("history %s, %s", h[0].Operation, h[1].Operation)
				}
			})
		}
	}
}

// TestDMLIsolationAgainstAppends: under WriteSerializable (the default) a DELETE never
// conflicts with a concurrent blind append; under Serializable (chosen, or the default
// on a table that sets delta.isolationLevel) it conflicts exactly when the appended
// rows could match its predicate.
func TestDMLIsolationAgainstAppends(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		level        string
		serializable bool // the table sets delta.isolationLevel=Serializable
		appendID     int64
		conflict     bool
	}{
		{log.WriteSerializable, false, 5, false},
		{log.Serializable, false, 5, true},    // matches "id < 10"
		{log.Serializable, false, 500, false}, // statistics prove it cannot match
		{"", false, 5, false},                 // default: WriteSerializable
		{"", true, 5, true},                   // default on a Serializable table
		{"", true, 500, false},
		{log.WriteSerializable, true, 5, false}, // an explicit level wins
	}
	for _, c := range cases {
		level := c.level
		if level == "" {
			level = "default"
		}
		t.Run(fmt.Sprintf("%s/table-serializable=%v/id=%d", level, c.serializable, c.appendID), func(t *testing.T) {
			rows := dmlSampleRows(40, func(int) string { return "a" })
			props := maps.Clone(dvProps)
			if c.serializable {
				props[log.PropIsolationLevel] = log.Serializable
			}
			_, st := dmlTable(t, props, nil, rows)
			ip := &interposer{Storage: st}
			tb, _ := table.Open(ctx, ip)
			other, _ := table.Open(ctx, st)
			ip.hook = func() {
				rec := dmlBatch([]dmlRow{{id: c.appendID, qty: ip0(), grp: sp("a")}})
				defer rec.Release()
				if _, err := other.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
					t.Errorf("append: %v", err)
				}
			}
			ip.armed = true
			_, err := tb.Delete(ctx, "id < 10", table.DMLOptions{IsolationLevel: c.level, ConflictRetries: -1})
			if c.conflict != (err != nil) {
				t.Fatalf("conflict %v, got %v", c.conflict, err)
			}
			if c.conflict && !errors.Is(err, log.ErrConcurrentAppend) {
				t.Fatalf("want a concurrent-append conflict, got %v", err)
			}
		})
	}
}

func ip0() *int64 { return ip(0) }

// TestDMLRace runs appends, DELETEs, UPDATEs, MERGEs and OPTIMIZEs from goroutines at
// once. Each worker owns a key range and keeps its own oracle of the rows in it; a
// command that loses a conflict is retried. At the end the table holds exactly the
// union of the oracles (nothing lost, nothing duplicated), blind appends never failed,
// and every failure was a conflict Delta's rules allow.
func TestDMLRace(t *testing.T) {
	ctx := context.Background()
	for _, props := range []map[string]string{nil, dvProps} {
		t.Run(fmt.Sprintf("dv=%v", props != nil), func(t *testing.T) {
			tb, st := dmlTable(t, props, nil)
			const workers = 4
			steps := 12
			if testing.Short() {
				steps = 6
			}
			oracles := make([]map[int64]dmlRow, workers)
			var conflicts atomic.Int64
			var wg sync.WaitGroup
			errc := make(chan error, workers+1)
			for w := 0; w < workers; w++ {
				oracles[w] = map[int64]dmlRow{}
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					base := int64(w) * 1_000_000
					next := base
					or := oracles[w]
					for s := 0; s < steps; s++ {
						op := rng.IntN(4)
						if s == 0 {
							op = 0
						}
						for {
							var err error
							switch op {
							case 0: // blind append
								var rows []dmlRow
								for i := 0; i < 20; i++ {
									rows = append(rows, dmlRow{id: next, grp: sp("g"), qty: ip(int64(rng.IntN(5))), note: sp("a")})
									next++
								}
								rec := dmlBatch(rows)
								_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
								rec.Release()
								if err != nil {
									errc <- fmt.Errorf("worker %d: a blind append failed: %w", w, err)
									return
								}
								for _, r := range rows {
									or[r.id] = r
								}
							case 1: // delete
								q := int64(rng.IntN(5))
								_, err = tb.Delete(ctx, fmt.Sprintf("id >= %d AND id < %d AND qty = %d", base, base+1_000_000, q), table.DMLOptions{})
								if err == nil {
									for id, r := range or {
										if *r.qty == q {
											delete(or, id)
										}
									}
								}
							case 2: // update
								q := int64(rng.IntN(5))
								_, err = tb.Update(ctx, fmt.Sprintf("id >= %d AND id < %d AND qty = %d", base, base+1_000_000, q), table.UpdateOptions{Set: "note = note || 'u'"})
								if err == nil {
									for id, r := range or {
										if *r.qty == q {
											r.note = sp(*r.note + "u")
											or[id] = r
										}
									}
								}
							case 3: // upsert: update two existing keys, insert one
								var src []dmlRow
								for id := range or {
									src = append(src, dmlRow{id: id, grp: sp("g"), qty: ip(9), note: sp("m")})
									if len(src) == 2 {
										break
									}
								}
								src = append(src, dmlRow{id: next, grp: sp("g"), qty: ip(1), note: sp("i")})
								rdr := mergeSourceOf(src)
								_, err = tb.Merge(ctx, rdr, table.Upsert("id"))
								rdr.Release()
								if err == nil {
									next++
									for _, r := range src {
										or[r.id] = r
									}
								}
							}
							if err == nil {
								break
							}
							var ce *log.ConflictError
							if !errors.As(err, &ce) {
								errc <- fmt.Errorf("worker %d op %d: %w", w, op, err)
								return
							}
							conflicts.Add(1)
						}
					}
				}(w)
			}
			stop := make(chan struct{})
			var owg sync.WaitGroup
			owg.Add(1)
			go func() { // OPTIMIZE keeps compacting; it may lose to DML, never to appends
				defer owg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, err := tb.Optimize(ctx, table.OptimizeOptions{})
					var ce *log.ConflictError
					if err != nil && !errors.As(err, &ce) {
						errc <- fmt.Errorf("optimize: %w", err)
						return
					}
					if err != nil && errors.Is(err, log.ErrConcurrentAppend) {
						errc <- fmt.Errorf("optimize conflicted with an append: %w", err)
						return
					}
				}
			}()
			wg.Wait()
			close(stop)
			owg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			var want []dmlRow
			for _, or := range oracles {
				for _, r := range or {
					want = append(want, r)
				}
			}
			w := dmlRowStrings(want)
			got := dmlRowsAt(t, tb, table.Latest())
			if strings.Join(got, "\n") != strings.Join(w, "\n") {
				t.Fatalf("table has %d rows, oracles %d", len(got), len(w))
			}
			noOrphans(t, tb, st)
			t.Logf("%d rows, %d conflicts retried", len(got), conflicts.Load())
		})
	}
}

// noOrphans checks that every data file and deletion-vector file in st is referenced
// by some version of the table: what failed attempts wrote was deleted.
func noOrphans(t testing.TB, tb *table.Table, st storage.Storage) {
	t.Helper()
	ctx := context.Background()
	head, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]bool{}
	for v := int64(0); v <= head.Version(); v++ {
		snap, err := tb.Snapshot(ctx, table.AtVersion(v))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range snap.Log().Files() {
			p, _ := a.DecodedPath()
			ref[p] = true
			if d := a.DeletionVector; d != nil && d.StorageType == "u" {
				rel, err := dv.FromLog(d).RelativePath("")
				if err != nil {
					t.Fatal(err)
				}
				ref[rel] = true
			}
		}
	}
	objs, err := st.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch {
		case strings.HasSuffix(o.Path, ".parquet") && !strings.HasPrefix(o.Path, "_delta_log/"):
			if !ref[o.Path] {
				t.Errorf("orphan data file %s", o.Path)
			}
		case strings.Contains(o.Path, "deletion_vector_"):
			if !ref[o.Path] {
				t.Errorf("orphan deletion vector file %s", o.Path)
			}
		}
	}
}

// TestDMLAmbiguousCommitKeepsFiles: a DML commit that landed but whose outcome cannot
// be learned (log.ErrCommitUnknown) never deletes the files it references: the commit
// is visible and its rows read back right.
func TestDMLAmbiguousCommitKeepsFiles(t *testing.T) {
	ctx := context.Background()
	for _, props := range []map[string]string{nil, dvProps} {
		st := &flakyCommitStore{Storage: storage.NewMemory()}
		tb, err := table.Create(ctx, st, dmlSchema, table.CreateOptions{Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		rows := dmlSampleRows(50, func(int) string { return "a" })
		rec := dmlBatch(rows)
		_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		st.armed, st.failReads = true, true
		_, err = tb.Update(ctx, "qty = 1", table.UpdateOptions{Set: "note = 'x'"})
		st.armed = false
		if !errors.Is(err, log.ErrCommitUnknown) {
			t.Fatalf("want ErrCommitUnknown, got %v", err)
		}
		var want []dmlRow
		for _, r := range rows {
			if *r.qty == 1 {
				r.note = sp("x")
			}
			want = append(want, r)
		}
		if got := dmlRowsAt(t, tb, table.Latest()); strings.Join(got, "\n") != strings.Join(dmlRowStrings(want), "\n") {
			t.Fatalf("dv=%v: the landed commit's files were deleted or its rows are wrong", props != nil)
		}
	}
}

// TestDMLGivesUpAfterBoundedReplans: when a concurrent OPTIMIZE wins before every
// attempt, the command re-plans ConflictRetries times, then fails with the conflict,
// having committed nothing and left no file behind.
func TestDMLGivesUpAfterBoundedReplans(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(60, func(int) string { return "a" })
	_, st := dmlTable(t, dvProps, nil, rows[:20], rows[20:40], rows[40:])
	inter := &interposer{Storage: st}
	tb, _ := table.Open(ctx, inter)
	other, _ := table.Open(ctx, st)
	next := 1000
	inter.hook = func() {
		// An append of a small file, then an OPTIMIZE that compacts it with what the
		// command read.
		rec := dmlBatch([]dmlRow{{id: int64(next), grp: sp("a"), qty: ip(1)}})
		next++
		defer rec.Release()
		if _, err := other.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
			t.Error(err)
		}
		if _, err := other.Optimize(ctx, table.OptimizeOptions{}); err != nil {
			t.Error(err)
		}
	}
	inter.armed, inter.always = true, true
	before, _ := tb.Snapshot(ctx, table.Latest())
	_, err := tb.Delete(ctx, "qty = 1", table.DMLOptions{ConflictRetries: 2})
	var ce *log.ConflictError
	if !errors.As(err, &ce) || !ce.Rearrangement {
		t.Fatalf("want a rearrangement conflict after the retries, got %v", err)
	}
	inter.mu.Lock()
	inter.armed = false
	inter.mu.Unlock()
	h, _ := tb.History(ctx, 0)
	for _, e := range h {
		if e.Version > before.Version() && e.Operation == "DELETE" {
			t.Fatalf("a DELETE was committed at version %d", e.Version)
		}
	}
	// 3 attempts (1 + 2 re-plans), each preceded by an append and an OPTIMIZE.
	if n := len(h) - int(before.Version()) - 1; n != 6 {
		t.Fatalf("%d commits after the start, want 6 (3 appends, 3 OPTIMIZEs)", n)
	}
	noOrphans(t, tb, st)
}

// TestDeleteRandomPrefixedDeletionVectors: with delta.randomizeFilePrefixes the
// deletion vector files go under a random directory of delta.randomPrefixLength
// characters (as Spark writes them); they read back and VACUUM keeps them.
func TestDeleteRandomPrefixedDeletionVectors(t *testing.T) {
	ctx := context.Background()
	props := map[string]string{log.PropEnableDeletionVectors: "true", log.PropRandomizeFilePrefixes: "true", log.PropRandomPrefixLength: "3"}
	rows := dmlSampleRows(50, func(int) string { return "a" })
	tb, st := dmlTable(t, props, nil, rows)
	if _, err := tb.Delete(ctx, "qty = 2", table.DMLOptions{}); err != nil {
		t.Fatal(err)
	}
	objs, _ := st.List(ctx, "", "")
	found := false
	for _, o := range objs {
		if strings.Contains(o.Path, "deletion_vector_") {
			dir, _, ok := strings.Cut(o.Path, "/")
			if !ok || len(dir) != 3 {
				t.Fatalf("deletion vector file %s is not under a 3-character prefix", o.Path)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no deletion vector file written")
	}
	var want []dmlRow
	for _, r := range rows {
		if *r.qty != 2 {
			want = append(want, r)
		}
	}
	if _, err := tb.Vacuum(ctx, table.VacuumOptions{Retention: time.Nanosecond, Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := dmlRowsAt(t, tb, table.Latest()); strings.Join(got, "\n") != strings.Join(dmlRowStrings(want), "\n") {
		t.Fatalf("rows after DELETE and VACUUM: %d, want %d", len(got), len(want))
	}
}
