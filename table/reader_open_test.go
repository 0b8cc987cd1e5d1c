package table_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// openGate is a store that watches how many data files are being opened at once. With
// want > 0, an open waits until want opens are in flight together (a barrier); a
// reader that opens one file after another never fills it, and after a few seconds the
// gate gives up waiting and records that. With hold > 0, every open takes that long,
// so opens that may overlap do.
type openGate struct {
	storage.Storage
	want int
	hold time.Duration

	mu       sync.Mutex
	on       bool
	inflight int
	max      int
	opens    int
	reached  chan struct{}
	gaveUp   bool
	filled   bool
}

func (g *openGate) arm(want int, hold time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.on, g.want, g.hold = true, want, hold
	g.inflight, g.max, g.opens, g.gaveUp, g.filled = 0, 0, 0, false, false
	g.reached = make(chan struct{})
}

func (g *openGate) Open(ctx context.Context, p string) (storage.File, error) {
	g.mu.Lock()
	if !g.on || !strings.HasSuffix(p, ".parquet") {
		g.mu.Unlock()
		return g.Storage.Open(ctx, p)
	}
	g.opens++
	g.inflight++
	g.max = max(g.max, g.inflight)
	want, hold, reached := g.want, g.hold, g.reached
	if want > 0 && g.inflight == want && !g.filled {
		g.filled = true
		close(reached)
	}
	wait := want > 0 && !g.gaveUp
	g.mu.Unlock()
	if wait {
		select {
		case <-reached:
		case <-time.After(3 * time.Second):
			g.mu.Lock()
			g.gaveUp = true
			g.mu.Unlock()
		case <-ctx.Done():
		}
	}
	if hold > 0 {
		time.Sleep(hold)
	}
	f, err := g.Storage.Open(ctx, p)
	g.mu.Lock()
	g.inflight--
	g.mu.Unlock()
	return f, err
}

func (g *openGate) result() (maxInFlight, opens int, barrier bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	barrier = false
	select {
	case <-g.reached:
		barrier = true
	default:
	}
	return g.max, g.opens, barrier
}

// TestReaderOpensFilesConcurrently: a Reader opens (footer-reads) upcoming files
// concurrently, at most WithParallelism at once, and still returns the rows in plan
// order; with a limit it opens one file at a time and at most one beyond the files
// it needs.
func TestReaderOpensFilesConcurrently(t *testing.T) {
	const nfiles = 16
	ctx := context.Background()
	gate := &openGate{Storage: storage.NewMemory()}
	tb, err := table.Create(ctx, gate, layoutSchema(), table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	for i := range nfiles {
		base := int64(i * 1000)
		rec := layoutBatch(r, 1000, func(j int) int64 { return base + int64(j) }, 0.1)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, opts ...table.ScanOption) []int64 {
		t.Helper()
		sc, err := tb.Scan(ctx, append([]table.ScanOption{table.WithColumns("id"), table.WithBatchSize(100)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := sc.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Release()
		var ids []int64
		for rd.Next() {
			ids = append(ids, rd.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	serial := read(t, table.WithParallelism(1))
	if len(serial) != nfiles*1000 {
		t.Fatalf("serial read: %d rows, want %d", len(serial), nfiles*1000)
	}

	for _, par := range []int{2, 4, 8} {
		// The barrier: par opens must be in flight together.
		gate.arm(par, 0)
		got := read(t, table.WithParallelism(par))
		maxIn, opens, barrier := gate.result()
		if !barrier {
			t.Fatalf("parallelism %d: never %d opens in flight at once (at most %d): the files are opened one after another", par, par, maxIn)
		}
		if maxIn > par || opens != nfiles {
			t.Fatalf("parallelism %d: %d opens in flight at most, %d opens; want <= %d and %d", par, maxIn, opens, par, nfiles)
		}
		if !slices.Equal(got, serial) {
			t.Fatalf("parallelism %d: rows differ from the serial read (order or content)", par)
		}
		// Slow opens: the bound holds when every open overlaps as much as it can.
		gate.arm(0, 5*time.Millisecond)
		got = read(t, table.WithParallelism(par))
		maxIn, opens, _ = gate.result()
		if maxIn > par || opens != nfiles || !slices.Equal(got, serial) {
			t.Fatalf("parallelism %d, slow opens: %d in flight at most, %d opens, rows equal %v", par, maxIn, opens, slices.Equal(got, serial))
		}
	}

	// A limit the first file covers: one open at a time, and at most the next file
	// opened beyond it, whatever the parallelism.
	for _, limit := range []int64{10, 1000} {
		gate.arm(0, 5*time.Millisecond)
		got := read(t, table.WithParallelism(8), table.WithLimit(limit))
		maxIn, opens, _ := gate.result()
		if !slices.Equal(got, serial[:limit]) {
			t.Fatalf("limit %d: got %d rows, want the first %d", limit, len(got), limit)
		}
		if maxIn != 1 || opens > 2 {
			t.Fatalf("limit %d: %d opens in flight at most, %d opens; want 1 and <= 2", limit, maxIn, opens)
		}
	}
}
