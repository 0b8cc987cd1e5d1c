package optimize

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// planAdd is a file of a log-only test table (planning reads no data file).
type planAdd struct {
	path     string
	size     int64
	mod      int64
	part     string
	provider string
	cube     string // ZCUBE_ID
	cols     string // ZCUBE_ZORDER_BY
}

// logOnlySnapshot commits files to a new table (with clustering domain when cluster
// is non-nil, or partitioned by p when part is true) and returns its snapshot.
func logOnlySnapshot(t *testing.T, cluster []string, part bool, files ...planAdd) (*log.Snapshot, storage.Storage) {
	t.Helper()
	fields := `{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{}}`
	parts := []string{}
	if part {
		fields += `,{"name":"p","type":"string","nullable":true,"metadata":{}}`
		parts = []string{"p"}
	}
	md := log.Metadata{ID: uuid.NewString(), SchemaString: `{"type":"struct","fields":[` + fields + `]}`, PartitionColumns: parts, Configuration: map[string]string{"delta.targetFileSize": "1000"}}
	proto := log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	var domains []log.DomainMetadata
	if cluster != nil {
		proto = log.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{log.FeatureClustering, log.FeatureDomainMetadata}}
		var phys [][]string
		for _, c := range cluster {
			phys = append(phys, []string{c})
		}
		domains = append(domains, log.ClusteringDomain(phys))
	}
	st := storage.NewMemory()
	lg := log.New(st)
	tx := lg.NewTableSnapshot(md, proto, domains...).NewTransaction(log.TxnOptions{})
	for _, f := range files {
		a := &log.Add{Path: f.path, Size: f.size, ModificationTime: f.mod, DataChange: true,
			Stats:              `{"numRecords":10,"minValues":{"id":1,"x":1},"maxValues":{"id":9,"x":9},"nullCount":{"id":0,"x":0}}`,
			ClusteringProvider: f.provider, PartitionValues: map[string]*string{}}
		if part {
			v := f.part
			a.PartitionValues["p"] = &v
		}
		if f.cube != "" {
			a.Tags = map[string]string{TagCubeID: f.cube, TagCubeColumns: f.cols, TagCubeCurve: "hilbert"}
		}
		tx.Add(a)
	}
	if _, err := tx.Commit(context.Background(), log.CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, err := lg.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	return snap, st
}

func planPaths(p *Plan) string {
	var out []string
	for _, pp := range p.Partitions {
		for _, b := range pp.Bins {
			var names []string
			for _, f := range b.Files {
				names = append(names, f.Path)
			}
			sort.Strings(names)
			out = append(out, b.Kind+":"+strings.Join(names, ","))
		}
	}
	return strings.Join(out, " ")
}

func TestCompactionLeavesClusteredFilesAlone(t *testing.T) {
	snap, st := logOnlySnapshot(t, nil, false,
		planAdd{path: "a", size: 100, mod: 1},
		planAdd{path: "b", size: 100, mod: 2},
		planAdd{path: "z1", size: 100, mod: 3, cube: "c1", cols: `["id","x"]`},
		planAdd{path: "z2", size: 100, mod: 4, cube: "c1", cols: `["id","x"]`},
		planAdd{path: "l1", size: 100, mod: 5, provider: "liquid"},
	)
	p, err := NewPlan(context.Background(), snap, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := planPaths(p); got != "compact:a,b" || p.ClusteredFiles != 3 {
		t.Fatalf("plan %q, clustered files %d: compaction must not merge clustered files", got, p.ClusteredFiles)
	}
}

func TestLiquidPlan(t *testing.T) {
	cols := `["id","x"]`
	ctx := context.Background()
	// Target 1000 bytes, fan-in 4: tier 0 holds cubes below 4000 bytes, tier 1 below
	// 16000; cubes of 64000 bytes (1000·4³) are finished.
	snap, st := logOnlySnapshot(t, []string{"id", "x"}, false,
		planAdd{path: "new1", size: 100, mod: 1},
		planAdd{path: "new2", size: 100, mod: 2},
		planAdd{path: "t0a", size: 300, mod: 3, provider: "liquid", cube: "a", cols: cols},
		planAdd{path: "t0b", size: 300, mod: 3, provider: "liquid", cube: "b", cols: cols},
		planAdd{path: "t0c", size: 300, mod: 3, provider: "liquid", cube: "c", cols: cols},
		planAdd{path: "t1a", size: 5000, mod: 4, provider: "liquid", cube: "d", cols: cols},
		planAdd{path: "done", size: 70000, mod: 5, provider: "liquid", cube: "e", cols: cols},
		planAdd{path: "old", size: 100, mod: 6, provider: "liquid", cube: "o", cols: `["x"]`},
	)
	p, err := NewPlan(ctx, snap, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Liquid || p.Curve != CurveHilbert || strings.Join(p.ClusterBy, ",") != "id,x" || p.MinCubeSize != 64000 {
		t.Fatalf("liquid %v curve %v by %v min cube %d", p.Liquid, p.Curve, p.ClusterBy, p.MinCubeSize)
	}
	// Three tier-0 cubes are fewer than the fan-in: only the new files are clustered;
	// the finished cube and the file clustered by earlier columns stay.
	if got := planPaths(p); got != "cluster:new1,new2" || p.ClusteredFiles != 1 || p.FinishedCubeFiles != 1 {
		t.Fatalf("plan %q clustered %d finished %d", got, p.ClusteredFiles, p.FinishedCubeFiles)
	}
	// A cube smaller than two small files is one file (FileSize 0: the target).
	if b := p.Partitions[0].Bins[0]; b.FileSize != 0 {
		t.Fatalf("cube file size %d, want 0 (one file)", b.FileSize)
	}
	// Files of a larger cube are cut finer than the target (up to 16 files), but
	// never below the small-file size (750 of the target 1000), so that the layout
	// report and compaction do not call them small (issue 28 item 6).
	for _, tc := range []struct{ bytes, want int64 }{
		{1499, 0}, {1500, 750}, {3100, 775}, {12_000, 750}, {14_000, 875}, {16_000, 0}, {100_000, 0},
	} {
		got := p.cubeFileSize(tc.bytes)
		if got != tc.want {
			t.Errorf("cubeFileSize(%d) = %d, want %d", tc.bytes, got, tc.want)
		}
		if got != 0 && (got < log.SmallFileSizeFor(p.TargetFileSize) || got >= p.TargetFileSize) {
			t.Errorf("cubeFileSize(%d) = %d: outside [small, target)", tc.bytes, got)
		}
	}
	// A fourth tier-0 cube fills the tier: its cubes are merged with the new files.
	snap4, st4 := logOnlySnapshot(t, []string{"id", "x"}, false,
		planAdd{path: "new1", size: 100, mod: 1},
		planAdd{path: "t0a", size: 300, mod: 3, provider: "liquid", cube: "a", cols: cols},
		planAdd{path: "t0b", size: 300, mod: 3, provider: "liquid", cube: "b", cols: cols},
		planAdd{path: "t0c", size: 300, mod: 3, provider: "liquid", cube: "c", cols: cols},
		planAdd{path: "t0d1", size: 300, mod: 3, provider: "liquid", cube: "d", cols: cols},
		planAdd{path: "t0d2", size: 300, mod: 3, provider: "liquid", cube: "d", cols: cols},
		planAdd{path: "t1a", size: 5000, mod: 4, provider: "liquid", cube: "e", cols: cols},
	)
	p4, err := NewPlan(ctx, snap4, st4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := planPaths(p4); got != "cluster:new1,t0a,t0b,t0c,t0d1,t0d2" {
		t.Fatalf("tier merge: %q", got)
	}
	// A replan after a conflict uses the resolved options: still a liquid plan.
	again, err := NewPlan(ctx, snap, st, p.opts)
	if err != nil || !again.Liquid || planPaths(again) != planPaths(p) {
		t.Fatalf("replan: %v %q", err, planPaths(again))
	}
	full, err := NewPlan(ctx, snap, st, Options{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if full.NumFiles != 8 {
		t.Fatalf("full re-clusters everything: %q", planPaths(full))
	}
	if _, err := NewPlan(ctx, snap, st, Options{Curve: CurveZOrder, ClusterBy: []string{"x"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("explicit curve on a clustered table: %v", err)
	}
	// CLUSTER BY NONE: compaction only.
	none, st2 := logOnlySnapshot(t, []string{}, false, planAdd{path: "a", size: 100, mod: 1}, planAdd{path: "b", size: 100, mod: 2})
	np, err := NewPlan(ctx, none, st2, Options{})
	if err != nil || np.Liquid || planPaths(np) != "compact:a,b" {
		t.Fatalf("%v %v %q", err, np.Liquid, planPaths(np))
	}
}

func TestCubeTier(t *testing.T) {
	for _, c := range []struct {
		size int64
		want int
	}{{0, 0}, {3999, 0}, {4000, 1}, {15999, 1}, {16000, 2}, {1 << 40, 15}} {
		if got := cubeTier(c.size, 1000, 4); got != c.want {
			t.Errorf("cubeTier(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

func TestPlanBudgetAndPartitions(t *testing.T) {
	var files []planAdd
	for _, part := range []string{"p1", "p2", "p3"} {
		for i := 0; i < 6; i++ {
			files = append(files, planAdd{path: fmt.Sprintf("%s/f%d", part, i), size: 100, mod: int64(10 - i), part: part})
		}
	}
	files = append(files, planAdd{path: "p4/f0", size: 100, part: "p4"}, planAdd{path: "p4/f1", size: 100, part: "p4"})
	snap, st := logOnlySnapshot(t, nil, true, files...)
	ctx := context.Background()
	// Budget: compaction bins (of up to 1000 bytes: all six files of a partition)
	// are taken while they fit.
	p, err := NewPlan(ctx, snap, st, Options{MaxBytes: 1300})
	if err != nil {
		t.Fatal(err)
	}
	if p.NumBytes != 1200 || p.DeferredFiles != 8 || p.DeferredBytes != 800 {
		t.Fatalf("budget: %d bytes planned, %d files %d bytes deferred: %q", p.NumBytes, p.DeferredFiles, p.DeferredBytes, planPaths(p))
	}
	// Clustering bins are cut to the oldest files that fit.
	p, err = NewPlan(ctx, snap, st, Options{Curve: CurveHilbert, ClusterBy: []string{"id", "x"}, MaxBytes: 900})
	if err != nil {
		t.Fatal(err)
	}
	if got := planPaths(p); got != "cluster:p1/f0,p1/f1,p1/f2,p1/f3,p1/f4,p1/f5 cluster:p2/f3,p2/f4,p2/f5" {
		t.Fatalf("cut clustering bins: %q", got)
	}
	// Only the partitions asked for, and only when they have enough candidates.
	p1, p4 := "p1", "p4"
	p, err = NewPlan(ctx, snap, st, Options{Partitions: []map[string]*string{{"p": &p1}, {"p": &p4}}, MinFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := planPaths(p); got != "compact:p1/f0,p1/f1,p1/f2,p1/f3,p1/f4,p1/f5" || p.BelowMinFiles != 1 {
		t.Fatalf("partitions: %q below %d", got, p.BelowMinFiles)
	}
}
