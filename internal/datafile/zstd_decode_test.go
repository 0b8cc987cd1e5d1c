package datafile

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

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
