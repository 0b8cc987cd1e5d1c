package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skiplake/skiplake/internal/health"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/vacuum"
)

// Maintenance task names (MaintainTask.Task), in the order Maintain runs them.
const (
	TaskCheckpoint    = "checkpoint"     // a checkpoint when one is due
	TaskCompact       = "compact"        // small files merged
	TaskCluster       = "cluster"        // unclustered data clustered incrementally
	TaskPurge         = "purge"          // deleted rows purged from files past skiplake.optimize.maxDeletedRowsRatio
	TaskBloomBackfill = "bloom-backfill" // files given the Bloom filters they lack
	TaskVacuum        = "vacuum"         // files no version within the retention needs deleted
	TaskLogCleanup    = "log-cleanup"    // expired log files deleted
)

// Maintenance task outcomes (MaintainTask.Status).
const (
	StatusDone      = "done"       // the task did all that was due
	StatusPartial   = "partial"    // it did some; the budget left the rest for a later run
	StatusPlanned   = "planned"    // dry run: it would run
	StatusNotNeeded = "not-needed" // nothing was due
	StatusSkipped   = "skipped"    // due, but not started (budget exhausted, or an earlier failure)
	StatusFailed    = "failed"     // it failed; Error says why
)

// MaintainOptions configures Maintain. The zero value does everything that is due,
// without a budget, with the table's retention settings.
type MaintainOptions struct {
	// MaxBytes bounds the bytes the rewriting tasks (compaction, clustering, Bloom
	// backfill) read and rewrite in this run; the rest is left for the next run (the
	// oldest data first). Default 0: no bound.
	MaxBytes int64
	// MaxDuration bounds the run's wall time: no task starts once it has elapsed,
	// and a rewrite still running then is cancelled (batches it committed stay;
	// uncommitted files are deleted). The rewrite is reported partial and the tasks
	// not started skipped, naming the budget. Default 0: no bound.
	MaxDuration time.Duration
	// DryRun reports what is due without changing anything.
	DryRun bool
	// Force lets the VACUUM task run when the table's
	// delta.deletedFileRetentionDuration is below vacuum.SafetyFloor (7 days); without
	// it that task fails with a vacuum.RetentionTooShortError and the other tasks still run.
	// Files younger than vacuum.MinUnreferencedAge are kept even then. Default false.
	Force bool
	// Now is the clock for retention decisions (VACUUM, tombstones, log expiry) and
	// commit timestamps; default time.Now.
	Now func() time.Time
	// Parallelism and MemoryBudget are passed to OPTIMIZE (defaults GOMAXPROCS and
	// 1 GiB).
	Parallelism  int
	MemoryBudget int64
	// Progress, if set, is called as the rewrites proceed (bytes of the run's
	// rewrite done, with the bins and files done), and as VACUUM deletes files.
	Progress func(Progress)

	// PlanAt, Shard and Shards run one shard of the rewrite, as for Optimize
	// (OptimizeOptions.Shards): the plan is made on PlanAt, the shard's bins are
	// rewritten within the budgets, and only shard 0 does the other tasks
	// (checkpoint, VACUUM, log cleanup). Default: no sharding, the latest version.
	PlanAt        Ref
	Shard, Shards int

	// budgetClock measures MaxDuration (default time.Now); tests set it to spend the
	// budget at a chosen point without waiting.
	budgetClock func() time.Time
}

// errBudgetSpent is the cause of a rewrite cancelled by MaxDuration.
var errBudgetSpent = errors.New("the MaxDuration budget is spent")

// MaintainFindings is the state Maintain found before doing anything.
type MaintainFindings struct {
	// Files and Bytes count the live files.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// SmallFiles and SmallBytes count files below three quarters of the target size.
	SmallFiles int   `json:"smallFiles"`
	SmallBytes int64 `json:"smallBytes"`
	// ClusteringColumns are the columns the table is clustered by (its clustering
	// columns, or those of its most recent clustering run); UnclusteredFiles and
	// UnclusteredBytes count the files not yet clustered by them (0 without columns).
	ClusteringColumns []string `json:"clusteringColumns,omitempty"`
	UnclusteredFiles  int      `json:"unclusteredFiles"`
	UnclusteredBytes  int64    `json:"unclusteredBytes"`
	// FilesLackingBloom counts files without the Bloom filters of
	// skiplake.bloomFilter.columns.
	FilesLackingBloom int `json:"filesLackingBloom"`
	// DeletedRows counts the rows deletion vectors mark deleted that data files
	// still hold, of Rows physical rows (DeletedRowsRatio: their share), in
	// FilesWithDeletedRows files; PurgeFiles of those are past
	// MaxDeletedRowsRatio (skiplake.optimize.maxDeletedRowsRatio), which the purge
	// task rewrites without the deleted rows.
	Rows                 int64   `json:"rows"`
	DeletedRows          int64   `json:"deletedRows"`
	DeletedRowsRatio     float64 `json:"deletedRowsRatio"`
	FilesWithDeletedRows int     `json:"filesWithDeletedRows"`
	PurgeFiles           int     `json:"purgeFiles"`
	MaxDeletedRowsRatio  float64 `json:"maxDeletedRowsRatio"`
	// CheckpointVersion is the newest checkpoint (-1: none) and CommitsSinceCheckpoint
	// how many commits came after it; CheckpointInterval is delta.checkpointInterval.
	CheckpointVersion      int64 `json:"checkpointVersion"`
	CommitsSinceCheckpoint int64 `json:"commitsSinceCheckpoint"`
	CheckpointInterval     int64 `json:"checkpointInterval"`
	// Tombstones counts removed files still in the table state, ExpiredTombstones
	// those older than delta.deletedFileRetentionDuration.
	Tombstones        int `json:"tombstones"`
	ExpiredTombstones int `json:"expiredTombstones"`
	// VacuumableFiles and VacuumableBytes count the files VACUUM would delete.
	VacuumableFiles int   `json:"vacuumableFiles"`
	VacuumableBytes int64 `json:"vacuumableBytes"`
	// ExpiredLogFiles counts the log files past delta.logRetentionDuration that log
	// cleanup would delete.
	ExpiredLogFiles int `json:"expiredLogFiles"`
}

// MaintainTask is what one task found and did.
type MaintainTask struct {
	// Task is one of the Task* names; Status one of the Status* outcomes.
	Task   string `json:"task"`
	Status string `json:"status"`
	// Reason explains a status other than done.
	Reason string `json:"reason,omitempty"`
	// Files and Bytes count what the task rewrote (its input) or deleted, and
	// nothing it did not: a task skipped or cut short by a budget counts only its
	// committed work. On a dry run they count what a run with the same byte
	// budget would do.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Versions are the table versions it committed (or checkpointed).
	Versions []int64 `json:"versions,omitempty"`
	// LeftFiles and LeftBytes count the due work the run left undone (a budget,
	// an earlier failure, a dry run's budget); NeedsBytes, when positive, is the
	// smallest budget in bytes under which the part of it that is beyond this
	// budget could run (status beyond-budget).
	LeftFiles  int   `json:"leftFiles,omitempty"`
	LeftBytes  int64 `json:"leftBytes,omitempty"`
	NeedsBytes int64 `json:"needsBytes,omitempty"`
	// Error is the failure of a failed task.
	Error string `json:"error,omitempty"`
}

// MaintainReport is the outcome of Maintain.
type MaintainReport struct {
	// Version is the latest version when the run started; FinalVersion when it ended.
	Version      int64 `json:"version"`
	FinalVersion int64 `json:"finalVersion"`
	// DryRun is true when nothing was changed.
	DryRun bool `json:"dryRun"`
	// Found is the state before the run.
	Found MaintainFindings `json:"found"`
	// Tasks lists every task in the order run, with its outcome.
	Tasks []MaintainTask `json:"tasks"`
	// Commits lists the rewrite's commits in order: one per bin, or per piece of
	// a bin cut to fit the budget.
	Commits []MaintainCommit `json:"commits,omitempty"`
	// WorkRemains is true when something due was left undone: a budget ran out, a
	// task failed, or (dry run) anything is due.
	WorkRemains bool `json:"workRemains"`
	// Failed is true when a task failed.
	Failed bool `json:"failed"`
	// Elapsed is the run's wall time.
	Elapsed time.Duration `json:"elapsedNanos"`
}

// Task returns the report of the named task (nil when absent).
func (r *MaintainReport) Task(name string) *MaintainTask {
	for i := range r.Tasks {
		if r.Tasks[i].Task == name {
			return &r.Tasks[i]
		}
	}
	return nil
}

// Maintain inspects the table and does the maintenance that is due, in this order:
//
//  1. checkpoint, when delta.checkpointInterval commits or more came after the last
//     one (later reads, and everything below, start from it);
//  2. compaction of small files, incremental clustering of unclustered data (on a
//     clustered table by its clustering columns; on another table by the columns and
//     curve of its most recent clustering run, if any) and Bloom filter backfill —
//     one OPTIMIZE run whose rewrites are bounded by MaxBytes, oldest data first;
//  3. VACUUM of files no version within delta.deletedFileRetentionDuration needs
//     (refused — the task fails, the others still run — when that retention is below
//     vacuum.SafetyFloor, unless Force);
//  4. a checkpoint again when the run made one due, or when the run committed and
//     the state holds tombstones past the retention (a fresh checkpoint drops them;
//     an existing checkpoint is never rewritten);
//  5. cleanup of log files past delta.logRetentionDuration, only commits a checkpoint
//     covers (PROTOCOL.md "Metadata Cleanup").
//
// It is safe beside writers: rewrites commit at snapshot isolation (concurrent
// appends never conflict; a concurrent removal of an input makes OPTIMIZE replan),
// VACUUM keeps everything younger than the retention and, even forced, every
// unreferenced file younger than vacuum.MinUnreferencedAge (the files of writes still
// committing), and log cleanup keeps every
// version from the newest checkpoint before the log retention cutoff. It is
// idempotent: a run right after a complete one finds nothing due. A failed task is
// reported (Failed, the task's Error) and later tasks still run, except that a failed
// rewrite skips VACUUM; Maintain returns an error only when the table cannot be read.
func (t *Table) Maintain(ctx context.Context, opts MaintainOptions) (*MaintainReport, error) {
	if opts.MaxBytes < 0 || opts.MaxDuration < 0 || opts.Parallelism < 0 || opts.MemoryBudget < 0 {
		return nil, fmt.Errorf("%w: negative MaxBytes, MaxDuration, Parallelism or MemoryBudget", ErrInvalidArgument)
	}
	if err := checkShard(opts.Shard, opts.Shards, opts.PlanAt); err != nil {
		return nil, err
	}
	wallStart := time.Now()
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	clock := opts.budgetClock
	if clock == nil {
		clock = time.Now
	}
	lg := t.log.WithClock(now)
	m := &maintenance{t: t, lg: lg, opts: opts, now: now, clock: clock, start: clock()}
	rep, err := m.run(ctx)
	if rep != nil {
		rep.Elapsed = time.Since(wallStart)
	}
	return rep, err
}

// maintenance is one Maintain run.
type maintenance struct {
	t     *Table
	lg    *log.Log
	opts  MaintainOptions
	now   func() time.Time
	clock func() time.Time // measures MaxDuration
	start time.Time        // by clock
	rep   *MaintainReport
	// piece is the rewrite's piece in flight (maintain_rewrite.go); the counts
	// below are the run's progress.
	piece               *pieceWatch
	binsDone, binsTotal int64
	doneFiles, runFiles int64
	doneBytes, runBytes int64
	// vacuumRefused is VACUUM's refusal of the table's retention (below the safety
	// floor, without Force); the VACUUM task then fails with it.
	vacuumRefused error
}

func (m *maintenance) expired() bool {
	return m.opts.MaxDuration > 0 && m.clock().Sub(m.start) >= m.opts.MaxDuration
}

func (m *maintenance) add(task MaintainTask) {
	switch task.Status {
	case StatusPartial, StatusSkipped:
		m.rep.WorkRemains = true
	case StatusPlanned:
		m.rep.WorkRemains = true
	case StatusFailed:
		m.rep.WorkRemains, m.rep.Failed = true, true
	}
	m.rep.Tasks = append(m.rep.Tasks, task)
}

// due returns the status of a task that has work: planned on a dry run, skipped when
// the duration budget is spent, else "" (run it).
func (m *maintenance) due() (string, string) {
	switch {
	case m.opts.DryRun:
		return StatusPlanned, "dry run"
	case m.expired():
		return StatusSkipped, "the MaxDuration budget (CLI --max-duration) is spent"
	}
	return "", ""
}

func (m *maintenance) run(ctx context.Context) (*MaintainReport, error) {
	snap, err := m.lg.Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	if err := snap.CheckWritable(); err != nil {
		return nil, err
	}
	view, err := tableview.New(snap)
	if err != nil {
		return nil, err
	}
	m.rep = &MaintainReport{Version: snap.Version(), FinalVersion: snap.Version(), DryRun: m.opts.DryRun}
	// A table OPTIMIZE cannot rewrite (say, clustered by a nested column) still gets
	// the other tasks; the rewrite tasks report the failure.
	planView := view
	if m.opts.PlanAt.kind != refLatest {
		ps, err := m.t.Snapshot(ctx, m.opts.PlanAt)
		if err != nil {
			return nil, err
		}
		planView = ps.view
	}
	plan, planErr := m.planRewrite(ctx, planView)
	if planErr == nil && m.opts.Shards > 1 {
		plan, planErr = plan.Shard(m.opts.Shard, m.opts.Shards)
	}
	if planErr != nil && ctx.Err() != nil {
		return nil, planErr
	}
	vac, err := vacuum.Run(ctx, m.lg, vacuum.Options{DryRun: true, Force: m.opts.Force, Now: m.now})
	var short *vacuum.RetentionTooShortError
	switch {
	case errors.As(err, &short):
		// The table's retention is below the safety floor: VACUUM is refused (the
		// task fails, naming why); the other tasks still run.
		m.vacuumRefused, vac = vacuum.Naming(err, "MaintainOptions.Force"), &vacuum.Result{}
	case err != nil:
		return nil, err
	}
	cleanup, err := m.lg.CleanupExpiredLog(ctx, snap, true)
	if err != nil {
		return nil, err
	}
	m.find(view, plan, vac, cleanup)

	// A shard other than 0 rewrites only; shard 0 does the other tasks.
	if m.opts.Shard > 0 {
		notMine := fmt.Sprintf("shard %d of %d rewrites only; shard 0 does this task", m.opts.Shard, m.opts.Shards)
		m.add(MaintainTask{Task: TaskCheckpoint, Status: StatusNotNeeded, Reason: notMine})
		if planErr != nil {
			for _, name := range rewriteTasks {
				m.add(MaintainTask{Task: name, Status: StatusFailed, Reason: "OPTIMIZE cannot plan this table", Error: planErr.Error()})
			}
		} else {
			m.rewrite(ctx, plan)
		}
		for _, name := range []string{TaskVacuum, TaskLogCleanup} {
			m.add(MaintainTask{Task: name, Status: StatusNotNeeded, Reason: notMine})
		}
		if latest, err := m.lg.Snapshot(ctx, -1); err == nil {
			m.rep.FinalVersion = latest.Version()
		}
		return m.rep, nil
	}
	// 1. Checkpoint when due.
	m.checkpoint(ctx, snap, false)
	// 2. Compaction, clustering, Bloom backfill.
	rewriteFailed := true
	if planErr != nil {
		for _, name := range rewriteTasks {
			m.add(MaintainTask{Task: name, Status: StatusFailed, Reason: "OPTIMIZE cannot plan this table", Error: planErr.Error()})
		}
	} else {
		rewriteFailed = m.rewrite(ctx, plan)
	}
	// 3. VACUUM.
	m.vacuum(ctx, vac, rewriteFailed)
	// 4. Checkpoint again when due now (or to drop expired tombstones).
	if latest, err := m.lg.Snapshot(ctx, -1); err == nil {
		m.rep.FinalVersion = latest.Version()
		m.checkpoint(ctx, latest, true)
		snap = latest
	} else {
		m.add(MaintainTask{Task: TaskCheckpoint, Status: StatusFailed, Error: err.Error()})
	}
	// 5. Log cleanup.
	m.logCleanup(ctx, snap, cleanup)
	return m.rep, nil
}

// planRewrite plans the OPTIMIZE run: clustering by the table's clustering columns
// (the planner applies them), or by its last clustering run's columns and curve,
// else compaction; Bloom backfill whenever the table has Bloom columns.
func (m *maintenance) planRewrite(ctx context.Context, view *tableview.View) (*optimize.Plan, error) {
	// The budgets are applied bin by bin (maintain_rewrite.go), not by the plan.
	o := optimize.Options{BackfillBloom: len(view.Properties().BloomFilterColumns) > 0,
		Parallelism: m.opts.Parallelism, MemoryBudget: m.opts.MemoryBudget, Progress: m.onProgress}
	if c, err := view.Clustering(); err != nil {
		return nil, err
	} else if c == nil {
		if cols, curve := lastClustering(view.Log().Files()); len(cols) > 0 {
			o.Curve, o.ClusterBy = curve, cols
			p, err := optimize.NewPlanOn(ctx, view, m.t.store, o)
			if err == nil {
				return p, nil
			}
			// The columns of an old run may be gone (or have lost their
			// statistics): compact instead.
			o.Curve, o.ClusterBy = optimize.CurveNone, nil
		}
	}
	return optimize.NewPlanOn(ctx, view, m.t.store, o)
}

// lastClustering returns the columns and curve of the most recent clustering run
// recorded in the files' cube tags.
func lastClustering(files []*log.Add) ([]string, optimize.Curve) {
	var best *log.Add
	for _, a := range files {
		if a.Tags[optimize.TagCubeColumns] != "" && (best == nil || a.ModificationTime > best.ModificationTime) {
			best = a
		}
	}
	if best == nil {
		return nil, optimize.CurveNone
	}
	var cols []string
	curve, err := optimize.ParseCurve(best.Tags[optimize.TagCubeCurve])
	if json.Unmarshal([]byte(best.Tags[optimize.TagCubeColumns]), &cols) != nil || err != nil || curve == optimize.CurveNone {
		return nil, optimize.CurveNone
	}
	return cols, curve
}

// find fills the report's findings.
func (m *maintenance) find(view *tableview.View, plan *optimize.Plan, vac *vacuum.Result, cleanup *log.LogCleanup) {
	snap, props := view.Log(), view.Properties()
	f := &m.rep.Found
	hf := make([]health.File, len(snap.Files()))
	for i, a := range snap.Files() {
		hf[i] = health.File{Size: a.Size}
		if plan != nil && plan.Curve != optimize.CurveNone && a.ClusteringProvider == "" && a.Tags[optimize.TagCubeID] == "" {
			f.UnclusteredFiles++
			f.UnclusteredBytes += a.Size
		}
	}
	sum := health.Summarize(hf, view.SmallFileSize())
	f.Files, f.Bytes, f.SmallFiles, f.SmallBytes = sum.Files, sum.Bytes, sum.SmallFiles, sum.SmallBytes
	if plan != nil {
		f.ClusteringColumns = plan.ClusterBy
		f.FilesLackingBloom = plan.BackfillFiles
	}
	dv := deletionDebt(snap)
	f.Rows, f.DeletedRows, f.DeletedRowsRatio = dv.Rows, dv.DeletedRows, dv.Ratio
	f.FilesWithDeletedRows, f.PurgeFiles, f.MaxDeletedRowsRatio = dv.Files, dv.PurgeFiles, dv.Threshold
	f.CheckpointVersion = snap.CheckpointVersion()
	f.CommitsSinceCheckpoint = snap.Version() - snap.CheckpointVersion()
	if f.CheckpointVersion < 0 {
		f.CommitsSinceCheckpoint = snap.Version()
	}
	f.CheckpointInterval = props.CheckpointInterval
	f.Tombstones = len(snap.Tombstones())
	f.ExpiredTombstones = m.expiredTombstones(snap)
	f.VacuumableFiles = len(vac.Files) + len(vac.Temporaries)
	f.VacuumableBytes = vac.Bytes + vac.TemporaryBytes
	f.ExpiredLogFiles = len(cleanup.Files)
}

// expiredTombstones counts the tombstones past delta.deletedFileRetentionDuration.
func (m *maintenance) expiredTombstones(snap *log.Snapshot) int {
	props := snap.Properties()
	if props.Err(log.PropDeletedFileRetentionDuration) != nil {
		return 0
	}
	cutoff := m.now().Add(-props.DeletedFileRetention).UnixMilli()
	n := 0
	for _, r := range snap.Tombstones() {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp < cutoff {
			n++
		}
	}
	return n
}

// checkpoint writes a checkpoint of snap when one is due: delta.checkpointInterval
// commits since the last one, or, at the end of the run (final), a version newer
// than the last checkpoint whose state holds tombstones past the retention (a fresh
// checkpoint drops them).
func (m *maintenance) checkpoint(ctx context.Context, snap *log.Snapshot, final bool) {
	if snap.Version() <= 0 && snap.CheckpointVersion() < 0 {
		if !final {
			m.add(MaintainTask{Task: TaskCheckpoint, Status: StatusNotNeeded, Reason: "version 0 needs no checkpoint"})
		}
		return
	}
	since := snap.Version() - max(snap.CheckpointVersion(), 0)
	if snap.CheckpointVersion() < 0 {
		since = snap.Version()
	}
	interval := snap.Properties().CheckpointInterval
	reason := ""
	switch {
	case final && m.opts.DryRun:
		return // the first check reported what is due
	case since >= interval:
		reason = fmt.Sprintf("%d commits since the last checkpoint (interval %d)", since, interval)
	case final && snap.Version() > snap.CheckpointVersion() && m.expiredTombstones(snap) > 0:
		// A checkpoint of a new version drops them; an existing checkpoint is never
		// rewritten (a reader may be reading it).
		reason = fmt.Sprintf("%d tombstones past the retention to drop from the table state", m.expiredTombstones(snap))
	}
	if reason == "" {
		if !final {
			m.add(MaintainTask{Task: TaskCheckpoint, Status: StatusNotNeeded,
				Reason: fmt.Sprintf("%d commits since the last checkpoint (interval %d)", since, interval)})
		}
		return
	}
	if st, why := m.due(); st != "" {
		m.add(MaintainTask{Task: TaskCheckpoint, Status: st, Reason: why + "; " + reason})
		return
	}
	if err := m.lg.Checkpoint(ctx, snap); err != nil {
		m.add(MaintainTask{Task: TaskCheckpoint, Status: StatusFailed, Reason: reason, Error: err.Error()})
		return
	}
	m.add(MaintainTask{Task: TaskCheckpoint, Status: StatusDone, Reason: reason, Versions: []int64{snap.Version()}})
}

// undone reports the files and bytes of a task that did not run: what it would do
// on a dry run (planned), what it left otherwise.
func undone(t MaintainTask, files int, bytes int64) MaintainTask {
	if t.Status == StatusPlanned {
		t.Files, t.Bytes = files, bytes
	} else {
		t.LeftFiles, t.LeftBytes = files, bytes
	}
	return t
}

// vacuum deletes what VACUUM found (vac is its dry run).
func (m *maintenance) vacuum(ctx context.Context, vac *vacuum.Result, rewriteFailed bool) {
	if m.vacuumRefused != nil {
		m.add(MaintainTask{Task: TaskVacuum, Status: StatusFailed,
			Reason: fmt.Sprintf("%s is below the safety floor of %d days (Force vacuums anyway)", log.PropDeletedFileRetentionDuration, vacuum.SafetyFloor/(24*time.Hour)),
			Error:  m.vacuumRefused.Error()})
		return
	}
	n := len(vac.Files) + len(vac.Temporaries)
	bytes := vac.Bytes + vac.TemporaryBytes
	if n == 0 {
		m.add(MaintainTask{Task: TaskVacuum, Status: StatusNotNeeded, Reason: "no unreferenced file older than the retention"})
		return
	}
	if rewriteFailed {
		m.add(MaintainTask{Task: TaskVacuum, Status: StatusSkipped, Reason: "the rewrite failed", LeftFiles: n, LeftBytes: bytes})
		return
	}
	if st, why := m.due(); st != "" {
		m.add(undone(MaintainTask{Task: TaskVacuum, Status: st, Reason: why}, n, bytes))
		return
	}
	res, err := vacuum.Run(ctx, m.lg, vacuum.Options{Force: m.opts.Force, Now: m.now, Progress: vacuumProgress(m.opts.Progress)})
	if err != nil {
		m.add(MaintainTask{Task: TaskVacuum, Status: StatusFailed, Error: err.Error()})
		return
	}
	m.add(MaintainTask{Task: TaskVacuum, Status: StatusDone, Files: len(res.Files) + len(res.Temporaries), Bytes: res.Bytes + res.TemporaryBytes})
}

// logCleanup deletes expired log files. found is the dry run at the start; a real
// run looks again, since the checkpoints this run wrote may cover more.
func (m *maintenance) logCleanup(ctx context.Context, snap *log.Snapshot, found *log.LogCleanup) {
	if !found.Enabled {
		m.add(MaintainTask{Task: TaskLogCleanup, Status: StatusNotNeeded, Reason: log.PropEnableExpiredLogCleanup + " is false"})
		return
	}
	if !m.opts.DryRun {
		var err error
		if found, err = m.lg.CleanupExpiredLog(ctx, snap, true); err != nil {
			m.add(MaintainTask{Task: TaskLogCleanup, Status: StatusFailed, Error: err.Error()})
			return
		}
	}
	if len(found.Files) == 0 {
		m.add(MaintainTask{Task: TaskLogCleanup, Status: StatusNotNeeded, Reason: "no log file past the log retention that a checkpoint covers"})
		return
	}
	if st, why := m.due(); st != "" {
		m.add(undone(MaintainTask{Task: TaskLogCleanup, Status: st, Reason: why}, len(found.Files), found.Bytes))
		return
	}
	res, err := m.lg.CleanupExpiredLog(ctx, snap, false)
	if err != nil {
		m.add(MaintainTask{Task: TaskLogCleanup, Status: StatusFailed, Error: err.Error()})
		return
	}
	m.add(MaintainTask{Task: TaskLogCleanup, Status: StatusDone, Files: len(res.Files), Bytes: res.Bytes,
		Reason: fmt.Sprintf("log files before checkpoint %d (cutoff %s)", res.CheckpointVersion, res.Cutoff.Format(time.RFC3339))})
}
