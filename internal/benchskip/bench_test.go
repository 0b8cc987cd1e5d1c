package benchskip_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/skiplake/skiplake/internal/benchskip"
)

// BenchmarkRun times a whole run (generate, lay out, collect statistics,
// plan every query) and reports the skipping figures of 2-column 1% boxes.
// BENCHSKIP_ROWS overrides the synthetic row count.
func BenchmarkRun(b *testing.B) {
	rows := 20_000
	if s := os.Getenv("BENCHSKIP_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			rows = n
		}
	}
	for _, files := range []int{20, 100} {
		b.Run(fmt.Sprintf("rows=%d/files=%d", rows, files), func(b *testing.B) {
			cfg := benchskip.Config{Dataset: benchskip.DatasetSynthetic, Rows: rows, Files: files, Queries: 20,
				Workloads: []string{"box2-1%"}}
			b.ReportAllocs()
			var res *benchskip.Result
			for b.Loop() {
				var err error
				if res, err = benchskip.Run(context.Background(), cfg, nil); err != nil {
					b.Fatal(err)
				}
			}
			for _, l := range []string{benchskip.LayoutZOrder, benchskip.LayoutHilbert, benchskip.LayoutKDTree} {
				c := res.Cell(l, "box2-1%")
				b.ReportMetric(c.FilesReadPct, l+"-files-read%")
				b.ReportMetric(c.RatioGeoMean, l+"-ratio")
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkPlan reports the planning time per query on a 1,000-file layout.
func BenchmarkPlan(b *testing.B) {
	cfg := benchskip.Config{Dataset: benchskip.DatasetLineitem, ScaleFactor: 0.01, Files: 1000, RowGroups: 2,
		Queries: 100, Workloads: []string{"box2-1%"}, Layouts: []string{benchskip.LayoutHilbert}}
	res, err := benchskip.Run(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("files=1000/queries=100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err = benchskip.Run(context.Background(), cfg, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(res.Cell(benchskip.LayoutHilbert, "box2-1%").PlanMicros*1e3, "plan-ns/query")
	})
}
