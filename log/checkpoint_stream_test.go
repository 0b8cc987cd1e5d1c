package log

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// peakAllocator counts the bytes an Allocator has outstanding and their peak.
type peakAllocator struct {
	mu         sync.Mutex
	inner      memory.Allocator
	cur, peak  int
	allocCalls int
}

func (a *peakAllocator) grow(n int) {
	a.cur += n
	if a.cur > a.peak {
		a.peak = a.cur
	}
}

func (a *peakAllocator) Allocate(size int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allocCalls++
	b := a.inner.Allocate(size)
	a.grow(len(b))
	return b
}

func (a *peakAllocator) Reallocate(size int, b []byte) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := len(b)
	nb := a.inner.Reallocate(size, b)
	a.grow(len(nb) - old)
	return nb
}

func (a *peakAllocator) Free(b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cur -= len(b)
	a.inner.Free(b)
}

// scaleSnapshot commits n files with statistics (partitioned by part, 50 values) to a
// table with stats_parsed and partitionValues_parsed in its checkpoints and returns the
// snapshot.
func scaleSnapshot(t *testing.T, n int) (*Log, *Snapshot) {
	t.Helper()
	ctx := context.Background()
	l := New(memStore())
	md := testMetadata()
	md.PartitionColumns = []string{"part"}
	md.Configuration = map[string]string{PropCheckpointWriteStatsAsStruct: "true", PropCheckpointInterval: "1000"}
	adds := make([]*Add, n)
	for i := range adds {
		part := fmt.Sprintf("p%02d", i%50)
		adds[i] = &Add{Path: fmt.Sprintf("part=%s/f-%08d.parquet", part, i), PartitionValues: map[string]*string{"part": &part},
			Size: 1000 + int64(i), ModificationTime: 1, DataChange: true,
			Stats: fmt.Sprintf(`{"numRecords":10,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i*10, i*10+9)}
	}
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, adds, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	return l, snap
}

// TestCheckpointWriteStreams writes checkpoints of 4,000 and 32,000 files with row
// groups of 1,000 actions: the Arrow and Parquet memory the writer holds at its peak
// does not grow with the number of files (the builders hold one row group, flushed as
// soon as it is full), the file has one row group per 1,000 actions, and reading it
// back gives the snapshot's files.
func TestCheckpointWriteStreams(t *testing.T) {
	defer func(rows int, mem memory.Allocator) { checkpointRowGroupRows, checkpointAllocator = rows, mem }(checkpointRowGroupRows, checkpointAllocator)
	checkpointRowGroupRows = 1000
	ctx := context.Background()
	peaks := map[int]int{}
	for _, n := range []int{4000, 32000} {
		l, snap := scaleSnapshot(t, n)
		alloc := &peakAllocator{inner: memory.NewGoAllocator()}
		checkpointAllocator = alloc
		data, rows, err := l.encodeCheckpoint(snap)
		checkpointAllocator = memory.DefaultAllocator
		if err != nil {
			t.Fatal(err)
		}
		if alloc.cur != 0 {
			t.Errorf("%d files: %d bytes still allocated after the checkpoint was written", n, alloc.cur)
		}
		peaks[n] = alloc.peak
		rdr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := rdr.NumRowGroups(), int(rows+999)/1000; got != want {
			t.Errorf("%d files: %d row groups, want %d (%d rows)", n, got, want, rows)
		}
		for i := 0; i < rdr.NumRowGroups(); i++ {
			if got := rdr.MetaData().RowGroup(i).NumRows(); got > 1000 {
				t.Errorf("%d files: row group %d has %d rows, want at most 1000", n, i, got)
			}
		}
		_ = rdr.Close()
		if err := l.Checkpoint(ctx, snap); err != nil {
			t.Fatal(err)
		}
		back, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		if back.CheckpointVersion() != snap.Version() || len(back.Files()) != n {
			t.Fatalf("%d files: read back checkpoint %d with %d files", n, back.CheckpointVersion(), len(back.Files()))
		}
		want := map[string]string{}
		for _, a := range snap.Files() {
			want[a.Path] = a.Stats
		}
		for _, a := range back.Files() {
			if s, ok := want[a.Path]; !ok || s != a.Stats {
				t.Fatalf("%d files: file %s read back with stats %q, want %q (present %v)", n, a.Path, a.Stats, s, ok)
			}
		}
	}
	// Eight times the files: the peak may differ by the sizes of one row group's
	// values (paths grow by a digit or so), not by the files' count.
	if small, big := peaks[4000], peaks[32000]; big > small+small/2 {
		t.Errorf("peak Arrow memory grew from %d bytes (4,000 files) to %d (32,000): checkpoint writing does not stream", small, big)
	}
	t.Logf("peak Arrow/Parquet memory: %d bytes at 4,000 files, %d at 32,000", peaks[4000], peaks[32000])
}
