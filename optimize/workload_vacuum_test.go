package optimize

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/vacuum"
)

// liveTree returns the one tree every live file names (failing if there are
// several or none).
func liveTree(t *testing.T, tt *testTable) string {
	t.Helper()
	trees := treeFiles(t, tt)
	if len(trees) != 1 {
		t.Fatalf("live files name %d trees: %v", len(trees), trees)
	}
	for p := range trees {
		return p
	}
	return ""
}

// layoutDir lists the objects under TreeDir, sorted.
func layoutDir(t *testing.T, tt *testTable) []string {
	t.Helper()
	var out []string
	for _, p := range tt.objects(t) {
		if strings.HasPrefix(p, TreeDir) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// treesIn returns the tree files among paths, sorted.
func treesIn(paths []string) []string {
	var out []string
	for _, p := range paths {
		if layout.IsTreeFile(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Review of issue 16, item 1: the tree files of superseded layouts go with
// VACUUM; the current one stays and later runs still route through it.
func TestVacuumDeletesSupersededTrees(t *testing.T) {
	ctx := context.Background()
	tt := smallTable(t, "", nil, 8, 3000)
	target := avgFileSize(t, tt)
	var built []string
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 40, 1)})
	built = append(built, liveTree(t, tt))
	// New rows that double the table routed through the first tree (a re-split
	// of all of it: a second generation), then two full rebuilds.
	recs := []arrow.RecordBatch{genRecord(13_000, 100_000, 31), genRecord(13_000, 200_000, 32)}
	tt.appendFiles(t, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	if plan, _ := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload}); len(plan.Partitions) != 1 || plan.Partitions[0].Bins[0].Layout.Action != "route" {
		t.Fatalf("plan %+v", plan.Partitions)
	}
	extended := liveTree(t, tt)
	if extended == built[0] {
		t.Fatal("the re-split kept the first generation")
	}
	for seed := uint64(2); seed <= 3; seed++ {
		runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 40, seed), Full: true})
		built = append(built, liveTree(t, tt))
	}
	current := built[2]
	// A tree of a run that died before its commit, and a file in the directory
	// that is not a tree file (never touched).
	orphan := layout.TreeFile(uuid.New())
	for _, p := range []string{orphan, TreeDir + "notes.txt"} {
		if err := tt.store.Put(ctx, p, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	allTrees := append(slices.Clone(built), orphan, extended)
	slices.Sort(allTrees)
	if got := treesIn(layoutDir(t, tt)); !slices.Equal(got, allTrees) {
		t.Fatalf("tree files %v, want %v", got, allTrees)
	}
	superseded := []string{built[0], extended, built[1], orphan}
	slices.Sort(superseded)
	rows := tt.rows(t)

	// Inside the table's retention period: no tree goes.
	res, err := vacuum.Run(ctx, tt.lg, vacuum.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 0 {
		t.Fatalf("deleted %v inside the retention period", res.Files)
	}
	zero := vacuum.Options{Retention: 0, RetentionSet: true, Force: true, Now: func() time.Time { return time.Now().Add(vacuum.MinUnreferencedAge + time.Minute) }}

	// A dry run lists the superseded trees and deletes nothing.
	before := tt.objects(t)
	dry := zero
	dry.DryRun = true
	res, err = vacuum.Run(ctx, tt.lg, dry)
	if err != nil {
		t.Fatal(err)
	}
	if got := treesIn(res.Files); !res.DryRun || !slices.Equal(got, superseded) {
		t.Fatalf("dry run lists trees %v (dry %v), want %v", got, res.DryRun, superseded)
	}
	if after := tt.objects(t); !slices.Equal(before, after) {
		t.Fatalf("dry run changed the files: %v -> %v", before, after)
	}

	// Zero retention: exactly the current tree (and the foreign file) is left.
	res, err = vacuum.Run(ctx, tt.lg, zero)
	if err != nil {
		t.Fatal(err)
	}
	if got := treesIn(res.Files); !slices.Equal(got, superseded) {
		t.Fatalf("deleted trees %v, want %v", got, superseded)
	}
	for _, p := range superseded {
		if !slices.Contains(res.Files, p) {
			t.Fatalf("%s not in Result.Files", p)
		}
	}
	if got, want := layoutDir(t, tt), []string{TreeDir + "notes.txt", current}; !slices.Equal(got, want) {
		t.Fatalf("left under %s: %v, want %v", TreeDir, got, want)
	}
	if !slices.Equal(rows, tt.rows(t)) {
		t.Fatal("vacuum changed the live rows")
	}
	// Nothing left to delete; the current tree survives a second run too.
	if res, err = vacuum.Run(ctx, tt.lg, zero); err != nil || len(res.Files) != 0 {
		t.Fatalf("second vacuum: %v, deleted %v", err, res.Files)
	}

	// Appends are still routed through the current tree (a doubling: re-split
	// into its next generation).
	w := gridWorkload(t, 40, 3)
	recs = []arrow.RecordBatch{genRecord(26_000, 300_000, 41), genRecord(26_000, 400_000, 42)}
	tt.appendFiles(t, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	rows = tt.rows(t)
	plan, _ := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload})
	if tb := plan.Partitions[0].Bins[0].Layout; tb.Action != "route" || tb.Tree != current || tb.NewFiles != 2 {
		t.Fatalf("after vacuum: plan %+v, want a route through %s", tb, current)
	}
	got := liveTree(t, tt)
	if tr, err := loadTree(ctx, tt.store, got); err != nil || tr.Lineage != current || tr.Generation != 1 {
		t.Fatalf("new rows laid out by %s (%v), want the next generation of %s", got, err, current)
	}
	if !slices.Equal(rows, tt.rows(t)) {
		t.Fatal("O1: the routed run changed the rows")
	}
	checkExactSkipping(t, tt, w)
}

// A superseded tree that a version inside the retention window still references
// (through the tags of its files' tombstones) is kept, however old the file; a
// tombstone without extended file metadata (tags unknown) keeps every tree.
func TestVacuumKeepsTreesOfRetainedVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tt := newTestTableOn(t, st, "", nil)
	tt.appendFiles(t, tt.recs(6, 2000), nil)
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 30, 5)})
	first := liveTree(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 30, 6), Full: true})
	second := liveTree(t, tt)
	orphan := layout.TreeFile(uuid.New())
	if err := st.Put(ctx, orphan, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// Every tree file is two days old: only references keep them.
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{first, second, orphan} {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(p)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	at := func(d time.Duration) vacuum.Options {
		return vacuum.Options{Retention: time.Hour, Force: true, Now: func() time.Time { return time.Now().Add(d) }}
	}
	// The full run's tombstones (deleted now) are inside a one-hour window: the
	// first tree stays with the files they name; the orphan goes.
	res, err := vacuum.Run(ctx, tt.lg, at(0))
	if err != nil {
		t.Fatal(err)
	}
	if got := treesIn(res.Files); !slices.Equal(got, []string{orphan}) {
		t.Fatalf("deleted trees %v, want only the orphan", got)
	}
	// A tombstone without extended file metadata, alive for five hours.
	tt.appendFiles(t, tt.recs(1, 100), nil)
	var plain *log.Add
	for _, a := range tt.snapshot(t).Files() {
		if _, ok := fileTree(a); !ok {
			plain = a
		}
	}
	del := time.Now().Add(5 * time.Hour).UnixMilli()
	txn := tt.snapshot(t).NewTransaction(logTxn())
	txn.Remove(&log.Remove{Path: plain.Path, DeletionTimestamp: &del, DataChange: true})
	if _, err := txn.Commit(ctx, log.CommitInfo{Operation: "DELETE"}); err != nil {
		t.Fatal(err)
	}
	// Three hours on, the full run's tombstones have expired, but the plain one
	// has not: the trees are kept, the tombstoned data files go.
	res, err = vacuum.Run(ctx, tt.lg, at(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := treesIn(res.Files); len(got) != 0 || len(res.Files) == 0 {
		t.Fatalf("deleted %v: want the first layout's data files and no tree", res.Files)
	}
	// Six hours on, every tombstone has expired: the first tree goes, the current stays.
	res, err = vacuum.Run(ctx, tt.lg, at(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := treesIn(res.Files); !slices.Equal(got, []string{first}) {
		t.Fatalf("deleted trees %v, want %s", got, first)
	}
	if got := treesIn(layoutDir(t, tt)); !slices.Equal(got, []string{second}) {
		t.Fatalf("trees left %v, want %s", got, second)
	}
	if _, err := loadTree(ctx, st, second); err != nil {
		t.Fatal(err)
	}
}

// Review of issue 16, item 2: a workload OPTIMIZE (build, route, full rebuild)
// leaves a reader 1 / writer 2 table at that protocol, with no table feature and
// no domain metadata.
func TestWorkloadLayoutKeepsProtocol(t *testing.T) {
	tt := smallTable(t, "", nil, 8, 2000)
	check := func(step string) {
		t.Helper()
		snap := tt.snapshot(t)
		p := snap.Protocol()
		if p.MinReaderVersion != 1 || p.MinWriterVersion != 2 || len(p.ReaderFeatures) != 0 || len(p.WriterFeatures) != 0 {
			t.Fatalf("%s: protocol %+v, want reader 1 / writer 2 without features", step, p)
		}
		if d := snap.DomainMetadata(); len(d) != 0 {
			t.Fatalf("%s: domain metadata %v", step, d)
		}
	}
	check("created")
	target := avgFileSize(t, tt)
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 30, 7)})
	check("build")
	// New rows that double the table: routed by a re-split.
	recs := tt.recs(4, 5000)
	tt.appendFiles(t, recs, nil)
	if plan, _ := runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload}); len(plan.Partitions) != 1 || plan.Partitions[0].Bins[0].Layout.Action != "route" {
		t.Fatalf("plan %+v", plan.Partitions[0].Bins[0].Layout)
	}
	check("route")
	runOptimize(t, tt, Options{TargetFileSize: target, Curve: CurveWorkload, Workload: gridWorkload(t, 30, 8), Full: true})
	check("full rebuild")
	// Every commit's actions: no protocol, no domainMetadata after version 0.
	latest, err := tt.lg.LatestVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(1); v <= latest; v++ {
		raw, err := tt.store.Get(context.Background(), log.CommitPath(v))
		if err != nil {
			t.Fatal(err)
		}
		if s := string(raw); strings.Contains(s, `"protocol"`) || strings.Contains(s, `"domainMetadata"`) || strings.Contains(s, `"metaData"`) {
			t.Fatalf("version %d changes the table's protocol, metadata or domains:\n%s", v, s)
		}
	}
}
