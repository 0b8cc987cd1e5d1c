package log_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/skiplake/skiplake/internal/scalegen"
	"github.com/skiplake/skiplake/log"
)

// BenchmarkScaleCheckpointWrite writes the classic checkpoint of a table of many
// files (internal/scalegen; sizes from SKIPLAKE_SCALE_FILES, default 10000; tables kept
// in SKIPLAKE_SCALE_DIR when set, else built in a temporary directory), partitioned and
// not. The snapshot is loaded once; one op = log.Checkpoint of it (encoding and the
// Put, which rewrites the checkpoint identically). extra-heap-MB is the peak of live
// heap objects during the op above the heap with the snapshot loaded (sampled every
// millisecond): what writing costs beyond the action index.
func BenchmarkScaleCheckpointWrite(b *testing.B) {
	cases, err := scalegen.Cases(10_000)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		b.Run(c.Name, func(b *testing.B) {
			ctx := context.Background()
			_, store, err := c.Open(ctx, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			l := log.New(store)
			snap, err := l.Snapshot(ctx, scalegen.CheckpointVersion(c.Options))
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
