package dv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/skiplake/skiplake/storage"
)

// benchVectors returns n vectors of a DELETE touching ~1% of a 1M-row file each.
func benchVectors(n int) []*roaring64.Bitmap {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]*roaring64.Bitmap, n)
	for i := range out {
		bm := roaring64.New()
		for range 10_000 {
			bm.Add(r.Uint64N(1_000_000))
		}
		out[i] = bm
	}
	return out
}

// BenchmarkWrite measures Write of one commit's vectors into packed DV files in memory.
func BenchmarkWrite(b *testing.B) {
	for _, n := range []int{100} {
		vecs := benchVectors(n)
		b.Run(fmt.Sprintf("vectors=%d/rows=10000", n), func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				w, err := Write(context.Background(), storage.NewMemory(), vecs, WriteOptions{})
				if err != nil {
					b.Fatal(err)
				}
				bytes = w.Bytes
			}
			b.SetBytes(bytes)
		})
	}
}

// BenchmarkLoadOneVector compares reading one vector of a DV file holding many (a
// commit that touched many files, packed to the 2 MiB default): Load fetches the
// whole object, LoadRange only the vector's range.
func BenchmarkLoadOneVector(b *testing.B) {
	st := storage.NewMemory()
	w, err := Write(context.Background(), st, benchVectors(100), WriteOptions{TargetFileSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	d := FromLog(w.Descriptors[len(w.Descriptors)/2])
	for _, c := range []struct {
		name string
		load func() (*Deleted, error)
	}{
		{"whole-file", func() (*Deleted, error) { return Load(context.Background(), st.Get, "", d) }},
		{"range", func() (*Deleted, error) { return LoadRange(context.Background(), st.Open, "", d) }},
	} {
		b.Run(fmt.Sprintf("read=%s/vectors=100/file=%dKiB", c.name, w.Bytes>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.load(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
