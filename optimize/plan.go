package optimize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/health"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// Why a single file is rewritten on its own (Bin.Reason).
const (
	// ReasonPurge: its deletion vector marks more than the table's
	// skiplake.optimize.maxDeletedRowsRatio of its rows deleted; the new file has
	// none of them (Delta's REORG TABLE ... APPLY (PURGE)). A commit of purge bins
	// only is recorded as Delta records that command (operation REORG, applyPurge).
	ReasonPurge = "purge"
	// ReasonBloomBackfill: it lacks a filter of the plan's Bloom columns.
	ReasonBloomBackfill = "bloom-backfill"
)

// Bin kinds.
const (
	// KindCompact is a bin of small files concatenated into one file.
	KindCompact = "compact"
	// KindCluster is a bin of files clustered together into files of about the
	// target size.
	KindCluster = "cluster"
)

// Plan is what Execute will do: bins of files per partition. It is immutable after
// NewPlan returns and JSON-serialisable (the --dry-run output); the unexported fields
// tie it to the snapshot it was made from.
type Plan struct {
	// Version is the snapshot version the plan was made against.
	Version int64 `json:"version"`
	// Curve and ClusterBy describe the clustering (CurveNone: compaction only).
	Curve     Curve    `json:"curve"`
	ClusterBy []string `json:"clusterBy,omitempty"`
	// TargetFileSize, MinFileSize and MinCubeSize are the resolved sizes in bytes.
	TargetFileSize int64 `json:"targetFileSize"`
	MinFileSize    int64 `json:"minFileSize"`
	MinCubeSize    int64 `json:"minCubeSize,omitempty"`
	// Partitions lists the partitions with at least one bin, in partition-value order.
	Partitions []*PartitionPlan `json:"partitions"`
	// NumBins, NumFiles and NumBytes total the bins.
	NumBins  int   `json:"numBins"`
	NumFiles int   `json:"numFiles"`
	NumBytes int64 `json:"numBytes"`
	// FinishedCubeFiles counts files left alone because they belong to finished cubes.
	FinishedCubeFiles int `json:"finishedCubeFiles,omitempty"`
	// BloomColumns are the columns every output file gets a Bloom filter for: the
	// table property skiplake.bloomFilter.columns ∪ Options.BloomColumns, in the
	// schema's spelling; BloomFPP is their false-positive probability.
	BloomColumns []string `json:"bloomColumns,omitempty"`
	BloomFPP     float64  `json:"bloomFPP,omitempty"`
	// NewBloomColumns are the BloomColumns not yet in the table property; the run's
	// last commit adds them to it (a run with no bins commits only that).
	NewBloomColumns []string `json:"newBloomColumns,omitempty"`
	// BackfillFiles counts the planned files whose skiplake.bloom tag lacks one of
	// BloomColumns (see Options.BackfillBloom).
	BackfillFiles int `json:"backfillFiles,omitempty"`
	// Liquid is true on a clustered table with clustering columns (Delta liquid
	// clustering): the run clusters by those columns (Curve CurveHilbert) and every
	// file it clusters carries clusteringProvider "liquid".
	Liquid bool `json:"liquid,omitempty"`
	// ClusteredFiles counts files left alone because they are clustered already and
	// the run must not merge them: clustered files under plain compaction (which
	// would undo their clustering), files of a clustered table clustered by earlier
	// clustering columns (only Full re-clusters them).
	ClusteredFiles int `json:"clusteredFiles,omitempty"`
	// DeferredFiles and DeferredBytes count the candidate files Options.MaxBytes left
	// for a later run.
	DeferredFiles int   `json:"deferredFiles,omitempty"`
	DeferredBytes int64 `json:"deferredBytes,omitempty"`
	// BelowMinFiles counts the partitions skipped because they had fewer candidate
	// files than Options.MinFiles.
	BelowMinFiles int `json:"belowMinFiles,omitempty"`

	snap    *log.Snapshot
	view    *tableview.View // the snapshot resolved: schemas, mapping, partitions, writer settings
	store   storage.Storage
	opts    Options
	spec    datafile.Spec // the output files' settings (the view's FileSpec)
	dataSch *arrow.Schema // logical schema without partition columns (file schema)
	// readSch is dataSch as input files are read: under column mapping its data
	// fields carry the physical names (and, in id mode, field ids) that locate
	// them in the files; else dataSch itself.
	readSch  *arrow.Schema
	physData []string                // physical names of dataSch's fields (Bloom tags and stats use them)
	clusters []clusterCol            // locations of the clustering columns in dataSch
	hidden   int                     // hidden row tracking columns at the end of dataSch (rowids.go)
	bloomIdx []int                   // indices of BloomColumns in dataSch
	trees    map[string]*qdtree.Tree // stored workload trees, by path
	// restricted marks a plan of selected bins (Select): after a conflict Execute
	// rebases them instead of planning the table anew.
	restricted bool
}

// PartitionPlan is the work planned for one partition.
type PartitionPlan struct {
	// Values are the partition values as the log serializes them (nil = null).
	Values map[string]*string `json:"partitionValues"`
	// Bins are rewritten independently (each by its own goroutine).
	Bins []*Bin `json:"bins"`
	// Drift compares Options.Workload with the training workload of the tree the
	// partition's new rows are routed through (CurveWorkload).
	Drift *qdtree.Drift `json:"drift,omitempty"`
}

// Bin is a set of files of one partition rewritten together.
type Bin struct {
	// Index numbers the bins of the plan NewPlan made from 1, in plan order; a
	// piece SplitBin cut from a bin, and a bin rebased after a conflict, keep it.
	Index int `json:"index"`
	// Kind is KindCompact or KindCluster.
	Kind string `json:"kind"`
	// Layout describes the tree work of a CurveWorkload bin.
	Layout *TreeBin `json:"layout,omitempty"`
	// Files are the input files, in the order they are read.
	Files []FileRef `json:"files"`
	// Bytes is the total size of Files.
	Bytes int64 `json:"bytes"`
	// Rows is the total live row count from the files' stats minus deletion
	// vectors (-1 when any is unknown).
	Rows int64 `json:"rows"`
	// FileSize is the size the bin's output files aim for when it differs from the
	// plan's TargetFileSize (a liquid clustering bin cut into Options.CubeFiles files).
	FileSize int64 `json:"fileSize,omitempty"`
	// Reason says why a bin of a single file rewrites it on its own: ReasonPurge or
	// ReasonBloomBackfill ("" for the other bins).
	Reason string `json:"reason,omitempty"`

	adds []*log.Add
}

// FileRef names an input file.
type FileRef struct {
	// Path is the file's path as the log records it.
	Path string `json:"path"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
	// ModificationTime is its modification time, ms since the epoch.
	ModificationTime int64 `json:"modificationTime"`
}

// PlanLatest is NewPlan on the table's latest snapshot, for callers holding only the
// store.
func PlanLatest(ctx context.Context, store storage.Storage, opts Options) (*Plan, error) {
	snap, err := log.New(store).Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	return NewPlan(ctx, snap, store, opts)
}

// NewPlan decides which files OPTIMIZE rewrites, without reading any data file.
//
// Compaction (Curve CurveNone): per partition, the files smaller than MinFileSize,
// ordered by modification time (then path), are packed next-fit into bins of at most
// TargetFileSize; bins of a single file are dropped. Packing in time order keeps old
// and new data in different files, so time-correlated columns (ingest dates, ids)
// keep their narrow per-file ranges and skipping on them keeps working; sorting by
// size instead (Spark) mixes old and new rows in every output file.
//
// Clustering: per partition, one bin holds every file that is not part of a finished
// cube with the same columns and curve (all files when Full). A partition whose only
// candidates form one cube already clustered the same way is left alone.
//
// Files with deletion vectors are compacted like any other (their deleted rows are
// dropped on the way); a file of any size whose deletion vector marks more than
// the table's skiplake.optimize.maxDeletedRowsRatio of its rows (default 5%) is
// purged: rewritten without them, in a bin of its own (Bin.Reason ReasonPurge)
// unless compaction packs it with the other files it compacts.
//
// Bloom backfill (Options.BackfillBloom, implied by Options.BloomColumns): a file
// whose skiplake.bloom tag does not list every Bloom column is a candidate too.
// Compaction packs it like a small file and keeps a bin of just that file;
// clustering rewrites a file of a finished cube in a bin of its own (rows in their
// order, cube tags kept) and never skips a partition whose candidates lack filters.
func NewPlan(ctx context.Context, snap *log.Snapshot, store storage.Storage, opts Options) (*Plan, error) {
	if snap == nil || store == nil {
		return nil, &InvalidOptionsError{Problems: []string{"nil snapshot or store"}}
	}
	v, err := tableview.New(snap)
	if err != nil {
		return nil, err
	}
	return NewPlanOn(ctx, v, store, opts)
}

// NewPlanOn is NewPlan on a version already resolved into its view (package
// tableview): the schemas, column mapping, partition and clustering columns and the
// data-file writer settings come from v, as for every other engine.
func NewPlanOn(ctx context.Context, v *tableview.View, store storage.Storage, opts Options) (*Plan, error) {
	if v == nil || store == nil {
		return nil, &InvalidOptionsError{Problems: []string{"nil view or store"}}
	}
	snap := v.Log()
	props := v.Properties()
	o, err := opts.resolve(props)
	if err != nil {
		return nil, err
	}
	if err := v.CheckWritable(); err != nil {
		return nil, err
	}
	if err := props.Err(log.DataFileKeys...); err != nil {
		return nil, fmt.Errorf("%w: version %d: %w", ErrInvalidOptions, snap.Version(), err)
	}
	liquid, err := liquidClustering(v, &o, opts.MinCubeSize == 0)
	if err != nil {
		return nil, err
	}
	p := &Plan{Version: snap.Version(), Curve: o.Curve, TargetFileSize: o.TargetFileSize, MinFileSize: o.MinFileSize,
		snap: snap, view: v, store: store, opts: o, Liquid: liquid, trees: map[string]*qdtree.Tree{}}
	if o.Curve != CurveNone {
		p.MinCubeSize = o.MinCubeSize
	}
	// The plan works in logical names and reads and writes through the view's
	// mapping; stable row IDs travel with the rows in hidden columns (rowids.go).
	dataFields, readFields := v.DataSchema().Fields(), v.ReadDataSchema().Fields()
	for _, f := range v.PhysicalDataSchema().Fields() {
		p.physData = append(p.physData, f.Name)
	}
	if hidden := v.RowTrackingFields(); hidden != nil {
		dataFields = append(dataFields, hidden...)
		readFields = append(readFields, hidden...)
		for _, f := range hidden {
			p.physData = append(p.physData, f.Name)
		}
		p.hidden = len(hidden)
	}
	p.dataSch = arrow.NewSchema(dataFields, nil)
	p.readSch = p.dataSch
	if v.Mapping() != log.ColumnMappingNone {
		p.readSch = arrow.NewSchema(readFields, nil)
	}
	if err := p.resolveBloomColumns(); err != nil {
		return nil, err
	}
	p.spec, err = v.FileSpec(tableview.FileOptions{TargetFileSize: o.TargetFileSize, RowTracking: p.hidden > 0,
		BloomColumns: p.BloomColumns, BloomFPP: p.BloomFPP, Parallelism: o.Parallelism, Allocator: o.Allocator})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.Curve != CurveNone && len(o.ClusterBy) > 0 {
		if err := p.resolveClusterColumns(); err != nil {
			return nil, err
		}
	}

	groups := map[string][]*log.Add{}
	var keys []string
	for _, a := range snap.Files() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o.PartitionFilter != nil && len(v.Partitions()) > 0 {
			typed, err := v.PartitionValues(a)
			if err != nil {
				return nil, fmt.Errorf("optimize: %w", err)
			}
			vals := make(map[string]value.Value, len(typed))
			for _, pc := range v.Partitions() {
				vals[pc.Name] = typed[pc.Physical]
			}
			if !o.PartitionFilter(vals) {
				continue
			}
		}
		k := v.PartitionKey(a)
		if o.Partitions != nil && !p.wantPartition(k) {
			continue
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], a)
	}
	sort.Strings(keys)
	for _, k := range keys {
		files := groups[k]
		var bins []*Bin
		var drift *qdtree.Drift
		switch o.Curve {
		case CurveNone:
			bins = p.compactionBins(files)
		case CurveWorkload:
			var err error
			if bins, err = p.workloadBins(ctx, files); err != nil {
				return nil, err
			}
			if drift, err = p.drift(ctx, files); err != nil {
				return nil, err
			}
		default:
			bins = p.clusterBins(files)
		}
		if len(bins) == 0 {
			continue
		}
		if o.MinFiles > 0 {
			n := 0
			for _, b := range bins {
				for _, a := range b.adds {
					if !isClustered(a) {
						n++
					}
				}
			}
			if n < o.MinFiles {
				p.BelowMinFiles++
				continue
			}
		}
		pp := &PartitionPlan{Values: files[0].PartitionValues, Bins: bins, Drift: drift}
		if pp.Values == nil {
			pp.Values = map[string]*string{}
		}
		p.Partitions = append(p.Partitions, pp)
		for _, b := range bins {
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
	p.applyBudget()
	for i, b := range p.Bins() {
		b.Index = i + 1
	}
	return p, nil
}

// resolveClusterColumns checks the clustering columns (exist, not partition columns,
// have statistics, rankable) and records their canonical names and locations. A
// name is a top-level column, or else a path into structs ("st.x", parts quoted
// with backticks as in delta.dataSkippingStatsColumns) ending at a primitive leaf;
// a clustered table's columns come as paths (Options.clusterPaths). CurveWorkload
// cuts top-level columns only.
func (p *Plan) resolveClusterColumns() error {
	withStats, err := newStatsColumns(p)
	if err != nil {
		return err
	}
	for i, name := range p.opts.ClusterBy {
		var cpath []string
		if i < len(p.opts.clusterPaths) {
			cpath = p.opts.clusterPaths[i]
		} else if fieldIndexFold(p.dataSch, name) >= 0 || p.view.IsPartition(name) {
			cpath = []string{name}
		} else if cpath, err = stats.ParseColumnPath(name); err != nil {
			return &ClusterColumnError{Column: name, Reason: err.Error()}
		}
		if p.view.IsPartition(cpath[0]) {
			return &ClusterColumnError{Column: name, Reason: "is a partition column (every file of a partition holds one value already)"}
		}
		if len(cpath) > 1 && p.Curve == CurveWorkload {
			return &ClusterColumnError{Column: name, Reason: "is nested in a struct; a workload layout cuts top-level columns only"}
		}
		var loc clusterCol
		var names []string
		fields := p.dataSch.Fields()
		var f arrow.Field
		for d, part := range cpath {
			idx := -1
			for j, g := range fields {
				if strings.EqualFold(g.Name, part) {
					idx = j
					break
				}
			}
			if idx < 0 {
				var have []string
				for _, g := range fields {
					have = append(have, g.Name)
				}
				if d == 0 {
					have = have[:0]
					for _, g := range p.view.Logical().Fields() {
						have = append(have, g.Name)
					}
					return &ClusterColumnError{Column: name, Reason: "no such column (table has " + strings.Join(have, ", ") + ")"}
				}
				return &ClusterColumnError{Column: name, Reason: fmt.Sprintf("struct %s has no field %q (it has %s)", strings.Join(names, "."), part, strings.Join(have, ", "))}
			}
			f = fields[idx]
			loc = append(loc, idx)
			names = append(names, f.Name)
			if d < len(cpath)-1 {
				st, ok := f.Type.(*arrow.StructType)
				if !ok {
					return &ClusterColumnError{Column: name, Reason: fmt.Sprintf("%s is %s, not a struct: clustering columns are reached through structs only", strings.Join(names, "."), value.DisplayType(f.Type))}
				}
				fields = st.Fields()
			}
		}
		if _, phys, ok := p.view.PhysicalPath(names); !ok || !withStats[stats.Key(phys...)] {
			return &ClusterColumnError{Column: name, Reason: "has no statistics (not among the table's data-skipping columns), so clustering on it cannot help skipping"}
		}
		if !rankable(f.Type) {
			return &ClusterColumnError{Column: name, Reason: "type " + f.Type.String() + " has no order usable for clustering"}
		}
		p.clusters = append(p.clusters, loc)
		p.ClusterBy = append(p.ClusterBy, strings.Join(names, "."))
	}
	return nil
}

// resolveBloomColumns resolves the Bloom filter columns: the table property's
// (log.TableProperties.BloomFilterColumns, resolved with bloom.ResolveColumns) and
// Options.BloomColumns (each must be a top-level, non-partition data column of an
// indexable type).
func (p *Plan) resolveBloomColumns() error {
	cols, err := p.view.BloomColumns()
	if err != nil {
		return fmt.Errorf("%w: version %d: table property %s: %w", ErrInvalidOptions, p.Version, log.PropBloomFilterColumns, err)
	}
	cols = append([]string(nil), cols...)
	fpp := p.view.Properties().BloomFilterFPP
	have := map[string]bool{}
	for _, c := range cols {
		have[c] = true
	}
	for _, name := range p.opts.BloomColumns {
		name = strings.TrimSpace(name)
		if p.view.IsPartition(name) {
			return &BloomColumnError{Column: name, Reason: "is a partition column (every file of a partition holds one value already)"}
		}
		c, err := bloom.ResolveColumn(p.dataSch, name)
		if err != nil {
			if errors.Is(err, bloom.ErrUnsupportedType) {
				i := fieldIndexFold(p.dataSch, name)
				return &BloomColumnError{Column: name, Reason: "type " + p.dataSch.Field(i).Type.String() + " cannot be Bloom-indexed (only primitive columns can)"}
			}
			var names []string
			for _, f := range p.view.Logical().Fields() {
				names = append(names, f.Name)
			}
			reason := "no such column (table has " + strings.Join(names, ", ") + ")"
			if strings.Contains(name, ".") {
				reason += "; only top-level columns can be Bloom-indexed"
			}
			return &BloomColumnError{Column: name, Reason: reason}
		}
		if !have[c] {
			have[c] = true
			cols = append(cols, c)
			p.NewBloomColumns = append(p.NewBloomColumns, c)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	if p.opts.BloomFPP != 0 {
		fpp = p.opts.BloomFPP
	}
	p.BloomColumns, p.BloomFPP = cols, fpp
	for _, c := range cols {
		p.bloomIdx = append(p.bloomIdx, fieldIndexFold(p.dataSch, c))
	}
	return nil
}

func fieldIndexFold(sch *arrow.Schema, name string) int {
	if ix := sch.FieldIndices(name); len(ix) > 0 {
		return ix[0]
	}
	for i, f := range sch.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// lacksBloom reports whether a's skiplake.bloom tag does not list every Bloom
// column (no tag and an undecodable tag count as listing none).
func (p *Plan) lacksBloom(a *log.Add) bool {
	if len(p.BloomColumns) == 0 {
		return false
	}
	raw, ok := a.Tags[bloom.TagKey]
	if !ok {
		return true
	}
	tag, err := bloom.DecodeTag(raw)
	if err != nil {
		return true
	}
	for _, i := range p.bloomIdx { // the tag lists physical names
		if !tag.HasColumn(p.physData[i]) {
			return true
		}
	}
	return false
}

// needsBackfill reports a file that BackfillBloom makes a rewrite candidate.
func (p *Plan) needsBackfill(a *log.Add) bool { return p.opts.BackfillBloom && p.lacksBloom(a) }

func rankable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP,
		arrow.DECIMAL128, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

// overDeleted reports a file whose deletion vector marks more than the table's
// skiplake.optimize.maxDeletedRowsRatio of its rows deleted (default 5%): OPTIMIZE
// purges it (rewrites it without those rows).
func (p *Plan) overDeleted(a *log.Add) bool {
	if a.DeletionVector == nil {
		return false
	}
	n, ok := a.NumRecords()
	return ok && health.OverThreshold(n, a.DeletionVector.Cardinality, p.view.Properties().MaxDeletedRowsRatio)
}

// aloneBin is a bin that rewrites one file on its own, rows in their order and tags
// kept: to purge its deleted rows (reason ReasonPurge) or to give it the Bloom
// filters it lacks (ReasonBloomBackfill).
func (p *Plan) aloneBin(a *log.Add) *Bin {
	b := newBin(KindCompact, []*log.Add{a})
	if p.overDeleted(a) {
		b.Reason = ReasonPurge
	} else {
		b.Reason = ReasonBloomBackfill
	}
	return b
}

func newBin(kind string, files []*log.Add) *Bin {
	b := &Bin{Kind: kind, adds: files}
	for _, a := range files {
		b.Files = append(b.Files, FileRef{Path: a.Path, Size: a.Size, ModificationTime: a.ModificationTime})
		b.Bytes += a.Size
		if n, ok := a.NumRecords(); ok && b.Rows >= 0 {
			if a.DeletionVector != nil {
				n -= a.DeletionVector.Cardinality
			}
			b.Rows += n
		} else {
			b.Rows = -1
		}
	}
	return b
}

// compactionBins packs the partition's small files next-fit, in modification-time
// order, into bins of at most the target size; single-file bins are dropped.
//
// Clustered files (cube tags or a clusteringProvider) are never merged: merging
// them with others would undo their clustering. Such a file is rewritten on its own
// (rows in their order, tags kept) only to purge deleted rows or add Bloom filters.
func (p *Plan) compactionBins(files []*log.Add) []*Bin {
	var small []*log.Add
	var alone []*Bin
	for _, a := range files {
		if !(a.Size < p.opts.MinFileSize || p.overDeleted(a) || p.needsBackfill(a)) {
			continue
		}
		if isClustered(a) {
			if p.overDeleted(a) || p.needsBackfill(a) {
				alone = append(alone, p.aloneBin(a))
			} else {
				p.ClusteredFiles++
			}
			continue
		}
		small = append(small, a)
	}
	sort.SliceStable(small, func(i, j int) bool {
		if small[i].ModificationTime != small[j].ModificationTime {
			return small[i].ModificationTime < small[j].ModificationTime
		}
		return small[i].Path < small[j].Path
	})
	var bins []*Bin
	var cur []*log.Add
	var bytes int64
	flush := func() {
		// A bin of one file is dropped unless rewriting it purges deleted rows or
		// backfills Bloom filters.
		switch {
		case len(cur) > 1:
			bins = append(bins, newBin(KindCompact, cur))
		case len(cur) == 1 && (p.overDeleted(cur[0]) || p.needsBackfill(cur[0])):
			bins = append(bins, p.aloneBin(cur[0]))
		}
		cur, bytes = nil, 0
	}
	for _, a := range small {
		if len(cur) > 0 && bytes+a.Size > p.opts.TargetFileSize {
			flush()
		}
		cur = append(cur, a)
		bytes += a.Size
	}
	flush()
	return append(bins, alone...)
}

// isClustered reports a file written by a clustering run: it carries cube tags, a
// clusteringProvider, or a workload tree's tags (its rows belong to one node of the
// tree; merging it with others would put rows of several nodes into one file).
func isClustered(a *log.Add) bool {
	return a.ClusteringProvider != "" || (a.Tags != nil && (a.Tags[TagCubeID] != "" || a.Tags[TagTree] != ""))
}

// clusterBins returns one bin with every file of the partition that is not in a
// finished cube of the same clustering (see Plan).
func (p *Plan) clusterBins(files []*log.Add) []*Bin {
	if p.Liquid && !p.opts.Full {
		return p.liquidBins(files)
	}
	colsJSON := p.clusterColumnsJSON()
	cubeSize := map[string]int64{}
	for _, a := range files {
		if id := matchingCube(a, colsJSON, p.Curve); id != "" {
			cubeSize[id] += a.Size
		}
	}
	var cand, backfill []*log.Add
	cubes := map[string]bool{}
	unclustered, lacking := 0, 0
	for _, a := range files {
		id := matchingCube(a, colsJSON, p.Curve)
		if p.Liquid && !p.opts.Full && id == "" && a.ClusteringProvider != "" {
			// Clustered by this table's earlier clustering columns (or by another
			// engine's run): incremental liquid clustering takes only files without a
			// clusteringProvider, and the cubes of the current columns.
			if p.needsBackfill(a) || p.overDeleted(a) {
				backfill = append(backfill, a)
			} else {
				p.ClusteredFiles++
			}
			continue
		}
		if id != "" && !p.opts.Full && cubeSize[id] >= p.opts.MinCubeSize {
			if p.needsBackfill(a) || p.overDeleted(a) {
				backfill = append(backfill, a)
			} else {
				p.FinishedCubeFiles++
			}
			continue
		}
		if id == "" {
			unclustered++
		} else {
			cubes[id] = true
		}
		if p.needsBackfill(a) {
			lacking++
		}
		cand = append(cand, a)
	}
	var bins []*Bin
	if len(cand) > 0 && (p.opts.Full || unclustered > 0 || len(cubes) != 1 || lacking > 0) {
		sort.Slice(cand, func(i, j int) bool { return cand[i].Path < cand[j].Path })
		bins = append(bins, newBin(KindCluster, cand))
	} else {
		// The partition is one cube already: files of it with too many deleted
		// rows are purged on their own.
		for _, a := range cand {
			if p.overDeleted(a) {
				backfill = append(backfill, a)
			}
		}
	}
	// A finished cube's file that lacks Bloom filters, or has too many rows deleted,
	// is rewritten on its own: its rows keep their order, so it stays part of its
	// cube (compact keeps the tags).
	sort.Slice(backfill, func(i, j int) bool { return backfill[i].Path < backfill[j].Path })
	for _, a := range backfill {
		bins = append(bins, p.aloneBin(a))
	}
	return bins
}

func (p *Plan) clusterColumnsJSON() string {
	b, _ := json.Marshal(p.ClusterBy)
	return string(b)
}

// matchingCube returns the file's cube id when its tags say it was clustered on
// exactly these columns with this curve, else "".
func matchingCube(a *log.Add, colsJSON string, c Curve) string {
	if a.Tags == nil {
		return ""
	}
	id := a.Tags[TagCubeID]
	if id == "" || a.Tags[TagCubeColumns] != colsJSON || !strings.EqualFold(a.Tags[TagCubeCurve], c.String()) {
		return ""
	}
	return id
}

// dirOf returns the directory part of a log path ("" for the table root).
func dirOf(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

// Snapshot returns the snapshot the plan was made against (nil for a plan decoded
// from JSON, which cannot be executed).
func (p *Plan) Snapshot() *log.Snapshot { return p.snap }

// liquidClustering applies a clustered table's clustering to o: OPTIMIZE without a
// curve clusters by the clustering columns with a Hilbert curve (Delta liquid
// clustering); a table clustered by no columns (CLUSTER BY NONE) is only compacted.
// Explicit curves are refused on clustered tables, as in Delta. It reports whether
// the run is a liquid clustering run.
func liquidClustering(v *tableview.View, o *Options, defaultCube bool) (bool, error) {
	c, err := v.Clustering()
	if err != nil || c == nil {
		return false, err
	}
	names := c.Names()
	if o.Curve == CurveHilbert && len(names) > 0 && strings.Join(o.ClusterBy, "\x00") == strings.Join(names, "\x00") {
		// Options resolved for this very clustering (a replan after a conflict).
		return true, nil
	}
	if o.Curve != CurveNone {
		return false, &InvalidOptionsError{Problems: []string{fmt.Sprintf(
			"the table is clustered by %v: OPTIMIZE clusters it by those columns (change them with ALTER CLUSTER BY); %s clustering by other columns is refused, as in Delta",
			c.Names(), o.Curve)}}
	}
	if len(c.Columns) == 0 {
		return false, nil
	}
	o.Curve, o.ClusterBy, o.clusterPaths = CurveHilbert, names, c.Columns
	if o.CubeFanIn == 0 {
		o.CubeFanIn = DefaultCubeFanIn
	}
	if o.CubeFiles == 0 {
		o.CubeFiles = DefaultCubeFiles
	}
	if defaultCube {
		f := int64(o.CubeFanIn)
		o.MinCubeSize = o.TargetFileSize * f * f * f
	}
	return true, nil
}

// wantPartition reports whether the partition with key k is among Options.Partitions.
func (p *Plan) wantPartition(k string) bool {
	for _, vals := range p.opts.Partitions {
		if p.view.PartitionKeyOf(vals) == k {
			return true
		}
	}
	return false
}

// applyBudget keeps the bins that fit into Options.MaxBytes, in plan order: a bin
// that does not fit is dropped, except that a clustering bin (but for a workload
// layout's) is cut to its oldest files that fit. The totals are recomputed; left-out files are counted as deferred.
func (p *Plan) applyBudget() {
	if p.opts.MaxBytes <= 0 {
		return
	}
	left := p.opts.MaxBytes
	var parts []*PartitionPlan
	p.NumBins, p.NumFiles, p.NumBytes = 0, 0, 0
	for _, pp := range p.Partitions {
		var keep []*Bin
		for _, b := range pp.Bins {
			switch {
			case b.Bytes <= left:
				keep = append(keep, b)
				left -= b.Bytes
				continue
			case b.Kind == KindCluster && b.Layout == nil && left > 0:
				// (A workload bin is all or nothing: its tree work needs
				// every file it names.)
				files := append([]*log.Add(nil), b.adds...)
				sort.SliceStable(files, func(i, j int) bool {
					if files[i].ModificationTime != files[j].ModificationTime {
						return files[i].ModificationTime < files[j].ModificationTime
					}
					return files[i].Path < files[j].Path
				})
				var cut []*log.Add
				var bytes int64
				for _, a := range files {
					if bytes+a.Size > left {
						break
					}
					cut = append(cut, a)
					bytes += a.Size
				}
				if len(cut) > 0 {
					sort.Slice(cut, func(i, j int) bool { return cut[i].Path < cut[j].Path })
					nb := newBin(KindCluster, cut)
					keep = append(keep, nb)
					left -= nb.Bytes
					p.DeferredFiles += len(b.Files) - len(cut)
					p.DeferredBytes += b.Bytes - nb.Bytes
					continue
				}
			}
			p.DeferredFiles += len(b.Files)
			p.DeferredBytes += b.Bytes
		}
		if len(keep) == 0 {
			continue
		}
		pp.Bins = keep
		parts = append(parts, pp)
		for _, b := range keep {
			p.NumBins++
			p.NumFiles += len(b.Files)
			p.NumBytes += b.Bytes
		}
	}
	p.Partitions = parts
}
