package qdtree

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkBuild builds a tree for the two-pair template workload of the
// quality test; rows/s counts sample rows.
func BenchmarkBuild(b *testing.B) {
	for _, size := range []struct{ rows, leaves int }{{50_000, 100}, {200_000, 1000}} {
		rec := devData(size.rows, 7)
		w := devTemplate(rec, 100, 11, [][2]int{{0, 2}, {1, 3}}, false, 0)
		b.Run(fmt.Sprintf("rows=%d/leaves=%d", size.rows, size.leaves), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(context.Background(), rec, w, Options{Leaves: size.leaves}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		rec.Release()
	}
}

// BenchmarkRoute routes rows through a tree of 1000 leaves.
func BenchmarkRoute(b *testing.B) {
	rec := devData(200_000, 7)
	defer rec.Release()
	w := devTemplate(rec, 100, 11, [][2]int{{0, 2}, {1, 3}}, false, 0)
	tr, err := Build(context.Background(), rec, w, Options{Leaves: 1000})
	if err != nil {
		b.Fatal(err)
	}
	r, err := tr.Router(rec.Schema())
	if err != nil {
		b.Fatal(err)
	}
	out := make([]int32, rec.NumRows())
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Route(rec, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
