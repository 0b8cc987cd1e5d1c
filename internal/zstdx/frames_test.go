package zstdx

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/zstd"
)

// litSection is one Huffman-compressed literals section of a zstd block, with its
// own tree description: tree is the description followed by the stream(s).
type litSection struct {
	data  []byte // tree description, jump table (4 streams) and streams
	regen int
	four  bool
}

// literalSections returns the Huffman-compressed literal sections (type 2, with a
// tree description) of the compressed blocks of the zstd frame f. It parses only
// what it needs: frame header, block headers, literals section headers.
func literalSections(f []byte) ([]litSection, error) {
	if len(f) < 6 || binary.LittleEndian.Uint32(f) != 0xFD2FB528 {
		return nil, fmt.Errorf("not a zstd frame")
	}
	fhd := f[4]
	p := 5
	single := fhd>>5&1 == 1
	if !single {
		p++
	}
	p += [4]int{0, 1, 2, 4}[fhd&3]
	fcs := [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && single {
		fcs = 1
	}
	p += fcs
	var out []litSection
	for {
		if p+3 > len(f) {
			return nil, fmt.Errorf("truncated block header at %d", p)
		}
		h := int(f[p]) | int(f[p+1])<<8 | int(f[p+2])<<16
		p += 3
		last, typ, size := h&1 == 1, h>>1&3, h>>3
		switch typ {
		case 0:
			p += size
		case 1:
			p++
		case 2:
			if p+size > len(f) {
				return nil, fmt.Errorf("truncated block")
			}
			b := f[p : p+size]
			lt, sf := b[0]&3, b[0]>>2&3
			if lt == 2 {
				var regen, comp, hl int
				four := sf != 0
				switch sf {
				case 0, 1:
					x := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
					regen, comp, hl = x>>4&0x3FF, x>>14&0x3FF, 3
				case 2:
					x := int(binary.LittleEndian.Uint32(b))
					regen, comp, hl = x>>4&0x3FFF, x>>18&0x3FFF, 4
				case 3:
					x := int(binary.LittleEndian.Uint32(b)) | int(b[4])<<32
					regen, comp, hl = x>>4&0x3FFFF, x>>22&0x3FFFF, 5
				}
				out = append(out, litSection{data: b[hl : hl+comp], regen: regen, four: four})
			}
			p += size
		default:
			return nil, fmt.Errorf("reserved block type")
		}
		if last {
			break
		}
	}
	return out, nil
}

// recordingCodec passes arrow-go's zstd codec through and keeps a copy of every
// frame it decodes.
type recordingCodec struct {
	compress.Codec
	mu     sync.Mutex
	frames [][]byte
}

func (r *recordingCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	r.mu.Lock()
	r.frames = append(r.frames, append([]byte(nil), src...))
	r.mu.Unlock()
	return compress.Decode(r.Codec, dst, src)
}

// pageFrames returns the zstd page frames of each column of row group 0 of the
// Parquet file at path, captured as arrow-go decodes them.
func pageFrames(tb testing.TB, path string) map[string][][]byte {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		tb.Fatal(err)
	}
	rec := &recordingCodec{Codec: base}
	compress.RegisterCodec(compress.Codecs.Zstd, rec)
	defer compress.RegisterCodec(compress.Codecs.Zstd, base)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		tb.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][][]byte{}
	sc := pf.MetaData().Schema
	for c := 0; c < sc.NumColumns(); c++ {
		rec.frames = nil
		tbl, err := fr.ReadRowGroups(context.Background(), []int{c}, []int{0})
		if err != nil {
			tb.Fatal(err)
		}
		tbl.Release()
		out[sc.Column(c).Name()] = rec.frames
	}
	return out
}

// scanPayloadPage is a 128 KiB Parquet PLAIN page of the interop scan benchmark's
// payload column: 4-byte lengths and 260 random letters each.
func scanPayloadPage(rng *rand.Rand) []byte {
	var page []byte
	v := make([]byte, 260)
	for len(page)+264 <= 128<<10 {
		for j := range v {
			v[j] = 'a' + byte(rng.Uint64()%26)
		}
		page = binary.LittleEndian.AppendUint32(page, 260)
		page = append(page, v...)
	}
	return page
}

// realPagesPath is the Parquet file of the scan benchmark whose pages the tests
// and benchmarks decode: $SKIPLAKE_ZSTD27_PARQUET, else /tmp/opt27/scan5m's last
// file; "" when there is none.
func realPagesPath() string {
	path := os.Getenv("SKIPLAKE_ZSTD27_PARQUET")
	if path == "" {
		path = "/tmp/opt27/scan5m/part-00004-7c7d623a-6951-461f-9d20-a57f062e178e.c000.zstd.parquet"
	}
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// textFrames returns zstd frames of payload pages: those of the scan benchmark's
// table when SKIPLAKE_ZSTD27_PARQUET names one of its files (default
// /tmp/opt27/scan5m's last file; column "payload"), else synthetic pages of the
// same shape compressed as skiplake's writer compresses them. The string says
// which.
func textFrames(tb testing.TB) ([][]byte, string) {
	if path := realPagesPath(); path != "" {
		if f := pageFrames(tb, path)["payload"]; len(f) > 0 {
			return f, "real pages of " + path
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(2<<20))
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(27, 4))
	var frames [][]byte
	for i := 0; i < 40; i++ {
		frames = append(frames, enc.EncodeAll(scanPayloadPage(rng), nil))
	}
	return frames, "synthetic payload pages"
}
