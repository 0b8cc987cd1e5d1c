package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/storagetest"
)

func TestCountingConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage { return storage.NewCounting(storage.NewMemory()) })
}

func TestCountingCounts(t *testing.T) {
	ctx := context.Background()
	c := storage.NewCounting(storage.NewMemory())
	for i := range 2500 {
		if err := c.Put(ctx, fmt.Sprintf("d/%05d", i), []byte("abcd")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PutIfAbsent(ctx, "x", []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	f, err := c.Open(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	f.ReadAt(make([]byte, 4), 4)
	f.ReadAt(make([]byte, 2), 0)
	f.Close()
	if _, err := c.List(ctx, "d/", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx, "none/", ""); err != nil {
		t.Fatal(err)
	}
	c.Stat(ctx, "x")
	c.Delete(ctx, "x")
	w, err := c.Create(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("streamed"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got := c.Requests()
	want := storage.RequestCounts{GET: 3, HEAD: 2, LIST: 4, PUT: 2502, DELETE: 1, BytesRead: 14, BytesWritten: 2500*4 + 8 + 8}
	if got != want {
		t.Fatalf("counts = %+v\nwant     %+v", got, want)
	}
	if got.Total() != 3+2+4+2502+1 {
		t.Fatalf("Total = %d", got.Total())
	}
	if d := got.Sub(storage.RequestCounts{GET: 1}); d.GET != 2 {
		t.Fatalf("Sub: GET = %d, want 2", d.GET)
	}
}

// TestRequestCountersOfAContext: calls made under WithRequestCounters count into its
// Counters (and every enclosing one's) as well as the store's; files and writers count
// with the context they were opened with; calls under other contexts do not; and a
// counting store wrapped in another counts each request once.
func TestRequestCountersOfAContext(t *testing.T) {
	bg := context.Background()
	inner := storage.NewCounting(storage.NewMemory())
	c := storage.NewCounting(inner) // a counting layer over a counting store
	if err := c.Put(bg, "x", []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	var outerC, innerC storage.Counters
	outer := storage.WithRequestCounters(bg, &outerC)
	nested := storage.WithRequestCounters(outer, &innerC)
	if storage.WithRequestCounters(bg, nil) != bg {
		t.Fatal("nil counters: the context should be returned as is")
	}

	if _, err := c.Get(nested, "x"); err != nil { // GET 8 bytes: both
		t.Fatal(err)
	}
	f, err := c.Open(nested, "x") // HEAD: both
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(outer, "x"); err != nil { // HEAD: outer only
		t.Fatal(err)
	}
	if _, err := c.List(bg, "", ""); err != nil { // LIST: neither
		t.Fatal(err)
	}
	f.ReadAt(make([]byte, 3), 0) // GET 3 bytes with the Open context: both
	f.Close()
	w, err := c.Create(outer, "w") // PUT at Commit, outer only
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abcd"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(nested, "w"); err != nil { // DELETE: both
		t.Fatal(err)
	}

	wantInner := storage.RequestCounts{GET: 2, HEAD: 1, DELETE: 1, BytesRead: 11}
	wantOuter := storage.RequestCounts{GET: 2, HEAD: 2, PUT: 1, DELETE: 1, BytesRead: 11, BytesWritten: 4}
	if got := innerC.Snapshot(); got != wantInner {
		t.Errorf("inner context: %+v\nwant           %+v", got, wantInner)
	}
	if got := outerC.Snapshot(); got != wantOuter {
		t.Errorf("outer context: %+v\nwant           %+v", got, wantOuter)
	}
	// Both layers count every call for themselves; the contexts saw each request once.
	wantStore := wantOuter.Add(storage.RequestCounts{LIST: 1, PUT: 1, BytesWritten: 8})
	if got := c.Requests(); got != wantStore {
		t.Errorf("outer store: %+v\nwant         %+v", got, wantStore)
	}
	if got := inner.Requests(); got != wantStore {
		t.Errorf("inner store: %+v\nwant         %+v", got, wantStore)
	}
}

func TestRequestCountsAddSub(t *testing.T) {
	a := storage.RequestCounts{GET: 1, HEAD: 2, LIST: 3, PUT: 4, DELETE: 5, BytesRead: 6, BytesWritten: 7}
	b := storage.RequestCounts{GET: 10, HEAD: 20, LIST: 30, PUT: 40, DELETE: 50, BytesRead: 60, BytesWritten: 70}
	if got := a.Add(b).Sub(b); got != a {
		t.Fatalf("(a+b)-b = %+v, want %+v", got, a)
	}
	if got := a.Add(b); got.Total() != a.Total()+b.Total() || got.BytesWritten != 77 {
		t.Fatalf("a+b = %+v", got)
	}
}
