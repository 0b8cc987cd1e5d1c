package zstdx

import (
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// textSections returns the literal sections (with their own tree) of the payload
// pages textFrames finds.
func textSections(b *testing.B) []litSection {
	frames, what := textFrames(b)
	var out []litSection
	for _, f := range frames {
		ls, err := literalSections(f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, ls...)
	}
	if len(out) == 0 {
		b.Skip("no Huffman literal sections in " + what)
	}
	b.Logf("%s: %d frames, %d literal sections", what, len(frames), len(out))
	return out
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start and the CPU-time throughput
// of bytes per op: figures a loaded machine disturbs less than wall time.
func reportCPU(b *testing.B, start time.Duration, bytes int) {
	cpu := cpuTime(b) - start
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if cpu > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
	}
}

// BenchmarkHuffLiterals decodes the Huffman literal sections of payload pages (the
// scan benchmark's text column): tree description read and streams decoded, by
// this package's double-symbol decoder and by klauspost's huff0 (ReadTable +
// Decompress4X/1X, as klauspost's zstd decoder calls them). MB/s is literal bytes
// regenerated.
func BenchmarkHuffLiterals(b *testing.B) {
	secs := textSections(b)
	total, maxRegen := 0, 0
	for _, s := range secs {
		total += s.regen
		maxRegen = max(maxRegen, s.regen)
	}
	dst := make([]byte, maxRegen)
	b.Run("impl=zstdx", func(b *testing.B) {
		var t HuffTable
		b.SetBytes(int64(total))
		start := cpuTime(b)
		for i := 0; i < b.N; i++ {
			for _, s := range secs {
				used, err := t.Read(s.data)
				if err != nil {
					b.Fatal(err)
				}
				if s.four {
					err = t.Decode4X(dst[:s.regen], s.data[used:])
				} else {
					err = t.Decode1X(dst[:s.regen], s.data[used:])
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU(b, start, total)
	})
	b.Run("impl=huff0", func(b *testing.B) {
		sc := &huff0.Scratch{}
		b.SetBytes(int64(total))
		start := cpuTime(b)
		for i := 0; i < b.N; i++ {
			for _, s := range secs {
				var rem []byte
				var err error
				sc, rem, err = huff0.ReadTable(s.data, sc)
				if err != nil {
					b.Fatal(err)
				}
				if s.four {
					_, err = sc.Decoder().Decompress4X(dst[:0:s.regen], rem)
				} else {
					_, err = sc.Decoder().Decompress1X(dst[:0:s.regen], rem)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU(b, start, total)
	})
}

// BenchmarkHuffStreams is BenchmarkHuffLiterals without the tree descriptions: the
// tables are loaded once, the loop decodes streams only.
func BenchmarkHuffStreams(b *testing.B) {
	secs := textSections(b)
	total, maxRegen := 0, 0
	for _, s := range secs {
		total += s.regen
		maxRegen = max(maxRegen, s.regen)
	}
	dst := make([]byte, maxRegen)
	b.Run("impl=zstdx", func(b *testing.B) {
		tabs := make([]HuffTable, len(secs))
		rest := make([][]byte, len(secs))
		for i, s := range secs {
			used, err := tabs[i].Read(s.data)
			if err != nil {
				b.Fatal(err)
			}
			rest[i] = s.data[used:]
		}
		b.SetBytes(int64(total))
		b.ResetTimer()
		start := cpuTime(b)
		for i := 0; i < b.N; i++ {
			for k, s := range secs {
				var err error
				if s.four {
					err = tabs[k].Decode4X(dst[:s.regen], rest[k])
				} else {
					err = tabs[k].Decode1X(dst[:s.regen], rest[k])
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU(b, start, total)
	})
	b.Run("impl=huff0", func(b *testing.B) {
		decs := make([]*huff0.Decoder, len(secs))
		rest := make([][]byte, len(secs))
		for i, s := range secs {
			sc, rem, err := huff0.ReadTable(s.data, nil)
			if err != nil {
				b.Fatal(err)
			}
			decs[i], rest[i] = sc.Decoder(), rem
		}
		b.SetBytes(int64(total))
		b.ResetTimer()
		start := cpuTime(b)
		for i := 0; i < b.N; i++ {
			for k, s := range secs {
				var err error
				if s.four {
					_, err = decs[k].Decompress4X(dst[:0:s.regen], rest[k])
				} else {
					_, err = decs[k].Decompress1X(dst[:0:s.regen], rest[k])
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		reportCPU(b, start, total)
	})
}

// BenchmarkDecodePage decodes the zstd pages of the scan benchmark's file (row
// group 0 of its last file; synthetic payload pages when it is absent): the
// payload column's pages, and the other five columns' pages, by DecodeAll and by klauspost's
// Decoder.DecodeAll as arrow-go configures it for page decoding (concurrency 1),
// each into a reused buffer with slack. MB/s is decoded bytes.
func BenchmarkDecodePage(b *testing.B) {
	sets := map[string][][]byte{}
	if path := realPagesPath(); path != "" {
		all := pageFrames(b, path)
		sets["payload"] = all["payload"]
		for col, f := range all {
			if col != "payload" {
				sets["other"] = append(sets["other"], f...)
			}
		}
	} else {
		sets["payload"], _ = textFrames(b)
	}
	kd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"payload", "other"} {
		frames := sets[name]
		if len(frames) == 0 {
			continue
		}
		total, maxOut := 0, 0
		for _, f := range frames {
			out, err := kd.DecodeAll(f, nil)
			if err != nil {
				b.Fatal(err)
			}
			total += len(out)
			maxOut = max(maxOut, len(out))
		}
		buf := make([]byte, 0, maxOut+64)
		b.Run("pages="+name+"/impl=zstdx", func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(total))
			start := cpuTime(b)
			for i := 0; i < b.N; i++ {
				for _, f := range frames {
					if _, err := d.DecodeAll(f, buf[:0]); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportCPU(b, start, total)
		})
		b.Run("pages="+name+"/impl=klauspost", func(b *testing.B) {
			b.SetBytes(int64(total))
			start := cpuTime(b)
			for i := 0; i < b.N; i++ {
				for _, f := range frames {
					if _, err := kd.DecodeAll(f, buf[:0]); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportCPU(b, start, total)
		})
	}
}
