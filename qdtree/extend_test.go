package qdtree

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/gather"
)

// takeRows returns the rows of rec at idx.
func takeRows(t *testing.T, rec arrow.RecordBatch, idx []uint32) arrow.RecordBatch {
	t.Helper()
	arrs := make([]arrow.Array, rec.NumCols())
	for c := range arrs {
		a, err := gather.Take(context.Background(), rec.Column(c), idx, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		arrs[c] = a
	}
	out := array.NewRecordBatch(rec.Schema(), arrs, int64(len(idx)))
	for _, a := range arrs {
		a.Release()
	}
	return out
}

func route(t *testing.T, tr *Tree, rec arrow.RecordBatch) []int32 {
	t.Helper()
	r, err := tr.Router(rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, rec.NumRows())
	if err := r.Route(rec, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// extendLeaves splits the given leaves of tr, each by a tree built on its own
// rows of rec with the given number of leaves.
func extendLeaves(t *testing.T, tr *Tree, rec arrow.RecordBatch, split map[int]int, lineage string) (*Tree, map[int]*Tree) {
	t.Helper()
	leaves := route(t, tr, rec)
	w := mustWorkload(t, mixedWorkload)
	subs := map[int]*Tree{}
	for l, k := range split {
		var idx []uint32
		for i, x := range leaves {
			if int(x) == l {
				idx = append(idx, uint32(i))
			}
		}
		part := takeRows(t, rec, idx)
		s, err := Build(context.Background(), part, w, Options{Leaves: k, Columns: tr.Columns})
		part.Release()
		if err != nil {
			t.Fatal(err)
		}
		subs[l] = s
	}
	ext, err := tr.Extend(subs, lineage)
	if err != nil {
		t.Fatal(err)
	}
	return ext, subs
}

// TestExtendRefinesTheTree splits some leaves of a tree, twice over, and checks
// that the result refines it: every row routes under the node its old leaf's
// key names, the split leaves route as their split trees do, old keys survive
// and new ones are fresh, and the cut texts route as the Router does (Q1).
func TestExtendRefinesTheTree(t *testing.T) {
	rec := mixedRows(12_000, 4)
	defer rec.Release()
	w := mustWorkload(t, mixedWorkload)
	cols := []string{"id", "day", "name", "price", "score"}
	base, err := Build(context.Background(), rec, w, Options{Leaves: 8, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	gen := []*Tree{base}
	split := []map[int]int{{1: 2, 4: 3, 7: 2, 5: 1}, {0: 2, 3: 4}}
	for g, sp := range split {
		old := gen[len(gen)-1]
		ext, subs := extendLeaves(t, old, rec, sp, "_skiplake_layout/qdtree-base.json")
		if ext.Version != ExtendedVersion || ext.Generation != g+1 || ext.Lineage != "_skiplake_layout/qdtree-base.json" {
			t.Fatalf("generation %d: version %d, generation %d, lineage %q", g+1, ext.Version, ext.Generation, ext.Lineage)
		}
		want := old.Leaves
		for _, s := range subs {
			want += s.Leaves - 1
		}
		if ext.Leaves != want {
			t.Fatalf("generation %d: %d leaves, want %d", g+1, ext.Leaves, want)
		}
		// Keys: old ones kept, new ones fresh and unique.
		maxOld := 0
		for i := range old.Nodes {
			k := old.NodeKey(i)
			maxOld = max(maxOld, k)
			j := ext.NodeIndex(k)
			if j < 0 {
				t.Fatalf("generation %d: key %d of the old tree is gone", g+1, k)
			}
			if old.Nodes[i].Leaf < 0 && ext.Nodes[j].Cut != old.Nodes[i].Cut {
				t.Fatalf("key %d: cut %q became %q", k, old.Nodes[i].Cut, ext.Nodes[j].Cut)
			}
			if old.Nodes[i].Rows != ext.Nodes[j].Rows {
				t.Fatalf("key %d: rows %d became %d", k, old.Nodes[i].Rows, ext.Nodes[j].Rows)
			}
		}
		seen := map[int]bool{}
		for i := range ext.Nodes {
			k := ext.NodeKey(i)
			if seen[k] {
				t.Fatalf("key %d repeated", k)
			}
			seen[k] = true
			if old.NodeIndex(k) < 0 && k <= maxOld {
				t.Fatalf("new node key %d reuses an old key range (max %d)", k, maxOld)
			}
		}
		// Refinement: rows route under their old leaf's node.
		before, after := route(t, old, rec), route(t, ext, rec)
		for i := range before {
			node := ext.NodeIndex(old.NodeKey(old.LeafNode(int(before[i]))))
			first, end := ext.LeafRange(node)
			if int(after[i]) < first || int(after[i]) >= end {
				t.Fatalf("row %d: old leaf %d, new leaf %d outside [%d, %d)", i, before[i], after[i], first, end)
			}
			if s, ok := subs[int(before[i])]; ok && s.Leaves > 1 {
				if end-first != s.Leaves {
					t.Fatalf("leaf %d: %d leaves under it, its split has %d", before[i], end-first, s.Leaves)
				}
			} else if end-first != 1 {
				t.Fatalf("unsplit leaf %d has %d leaves under it", before[i], end-first)
			}
		}
		for l, s := range subs {
			if s.Leaves < 2 {
				continue
			}
			var idx []uint32
			for i, x := range before {
				if int(x) == l {
					idx = append(idx, uint32(i))
				}
			}
			part := takeRows(t, rec, idx)
			got := route(t, s, part)
			part.Release()
			first, _ := ext.LeafRange(ext.NodeIndex(old.NodeKey(old.LeafNode(l))))
			for j, i := range idx {
				if int(after[i])-first != int(got[j]) {
					t.Fatalf("leaf %d row %d: extended tree leaf %d, split tree leaf %d (+%d)", l, i, after[i], got[j], first)
				}
			}
		}
		for i := 0; i < int(rec.NumRows()); i += 97 {
			if got := leafByText(t, ext, rec, i); got != int(after[i]) {
				t.Fatalf("row %d: cut texts give leaf %d, the Router %d", i, got, after[i])
			}
		}
		data, err := ext.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(route(t, back, rec), after) {
			t.Fatal("the decoded extended tree routes differently")
		}
		gen = append(gen, back)
	}
	// The first tree's keys name nodes of the last generation.
	last := gen[len(gen)-1]
	for i := range base.Nodes {
		if last.NodeIndex(base.NodeKey(i)) < 0 {
			t.Fatalf("key %d of the first tree is missing two generations later", i)
		}
	}
}

func TestExtendErrors(t *testing.T) {
	rec := mixedRows(4000, 5)
	defer rec.Release()
	w := mustWorkload(t, mixedWorkload)
	base, err := Build(context.Background(), rec, w, Options{Leaves: 4, Columns: []string{"id", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Build(context.Background(), rec, w, Options{Leaves: 2, Columns: []string{"score"}})
	if err != nil {
		t.Fatal(err)
	}
	same, err := Build(context.Background(), rec, w, Options{Leaves: 2, Columns: []string{"id", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		splits  map[int]*Tree
		lineage string
	}{
		"no such leaf":   {map[int]*Tree{4: same}, "x"},
		"other column":   {map[int]*Tree{0: other}, "x"},
		"nil split":      {map[int]*Tree{0: nil}, "x"},
		"no lineage":     {map[int]*Tree{0: same}, ""},
		"negative index": {map[int]*Tree{-1: same}, "x"},
	} {
		if _, err := base.Extend(tc.splits, tc.lineage); !errors.Is(err, ErrInvalidOptions) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ext, err := base.Extend(map[int]*Tree{2: same}, "x")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ext.Encode()
	mutate := func(f func(*Tree)) []byte {
		var c Tree
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		f(&c)
		b, _ := json.Marshal(&c)
		return b
	}
	for name, b := range map[string][]byte{
		"repeated key":  mutate(func(c *Tree) { c.Nodes[2].Key = c.Nodes[1].Key }),
		"root key":      mutate(func(c *Tree) { c.Nodes[0].Key = 5 }),
		"no lineage":    mutate(func(c *Tree) { c.Lineage = "" }),
		"no generation": mutate(func(c *Tree) { c.Generation = 0 }),
		"v1 lineage":    mutate(func(c *Tree) { c.Version = FormatVersion }),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A version-1 tree still decodes, its nodes keyed by index.
	v1, _ := base.Encode()
	back, err := Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range back.Nodes {
		if back.NodeKey(i) != i || back.NodeIndex(i) != i {
			t.Fatalf("v1 node %d: key %d, index %d", i, back.NodeKey(i), back.NodeIndex(i))
		}
	}
	if back.NodeIndex(len(back.Nodes)) != -1 || ext.NodeIndex(1<<30) != -1 {
		t.Fatal("NodeIndex of an unknown key")
	}
}
