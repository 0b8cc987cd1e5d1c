package datafile

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestZstdDecodeIntoExactBuffers: pages decode to their bytes whatever the spare
// capacity of the destination (none: through the scratch buffer; some: in place),
// into the destination's memory when it fits, and a frame larger than the
// destination still decodes whole.
func TestZstdDecodeIntoExactBuffers(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 63, 64, 4096, 128 << 10, 128<<10 + 17, 1 << 20} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.IntN(7)) // compressible: matches and literals
		}
		comp := codec.Encode(nil, src)
		for _, tc := range []struct {
			name      string
			len, cap_ int
		}{
			{"exact", n, n},
			{"slack", n, n + 64},
			{"little slack", n, n + zstdSlack - 1},
			{"short", n / 2, n / 2},
		} {
			dst := make([]byte, tc.len, tc.cap_)
			for i := range dst {
				dst[i] = 0xEE
			}
			out, err := compress.Decode(codec, dst, comp)
			if err != nil {
				t.Fatalf("%d bytes, %s: %v", n, tc.name, err)
			}
			if !bytes.Equal(out, src) {
				t.Fatalf("%d bytes, %s: decoded %d bytes, not the page", n, tc.name, len(out))
			}
			if tc.len >= n && tc.len > 0 && unsafe.SliceData(out) != unsafe.SliceData(dst) {
				t.Fatalf("%d bytes, %s: not decoded into the destination", n, tc.name)
			}
		}
	}
	if _, err := compress.Decode(codec, make([]byte, 100), []byte("not a zstd frame at all")); err == nil {
		t.Fatal("garbage decoded without an error")
	}
}

// TestSlackAllocator: buffers have zstdSlack bytes of capacity past their length
// through Allocate and Reallocate (contents kept), and the inner allocator sees every
// allocation whole: nothing leaks from a checked allocator or stays live in a pool.
func TestSlackAllocator(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	pool := NewBufferPool(PoolOptions{MaxIdleBytes: 1 << 20})
	for _, tc := range []struct {
		name  string
		inner memory.Allocator
	}{{"checked", checked}, {"pool", pool}} {
		a := slackAllocator{tc.inner}
		for _, sizes := range [][2]int{{0, 10}, {1, 64}, {64, 128 << 10}, {128 << 10, 100}, {PoolMinBytes, 3 * PoolMinBytes}} {
			b := a.Allocate(sizes[0])
			if len(b) != sizes[0] || cap(b)-len(b) < zstdSlack {
				t.Fatalf("%s: Allocate(%d): len %d cap %d", tc.name, sizes[0], len(b), cap(b))
			}
			for i := range b {
				b[i] = byte(i)
			}
			b = a.Reallocate(sizes[1], b)
			if len(b) != sizes[1] || cap(b)-len(b) < zstdSlack {
				t.Fatalf("%s: Reallocate(%d): len %d cap %d", tc.name, sizes[1], len(b), cap(b))
			}
			for i := range min(sizes[0], sizes[1]) {
				if b[i] != byte(i) {
					t.Fatalf("%s: Reallocate %d→%d lost byte %d", tc.name, sizes[0], sizes[1], i)
				}
			}
			a.Free(b)
		}
		// Through an arrow-go buffer, as the page reader uses it.
		buf := memory.NewResizableBuffer(a)
		buf.ResizeNoShrink(128 << 10)
		if got := buf.Bytes(); cap(got)-len(got) < zstdSlack {
			t.Fatalf("%s: page buffer of %d bytes has %d spare", tc.name, len(got), cap(got)-len(got))
		}
		buf.ResizeNoShrink(300 << 10)
		buf.Release()
	}
	checked.AssertSize(t, 0)
	if s := pool.Stats(); s.Live != 0 {
		t.Fatalf("pool: %d buffers still live", s.Live)
	}
}
