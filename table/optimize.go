package table

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/vacuum"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// OptimizeOptions configures Optimize. The zero value compacts small files in every
// partition with the table's target file size.
type OptimizeOptions struct {
	// Where restricts OPTIMIZE to partitions matching a predicate over partition
	// columns only (the expr grammar), e.g. "day >= DATE '2026-01-01'".
	Where string
	// ZOrderBy or HilbertBy (at most one) cluster the rewritten data on these
	// columns with a Z-order or Hilbert curve over their ranks. LinearBy sorts
	// lexicographically (the baseline). A field nested in structs is named st.x.
	ZOrderBy, HilbertBy, LinearBy []string
	// Layout "workload" lays the data out by a tree of cuts learned from Workload
	// (optimize.CurveWorkload): a file per leaf, the tree stored beside the data
	// and named by every file's tags, so that later runs route new rows through
	// it. Workload is needed for the first run and with Full; later runs without
	// it route through the stored tree, and with it report the drift from the
	// tree's training workload (OptimizeResult.Plan's partitions). "" clusters by
	// the curves above.
	Layout string
	// Workload is the workload of Layout "workload".
	Workload *workload.Workload
	// Robustness blends generic queries into a new workload tree (0..0.9).
	Robustness float64
	// WorkloadColumns are columns the workload tree may cut besides those the
	// workload filters on (they keep some skipping for other queries, more so
	// with Robustness).
	WorkloadColumns []string
	// Full re-clusters every file, including cubes a previous run finished (and,
	// for Layout "workload", builds a new tree).
	Full bool
	// BloomColumns adds Bloom filters on these columns to every file OPTIMIZE writes,
	// rewrites files that lack them (backfill), and records them in the table property
	// skiplake.bloomFilter.columns so later writes build them too.
	BloomColumns []string
	// TargetFileSize overrides delta.targetFileSize (default 128 MiB).
	TargetFileSize int64
	// MemoryBudget bounds the memory clustering uses before spilling (default 1 GiB).
	MemoryBudget int64
	// Parallelism bounds concurrent bins and writers (default GOMAXPROCS).
	Parallelism int
	// CommitEvery commits after this many bins (0: one commit for the whole run).
	CommitEvery int
	// StitchMinRowGroupBytes: compaction copies the input files' row groups
	// unchanged (no decode, no re-encode) when each holds at least this many
	// compressed bytes and the files qualify (optimize.Options.StitchMinRowGroupBytes);
	// default 0: a quarter of the output's row-group size; negative: never.
	StitchMinRowGroupBytes int64
	// DryRun plans without writing anything.
	DryRun bool
	// Progress, if set, is called as work proceeds, from one goroutine at a time:
	// bytes of input done in each report's phase, and the bins and input files
	// rewritten so far (Progress.BinsDone, FilesDone) against the plan's totals.
	Progress func(Progress)
	// OnPlan, if set, receives the plan once it is made, before any file is read
	// or written (a dry run calls it too). It must not modify the plan.
	OnPlan func(*optimize.Plan)

	// Running one OPTIMIZE on several machines (docs/distributed.md).

	// PlanAt is the version the plan is made on (default Latest()). Shards of one
	// run must plan on the same version: AtVersion(v), or AtTimestamp(t) with a t
	// before any of them started. The commits land on the latest version as always
	// (snapshot isolation: they conflict only with commits that removed their files).
	PlanAt Ref
	// Shards, when above 1, splits the plan into that many shards and runs only
	// Shard (0 <= Shard < Shards): the bins optimize.AssignShards gives it, balanced
	// by bytes and computed identically by every process that makes the same plan.
	// Each bin is committed on its own; after a conflict only the shard's files are
	// replanned (files another commit removed are left out), so shards never rewrite
	// a file twice. Needs PlanAt other than Latest(); a workload layout, and a run
	// that adds Bloom columns to the table property, cannot be sharded.
	Shard, Shards int
}

// OptimizeResult is the plan Optimize made and, unless it was a dry run, what it did.
type OptimizeResult struct {
	// Plan is the plan: the bins of files to rewrite, per partition.
	Plan *optimize.Plan `json:"plan"`
	// Metrics is what the rewrite did; nil on a dry run.
	Metrics *optimize.Metrics `json:"metrics,omitempty"`
}

// Optimize compacts and optionally clusters the table (O1: the multiset of live rows
// never changes). It commits removes and adds with dataChange=false at snapshot
// isolation, so concurrent appends never make it fail; a concurrent removal of a file
// it rewrites makes it replan, or stop with nothing committed.
func (t *Table) Optimize(ctx context.Context, opts OptimizeOptions) (*OptimizeResult, error) {
	if err := checkShard(opts.Shard, opts.Shards, opts.PlanAt); err != nil {
		return nil, err
	}
	if opts.Shards > 1 && opts.Layout != "" {
		return nil, fmt.Errorf("%w: a workload layout cannot be sharded (the bins of a partition share its tree)", ErrInvalidArgument)
	}
	snap, err := t.Snapshot(ctx, opts.PlanAt)
	if err != nil {
		return nil, err
	}
	o := optimize.Options{
		TargetFileSize: opts.TargetFileSize, Full: opts.Full, MemoryBudget: opts.MemoryBudget,
		Parallelism: opts.Parallelism, CommitEvery: opts.CommitEvery, DryRun: opts.DryRun, Predicate: opts.Where,
		BloomColumns: opts.BloomColumns, StitchMinRowGroupBytes: opts.StitchMinRowGroupBytes,
	}
	n := 0
	for _, c := range []struct {
		cols  []string
		curve optimize.Curve
	}{{opts.ZOrderBy, optimize.CurveZOrder}, {opts.HilbertBy, optimize.CurveHilbert}, {opts.LinearBy, optimize.CurveLinear}} {
		if len(c.cols) > 0 {
			n++
			o.Curve, o.ClusterBy = c.curve, c.cols
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("%w: choose one of ZOrderBy, HilbertBy and LinearBy", ErrInvalidArgument)
	}
	switch opts.Layout {
	case "":
		if opts.Workload != nil || opts.Robustness != 0 || len(opts.WorkloadColumns) > 0 {
			return nil, fmt.Errorf("%w: Workload, Robustness and WorkloadColumns need Layout \"workload\"", ErrInvalidArgument)
		}
	case "workload":
		if n > 0 {
			return nil, fmt.Errorf("%w: Layout \"workload\" does not combine with ZOrderBy, HilbertBy or LinearBy", ErrInvalidArgument)
		}
		o.Curve, o.Workload, o.Robustness, o.ClusterBy = optimize.CurveWorkload, opts.Workload, opts.Robustness, opts.WorkloadColumns
	default:
		return nil, fmt.Errorf("%w: unknown Layout %q (want \"workload\" or none)", ErrInvalidArgument, opts.Layout)
	}
	if opts.Where != "" {
		filter, err := partitionFilter(snap, opts.Where)
		if err != nil {
			return nil, err
		}
		o.PartitionFilter = filter
	}
	o.Progress = optimizeProgress(opts.Progress)
	if opts.Shards > 1 {
		o.CommitEvery = 1
	}
	plan, err := optimize.NewPlanOn(ctx, snap.view, t.store, o)
	if err != nil {
		return nil, err
	}
	if opts.Shards > 1 {
		if plan, err = plan.Shard(opts.Shard, opts.Shards); err != nil {
			return nil, err
		}
	}
	res := &OptimizeResult{Plan: plan}
	if opts.OnPlan != nil {
		opts.OnPlan(plan)
	}
	if opts.DryRun {
		return res, nil
	}
	m, err := optimize.Execute(ctx, plan)
	if err != nil {
		return nil, err
	}
	res.Metrics = m
	return res, nil
}

// checkShard validates a shard selection: Shards 0 or 1 is no sharding; otherwise
// 0 <= shard < shards, and the plan's version must be fixed (every shard has to
// make the same plan).
func checkShard(shard, shards int, at Ref) error {
	switch {
	case shards < 0 || shard < 0:
		return fmt.Errorf("%w: shard %d of %d: negative", ErrInvalidArgument, shard, shards)
	case shards <= 1 && shard != 0:
		return fmt.Errorf("%w: shard %d given without a shard count above 1", ErrInvalidArgument, shard)
	case shards > 1 && shard >= shards:
		return fmt.Errorf("%w: shard %d of %d: shards are numbered 0 to %d", ErrInvalidArgument, shard, shards, shards-1)
	case shards > 1 && at.kind == refLatest:
		return fmt.Errorf("%w: shards must plan on one version: give PlanAt (CLI --version or --timestamp, or --plan-file)", ErrInvalidArgument)
	}
	return nil
}

// partitionFilter binds a predicate that may use partition columns only and returns
// the function OPTIMIZE uses to select partitions.
func partitionFilter(snap *Snapshot, where string) (func(map[string]value.Value) bool, error) {
	e, err := expr.Parse(where)
	if err != nil {
		return nil, err
	}
	b, err := expr.Bind(e, snap.view.Logical())
	if err != nil {
		return nil, err
	}
	for _, c := range b.Columns() {
		if len(c.Path) != 1 || !snap.view.IsPartition(c.Path[0]) {
			return nil, fmt.Errorf("%w: Where (CLI --where) may use partition columns only (%s); %q is not one", ErrInvalidArgument, joinOr(snap.log.PartitionColumns()), c.Name())
		}
	}
	return func(pv map[string]value.Value) bool {
		// Partition values decide a partition-only predicate exactly.
		return skipping.EvaluatePartition(b, pv) != skipping.CannotMatch
	}, nil
}

func joinOr(cols []string) string {
	if len(cols) == 0 {
		return "the table is not partitioned"
	}
	return "partition columns: " + strings.Join(cols, ", ")
}

// VacuumOptions configures Vacuum. The zero value keeps the table's retention
// (delta.deletedFileRetentionDuration, default 7 days).
type VacuumOptions struct {
	// Retention overrides the table's retention; shorter than the table's, or than
	// vacuum.SafetyFloor, needs Force. Zero means the table's retention unless
	// RetentionSet.
	Retention time.Duration
	// RetentionSet makes Retention apply even when it is zero (keep no unreferenced
	// file older than vacuum.MinUnreferencedAge; needs Force).
	RetentionSet bool
	// Force allows a retention shorter than the table's or than vacuum.SafetyFloor,
	// including a table retention below the floor (without it such a retention
	// fails with a vacuum.RetentionTooShortError). Files younger than
	// vacuum.MinUnreferencedAge are kept even then.
	Force bool
	// DryRun lists what would be deleted without deleting it.
	DryRun bool
	// Progress, if set, is called as files are deleted (phase "delete", bytes
	// deleted of those to delete, with the files as FilesDone of FilesTotal).
	Progress func(Progress)
}

// Vacuum deletes files under the table root that no version inside the retention
// window references and that are older than the retention period (V1), including
// Bloom index and deletion-vector files that only removed files used.
//
// VACUUM is garbage collection, not optimisation: it is package vacuum's Run (with
// its invariants V1-V3), given the table's log.
func (t *Table) Vacuum(ctx context.Context, opts VacuumOptions) (*vacuum.Result, error) {
	res, err := vacuum.Run(ctx, t.log, vacuum.Options{Retention: opts.Retention, RetentionSet: opts.RetentionSet, Force: opts.Force, DryRun: opts.DryRun, Now: t.log.Now,
		Progress: vacuumProgress(opts.Progress)})
	return res, vacuum.Naming(err, "VacuumOptions.Force")
}

// vacuumProgress adapts a Progress callback to package vacuum's (nil stays nil).
func vacuumProgress(f func(Progress)) func(bytes, totalBytes int64, files, totalFiles int) {
	if f == nil {
		return nil
	}
	return func(bytes, totalBytes int64, files, totalFiles int) {
		f(Progress{Phase: "delete", Done: bytes, Total: totalBytes, Unit: "bytes", FilesDone: int64(files), FilesTotal: int64(totalFiles)})
	}
}

// optimizeProgress adapts a Progress callback to the optimize package's (nil stays
// nil).
func optimizeProgress(f func(Progress)) func(optimize.Progress) {
	if f == nil {
		return nil
	}
	return func(p optimize.Progress) {
		f(Progress{Phase: p.Phase, Done: p.Done, Total: p.Total, Unit: p.Unit,
			BinsDone: p.BinsDone, BinsTotal: p.BinsTotal, FilesDone: p.FilesDone, FilesTotal: p.FilesTotal})
	}
}
