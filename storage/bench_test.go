package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiplake/skiplake/storage"
)

func benchStores(b *testing.B) map[string]func(b *testing.B) storage.Storage {
	return map[string]func(b *testing.B) storage.Storage{
		"local": func(b *testing.B) storage.Storage {
			l, err := storage.NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { l.Close() })
			return l
		},
		"memory": func(*testing.B) storage.Storage { return storage.NewMemory() },
	}
}

// BenchmarkPutIfAbsent measures commit-style creates of fresh names (write, fsync, link,
// directory fsync on Local). Reports commits/s.
func BenchmarkPutIfAbsent(b *testing.B) {
	ctx := context.Background()
	for _, store := range []string{"local", "memory"} {
		for _, size := range []int{1 << 10, 64 << 10} {
			b.Run(fmt.Sprintf("store=%s/size=%dKiB", store, size>>10), func(b *testing.B) {
				s := benchStores(b)[store](b)
				data := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := s.PutIfAbsent(ctx, fmt.Sprintf("_delta_log/%020d.json", i), data); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// BenchmarkList measures listing a log directory of n commits from the middle, as
// snapshot loading after a checkpoint does. Reports listed objects/s.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	for _, store := range []string{"local", "memory"} {
		for _, n := range []int{100, 2000} {
			b.Run(fmt.Sprintf("store=%s/n=%d", store, n), func(b *testing.B) {
				s := benchStores(b)[store](b)
				for i := range n {
					if err := s.Put(ctx, fmt.Sprintf("_delta_log/%020d.json", i), []byte("{}")); err != nil {
						b.Fatal(err)
					}
				}
				after := fmt.Sprintf("_delta_log/%020d.json", n/2)
				b.ReportAllocs()
				listed := 0
				for b.Loop() {
					objs, err := s.List(ctx, "_delta_log/", after)
					if err != nil {
						b.Fatal(err)
					}
					listed += len(objs)
				}
				b.ReportMetric(float64(listed)/b.Elapsed().Seconds(), "objects/s")
			})
		}
	}
}
