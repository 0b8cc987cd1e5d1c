package datafile

import (
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// PoolMinBytes is the smallest allocation a [BufferPool] recycles; smaller ones are
// plain Go allocations (cheap, and too many to be worth tracking).
const PoolMinBytes = 64 << 10

// poolMaxBytes is the largest allocation a BufferPool recycles.
const poolMaxBytes = 1 << 30

// poolReach is how many classes above its own an allocation may take a free buffer
// from (two: at most about 56% more than asked for).
const poolReach = 2

// poolAlign is the alignment of the buffers a BufferPool hands out (as arrow-go's
// GoAllocator).
const poolAlign = 64

// poolPoisonByte is the pattern poisoned buffers are filled with (PoolOptions.Poison).
const poolPoisonByte = 0xA5

// PoolOptions configures a [BufferPool]. The zero value keeps no free buffers (every
// buffer is a fresh Go allocation) and does not poison.
type PoolOptions struct {
	// MaxIdleBytes bounds the free buffers the pool keeps for reuse; default 0, none
	// (<= 0: none).
	MaxIdleBytes int64
	// Poison fills the buffers the pool frees and hands out again with a byte pattern
	// (0xA5): a batch that still reads a buffer after it was given back, or code that
	// assumes fresh buffers are zero, then shows garbage instead of plausible values.
	// A debugging and testing aid that costs a pass over every recycled buffer;
	// default false.
	Poison bool
	// Zero clears a recycled buffer before handing it out again, as Go's allocator
	// hands out zeroed memory: for arrow-go code that assumes it (the Parquet
	// writers' Bloom filters, pqarrow's list reader over nulls). Clearing a buffer
	// still in the cache costs less than a fresh allocation's page faults, clearing
	// and sweep. Default false.
	Zero bool
}

// BufferPool is a memory.Allocator that recycles the large buffers of record
// batches: a buffer whose last reference is released (arrow-go calls Free when a
// buffer's reference count drops to zero) goes back to the pool and is handed out
// again by a later Allocate of about the same size, instead of being left to the
// garbage collector while a fresh one is allocated, faulted in and zeroed.
//
// Only buffers the pool handed out and that are not yet freed are live; Free of a
// buffer the pool does not hold as live (one it did not allocate, or freed twice)
// is ignored, so a buffer is never handed out twice while in use. A batch that is
// not released keeps its buffers: they never return to the pool.
//
// Recycled buffers are NOT zeroed (arrow-go's builders and Parquet decoders write
// every byte they expose, and clear the validity bitmaps and padding they grow).
// Sizes are rounded up to one of four classes per power of two (at most 25% more),
// and the pool keeps at most its idle limit of free bytes; beyond that the oldest
// free buffers are left to the garbage collector. Close hands the free buffers over to
// a process-wide cache for the next pool (see Close). A BufferPool is safe for concurrent
// use.
type BufferPool struct {
	mu      sync.Mutex
	idle    [][]byte      // free buffers (each its class's length), oldest first
	live    map[*byte]int // first byte of a handed-out buffer → its class size
	idleB   int64
	maxIdle int64
	poison  bool
	zero    bool
	reused  int64
	closed  bool
}

// NewBufferPool returns a pool configured by o.
func NewBufferPool(o PoolOptions) *BufferPool {
	return &BufferPool{live: map[*byte]int{}, maxIdle: o.MaxIdleBytes, poison: o.Poison, zero: o.Zero}
}

// poolClass is the capacity a pooled allocation of size bytes gets: size rounded up
// to a quarter of the power of two below it (65 KiB → 80 KiB, 3 MiB → 3 MiB).
func poolClass(size int) int {
	if size <= PoolMinBytes {
		return PoolMinBytes
	}
	k := bits.Len(uint(size - 1)) // 2^(k-1) < size <= 2^k
	step := 1 << (k - 3)          // a quarter of 2^(k-1)
	return (size + step - 1) &^ (step - 1)
}

// Allocate returns a buffer of size bytes (length and capacity: arrow-go's
// builders take a buffer's capacity for its usable length), aligned to 64 bytes.
// Its contents are undefined when it was recycled.
func (p *BufferPool) Allocate(size int) []byte { return p.allocate(size, 0) }

// allocate is Allocate; a recycled buffer is cleared (PoolOptions.Zero) from byte
// keep on only: Reallocate overwrites the bytes before it.
func (p *BufferPool) allocate(size, keep int) []byte {
	if size < PoolMinBytes || size > poolMaxBytes {
		return goAllocate(size, size)
	}
	class := poolClass(size)
	top := class // the largest class a free buffer may have to serve this
	for range poolReach {
		top = poolClass(top + 1)
	}
	p.mu.Lock()
	var buf []byte
	// The most recently freed buffer of the class or of one of the next poolReach
	// classes up (sizes of consecutive batches vary a little).
	for i := len(p.idle) - 1; i >= 0; i-- {
		if c := len(p.idle[i]); c >= class && c <= top {
			buf = p.idle[i]
			p.idle = slices.Delete(p.idle, i, i+1)
			p.idleB -= int64(c)
			p.reused++
			class = c
			break
		}
	}
	p.mu.Unlock()
	if buf == nil {
		// Then one that a closed pool handed over (an earlier scan's).
		for c, i := class, 0; i <= poolReach; c, i = poolClass(c+1), i+1 {
			if v, ok := sharedPool(c).Get().(*[]byte); ok {
				buf, class = *v, c
				p.mu.Lock()
				p.reused++
				p.mu.Unlock()
				break
			}
		}
	}
	if buf == nil {
		buf = goAllocate(class, class)
	} else {
		if p.poison {
			fillPoison(buf)
		}
		if p.zero {
			clear(buf[min(keep, len(buf)):])
		}
	}
	p.mu.Lock()
	p.live[unsafe.SliceData(buf)] = class
	p.mu.Unlock()
	return buf[:size:size]
}

// Reallocate resizes b to size bytes, keeping its contents up to the smaller size:
// in place when b's allocation suffices, else by copying into a new buffer and
// freeing b.
func (p *BufferPool) Reallocate(size int, b []byte) []byte {
	if cap(b) > 0 {
		ptr := unsafe.SliceData(b)
		p.mu.Lock()
		class, ok := p.live[ptr]
		p.mu.Unlock()
		if ok && size <= class {
			return unsafe.Slice(ptr, size)
		}
		if !ok && size <= cap(b) {
			return b[:size]
		}
	}
	nb := p.allocate(size, min(len(b), size))
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free gives b back to the pool when the pool handed it out and it is live;
// anything else is ignored (left to the garbage collector).
func (p *BufferPool) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	ptr := unsafe.SliceData(b)
	p.mu.Lock()
	class, ok := p.live[ptr]
	if !ok {
		p.mu.Unlock()
		return
	}
	delete(p.live, ptr)
	full := unsafe.Slice(ptr, class)
	if p.poison {
		// Poison outside the lock, then publish: no one else holds the buffer now.
		p.mu.Unlock()
		fillPoison(full)
		p.mu.Lock()
	}
	p.keepIdle(full)
	p.mu.Unlock()
}

// keepIdle adds a free buffer to the idle ones (p.mu held) and, beyond the idle
// limit, leaves the oldest free buffers to the garbage collector: the newest are
// those of the batch sizes being read now.
func (p *BufferPool) keepIdle(b []byte) {
	if p.closed {
		sharedPool(len(b)).Put(&b)
		return
	}
	p.idle = append(p.idle, b)
	p.idleB += int64(len(b))
	n := 0
	for p.idleB > p.maxIdle && n < len(p.idle) {
		p.idleB -= int64(len(p.idle[n]))
		p.idle[n] = nil
		n++
	}
	if n > 0 {
		p.idle = slices.Delete(p.idle, 0, n)
	}
}

// Close hands the pool's free buffers, and those freed from now on, to a cache
// that every BufferPool of the process draws from when it has no free buffer of
// its own: the next scan reuses this one's buffers. The garbage collector empties
// that cache (it is a sync.Pool per size class), so idle buffers do not outlive a
// quiet period. The pool stays usable; batches still held keep their buffers.
func (p *BufferPool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.idleB = 0
	p.closed = true
	p.mu.Unlock()
	for _, b := range idle {
		sharedPool(len(b)).Put(&b)
	}
}

// sharedIdle holds, per class size, the free buffers of closed pools: class →
// *sync.Pool of *[]byte (each of exactly the class's length).
var sharedIdle sync.Map

func sharedPool(class int) *sync.Pool {
	if v, ok := sharedIdle.Load(class); ok {
		return v.(*sync.Pool)
	}
	v, _ := sharedIdle.LoadOrStore(class, new(sync.Pool))
	return v.(*sync.Pool)
}

// PoolStats describes a BufferPool's state.
type PoolStats struct {
	Live      int   // pooled buffers handed out and not yet freed
	IdleBytes int64 // bytes of free buffers kept for reuse
	Reused    int64 // allocations served by a recycled buffer so far
}

// Stats returns the pool's state.
func (p *BufferPool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Live: len(p.live), IdleBytes: p.idleB, Reused: p.reused}
}

// goAllocate returns a new zeroed Go buffer of length n and capacity c aligned to
// poolAlign bytes.
func goAllocate(n, c int) []byte {
	raw := make([]byte, c+poolAlign)
	shift := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % poolAlign); r != 0 {
		shift = poolAlign - r
	}
	return raw[shift : shift+n : shift+c]
}

func fillPoison(b []byte) {
	if len(b) == 0 {
		return
	}
	b[0] = poolPoisonByte
	for i := 1; i < len(b); i *= 2 {
		copy(b[i:], b[:i])
	}
}

var _ memory.Allocator = (*BufferPool)(nil)

// writerPool recycles the buffers arrow-go's Parquet writers allocate for
// themselves: the in-memory copy of each column chunk that a buffered row group
// builds page by page (grown by doubling from nothing, for every column of every
// row group), encoder, level and Bloom filter buffers. Those buffers never leave the
// writer (the chunk's bytes are copied to the file and the buffer released), so none
// of them is seen by a caller. It clears what it recycles, as Go's allocator hands
// out zeroed memory (arrow-go's Bloom filters set bits in a buffer they assume
// zero): clearing a buffer still in the cache costs less than the garbage
// collector's sweep and the page faults and clearing of a fresh one. Closed from
// the start: what it frees goes to the process-wide cache of closed pools
// (GC-drained sync.Pools per size class), so it keeps no idle memory of its own and
// holds nothing across a quiet period.
var writerPool = func() *BufferPool {
	p := NewBufferPool(PoolOptions{Zero: true})
	p.Close()
	return p
}()

// parquetAllocator is the allocator of a writer's Parquet properties (its own
// buffers, not the caller's Arrow data): writerPool in place of Go's default
// allocator, any other allocator as given (a caller's checked or accounting
// allocator sees every allocation).
func parquetAllocator(mem memory.Allocator) memory.Allocator {
	if g, ok := mem.(*memory.GoAllocator); ok && g == memory.DefaultAllocator {
		return writerPool
	}
	return mem
}
