//go:build linux

package zstdx

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/klauspost/compress/huff0"
)

// guardedRegion is readable and writable memory between two inaccessible pages:
// a slice placed at its end (or start) faults on the first byte read or written
// past it (or before it), where Go's heap would have silently handed out the
// neighbouring bytes of the size class.
type guardedRegion struct {
	mem  []byte // the whole mapping, guards included
	body []byte // the accessible part
}

// guardRegionSize is the accessible size of a guarded region: more than any
// Huffman section (regenerated size ≤ 64 KiB in the fuzz target).
const guardRegionSize = 256 << 10

func newGuardedRegion(tb testing.TB) *guardedRegion {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, guardRegionSize+2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		tb.Fatalf("mmap: %v", err)
	}
	if err := syscall.Mprotect(mem[:page], syscall.PROT_NONE); err != nil {
		tb.Fatalf("mprotect: %v", err)
	}
	if err := syscall.Mprotect(mem[page+guardRegionSize:], syscall.PROT_NONE); err != nil {
		tb.Fatalf("mprotect: %v", err)
	}
	return &guardedRegion{mem: mem, body: mem[page : page+guardRegionSize]}
}

// place returns a slice of len(b) bytes holding b with a guard page right after
// its last byte (atEnd) or right before its first, and capacity len(b) either
// way.
func (g *guardedRegion) place(b []byte, atEnd bool) []byte {
	at := 0
	if atEnd {
		at = len(g.body) - len(b)
	}
	s := g.body[at : at+len(b) : at+len(b)]
	copy(s, b)
	return s
}

var (
	guardOnce       sync.Once
	guardMu         sync.Mutex
	guardSrc, guard *guardedRegion
)

// decodeGuarded decodes data as a Huffman literal section (tree description, then
// one or four streams) of regen bytes with the section and the output each placed
// against a guard page: at their ends, or at their starts when atEnd is false.
func decodeGuarded(tb testing.TB, data []byte, regen int, four, atEnd bool) ([]byte, error) {
	guardOnce.Do(func() { guardSrc, guard = newGuardedRegion(tb), newGuardedRegion(tb) })
	guardMu.Lock()
	defer guardMu.Unlock()
	src := guardSrc.place(data, atEnd)
	dst := guard.place(make([]byte, regen), atEnd)
	var t HuffTable
	used, err := t.Read(src)
	if err != nil {
		return nil, err
	}
	if four {
		err = t.Decode4X(dst, src[used:])
	} else {
		err = t.Decode1X(dst, src[used:])
	}
	return bytes.Clone(dst), err
}

// huffSeeds are literal sections huff0 compresses from the test sources (4 streams
// and 1), with their regenerated sizes.
func huffSeeds() (sections [][]byte, regens []int, fours []bool) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, src := range sources {
		for _, n := range []int{1000, 20000, 65535} {
			in := src.gen(rng, n)
			if c, _, err := huff0.Compress4X(in, &huff0.Scratch{}); err == nil {
				sections, regens, fours = append(sections, bytes.Clone(c)), append(regens, n), append(fours, true)
			}
			if c, _, err := huff0.Compress1X(in[:n/4], &huff0.Scratch{}); err == nil {
				sections, regens, fours = append(sections, bytes.Clone(c)), append(regens, n/4), append(fours, false)
			}
		}
	}
	return
}

// TestHuffmanGuarded decodes valid sections, and every truncation of a few, with
// input and output against guard pages on either side: valid ones decode to their
// bytes, and no decode touches memory outside its slices (a fault would kill the
// test).
func TestHuffmanGuarded(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	secs, regens, fours := huffSeeds()
	if len(secs) < 10 {
		t.Fatalf("only %d seed sections", len(secs))
	}
	for i, sec := range secs {
		var ref HuffTable
		want, err := decodeSection(&ref, sec, regens[i], fours[i])
		if err != nil {
			t.Fatalf("section %d: %v", i, err)
		}
		for _, atEnd := range []bool{true, false} {
			got, err := decodeGuarded(t, sec, regens[i], fours[i], atEnd)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("section %d, guard at end %v: %v", i, atEnd, err)
			}
		}
		// Truncated and damaged copies, and a wrong regenerated size.
		for k := 0; k < 30; k++ {
			bad := bytes.Clone(sec[:rng.IntN(len(sec)+1)])
			if len(bad) > 0 && k%2 == 0 {
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			}
			regen := regens[i]
			if k%3 == 0 {
				regen = rng.IntN(65536)
			}
			for _, atEnd := range []bool{true, false} {
				if _, err := decodeGuarded(t, bad, regen, fours[i], atEnd); err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("section %d: error %v does not wrap ErrCorrupt", i, err)
				}
			}
		}
	}
}

// FuzzHuffmanGuarded decodes arbitrary bytes as a literal section of regen bytes
// with the section and its output placed against guard pages (after their last
// byte, or before their first): an unsafe load or store out of bounds faults.
// Errors must wrap ErrCorrupt; what decodes must decode as it does from the heap.
func FuzzHuffmanGuarded(f *testing.F) {
	secs, regens, fours := huffSeeds()
	for i := range secs {
		f.Add(secs[i], uint16(regens[i]), fours[i], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, regen uint16, four, atEnd bool) {
		if len(data) > guardRegionSize {
			return
		}
		got, err := decodeGuarded(t, data, int(regen), four, atEnd)
		var ref HuffTable
		want, werr := decodeSection(&ref, data, int(regen), four)
		if (err == nil) != (werr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("guarded: %v; on the heap: %v", err, werr)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
	})
}
