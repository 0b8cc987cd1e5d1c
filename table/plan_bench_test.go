package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// planBenchDays is the number of day partitions of the planning benchmark's table.
const planBenchDays = 1000

// planBenchFilter keeps one week of days and, within it, the files whose amounts
// reach above the bound (about a fifth): the partition pass and the stats pass both
// decide files.
const planBenchFilter = "day >= DATE '2021-03-01' AND day < DATE '2021-03-08' AND amount > 900"

var planBenchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
}, nil)

// buildPlanTable creates, in dir, a table partitioned by day whose latest version is
// a checkpoint of n files (1,000 day partitions, statistics on every column). Only
// the log is written (no data files: planning never opens them): version 0 creates
// the table, version 1 adds the n files in one commit, and a checkpoint of version
// 1 makes opening the table read the Parquet checkpoint, as a large table does.
func buildPlanTable(b *testing.B, dir string, n int) {
	b.Helper()
	ctx := context.Background()
	if _, err := table.CreateURL(ctx, dir, planBenchSchema, table.CreateOptions{PartitionColumns: []string{"day"}}); err != nil {
		b.Fatal(err)
	}
	store, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	l := log.New(store)
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		b.Fatal(err)
	}
	tx := snap.NewTransaction(log.TxnOptions{})
	day0 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	adds := make([]*log.Add, n)
	for i := range adds {
		day := day0.AddDate(0, 0, i%planBenchDays).Format(time.DateOnly)
		lo := int64(i/planBenchDays) * 1000
		amount := i * 7919 % 977 // spread over the days
		adds[i] = &log.Add{
			Path:            fmt.Sprintf("day=%s/part-%05d-00000000-0000-4000-8000-%012d.c000.zstd.parquet", day, i/planBenchDays, i),
			PartitionValues: map[string]*string{"day": &day}, Size: 8 << 20, ModificationTime: 1_700_000_000_000, DataChange: true,
			Stats: fmt.Sprintf(`{"numRecords":1000,"minValues":{"id":%d,"amount":%d.5,"note":"n%07d"},`+
				`"maxValues":{"id":%d,"amount":%d.5,"note":"n%07d"},"nullCount":{"id":0,"amount":0,"note":3}}`,
				lo, amount, i, lo+999, amount+100, i+50),
		}
	}
	tx.Add(adds...)
	if _, err := tx.Commit(ctx, log.CommitInfo{Operation: "WRITE"}); err != nil {
		b.Fatal(err)
	}
	snap, err = l.Snapshot(ctx, -1)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Checkpoint(ctx, snap); err != nil {
		b.Fatal(err)
	}
	// The commit is covered by the checkpoint: removing it leaves the log a reader
	// of the latest version sees (and keeps the set-up's disk use down).
	if err := os.Remove(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 1))); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPlanPartitioned opens a partitioned table of 10k, 100k and 1M files (its
// latest version a checkpoint) and plans a filter on it, as `skiplake files --filter`
// does: load the snapshot, then parse the statistics and partition values, build
// the skipping index and decide every file. Planning is linear in the files: the
// ns/file and allocs/file metrics stay flat from 10k to 1M (load-ns/file and
// plan-ns/file split the wall time by phase; cpu-ns/file is the process's CPU time,
// which other load on the machine does not inflate, garbage collection included). The 1M size runs only when
// SKIPLAKE_BENCH_PLAN_1M=1 (it needs about 3 GB and a minute of set-up), and -short
// runs 10k only. SKIPLAKE_BENCH_PLAN_DIR keeps the tables in that directory
// (files=N below it; reused when present), for measuring the CLI on them.
func BenchmarkPlanPartitioned(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			switch {
			case testing.Short() && n > 10_000:
				b.Skip("-short plans 10k files only")
			case n > 100_000 && os.Getenv("SKIPLAKE_BENCH_PLAN_1M") != "1":
				b.Skip("set SKIPLAKE_BENCH_PLAN_1M=1 to plan 1M files")
			}
			dir := filepath.Join(b.TempDir(), "t")
			if keep := os.Getenv("SKIPLAKE_BENCH_PLAN_DIR"); keep != "" {
				dir = filepath.Join(keep, fmt.Sprintf("files=%d", n))
			}
			if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil {
				buildPlanTable(b, dir, n)
			}
			ctx := context.Background()
			t, err := table.OpenURL(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			var load, plan time.Duration
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			kept := 0
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				start := time.Now()
				snap, err := t.Snapshot(ctx, table.Latest())
				if err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				sc, err := snap.Scan(ctx, table.WithFilter(planBenchFilter))
				if err != nil {
					b.Fatal(err)
				}
				rep := sc.Report()
				plan += time.Since(mid)
				load += mid.Sub(start)
				if rep.Files.Total != int64(n) {
					b.Fatalf("planned %d files, want %d", rep.Files.Total, n)
				}
				kept = int(rep.Files.Kept)
			}
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&after)
			if kept == 0 || kept >= n/100 {
				b.Fatalf("the filter kept %d of %d files: the benchmark's table or filter is off", kept, n)
			}
			ops := float64(b.N) * float64(n)
			b.ReportMetric(float64(load+plan)/ops, "ns/file")
			b.ReportMetric(float64(cpu)/ops, "cpu-ns/file")
			b.ReportMetric(float64(load)/ops, "load-ns/file")
			b.ReportMetric(float64(plan)/ops, "plan-ns/file")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/ops, "allocs/file")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/ops, "B/file")
		})
	}
}
