package log

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/goldentest"
)

// TestRegressionCheckpointsAreCorruptLogErrors reads the regression tables, whose
// checkpoint Parquet is damaged and whose older JSON commits are gone: reading them
// panicked inside arrow-go (or on a nil value); now it is an ErrCorruptLog that names
// the checkpoint file and says that nothing older could be read instead.
func TestRegressionCheckpointsAreCorruptLogErrors(t *testing.T) {
	ctx := context.Background()
	for name, dir := range goldentest.RegressionTables(t) {
		t.Run(name, func(t *testing.T) {
			l := New(localStore(t, dir))
			for _, v := range []int64{-1, 2} {
				_, err := l.Snapshot(ctx, v)
				if !errors.Is(err, ErrCorruptLog) {
					t.Fatalf("Snapshot(%d) = %v, want ErrCorruptLog", v, err)
				}
				for _, want := range []string{"_delta_log/00000000000000000002.checkpoint.parquet", "checkpoint 2 is unreadable", "no older checkpoint"} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("Snapshot(%d) error %q does not say %q", v, err, want)
					}
				}
			}
		})
	}
}

// checkpointedLog writes commits 0..n-1 and a checkpoint at each of versions.
func checkpointedLog(t *testing.T, n int, versions ...int64) (*Log, func(v int64)) {
	t.Helper()
	ctx := context.Background()
	s := rawLog(t, n)
	l := New(s)
	for _, v := range versions {
		snap, err := l.Snapshot(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Checkpoint(ctx, snap); err != nil {
			t.Fatal(err)
		}
	}
	damage := func(v int64) {
		data, err := s.Get(ctx, CheckpointPath(v))
		if err != nil {
			t.Fatal(err)
		}
		// Keep the footer, damage the pages: the file parses, decoding fails.
		for i := 4; i < len(data)/2; i++ {
			data[i] ^= 0x5a
		}
		if err := s.Put(ctx, CheckpointPath(v), data); err != nil {
			t.Fatal(err)
		}
	}
	return l, damage
}

// TestUnreadableCheckpointFallbackWarns: as in Delta Spark, a snapshot whose checkpoint
// cannot be read is built from the newest older checkpoint (or version 0) and the JSON
// commits after it, at most twice; the snapshot and the log's observers get a warning
// naming each skipped checkpoint, and the answer is the same as without damage.
func TestUnreadableCheckpointFallbackWarns(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		damaged  []int64
		wantFrom int64 // checkpoint the snapshot starts from; -1 version 0
		fails    bool
	}{
		{name: "newest damaged: older checkpoint", damaged: []int64{6}, wantFrom: 4},
		{name: "two damaged: the third", damaged: []int64{6, 4}, wantFrom: 2},
		{name: "three damaged: refused after two fallbacks, as Spark", damaged: []int64{6, 4, 2}, fails: true},
		{name: "only checkpoint damaged: JSON from version 0", damaged: []int64{6, 4, 2}, wantFrom: -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cps := []int64{2, 4, 6}
			if c.wantFrom == -1 {
				cps = []int64{6}
				c.damaged = []int64{6}
			}
			l, damage := checkpointedLog(t, 9, cps...)
			for _, v := range c.damaged {
				damage(v)
			}
			var mu sync.Mutex
			var observed []string
			l.ObserveWarnings(func(msg string) {
				mu.Lock()
				defer mu.Unlock()
				observed = append(observed, msg)
			})
			snap, err := l.Snapshot(ctx, -1)
			if c.fails {
				if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "cannot read version 8: checkpoint 6 is unreadable") {
					t.Fatalf("got %v, want the newest checkpoint's failure first", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if snap.CheckpointVersion() != c.wantFrom || snap.NumFiles() != 9 || snap.Version() != 8 {
				t.Fatalf("from checkpoint %d with %d files at %d, want %d with 9 at 8", snap.CheckpointVersion(), snap.NumFiles(), snap.Version(), c.wantFrom)
			}
			if len(snap.Warnings()) != len(c.damaged) {
				t.Fatalf("warnings %q, want one per damaged checkpoint %v", snap.Warnings(), c.damaged)
			}
			for i, w := range snap.Warnings() {
				if !strings.Contains(w, CheckpointPath(c.damaged[i])) || !strings.Contains(w, "version 8 was read from") {
					t.Fatalf("warning %q does not name %s", w, CheckpointPath(c.damaged[i]))
				}
			}
			if strings.Join(observed, "\n") != strings.Join(snap.Warnings(), "\n") {
				t.Fatalf("observed %q, snapshot says %q", observed, snap.Warnings())
			}
			// A new checkpoint at the latest version repairs the table: no more warnings.
			if err := l.Checkpoint(ctx, snap); err != nil {
				t.Fatal(err)
			}
			again, err := l.Snapshot(ctx, -1)
			if err != nil || len(again.Warnings()) != 0 || again.CheckpointVersion() != 8 {
				t.Fatalf("after a new checkpoint: %v, warnings %q", err, again.Warnings())
			}
		})
	}
}

// TestCheckDecodedRefusesInconsistentArrays builds arrays as a damaged file can make
// arrow-go's decoder build them (a map whose offsets run past its entries, a struct
// with a short child, a string whose offsets decrease) and checks that checkDecoded
// refuses each, and accepts the intact originals. Reading the map's entries panicked
// in strPtrMap (found by FuzzReadCheckpoint).
func TestCheckDecodedRefusesInconsistentArrays(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	mb := array.NewMapBuilder(mem, arrow.BinaryTypes.String, arrow.BinaryTypes.String, false)
	defer mb.Release()
	kb, ib := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
	for i := 0; i < 3; i++ {
		mb.Append(true)
		kb.Append("k")
		ib.Append("v")
	}
	m := mb.NewMapArray()
	defer m.Release()
	if err := checkDecoded(m); err != nil {
		t.Fatalf("intact map refused: %v", err)
	}
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	sb.AppendValues([]string{"ab", "cd", "ef"}, nil)
	str := sb.NewStringArray()
	defer str.Release()
	if err := checkDecoded(str); err != nil {
		t.Fatalf("intact string refused: %v", err)
	}

	// The map's offsets claim 10 entries; there are 3.
	offs := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 1, 2, 10}))
	badMap := array.NewData(m.DataType(), 3, []*memory.Buffer{nil, offs}, []arrow.ArrayData{m.Data().Children()[0]}, 0, 0)
	defer badMap.Release()
	// The string's offsets decrease.
	soffs := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 4, 2, 6}))
	badStr := array.NewData(arrow.BinaryTypes.String, 3, []*memory.Buffer{nil, soffs, str.Data().Buffers()[2]}, nil, 0, 0)
	defer badStr.Release()
	// The struct is longer than its child.
	st := arrow.StructOf(arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true})
	badStruct := array.NewData(st, 5, []*memory.Buffer{nil}, []arrow.ArrayData{str.Data()}, 0, 0)
	defer badStruct.Release()
	// An int64 column with too few bytes of values.
	badInt := array.NewData(arrow.PrimitiveTypes.Int64, 4, []*memory.Buffer{nil, memory.NewBufferBytes(make([]byte, 16))}, nil, 0, 0)
	defer badInt.Release()
	for name, d := range map[string]arrow.ArrayData{"map": badMap, "string": badStr, "struct": badStruct, "int64": badInt} {
		if err := checkData(d, 0); err == nil {
			t.Errorf("inconsistent %s array accepted", name)
		}
	}
}
