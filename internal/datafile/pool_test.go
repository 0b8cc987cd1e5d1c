package datafile

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"unsafe"
)

func TestPoolClass(t *testing.T) {
	for _, tc := range []struct{ size, want int }{
		{1, PoolMinBytes},
		{PoolMinBytes, PoolMinBytes},
		{PoolMinBytes + 1, 80 << 10},
		{80 << 10, 80 << 10},
		{80<<10 + 1, 96 << 10},
		{127 << 10, 128 << 10},
		{128 << 10, 128 << 10},
		{128<<10 + 1, 160 << 10},
		{3 << 20, 3 << 20},
		{3<<20 + 1, 7 << 19},
		{8<<20 - 1, 8 << 20},
	} {
		if got := poolClass(tc.size); got != tc.want {
			t.Errorf("poolClass(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
	// Every class holds its size, wastes at most a quarter, and is a fixed point.
	for size := PoolMinBytes; size < 64<<20; size = size*9/8 + 1 {
		c := poolClass(size)
		if c < size || float64(c) > 1.25*float64(size) || poolClass(c) != c {
			t.Fatalf("poolClass(%d) = %d", size, c)
		}
	}
}

// TestBufferPoolRecycles: a freed buffer is handed out again for a request of its
// class, aligned, with the requested length; small and foreign buffers are not kept.
func TestBufferPoolRecycles(t *testing.T) {
	// Empty the process cache of closed pools (sync.Pools: two collections), which
	// tests of the writers fill, so that only this pool's buffers count as reused.
	runtime.GC()
	runtime.GC()
	p := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20})
	a := p.Allocate(100 << 10)
	if len(a) != 100<<10 || cap(a) != 100<<10 || uintptr(unsafe.Pointer(unsafe.SliceData(a)))%poolAlign != 0 {
		t.Fatalf("len %d cap %d", len(a), cap(a))
	}
	p.Free(a)
	b := p.Allocate(97 << 10) // same class (96 KiB < 97 KiB <= 112 KiB)
	if unsafe.SliceData(a) != unsafe.SliceData(b) || len(b) != 97<<10 {
		t.Fatal("a freed buffer of the class was not reused")
	}
	if s := p.Stats(); s.Reused != 1 || s.Live != 1 || s.IdleBytes != 0 {
		t.Fatalf("stats %+v", s)
	}
	p.Free(make([]byte, 1<<20)) // not the pool's: ignored
	small := p.Allocate(100)
	p.Free(small)
	if s := p.Stats(); s.IdleBytes != 0 || s.Live != 1 {
		t.Fatalf("stats after foreign and small frees %+v", s)
	}
	// Growing within the capacity keeps the buffer; beyond it moves and frees it.
	b2 := p.Reallocate(poolClass(100<<10), b)
	if unsafe.SliceData(b2) != unsafe.SliceData(b) || len(b2) != cap(b2) || len(b2) != poolClass(100<<10) {
		t.Fatal("reallocate within capacity moved")
	}
	b2[0] = 7
	c := p.Reallocate(1<<20, b2)
	if c[0] != 7 || len(c) != 1<<20 {
		t.Fatal("reallocate lost the contents")
	}
	if s := p.Stats(); s.Live != 1 || s.IdleBytes != int64(poolClass(100<<10)) {
		t.Fatalf("stats after reallocate %+v", s)
	}
	// A free buffer up to poolReach classes above the asked one serves it (and
	// keeps its own class); three classes above (80 KiB → 128 KiB) does not.
	r := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20})
	big := r.Allocate(128 << 10)
	r.Free(big)
	if got := r.Allocate(100 << 10); unsafe.SliceData(got) != unsafe.SliceData(big) || len(got) != 100<<10 {
		t.Fatal("a free buffer two classes up was not reused")
	}
	r.Free(r.Reallocate(128<<10, unsafe.Slice(unsafe.SliceData(big), 100<<10)))
	if s := r.Stats(); s.IdleBytes != 128<<10 || s.Live != 0 {
		t.Fatalf("reach: %+v", s)
	}
	if got := r.Allocate(70 << 10); unsafe.SliceData(got) == unsafe.SliceData(big) {
		t.Fatal("a free buffer three classes up was reused")
	}
	// The idle limit: beyond it the oldest free buffers are dropped.
	q := NewBufferPool(PoolOptions{MaxIdleBytes: 150 << 10})
	x, y := q.Allocate(100<<10), q.Allocate(100<<10)
	q.Free(x)
	q.Free(y)
	if s := q.Stats(); s.IdleBytes != int64(poolClass(100<<10)) || s.Live != 0 {
		t.Fatalf("idle limit: %+v", s)
	}
	if got := q.Allocate(100 << 10); unsafe.SliceData(got) != unsafe.SliceData(y) {
		t.Fatal("over the idle limit the newest free buffer was not the one kept")
	}
}

// TestBufferPoolNeverHandsOutALiveBuffer: random allocations, reallocations, frees,
// double frees and frees of foreign buffers; every live buffer is stamped with its
// own pattern and checked after every step, so handing out a buffer still in use
// (or overlapping one) fails. Poisoned and plain pools both.
func TestBufferPoolNeverHandsOutALiveBuffer(t *testing.T) {
	for _, poison := range []bool{false, true} {
		p := NewBufferPool(PoolOptions{MaxIdleBytes: 8 << 20, Poison: poison})
		rng := rand.New(rand.NewPCG(3, uint64(len(t.Name()))))
		type held struct {
			b     []byte
			stamp byte
		}
		var live []held
		var freed [][]byte
		stamp := func(h held) {
			for i := range h.b {
				h.b[i] = h.stamp
			}
		}
		var next byte
		for step := range 3000 {
			switch op := rng.IntN(10); {
			case op < 4 || len(live) == 0:
				next++
				if next == poolPoisonByte {
					next++
				}
				h := held{b: p.Allocate(PoolMinBytes/2 + rng.IntN(400<<10)), stamp: next}
				stamp(h)
				live = append(live, h)
			case op < 6:
				i := rng.IntN(len(live))
				live[i].b = p.Reallocate(len(live[i].b)+rng.IntN(200<<10), live[i].b)
				stamp(live[i])
			case op < 9:
				i := rng.IntN(len(live))
				p.Free(live[i].b)
				freed = append(freed, live[i].b)
				live = append(live[:i], live[i+1:]...)
			default:
				if len(freed) > 0 {
					// A second free of a buffer is ignored, unless the pool has handed
					// it out again (then it is that holder's: not freed here).
					f := freed[rng.IntN(len(freed))]
					if !slices.ContainsFunc(live, func(h held) bool { return unsafe.SliceData(h.b) == unsafe.SliceData(f) }) {
						p.Free(f)
					}
				}
				p.Free(make([]byte, PoolMinBytes))
			}
			for _, h := range live {
				if len(h.b) != cap(h.b) {
					t.Fatalf("a buffer of length %d has capacity %d (arrow-go takes the capacity as usable)", len(h.b), cap(h.b))
				}
			}
			// A stamp covers the whole buffer: its ends and middle show any overwrite.
			for _, h := range live {
				for _, j := range []int{0, len(h.b) / 2, len(h.b) - 1} {
					if c := h.b[j]; c != h.stamp {
						t.Fatalf("poison %v step %d: a live buffer (stamp %d) was overwritten at byte %d (%d)", poison, step, h.stamp, j, c)
					}
				}
			}
		}
		if s := p.Stats(); s.Reused == 0 {
			t.Fatalf("poison %v: nothing was reused: %+v", poison, s)
		}
	}
}

// TestBufferPoolPoison: a poisoned pool fills what it frees, so a reader of a
// freed buffer sees the pattern rather than the old values.
func TestBufferPoolPoison(t *testing.T) {
	p := NewBufferPool(PoolOptions{MaxIdleBytes: 1 << 20, Poison: true})
	a := p.Allocate(PoolMinBytes)
	for i := range a {
		a[i] = 1
	}
	p.Free(a)
	for i, c := range unsafe.Slice(unsafe.SliceData(a), poolClass(PoolMinBytes)) {
		if c != poolPoisonByte {
			t.Fatalf("byte %d of a freed buffer is %d", i, c)
		}
	}
}

// TestBufferPoolCloseHandsOver: the free buffers of a closed pool, and those freed
// after Close, serve another pool's allocations; buffers live in the closed pool
// are not handed over until freed. Under the race detector sync.Pool drops a random
// quarter of what it is given (on purpose, to shake out reliance on it), so there
// only the safety half is checked: a live buffer is never handed out.
func TestBufferPoolCloseHandsOver(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the cache is emptied by GC
	const size = 5<<20 + 12345                       // a class no other test uses
	p := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20})
	a, held, later := p.Allocate(size), p.Allocate(size), p.Allocate(size)
	held[0] = 42
	p.Free(a)
	p.Close()
	q := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20})
	got := q.Allocate(size)
	if !raceEnabled && (unsafe.SliceData(got) != unsafe.SliceData(a) || q.Stats().Reused != 1) {
		t.Fatal("the closed pool's free buffer was not reused")
	}
	p.Free(later) // after Close: straight to the shared cache
	got2 := q.Allocate(size)
	if !raceEnabled && unsafe.SliceData(got2) != unsafe.SliceData(later) {
		t.Fatal("a buffer freed after Close was not reused")
	}
	if got3 := q.Allocate(size); unsafe.SliceData(got3) == unsafe.SliceData(held) || held[0] != 42 {
		t.Fatal("a buffer still live in the closed pool was handed out")
	}
	if s := p.Stats(); s.Live != 1 || s.IdleBytes != 0 {
		t.Fatalf("closed pool: %+v", s)
	}
}

// TestBufferPoolZeroReallocate: with PoolOptions.Zero, a Reallocate that moves a
// buffer into a recycled (dirty) one keeps the old bytes and hands out every byte
// past them cleared, as Go's allocator would; it clears only past the copy.
func TestBufferPoolZeroReallocate(t *testing.T) {
	p := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20, Zero: true})
	dirty := p.Allocate(400 << 10)
	for i := range dirty {
		dirty[i] = 0xEE
	}
	small := p.Allocate(100 << 10)
	for i := range small {
		small[i] = 0x11
	}
	p.Free(dirty)
	grown := p.Reallocate(380<<10, small)
	if p.Stats().Reused != 1 || len(grown) != 380<<10 {
		t.Fatalf("reused %d, length %d: the dirty buffer was not the one reused", p.Stats().Reused, len(grown))
	}
	for i, c := range grown {
		want := byte(0)
		if i < 100<<10 {
			want = 0x11
		}
		if c != want {
			t.Fatalf("byte %d is %#x, want %#x", i, c, want)
		}
	}
	// Its capacity up to the class is clear too (in-place growth reads it).
	p.mu.Lock()
	class := p.live[unsafe.SliceData(grown)]
	p.mu.Unlock()
	if class < 400<<10 {
		t.Fatalf("class %d: not the dirty buffer", class)
	}
	full := unsafe.Slice(unsafe.SliceData(grown), class)
	for i := 380 << 10; i < len(full); i++ {
		if full[i] != 0 {
			t.Fatalf("byte %d past the size is %#x", i, full[i])
		}
	}
	p.Free(grown)
}
