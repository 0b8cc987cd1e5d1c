package table_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/skiplake/skiplake/internal/scalegen"
	"github.com/skiplake/skiplake/table"
)

// BenchmarkScalePlan loads the snapshot of a table of many files (a checkpoint plus 3
// commits, built by internal/scalegen) and plans it, with scalegen.Filter and with no
// filter, partitioned and not. The sizes come from SKIPLAKE_SCALE_FILES
// (comma-separated, default 10000); SKIPLAKE_SCALE_DIR keeps the tables there between
// runs (the layout of scalegen's TestBuildDir). One op = snapshot + plan, as the CLI's
// `files` command does; cpu-ns/file is the process's CPU time per file, heap-MB the
// live heap after the op with the snapshot and plan still referenced.
func BenchmarkScalePlan(b *testing.B) {
	cases, err := scalegen.Cases(10_000)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		name, n := c.Name, c.Options.Files
		dir, _, err := c.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		for _, filter := range []string{"", scalegen.Filter} {
			mode := "filter=none"
			if filter != "" {
				mode = "filter=selective"
			}
			b.Run(name+"/"+mode, func(b *testing.B) {
				benchScalePlan(b, dir, n, filter)
			})
		}
	}
}

func benchScalePlan(b *testing.B, dir string, n int, filter string) {
	ctx := context.Background()
	var opts []table.ScanOption
	if filter != "" {
		opts = append(opts, table.WithFilter(filter))
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	cpu0 := cpuTime()
	var load time.Duration
	var heap uint64
	for b.Loop() {
		start := time.Now()
		// A table opened afresh each op: nothing a previous op loaded is reused, as in
		// one CLI run.
		t, err := table.OpenURL(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		snap, err := t.Snapshot(ctx, table.Latest())
		if err != nil {
			b.Fatal(err)
		}
		load += time.Since(start)
		sc, err := snap.Scan(ctx, opts...)
		if err != nil {
			b.Fatal(err)
		}
		rep := sc.Report()
		if rep.Files.Total != int64(n) {
			b.Fatalf("planned %d files, want %d", rep.Files.Total, n)
		}
		if filter == "" && rep.Files.Kept != int64(n) || filter != "" && (rep.Files.Kept == 0 || rep.Files.Kept >= int64(n)/100) {
			b.Fatalf("filter %q kept %d of %d files", filter, rep.Files.Kept, n)
		}
		var ms runtime.MemStats
		b.StopTimer()
		gc0 := cpuTime()
		runtime.GC() // the live heap of snapshot + plan; its CPU is not the op's
		runtime.ReadMemStats(&ms)
		cpu0 += cpuTime() - gc0
		b.StartTimer()
		heap = max(heap, ms.HeapAlloc)
		runtime.KeepAlive(sc)
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	ops := float64(b.N) * float64(n)
	b.ReportMetric(float64(cpu)/ops, "cpu-ns/file")
	b.ReportMetric(float64(load)/ops, "load-ns/file")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/ops, "allocs/file")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/ops, "B/file")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
}
