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
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
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
	// TagTreeNode is the tag holding the file's node key in that tree
	// (qdtree.Tree.NodeKey; the node's index in a version-1 tree): a leaf for a
	// file of a build or a re-split, an internal node for rows waiting there.
	TagTreeNode = "skiplake.qdtree.node"
	// TagTreeWaiting marks ("true") a file of rows waiting at an internal node
	// (rows a new file's statistics placed too low, or written by an earlier
	// scheme that moved new rows to nodes at once) until its subtree is
	// re-split; that run re-reads it and writes its rows at leaves.
	TagTreeWaiting = "skiplake.qdtree.waiting"
	// TreeDir is the directory of tree files, relative to the table root.
	TreeDir = layout.TreeDir
)

// Tuning of incremental runs (see selectResplit and placeLeaves).
const (
	// nodeFill: new rows wait at the lowest node whose subtree has at least a
	// file's worth of them (this share of a file's rows), so runs write no small
	// files (except possibly one at the root).
	nodeFill = 1.0
	// resplitFill: a subtree is re-split — its laid-out and waiting files read
	// with the new files at home in it, each leaf cut anew into about a file per
	// file's worth of its rows (the stored tree extended below it) — once its
	// new rows reach this share of the rows laid out in it: once it has about
	// doubled.
	resplitFill = 0.95
)

// TreeBin is the workload-layout work of one clustering bin.
type TreeBin struct {
	// Action is "build" (a new tree from Options.Workload, every file of the
	// partition rewritten) or "route" (new rows routed through the stored tree).
	Action string `json:"action"`
	// Tree is the stored tree's path ("route").
	Tree string `json:"tree,omitempty"`
	// NewFiles counts input files not yet laid out by the tree; PendingFiles the
	// files of rows waiting at an internal node that this run re-reads (they lie
	// in a subtree it re-splits).
	NewFiles     int `json:"newFiles"`
	PendingFiles int `json:"pendingFiles,omitempty"`
	// WaitingFiles counts files of waiting rows left where they are, NewWaiting
	// the new files left waiting at their home (a subtree not yet due).
	WaitingFiles int `json:"waitingFiles,omitempty"`
	NewWaiting   int `json:"newWaiting,omitempty"`
	// Resplit counts the subtrees this run re-splits and ResplitFiles the files
	// laid out under them (at leaves, or final at an internal node) it rewrites.
	Resplit      int `json:"resplit,omitempty"`
	ResplitFiles int `json:"resplitFiles,omitempty"`

	tree     *qdtree.Tree
	resplit  []int     // indexes (in tree) of the roots of the subtrees to re-split
	unitRows []float64 // per root: laid-out rows per unit of its leaves (0: none)
}

// treeRef is a file's tree tag.
type treeRef struct {
	path string
	node int // the node's key (qdtree.Tree.NodeKey)
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

// layoutTrees is the tree a partition's files are laid out by. A re-split
// stores a new generation of the tree (qdtree.Tree.Extend) and tags only the
// files it writes with it; files laid out earlier keep naming an earlier
// generation of the same lineage, whose node keys the new one keeps.
type layoutTrees struct {
	// path and tree are the newest generation of the lineage that lays out the
	// most bytes ("" and nil when no file carries a tree tag).
	path    string
	tree    *qdtree.Tree
	lineage string
	index   map[int]int       // node key → index in tree
	lin     map[string]string // tree path → lineage
}

// lineageOf is the lineage of the tree stored at path p.
func lineageOf(p string, t *qdtree.Tree) string {
	if t.Lineage != "" {
		return t.Lineage
	}
	return p
}

// resolveTrees loads the trees the files' tags name (through load) and picks
// the lineage laying out the most bytes and its newest generation.
func resolveTrees(files []*log.Add, load func(p string) (*qdtree.Tree, error)) (*layoutTrees, error) {
	bytes := map[string]int64{}
	for _, a := range files {
		if r, ok := fileTree(a); ok {
			bytes[r.path] += a.Size
		}
	}
	lt := &layoutTrees{lin: map[string]string{}}
	paths := make([]string, 0, len(bytes))
	for p := range bytes {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	linBytes := map[string]int64{}
	trees := map[string]*qdtree.Tree{}
	for _, p := range paths {
		t, err := load(p)
		if err != nil {
			return nil, err
		}
		trees[p] = t
		lt.lin[p] = lineageOf(p, t)
		linBytes[lt.lin[p]] += bytes[p]
	}
	for l, b := range linBytes {
		if lt.lineage == "" || b > linBytes[lt.lineage] || (b == linBytes[lt.lineage] && l > lt.lineage) {
			lt.lineage = l
		}
	}
	for _, p := range paths {
		t := trees[p]
		if lt.lin[p] != lt.lineage {
			continue
		}
		if lt.tree == nil || t.Generation > lt.tree.Generation || (t.Generation == lt.tree.Generation && p > lt.path) {
			lt.path, lt.tree = p, t
		}
	}
	if lt.tree != nil {
		lt.index = make(map[int]int, len(lt.tree.Nodes))
		for i := range lt.tree.Nodes {
			lt.index[lt.tree.NodeKey(i)] = i
		}
	}
	return lt, nil
}

// node returns the index in lt.tree of the node a file is laid out at, ok false
// for a file that the current lineage does not lay out (a new file).
func (lt *layoutTrees) node(a *log.Add) (int, bool) {
	r, ok := fileTree(a)
	if !ok || lt.tree == nil || lt.lin[r.path] != lt.lineage {
		return 0, false
	}
	i, ok := lt.index[r.node]
	return i, ok
}

// loadTree reads and decodes a tree file.
func loadTree(ctx context.Context, store storage.Storage, p string) (*qdtree.Tree, error) {
	if path.IsAbs(p) || path.Clean(p) != p || len(p) < len(TreeDir) || p[:len(TreeDir)] != TreeDir {
		return nil, fmt.Errorf("%w: tree path %q is not under %s", ErrCorruptLayoutTree, p, TreeDir)
	}
	data, err := store.Get(ctx, p)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is referenced by the log but missing: %w", ErrCorruptLayoutTree, p, err)
		}
		return nil, fmt.Errorf("optimize: reading tree file %s: %w", p, err)
	}
	t, err := qdtree.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptLayoutTree, p, err)
	}
	return t, nil
}

// newTreePath returns a fresh tree file path.
func newTreePath() string { return layout.TreeFile(uuid.New()) }

// layoutTrees resolves the trees of a partition's files, through the plan's
// cache of loaded trees.
func (p *Plan) layoutTrees(ctx context.Context, files []*log.Add) (*layoutTrees, error) {
	return resolveTrees(files, func(path string) (*qdtree.Tree, error) {
		if t, ok := p.trees[path]; ok {
			return t, nil
		}
		t, err := loadTree(ctx, p.store, path)
		if err == nil {
			p.trees[path] = t
		}
		return t, err
	})
}

// workloadBins plans the workload layout of one partition (see NewPlan).
//
// An incremental run leaves a new file where it is, waiting at its home: the
// lowest node of the newest generation of the stored tree whose subtree holds
// all its rows by its statistics (fileHomes). A subtree whose new rows — of
// waiting files and new files at home in it — reach resplitFill times the rows
// laid out in it (it has about doubled) is re-split (selectResplit): those
// files are read with the laid-out ones, each of its leaves with two or more
// files' worth of rows is cut anew by a tree built on its rows for the stored
// training workload (extending the stored tree below it), and every row is
// written at its leaf. So an appended row is written once more, at its leaf,
// and a laid-out row once per doubling of its subtree:
// with appends included, about three bytes written per byte appended. Files
// waiting above a re-split subtree stay where they are; rows a new file's
// statistics misplace (or that files of an earlier scheme left waiting at an
// internal node) wait at the lowest node whose subtree gathers a file's worth
// of them (placeLeaves), tagged TagTreeWaiting, until their subtree is
// re-split.
func (p *Plan) workloadBins(ctx context.Context, files []*log.Add) ([]*Bin, error) {
	lt, err := p.layoutTrees(ctx, files)
	if err != nil {
		return nil, err
	}
	if p.opts.Full || lt.tree == nil {
		if p.opts.Workload == nil {
			if lt.tree == nil {
				return nil, &InvalidOptionsError{Problems: []string{"the workload layout needs a workload to build its first tree (no file of the partition is laid out by one yet)"}}
			}
			return nil, &InvalidOptionsError{Problems: []string{"a full run builds a new workload tree and needs a workload"}}
		}
		b := newBin(KindCluster, sortedByPath(files))
		b.Layout = &TreeBin{Action: "build", NewFiles: len(files)}
		return []*Bin{b}, nil
	}
	t := lt.tree
	homes, err := p.fileHomes(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", lt.path, err) // the errors name the cut, this the file
	}
	placed := make([][]*log.Add, len(t.Nodes))
	fresh := make([][]*log.Add, len(t.Nodes))
	laidAt := make([]float64, len(t.Nodes))
	newAt := make([]float64, len(t.Nodes))
	var bytes, rows int64
	var uncounted []*log.Add // new files whose statistics give no row count
	for _, a := range files {
		n, ok := a.NumRecords()
		if !ok || n <= 0 {
			if _, ok := lt.node(a); !ok && a.Size > 0 {
				uncounted = append(uncounted, a)
				h := homes(a)
				fresh[h] = append(fresh[h], a)
				continue
			}
		}
		bytes += a.Size
		rows += n
		if i, ok := lt.node(a); ok {
			placed[i] = append(placed[i], a)
			if a.Tags[TagTreeWaiting] == "true" {
				newAt[i] += float64(n)
			} else {
				laidAt[i] += float64(n)
			}
			continue
		}
		h := homes(a)
		fresh[h] = append(fresh[h], a)
		newAt[h] += float64(n)
	}
	// Rows per file at the target size, from the table's own bytes per row; a new
	// file without a row count counts its bytes' worth of rows.
	perRow := float64(bytes) / math.Max(float64(rows), 1)
	if rows == 0 {
		perRow = 1
	}
	for _, a := range uncounted {
		newAt[homes(a)] += float64(a.Size) / math.Max(perRow, 1e-9)
	}
	fileRows := float64(p.opts.TargetFileSize) / math.Max(perRow, 1e-9)
	roots := selectResplit(t, laidAt, newAt, fileRows)
	if len(roots) == 0 {
		return nil, nil
	}
	tb := &TreeBin{Action: "route", Tree: lt.path, tree: t, resplit: roots, Resplit: len(roots)}
	// Leaves are cut into leaves of the size their subtree was laid out with.
	laidUnder := subtreeSums(t, laidAt)
	inResplit := make([]bool, len(t.Nodes))
	for _, r := range roots {
		markSubtree(t, r, inResplit)
		tb.unitRows = append(tb.unitRows, laidUnder[r]/float64(max(t.Nodes[r].Units, 1)))
	}
	var in []*log.Add
	for i := range t.Nodes {
		if !inResplit[i] {
			tb.NewWaiting += len(fresh[i])
			for _, a := range placed[i] {
				if a.Tags[TagTreeWaiting] == "true" {
					tb.WaitingFiles++
				} else {
					p.FinishedCubeFiles++
				}
			}
			continue
		}
		in = append(in, fresh[i]...)
		tb.NewFiles += len(fresh[i])
		for _, a := range placed[i] {
			in = append(in, a)
			if a.Tags[TagTreeWaiting] == "true" {
				tb.PendingFiles++
			} else {
				tb.ResplitFiles++
			}
		}
	}
	b := newBin(KindCluster, sortedByPath(in))
	b.Layout = tb
	return []*Bin{b}, nil
}

// fileHomes returns a function giving the home of a file in t: the index of the
// lowest node whose subtree holds all the file's rows by its statistics (each
// cut's two sides tested as filters on them, as a reader skips files). A file
// without usable statistics is at home at the root.
func (p *Plan) fileHomes(t *qdtree.Tree) (func(a *log.Add) int, error) {
	fields := make([]arrow.Field, p.dataSch.NumFields())
	for i, f := range p.dataSch.Fields() {
		f.Name = p.physData[i]
		fields[i] = f
	}
	phys := arrow.NewSchema(fields, nil)
	left := make([]*expr.Bound, len(t.Nodes))
	right := make([]*expr.Bound, len(t.Nodes))
	for i, nd := range t.Nodes {
		if nd.Leaf >= 0 {
			continue
		}
		e, err := expr.Parse(nd.Cut)
		if err != nil {
			return nil, fmt.Errorf("%w: a cut of the stored tree: %w", ErrCorruptLayoutTree, err)
		}
		var ref *expr.ColumnRef
		switch x := e.(type) {
		case *expr.Comparison:
			ref, _ = x.Left.(*expr.ColumnRef)
		case *expr.IsNullExpr:
			ref, _ = x.Value.(*expr.ColumnRef)
		}
		if ref == nil || len(ref.Path) != 1 || !strings.HasPrefix(nd.Cut, expr.QuoteName(ref.Path[0])) {
			return nil, fmt.Errorf("%w: cut %q of the stored tree is not on a column", ErrCorruptLayoutTree, nd.Cut)
		}
		c := fieldIndexFold(p.dataSch, ref.Path[0])
		if c < 0 {
			return nil, fmt.Errorf("%w: tree column %q is not a data column of the table", ErrCorruptLayoutTree, ref.Path[0])
		}
		col := expr.QuoteName(p.physData[c])
		cut := col + strings.TrimPrefix(nd.Cut, expr.QuoteName(ref.Path[0]))
		// NULLs go left.
		for _, side := range []struct {
			text string
			out  []*expr.Bound
		}{{"(" + cut + ") OR " + col + " IS NULL", left}, {"NOT (" + cut + ")", right}} {
			e, err := expr.Parse(side.text)
			if err == nil {
				side.out[i], err = expr.Bind(e, phys)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: cut %q of the stored tree: %w", ErrCorruptLayoutTree, nd.Cut, err)
			}
		}
	}
	return func(a *log.Add) int {
		if a.Stats == "" {
			return 0
		}
		st, err := stats.Parse(a.Stats, phys)
		if err != nil {
			return 0
		}
		id := 0
		for t.Nodes[id].Leaf < 0 {
			l := skipping.EvaluateFile(left[id], st, nil, nil) != skipping.CannotMatch
			r := skipping.EvaluateFile(right[id], st, nil, nil) != skipping.CannotMatch
			switch {
			case l && !r:
				id = t.Nodes[id].Left
			case r && !l:
				id = t.Nodes[id].Right
			default:
				return id
			}
		}
		return id
	}, nil
}

func sortedByPath(files []*log.Add) []*log.Add {
	out := append([]*log.Add(nil), files...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// subtreeSums returns, for every node index, the sum of at over its subtree.
func subtreeSums(t *qdtree.Tree, at []float64) []float64 {
	out := append([]float64(nil), at...)
	// Children follow their parent in preorder.
	for i := len(t.Nodes) - 1; i >= 0; i-- {
		if nd := t.Nodes[i]; nd.Leaf < 0 {
			out[i] += out[nd.Left] + out[nd.Right]
		}
	}
	return out
}

// markSubtree sets mark[i] for every node i of the subtree rooted at index id.
func markSubtree(t *qdtree.Tree, id int, mark []bool) {
	mark[id] = true
	if nd := t.Nodes[id]; nd.Leaf < 0 {
		markSubtree(t, nd.Left, mark)
		markSubtree(t, nd.Right, mark)
	}
}

// selectResplit chooses the subtrees a run re-splits: the highest nodes whose
// new rows (newAt, by node index: rows of the waiting files and of the new files
// at home at the node) reach resplitFill times the rows laid out in the
// subtree (laidAt: rows of its files that do not wait), or of half a file per
// leaf given (Node.Units files of fileRows) if that is more — so that a
// sparsely laid-out subtree still waits for enough rows to fill its files. Rows
// at a node above count for none of its subtrees. It returns the roots'
// indexes, in preorder.
func selectResplit(t *qdtree.Tree, laidAt, newAt []float64, fileRows float64) []int {
	laid, news := subtreeSums(t, laidAt), subtreeSums(t, newAt)
	var roots []int
	var visit func(id int)
	visit = func(id int) {
		nd := t.Nodes[id]
		if news[id] > 0 && news[id] >= resplitFill*math.Max(laid[id], fileRows*float64(nd.Units)/2) {
			roots = append(roots, id)
			return
		}
		if nd.Leaf < 0 {
			visit(nd.Left)
			visit(nd.Right)
		}
	}
	visit(0)
	return roots
}

// placeLeaves decides where the rows of each leaf are written: at the leaf when
// it has at least leafRows(leaf) rows, else at the lowest ancestor whose
// unplaced rows reach nodeFill of a file's rows, else at the root. It returns
// the destination node index of every leaf ordinal (-1 for a leaf without
// rows).
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
func (p *Plan) drift(ctx context.Context, files []*log.Add) (*qdtree.Drift, error) {
	if p.opts.Workload == nil {
		return nil, nil
	}
	lt, err := p.layoutTrees(ctx, files)
	if err != nil {
		return nil, err
	}
	t := lt.tree
	if t == nil || t.Workload == nil {
		return nil, nil
	}
	d, err := t.Drift(p.opts.Workload, p.view.Logical())
	if err != nil {
		return nil, fmt.Errorf("optimize: tree %s: %w", lt.path, err)
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
// out by (files of one partition, say) — the newest generation of the lineage
// of trees (see qdtree.Tree.Extend) that lays out the most bytes — and its
// path, or "" and nil when none of them carries a tree tag. It reads every tree
// file the files name. Errors wrap ErrCorruptData when one is missing or
// broken.
func CurrentTree(ctx context.Context, store storage.Storage, files []*log.Add) (string, *qdtree.Tree, error) {
	lt, err := resolveTrees(files, func(p string) (*qdtree.Tree, error) { return loadTree(ctx, store, p) })
	if err != nil || lt.tree == nil {
		return "", nil, err
	}
	return lt.path, lt.tree, nil
}
