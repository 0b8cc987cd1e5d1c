package table

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestReadBudget: a decoder ahead of the caller waits while the budget is full,
// the head never waits, a release or a new head wakes waiters, and cancelling the
// context fails the wait.
func TestReadBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := newReadBudget(ctx, 100)
	b.setHead(0)
	if err := b.acquire(1, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(0, 500); err != nil { // the head passes a full budget
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.acquire(2, 30) }()
	select {
	case err := <-done:
		t.Fatalf("acquire beyond the budget returned %v instead of waiting", err)
	case <-time.After(20 * time.Millisecond):
	}
	b.release(500)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Full again (60+30+50 > 100): a new head is let through.
	go func() { done <- b.acquire(3, 50) }()
	runtime.Gosched()
	b.setHead(3)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- b.acquire(4, 50) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire after cancel: %v", err)
	}
	// A batch larger than the budget is admitted when nothing is held.
	b2 := newReadBudget(context.Background(), 10)
	if err := b2.acquire(5, 1000); err != nil {
		t.Fatal(err)
	}
}

// TestScanOptionZeroValuesAreDefaults: every option's zero value is its documented
// default.
func TestScanOptionZeroValuesAreDefaults(t *testing.T) {
	c := newScanConfig([]ScanOption{WithParallelism(0), WithBatchSize(0), WithReadAhead(0), WithLimit(0), WithAllocator(nil)})
	if c.parallelism != runtime.GOMAXPROCS(0) || c.batchSize != 64<<10 || c.readAhead != defaultReadAheadBytes || c.limit != 0 || c.mem == nil {
		t.Fatalf("zero options gave %+v", c)
	}
	c = newScanConfig([]ScanOption{WithParallelism(-3), WithLimit(-1), WithReadAhead(-1)})
	if c.parallelism != runtime.GOMAXPROCS(0) || c.limit != 0 || c.readAhead != defaultReadAheadBytes {
		t.Fatalf("negative options gave %+v", c)
	}
}
