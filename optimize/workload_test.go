package optimize

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/workload"
)

// smallTree builds a tree of 8 leaves over one int column 0..7999, cut at
// multiples of 1000 by the workload.
func smallTree(t *testing.T) *qdtree.Tree {
	t.Helper()
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := int64(0); i < 8000; i++ {
		b.Append(i)
	}
	arr := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sch, []arrow.Array{arr}, 8000)
	arr.Release()
	defer rec.Release()
	var f strings.Builder
	for i := range 8 {
		fmt.Fprintf(&f, "k >= %d AND k < %d\n", i*1000, (i+1)*1000)
	}
	w, err := workload.Parse(strings.NewReader(f.String()), "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := qdtree.Build(context.Background(), rec, w, qdtree.Options{Leaves: 8, Tolerance: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Leaves != 8 {
		t.Fatalf("%d leaves", tr.Leaves)
	}
	return tr
}

func TestPlaceLeaves(t *testing.T) {
	tr := smallTree(t)
	parents := tr.Parents()
	cases := []struct {
		name     string
		counts   []int64
		fileRows float64
		check    func(dest []int) string
	}{
		{"full leaves stay at their leaves", []int64{1000, 1100, 1900, 1000, 1700, 1800, 1550, 2000}, 1000, func(dest []int) string {
			for l, d := range dest {
				if tr.Nodes[d].Leaf != l {
					return fmt.Sprintf("leaf %d placed at node %d", l, d)
				}
			}
			return ""
		}},
		{"small leaves wait at the lowest node that fills a file", []int64{100, 100, 100, 100, 100, 100, 100, 100}, 1000, func(dest []int) string {
			// Pairs hold 200, quads 400, the root 800 (< 1000): everything waits at the root.
			for _, d := range dest {
				if d != 0 {
					return fmt.Sprintf("placed at node %d, want the root", d)
				}
			}
			return ""
		}},
		{"quads fill", []int64{260, 260, 260, 260, 260, 260, 260, 260}, 1000, func(dest []int) string {
			for l, d := range dest {
				first, end := tr.LeafRange(d)
				if end-first != 4 || l < first || l >= end {
					return fmt.Sprintf("leaf %d placed at node %d covering leaves [%d,%d)", l, d, first, end)
				}
			}
			return ""
		}},
		{"empty leaves have no destination; mixed", []int64{0, 0, 1200, 10, 0, 0, 0, 0}, 1000, func(dest []int) string {
			if dest[0] != -1 || dest[1] != -1 || tr.Nodes[dest[2]].Leaf != 2 {
				return fmt.Sprintf("dest %v", dest)
			}
			// Leaf 3 (10 rows) goes up until the rows reach 1000 or the root.
			if dest[3] != 0 {
				return fmt.Sprintf("leaf 3 placed at %d (parents %v)", dest[3], parents)
			}
			return ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if msg := c.check(placeLeaves(tr, c.counts, c.fileRows, func(int) float64 { return c.fileRows })); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestSelectResplit(t *testing.T) {
	tr := smallTree(t)
	quad := -1
	for id, nd := range tr.Nodes {
		if first, end := tr.LeafRange(id); nd.Leaf < 0 && end-first == 4 {
			quad = id
			break
		}
	}
	// Every leaf laid out with a file of 1000 rows (fileRows 1000).
	laid := func() []float64 {
		rows := make([]float64, len(tr.Nodes))
		for id, nd := range tr.Nodes {
			if nd.Leaf >= 0 {
				rows[id] = 1000
			}
		}
		return rows
	}
	news := func(at map[int]float64) func() []float64 {
		return func() []float64 {
			rows := make([]float64, len(tr.Nodes))
			for n, r := range at {
				rows[n] = r
			}
			return rows
		}
	}
	cases := []struct {
		name       string
		laid, news func() []float64
		want       []int
	}{
		{"nothing new", laid, news(nil), nil},
		// The quad: 2000 + 1000 < 0.95 × 4000 (the root's new rows count for none
		// of its subtrees); the root: 3000 < 0.95 × 8000.
		{"too few new rows", laid, news(map[int]float64{quad: 2000, 0: 1000}), nil},
		// 3800 new rows in the quad: due; the root (4800) is not.
		{"the quad doubled", laid, news(map[int]float64{quad: 3000, tr.LeafNode(0): 800}), []int{quad}},
		// The root: 2000 + 5600 ≥ 0.95 × 8000: one re-split of everything.
		{"the whole tree doubled", laid, news(map[int]float64{quad: 2000, 0: 5600}), []int{0}},
		// A leaf whose new rows match its laid-out ones, alone.
		{"one full leaf alone", laid, news(map[int]float64{tr.LeafNode(6): 960}), []int{tr.LeafNode(6)}},
		{"not quite", laid, news(map[int]float64{tr.LeafNode(6): 940, 0: 5000}), nil},
		// A leaf laid out with only 100 rows waits for half a file (475 new rows).
		{"sparse leaf", func() []float64 {
			rows := laid()
			rows[tr.LeafNode(3)] = 100
			return rows
		}, news(map[int]float64{tr.LeafNode(3): 400, tr.LeafNode(5): 480}), nil},
		{"sparse leaf due", func() []float64 {
			rows := laid()
			rows[tr.LeafNode(3)] = 100
			return rows
		}, news(map[int]float64{tr.LeafNode(3): 480}), []int{tr.LeafNode(3)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := selectResplit(tr, c.laid(), c.news(), 1000); !slices.Equal(got, c.want) {
				t.Fatalf("re-split %v, want %v", got, c.want)
			}
		})
	}
}
