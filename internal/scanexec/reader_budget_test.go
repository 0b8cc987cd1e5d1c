package scanexec

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestReadBudget: a decoder ahead of the caller waits while the budget is full,
// the head passes a full budget while its own queue is empty and waits like the
// others once it has a batch queued, a release or a new head wakes waiters, and
// cancelling the context fails the wait.
func TestReadBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := func() *batchQueue { return newBatchQueue() }
	waits := func(done chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("%s returned %v instead of waiting", what, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	b := newReadBudget(ctx, 100)
	b.setHead(0)
	if err := b.acquire(1, 60, q()); err != nil {
		t.Fatal(err)
	}
	head := q()
	if err := b.acquire(0, 500, head); err != nil { // the head, its queue empty, passes a full budget
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.acquire(2, 30, q()) }()
	waits(done, "acquire beyond the budget")
	b.release(500)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Full again (60+30+50 > 100): a new head is let through.
	go func() { done <- b.acquire(3, 50, q()) }()
	runtime.Gosched()
	b.setHead(3)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The head with a batch of its own queued waits for the budget; once the caller
	// took the batch (its queue empty), the next release lets it through.
	head3 := q()
	head3.push(queued{bytes: 50})
	go func() { done <- b.acquire(3, 50, head3) }()
	waits(done, "the head's acquire with a queued batch and a full budget")
	head3.pop()
	b.release(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- b.acquire(4, 50, q()) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire after cancel: %v", err)
	}
	// A batch larger than the budget is admitted when nothing is held.
	b2 := newReadBudget(context.Background(), 10)
	if err := b2.acquire(5, 1000, q()); err != nil {
		t.Fatal(err)
	}
}

// TestReadAheadBatchBytes: a Reader's batches are an eighth of its read-ahead budget,
// between 1 MiB and datafile.DefaultBatchBytes.
func TestReadAheadBatchBytes(t *testing.T) {
	for _, tc := range []struct{ readAhead, want int64 }{
		{1, 1 << 20},
		{4 << 20, 1 << 20},
		{DefaultReadAheadBytes, 2 << 20},
		{32 << 20, 4 << 20},
		{64 << 20, 8 << 20},
		{1 << 30, 8 << 20},
	} {
		if got := BatchBytes(tc.readAhead); got != tc.want {
			t.Errorf("read-ahead %d: batches of %d bytes, want %d", tc.readAhead, got, tc.want)
		}
	}
	if DefaultReadAheadBytes != 16<<20 {
		t.Errorf("default read-ahead %d, documented as 16 MiB", DefaultReadAheadBytes)
	}
}
