package optimize

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// Defaults applied to zero Options fields.
const (
	// DefaultTargetFileSize is the output file size when neither Options.TargetFileSize
	// nor the table property delta.targetFileSize is set: 128 MiB.
	DefaultTargetFileSize = log.DefaultTargetFileSize
	// DefaultMemoryBudget bounds the Arrow memory of a clustering run: 1 GiB.
	DefaultMemoryBudget = 1 << 30
	// DefaultMaxRetries is how often Execute replans after a concurrent removal of one
	// of its input files.
	DefaultMaxRetries = 3
)

// Tags written on files produced by a clustering run (the names Spark's Delta uses).
const (
	// TagCubeID identifies the clustering run ("cube") that wrote the file.
	TagCubeID = log.TagZCubeID
	// TagCubeColumns is the JSON list of clustering columns.
	TagCubeColumns = "ZCUBE_ZORDER_BY"
	// TagCubeCurve is the curve: "zorder", "hilbert" or "linear".
	TagCubeCurve = "ZCUBE_ZORDER_CURVE"
	// TagTargetSize records the target file size of the run.
	TagTargetSize = "OPTIMIZE_TARGET_SIZE"
)

// Curve selects how OPTIMIZE orders rows.
//
// Clustering (CurveLinear, CurveZOrder, CurveHilbert) ranks each clustering column by
// equal-frequency boundaries drawn from a sample (internal/rank: the resolution grows
// with the data, heavy hitters are spread), combines the ranks into one key per row
// (lexicographic, Morton or Hilbert), sorts the rows by key and writes them in key
// order into files of TargetFileSize by their encoded size, cutting only where the key
// changes; every file of a bin but the last (the last of each lane, for a spilled bin
// written in lanes) is within 10% of the target. A bin held in
// memory plans its cuts from a size probe (evenly spaced runs of the sorted rows
// encoded as the files are, datafile.Output.Probe) and writes up to Parallelism files
// at once from the probe's dictionary choices and size model, so the files are the same
// at any Parallelism; files that miss the target are written again from the first that
// did. A spilled bin (input over MemoryBudget: key-range runs in SpillDir, sorted one
// at a time per lane) writes up to Parallelism lanes of consecutive runs side by side,
// each about a whole number of files, as many as the budget holds writers for (each
// writer beyond the first is charged against MemoryBudget); within a lane, and in a
// bin whose input fits a file, file after file. Row groups are
// about an eighth of the target, so that row-group and page skipping work inside a file
// too. Output files carry the tags ZCUBE_ID, ZCUBE_ZORDER_BY, ZCUBE_ZORDER_CURVE and
// OPTIMIZE_TARGET_SIZE; later runs leave cubes of at least MinCubeSize alone and
// cluster only new files and small cubes (Full re-clusters everything).
//
// The workload layout (CurveWorkload, Options.Workload) builds a tree of cuts from a
// workload's filters (package qdtree) on a sample of a partition's rows, with one leaf
// per file of TargetFileSize, and writes one file per leaf, sorted inside by the
// Hilbert key of the tree's columns. The tree is stored in a side file under TreeDir
// that every file names in its tags (TagTree, TagTreeNode); the table's metadata and
// protocol are untouched. Later runs route new rows through the stored tree: a new file
// waits at its home (the lowest node holding all its rows by its statistics) until the
// subtree it is at home in has about doubled; then that subtree is re-split (its files
// read, each leaf cut anew by a tree on its rows, the stored tree extended below it in
// a new generation of the tree file), so every row is written once per doubling of its
// subtree. Full builds a new tree; PartitionPlan.Drift compares Options.Workload with
// the tree's training workload. Workload bins are rewritten in bounded memory by
// reading the input again per group of destinations that fits a third of MemoryBudget.
type Curve uint8

const (
	// CurveNone only compacts small files (bin packing); rows keep their order.
	CurveNone Curve = iota
	// CurveLinear sorts rows by the clustering columns lexicographically (the baseline).
	CurveLinear
	// CurveZOrder sorts rows by the Morton key of the columns' ranks.
	CurveZOrder
	// CurveHilbert sorts rows by the Hilbert index of the columns' ranks.
	CurveHilbert
	// CurveWorkload lays rows out by a tree of cuts learned from
	// Options.Workload (package qdtree): one file per leaf, sorted inside by the
	// Hilbert index of the tree's columns; later runs route new rows through the
	// stored tree (see workload.go).
	CurveWorkload
)

// String names the curve as the ZCUBE_ZORDER_CURVE tag and commitInfo record it.
func (c Curve) String() string {
	switch c {
	case CurveNone:
		return "none"
	case CurveLinear:
		return "linear"
	case CurveZOrder:
		return "zorder"
	case CurveHilbert:
		return "hilbert"
	case CurveWorkload:
		return "workload"
	}
	return "curve(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText encodes the curve by name (for JSON plans).
func (c Curve) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a curve name (see ParseCurve).
func (c *Curve) UnmarshalText(b []byte) error {
	v, err := ParseCurve(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ParseCurve parses "none", "linear", "zorder" (or "z-order"), "hilbert" and
// "workload", case-insensitively.
func ParseCurve(s string) (Curve, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return CurveNone, nil
	case "linear":
		return CurveLinear, nil
	case "zorder", "z-order":
		return CurveZOrder, nil
	case "hilbert":
		return CurveHilbert, nil
	case "workload":
		return CurveWorkload, nil
	}
	return CurveNone, fmt.Errorf("%w: unknown curve %q (want none, linear, zorder, hilbert or workload)", ErrInvalidOptions, s)
}

// Progress reports how far Execute has come. Callbacks are made from several
// goroutines, one at a time.
type Progress struct {
	// Phase is "read", "spill", "write" or "commit".
	Phase string
	// Done and Total count Unit in this phase (Total 0 when unknown).
	Done, Total int64
	// Unit is "bytes", "rows", "files" or "commits".
	Unit string
	// BinsDone of BinsTotal bins and FilesDone of FilesTotal input files are
	// rewritten so far, in every report of the run (the totals are the plan's
	// NumBins and NumFiles). A bin is done once its new files are written, before
	// the commit; a compaction bin's input file is done once copied, a clustering
	// bin's input files when the bin is done. After a conflict Execute plans again,
	// and the counts start over against the new plan's totals.
	BinsDone, BinsTotal   int64
	FilesDone, FilesTotal int64
}

// Options configures NewPlan and Execute. The zero value compacts every partition with
// the table's defaults.
type Options struct {
	// TargetFileSize is the size output files aim for; default the table property
	// delta.targetFileSize, else DefaultTargetFileSize.
	TargetFileSize int64
	// MinFileSize: compaction only rewrites files smaller than this; default
	// log.SmallFileSizeFor(TargetFileSize), three quarters of it. A file of at least three quarters of the target is left
	// alone: merging it could at best produce a file 1.75 times the target, and the
	// rewrite would cost more than it saves.
	MinFileSize int64
	// PartitionFilter, if set, restricts OPTIMIZE to the partitions for which it
	// returns true. Its argument maps each partition column (logical name, as in the
	// schema) to its typed value (NULL for a null partition value).
	PartitionFilter func(partitionValues map[string]value.Value) bool
	// Predicate is the text of the partition predicate, recorded in commitInfo as
	// operationParameters.predicate (it is not evaluated; PartitionFilter is).
	Predicate string
	// Curve selects compaction (CurveNone, default) or clustering.
	Curve Curve
	// ClusterBy names the clustering columns (1..8): top-level columns, or
	// primitive fields nested in structs ("st.x"; backtick-quote a part with a dot);
	// required unless Curve is CurveNone or CurveWorkload. With one column every curve is a plain sort.
	// For CurveWorkload they are optional: columns the tree may cut besides the
	// ones the workload filters on; those the workload never filters get a
	// reserved share of the cuts (qdtree.Options.Unfiltered; with Robustness,
	// generic queries on them too), so queries on them still skip.
	ClusterBy []string
	// clusterPaths, when set, are the ClusterBy columns as paths of name parts (a
	// clustered table's clustering columns, whose dotted names can be ambiguous).
	clusterPaths [][]string
	// Workload is the filters CurveWorkload builds its tree for. Needed when the
	// partition has no tree yet or Full is set; otherwise new rows are routed
	// through the stored tree and the plan reports how far Workload has drifted
	// from the tree's training workload (PartitionPlan.Drift).
	Workload *workload.Workload
	// Robustness, in [0, 0.9], blends generic queries into a new tree's workload
	// (qdtree.Options.Robustness; default 0).
	Robustness float64
	// Full re-clusters every file, including finished cubes.
	Full bool
	// MinCubeSize: a cube (the files of one clustering run with the same columns and
	// curve, in one partition) whose total size is at least this is finished and left
	// alone by incremental runs; smaller cubes are clustered again together with new
	// files. Default TargetFileSize: a cube that does not even fill one file gains
	// from being merged with the next data.
	MinCubeSize int64
	// MemoryBudget bounds the rows (Arrow memory) a clustering run holds; default
	// DefaultMemoryBudget. Inputs whose estimated in-memory size times three exceeds
	// it are clustered through temporary spill files, sorted one key range at a
	// time per output writer (its columns encoded in parallel). A writer holds
	// about 48 MiB of encoder state and the open row group, plus its encoded file
	// of up to TargetFileSize on stores that cannot stream. When the budget holds
	// them (at most half of it), up to Parallelism writers work side by side, every
	// one but the first charged against the budget; the process peak is about
	// MemoryBudget plus one writer.
	MemoryBudget int64
	// SpillDir is where spill files go; default os.TempDir(). Never inside the table.
	// Spill files are uncompressed Arrow IPC streams (compressing them cost more CPU
	// than their writes and reads): a spilled bin needs about its rows' Arrow size,
	// plus 16 bytes a row, free there until it is written.
	SpillDir string
	// Parallelism bounds how many files are read or written at once; default
	// GOMAXPROCS.
	Parallelism int
	// CommitEvery commits after every CommitEvery bins (0: one commit for everything).
	CommitEvery int
	// MaxRetries is how often Execute replans on the latest snapshot after a
	// concurrent removal of an input file; 0 means DefaultMaxRetries, negative none.
	MaxRetries int
	// DryRun makes Execute return the planned metrics without writing anything.
	DryRun bool
	// Progress, if set, receives progress reports.
	Progress func(Progress)
	// Allocator allocates Arrow buffers; default memory.DefaultAllocator.
	Allocator memory.Allocator
	// BloomColumns names columns to Bloom-index in addition to those of the table
	// property skiplake.bloomFilter.columns (bloom.PropColumns); each must be a
	// top-level, non-partition data column of a primitive type (else
	// *BloomColumnError). Every file OPTIMIZE writes gets a filter per column of the
	// union, in a Bloom index file and natively in the Parquet file. Columns not yet
	// in the property are added to it by the (last) commit of the run, and setting
	// BloomColumns turns BackfillBloom on.
	BloomColumns []string
	// BloomFPP is the filters' false-positive probability; 0 means the table
	// property skiplake.bloomFilter.fpp, else bloom.DefaultFPP. Otherwise it must lie
	// in [bloom.MinFPP, bloom.MaxFPP]. It is not persisted.
	BloomFPP float64
	// BackfillBloom makes every file whose skiplake.bloom tag does not list all
	// Bloom columns (table property ∪ BloomColumns) a candidate for rewriting, even
	// when compaction or clustering would leave it alone: compaction packs it like a
	// small file (a bin of a single such file is rewritten on its own), clustering
	// rewrites a file of a finished cube on its own, keeping its cube tags (its rows
	// keep their order). Set automatically when BloomColumns is non-empty.
	BackfillBloom bool
	// StitchMinRowGroupBytes: plain compaction copies the input files' row groups
	// into the new file unchanged — no decode, no re-encode
	// (datafile.Output.Stitch) — when every input's row groups hold at least this
	// many compressed bytes and the other conditions hold (see "Copying row groups"
	// in the package documentation); otherwise it re-encodes. Default 0: a quarter
	// of the output files' row-group size (datafile.RowGroupTarget(TargetFileSize)/4:
	// 4 MiB for 128 MiB files), so that the small row groups of many small appends
	// are merged into row groups of the target size instead of kept. Negative:
	// never copy. A bin that qualifies but for row groups below this size has them
	// merged page by page into row groups of the output's row-group size (the
	// columns without a dictionary copied page by page, the others re-encoded;
	// Metrics.NumMergedBins) unless NoRowGroupMerge is set.
	StitchMinRowGroupBytes int64
	// NoRowGroupMerge turns the page-level merging of small row groups off: a bin
	// whose row groups are below StitchMinRowGroupBytes is then re-encoded
	// (ReencodeReasons "row-group-size").
	NoRowGroupMerge bool

	// Liquid clustering and scheduled maintenance (skiplake maintain, auto-compaction).

	// Auto marks a run as auto-compaction: its commit records auto=true among its
	// operation parameters, as Delta Spark records auto compaction. Default false.
	Auto bool

	// MaxBytes, when positive, bounds the bytes a run rewrites: bins are planned in
	// partition order while they fit, and a clustering bin larger than what is left
	// is cut to its oldest files that fit (clustering a subset of the candidates is
	// still incremental clustering). Files left out are counted in
	// Plan.DeferredFiles and Plan.DeferredBytes. Default 0: no bound.
	MaxBytes int64
	// Partitions, when non-nil, restricts the run to the partitions whose
	// serialized values (log.Add.PartitionValues, nil meaning null) equal one of
	// these maps: auto-compaction passes the partitions a write touched. Default nil:
	// every partition (PartitionFilter still applies).
	Partitions []map[string]*string
	// MinFiles, when positive, skips a partition with fewer than MinFiles candidate
	// files that are not clustered yet (auto-compaction's threshold: small files, or
	// on a clustered table new files). Default 0: any number.
	MinFiles int
	// CubeFanIn is the tiering of incremental liquid clustering (a clustered table's
	// OPTIMIZE): unfinished cubes are grouped in size tiers (tier t holds cubes of
	// TargetFileSize·CubeFanIn^t up to TargetFileSize·CubeFanIn^(t+1)), and the cubes
	// of a tier are re-clustered together, with the new files, once the tier holds
	// CubeFanIn of them. Each byte is so rewritten about once per tier it climbs,
	// while a query on the clustering columns meets at most CubeFanIn-1 cubes per
	// tier. Default DefaultCubeFanIn (4). On a clustered table MinCubeSize defaults to
	// TargetFileSize·CubeFanIn³: cubes that large are finished.
	CubeFanIn int
	// CubeFiles is the least number of files a liquid clustering bin is cut into,
	// so that a small cube still splits the key space finely (a query reads the
	// files whose key ranges it meets: the more files per cube, the fewer bytes);
	// its files are never smaller than the small-file size (log.SmallFileSizeFor of
	// TargetFileSize), which compaction and maintenance would rewrite again. Default
	// DefaultCubeFiles (16).
	CubeFiles int
}

// Defaults of incremental liquid clustering (Options.CubeFanIn, Options.CubeFiles).
const (
	DefaultCubeFanIn = 4
	DefaultCubeFiles = 16
)

// Validate reports every problem with o at once (as *InvalidOptionsError).
func (o Options) Validate() error {
	var p []string
	if o.TargetFileSize < 0 {
		p = append(p, fmt.Sprintf("TargetFileSize %d is negative", o.TargetFileSize))
	}
	if o.MinFileSize < 0 {
		p = append(p, fmt.Sprintf("MinFileSize %d is negative", o.MinFileSize))
	}
	if o.MinCubeSize < 0 {
		p = append(p, fmt.Sprintf("MinCubeSize %d is negative", o.MinCubeSize))
	}
	if o.MemoryBudget < 0 {
		p = append(p, fmt.Sprintf("MemoryBudget %d is negative", o.MemoryBudget))
	}
	if o.Parallelism < 0 {
		p = append(p, fmt.Sprintf("Parallelism %d is negative", o.Parallelism))
	}
	if o.CommitEvery < 0 {
		p = append(p, fmt.Sprintf("CommitEvery %d is negative", o.CommitEvery))
	}
	if o.Curve > CurveWorkload {
		p = append(p, fmt.Sprintf("unknown Curve %d", o.Curve))
	}
	if o.Curve != CurveWorkload && (o.Workload != nil || o.Robustness != 0) {
		p = append(p, "Workload and Robustness are for CurveWorkload")
	}
	if !(o.Robustness >= 0 && o.Robustness <= 0.9) {
		p = append(p, fmt.Sprintf("Robustness %v outside [0, 0.9]", o.Robustness))
	}
	if o.Curve == CurveNone && len(o.ClusterBy) > 0 {
		p = append(p, "ClusterBy given without a Curve")
	}
	if o.Curve != CurveNone && o.Curve != CurveWorkload && len(o.ClusterBy) == 0 {
		p = append(p, fmt.Sprintf("Curve %s needs ClusterBy columns", o.Curve))
	}
	if o.MaxBytes < 0 {
		p = append(p, fmt.Sprintf("MaxBytes %d is negative", o.MaxBytes))
	}
	if o.CubeFanIn < 0 || o.CubeFanIn == 1 {
		p = append(p, fmt.Sprintf("CubeFanIn %d: want 0 (default) or at least 2", o.CubeFanIn))
	}
	if o.CubeFiles < 0 {
		p = append(p, fmt.Sprintf("CubeFiles %d is negative", o.CubeFiles))
	}
	if o.MinFiles < 0 {
		p = append(p, fmt.Sprintf("MinFiles %d is negative", o.MinFiles))
	}
	if len(o.ClusterBy) > 8 {
		p = append(p, fmt.Sprintf("%d clustering columns (at most 8)", len(o.ClusterBy)))
	}
	if o.BloomFPP != 0 && !(o.BloomFPP >= bloom.MinFPP && o.BloomFPP <= bloom.MaxFPP) {
		p = append(p, fmt.Sprintf("BloomFPP %v outside [%g, %g]", o.BloomFPP, bloom.MinFPP, bloom.MaxFPP))
	}
	seenBloom := map[string]bool{}
	for _, c := range o.BloomColumns {
		k := strings.ToLower(strings.TrimSpace(c))
		if k == "" {
			p = append(p, "empty Bloom filter column name")
			continue
		}
		if seenBloom[k] {
			p = append(p, fmt.Sprintf("Bloom filter column %q given twice", c))
		}
		seenBloom[k] = true
	}
	seen := map[string]bool{}
	for _, c := range o.ClusterBy {
		k := strings.ToLower(c)
		if seen[k] {
			p = append(p, fmt.Sprintf("clustering column %q given twice", c))
		}
		seen[k] = true
	}
	if len(p) > 0 {
		return &InvalidOptionsError{Problems: p}
	}
	return nil
}

// resolve applies the defaults, reading the table's properties (props) for the
// target file size; an invalid stored delta.targetFileSize is an error then.
func (o Options) resolve(props *log.TableProperties) (Options, error) {
	if err := o.Validate(); err != nil {
		return o, err
	}
	if o.TargetFileSize == 0 {
		if err := props.Err(log.PropTargetFileSize); err != nil {
			return o, &InvalidOptionsError{Problems: []string{err.Error()}}
		}
		o.TargetFileSize = props.TargetFileSize
	}
	if o.MinFileSize == 0 {
		o.MinFileSize = log.SmallFileSizeFor(o.TargetFileSize)
	}
	if o.MinCubeSize == 0 {
		o.MinCubeSize = o.TargetFileSize
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.Parallelism == 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if len(o.BloomColumns) > 0 {
		o.BackfillBloom = true
	}
	return o, nil
}
