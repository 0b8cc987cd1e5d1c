package log_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/skiplake/skiplake/internal/scalegen"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// BenchmarkScaleCheckpointWrite writes the classic checkpoint of a table of many
// files (internal/scalegen; sizes from SKIPLAKE_SCALE_FILES, default 10000; tables kept
// in SKIPLAKE_SCALE_DIR when set, else built in a temporary directory), partitioned and
// not. The snapshot is loaded once; one op = log.Checkpoint of it (encoding and the
// Put, which rewrites the checkpoint identically). extra-heap-MB is the peak of live
// heap objects during the op above the heap with the snapshot loaded (sampled every
// millisecond): what writing costs beyond the action index.
func BenchmarkScaleCheckpointWrite(b *testing.B) {
	counts, err := scalegen.FilesFromEnv(10_000)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range counts {
		for _, part := range []bool{false, true} {
			name := fmt.Sprintf("files=%d", n)
			if part {
				name = "part-" + name
			}
			b.Run(name, func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), name)
				if keep := os.Getenv("SKIPLAKE_SCALE_DIR"); keep != "" {
					dir = filepath.Join(keep, name)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				store, err := storage.NewLocal(dir)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil {
					if err := scalegen.Build(ctx, store, scalegen.Options{Files: n, Partitioned: part, Commits: 3}); err != nil {
						b.Fatal(err)
					}
				}
				l := log.New(store)
				snap, err := l.Snapshot(ctx, scalegen.CheckpointVersion(scalegen.Options{Files: n, Commits: 3}))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				base := heapObjects()
				var peak uint64
				b.ReportAllocs()
				for b.Loop() {
					stop := sampleHeap(&peak)
					err := l.Checkpoint(ctx, snap)
					stop()
					if err != nil {
						b.Fatal(err)
					}
				}
				runtime.KeepAlive(snap)
				b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "extra-heap-MB")
				b.ReportMetric(float64(base)/(1<<20), "snapshot-heap-MB")
			})
		}
	}
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap records the peak of heapObjects into *peak until the returned stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			*peak = max(*peak, heapObjects())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
