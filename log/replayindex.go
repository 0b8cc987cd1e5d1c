package log

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
)

// addIndex finds the checkpoint adds of a replay by key (path, deletion-vector id)
// without a map[string]*Add: an open-addressing table of uint64 slots, each the low
// 32 bits of the key's hash (a tag) above the add's position in the replay's
// addOrder plus one (0: empty). The table is split into regions by the hash's top
// bits, each probed linearly with wrap-around inside the region, so that the regions
// are filled concurrently, one goroutine each, and a lookup probes the same region.
type addIndex struct {
	seed   maphash.Seed
	slots  []uint64
	shift  uint // slot position of hash h: h >> shift
	region int  // slots per region (a power of two)
	adds   []*Add
}

// addIndexMinParallel is the number of adds below which the index is built on the
// calling goroutine only.
const addIndexMinParallel = 1 << 14

// buildAddIndex indexes adds, which must number fewer than 1<<32-1. dup reports
// whether two adds share a key, or (never seen with a random seed) a region would
// fill up; then the index is nil and the caller reconciles the adds the plain way. Hashing and filling run on up to GOMAXPROCS goroutines.
func buildAddIndex(adds []*Add) (ix *addIndex, dup bool) {
	n := len(adds)
	bitsN := max(4, bits.Len(uint(2*n))) // at most half full
	ix = &addIndex{
		seed:  maphash.MakeSeed(),
		slots: make([]uint64, 1<<bitsN),
		shift: uint(64 - bitsN),
		adds:  adds,
	}
	workers := 1
	if n >= addIndexMinParallel {
		workers = 1 << (bits.Len(uint(runtime.GOMAXPROCS(0))) - 1) // a power of two
		workers = min(workers, 1<<(bitsN-4))
	}
	ix.region = len(ix.slots) / workers
	hashes := make([]uint64, n)
	parallel(workers, func(w int) {
		lo, hi := n*w/workers, n*(w+1)/workers
		for i := lo; i < hi; i++ {
			hashes[i] = maphash.String(ix.seed, adds[i].Key())
		}
	})
	dups := make([]bool, workers)
	parallel(workers, func(w int) {
		filled := 0
		for i, h := range hashes {
			if int(h>>ix.shift)/ix.region != w {
				continue
			}
			// A region cannot fill up unless the hashes are far from uniform; then
			// the caller reconciles the plain way rather than probe forever.
			if filled++; filled == ix.region || !ix.insert(h, i) {
				dups[w] = true
				return
			}
		}
	})
	for _, d := range dups {
		if d {
			return nil, true
		}
	}
	return ix, false
}

// parallel runs fn(0) … fn(workers-1), each on its own goroutine when workers > 1.
func parallel(workers int, fn func(w int)) {
	if workers == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	wg.Wait()
}

// insert records that adds[i] has hash h, and returns false when an add with the
// same key is already there.
func (ix *addIndex) insert(h uint64, i int) bool {
	tag := uint64(uint32(h)) << 32
	pos := int(h >> ix.shift)
	base := pos &^ (ix.region - 1)
	for {
		s := ix.slots[pos]
		if s == 0 {
			ix.slots[pos] = tag | uint64(i+1)
			return true
		}
		if s&^(1<<32-1) == tag && ix.adds[int(uint32(s))-1].Key() == ix.adds[i].Key() {
			return false
		}
		pos = base + (pos+1)&(ix.region-1)
	}
}

// find returns the position in adds of the add with key k, or -1.
func (ix *addIndex) find(k string) int {
	h := maphash.String(ix.seed, k)
	tag := uint64(uint32(h)) << 32
	pos := int(h >> ix.shift)
	base := pos &^ (ix.region - 1)
	for range ix.region {
		s := ix.slots[pos]
		if s == 0 {
			return -1
		}
		if s&^(1<<32-1) == tag {
			if i := int(uint32(s)) - 1; ix.adds[i].Key() == k {
				return i
			}
		}
		pos = base + (pos+1)&(ix.region-1)
	}
	return -1
}
