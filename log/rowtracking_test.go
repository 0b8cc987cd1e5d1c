package log

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

var rowTracked = Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureRowTracking, FeatureDomainMetadata}}

// createRowTracked creates a table whose protocol supports rowTracking with one
// file of rows[i] rows per entry.
func createRowTracked(t *testing.T, l *Log, cfg map[string]string, rows ...int) {
	t.Helper()
	md := testMetadata()
	for k, v := range cfg {
		md.Configuration[k] = v
	}
	var adds []*Add
	for i, n := range rows {
		adds = append(adds, newAdd(fmt.Sprintf("f%d", i), n))
	}
	if _, err := l.Create(context.Background(), md, rowTracked, adds, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
}

// checkRowIDs is the oracle: every live file has row IDs, their ranges
// [baseRowId, baseRowId+numRecords) are disjoint, and the high-water mark is at
// least the highest ID.
func checkRowIDs(t *testing.T, snap *Snapshot) {
	t.Helper()
	type rng struct {
		lo, hi int64
		path   string
	}
	var rs []rng
	for _, f := range snap.Files() {
		if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
			t.Fatalf("version %d: file %s has no row IDs", snap.Version(), f.Path)
		}
		n, ok := f.NumRecords()
		if !ok {
			t.Fatalf("file %s: no numRecords", f.Path)
		}
		if *f.DefaultRowCommitVersion > snap.Version() || *f.DefaultRowCommitVersion < 0 {
			t.Fatalf("file %s: defaultRowCommitVersion %d outside [0, %d]", f.Path, *f.DefaultRowCommitVersion, snap.Version())
		}
		rs = append(rs, rng{*f.BaseRowID, *f.BaseRowID + n, f.Path})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	hwm, err := snap.RowIDHighWaterMark()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.lo < 0 {
			t.Fatalf("file %s: negative baseRowId", r.path)
		}
		if i > 0 && rs[i-1].hi > r.lo {
			t.Fatalf("row ID ranges of %s and %s overlap", rs[i-1].path, r.path)
		}
		if r.hi-1 > hwm {
			t.Fatalf("file %s holds row ID %d above the high-water mark %d", r.path, r.hi-1, hwm)
		}
	}
}

func TestRowTrackingAssignsIDs(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createRowTracked(t, l, nil, 10, 5)
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	checkRowIDs(t, snap)
	if hwm, _ := snap.RowIDHighWaterMark(); hwm != 14 {
		t.Fatalf("high-water mark %d, want 14 (15 rows from 0)", hwm)
	}
	// An append: fresh IDs above the mark, the commit's version.
	if _, err := commitAt(t, snap, func(tx *Transaction) { tx.Add(newAdd("g", 3)) }); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	checkRowIDs(t, snap)
	var g *Add
	for _, f := range snap.Files() {
		if f.Path == "g" {
			g = f
		}
	}
	if *g.BaseRowID != 15 || *g.DefaultRowCommitVersion != 1 {
		t.Fatalf("new file got baseRowId %d version %d, want 15 and 1", *g.BaseRowID, *g.DefaultRowCommitVersion)
	}
	// A recommit (new deletion vector) keeps the file's IDs; its remove carries them too.
	rm, add, err := ReplaceDeletionVector(g, &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "abc", SizeInBytes: 3, Cardinality: 1}, 7)
	if err != nil {
		t.Fatal(err)
	}
	add.BaseRowID, add.DefaultRowCommitVersion = nil, nil // the transaction fills them from the live file
	v, err := commitAt(t, snap, func(tx *Transaction) { tx.Remove(rm); tx.Add(add) })
	if err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	checkRowIDs(t, snap)
	for _, f := range snap.Files() {
		if f.Path == "g" && (*f.BaseRowID != 15 || *f.DefaultRowCommitVersion != 1) {
			t.Fatalf("recommitted file changed its IDs: %d %d", *f.BaseRowID, *f.DefaultRowCommitVersion)
		}
	}
	if hwm, _ := snap.RowIDHighWaterMark(); hwm != 17 {
		t.Fatalf("a recommit must not move the mark: %d", hwm)
	}
	// The commit's remove carries the IDs of the file it removes.
	acts, err := ParseCommit("c", strings.NewReader(mustRead(t, l, v)))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.Remove != nil && (a.Remove.BaseRowID == nil || *a.Remove.BaseRowID != 15) {
			t.Fatalf("remove without the file's baseRowId: %+v", a.Remove)
		}
		if a.DomainMetadata != nil {
			t.Fatalf("no fresh IDs, no domain: %+v", a.DomainMetadata)
		}
	}
}

func mustRead(t *testing.T, l *Log, v int64) string {
	t.Helper()
	b, err := l.store.Get(context.Background(), CommitPath(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRowTrackingNeedsNumRecords(t *testing.T) {
	l := New(memStore())
	createRowTracked(t, l, nil, 1)
	snap, _ := l.Snapshot(context.Background(), -1)
	tx := snap.NewTransaction(TxnOptions{})
	tx.Add(&Add{Path: "nostats", Size: 1, DataChange: true})
	if _, err := tx.Commit(context.Background(), CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), "numRecords") {
		t.Fatalf("err = %v", err)
	}
}

func TestRowTrackingSuspended(t *testing.T) {
	l := New(memStore())
	createRowTracked(t, l, map[string]string{PropRowTrackingSuspended: "true"}, 4)
	snap, _ := l.Snapshot(context.Background(), -1)
	if f := snap.Files()[0]; f.BaseRowID != nil {
		t.Fatal("suspended row tracking assigned IDs")
	}
	if _, ok := snap.Domain(DomainRowTracking); ok {
		t.Fatal("suspended row tracking wrote the domain")
	}
}

// Concurrent appenders each assign row IDs from the mark they saw; retries must
// reassign from the winners' marks so that no two files share an ID.
func TestRowTrackingConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createRowTracked(t, l, nil, 2)
	snap, _ := l.Snapshot(ctx, -1)
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tx := snap.NewTransaction(TxnOptions{MaxRetries: writers})
			tx.Add(newAdd(fmt.Sprintf("w%d", i), 3+i))
			if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	last, _ := l.Snapshot(ctx, -1)
	if last.NumFiles() != writers+1 {
		t.Fatalf("%d files", last.NumFiles())
	}
	checkRowIDs(t, last)
	// Every file's defaultRowCommitVersion is the version that added it.
	for v := int64(1); v <= last.Version(); v++ {
		acts, _ := ParseCommit("c", strings.NewReader(mustRead(t, l, v)))
		for _, a := range acts {
			if a.Add != nil && *a.Add.DefaultRowCommitVersion != v {
				t.Fatalf("file %s committed at %d carries version %d", a.Add.Path, v, *a.Add.DefaultRowCommitVersion)
			}
		}
	}
	want := int64(2 - 1)
	for i := 0; i < writers; i++ {
		want += int64(3 + i)
	}
	if hwm, _ := last.RowIDHighWaterMark(); hwm != want {
		t.Fatalf("high-water mark %d, want %d (IDs are dense)", hwm, want)
	}
}

func TestEnableRowTrackingNeedsBackfill(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil, "a", "b")
	snap, _ := l.Snapshot(ctx, -1)
	p, md, err := ApplyPropertyChange(snap.Protocol(), snap.Metadata(), PropertyChange{Set: map[string]string{"DELTA.enableRowTracking": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Supports(FeatureRowTracking) || !p.Supports(FeatureDomainMetadata) {
		t.Fatalf("protocol %+v lacks rowTracking/domainMetadata", p)
	}
	props := ParseTableProperties(md.Configuration)
	if !strings.HasPrefix(props.MaterializedRowIDColumn, "_row-id-col-") || !strings.HasPrefix(props.MaterializedRowCommitVersionColumn, "_row-commit-version-col-") {
		t.Fatalf("materialized column names not assigned: %v", md.Configuration)
	}
	// Without the backfill the commit is refused: the table would have files without IDs.
	tx := snap.NewTransaction(TxnOptions{})
	tx.SetProtocol(p)
	tx.SetMetadata(md)
	if _, err := tx.Commit(ctx, CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), "no row IDs") {
		t.Fatalf("err = %v", err)
	}
	tx = snap.NewTransaction(TxnOptions{})
	tx.SetProtocol(p)
	tx.SetMetadata(md)
	tx.Add(snap.BackfillRowIDs()...)
	v, err := tx.Commit(ctx, CommitInfo{Operation: "SET TBLPROPERTIES"})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := l.Snapshot(ctx, v)
	checkRowIDs(t, after)
	if after.NumFiles() != 2 || !after.Properties().EnableRowTracking {
		t.Fatalf("files %d", after.NumFiles())
	}
	// The materialized names never change once set.
	_, md2, err := ApplyPropertyChange(after.Protocol(), after.Metadata(), PropertyChange{Set: map[string]string{"delta.enableRowTracking": "true"}})
	if err != nil || md2.Configuration[PropMaterializedRowIDColumn] != props.MaterializedRowIDColumn {
		t.Fatalf("names changed: %v %v", err, md2.Configuration)
	}
	// Users cannot set the internal names.
	if _, _, err := ApplyPropertyChange(after.Protocol(), after.Metadata(), PropertyChange{Set: map[string]string{PropMaterializedRowIDColumn: "x"}}); !errors.Is(err, ErrInvalidProperty) {
		t.Fatalf("internal key set: %v", err)
	}
}

// Row tracking fields and domains survive a checkpoint (classic Parquet and v2 JSON).
func TestRowTrackingCheckpointRoundTrip(t *testing.T) {
	for _, policy := range []string{"classic", "v2"} {
		t.Run(policy, func(t *testing.T) {
			ctx := context.Background()
			l := New(localStore(t, t.TempDir()))
			p := rowTracked
			if policy == "v2" {
				p = Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureV2Checkpoint},
					WriterFeatures: []string{FeatureRowTracking, FeatureDomainMetadata, FeatureV2Checkpoint, FeatureClustering}}
			}
			md := testMetadata()
			md.Configuration[PropCheckpointPolicy] = policy
			adds := []*Add{newAdd("a", 4), newAdd("b", 6)}
			adds[0].ClusteringProvider = ClusteringProviderLiquid
			if _, err := l.Create(ctx, md, p, adds, CommitInfo{}); err != nil {
				t.Fatal(err)
			}
			snap, _ := l.Snapshot(ctx, -1)
			tx := snap.NewTransaction(TxnOptions{})
			tx.SetDomainMetadata(DomainMetadata{Domain: "com.example.app", Configuration: `{"x":1}`})
			if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
				t.Fatal(err)
			}
			snap, _ = l.Snapshot(ctx, -1)
			if err := l.Checkpoint(ctx, snap); err != nil {
				t.Fatal(err)
			}
			// Drop the JSON commits so that the snapshot comes from the checkpoint.
			for v := int64(0); v <= snap.Version(); v++ {
				if err := l.store.Delete(ctx, CommitPath(v)); err != nil {
					t.Fatal(err)
				}
			}
			cp, err := l.Snapshot(ctx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if cp.CheckpointVersion() != snap.Version() {
				t.Fatalf("not read from the checkpoint: %d", cp.CheckpointVersion())
			}
			checkRowIDs(t, cp)
			if fmt.Sprint(cp.DomainMetadata()) != fmt.Sprint(snap.DomainMetadata()) || len(cp.DomainMetadata()) != 2 {
				t.Fatalf("domains %v, want %v", cp.DomainMetadata(), snap.DomainMetadata())
			}
			for i, f := range cp.Files() {
				o := snap.Files()[i]
				if *f.BaseRowID != *o.BaseRowID || *f.DefaultRowCommitVersion != *o.DefaultRowCommitVersion || f.ClusteringProvider != o.ClusteringProvider {
					t.Fatalf("file %s changed through the checkpoint: %+v vs %+v", f.Path, f, o)
				}
			}
		})
	}
}

func TestSystemDomainsRefused(t *testing.T) {
	l := New(memStore())
	createRowTracked(t, l, nil, 1)
	snap, _ := l.Snapshot(context.Background(), -1)
	for _, d := range []string{DomainRowTracking, DomainClustering, "delta.somethingElse"} {
		tx := snap.NewTransaction(TxnOptions{})
		tx.SetDomainMetadata(DomainMetadata{Domain: d, Configuration: "{}"})
		if _, err := tx.Commit(context.Background(), CommitInfo{}); !errors.Is(err, ErrInvalidTransaction) {
			t.Errorf("domain %s: err = %v", d, err)
		}
	}
	// A user domain is fine, and a later tombstone removes it from the snapshot.
	tx := snap.NewTransaction(TxnOptions{})
	tx.SetDomainMetadata(DomainMetadata{Domain: "user.app", Configuration: "v1"})
	if _, err := tx.Commit(context.Background(), CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(context.Background(), -1)
	if d, ok := snap.Domain("user.app"); !ok || d.Configuration != "v1" {
		t.Fatalf("domain %v %v", d, ok)
	}
	tx = snap.NewTransaction(TxnOptions{})
	if err := tx.RemoveDomainMetadata("nope"); !errors.Is(err, ErrInvalidTransaction) {
		t.Fatalf("removing an absent domain: %v", err)
	}
	if err := tx.RemoveDomainMetadata("user.app"); err != nil {
		t.Fatal(err)
	}
	v, err := tx.Commit(context.Background(), CommitInfo{})
	if err != nil {
		t.Fatal(err)
	}
	// The tombstone is in the log with its pre-image.
	acts, _ := ParseCommit("c", strings.NewReader(mustRead(t, l, v)))
	found := false
	for _, a := range acts {
		if d := a.DomainMetadata; d != nil && d.Domain == "user.app" {
			found = d.Removed && d.Configuration == "v1"
		}
	}
	if !found {
		t.Fatalf("no tombstone with pre-image in %v", acts)
	}
	snap, _ = l.Snapshot(context.Background(), -1)
	if _, ok := snap.Domain("user.app"); ok {
		t.Fatal("removed domain still live")
	}
	if _, ok := snap.Domain(DomainRowTracking); !ok {
		t.Fatal("other domains must stay untouched")
	}
}

func TestWriteVolume(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, nil, "a", "b") // 2 x 100 bytes of data
	snap, _ := l.Snapshot(ctx, -1)
	// A compaction: removes a and b, adds c (dataChange=false, 150 bytes).
	if _, err := commitAt(t, snap, func(tx *Transaction) {
		tx.Remove(&Remove{Path: "a"}, &Remove{Path: "b"})
		c := newAdd("c", 20)
		c.DataChange, c.Size = false, 150
		tx.Add(c)
	}); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	// A recommit of c (new stats) writes nothing.
	if _, err := commitAt(t, snap, func(tx *Transaction) {
		c := *snap.Files()[0]
		tx.Add(&c)
	}); err != nil {
		t.Fatal(err)
	}
	w, err := l.WriteVolume(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if w.FromVersion != 0 || w.ToVersion != 2 || w.Commits != 3 || w.DataBytes != 200 || w.RearrangedBytes != 150 || w.DataFiles != 2 || w.RearrangedFiles != 1 {
		t.Fatalf("%+v", w)
	}
}
