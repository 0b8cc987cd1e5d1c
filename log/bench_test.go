package log

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// genLargeTable writes a table with a checkpoint holding nFiles adds at
// version 1 and 10 later commits (each adds 10 files and removes 1).
func genLargeTable(b *testing.B, dir string, nFiles int) {
	b.Helper()
	ctx := context.Background()
	l := New(localStore(b, dir))
	md := testMetadata()
	md.PartitionColumns = []string{"part"}
	p := Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	if _, err := l.Create(ctx, md, p, nil, CommitInfo{}); err != nil {
		b.Fatal(err)
	}
	snap := &Snapshot{log: l, version: 1, protocol: p, metadata: md, txns: map[string]Txn{}}
	for i := 0; i < nFiles; i++ {
		pv := fmt.Sprintf("p%03d", i%100)
		snap.files = append(snap.files, &Add{
			Path:            fmt.Sprintf("part=%s/part-%05d-6b2c9a1e-1f0e-4c55-9a36-%012d.c000.snappy.parquet", pv, i, i),
			PartitionValues: map[string]*string{"part": &pv}, Size: 1 << 20, ModificationTime: 1700000000000, DataChange: true,
			Stats: fmt.Sprintf(`{"numRecords":1000,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i*1000, i*1000+999),
		})
	}
	put(b, l.store, CommitPath(1), ciLine(1))
	if err := l.Checkpoint(ctx, snap); err != nil {
		b.Fatal(err)
	}
	for v := int64(2); v <= 11; v++ {
		var lines []string
		lines = append(lines, ciLine(v))
		lines = append(lines, fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":1,"dataChange":true}}`, snap.files[v].Path))
		for j := 0; j < 10; j++ {
			lines = append(lines, addLine(fmt.Sprintf("new-%d-%d.parquet", v, j), 10))
		}
		put(b, l.store, CommitPath(v), lines...)
	}
}

// BenchmarkSnapshotLoad loads the latest snapshot of a table with a large
// checkpoint plus 10 commits from the local filesystem.
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			if testing.Short() && n > 10_000 {
				b.Skip("large table skipped in -short mode")
			}
			dir := b.TempDir()
			genLargeTable(b, dir, n)
			l := New(localStore(b, dir))
			ctx := context.Background()
			want := n - 10 + 100
			var peak, live uint64
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			loads := 0
			for b.Loop() {
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				snap, err := l.Snapshot(ctx, -1)
				if err != nil {
					b.Fatal(err)
				}
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				if after.HeapAlloc > peak {
					peak = after.HeapAlloc
				}
				if snap.NumFiles() != want {
					b.Fatalf("files %d, want %d", snap.NumFiles(), want)
				}
				loads++
				if loads == 1 {
					runtime.GC()
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					live = m.HeapAlloc
				}
				runtime.KeepAlive(snap)
			}
			elapsed := time.Since(start).Seconds()
			b.ReportMetric(float64(n*loads)/elapsed, "files/s")
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
			b.ReportMetric(float64(live)/(1<<20), "live-MB")
		})
	}
}

// BenchmarkCommit measures small blind appends (one file per commit) on the
// local filesystem, including the snapshot refresh before each commit and
// the automatic checkpoint every 10 commits.
func BenchmarkCommit(b *testing.B) {
	b.Run("append-files=1", func(b *testing.B) {
		ctx := context.Background()
		l := New(localStore(b, b.TempDir()))
		createTable(b, l, nil)
		b.ReportAllocs()
		start := time.Now()
		commits := 0
		for b.Loop() {
			snap, err := l.Snapshot(ctx, -1)
			if err != nil {
				b.Fatal(err)
			}
			tx := snap.NewTransaction(TxnOptions{})
			tx.Add(newAdd(fmt.Sprintf("f%d.parquet", commits), 10))
			if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
				b.Fatal(err)
			}
			commits++
		}
		b.ReportMetric(float64(commits)/time.Since(start).Seconds(), "commits/s")
	})
}
