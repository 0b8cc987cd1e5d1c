package datafile

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
	"github.com/skiplake/skiplake/internal/zstdx"
)

// zstdWindow is the window of the zstd encoders that compress Parquet pages: the
// largest page this package writes (a dictionary page, DataPageBytes·16 = 2 MiB by
// default; data pages are 128 KiB). A page compressed whole (EncodeAll) within the
// window is a single-segment frame, so the bytes are those of any larger window.
const zstdWindow = 2 << 20

// pageZstd is the zstd codec skiplake's writers compress Parquet pages with: page-sized
// encoders for them, arrow-go's codec for everyone else.
//
// Page-sized encoders: arrow-go pools encoders with zstd's default window (8 MiB at
// the default level), each of which keeps a history buffer of twice the window:
// 16 MiB per encoder, and one per column being compressed at once, for pages of
// 128 KiB. pageZstd's encoders keep about 2 MiB, and give the same bytes for pages up
// to zstdWindow.
//
// Its frames carry zstd's content checksum (an XXH64 of the decoded page, klauspost's
// and arrow-go's default), and decoding verifies it. libzstd writes none by default
// (DuckDB's and parquet-mr's files have none) and writing without it would save the
// hashing on both sides (about 4% of a full scan's CPU), but it is the only check
// of page data our files carry: arrow-go writes no Parquet page CRCs, and a damaged
// page of zstd data that still parses decodes silently to wrong values without it
// (TestDamagedDataFileCases, "damaged page bytes"). DuckDB verifies it too.
//
// Scope. arrow-go finds a page's codec only in its process-wide registry, by
// compression type (compress.GetCodec, called by parquet/file's page writers and
// readers); writer properties carry the codec type and a level, nothing else, so
// there is no per-writer codec to install. pageZstd is therefore registered in place
// of the zstd codec it finds at init, and keeps that codec's behaviour for every
// caller but skiplake's writers, which it tells apart by the level: the writer
// properties of this package's files (WriterOptions.properties) carry
// pageZstdLevel(level), the zstd level plus zstdLevelTag, a value no other writer
// uses (zstd levels are 1 to 22, arrow-go's default -1). Only those levels reach the
// page encoders; any other level, Encode and the streaming calls go to the codec
// pageZstd replaced, unchanged (TestOtherWritersKeepArrowGoZstd: a plain pqarrow
// writer in the process writes the bytes it writes without skiplake). Decoding is
// that codec's decoder, into a buffer with slack when the destination has none
// (DecodeWithError): the same bytes and errors, faster. A program that registers its
// own zstd codec after this package's init replaces pageZstd; pageZstdLevel then
// passes plain levels, and skiplake's writers use that codec too.
type pageZstd struct {
	base  zstdBase
	mu    sync.Mutex
	pools map[zstd.EncoderLevel]*sync.Pool
}

// zstdBase is what arrow-go's zstd codec implements.
type zstdBase interface {
	compress.Codec
	compress.StreamingCodec
}

// zstdLevelTag marks the compression levels of skiplake's writers: level L is passed
// to the codec as zstdLevelTag+L (see pageZstd, Scope). Levels within zstdLevelSpan of
// the tag are skiplake's.
const (
	zstdLevelTag  = 0x5C1A << 16
	zstdLevelSpan = 1 << 15
)

// pageZstdLevel returns the compression level skiplake's writer properties carry for
// zstd level (compress.DefaultCompressionLevel: zstd's default): level tagged for
// pageZstd's page encoders when pageZstd is the registered zstd codec, level itself
// otherwise.
func pageZstdLevel(level int) int {
	if c, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
		if _, ok := c.(*pageZstd); ok {
			return zstdLevelTag + level
		}
	}
	return level
}

// ownLevel returns the zstd level a tagged level carries, and whether level is
// tagged (one of skiplake's writers asks).
func ownLevel(level int) (int, bool) {
	d := level - zstdLevelTag
	return d, d > -zstdLevelSpan && d < zstdLevelSpan
}

// init puts pageZstd in front of the zstd codec arrow-go registered (see pageZstd,
// Scope: arrow-go has no other way in, and callers other than skiplake's writers keep
// that codec's behaviour).
func init() {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return // no zstd in arrow-go: nothing to wrap
	}
	base, ok := codec.(zstdBase)
	if !ok {
		return // not the codec this wraps: leave it
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &pageZstd{base: base, pools: map[zstd.EncoderLevel]*sync.Pool{}})
}

func (z *pageZstd) pool(level zstd.EncoderLevel) *sync.Pool {
	z.mu.Lock()
	defer z.mu.Unlock()
	p := z.pools[level]
	if p == nil {
		p = &sync.Pool{New: func() any {
			enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1),
				zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(zstdWindow), zstd.WithLowerEncoderMem(true))
			if err != nil {
				return nil
			}
			return enc
		}}
		z.pools[level] = p
	}
	return p
}

// EncodeLevel compresses src as one frame: with a page encoder when level is one of
// skiplake's (pageZstdLevel; the zstd level it carries, compress.DefaultCompressionLevel
// for zstd's default), with the replaced codec at level otherwise.
func (z *pageZstd) EncodeLevel(dst, src []byte, level int) []byte {
	own, ok := ownLevel(level)
	if !ok {
		return z.base.EncodeLevel(dst, src, level)
	}
	lvl := zstd.SpeedDefault
	if own != compress.DefaultCompressionLevel {
		lvl = zstd.EncoderLevelFromZstd(own)
	}
	p := z.pool(lvl)
	enc, _ := p.Get().(*zstd.Encoder)
	if enc == nil {
		return z.base.EncodeLevel(dst, src, own)
	}
	out := enc.EncodeAll(src, dst[:0])
	enc.Reset(nil)
	p.Put(enc)
	return out
}

// Encode is the replaced codec's (it has no level, so no caller is skiplake's writer).
func (z *pageZstd) Encode(dst, src []byte) []byte { return z.base.Encode(dst, src) }

// Decode is the replaced codec's (it panics on malformed input; readers use DecodeWithError).
func (z *pageZstd) Decode(dst, src []byte) []byte { return z.base.Decode(dst, src) }

// zstdSlack is the spare capacity past a page's end that lets klauspost's zstd
// decoder copy matches and literals in 16-byte blocks (its compressedBlockOverAlloc);
// without it, as in a page buffer sized exactly to the page (arrow-go sizes them to
// a multiple of 64 bytes: every 128 KiB page of 8-byte values), it decodes with
// bounds-exact copies, about a fifth slower.
const zstdSlack = 16

// zstdScratch holds decode buffers with slack (*[]byte).
var zstdScratch sync.Pool

// DecodeWithError decodes src into dst with the replaced codec's decoder. When dst lacks the
// slack of the fast copies, the page is decoded into a scratch buffer that has it
// and copied into dst (a copy costs far less than the slow copies). The page readers
// of [Reader.Read] and [Reader.ReadRanges] allocate through slackAllocator, so their
// pages always decode in place.
//
// Which decoder: a page whose frame zstdxPage picks (literal-heavy pages, decoded in
// place) is decoded by internal/zstdx; every other page, and any page zstdx fails
// on, by the replaced codec's decoder (decodeZstdx), so the bytes and the errors
// callers see are that decoder's.
func (z *pageZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	if len(dst) == 0 || cap(dst)-len(dst) >= zstdSlack {
		if len(dst) > 0 && zstdxPage(src) {
			if out, ok := decodeZstdx(dst, src); ok {
				return out, nil
			}
		}
		return compress.Decode(z.base, dst, src)
	}
	sp, _ := zstdScratch.Get().(*[]byte)
	if sp == nil {
		sp = new([]byte)
	}
	defer zstdScratch.Put(sp)
	if cap(*sp) < len(dst)+4*zstdSlack {
		*sp = make([]byte, 0, len(dst)+4*zstdSlack)
	}
	out, err := compress.Decode(z.base, (*sp)[:len(dst)], src)
	if err != nil {
		return nil, err
	}
	if len(out) > cap(dst) { // more than the page header said: the caller's check reports it
		return append([]byte(nil), out...), nil
	}
	return dst[:copy(dst[:len(out)], out)], nil
}

// CompressBound is the replaced codec's.
func (z *pageZstd) CompressBound(n int64) int64 { return z.base.CompressBound(n) }

// NewReader is the replaced codec's.
func (z *pageZstd) NewReader(r io.Reader) io.ReadCloser { return z.base.NewReader(r) }

// NewWriter is the replaced codec's.
func (z *pageZstd) NewWriter(w io.Writer) io.WriteCloser { return z.base.NewWriter(w) }

// NewWriterLevel is the replaced codec's, at the zstd level a tagged level carries.
func (z *pageZstd) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	if own, ok := ownLevel(level); ok {
		level = own
	}
	return z.base.NewWriterLevel(w, level)
}

// slackAllocator hands out buffers with zstdSlack bytes of spare capacity past their
// length: the allocator of the Parquet page readers (streamReaders), whose page
// buffers arrow-go sizes to the page (a multiple of 64 bytes) and decompresses into.
// With the slack, DecodeWithError decodes a page in place instead of into a scratch
// buffer and copying it (every 128 KiB page of 8-byte values took that copy). The
// inner allocator always sees the whole allocation (length and slack), so what it
// counts and frees is what it handed out.
type slackAllocator struct{ inner memory.Allocator }

// Allocate returns size bytes with zstdSlack bytes of capacity beyond them.
func (a slackAllocator) Allocate(size int) []byte {
	return a.inner.Allocate(size + zstdSlack)[: size : size+zstdSlack]
}

// Reallocate resizes b (one of a's buffers) to size bytes, keeping its contents.
func (a slackAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) == 0 {
		return a.Allocate(size)
	}
	return a.inner.Reallocate(size+zstdSlack, b[:cap(b)])[: size : size+zstdSlack]
}

// Free gives b (one of a's buffers) back to the inner allocator whole.
func (a slackAllocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	a.inner.Free(b[:cap(b)])
}

// zstdxMinLiterals is how much of a frame's first block (out of zstdxLiteralsOf)
// its Huffman-coded literals must regenerate for zstdxPage to pick zstdx: 7/8.
// Measured on the pages of the 5M-row peer scan table (BENCHMARKS.md, "zstdx
// decodes the literal-heavy pages"): its random-text pages regenerate 98-100% of
// their bytes as literals, and zstdx decodes them with about 0.55-0.7 of
// klauspost's CPU; the next most literal-heavy pages (short names) 50-53%, which
// zstdx decodes with 1.4-2 times klauspost's CPU (klauspost executes sequences in
// assembly); the rest 25% or raw literals.
const (
	zstdxMinLiterals = 7
	zstdxLiteralsOf  = 8
)

// zstdxBlock is zstd's largest block (RFC 8878, Block_Maximum_Size).
const zstdxBlock = 128 << 10

// zstdxPage reports whether the zstd frame at the start of src is one zstdx
// decodes better than klauspost: a frame (no dictionary) that declares its content
// size, whose first block is a compressed block with Huffman-coded literals carrying
// their own tree that regenerate at least zstdxMinLiterals/zstdxLiteralsOf of that
// block's output (min(content size, 128 KiB), the first block's size for an encoder
// that fills its blocks, as klauspost's and libzstd's do). It reads the frame
// header, the first block header and the literals section header only, checks every
// length it reads, and says false for anything it does not recognise (the page then
// goes to klauspost, as before).
func zstdxPage(src []byte) bool {
	if len(src) < 6 || binary.LittleEndian.Uint32(src) != 0xFD2FB528 {
		return false
	}
	fhd := src[4]
	single := fhd&0x20 != 0
	p := 5
	if !single {
		p++ // window descriptor
	}
	if fhd&3 != 0 {
		return false // a dictionary ID field: leave dictionaries to klauspost
	}
	fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if fcsLen == 0 {
		if !single {
			return false // no content size: the block's output is unknown
		}
		fcsLen = 1
	}
	if p+fcsLen+3+5 > len(src) { // frame header, block header, longest literals header
		return false
	}
	var fcs uint64
	for k := 0; k < fcsLen; k++ {
		fcs |= uint64(src[p+k]) << (8 * k)
	}
	if fcsLen == 2 {
		fcs += 256
	}
	p += fcsLen
	h := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
	p += 3
	if h>>1&3 != 2 { // not a compressed block
		return false
	}
	lh := src[p:]
	if lh[0]&3 != 2 { // raw, RLE or treeless literals
		return false
	}
	var regen uint64
	switch lh[0] >> 2 & 3 {
	case 0, 1:
		regen = uint64(lh[0])>>4 | uint64(lh[1]&0x3F)<<4
	case 2:
		regen = uint64(binary.LittleEndian.Uint32(lh)) >> 4 & 0x3FFF
	default:
		regen = uint64(binary.LittleEndian.Uint32(lh)) >> 4 & 0x3FFFF
	}
	block := min(fcs, zstdxBlock)
	return block > 0 && regen*zstdxLiteralsOf >= block*zstdxMinLiterals
}

// zstdxDecoders pools the decoders of decodeZstdx (*zstdx.Decoder: tables and a
// literal buffer, reused across pages).
var zstdxDecoders = sync.Pool{New: func() any { return new(zstdx.Decoder) }}

// decodeZstdx decodes the frame src into dst's array (dst[:0]; dst has zstdSlack
// bytes of spare capacity, as the sequence copies of zstdx need; len(dst) > 0) with a pooled
// zstdx decoder, allowing at most len(dst) bytes (the page header's size). It
// reports false on any zstdx error (the caller then decodes src with klauspost,
// whose result and error are the ones returned) and when the output is not len(dst)
// bytes in dst's array (the caller's klauspost decode gives the same bytes and
// reports a size mismatch as today). zstdx verifies the frame's content checksum.
func decodeZstdx(dst, src []byte) ([]byte, bool) {
	d := zstdxDecoders.Get().(*zstdx.Decoder)
	defer zstdxDecoders.Put(d)
	d.MaxSize = len(dst)
	out, err := d.DecodeAll(src, dst[:0])
	if err != nil || len(out) != len(dst) || &out[0] != &dst[0] {
		return nil, false
	}
	return out, true
}
