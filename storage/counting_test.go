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
