package table_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// peakAllocator is a Go allocator that records the most bytes it had outstanding at
// once.
type peakAllocator struct {
	mem       *memory.GoAllocator
	mu        sync.Mutex
	cur, peak int64
}

func (a *peakAllocator) add(n int) {
	a.mu.Lock()
	a.cur += int64(n)
	a.peak = max(a.peak, a.cur)
	a.mu.Unlock()
}

func (a *peakAllocator) Allocate(size int) []byte { a.add(size); return a.mem.Allocate(size) }

func (a *peakAllocator) Reallocate(size int, b []byte) []byte {
	a.add(size - len(b))
	return a.mem.Reallocate(size, b)
}

func (a *peakAllocator) Free(b []byte) { a.add(-len(b)); a.mem.Free(b) }

func (a *peakAllocator) stats() (cur, peak int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur, a.peak
}

// wideTable writes 40,000 rows of a 1 KiB random string (incompressible beyond its
// alphabet) and a key, about 40 MiB decoded, in one file of several row groups of
// about 13 MiB decoded each: row groups larger than a small read-ahead budget and
// batches bounded by bytes, not rows.
func wideTable(t *testing.T) *table.Table {
	t.Helper()
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.String},
	}, nil)
	tb, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1024)
	var recs []arrow.RecordBatch
	for k := 0; k < 40000; {
		b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
		for range 8000 {
			for i := range buf {
				buf[i] = 'a' + byte(rng.IntN(26))
			}
			b.Field(0).(*array.Int64Builder).Append(int64(k))
			b.Field(1).(*array.StringBuilder).Append(string(buf))
			k++
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if _, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestReaderBatchesFollowTheReadAhead: a Reader's batches of wide rows are about an
// eighth of its read-ahead budget (2 MiB at the default 16 MiB, 8 MiB with a budget of
// 64 MiB), every row is returned once, in order, and nothing stays allocated.
func TestReaderBatchesFollowTheReadAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 40 MiB")
	}
	ctx := context.Background()
	tb := wideTable(t)
	for _, tc := range []struct {
		name     string
		opts     []table.ScanOption
		maxBatch int64 // the largest batch allowed (bytes)
		minBatch int64 // the largest batch must be at least this big
	}{
		{"default budget: 2 MiB batches", nil, 5 << 19, 3 << 19},
		{"budget 64 MiB: 8 MiB batches", []table.ScanOption{table.WithReadAhead(64 << 20)}, 10 << 20, 6 << 20},
		{"budget 1 KiB: 1 MiB batches", []table.ScanOption{table.WithReadAhead(1 << 10)}, 5 << 18, 3 << 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			sc, err := tb.Scan(ctx, append(tc.opts, table.WithAllocator(mem))...)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := sc.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var largest, next int64
			for rd.Next() {
				rec := rd.RecordBatch()
				largest = max(largest, datafile.RecordBytes(rec))
				for _, k := range rec.Column(0).(*array.Int64).Int64Values() {
					if k != next {
						t.Fatalf("key %d where %d was next", k, next)
					}
					next++
				}
			}
			if err := rd.Err(); err != nil {
				t.Fatal(err)
			}
			rd.Release()
			assertNoLeak(t, mem)
			if next != 40000 {
				t.Fatalf("%d rows, want 40000", next)
			}
			if largest > tc.maxBatch || largest < tc.minBatch {
				t.Fatalf("largest batch %d bytes, want between %d and %d", largest, tc.minBatch, tc.maxBatch)
			}
		})
	}
}

// TestReaderPeakMemoryFollowsTheBudget: with a caller that stops reading after its
// first batch, the decoders fill the read-ahead budget and wait; the bytes allocated
// at once never exceed the budget plus, per decoder and for the caller, a batch of
// the size the budget implies (with its pages and stream buffers) — whatever the
// row group size. The wait lets the decoders run as far as the budget allows; the
// bound does not depend on how long it is.
func TestReaderPeakMemoryFollowsTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 40 MiB")
	}
	ctx := context.Background()
	tb := wideTable(t)
	const budget = 4 << 20
	const batch = 1 << 20 // an eighth of the budget, at least 1 MiB
	for _, par := range []int{1, 2, 4} {
		mem := &peakAllocator{mem: memory.NewGoAllocator()}
		sc, err := tb.Scan(ctx, table.WithReadAhead(budget), table.WithParallelism(par), table.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := sc.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !rd.Next() {
			t.Fatalf("parallelism %d: no first batch: %v", par, rd.Err())
		}
		// Let the decoders run ahead until they wait on the budget.
		for prev := int64(-1); ; {
			time.Sleep(20 * time.Millisecond)
			cur, _ := mem.stats()
			if cur == prev {
				break
			}
			prev = cur
		}
		rows := rd.RecordBatch().NumRows()
		for rd.Next() {
			rows += rd.RecordBatch().NumRows()
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		rd.Release()
		_, peak := mem.stats()
		t.Logf("parallelism %d: peak %d bytes", par, peak)
		// Per decoder: the batch it builds (at most 1.5 times the target: the footer's
		// estimate and the buffers' growth), its column chunks' compressed and
		// decompressed pages (1 MiB each at most here) and stream buffers; the caller's
		// batch and the head's queue beyond the budget.
		limit := int64(budget) + int64(par+2)*(3*batch/2) + int64(par)*(3<<20)
		if peak > limit {
			t.Fatalf("parallelism %d: %d bytes allocated at once, budget %d allows %d", par, peak, budget, limit)
		}
		if rows != 40000 {
			t.Fatalf("parallelism %d: %d rows, want 40000", par, rows)
		}
	}
}
