package qdtree

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Extend returns a refinement of t in which the leaf of each ordinal l in
// splits becomes the root of the tree splits[l] (typically built by Build on
// that leaf's rows, with the same cut columns): the cuts above are kept, so
// every row routes to a leaf under the leaf it routed to in t.
//
// The result has version ExtendedVersion. Every node of t keeps its key (NodeKey)
// — a split leaf's key names the root of its subtree — and the new nodes get
// keys no earlier generation used, so a file that names a node of t still names
// a node of the result, covering the same rows. lineage names t's lineage when
// t is a version-1 tree (package optimize passes t's path); an extended t keeps
// its own. The new nodes' sample row counts (Node.Rows) are scaled so that each
// subtree's root counts what the leaf it replaces counted: shares of rows stay
// comparable across the whole tree. Internal nodes' Units become the sums of
// their leaves'.
//
// A split tree of one leaf changes nothing. Errors wrap ErrInvalidOptions (an
// unknown leaf ordinal, a split cutting a column t does not cut, an empty
// lineage) or ErrCorrupt (a malformed split tree).
func (t *Tree) Extend(splits map[int]*Tree, lineage string) (*Tree, error) {
	out := &Tree{Format: FormatName, Version: ExtendedVersion, Columns: append([]string(nil), t.Columns...),
		SampleRows: t.SampleRows, Tolerance: t.Tolerance, Robustness: t.Robustness,
		TrainingReadFraction: t.TrainingReadFraction, Workload: t.Workload,
		Lineage: t.Lineage, Generation: t.Generation + 1}
	if t.Version < ExtendedVersion {
		if lineage == "" {
			return nil, fmt.Errorf("%w: extending a version-%d tree needs its lineage", ErrInvalidOptions, t.Version)
		}
		out.Lineage = lineage
	}
	cols := map[string]bool{}
	for _, c := range t.Columns {
		cols[strings.ToLower(c)] = true
	}
	for l, s := range splits {
		if l < 0 || l >= t.Leaves {
			return nil, fmt.Errorf("%w: no leaf %d to split (%d leaves)", ErrInvalidOptions, l, t.Leaves)
		}
		if s == nil || len(s.Nodes) == 0 {
			return nil, fmt.Errorf("%w: split of leaf %d has no nodes", ErrCorrupt, l)
		}
		for _, c := range s.Columns {
			if !cols[strings.ToLower(c)] {
				return nil, fmt.Errorf("%w: split of leaf %d cuts %q, not a cut column of the tree (%s)", ErrInvalidOptions, l, c, strings.Join(t.Columns, ", "))
			}
		}
	}
	next := 0
	for i := range t.Nodes {
		next = max(next, t.NodeKey(i)+1)
	}
	leaf := 0
	// sub copies node si of split s (and its subtree) under key (-1: a fresh
	// key), scaling its row counts by scale; it returns the new node's index.
	var sub func(s *Tree, si, key int, scale float64) int
	sub = func(s *Tree, si, key int, scale float64) int {
		nd := s.Nodes[si]
		if key < 0 {
			key = next
			next++
		}
		idx := len(out.Nodes)
		out.Nodes = append(out.Nodes, Node{ID: idx, Key: key, Cut: nd.Cut, Leaf: -1, Units: nd.Units,
			Rows: int64(math.Round(float64(nd.Rows) * scale))})
		if nd.Leaf >= 0 || nd.Cut == "" {
			out.Nodes[idx].Cut, out.Nodes[idx].Leaf = "", leaf
			leaf++
			return idx
		}
		if nd.Left <= si || nd.Left >= len(s.Nodes) || nd.Right <= si || nd.Right >= len(s.Nodes) {
			return -1
		}
		l := sub(s, nd.Left, -1, scale)
		r := sub(s, nd.Right, -1, scale)
		if l < 0 || r < 0 {
			return -1
		}
		out.Nodes[idx].Left, out.Nodes[idx].Right = l, r
		out.Nodes[idx].Units = out.Nodes[l].Units + out.Nodes[r].Units
		return idx
	}
	var walk func(i int) int
	walk = func(i int) int {
		nd := t.Nodes[i]
		key := t.NodeKey(i)
		if nd.Leaf >= 0 {
			if s, ok := splits[nd.Leaf]; ok && s.Leaves > 1 {
				scale := float64(nd.Rows) / math.Max(float64(s.Nodes[0].Rows), 1)
				return sub(s, 0, key, scale)
			}
			idx := len(out.Nodes)
			out.Nodes = append(out.Nodes, Node{ID: idx, Key: key, Leaf: leaf, Units: nd.Units, Rows: nd.Rows})
			leaf++
			return idx
		}
		idx := len(out.Nodes)
		out.Nodes = append(out.Nodes, Node{ID: idx, Key: key, Cut: nd.Cut, Leaf: -1, Rows: nd.Rows})
		l := walk(nd.Left)
		r := walk(nd.Right)
		if l < 0 || r < 0 {
			return -1
		}
		out.Nodes[idx].Left, out.Nodes[idx].Right = l, r
		out.Nodes[idx].Units = out.Nodes[l].Units + out.Nodes[r].Units
		return idx
	}
	if walk(0) < 0 {
		return nil, fmt.Errorf("%w: a split tree's children do not follow their parent", ErrCorrupt)
	}
	out.Leaves = leaf
	// The round trip checks the structure and parses the cuts against the
	// tree's columns (a Router binds their values from the text).
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("qdtree: encoding the extended tree: %w", err)
	}
	return Decode(data)
}
