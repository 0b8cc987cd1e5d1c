package zstdx

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// corpus returns inputs of several kinds: text, random bytes, runs, Parquet-like
// pages, and mixes, at several sizes.
func corpus(rng *rand.Rand) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range []int{0, 1, 7, 100, 1000, 40_000, 131_072, 300_000} {
		out[fmt.Sprintf("payload/%d", n)] = scanPayloadPage(rng)[:min(n, 128<<10)]
		rb := make([]byte, n)
		for i := range rb {
			rb[i] = byte(rng.Uint32())
		}
		out[fmt.Sprintf("random/%d", n)] = rb
		out[fmt.Sprintf("zeros/%d", n)] = make([]byte, n)
		var words []byte
		dict := []string{"delta ", "lake ", "parquet ", "zstd ", "skiplake ", "row group ", "footer ", "\n"}
		for len(words) < n {
			words = append(words, dict[rng.IntN(len(dict))]...)
		}
		out[fmt.Sprintf("words/%d", n)] = words[:n]
		var ints []byte
		for len(ints) < n {
			v := uint64(rng.IntN(1000)) * 1000
			for k := 0; k < 8; k++ {
				ints = append(ints, byte(v>>(8*k)))
			}
		}
		out[fmt.Sprintf("ints/%d", n)] = ints[:n]
		var mix []byte
		for len(mix) < n {
			switch rng.IntN(3) {
			case 0:
				mix = append(mix, bytes.Repeat([]byte{byte(rng.IntN(256))}, 1+rng.IntN(300))...)
			case 1:
				for k := 0; k < 1+rng.IntN(200); k++ {
					mix = append(mix, byte(rng.Uint32()))
				}
			default:
				if len(mix) > 0 {
					from := rng.IntN(len(mix))
					mix = append(mix, mix[from:min(len(mix), from+1+rng.IntN(500))]...)
				}
			}
		}
		out[fmt.Sprintf("mix/%d", n)] = mix[:n]
	}
	return out
}

// encoders returns klauspost encoders at several levels and settings.
func encoders(t testing.TB) map[string]*zstd.Encoder {
	out := map[string]*zstd.Encoder{}
	levels := map[string]zstd.EncoderLevel{"fastest": zstd.SpeedFastest, "default": zstd.SpeedDefault,
		"better": zstd.SpeedBetterCompression, "best": zstd.SpeedBestCompression}
	for name, lvl := range levels {
		for _, crc := range []bool{true, false} {
			e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(lvl), zstd.WithEncoderCRC(crc), zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s/crc=%v", name, crc)] = e
		}
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(2<<20), zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true))
	if err != nil {
		t.Fatal(err)
	}
	out["skiplake-pages"] = e
	e, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<10), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	out["window1k"] = e
	return out
}

// TestDecodeAgainstKlauspost compresses the corpus with every encoder (and
// arrow-go's zstd codec) and checks that DecodeAll gives the input back and agrees
// with klauspost's decoder.
func TestDecodeAgainstKlauspost(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := corpus(rng)
	kd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	arrow, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	check := func(name string, frame, want []byte) {
		t.Helper()
		got, err := d.DecodeAll(frame, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: decoded %d bytes differ from the %d input bytes", name, len(got), len(want))
		}
		ref, err := kd.DecodeAll(frame, nil)
		if err != nil || !bytes.Equal(ref, got) {
			t.Fatalf("%s: klauspost decodes differently (%v)", name, err)
		}
	}
	encs := encoders(t)
	for iname, data := range in {
		for ename, e := range encs {
			check(iname+"/"+ename, e.EncodeAll(data, nil), data)
		}
		check(iname+"/arrow-go", arrow.Encode(nil, data), data)
		// Two frames back to back, with a skippable frame between.
		two := encs["skiplake-pages"].EncodeAll(data, nil)
		two = append(two, 0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3)
		two = encs["default/crc=true"].EncodeAll(data, two)
		check(iname+"/two-frames", two, append(append([]byte(nil), data...), data...))
	}
}

// TestDecodeRealPages decodes every page of the scan benchmark's file (when it is
// there) and compares with klauspost.
func TestDecodeRealPages(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 85 MB file")
	}
	path := realPagesPath()
	if path == "" {
		t.Skip("no scan benchmark file")
	}
	kd, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	var d Decoder
	n := 0
	for col, frames := range pageFrames(t, path) {
		for i, f := range frames {
			want, err := kd.DecodeAll(f, nil)
			if err != nil {
				t.Fatalf("%s page %d: klauspost: %v", col, i, err)
			}
			got, err := d.DecodeAll(f, nil)
			if err != nil {
				t.Fatalf("%s page %d: %v", col, i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s page %d: decoded bytes differ", col, i)
			}
			n++
		}
	}
	t.Logf("%d pages", n)
}

// TestDecodeCorrupt damages frames (byte changes, truncations): DecodeAll must
// return an error wrapping ErrCorrupt, ErrTooLarge or ErrUnsupported, or bytes
// klauspost also decodes to, and never panic.
func TestDecodeCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := corpus(rng)
	kd, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	encs := encoders(t)
	var d Decoder
	for _, iname := range []string{"payload/1000", "words/40000", "mix/40000", "ints/1000", "zeros/1000", "random/100"} {
		for _, ename := range []string{"default/crc=false", "best/crc=false", "skiplake-pages"} {
			frame := encs[ename].EncodeAll(in[iname], nil)
			for k := 0; k < 300; k++ {
				bad := append([]byte(nil), frame...)
				switch k % 3 {
				case 0:
					bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
				case 1:
					bad = bad[:rng.IntN(len(bad))]
				default:
					for j := 0; j < 4; j++ {
						bad[rng.IntN(len(bad))] = byte(rng.Uint32())
					}
				}
				checkCorrupt(t, &d, kd, bad)
			}
		}
	}
}

func checkCorrupt(t *testing.T, d *Decoder, kd *zstd.Decoder, bad []byte) {
	t.Helper()
	got, err := d.DecodeAll(bad, nil)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error %v wraps none of the package's errors", err)
		}
		return
	}
	ref, kerr := kd.DecodeAll(bad, nil)
	if kerr == nil && !bytes.Equal(ref, got) {
		t.Fatalf("decodes %d bytes, klauspost %d different ones", len(got), len(ref))
	}
}

// FuzzDecode is the differential fuzz target: arbitrary bytes (seeded with frames
// of the corpus) decoded by DecodeAll and by klauspost. DecodeAll must not panic;
// where both succeed the bytes must match; where klauspost succeeds DecodeAll
// must too.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	in := corpus(rng)
	encs := encoders(f)
	for _, iname := range []string{"payload/1000", "words/1000", "mix/1000", "ints/1000", "zeros/100", "random/100", "mix/40000"} {
		for _, ename := range []string{"fastest/crc=true", "default/crc=false", "best/crc=true", "skiplake-pages", "window1k"} {
			f.Add(encs[ename].EncodeAll(in[iname], nil))
		}
	}
	kd, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(64<<20))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := Decoder{MaxSize: 64 << 20}
		got, err := d.DecodeAll(data, nil)
		ref, kerr := kd.DecodeAll(data, nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v wraps none of the package's errors", err)
			}
			if kerr == nil {
				t.Fatalf("klauspost decodes %d bytes, DecodeAll fails: %v", len(ref), err)
			}
			return
		}
		if kerr == nil && !bytes.Equal(ref, got) {
			t.Fatalf("decodes %d bytes, klauspost %d different ones", len(got), len(ref))
		}
	})
}
