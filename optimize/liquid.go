package optimize

import (
	"sort"

	"github.com/skiplake/skiplake/log"
)

// markClustered sets the clusteringProvider of a bin's new files (PROTOCOL.md
// "Clustered Table": files a clustering implementation clusters carry its name, and
// only those): "liquid" for the files of a liquid clustering bin; the input's
// provider for a single-file rewrite, whose rows keep their order (and whose cube
// tags are kept too); none otherwise.
func (p *Plan) markClustered(r *binResult) {
	provider := ""
	switch {
	case r.bin.Kind == KindCluster && p.Liquid:
		provider = log.ClusteringProviderLiquid
	case r.bin.Kind == KindCompact && len(r.bin.adds) == 1:
		provider = r.bin.adds[0].ClusteringProvider
	}
	for _, a := range r.adds {
		a.ClusteringProvider = provider
	}
}

// liquidBins plans incremental liquid clustering of one partition (see
// Options.CubeFanIn): the files without a clusteringProvider, plus the unfinished
// cubes of every size tier that holds CubeFanIn cubes, are clustered together into
// one new cube. Files clustered by other columns (an older clustering), and finished
// cubes, are left alone; their files still get Bloom filters backfilled on their own.
func (p *Plan) liquidBins(files []*log.Add) []*Bin {
	colsJSON := p.clusterColumnsJSON()
	cubeSize := map[string]int64{}
	cubeFiles := map[string][]*log.Add{}
	var fresh, backfill []*log.Add
	for _, a := range files {
		id := matchingCube(a, colsJSON, p.Curve)
		switch {
		case id != "":
			cubeSize[id] += a.Size
			cubeFiles[id] = append(cubeFiles[id], a)
		case a.ClusteringProvider != "":
			if p.needsBackfill(a) || p.overDeleted(a) {
				backfill = append(backfill, a)
			} else {
				p.ClusteredFiles++
			}
		default:
			fresh = append(fresh, a)
		}
	}
	tiers := map[int][]string{}
	for id, size := range cubeSize {
		if size >= p.opts.MinCubeSize {
			for _, a := range cubeFiles[id] {
				if p.needsBackfill(a) || p.overDeleted(a) {
					backfill = append(backfill, a)
				} else {
					p.FinishedCubeFiles++
				}
			}
			continue
		}
		t := cubeTier(size, p.opts.TargetFileSize, p.opts.CubeFanIn)
		tiers[t] = append(tiers[t], id)
	}
	cand := fresh
	for _, ids := range tiers {
		if len(ids) < p.opts.CubeFanIn {
			for _, id := range ids {
				for _, a := range cubeFiles[id] {
					if p.needsBackfill(a) || p.overDeleted(a) {
						backfill = append(backfill, a)
					}
				}
			}
			continue
		}
		for _, id := range ids {
			cand = append(cand, cubeFiles[id]...)
		}
	}
	var bins []*Bin
	if len(cand) > 0 {
		sort.Slice(cand, func(i, j int) bool { return cand[i].Path < cand[j].Path })
		b := newBin(KindCluster, cand)
		b.FileSize = p.cubeFileSize(b.Bytes)
		bins = append(bins, b)
	}
	sort.Slice(backfill, func(i, j int) bool { return backfill[i].Path < backfill[j].Path })
	for _, a := range backfill {
		bins = append(bins, p.aloneBin(a))
	}
	return bins
}

// cubeTier is the size tier of a cube: 0 below target·fanIn, t for sizes in
// [target·fanIn^t, target·fanIn^(t+1)).
func cubeTier(size, target int64, fanIn int) int {
	t := 0
	for limit := target * int64(fanIn); size >= limit && t < 62; limit *= int64(fanIn) {
		t++
	}
	return t
}

// cubeFileSize is the output file size of a liquid clustering bin of the given
// input size: cut into at least CubeFiles files, none below TargetFileSize/8, none
// above TargetFileSize.
func (p *Plan) cubeFileSize(bytes int64) int64 {
	target := p.opts.TargetFileSize
	if p.opts.CubeFiles <= 0 {
		return 0
	}
	size := max(bytes/int64(p.opts.CubeFiles), target/8, 1)
	if size >= target {
		return 0
	}
	return size
}

// fileSize is the size the bin's output files aim for: FileSize when set, else the
// plan's target.
func (b *Bin) fileSize(target int64) int64 {
	if b.FileSize > 0 {
		return b.FileSize
	}
	return target
}
