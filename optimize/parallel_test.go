package optimize

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// parallel stops at the first error: the calls in flight see their ctx cancelled,
// no later call starts, and that error is returned.
func TestParallelStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var started, cancelled atomic.Int64
	err := parallel(context.Background(), 4, 1000, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 0 {
			return boom
		}
		<-ctx.Done() // a slow call: returns when cancelled
		cancelled.Add(1)
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("parallel returned %v, want the first error", err)
	}
	if n := started.Load(); n > 4 {
		t.Fatalf("%d calls started; at most the 4 in flight when the first failed may", n)
	}
	if started.Load() != cancelled.Load()+1 {
		t.Fatalf("%d calls started, %d saw the cancellation", started.Load(), cancelled.Load())
	}
}

// parallel stops when its ctx ends: no call starts afterwards and ctx's error is
// returned, even though no call failed.
func TestParallelStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int64
	err := parallel(ctx, 2, 1000, func(ctx context.Context, i int) error {
		if started.Add(1) == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("parallel returned %v, want context.Canceled", err)
	}
	if n := started.Load(); n > 4 {
		t.Fatalf("%d calls started after the context ended at the third", n)
	}
}

// Every index runs once when nothing fails, whatever the parallelism.
func TestParallelRunsEveryIndexOnce(t *testing.T) {
	for _, par := range []int{0, 1, 3, 64} {
		seen := make([]atomic.Int64, 100)
		if err := parallel(context.Background(), par, len(seen), func(_ context.Context, i int) error {
			seen[i].Add(1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("par %d: index %d ran %d times", par, i, seen[i].Load())
			}
		}
	}
}
