package datafile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
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

// The registered zstd codec is pageZstd: pages up to its window compress to exactly
// the bytes of arrow-go's encoders (zstd's default window), larger inputs to frames
// that decode to the input, and both decode through the codec.
func TestPageZstdSameBytesSmallerWindow(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	require.NoError(t, err)
	require.IsType(t, &pageZstd{}, codec)
	for _, level := range []int{1, 3, 9, compress.DefaultCompressionLevel} {
		lvl := zstd.EncoderLevelFromZstd(level)
		if level == compress.DefaultCompressionLevel {
			lvl = zstd.SpeedDefault
		}
		ref, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true))
		require.NoError(t, err)
		for _, n := range []int{0, 100, 4 << 10, 128 << 10, 1 << 20, zstdWindow, 5 << 20} {
			src := compressible(n, uint64(n+level))
			got := codec.EncodeLevel(nil, src, level)
			if n <= zstdWindow {
				require.Equal(t, ref.EncodeAll(src, nil), got, "level %d, %d bytes", level, n)
			}
			dec, err := compress.Decode(codec, nil, got)
			require.NoError(t, err)
			require.Equal(t, len(src), len(dec))
			require.True(t, bytes.Equal(src, dec), "level %d, %d bytes: round trip", level, n)
		}
		ref.Close()
	}
}
