package datafile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// compressible makes n bytes of text-like data (repeats at every distance).
func compressible(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "row %d status %d note %d;", rng.IntN(1<<20), rng.IntN(4), rng.IntN(1000))
	}
	return b.Bytes()[:n]
}

// The registered zstd codec is pageZstd. At skiplake's levels (pageZstdLevel) pages up
// to its window compress to exactly the bytes of arrow-go's encoders (zstd's default
// window) and larger inputs to frames that decode to the input; at any other level
// every input compresses to arrow-go's bytes. Both decode through the codec.
func TestPageZstdSameBytesSmallerWindow(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	require.NoError(t, err)
	require.IsType(t, &pageZstd{}, codec)
	levels := []int{1, 3, 9, compress.DefaultCompressionLevel}
	if raceEnabled {
		levels = []int{3} // under -race: the level the writer uses
	}
	for _, level := range levels {
		lvl := zstd.EncoderLevelFromZstd(level)
		if level == compress.DefaultCompressionLevel {
			lvl = zstd.SpeedDefault
		}
		ref, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true))
		require.NoError(t, err)
		for _, n := range []int{0, 100, 4 << 10, 128 << 10, 1 << 20, zstdWindow, 5 << 20} {
			src := compressible(n, uint64(n+level))
			want := ref.EncodeAll(src, nil)
			own := codec.EncodeLevel(nil, src, pageZstdLevel(level))
			if n <= zstdWindow {
				require.Equal(t, want, own, "skiplake's level %d, %d bytes", level, n)
			}
			require.Equal(t, want, codec.EncodeLevel(nil, src, level), "other writers' level %d, %d bytes", level, n)
			dec, err := compress.Decode(codec, nil, own)
			require.NoError(t, err)
			require.Equal(t, len(src), len(dec))
			require.True(t, bytes.Equal(src, dec), "level %d, %d bytes: round trip", level, n)
		}
		ref.Close()
	}
}

// TestWriterPropertiesSelectPageZstd: the writer properties of this package's files
// carry a level that selects pageZstd's page encoders, the zstd level asked for
// (default 3); other codecs' levels are passed as they are.
func TestWriterPropertiesSelectPageZstd(t *testing.T) {
	for _, tc := range []struct {
		opts WriterOptions
		want int
	}{
		{WriterOptions{}, DefaultZstdLevel},
		{WriterOptions{Codec: CodecZstd, CompressionLevel: 9}, 9},
		{WriterOptions{Codec: CodecZstd, CompressionLevel: compress.DefaultCompressionLevel}, compress.DefaultCompressionLevel},
	} {
		props := tc.opts.withDefaults().properties(nil)
		require.Equal(t, compress.Codecs.Zstd, props.Compression())
		got, ok := ownLevel(props.CompressionLevel())
		require.True(t, ok, "%+v: level %d does not select the page encoders", tc.opts, props.CompressionLevel())
		require.Equal(t, tc.want, got)
	}
	props := WriterOptions{Codec: CodecGzip, CompressionLevel: 5}.withDefaults().properties(nil)
	require.Equal(t, 5, props.CompressionLevel())
	for _, level := range []int{-1, 0, 1, 3, 22, 1 << 20} {
		_, ok := ownLevel(level)
		require.False(t, ok, "level %d is taken for skiplake's", level)
	}
}

// zstdFrameChecksum reports whether the zstd frame at the start of b declares a
// content checksum (Frame_Header_Descriptor bit 2, RFC 8878 §3.1.1.1.1).
func zstdFrameChecksum(t testing.TB, b []byte) bool {
	t.Helper()
	require.GreaterOrEqual(t, len(b), 5, "not a zstd frame")
	require.Equal(t, []byte{0x28, 0xB5, 0x2F, 0xFD}, b[:4], "not a zstd frame")
	return b[4]&0x04 != 0
}

// TestPageZstdWritesChecksums: the frames the registered codec writes carry a content
// checksum (the only check of page data skiplake's files have; see pageZstd),
// whatever the level and size, and decode to the page.
func TestPageZstdWritesChecksums(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	require.NoError(t, err)
	for _, level := range []int{1, 3, compress.DefaultCompressionLevel} {
		for _, n := range []int{1, 4 << 10, 128 << 10, 5 << 20} {
			src := compressible(n, uint64(n))
			got := codec.EncodeLevel(nil, src, pageZstdLevel(level))
			require.True(t, zstdFrameChecksum(t, got), "level %d, %d bytes: frame without a checksum", level, n)
			dec, err := compress.Decode(codec, make([]byte, 0, n+64), got)
			require.NoError(t, err)
			require.True(t, bytes.Equal(src, dec))
		}
	}
}

// TestPageZstdVerifiesChecksumsOfOtherWriters: frames with a content checksum decode,
// in place and through the scratch buffer, and a frame whose checksum does not match
// the decoded bytes is an error on both paths; frames without one (libzstd's default:
// DuckDB's, parquet-mr's) decode too.
func TestPageZstdVerifiesChecksumsOfOtherWriters(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	require.NoError(t, err)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithZeroFrames(true), zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	defer enc.Close()
	bare, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true), zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	defer bare.Close()
	for _, n := range []int{100, 128 << 10} {
		src := compressible(n, 9)
		framed := enc.EncodeAll(src, nil)
		require.True(t, zstdFrameChecksum(t, framed))
		dec, err := compress.Decode(codec, make([]byte, n), bare.EncodeAll(src, nil))
		require.NoError(t, err, "%d bytes without a checksum", n)
		require.True(t, bytes.Equal(src, dec))
		bad := append([]byte(nil), framed...)
		bad[len(bad)-1] ^= 0x5A              // the last 4 bytes are the checksum
		for _, spare := range []int{0, 64} { // exact buffer (scratch path) and slack (in place)
			dec, err := compress.Decode(codec, make([]byte, n, n+spare), framed)
			require.NoError(t, err, "%d bytes, %d spare", n, spare)
			require.True(t, bytes.Equal(src, dec))
			_, err = compress.Decode(codec, make([]byte, n, n+spare), bad)
			require.Error(t, err, "%d bytes, %d spare: a wrong checksum decoded", n, spare)
		}
	}
}

// pageFrameChecksums returns, for every data page of data (found through the offset
// index), whether its zstd frame declares a content checksum.
func pageFrameChecksums(t *testing.T, data []byte) []bool {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	magic := []byte{0x28, 0xB5, 0x2F, 0xFD}
	var flags []bool
	for rg := 0; rg < pr.NumRowGroups(); rg++ {
		rgi, err := pr.GetPageIndexReader().RowGroup(rg)
		require.NoError(t, err)
		for c := 0; c < pr.MetaData().Schema.NumColumns(); c++ {
			oi, err := rgi.GetOffsetIndex(c)
			require.NoError(t, err)
			for _, loc := range oi.GetPageLocations() {
				page := data[loc.Offset : loc.Offset+int64(loc.CompressedPageSize)]
				at := bytes.Index(page, magic) // the page header comes first, then the frame
				require.GreaterOrEqual(t, at, 0, "row group %d column %d: page without a zstd frame", rg, c)
				flags = append(flags, zstdFrameChecksum(t, page[at:]))
			}
		}
	}
	return flags
}

// TestFilesWithAndWithoutPageChecksumsRead: the Writer's pages carry zstd checksums;
// a file whose pages carry none (as libzstd writes them: DuckDB, parquet-mr) reads
// back the same rows.
func TestFilesWithAndWithoutPageChecksumsRead(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 5000, 1)
	defer rec.Release()
	want := rowStrings(rec)
	opts := WriterOptions{TargetRowGroupBytes: 64 << 10, DataPageBytes: 4 << 10}

	data, _ := writeFile(t, opts, rec)
	flags := pageFrameChecksums(t, data)
	require.Greater(t, len(flags), 20)
	require.NotContains(t, flags, false, "a page written without a checksum")
	require.Equal(t, want, readRows(t, data, rec.Schema(), nil))

	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	require.NoError(t, err)
	compress.RegisterCodec(compress.Codecs.Zstd, bareZstd{codec.(*pageZstd)})
	bare, _ := func() ([]byte, *WriteResult) {
		defer compress.RegisterCodec(compress.Codecs.Zstd, codec)
		return writeFile(t, opts, rec)
	}()
	flags = pageFrameChecksums(t, bare)
	require.Greater(t, len(flags), 20)
	require.NotContains(t, flags, true, "a page written with a checksum")
	require.Equal(t, want, readRows(t, bare, rec.Schema(), nil))
}

// bareZstd is pageZstd writing frames without checksums, as libzstd does by default.
type bareZstd struct{ *pageZstd }

func (z bareZstd) EncodeLevel(dst, src []byte, level int) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(max(level, 1))))
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	return enc.EncodeAll(src, dst[:0])
}

func (z bareZstd) Encode(dst, src []byte) []byte { return z.EncodeLevel(dst, src, 3) }
