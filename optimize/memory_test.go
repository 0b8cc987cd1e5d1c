package optimize

import (
	"context"
	"github.com/skiplake/skiplake/internal/datafile"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/storage"
)

// peakMemory samples the live Go heap (as marked by the last GC) and the process RSS until stop is
// called, and returns the peaks.
func peakMemory() (stop func() (heap, rss int64)) {
	var mu sync.Mutex
	var peakHeap, peakRSS int64
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	go func() {
		defer close(finished)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			h := int64(sample[0].Value.Uint64())
			r := readRSS()
			mu.Lock()
			peakHeap, peakRSS = max(peakHeap, h), max(peakRSS, r)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peakHeap, peakRSS
	}
}

// liveHeap returns the live Go heap as marked by the last GC.
func liveHeap() int64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// readRSS returns the resident set size from /proc/self/status (0 if unavailable).
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// TestBoundedMemory clusters a table whose in-memory size is four times the memory
// budget and checks that the run spilled, kept every row, and that the live heap
// stayed far below the data size. Size knob: SKIPLAKE_OPTIMIZE_MEM_MB (Arrow MiB of
// data; the budget is a quarter of it). Default 8 (2 MiB budget); the brief's
// figure is SKIPLAKE_OPTIMIZE_MEM_MB=128 (32 MiB budget).
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("bounded-memory test skipped in -short mode")
	}
	dataMiB := 8
	if s := os.Getenv("SKIPLAKE_OPTIMIZE_MEM_MB"); s != "" {
		dataMiB, _ = strconv.Atoi(s)
	}
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tt := newTestTableOn(t, store, "", nil)
	const rowsPerFile = 50_000
	var arrowBytes, rows int64
	for i := 0; arrowBytes < int64(dataMiB)<<20; i++ {
		rec := genRecord(rowsPerFile, rows, uint64(i+1))
		arrowBytes += datafile.RecordBytes(rec)
		rows += rec.NumRows()
		tt.appendFiles(t, []arrow.RecordBatch{rec}, nil)
		rec.Release()
	}
	budget := arrowBytes / 4
	var fileBytes int64
	for _, a := range tt.snapshot(t).Files() {
		fileBytes += a.Size
	}
	spill := t.TempDir()
	plan, err := NewPlan(context.Background(), tt.snapshot(t), tt.store, Options{Curve: CurveHilbert, ClusterBy: []string{"x", "y"},
		TargetFileSize: fileBytes / 4, MemoryBudget: budget, SpillDir: spill})
	if err != nil {
		t.Fatal(err)
	}
	// The live heap is the process's: earlier tests of the package may leave live
	// objects behind (caches, pools), so the figure that matters is the growth over
	// the heap live when Execute starts.
	runtime.GC()
	baseRSS := readRSS()
	baseHeap := liveHeap()
	stop := peakMemory()
	m, err := Execute(context.Background(), plan)
	heap, rss := stop()
	heap = max(heap-baseHeap, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("data: %d rows, %.1f MiB Arrow, %.1f MiB Parquet; budget %.1f MiB; spilled %.1f MiB; peak live heap growth %.1f MiB; RSS %.1f MiB before, peak %.1f MiB; %.0f rows/s",
		rows, mib(arrowBytes), mib(fileBytes), mib(budget), mib(m.SpilledBytes), mib(heap), mib(baseRSS), mib(rss), float64(rows)/m.Elapsed.Seconds())
	if m.SpilledBytes == 0 {
		t.Fatal("input 4x the budget was not spilled")
	}
	if m.NumRows != rows {
		t.Fatalf("rewrote %d rows of %d", m.NumRows, rows)
	}
	var after int64
	for _, a := range tt.snapshot(t).Files() {
		n, _ := a.NumRecords()
		after += n
	}
	if after != rows {
		t.Fatalf("table has %d rows after OPTIMIZE, want %d", after, rows)
	}
	if left, _ := os.ReadDir(spill); len(left) != 0 {
		t.Fatalf("%d spill files left behind", len(left))
	}
	// The budget bounds the rows held; the bin's one output writer adds its encoder
	// state and its encoded file (writerOverhead + TargetFileSize).
	limit := budget + (plan.opts.TargetFileSize + writerOverhead) + 16<<20
	if heap > limit {
		t.Errorf("peak live heap growth %.1f MiB > budget + writer overhead = %.1f MiB", mib(heap), mib(limit))
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
