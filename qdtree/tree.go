package qdtree

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/rank"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// The persisted form.
const (
	// FormatName is the "format" field of an encoded tree.
	FormatName = "skiplake.qdtree"
	// FormatVersion is the version Build writes: nodes are named by their index.
	FormatVersion = 1
	// ExtendedVersion is the version Extend writes: a refinement of an earlier
	// tree whose nodes carry stable keys (Node.Key), so that files laid out by an
	// earlier tree of the same lineage still name their node. Decode reads both.
	ExtendedVersion = 2
)

// Tree is a binary tree of cuts over the rows of a table. Every internal node
// has a cut: rows whose value on the cut column is below the cut value (or at
// most it, for an inclusive cut), and NULLs, go left; the others go right. Its
// leaves, in order, are the files of the layout.
//
// A Tree is plain data (JSON via Encode and Decode); Router binds it to a schema
// for routing rows. It is immutable once built and safe for concurrent reads.
type Tree struct {
	// Format and Version identify the encoding (FormatName, FormatVersion).
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Columns are the cut columns (top-level names as the schema spells them).
	Columns []string `json:"columns"`
	// Leaves is the number of leaves.
	Leaves int `json:"leaves"`
	// SampleRows is the number of rows the tree was built from.
	SampleRows int64 `json:"sampleRows"`
	// Tolerance and Robustness are the options it was built with.
	Tolerance  float64 `json:"tolerance"`
	Robustness float64 `json:"robustness,omitempty"`
	// TrainingReadFraction is the weighted share of the sample's rows that the
	// training workload reads on the leaves (each leaf judged by the minimum and
	// maximum of its rows): the prediction Drift compares later workloads with.
	TrainingReadFraction float64 `json:"trainingReadFraction"`
	// Workload is the training workload.
	Workload *Training `json:"workload,omitempty"`
	// Lineage and Generation (ExtendedVersion only) identify the tree this one
	// refines: Lineage names the first tree of the chain (package optimize: its
	// path), whose node keys every later generation keeps; Generation counts the
	// extensions since (1 for the first).
	Lineage    string `json:"lineage,omitempty"`
	Generation int    `json:"generation,omitempty"`
	// Nodes in preorder: Nodes[0] is the root, a node's left child is the next
	// node, and leaves appear in leaf order.
	Nodes []Node `json:"nodes"`
}

// Training is the workload a tree was built for.
type Training struct {
	// Fingerprint is workload.Workload.Fingerprint of the training workload.
	Fingerprint string `json:"fingerprint"`
	// Queries are its filters and weights.
	Queries []workload.Query `json:"queries"`
}

// Node is one node of a Tree.
type Node struct {
	// ID is the node's index in Tree.Nodes.
	ID int `json:"id"`
	// Key names the node across the generations of a lineage (ExtendedVersion;
	// the root is 0). A version-1 tree keys its nodes by ID (see NodeKey).
	Key int `json:"key,omitempty"`
	// Cut is the cut of an internal node in the filter grammar: rows for which it
	// is TRUE go left ("c < v", "c <= v" or "c IS NULL"). Empty for leaves.
	Cut string `json:"cut,omitempty"`
	// Left and Right are the children of an internal node.
	Left  int `json:"left,omitempty"`
	Right int `json:"right,omitempty"`
	// Leaf is the leaf ordinal of a leaf (0..Leaves-1, in order), -1 for
	// internal nodes.
	Leaf int `json:"leaf"`
	// Units is how many files' worth of rows the node was given.
	Units int `json:"units"`
	// Rows is the number of sample rows in the node.
	Rows int64 `json:"rows"`

	cut cut
}

// cut is a node's cut on values.
type cut struct {
	col       int
	val       value.Value
	inclusive bool
	isNull    bool
}

// String renders the cut in the filter grammar on column name.
func (c cut) String(name string) string {
	col := expr.QuoteName(name)
	switch {
	case c.isNull:
		return col + " IS NULL"
	case c.inclusive:
		return col + " <= " + expr.FormatValue(c.val)
	}
	return col + " < " + expr.FormatValue(c.val)
}

// Encode returns the tree as indented JSON.
func (t *Tree) Encode() ([]byte, error) {
	return json.MarshalIndent(t, "", " ")
}

// Decode parses and checks an encoded tree: format and version, node ids in
// preorder, children after their parent, leaves numbered in order, cuts that
// parse as a comparison of a cut column with a literal. Errors wrap ErrCorrupt.
func Decode(data []byte) (*Tree, error) {
	var t Tree
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if t.Format != FormatName {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrCorrupt, t.Format, FormatName)
	}
	if t.Version != FormatVersion && t.Version != ExtendedVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads versions %d and %d", ErrCorrupt, t.Version, FormatVersion, ExtendedVersion)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return &t, nil
}

// check validates the structure of a decoded tree and parses the cut columns.
func (t *Tree) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	if len(t.Nodes) == 0 {
		return bad("no nodes")
	}
	if len(t.Columns) == 0 {
		return bad("no cut columns")
	}
	leaf := 0
	// Walk in preorder; every node must be reached exactly once.
	var walk func(id, depth int) (int, error)
	walk = func(id, depth int) (int, error) {
		if depth > len(t.Nodes) {
			return 0, bad("the tree is deeper than it has nodes")
		}
		nd := &t.Nodes[id]
		if nd.ID != id {
			return 0, bad("node %d has id %d", id, nd.ID)
		}
		if nd.Units < 1 {
			return 0, bad("node %d has %d units", id, nd.Units)
		}
		if nd.Cut == "" {
			if nd.Leaf != leaf {
				return 0, bad("leaf node %d has ordinal %d, want %d", id, nd.Leaf, leaf)
			}
			leaf++
			return id + 1, nil
		}
		if nd.Leaf != -1 {
			return 0, bad("internal node %d has leaf ordinal %d", id, nd.Leaf)
		}
		if nd.Left != id+1 {
			return 0, bad("node %d: left child %d, want %d (preorder)", id, nd.Left, id+1)
		}
		c, err := parseCutColumn(nd.Cut, t.Columns)
		if err != nil {
			return 0, bad("node %d: %v", id, err)
		}
		nd.cut.col = c
		next, err := walk(nd.Left, depth+1)
		if err != nil {
			return 0, err
		}
		if nd.Right != next || next >= len(t.Nodes) {
			return 0, bad("node %d: right child %d, want %d (preorder)", id, nd.Right, next)
		}
		return walk(nd.Right, depth+1)
	}
	end, err := walk(0, 0)
	if err != nil {
		return err
	}
	if end != len(t.Nodes) {
		return bad("%d nodes, %d reachable", len(t.Nodes), end)
	}
	if leaf != t.Leaves {
		return bad("%d leaves, header says %d", leaf, t.Leaves)
	}
	if t.Version < ExtendedVersion {
		if t.Lineage != "" || t.Generation != 0 {
			return bad("a version %d tree with a lineage", t.Version)
		}
		return nil
	}
	if t.Lineage == "" || t.Generation < 1 {
		return bad("an extended tree without its lineage (%q, generation %d)", t.Lineage, t.Generation)
	}
	if t.Nodes[0].Key != 0 {
		return bad("root key %d, want 0", t.Nodes[0].Key)
	}
	keys := make(map[int]bool, len(t.Nodes))
	for i, nd := range t.Nodes {
		if nd.Key < 0 || keys[nd.Key] {
			return bad("node %d: key %d is negative or repeated", i, nd.Key)
		}
		keys[nd.Key] = true
	}
	return nil
}

// NodeKey returns the key of the node at index i: what a file laid out by the
// tree names it by. Version-1 trees key nodes by index.
func (t *Tree) NodeKey(i int) int {
	if t.Version < ExtendedVersion {
		return i
	}
	return t.Nodes[i].Key
}

// NodeIndex returns the index of the node with key k, or -1.
func (t *Tree) NodeIndex(k int) int {
	if t.Version < ExtendedVersion {
		if k >= 0 && k < len(t.Nodes) {
			return k
		}
		return -1
	}
	for i := range t.Nodes {
		if t.Nodes[i].Key == k {
			return i
		}
	}
	return -1
}

// parseCutColumn checks the shape of a cut and returns its column's index.
func parseCutColumn(text string, cols []string) (int, error) {
	e, err := expr.Parse(text)
	if err != nil {
		return 0, err
	}
	var ref *expr.ColumnRef
	switch x := e.(type) {
	case *expr.Comparison:
		r, ok := x.Left.(*expr.ColumnRef)
		_, lit := x.Right.(*expr.Literal)
		if !ok || !lit || (x.Op != expr.OpLt && x.Op != expr.OpLe) {
			return 0, fmt.Errorf("cut %q is not `column < literal` or `column <= literal`", text)
		}
		ref = r
	case *expr.IsNullExpr:
		r, ok := x.Value.(*expr.ColumnRef)
		if !ok || x.Negated {
			return 0, fmt.Errorf("cut %q is not `column IS NULL`", text)
		}
		ref = r
	default:
		return 0, fmt.Errorf("cut %q is not a comparison", text)
	}
	if len(ref.Path) != 1 {
		return 0, fmt.Errorf("cut %q is on a nested column", text)
	}
	for i, c := range cols {
		if c == ref.Path[0] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("cut %q is on %q, not a cut column (%s)", text, ref.Path[0], strings.Join(cols, ", "))
}

// LeafNode returns the node id of leaf ordinal leaf.
func (t *Tree) LeafNode(leaf int) int {
	for i := range t.Nodes {
		if t.Nodes[i].Leaf == leaf {
			return i
		}
	}
	return -1
}

// Parents returns the parent of every node (-1 for the root).
func (t *Tree) Parents() []int {
	p := make([]int, len(t.Nodes))
	p[0] = -1
	for i, nd := range t.Nodes {
		if nd.Leaf < 0 {
			p[nd.Left], p[nd.Right] = i, i
		}
	}
	return p
}

// LeafRange returns the leaf ordinals [first, end) under node id.
func (t *Tree) LeafRange(id int) (first, end int) {
	// Preorder: the subtree of id is the contiguous node range up to the next
	// node that is not a descendant; its leaves are contiguous too.
	first = -1
	stack := []int{id}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := &t.Nodes[n]
		if nd.Leaf >= 0 {
			if first < 0 || nd.Leaf < first {
				first = nd.Leaf
			}
			end = max(end, nd.Leaf+1)
			continue
		}
		stack = append(stack, nd.Right, nd.Left)
	}
	return first, end
}

// Router routes rows of Arrow batches to the leaves of a tree. It is immutable
// and safe for concurrent use.
type Router struct {
	t      *Tree
	fields []arrow.Field // cut columns as the schema has them
	pts    []*rank.Points
	thr    []uint32 // per node: left when slot < thr
}

// Router binds the tree's cuts to schema (each cut column must be a top-level
// field; cut literals are coerced to its type as filters are) and returns a
// Router. Errors wrap ErrSchema.
func (t *Tree) Router(schema *arrow.Schema) (*Router, error) {
	r := &Router{t: t, thr: make([]uint32, len(t.Nodes))}
	for _, name := range t.Columns {
		i := fieldIndex(schema, name)
		if i < 0 {
			return nil, fmt.Errorf("%w: cut column %q is not in the schema", ErrSchema, name)
		}
		f := schema.Field(i)
		if !Cuttable(f.Type) {
			return nil, fmt.Errorf("%w: cut column %q has type %s", ErrSchema, name, value.DisplayType(f.Type))
		}
		r.fields = append(r.fields, f)
	}
	cuts := make([]cut, len(t.Nodes))
	vals := make([][]value.Value, len(t.Columns))
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		if nd.Leaf >= 0 {
			continue
		}
		c := nd.cut
		if c.val.IsNull() && !c.isNull {
			// Decoded: bind the text to learn the typed value.
			var err error
			if c, err = bindCut(nd.Cut, nd.cut.col, schema); err != nil {
				return nil, fmt.Errorf("%w: node %d: %v", ErrSchema, i, err)
			}
		}
		cuts[i] = c
		if !c.isNull {
			vals[c.col] = append(vals[c.col], c.val)
		}
	}
	for ci, f := range r.fields {
		p, err := rank.NewPoints(f.Type, vals[ci])
		if err != nil {
			return nil, fmt.Errorf("%w: cut column %q: %v", ErrSchema, f.Name, err)
		}
		r.pts = append(r.pts, p)
	}
	for i, c := range cuts {
		if t.Nodes[i].Leaf >= 0 {
			continue
		}
		if c.isNull {
			r.thr[i] = 1
			continue
		}
		s, err := r.pts[c.col].Slot(c.val)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %v", ErrSchema, i, err)
		}
		if c.inclusive {
			s++
		}
		r.thr[i] = s
	}
	return r, nil
}

func fieldIndex(schema *arrow.Schema, name string) int {
	if ix := schema.FieldIndices(name); len(ix) > 0 {
		return ix[0]
	}
	for i, f := range schema.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// bindCut binds a decoded cut's text to schema.
func bindCut(text string, col int, schema *arrow.Schema) (cut, error) {
	e, err := expr.Parse(text)
	if err != nil {
		return cut{}, err
	}
	b, err := expr.Bind(e, schema)
	if err != nil {
		return cut{}, err
	}
	switch p := b.Root().(type) {
	case *expr.CmpPred:
		if p.Op == expr.OpLt || p.Op == expr.OpLe {
			return cut{col: col, val: p.Value, inclusive: p.Op == expr.OpLe}, nil
		}
	case *expr.NullPred:
		if !p.Negated {
			return cut{col: col, isNull: true}, nil
		}
	}
	return cut{}, fmt.Errorf("cut %q does not bind to a comparison of its column with a value of its type (bound: %s)", text, b)
}

// Tree returns the routed tree.
func (r *Router) Tree() *Tree { return r.t }

// Columns returns the cut columns' fields, in Tree.Columns order.
func (r *Router) Columns() []arrow.Field { return r.fields }

// Route writes the leaf ordinal of every row of rec into out (len(out) ==
// rec.NumRows()). rec must hold every cut column (by name, case-insensitively)
// with the type the Router was bound to.
func (r *Router) Route(rec arrow.RecordBatch, out []int32) error {
	cols := make([]arrow.Array, len(r.fields))
	for i, f := range r.fields {
		j := fieldIndex(rec.Schema(), f.Name)
		if j < 0 {
			return fmt.Errorf("%w: batch lacks cut column %q", ErrSchema, f.Name)
		}
		cols[i] = rec.Column(j)
	}
	return r.RouteColumns(cols, out)
}

// RouteColumns is Route for the cut columns given as arrays, in Tree.Columns
// order.
func (r *Router) RouteColumns(cols []arrow.Array, out []int32) error {
	if len(cols) != len(r.fields) {
		return fmt.Errorf("%w: %d columns for %d cut columns", ErrSchema, len(cols), len(r.fields))
	}
	n := len(out)
	slots := make([][]uint32, len(cols))
	for i, a := range cols {
		if a.Len() != n {
			return fmt.Errorf("%w: column %q has %d rows, want %d", ErrSchema, r.fields[i].Name, a.Len(), n)
		}
		slots[i] = make([]uint32, n)
		if err := r.pts[i].Slots(a, slots[i]); err != nil {
			return fmt.Errorf("%w: column %q: %v", ErrSchema, r.fields[i].Name, err)
		}
	}
	nodes := r.t.Nodes
	for row := range out {
		id := 0
		for nodes[id].Leaf < 0 {
			nd := &nodes[id]
			if slots[nd.cut.col][row] < r.thr[id] {
				id = nd.Left
			} else {
				id = nd.Right
			}
		}
		out[row] = int32(nodes[id].Leaf)
	}
	return nil
}
