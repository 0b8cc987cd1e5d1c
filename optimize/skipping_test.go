package optimize

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestClusteringImprovesSkipping builds a two-column table of uniformly random x, y
// in many small files, clusters copies of it with Z-order and Hilbert, and counts the
// files whose x/y min-max box intersects random query boxes covering 1% of the
// domain (10% of each axis). Size knob: SKIPLAKE_OPTIMIZE_SKIP_FILES (input files).
func TestClusteringImprovesSkipping(t *testing.T) {
	nFiles, rowsPer := 32, 4000
	if testing.Short() {
		nFiles, rowsPer = 16, 2000
	}
	if s := os.Getenv("SKIPLAKE_OPTIMIZE_SKIP_FILES"); s != "" {
		nFiles, _ = strconv.Atoi(s)
	}
	build := func() *testTable {
		tt := newTestTable(t, "", nil)
		var recs []arrow.RecordBatch
		for i := 0; i < nFiles; i++ {
			recs = append(recs, genRecord(rowsPer, int64(i*rowsPer), uint64(1000+i)))
		}
		tt.appendFiles(t, recs, nil)
		for _, r := range recs {
			r.Release()
		}
		return tt
	}
	base := build()
	// Output files of one sixteenth of the input: 16 files.
	var total int64
	for _, a := range base.snapshot(t).Files() {
		total += a.Size
	}
	target := total / 16
	rng := rand.New(rand.NewPCG(5, 5))
	type box struct{ x0, x1, y0, y1 float64 }
	var queries []box
	for i := 0; i < 400; i++ {
		x, y := rng.Float64()*900_000, rng.Float64()*900_000
		queries = append(queries, box{x, x + 100_000, y, y + 100_000})
	}
	avgHit := func(tt *testTable) (float64, int) {
		bs := boxes(t, tt.snapshot(t))
		sum := 0
		for _, q := range queries {
			sum += filesHit(bs, q.x0, q.x1, q.y0, q.y1)
		}
		return float64(sum) / float64(len(queries)), len(bs)
	}
	before, nb := avgHit(base)
	res := map[Curve]float64{}
	for _, c := range []Curve{CurveLinear, CurveZOrder, CurveHilbert} {
		tt := build()
		runOptimize(t, tt, Options{TargetFileSize: target, Curve: c, ClusterBy: []string{"x", "y"}})
		hit, n := avgHit(tt)
		res[c] = hit
		t.Logf("%-8s files read per 1%% box: %5.2f of %d (%.1f%%)", c, hit, n, 100*hit/float64(n))
	}
	t.Logf("%-8s files read per 1%% box: %5.2f of %d (%.1f%%)", "before", before, nb, 100*before/float64(nb))
	if !(res[CurveHilbert] <= res[CurveZOrder]) {
		t.Errorf("Hilbert reads %.2f files per query, Z-order %.2f: want Hilbert ≤ Z-order", res[CurveHilbert], res[CurveZOrder])
	}
	if res[CurveZOrder] > before/3 || res[CurveHilbert] > before/3 {
		t.Errorf("clustering should read far fewer files: before %.2f (all %d), zorder %.2f, hilbert %.2f", before, nb, res[CurveZOrder], res[CurveHilbert])
	}
}
