package optimize

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
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

func TestSelectPending(t *testing.T) {
	tr := smallTree(t)
	add := func(rows int) *log.Add {
		return &log.Add{Path: "x", Stats: fmt.Sprintf(`{"numRecords":%d}`, rows)}
	}
	// A node over four leaves (1000 rows a file) waiting with 2000 rows: it moves
	// down once its leaves get leafFill (3/4) of a file each, 3000 rows.
	quad := -1
	for id, nd := range tr.Nodes {
		if first, end := tr.LeafRange(id); nd.Leaf < 0 && end-first == 4 {
			quad = id
			break
		}
	}
	pending := map[int][]*log.Add{quad: {add(1000), add(1000)}}
	// 1000 new rows spread over the whole tree: the quad gets about 500 of them,
	// 2500 < 3000: wait.
	if sel, _ := selectPending(tr, pending, 1000, 1000); sel[quad] {
		t.Fatal("selected although the leaves would not fill a file each")
	}
	// 2000 new rows: about 1000 under the quad, 3000 in all: move down.
	if sel, roots := selectPending(tr, pending, 2000, 1000); !sel[quad] || len(roots) != 1 {
		t.Fatal("not selected although every leaf fills a file")
	}
}
