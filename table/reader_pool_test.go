package table

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/storage"
)

// poolRowS and poolRowF are the values of row k of the pool test table.
func poolRowS(k int64) string {
	return fmt.Sprintf("%08d-", k) + strings.Repeat(string(rune('a'+k%26)), int(k*7919%180))
}

func poolRowF(k int64) (float64, bool) { return float64(k) * 0.5, k%7 != 0 }

// poolTable writes n rows (k ascending, a string of 9–188 bytes, a float64 that is
// null every 7th row) in batches and files large enough that the reader's buffers
// are pooled (over datafile.PoolMinBytes).
func poolTable(t *testing.T, n int64) *Table {
	t.Helper()
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	tb, err := Create(ctx, storage.NewMemory(), schema, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for k := range n {
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.StringBuilder).Append(poolRowS(k))
		if f, ok := poolRowF(k); ok {
			b.Field(2).(*array.Float64Builder).Append(f)
		} else {
			b.Field(2).AppendNull()
		}
		if (k+1)%50_000 == 0 || k == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if _, err := tb.WriteBatches(ctx, recs, WriteOptions{TargetFileSize: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	return tb
}

// checkPoolBatch checks every value of a batch of the pool test table against the
// rows it was written from, and that its keys continue from next; it returns the
// key after its last.
func checkPoolBatch(t *testing.T, rec arrow.RecordBatch, next int64, what string) int64 {
	t.Helper()
	ks := rec.Column(0).(*array.Int64)
	ss := rec.Column(1).(*array.String)
	fs := rec.Column(2).(*array.Float64)
	for i := range int(rec.NumRows()) {
		k := ks.Value(i)
		if k != next {
			t.Fatalf("%s: row %d has key %d, want %d", what, i, k, next)
		}
		if ss.IsNull(i) || ss.Value(i) != poolRowS(k) {
			t.Fatalf("%s: key %d: s = %.40q, want %.40q", what, k, ss.Value(i), poolRowS(k))
		}
		f, ok := poolRowF(k)
		if fs.IsValid(i) != ok || (ok && fs.Value(i) != f) {
			t.Fatalf("%s: key %d: f = %v (valid %v), want %v (valid %v)", what, k, fs.Value(i), fs.IsValid(i), f, ok)
		}
		next++
	}
	return next
}

// withPoisonedPool makes the scan's Reader poison its buffer pool
// (datafile.PoolOptions.Poison).
func withPoisonedPool() ScanOption { return func(c *scanConfig) { c.PoisonPool = true } }

// TestReaderPoolNeverReusesAHeldBatch: a Reader recycles the buffers of the batches
// the caller releases, and never those of batches the caller still holds. Every
// other batch is retained past the end of the scan (and past Release of the
// Reader); with a poisoned pool (freed buffers are overwritten at once, recycled
// ones before they are handed out) every retained batch must still hold exactly the
// rows written, while the pool did serve allocations from released batches. The
// second scan starts after the first Reader's Release handed its free buffers over,
// and holds its batches alongside the first's. A buffer given back or reused while
// a batch holds it shows up as a wrong value.
func TestReaderPoolNeverReusesAHeldBatch(t *testing.T) {
	const n = 400_000
	tb := poolTable(t, n)
	ctx := context.Background()
	type heldScan struct {
		pool *datafile.BufferPool
		par  int
		kept []arrow.RecordBatch
	}
	var held []heldScan
	for _, par := range []int{1, 2} {
		sc, err := tb.Scan(ctx, WithParallelism(par), withPoisonedPool())
		if err != nil {
			t.Fatal(err)
		}
		rd, err := sc.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pool, ok := rd.x.Allocator().(*datafile.BufferPool)
		if !ok {
			t.Fatalf("the Reader allocates with %T, want its own *datafile.BufferPool", rd.x.Allocator())
		}
		var kept []arrow.RecordBatch
		var next int64
		for i := 0; rd.Next(); i++ {
			rec := rd.RecordBatch()
			next = checkPoolBatch(t, rec, next, fmt.Sprintf("parallelism %d batch %d when read", par, i))
			if i%2 == 0 {
				rec.Retain()
				kept = append(kept, rec)
			}
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		if next != n {
			t.Fatalf("parallelism %d: read %d rows, want %d", par, next, n)
		}
		if len(kept) < 4 {
			t.Fatalf("parallelism %d: only %d batches kept; the test needs several", par, len(kept))
		}
		// The pool poisons: a buffer freed and handed out again holds the pattern,
		// not what was written to it (the scan is over: nothing else allocates).
		b := pool.Allocate(datafile.PoolMinBytes)
		b[0] = 1
		pool.Free(b)
		if c := pool.Allocate(datafile.PoolMinBytes); c[0] == 1 {
			t.Fatalf("parallelism %d: the Reader's pool does not poison recycled buffers", par)
		} else {
			pool.Free(c)
		}
		rd.Release()
		runtime.GC() // finalizers of arrow-go's readers may free buffers too
		st := pool.Stats()
		if st.Reused == 0 {
			t.Fatalf("parallelism %d: the pool reused no buffer (%+v): the test proves nothing", par, st)
		}
		if st.Live == 0 {
			t.Fatalf("parallelism %d: no pooled buffer live while %d batches are held", par, len(kept))
		}
		held = append(held, heldScan{pool: pool, par: par, kept: kept})
	}
	// The kept batches of both scans, after everything else was released and
	// recycled (the second scan drew on the buffers the first one's Release handed
	// over, while the first scan's kept batches were held).
	for _, h := range held {
		for j, rec := range h.kept {
			first := rec.Column(0).(*array.Int64).Value(0)
			checkPoolBatch(t, rec, first, fmt.Sprintf("parallelism %d kept batch %d after the scans", h.par, j))
			rec.Release()
		}
	}
	for _, h := range held {
		for range 5 {
			if h.pool.Stats().Live == 0 {
				break
			}
			runtime.GC()
		}
		if st := h.pool.Stats(); st.Live != 0 {
			t.Fatalf("parallelism %d: %d pooled buffers still live after every batch was released", h.par, st.Live)
		}
	}
}

// TestReaderWithAllocatorDoesNotPool: an allocator given with WithAllocator is the
// one the Reader uses.
func TestReaderWithAllocatorDoesNotPool(t *testing.T) {
	tb := poolTable(t, 1000)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	sc, err := tb.Scan(context.Background(), WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := sc.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	if rd.x.Allocator() != mem {
		t.Fatalf("the Reader allocates with %T, want the given allocator", rd.x.Allocator())
	}
	var next int64
	for rd.Next() {
		next = checkPoolBatch(t, rd.RecordBatch(), next, "batch")
	}
	if rd.Err() != nil || next != 1000 {
		t.Fatalf("read %d rows, err %v", next, rd.Err())
	}
}
