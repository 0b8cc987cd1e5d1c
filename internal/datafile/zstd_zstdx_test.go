package datafile

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/zstd"
)

// textPage is a 128 KiB PLAIN page of the peer scan benchmark's payload column:
// 4-byte lengths and 260 random letters each (literals are nearly all of it).
func textPage(rng *rand.Rand) []byte {
	var page []byte
	v := make([]byte, 260)
	for len(page)+264 <= 128<<10 {
		for j := range v {
			v[j] = 'a' + byte(rng.IntN(26))
		}
		page = binary.LittleEndian.AppendUint32(page, 260)
		page = append(page, v...)
	}
	return page
}

// namesPage is a page of short names drawn from a few hundred: about half of its
// bytes are literals, the rest matches.
func namesPage(rng *rand.Rand) []byte {
	names := make([][]byte, 400)
	for i := range names {
		names[i] = make([]byte, 6+rng.IntN(8))
		for j := range names[i] {
			names[i][j] = 'a' + byte(rng.IntN(26))
		}
	}
	var page []byte
	for len(page) < 64<<10 {
		n := names[rng.IntN(len(names))]
		page = binary.LittleEndian.AppendUint32(page, uint32(len(n)))
		page = append(page, n...)
	}
	return page
}

// intsPage is a page of increasing 8-byte integers.
func intsPage(rng *rand.Rand) []byte {
	var page []byte
	x := uint64(rng.IntN(1000))
	for len(page) < 128<<10 {
		x += uint64(rng.IntN(5))
		page = binary.LittleEndian.AppendUint64(page, x)
	}
	return page
}

// skiplakeEncode compresses page as skiplake's writers do (pageZstd at the default
// level).
func skiplakeEncode(t testing.TB, page []byte) []byte {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	return codec.EncodeLevel(nil, page, pageZstdLevel(compress.DefaultCompressionLevel))
}

// TestZstdxPageChoice: zstdx is picked for frames whose first block's literals are
// Huffman-coded with their own tree and regenerate ≥ 7/8 of the block, and for
// nothing else, including truncated and malformed headers.
func TestZstdxPageChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	text := skiplakeEncode(t, textPage(rng))
	noSum, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	if !zstdxPage(noSum.EncodeAll(textPage(rng), nil)) {
		t.Error("text page without a checksum not picked")
	}
	// The text page's frame header is followed by its first block at hdr.
	fhd := text[4]
	hdr := 5 + [4]int{0, 1, 2, 4}[fhd&3] + [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd&0x20 == 0 {
		hdr++
	} else if fhd>>6 == 0 {
		hdr++
	}
	// The same blocks behind a header without a content size (window 1 MiB).
	noFCS := append([]byte{0x28, 0xB5, 0x2F, 0xFD, fhd & 0x04, 10 << 3}, text[hdr:]...)
	withDict := append([]byte(nil), text...)
	withDict[4] |= 1 // claims a 1-byte dictionary ID (shifts the header: not picked either way)
	treeless := append([]byte(nil), text...)
	treeless[hdr+3] = treeless[hdr+3]&^3 | 3 // first literals section: treeless
	cases := []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"text page", text, true},
		{"small text page", skiplakeEncode(t, textPage(rng)[:3000]), true},
		{"names page", skiplakeEncode(t, namesPage(rng)), false},
		{"ints page", skiplakeEncode(t, intsPage(rng)), false},
		{"zeros", skiplakeEncode(t, make([]byte, 100000)), false},
		{"empty page", skiplakeEncode(t, nil), false},
		{"text, no content size", noFCS, false},
		{"dictionary ID", withDict, false},
		{"treeless literals", treeless, false},
		{"nil", nil, false},
		{"magic only", []byte{0x28, 0xB5, 0x2F, 0xFD}, false},
		{"skippable frame", []byte{0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0}, false},
	}
	for k := 0; k < len(text); k++ {
		cases = append(cases, struct {
			name  string
			frame []byte
			want  bool
		}{"truncated text page", text[:k], k >= hdr+3+5})
	}
	for _, c := range cases {
		if got := zstdxPage(c.frame); got != c.want {
			t.Errorf("%s (%d bytes): zstdxPage = %v, want %v", c.name, len(c.frame), got, c.want)
		}
	}
}

// zstdBaseCodec returns the codec pageZstd wraps (klauspost's decoder).
func zstdBaseCodec(t testing.TB) zstdBase {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	pz, ok := codec.(*pageZstd)
	if !ok {
		t.Skip("pageZstd is not the registered zstd codec")
	}
	return pz.base
}

// TestZstdxDecodesLikeKlauspost: pages decode to the same bytes through pageZstd
// (zstdx for the pages it picks) as through klauspost; the picked pages are decoded
// by zstdx in place; a page zstdx refuses (a destination shorter than the frame)
// still decodes, as klauspost decodes it.
func TestZstdxDecodesLikeKlauspost(t *testing.T) {
	codec, _ := compress.GetCodec(compress.Codecs.Zstd)
	base := zstdBaseCodec(t)
	rng := rand.New(rand.NewPCG(8, 9))
	picked := 0
	for i := 0; i < 40; i++ {
		var page []byte
		switch i % 4 {
		case 0, 1:
			page = textPage(rng)[:1+rng.IntN(128<<10)]
		case 2:
			page = namesPage(rng)
		default:
			page = append(textPage(rng)[:rng.IntN(100000)], intsPage(rng)[:rng.IntN(30000)]...)
		}
		frame := skiplakeEncode(t, page)
		want, err := compress.Decode(base, make([]byte, len(page), len(page)+zstdSlack), frame)
		if err != nil || !bytes.Equal(want, page) {
			t.Fatalf("page %d: klauspost: %v", i, err)
		}
		if zstdxPage(frame) {
			picked++
			dst := make([]byte, len(page), len(page)+zstdSlack)
			out, ok := decodeZstdx(dst, frame)
			if !ok || !bytes.Equal(out, page) || &out[0] != &dst[0] {
				t.Fatalf("page %d: zstdx: ok %v, equal %v", i, ok, bytes.Equal(out, page))
			}
		}
		dst := make([]byte, len(page), len(page)+zstdSlack)
		got, err := compress.Decode(codec, dst, frame)
		if err != nil || !bytes.Equal(got, page) {
			t.Fatalf("page %d: pageZstd: %v", i, err)
		}
		// A destination shorter than the page (a page header that lies): zstdx
		// refuses, klauspost's result is returned as before.
		short := make([]byte, len(page)/2+1, len(page)/2+1+zstdSlack)
		if _, ok := decodeZstdx(short, frame); ok && len(page) > 1 {
			t.Fatalf("page %d: zstdx decoded %d bytes into %d", i, len(page), len(short))
		}
		wantShort, werr := compress.Decode(base, make([]byte, len(short), cap(short)), frame)
		gotShort, gerr := compress.Decode(codec, short, frame)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(gotShort, wantShort) {
			t.Fatalf("page %d, short destination: pageZstd %d bytes, %v; klauspost %d bytes, %v", i, len(gotShort), gerr, len(wantShort), werr)
		}
	}
	if picked < 10 {
		t.Fatalf("zstdx picked %d of 40 pages, want the 20 text pages at least", picked)
	}
}

// TestZstdxDamagedPagesDecodeAsKlauspost: every damaged version of a text page (one
// byte changed, or truncated) decodes through pageZstd exactly as through
// klauspost: the same bytes when klauspost accepts it, klauspost's error when not.
func TestZstdxDamagedPagesDecodeAsKlauspost(t *testing.T) {
	codec, _ := compress.GetCodec(compress.Codecs.Zstd)
	base := zstdBaseCodec(t)
	rng := rand.New(rand.NewPCG(10, 11))
	page := textPage(rng)[:40000]
	frame := skiplakeEncode(t, page)
	if !zstdxPage(frame) {
		t.Fatal("the text page is not picked for zstdx")
	}
	check := func(what string, bad []byte) {
		want, werr := compress.Decode(base, make([]byte, len(page), len(page)+zstdSlack), bad)
		got, gerr := compress.Decode(codec, make([]byte, len(page), len(page)+zstdSlack), bad)
		switch {
		case (werr == nil) != (gerr == nil):
			t.Fatalf("%s: pageZstd error %v, klauspost %v", what, gerr, werr)
		case werr != nil && werr.Error() != gerr.Error():
			t.Fatalf("%s: pageZstd error %q, klauspost %q", what, gerr, werr)
		case !bytes.Equal(got, want):
			t.Fatalf("%s: pageZstd and klauspost decode different bytes", what)
		}
	}
	for k := 0; k < len(frame); k++ {
		bad := append([]byte(nil), frame...)
		bad[k] ^= byte(1 + rng.IntN(255))
		check("byte changed", bad)
		if k%97 == 0 {
			check("truncated", frame[:k])
		}
	}
}

// recordingZstd passes the registered zstd codec through and keeps every frame it
// decodes.
type recordingZstd struct {
	compress.Codec
	mu     sync.Mutex
	frames [][]byte
}

func (r *recordingZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	r.mu.Lock()
	r.frames = append(r.frames, append([]byte(nil), src...))
	r.mu.Unlock()
	return compress.Decode(r.Codec, dst, src)
}

// TestZstdxPageChoiceRealPages: on the pages of the peer scan benchmark's table
// (/tmp/opt27/scan5m, or $SKIPLAKE_ZSTD27_PARQUET; skipped when absent) zstdx is
// picked for every page of the random-text column and no other, and decodes them
// to klauspost's bytes.
func TestZstdxPageChoiceRealPages(t *testing.T) {
	path := os.Getenv("SKIPLAKE_ZSTD27_PARQUET")
	if path == "" {
		m, _ := filepath.Glob("/tmp/opt27/scan5m/part-00004-*.parquet")
		if len(m) == 0 {
			t.Skip("no peer scan table at /tmp/opt27/scan5m")
		}
		path = m[0]
	}
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	kd := zstdBaseCodec(t)
	rec := &recordingZstd{Codec: base}
	compress.RegisterCodec(compress.Codecs.Zstd, rec)
	defer compress.RegisterCodec(compress.Codecs.Zstd, base)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc := pf.MetaData().Schema
	for c := 0; c < sc.NumColumns(); c++ {
		rec.frames = nil
		tbl, err := fr.ReadRowGroups(context.Background(), []int{c}, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		tbl.Release()
		name, picked := sc.Column(c).Name(), 0
		for i, f := range rec.frames {
			if !zstdxPage(f) {
				continue
			}
			picked++
			want, err := compress.Decode(kd, nil, f)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := decodeZstdx(make([]byte, len(want), len(want)+zstdSlack), f)
			if !ok || !bytes.Equal(got, want) {
				t.Fatalf("column %s, page %d: zstdx ok %v, same bytes %v", name, i, ok, bytes.Equal(got, want))
			}
		}
		t.Logf("column %s: %d of %d pages picked for zstdx", name, picked, len(rec.frames))
		if wantAll := name == "payload"; wantAll && picked != len(rec.frames) || !wantAll && picked != 0 || len(rec.frames) == 0 {
			t.Errorf("column %s: %d of %d pages picked for zstdx", name, picked, len(rec.frames))
		}
	}
}
