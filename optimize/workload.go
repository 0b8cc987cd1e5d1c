package optimize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/storage"
)

// The workload layout (CurveWorkload) writes one file (or, for a leaf larger
// than the target, several) per node of a tree of cuts (package qdtree) and
// persists the tree in a side file that every file it writes points to:
//
//	add.tags["skiplake.qdtree"]      = "_skiplake_layout/qdtree-<uuid>.json"
//	add.tags["skiplake.qdtree.node"] = "17"
//
// A plain Delta reader ignores the tags; statistics do the skipping. The tree
// file is written with put-if-absent before the commit that references it
// (like L2) and deleted with the commit's data files if the commit fails.
// VACUUM (package vacuum) treats it like a data file: it keeps a tree file that
// a live file or an unexpired tombstone names in its tags (so a tree stays
// readable for every version inside the retention window, the current one
// first) or that is younger than the retention, and deletes superseded ones.
// The table's metadata and protocol are not changed: no domain metadata, no
// writer-version upgrade.
const (
	// TagTree is the add-action tag naming the tree file (relative to the table
	// root) of a file written by the workload layout.
	TagTree = layout.TreeTag
	// TagTreeNode is the tag holding the file's node id in that tree: a leaf for
	// a file of a full build or of rows that filled a leaf, an internal node for
	// rows placed where their subtree fills a file.
	TagTreeNode = "skiplake.qdtree.node"
	// TagTreeWaiting marks ("true") a file of new rows waiting at an internal
	// node until its subtree holds about a file per leaf; a later run then
	// re-reads it and moves its rows down (once: what that run writes is not
	// waiting any more).
	TagTreeWaiting = "skiplake.qdtree.waiting"
	// TreeDir is the directory of tree files, relative to the table root.
	TreeDir = layout.TreeDir
)

// Tuning of incremental runs (see placeLeaves and NewPlan).
const (
	// nodeFill: new rows wait at the lowest node whose subtree has at least a
	// file's worth of them (this share of a file's rows), so runs write no small
	// files (except possibly one at the root).
	nodeFill = 1.0
	// leafFill: waiting rows are moved down once their subtree holds, on
	// average, at least this share of a file per leaf; a leaf with that much
	// gets a file of its own then.
	leafFill = 0.75
)

// TreeBin is the workload-layout work of one clustering bin.
type TreeBin struct {
	// Action is "build" (a new tree from Options.Workload, every file of the
	// partition rewritten) or "route" (new rows routed through the stored tree).
	Action string `json:"action"`
	// Tree is the stored tree's path ("route").
	Tree string `json:"tree,omitempty"`
	// NewFiles counts input files not yet laid out by the tree; PendingFiles the
	// files of rows waiting at an internal node that this run moves down.
	NewFiles     int `json:"newFiles"`
	PendingFiles int `json:"pendingFiles,omitempty"`
	// WaitingFiles counts files of waiting rows left where they are.
	WaitingFiles int `json:"waitingFiles,omitempty"`

	tree  *qdtree.Tree
	moved []int // roots of the subtrees whose waiting rows this run moves down
}

// treeRef is a file's tree tag.
type treeRef struct {
	path string
	node int
}

// fileTree returns a's tree tag, ok false when it has none (or a broken one).
func fileTree(a *log.Add) (treeRef, bool) {
	p, ok := a.Tags[TagTree]
	if !ok || p == "" {
		return treeRef{}, false
	}
	n, err := strconv.Atoi(a.Tags[TagTreeNode])
	if err != nil || n < 0 {
		return treeRef{}, false
	}
	return treeRef{path: p, node: n}, true
}

// currentTree returns the tree path that the most bytes of files are laid out
// by ("" if none).
func currentTree(files []*log.Add) string {
	bytes := map[string]int64{}
	for _, a := range files {
		if r, ok := fileTree(a); ok {
			bytes[r.path] += a.Size
		}
	}
	best := ""
	for p, b := range bytes {
		if best == "" || b > bytes[best] || (b == bytes[best] && p > best) {
			best = p
		}
	}
	return best
}

// loadTree reads and decodes a tree file.
func loadTree(ctx context.Context, store storage.Storage, p string) (*qdtree.Tree, error) {
	if path.IsAbs(p) || path.Clean(p) != p || len(p) < len(TreeDir) || p[:len(TreeDir)] != TreeDir {
		return nil, fmt.Errorf("%w: tree path %q is not under %s", ErrCorruptData, p, TreeDir)
	}
	data, err := store.Get(ctx, p)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: tree file %s is referenced by the log but missing: %w", ErrCorruptData, p, err)
		}
		return nil, fmt.Errorf("optimize: reading tree file %s: %w", p, err)
	}
	t, err := qdtree.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%w: tree file %s: %w", ErrCorruptData, p, err)
	}
	return t, nil
}

// newTreePath returns a fresh tree file path.
func newTreePath() string { return layout.TreeFile(uuid.New()) }

// workloadBins plans the workload layout of one partition (see NewPlan).
func (p *Plan) workloadBins(ctx context.Context, files []*log.Add) ([]*Bin, error) {
	cur := currentTree(files)
	if p.opts.Full || cur == "" {
		if p.opts.Workload == nil {
			if cur == "" {
				return nil, &InvalidOptionsError{Problems: []string{"the workload layout needs a workload to build its first tree (no file of the partition is laid out by one yet)"}}
			}
			return nil, &InvalidOptionsError{Problems: []string{"a full run builds a new workload tree and needs a workload"}}
		}
		b := newBin(KindCluster, sortedByPath(files))
		b.Layout = &TreeBin{Action: "build", NewFiles: len(files)}
		return []*Bin{b}, nil
	}
	t, ok := p.trees[cur]
	if !ok {
		var err error
		if t, err = loadTree(ctx, p.store, cur); err != nil {
			return nil, err
		}
		p.trees[cur] = t
	}
	var fresh []*log.Add
	pending := map[int][]*log.Add{}
	var freshBytes, freshRows int64
	var laidBytes, laidRows int64
	for _, a := range files {
		r, ok := fileTree(a)
		n, _ := a.NumRecords()
		switch {
		case !ok || r.path != cur || r.node >= len(t.Nodes):
			fresh = append(fresh, a)
			freshBytes += a.Size
			freshRows += n
		case a.Tags[TagTreeWaiting] == "true":
			pending[r.node] = append(pending[r.node], a)
			laidBytes += a.Size
			laidRows += n
		default:
			p.FinishedCubeFiles++
			laidBytes += a.Size
			laidRows += n
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	// Rows per file at the target size, from the table's own bytes per row.
	perRow := float64(laidBytes+freshBytes) / math.Max(float64(laidRows+freshRows), 1)
	fileRows := float64(p.opts.TargetFileSize) / math.Max(perRow, 1e-9)
	sel, roots := selectPending(t, pending, float64(freshRows), fileRows)
	in := append([]*log.Add(nil), fresh...)
	tb := &TreeBin{Action: "route", Tree: cur, NewFiles: len(fresh), tree: t, moved: roots}
	for node, adds := range pending {
		if sel[node] {
			in = append(in, adds...)
			tb.PendingFiles += len(adds)
		} else {
			tb.WaitingFiles += len(adds)
		}
	}
	b := newBin(KindCluster, sortedByPath(in))
	b.Layout = tb
	return []*Bin{b}, nil
}

func sortedByPath(files []*log.Add) []*log.Add {
	out := append([]*log.Add(nil), files...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// selectPending chooses the internal nodes whose waiting files a run re-reads:
// the highest nodes under which the waiting rows plus the new rows (estimated
// by the share of the tree's sample rows under the node) give every leaf at
// least leafFill of a file. Their waiting rows then move down to the leaves. It
// returns the nodes with waiting files to re-read and the roots of the chosen
// subtrees.
func selectPending(t *qdtree.Tree, pending map[int][]*log.Add, newRows, fileRows float64) (map[int]bool, []int) {
	sel := map[int]bool{}
	var roots []int
	if len(pending) == 0 {
		return sel, nil
	}
	waiting := make([]float64, len(t.Nodes)) // rows waiting at the node itself
	for node, adds := range pending {
		for _, a := range adds {
			n, _ := a.NumRecords()
			waiting[node] += float64(n)
		}
	}
	// Subtree sums in reverse preorder (children after parents in preorder).
	under := append([]float64(nil), waiting...)
	for i := len(t.Nodes) - 1; i >= 0; i-- {
		nd := t.Nodes[i]
		if nd.Leaf < 0 {
			under[i] += under[nd.Left] + under[nd.Right]
		}
	}
	root := float64(max(t.Nodes[0].Rows, 1))
	var visit func(id int)
	mark := func(id int) {
		var walk func(int)
		walk = func(n int) {
			if waiting[n] > 0 {
				sel[n] = true
			}
			if nd := t.Nodes[n]; nd.Leaf < 0 {
				walk(nd.Left)
				walk(nd.Right)
			}
		}
		walk(id)
	}
	visit = func(id int) {
		nd := t.Nodes[id]
		if under[id] == 0 || nd.Leaf >= 0 {
			return
		}
		first, end := t.LeafRange(id)
		leaves := float64(end - first)
		estNew := newRows * float64(nd.Rows) / root
		if under[id]+estNew >= leafFill*fileRows*leaves {
			mark(id)
			roots = append(roots, id)
			return
		}
		visit(nd.Left)
		visit(nd.Right)
	}
	visit(0)
	return sel, roots
}

// placeLeaves decides where the rows of each leaf are written: at the leaf when
// it has at least leafRows(leaf) rows, else at the lowest ancestor whose
// unplaced rows reach nodeFill of a file's rows, else at the root. It returns
// the destination node id of every leaf ordinal (-1 for a leaf without rows).
func placeLeaves(t *qdtree.Tree, counts []int64, fileRows float64, leafRows func(leaf int) float64) []int {
	dest := make([]int, t.Leaves)
	for i := range dest {
		dest[i] = -1
	}
	var place func(id int) (leaves []int, rows int64)
	place = func(id int) ([]int, int64) {
		nd := t.Nodes[id]
		var un []int
		var rows int64
		if nd.Leaf >= 0 {
			if counts[nd.Leaf] == 0 {
				return nil, 0
			}
			if float64(counts[nd.Leaf]) >= leafRows(nd.Leaf) {
				dest[nd.Leaf] = id
				return nil, 0
			}
			un, rows = []int{nd.Leaf}, counts[nd.Leaf]
		} else {
			l, lr := place(nd.Left)
			r, rr := place(nd.Right)
			un, rows = append(l, r...), lr+rr
		}
		if rows > 0 && (float64(rows) >= nodeFill*fileRows || id == 0) {
			for _, leaf := range un {
				dest[leaf] = id
			}
			return nil, 0
		}
		return un, rows
	}
	place(0)
	return dest
}

// drift compares Options.Workload with the training workload of the tree the
// partition's files are laid out by (nil when either is missing).
func (p *Plan) drift(files []*log.Add) (*qdtree.Drift, error) {
	cur := currentTree(files)
	t := p.trees[cur]
	if p.opts.Workload == nil || t == nil || t.Workload == nil {
		return nil, nil
	}
	d, err := t.Drift(p.opts.Workload, p.logical)
	if err != nil {
		return nil, fmt.Errorf("optimize: tree %s: %w", cur, err)
	}
	return d, nil
}

// discardTrees deletes the tree files stored for results that were not
// committed (best effort, like Output.Discard).
func (p *Plan) discardTrees(results []*binResult) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range results {
		if r == nil {
			continue
		}
		for _, t := range r.trees {
			_ = p.store.Delete(ctx, t)
		}
	}
}

// workloadTrees lists the tree files a commit's workload bins wrote or routed
// through, for commitInfo.
func workloadTrees(items []workItem, results []*binResult) []string {
	var out []string
	for _, it := range items {
		if l := it.bin.Layout; l != nil && l.Tree != "" {
			out = append(out, l.Tree)
		}
	}
	for _, r := range results {
		out = append(out, r.trees...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CurrentTree returns the workload tree most of the given files' bytes are laid
// out by (files of one partition, say), its path, or "" and nil when none of them
// carries a tree tag. Errors wrap ErrCorruptData when the tree file is missing
// or broken.
func CurrentTree(ctx context.Context, store storage.Storage, files []*log.Add) (string, *qdtree.Tree, error) {
	p := currentTree(files)
	if p == "" {
		return "", nil, nil
	}
	t, err := loadTree(ctx, store, p)
	if err != nil {
		return "", nil, err
	}
	return p, t, nil
}
