package optimize

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/gather"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/workload"
)

// Tree building.
const (
	// treeSampleRowsPerLeaf and minTreeSample size the rows a new tree is built
	// on: this many per leaf, at least minTreeSample (all rows when fewer).
	treeSampleRowsPerLeaf = 1000
	minTreeSample         = 100_000
	// destBits is the width of a destination's rank in a workload key; the
	// remaining bits order rows inside the destination (a Hilbert key of the
	// tree's columns).
	destBits = 20
)

// clusterWorkload rewrites a CurveWorkload bin:
//
//  1. read the tree's columns of every input file (a projection);
//  2. build the tree from a sample of them (a "build" bin; Options.Workload,
//     one leaf per target-size file) and store it under TreeDir, or take the
//     stored tree ("route");
//  3. route every row to its leaf and choose where each leaf's rows are
//     written: its leaf (build); for a route, re-split the chosen subtrees
//     (resplit: leaves with about two leaves' worth of rows or more cut anew,
//     the stored tree extended and stored as its next generation) and write their rows at
//     their leaves, and place the other new rows at their leaf or the lowest
//     node whose rows fill a file (routeDestinations);
//  4. key every row by its destination's rank and a Hilbert key of the tree's
//     columns, and write the rows destination by destination, sorted by key, in
//     files of about the target's rows (a destination is never split into a
//     file smaller than half of that) tagged with the tree and the node.
//
// Step 4 holds only the rows of as many destinations as fit in a third of the
// memory budget at once (by the Arrow bytes per row measured in the groups read so
// far; the first group gets a quarter of that), reading the input again for the
// next ones, and gathers the files' rows from the batches as read, so a bin of
// any size is rewritten in bounded memory (and without spill files); the tree's
// columns of the whole bin, one leaf number and one key per row stay in memory
// throughout. How the rows are grouped and gathered never changes the files.
func (e *executor) clusterWorkload(ctx context.Context, it workItem, o Options, out *datafile.Output) (*binResult, error) {
	p := e.plan
	b := it.bin
	tb := b.Layout
	res := &binResult{bin: b}
	infos, err := e.footers(ctx, b.adds, o.Parallelism)
	if err != nil {
		return nil, err
	}
	memEst, rows := totals(infos)
	if rows >= math.MaxUint32 {
		return nil, fmt.Errorf("%w: a workload bin of %d rows (at most %d)", ErrInvalidOptions, rows, uint32(math.MaxUint32))
	}
	nFiles := max(1, int(math.Round(float64(b.Bytes)/float64(p.opts.TargetFileSize))))
	fileRows := float64(rows) * float64(p.opts.TargetFileSize) / math.Max(float64(b.Bytes), 1)

	// 1. The tree's columns.
	var names []string
	if tb.Action == "route" {
		names = tb.tree.Columns
	} else if names, err = p.treeColumns(); err != nil {
		return nil, err
	}
	colIdx := make([]int, len(names))
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		if colIdx[i] = fieldIndexFold(p.dataSch, n); colIdx[i] < 0 {
			return nil, fmt.Errorf("%w: %s: tree column %q is not a data column of the table", ErrCorruptLayoutTree, tb.Tree, n)
		}
		fields[i] = p.readSch.Field(colIdx[i]) // read through the column mapping
	}
	colSch := arrow.NewSchema(fields, nil)
	colRec, live, err := e.readColumns(ctx, b, colSch, o)
	if err != nil {
		return nil, err
	}
	defer colRec.Release()
	n := int(colRec.NumRows())

	// 2. The tree.
	tree, treePath := tb.tree, tb.Tree
	if tb.Action != "route" {
		if tree, err = p.buildTree(ctx, colRec, names, nFiles); err != nil {
			return nil, err
		}
		data, err := tree.Encode()
		if err != nil {
			return nil, fmt.Errorf("optimize: encoding the workload tree: %w", err)
		}
		treePath = newTreePath()
		if err := p.store.PutIfAbsent(ctx, treePath, data); err != nil {
			return nil, fmt.Errorf("optimize: storing the workload tree %s: %w", treePath, err)
		}
		res.trees = append(res.trees, treePath)
	}
	router, err := tree.Router(colSch)
	if err != nil {
		return res, fmt.Errorf("%w: %s: %w", ErrCorruptLayoutTree, treePath, err)
	}

	// 3. Leaves and destinations.
	leaves := make([]int32, n)
	if err := router.Route(colRec, leaves); err != nil {
		return res, fmt.Errorf("optimize: routing rows through %s: %w", treePath, err)
	}
	var dest []int
	waits := func(node int) bool { return false }
	if tb.Action == "route" {
		if tree, treePath, err = e.resplit(ctx, res, tb, colRec, names, leaves, fileRows); err != nil {
			return res, err
		}
		dest, waits = routeDestinations(tree, tb, leaves, fileRows)
	} else {
		dest = make([]int, tree.Leaves)
		for l := range dest {
			dest[l] = tree.LeafNode(l)
		}
	}
	counts := make([]int64, tree.Leaves)
	for _, l := range leaves {
		counts[l]++
	}
	// Destinations in preorder get ranks; rows per rank.
	var used []int
	for l, d := range dest {
		if counts[l] > 0 {
			used = append(used, d)
		}
	}
	slices.Sort(used)
	used = slices.Compact(used)
	if len(used) >= 1<<destBits {
		return res, fmt.Errorf("%w: %d destinations exceed %d", ErrInvalidOptions, len(used), 1<<destBits)
	}
	rank := make(map[int]uint64, len(used))
	for i, d := range used {
		rank[d] = uint64(i)
	}
	leafRank := make([]uint64, tree.Leaves)
	for l, d := range dest {
		if d >= 0 {
			leafRank[l] = rank[d]
		}
	}
	// 4. Keys: destination rank, then the Hilbert key of the tree's columns.
	s := newSamplers(len(names))
	if err := s.add(colRec.Columns()); err != nil {
		return res, err
	}
	k, err := newKeyer(CurveHilbert, s)
	if err != nil {
		return res, err
	}
	keys := make([]uint64, n)
	if _, err := k.keys(colRec.Columns(), 0, keys, nil); err != nil {
		return res, err
	}
	perRank := make([]int64, len(used))
	for i, l := range leaves {
		r := leafRank[l]
		keys[i] = r<<(64-destBits) | keys[i]>>destBits
		perRank[r]++
	}
	// Destinations are written in groups whose rows fit the memory budget. The
	// footers' sizes underestimate the Arrow size of dictionary-encoded columns
	// (measured: 2.5x on lineitem), so each group's rows are sized by the largest
	// Arrow bytes per row held so far (writeDestinations measures what it read), the
	// first group by a quarter of the budget's rows at the footers' estimate.
	memPerRow := math.Max(float64(memEst)/math.Max(float64(n), 1), 1)
	for lo, first := 0, true; lo < len(used); first = false {
		budgetRows := int64(math.Max(float64(o.MemoryBudget)/(3*memPerRow), 1))
		if first {
			budgetRows = max(budgetRows/4, 1)
		}
		hi, sum := lo, int64(0)
		for hi < len(used) && (hi == lo || sum+perRank[hi] <= budgetRows) {
			sum += perRank[hi]
			hi++
		}
		if err := e.writeDestinations(ctx, it, o, out, res, live, keys, uint64(lo), uint64(hi), used[lo:hi], tree, treePath, colIdx, fileRows, waits, &memPerRow); err != nil {
			return res, err
		}
		lo = hi
	}
	return res, nil
}

// treeColumns returns the columns a new tree may cut: Options.ClusterBy
// (resolved) and the workload's columns that are data columns with statistics
// and an order, by workload weight.
func (p *Plan) treeColumns() ([]string, error) {
	coll, err := newStatsColumns(p)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		i := fieldIndexFold(p.dataSch, name)
		if i < 0 {
			return
		}
		f := p.dataSch.Field(i)
		if seen[strings.ToLower(f.Name)] || !coll[stats.Key(p.physData[i])] || !qdtree.Cuttable(f.Type) {
			return
		}
		seen[strings.ToLower(f.Name)] = true
		out = append(out, f.Name)
	}
	for _, c := range p.ClusterBy {
		add(c)
	}
	for _, cu := range p.opts.Workload.Columns() {
		add(cu.Column)
	}
	if len(out) == 0 {
		return nil, &ClusterColumnError{Column: "(workload)", Reason: "the workload filters on no data column with statistics that a tree can cut"}
	}
	return out, nil
}

// buildTree builds a tree of nFiles leaves on a sample of the tree's columns.
func (p *Plan) buildTree(ctx context.Context, colRec arrow.RecordBatch, names []string, nFiles int) (*qdtree.Tree, error) {
	n := int(colRec.NumRows())
	sample := colRec
	if limit := max(treeSampleRowsPerLeaf*nFiles, minTreeSample); n > limit {
		idx := make([]uint32, limit)
		for i := range idx {
			idx[i] = uint32(int64(i) * int64(n) / int64(limit))
		}
		arrs := make([]arrow.Array, colRec.NumCols())
		for c := range arrs {
			a, err := gather.Take(ctx, colRec.Column(c), idx, p.opts.Allocator)
			if err != nil {
				for _, x := range arrs[:c] {
					x.Release()
				}
				return nil, fmt.Errorf("optimize: sampling for the workload tree: %w", err)
			}
			arrs[c] = a
		}
		sample = array.NewRecordBatch(colRec.Schema(), arrs, int64(limit))
		for _, a := range arrs {
			a.Release()
		}
		defer sample.Release()
	}
	tr, err := qdtree.Build(ctx, sample, p.opts.Workload, qdtree.Options{Leaves: nFiles, Columns: names,
		Robustness: p.opts.Robustness, Seed: sampleSeed, BindSchema: p.view.Logical()})
	if err != nil {
		return nil, fmt.Errorf("optimize: building the workload tree: %w", err)
	}
	return tr, nil
}

// readColumns reads the columns of sch from every input file of b, in input
// order (deletion vectors applied), into one batch, and returns it with the
// number of live rows of each file.
func (e *executor) readColumns(ctx context.Context, b *Bin, sch *arrow.Schema, o Options) (arrow.RecordBatch, []int64, error) {
	p := e.plan
	perFile := make([][]arrow.RecordBatch, len(b.adds))
	defer func() {
		for _, recs := range perFile {
			for _, r := range recs {
				r.Release()
			}
		}
	}()
	live := make([]int64, len(b.adds))
	var mu sync.Mutex
	err := parallel(ctx, o.Parallelism, len(b.adds), func(ctx context.Context, i int) error {
		var recs []arrow.RecordBatch
		var rows int64
		err := readFile(ctx, p.store, b.adds[i], sch, o.Allocator, func(rec arrow.RecordBatch, _ int64) error {
			rec.Retain()
			recs = append(recs, rec)
			rows += rec.NumRows()
			return nil
		})
		mu.Lock()
		perFile[i], live[i] = recs, rows
		mu.Unlock()
		if err == nil {
			err = checkRows(b.adds[i], rows)
		}
		if err == nil {
			e.progress("read", b.adds[i].Size/2)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var recs []arrow.RecordBatch
	for _, r := range perFile {
		recs = append(recs, r...)
	}
	rec, err := concatRecords(ctx, sch, recs, o.Parallelism, o.Allocator)
	if err != nil {
		return nil, nil, err
	}
	return rec, live, nil
}

// writeDestinations reads the bin again, keeps the rows whose destination rank
// lies in [lo, hi), sorts them by key and writes each destination's rows as
// files of their own, tagged with the tree and the node.
func (e *executor) writeDestinations(ctx context.Context, it workItem, o Options, out *datafile.Output, res *binResult,
	live []int64, keys []uint64, lo, hi uint64, nodes []int, tree *qdtree.Tree, treePath string, colIdx []int, fileRows float64, waits func(node int) bool,
	perRow *float64) error {
	p := e.plan
	b := it.bin
	offsets := make([]int64, len(live)+1)
	for i, l := range live {
		offsets[i+1] = offsets[i] + l
	}
	in := func(pos int64) bool { r := keys[pos] >> (64 - destBits); return r >= lo && r < hi }
	perFile := make([][]arrow.RecordBatch, len(b.adds))
	posFile := make([][]int64, len(b.adds)) // global positions of the kept rows, per file
	defer func() {
		for _, recs := range perFile {
			for _, r := range recs {
				r.Release()
			}
		}
	}()
	err := parallel(ctx, o.Parallelism, len(b.adds), func(ctx context.Context, i int) error {
		next := offsets[i]
		var recs []arrow.RecordBatch
		var pos []int64
		err := p.readInput(ctx, b.adds[i], o.Allocator, func(rec arrow.RecordBatch, _ int64) error {
			m := int(rec.NumRows())
			var idx []uint32
			for j := range m {
				if in(next + int64(j)) {
					idx = append(idx, uint32(j))
					pos = append(pos, next+int64(j))
				}
			}
			next += int64(m)
			if len(idx) == 0 {
				return nil
			}
			if len(idx) == m {
				rec.Retain()
				recs = append(recs, rec)
				return nil
			}
			arrs := make([]arrow.Array, rec.NumCols())
			for c := range arrs {
				a, err := gather.Take(ctx, rec.Column(c), idx, o.Allocator)
				if err != nil {
					for _, x := range arrs[:c] {
						x.Release()
					}
					return err
				}
				arrs[c] = a
			}
			sub := array.NewRecordBatch(rec.Schema(), arrs, int64(len(idx)))
			for _, a := range arrs {
				a.Release()
			}
			recs = append(recs, sub)
			return nil
		})
		perFile[i], posFile[i] = recs, pos
		if err == nil && next != offsets[i+1] {
			err = fmt.Errorf("%w: %s: read %d live rows, %d before", ErrCorruptData, b.adds[i].Path, next-offsets[i], live[i])
		}
		return err
	})
	if err != nil {
		return err
	}
	var recs []arrow.RecordBatch
	var pos []int64
	for i := range perFile {
		recs = append(recs, perFile[i]...)
		pos = append(pos, posFile[i]...)
	}
	var held int64
	for _, r := range recs {
		held += datafile.RecordBytes(r)
	}
	if held > 0 && len(pos) > 0 {
		*perRow = max(*perRow, float64(held)/float64(len(pos)))
	}
	// The rows are gathered from the batches as read (packed row IDs: batch, row),
	// or, when some column's type has no chunked gather or the IDs do not fit 32
	// bits, from their concatenation (positions in the group). Both number the rows
	// in the same order, so the stable sort below gives the same files either way.
	pairs := make([]keyed, len(pos))
	var src sortedInput
	tb := tieBreak{}
	if shift, chunked := chunkShift(p.dataSch, recs); chunked {
		k := 0
		for b, r := range recs {
			for j := range int(r.NumRows()) {
				pairs[k] = keyed{key: keys[pos[k]], pos: uint32(b)<<shift | uint32(j)}
				k++
			}
		}
		src = chunkedInput(p.dataSch, recs, shift)
		tb.shift = shift
		for _, c := range colIdx {
			tb.chunks = append(tb.chunks, src.cols[c].Arrays)
		}
	} else {
		part, err := concatRecords(ctx, p.dataSch, recs, o.Parallelism, o.Allocator)
		if err != nil {
			return err
		}
		defer part.Release()
		for i := range perFile { // the concatenation holds the rows now
			for _, r := range perFile[i] {
				r.Release()
			}
			perFile[i] = nil
		}
		for i, g := range pos {
			pairs[i] = keyed{key: keys[g], pos: uint32(i)}
		}
		src = batchInput(part)
		for _, c := range colIdx {
			tb.cols = append(tb.cols, part.Column(c))
		}
	}
	sortKeyed(ctx, pairs, tb, o.Parallelism)
	first := b.adds[0]
	dec, err := first.DecodedPath()
	if err != nil {
		return err
	}
	for start := 0; start < len(pairs); {
		r := pairs[start].key >> (64 - destBits)
		end := start
		for end < len(pairs) && pairs[end].key>>(64-destBits) == r {
			end++
		}
		node := nodes[r-lo]
		place := datafile.FileOptions{
			Dir: dirOf(dec), LogDir: dirOf(first.Path), PartitionValues: it.part.Values, Parallelism: o.Parallelism,
			Tags: map[string]string{TagTree: treePath, TagTreeNode: strconv.Itoa(tree.NodeKey(node))},
		}
		if waits(node) {
			place.Tags[TagTreeWaiting] = "true"
		}
		// A destination is one file, or as many files of about the target's rows
		// as it holds whole (a leaf may exceed its share, waiting rows may fill
		// several files), cut in key order between different keys.
		m := end - start
		k := max(1, int(math.Round(float64(m)/math.Max(fileRows, 1))))
		cut := start
		for i := 1; i <= k; i++ {
			next := start + m*i/k
			for i < k && next > cut && next < end && pairs[next].key == pairs[next-1].key {
				next++
			}
			if next <= cut {
				continue
			}
			add, err := e.writeFile(ctx, out, place, src, pairs[cut:next], o)
			if err != nil {
				return err
			}
			res.adds = append(res.adds, add)
			res.rows += int64(next - cut)
			e.progress("write", b.Bytes/2*int64(next-cut)/int64(max(len(keys), 1)))
			cut = next
		}
		start = end
	}
	return nil
}

// writeFile writes the rows of src at the positions (or packed row IDs) of pairs,
// in that order, as one data file at place.
func (e *executor) writeFile(ctx context.Context, out *datafile.Output, place datafile.FileOptions, src sortedInput, pairs []keyed, o Options) (*log.Add, error) {
	f, err := out.Create(ctx, place)
	if err != nil {
		return nil, err
	}
	idx := make([]uint32, 0, takeRows)
	for lo := 0; lo < len(pairs); lo += takeRows {
		if err := ctx.Err(); err != nil {
			f.Abort()
			return nil, err
		}
		hi := min(lo+takeRows, len(pairs))
		idx = idx[:0]
		for _, pr := range pairs[lo:hi] {
			idx = append(idx, pr.pos)
		}
		arrs := make([]arrow.Array, len(src.cols))
		err := parallel(ctx, o.Parallelism, len(arrs), func(ctx context.Context, c int) error {
			var err error
			arrs[c], err = gather.TakeChunks(ctx, src.cols[c], idx, o.Allocator)
			return err
		})
		if err == nil {
			rec := array.NewRecordBatch(src.sch, arrs, int64(hi-lo))
			err = f.Write(rec)
			rec.Release()
		}
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
		if err != nil {
			f.Abort()
			return nil, fmt.Errorf("optimize: writing sorted rows: %w", err)
		}
	}
	add, err := f.Close(ctx)
	if err != nil {
		return nil, err
	}
	return add, nil
}

// newStatsColumns returns the data columns the table keeps statistics for, keyed
// by stats.Key of their physical path (a top-level column by its name): a cut on
// any other column cannot help skipping.
func newStatsColumns(p *Plan) (map[string]bool, error) {
	coll, err := stats.NewCollector(p.spec.FileSchema, nil, p.spec.Stats)
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, c := range coll.Columns() {
		m[stats.Key(c...)] = true
	}
	return m, nil
}

// resplit cuts anew the leaves of the subtrees tb re-splits that hold at least
// one and a half leaves' worth of rows — a leaf's worth being the rows per unit
// its subtree was laid out with (TreeBin.unitRows; fileRows when it holds none)
// — each into as many leaves as it holds leaves' worth (rounded), by a tree
// built (qdtree.Build) on a sample of its rows for the stored tree's training
// workload, with the stored tree's columns, tolerance and robustness. The
// splits extend the stored tree (qdtree.Tree.Extend); the extension is stored as a new tree file and leaves
// (the rows' leaf ordinals) are routed through it. It returns the tree and path
// the rows are now laid out by (tb's when no leaf was cut).
func (e *executor) resplit(ctx context.Context, res *binResult, tb *TreeBin, colRec arrow.RecordBatch, names []string, leaves []int32, fileRows float64) (*qdtree.Tree, string, error) {
	p := e.plan
	tree := tb.tree
	if len(tb.resplit) == 0 {
		return tree, tb.Tree, nil
	}
	in := make([]bool, tree.Leaves)
	leafRows := make([]float64, tree.Leaves) // a leaf's worth of rows
	for i, r := range tb.resplit {
		first, end := tree.LeafRange(r)
		for l := first; l < end; l++ {
			in[l] = true
			leafRows[l] = fileRows
			if i < len(tb.unitRows) && tb.unitRows[i] > 0 {
				leafRows[l] = tb.unitRows[i]
			}
		}
	}
	rowsOf := make([][]uint32, tree.Leaves)
	for i, l := range leaves {
		if in[l] {
			rowsOf[l] = append(rowsOf[l], uint32(i))
		}
	}
	w := workload.New()
	if tree.Workload != nil {
		w = workload.New(tree.Workload.Queries...)
	} else if p.opts.Workload != nil {
		w = p.opts.Workload
	}
	splits := map[int]*qdtree.Tree{}
	for l, idx := range rowsOf {
		k := int(math.Round(float64(len(idx)) / math.Max(leafRows[l], 1)))
		if k < 2 {
			continue
		}
		if limit := treeSampleRowsPerLeaf * k; len(idx) > limit {
			s := make([]uint32, limit)
			for i := range s {
				s[i] = idx[int64(i)*int64(len(idx))/int64(limit)]
			}
			idx = s
		}
		sample, err := takeColumns(ctx, colRec, idx, p.opts.Allocator)
		if err != nil {
			return nil, "", fmt.Errorf("optimize: sampling leaf %d to re-split it: %w", l, err)
		}
		sub, err := qdtree.Build(ctx, sample, w, qdtree.Options{Leaves: k, Columns: names, Tolerance: tree.Tolerance,
			Robustness: tree.Robustness, Seed: sampleSeed + uint64(l), BindSchema: p.view.Logical()})
		sample.Release()
		if err != nil {
			return nil, "", fmt.Errorf("optimize: re-splitting leaf %d of %s: %w", l, tb.Tree, err)
		}
		splits[l] = sub
	}
	if len(splits) == 0 {
		return tree, tb.Tree, nil
	}
	ext, err := tree.Extend(splits, tb.Tree)
	if err != nil {
		return nil, "", fmt.Errorf("optimize: extending %s: %w", tb.Tree, err)
	}
	data, err := ext.Encode()
	if err != nil {
		return nil, "", fmt.Errorf("optimize: encoding the extended workload tree: %w", err)
	}
	path := newTreePath()
	if err := p.store.PutIfAbsent(ctx, path, data); err != nil {
		return nil, "", fmt.Errorf("optimize: storing the extended workload tree %s: %w", path, err)
	}
	res.trees = append(res.trees, path)
	router, err := ext.Router(colRec.Schema())
	if err != nil {
		return nil, "", fmt.Errorf("%w: extended tree %s: %w", ErrCorruptLayoutTree, path, err)
	}
	if err := router.Route(colRec, leaves); err != nil {
		return nil, "", fmt.Errorf("optimize: routing rows through %s: %w", path, err)
	}
	return ext, path, nil
}

// routeDestinations places the rows of a route bin, by leaf of tree (the stored
// tree or its extension): rows of the subtrees tb re-splits at their leaves
// (final), the others at their leaf when it gets a file's worth, else at the
// lowest node whose subtree gathers one (placeLeaves), where they wait. It
// returns the destination node index of every leaf and which destinations wait.
func routeDestinations(tree *qdtree.Tree, tb *TreeBin, leaves []int32, fileRows float64) ([]int, func(node int) bool) {
	in := make([]bool, tree.Leaves)
	for _, r := range tb.resplit {
		first, end := tree.LeafRange(tree.NodeIndex(tb.tree.NodeKey(r)))
		for l := first; l < end; l++ {
			in[l] = true
		}
	}
	counts := make([]int64, tree.Leaves)
	for _, l := range leaves {
		if !in[l] {
			counts[l]++
		}
	}
	dest := placeLeaves(tree, counts, fileRows, func(int) float64 { return nodeFill * fileRows })
	for i, nd := range tree.Nodes {
		if nd.Leaf >= 0 && in[nd.Leaf] {
			dest[nd.Leaf] = i
		}
	}
	return dest, func(node int) bool { return tree.Nodes[node].Leaf < 0 }
}

// takeColumns returns the rows of rec at idx.
func takeColumns(ctx context.Context, rec arrow.RecordBatch, idx []uint32, mem memory.Allocator) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, rec.NumCols())
	for c := range arrs {
		a, err := gather.Take(ctx, rec.Column(c), idx, mem)
		if err != nil {
			for _, x := range arrs[:c] {
				x.Release()
			}
			return nil, err
		}
		arrs[c] = a
	}
	out := array.NewRecordBatch(rec.Schema(), arrs, int64(len(idx)))
	for _, a := range arrs {
		a.Release()
	}
	return out, nil
}
