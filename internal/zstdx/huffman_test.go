package zstdx

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/huff0"
)

// symbolSource describes a distribution of literal bytes for the tests.
type symbolSource struct {
	name string
	gen  func(rng *rand.Rand, n int) []byte
}

var sources = []symbolSource{
	{"letters26", func(rng *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return b
	}},
	{"letters52", func(rng *rand.Rand, n int) []byte {
		const a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		b := make([]byte, n)
		for i := range b {
			b[i] = a[rng.IntN(len(a))]
		}
		return b
	}},
	{"geometric", func(rng *rand.Rand, n int) []byte {
		// Very skewed: codes from 1 bit up to the 11-bit limit.
		b := make([]byte, n)
		for i := range b {
			s := 0
			for s < 255 && rng.IntN(3) != 0 {
				s++
			}
			b[i] = byte(s * 7)
		}
		return b
	}},
	{"bytes256", func(rng *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			x, y := byte(rng.IntN(256)), byte(rng.IntN(256))
			b[i] = x & y // skewed towards few set bits
		}
		return b
	}},
	{"twosymbols", func(rng *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			if rng.IntN(10) == 0 {
				b[i] = 200
			} else {
				b[i] = 3
			}
		}
		return b
	}},
	{"ints", func(rng *rand.Rand, n int) []byte {
		// Little-endian small integers, as Parquet PLAIN int64 pages.
		b := make([]byte, n)
		for i := 0; i+8 <= n; i += 8 {
			v := uint64(rng.ExpFloat64() * 5000)
			for k := 0; k < 8; k++ {
				b[i+k] = byte(v >> (8 * k))
			}
		}
		return b
	}},
}

// decodeSection decodes a literal section's tree and streams with t.
func decodeSection(t *HuffTable, data []byte, regen int, four bool) ([]byte, error) {
	used, err := t.Read(data)
	if err != nil {
		return nil, err
	}
	dst := make([]byte, regen)
	if four {
		err = t.Decode4X(dst, data[used:])
	} else {
		err = t.Decode1X(dst, data[used:])
	}
	return dst, err
}

// TestHuffmanAgainstHuff0 encodes literals of several distributions and sizes with
// klauspost's huff0 (the encoder of klauspost's zstd, which writes our pages) and
// checks that the double-symbol decoder gives the input back, and that huff0's own
// decoder agrees.
func TestHuffmanAgainstHuff0(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{16, 31, 64, 100, 255, 256, 1000, 1023, 4096, 10000, 65536, 131072}
	var tbl HuffTable
	widths := map[uint8]int{}
	defer func() {
		if widths[11] == 0 || widths[12] == 0 {
			t.Errorf("lookup widths used %v: both 11 and 12 should be", widths)
		}
	}()
	for _, src := range sources {
		for _, n := range sizes {
			for _, four := range []bool{false, true} {
				if !four && n > 1023 {
					continue // huff0's 1X is for small inputs in zstd; still fine, keep the test short
				}
				name := fmt.Sprintf("%s/n=%d/four=%v", src.name, n, four)
				in := src.gen(rng, n)
				var s huff0.Scratch
				var comp []byte
				var err error
				if four {
					comp, _, err = huff0.Compress4X(in, &s)
				} else {
					comp, _, err = huff0.Compress1X(in, &s)
				}
				if errors.Is(err, huff0.ErrIncompressible) || errors.Is(err, huff0.ErrUseRLE) {
					continue
				}
				if err != nil {
					t.Fatalf("%s: huff0: %v", name, err)
				}
				got, err := decodeSection(&tbl, comp, n, four)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(got, in) {
					t.Fatalf("%s: decoded bytes differ from the input", name)
				}
				widths[tbl.lookupBits]++
				s2, rem, err := huff0.ReadTable(comp, nil)
				if err != nil {
					t.Fatalf("%s: huff0 ReadTable: %v", name, err)
				}
				var ref []byte
				if four {
					ref, err = s2.Decoder().Decompress4X(make([]byte, 0, n), rem)
				} else {
					ref, err = s2.Decoder().Decompress1X(make([]byte, 0, n), rem)
				}
				if err != nil || !bytes.Equal(ref, got) {
					t.Fatalf("%s: huff0 decodes differently (err %v)", name, err)
				}
			}
		}
	}
}

// TestHuffmanCorruptInputs damages valid sections (every single-byte change of a
// small one, random changes and truncations of larger ones): decoding must return
// an error wrapping ErrCorrupt or bytes of the right length, never panic.
func TestHuffmanCorruptInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tbl HuffTable
	for _, src := range sources {
		for _, four := range []bool{false, true} {
			n := 300
			if four {
				n = 3000
			}
			in := src.gen(rng, n)
			var s huff0.Scratch
			var comp []byte
			var err error
			if four {
				comp, _, err = huff0.Compress4X(in, &s)
			} else {
				comp, _, err = huff0.Compress1X(in, &s)
			}
			if err != nil {
				continue
			}
			check := func(data []byte, regen int) {
				t.Helper()
				got, err := decodeSection(&tbl, data, regen, four)
				if err != nil {
					if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("%s: error %v does not wrap ErrCorrupt", src.name, err)
					}
					return
				}
				if len(got) != regen {
					t.Fatalf("%s: %d bytes decoded, want %d", src.name, len(got), regen)
				}
			}
			for i := 0; i < len(comp) && i < 400; i++ {
				d := append([]byte(nil), comp...)
				d[i] ^= byte(1 + rng.IntN(255))
				check(d, n)
			}
			for k := 0; k < 200; k++ {
				check(comp[:rng.IntN(len(comp))], n)
				check(comp, rng.IntN(2*n+1))
			}
		}
	}
}

// FuzzHuffman decodes arbitrary bytes as a literal section; it must not panic, and
// errors must wrap ErrCorrupt.
func FuzzHuffman(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, src := range sources {
		in := src.gen(rng, 2000)
		var s huff0.Scratch
		if c, _, err := huff0.Compress4X(in, &s); err == nil {
			f.Add(c, uint16(2000), true)
		}
		if c, _, err := huff0.Compress1X(in[:500], &s); err == nil {
			f.Add(c, uint16(500), false)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, regen uint16, four bool) {
		var tbl HuffTable
		got, err := decodeSection(&tbl, data, int(regen), four)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(got) != int(regen) {
			t.Fatalf("%d bytes decoded, want %d", len(got), regen)
		}
		// What decodes must decode the same with huff0 when huff0 accepts it.
		s, rem, err := huff0.ReadTable(data, nil)
		if err != nil {
			return
		}
		var ref []byte
		if four {
			ref, err = s.Decoder().Decompress4X(make([]byte, 0, int(regen)), rem)
		} else {
			ref, err = s.Decoder().Decompress1X(make([]byte, 0, int(regen)), rem)
		}
		if err == nil && !bytes.Equal(ref, got) {
			t.Fatalf("huff0 decodes %x, zstdx %x", ref, got)
		}
	})
}
