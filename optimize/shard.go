package optimize

import (
	"context"
	"fmt"
	"sort"

	"github.com/skiplake/skiplake/log"
)

// Parts of a plan: selecting bins, splitting a bin to fit a budget, and assigning
// bins to the shards of a distributed run.
//
// A plan made of some of another plan's bins (Select, Shard) is restricted: it
// rewrites those files and no others. When a concurrent commit removes one of its
// files, Execute does not plan the table anew (that would take files the other
// shards or later chunks own); it rebases the bins on the latest snapshot instead:
// each keeps the files that are still live and unchanged, and a bin left with
// nothing worth rewriting is dropped (see rebase). So N processes that each run
// one shard of the same plan never rewrite a file twice.

// Bins returns the plan's bins in plan order (partitions in order, then their bins).
// Bin.Index numbers them from 1 in the plan NewPlan made.
func (p *Plan) Bins() []*Bin {
	var bins []*Bin
	for _, pp := range p.Partitions {
		bins = append(bins, pp.Bins...)
	}
	return bins
}

// Select returns a plan that rewrites only the given bins — bins of p, or pieces
// SplitBin cut from them — bound to p's snapshot and options. Execute commits the
// result as it would p (Options.CommitEvery bins per commit) and, after a conflict,
// rebases the selected bins instead of planning anew (see the comment at the top of
// shard.go). A plan that adds Bloom columns to the table property
// (Plan.NewBloomColumns) cannot be split: every part would commit the property
// change, and each such commit conflicts with every other part.
func (p *Plan) Select(bins []*Bin) (*Plan, error) {
	if p == nil || p.snap == nil {
		return nil, &InvalidOptionsError{Problems: []string{"nil or zero plan (use NewPlan)"}}
	}
	if len(p.NewBloomColumns) > 0 {
		return nil, &InvalidOptionsError{Problems: []string{fmt.Sprintf(
			"the plan adds Bloom filter columns %v to the table property %s, which every part would commit: set the property first (ALTER, or a run that is not split)",
			p.NewBloomColumns, log.PropBloomFilterColumns)}}
	}
	np := *p
	np.restricted = true
	np.Partitions = nil
	byKey := map[string]*PartitionPlan{}
	for _, b := range bins {
		if b == nil || len(b.adds) == 0 {
			continue
		}
		k := p.view.PartitionKey(b.adds[0])
		pp := byKey[k]
		if pp == nil {
			pp = &PartitionPlan{Values: b.adds[0].PartitionValues}
			if pp.Values == nil {
				pp.Values = map[string]*string{}
			}
			byKey[k] = pp
			np.Partitions = append(np.Partitions, pp)
		}
		pp.Bins = append(pp.Bins, b)
	}
	np.recount()
	return &np, nil
}

// recount recomputes the plan's totals from its bins.
func (p *Plan) recount() {
	p.NumBins, p.NumFiles, p.NumBytes, p.BackfillFiles = 0, 0, 0, 0
	for _, pp := range p.Partitions {
		for _, b := range pp.Bins {
			p.NumBins++
			p.NumFiles += len(b.Files)
			p.NumBytes += b.Bytes
			for _, a := range b.adds {
				if p.lacksBloom(a) {
					p.BackfillFiles++
				}
			}
		}
	}
}

// LackingBloom counts the files of b whose skiplake.bloom tag lacks one of the
// plan's Bloom columns, and their bytes: the Bloom filters rewriting b backfills.
func (p *Plan) LackingBloom(b *Bin) (files int, bytes int64) {
	for _, a := range b.adds {
		if p.lacksBloom(a) {
			files++
			bytes += a.Size
		}
	}
	return files, bytes
}

// Restricted reports whether the plan rewrites a selection of another plan's bins
// (Select, Shard).
func (p *Plan) Restricted() bool { return p.restricted }

// AssignShards assigns each bin to one of n shards (0..n-1) so that the shards'
// bytes are balanced: bins in decreasing size (ties in plan order) each go to the
// shard with the fewest bytes so far (ties to the lowest shard). The assignment
// depends only on the bins' sizes and order, so every worker that makes the same
// plan computes the same assignment without talking to the others.
func AssignShards(bins []*Bin, n int) []int {
	shard := make([]int, len(bins))
	if n <= 1 {
		return shard
	}
	order := make([]int, len(bins))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return bins[order[i]].Bytes > bins[order[j]].Bytes })
	load := make([]int64, n)
	for _, i := range order {
		best := 0
		for s := 1; s < n; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		shard[i] = best
		load[best] += bins[i].Bytes
	}
	return shard
}

// Shard returns the part of the plan that shard k of n (0 <= k < n) runs: the bins
// AssignShards gives it, as a restricted plan (Select). Every bin belongs to exactly
// one shard.
func (p *Plan) Shard(k, n int) (*Plan, error) {
	if n < 1 || k < 0 || k >= n {
		return nil, &InvalidOptionsError{Problems: []string{fmt.Sprintf("shard %d of %d: want 0 <= shard < shards", k, n)}}
	}
	bins := p.Bins()
	assign := AssignShards(bins, n)
	var mine []*Bin
	for i, b := range bins {
		if assign[i] == k {
			mine = append(mine, b)
		}
	}
	return p.Select(mine)
}

// unit is a part of a bin that a piece of it takes whole: a file, or every file of
// one cube (re-clustering part of a cube would leave two overlapping halves).
type unit struct {
	adds  []*log.Add
	bytes int64
	cube  bool  // a cube of earlier clustering, not new data
	first int64 // the oldest modification time
	path  string
}

// units splits a bin into the units its pieces are made of, oldest first.
func (p *Plan) units(b *Bin) []unit {
	var us []unit
	cubes := map[string]int{}
	cols := p.clusterColumnsJSON()
	for _, a := range b.adds {
		id := ""
		if b.Kind == KindCluster {
			id = matchingCube(a, cols, p.Curve)
		}
		if id != "" {
			if i, ok := cubes[id]; ok {
				u := &us[i]
				u.adds = append(u.adds, a)
				u.bytes += a.Size
				u.first = min(u.first, a.ModificationTime)
				u.path = min(u.path, a.Path)
				continue
			}
			cubes[id] = len(us)
		}
		us = append(us, unit{adds: []*log.Add{a}, bytes: a.Size, cube: id != "", first: a.ModificationTime, path: a.Path})
	}
	sort.SliceStable(us, func(i, j int) bool {
		if us[i].first != us[j].first {
			return us[i].first < us[j].first
		}
		return us[i].path < us[j].path
	})
	return us
}

// worthAlone reports whether rewriting these units on their own changes anything:
// two or more units are merged; a single unit is worth it when it is new data to
// cluster, or a single file of a compaction bin that purges deleted rows or gains
// Bloom filters (a single cube alone would only be clustered again as it is).
func (p *Plan) worthAlone(kind string, us []unit) bool {
	switch {
	case len(us) >= 2:
		return true
	case len(us) == 0:
		return false
	case kind == KindCluster:
		return !us[0].cube
	}
	a := us[0].adds[0]
	return len(us[0].adds) == 1 && (a.DeletionVector != nil || p.needsBackfill(a))
}

// Splittable reports whether SplitBin can cut b: a workload layout's bin cannot (its
// tree work needs every file it names), nor a bin of a single unit.
func (p *Plan) Splittable(b *Bin) bool { return b.Layout == nil && len(p.units(b)) > 1 }

// MinPieceBytes is the smallest input a piece of b can have: the bin itself when it
// cannot be split, else the smallest piece worth rewriting on its own (two small
// units, or one new file on a clustering bin). A budget below it cannot make
// progress on b.
func (p *Plan) MinPieceBytes(b *Bin) int64 {
	if !p.Splittable(b) {
		return b.Bytes
	}
	us := p.units(b)
	sizes := make([]int64, len(us))
	best := b.Bytes
	for i, u := range us {
		sizes[i] = u.bytes
		if p.worthAlone(b.Kind, []unit{u}) {
			best = min(best, u.bytes)
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	return min(best, sizes[0]+sizes[1])
}

// SplitBin cuts from b a piece of at most limit bytes of input that can be
// rewritten and committed on its own, and returns it with the rest of b (nil when
// what is left is not worth rewriting by itself). The piece is b itself when b fits;
// otherwise it takes b's units oldest first, skipping those that do not fit (a unit
// is a file, or all files of one cube on a clustering bin), and is nil when no piece
// worth rewriting fits (see MinPieceBytes).
//
// Cutting a compaction bin loses nothing: each piece is a smaller file. Cutting a
// clustering bin makes each piece a cube of its own, clustered inside but
// overlapping the others' key ranges, so a query on the clustering columns may
// read a file of each; incremental clustering merges such cubes later when a run
// can afford it (a liquid table's size tiers; an unfinished cube on other tables).
// A later piece never re-clusters part of a cube.
func (p *Plan) SplitBin(b *Bin, limit int64) (piece, rest *Bin) {
	if b.Bytes <= limit {
		return b, nil
	}
	if !p.Splittable(b) {
		return nil, b
	}
	us := p.units(b)
	var take, left []unit
	var bytes int64
	for _, u := range us {
		if bytes+u.bytes <= limit {
			take = append(take, u)
			bytes += u.bytes
		} else {
			left = append(left, u)
		}
	}
	if !p.worthAlone(b.Kind, take) {
		// First fit found no piece worth its rewrite (say one cube); take the
		// smallest one that is, if it fits.
		take, left = p.smallestPiece(b.Kind, us, limit)
		if take == nil {
			return nil, b
		}
	}
	piece = p.binOf(b, take)
	if p.worthAlone(b.Kind, left) {
		rest = p.binOf(b, left)
	}
	return piece, rest
}

// smallestPiece returns the smallest set of units worth rewriting alone that fits
// limit (two smallest units, or the smallest single unit worth it), and the others.
func (p *Plan) smallestPiece(kind string, us []unit, limit int64) (take, left []unit) {
	bestI, bestJ, best := -1, -1, int64(-1)
	for i, u := range us {
		if p.worthAlone(kind, []unit{u}) && u.bytes <= limit && (best < 0 || u.bytes < best) {
			bestI, bestJ, best = i, -1, u.bytes
		}
	}
	idx := make([]int, len(us))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return us[idx[a]].bytes < us[idx[b]].bytes })
	if len(idx) >= 2 {
		if s := us[idx[0]].bytes + us[idx[1]].bytes; s <= limit && (best < 0 || s < best) {
			bestI, bestJ, best = min(idx[0], idx[1]), max(idx[0], idx[1]), s
		}
	}
	if best < 0 {
		return nil, us
	}
	for i, u := range us {
		if i == bestI || i == bestJ {
			take = append(take, u)
		} else {
			left = append(left, u)
		}
	}
	return take, left
}

// binOf makes a bin of b's kind from units, numbered as b, in b's file order.
func (p *Plan) binOf(b *Bin, us []unit) *Bin {
	in := map[string]bool{}
	for _, u := range us {
		for _, a := range u.adds {
			in[a.Path] = true
		}
	}
	var files []*log.Add
	for _, a := range b.adds {
		if in[a.Path] {
			files = append(files, a)
		}
	}
	nb := newBin(b.Kind, files)
	nb.Index = b.Index
	if b.Kind == KindCluster && p.Liquid {
		nb.FileSize = p.cubeFileSize(nb.Bytes)
	}
	return nb
}

// rebase remakes a restricted plan on snap after a conflict: each bin keeps the
// files that are still live in snap with the same deletion vector (a file another
// commit removed or changed is left to a later run), and a bin left with nothing
// worth rewriting on its own is dropped. Workload layout bins cannot be rebased
// (their tree work is planned for exactly their files).
func (p *Plan) rebase(ctx context.Context, snap *log.Snapshot) (*Plan, error) {
	np, err := NewPlan(ctx, snap, p.store, p.opts)
	if err != nil {
		return nil, err
	}
	live := make(map[string]*log.Add, snap.NumFiles())
	for _, a := range snap.Files() {
		live[a.Path] = a
	}
	var bins []*Bin
	for _, b := range p.Bins() {
		if b.Layout != nil {
			return nil, fmt.Errorf("%w: a workload layout bin cannot be replanned on its own", ErrConflict)
		}
		var keep []*log.Add
		for _, a := range b.adds {
			if cur := live[a.Path]; cur != nil && sameDV(cur, a) {
				keep = append(keep, cur)
			}
		}
		if len(keep) == 0 {
			continue
		}
		nb := newBin(b.Kind, keep)
		nb.Index = b.Index
		if len(keep) < len(b.adds) && !np.worthAlone(b.Kind, np.units(nb)) {
			continue
		}
		if b.Kind == KindCluster && np.Liquid {
			nb.FileSize = np.cubeFileSize(nb.Bytes)
		}
		bins = append(bins, nb)
	}
	np.NewBloomColumns = nil // a restricted plan never carries them (Select)
	sel, err := np.Select(bins)
	if err != nil {
		return nil, err
	}
	return sel, nil
}

// sameDV reports whether two adds of one path carry the same deletion vector.
func sameDV(a, b *log.Add) bool {
	if a.DeletionVector == nil || b.DeletionVector == nil {
		return a.DeletionVector == nil && b.DeletionVector == nil
	}
	return a.DeletionVector.UniqueID() == b.DeletionVector.UniqueID()
}
