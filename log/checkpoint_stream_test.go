package log

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
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
	return createdSnapshot(t, l, md, adds)
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

// TestCheckpointStatsParsedRefusedRows writes a stats_parsed checkpoint whose files mix
// stats the struct holds with stats it cannot (a string where a number belongs, two
// rows in one stats string, not JSON): the refused ones are NULL in stats_parsed, the
// ones after them are typed as if nothing had gone wrong (the scratch builder a failed
// decode leaves half-appended is replaced, not reused), every file keeps its JSON
// stats, and nothing the writer allocated is left (a checked allocator), also across
// scratch replacements at the row-group size.
func TestCheckpointStatsParsedRefusedRows(t *testing.T) {
	defer func(rows int, mem memory.Allocator) { checkpointRowGroupRows, checkpointAllocator = rows, mem }(checkpointRowGroupRows, checkpointAllocator)
	checkpointRowGroupRows = 7
	ctx := context.Background()
	l := New(memStore())
	md := testMetadata()
	md.Configuration = map[string]string{PropCheckpointWriteStatsAsStruct: "true", PropCheckpointInterval: "1000"}
	bad := map[int]string{
		3:  `{"numRecords":"ten","minValues":{"id":1}}`,
		4:  `{"numRecords":1},{"numRecords":2}`,
		11: `{"numRecords":5,"minValues":{"id":"abc"}}`,
		12: `not json`,
		20: `{"numRecords":5,"maxValues":{"id":1.5e400}}`,
	}
	const n = 30
	adds := make([]*Add, n)
	for i := range adds {
		st, ok := bad[i]
		if !ok {
			st = fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i+1, i*10, i*10+9)
		}
		adds[i] = &Add{Path: fmt.Sprintf("f-%03d.parquet", i), PartitionValues: map[string]*string{}, Size: 1, ModificationTime: 1, DataChange: true, Stats: st}
	}
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, adds, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	checkpointAllocator = alloc
	data, _, err := l.encodeCheckpoint(snap)
	checkpointAllocator = memory.DefaultAllocator
	if err != nil {
		t.Fatal(err)
	}
	alloc.AssertSize(t, 0)
	tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices("add")
	if len(idx) != 1 {
		t.Fatal("no add column")
	}
	seen := 0
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		add := chunk.(*array.Struct)
		st := add.DataType().(*arrow.StructType)
		pi, _ := st.FieldIdx("path")
		si, _ := st.FieldIdx("stats_parsed")
		paths, parsed := add.Field(pi).(*array.String), add.Field(si).(*array.Struct)
		nr, _ := parsed.DataType().(*arrow.StructType).FieldIdx("numRecords")
		for r := 0; r < add.Len(); r++ {
			if !add.IsValid(r) {
				continue
			}
			var i int
			if _, err := fmt.Sscanf(paths.Value(r), "f-%03d.parquet", &i); err != nil {
				t.Fatal(err)
			}
			seen++
			_, refused := bad[i]
			if parsed.IsValid(r) == refused {
				t.Errorf("file %d (stats %q): stats_parsed valid=%v, want %v", i, adds[i].Stats, parsed.IsValid(r), !refused)
			}
			if !refused {
				if got := parsed.Field(nr).(*array.Int64).Value(r); got != int64(i+1) {
					t.Errorf("file %d: stats_parsed.numRecords %d, want %d", i, got, i+1)
				}
			}
		}
	}
	if seen != n {
		t.Fatalf("%d adds in the checkpoint, want %d", seen, n)
	}
}
