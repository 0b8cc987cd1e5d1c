package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

func listAll(t *testing.T, st storage.Storage) []string {
	t.Helper()
	objs, err := st.List(context.Background(), "", "")
	require.NoError(t, err)
	var out []string
	for _, o := range objs {
		out = append(out, o.Path)
	}
	sort.Strings(out)
	return out
}

// badTable builds a table in every bad state maintenance exists for: thousands of
// small files, a checkpoint far behind, tombstones and unreferenced files past the
// retention, files without the table's Bloom filters, and log files past the log
// retention. It returns the table, its store and the time "now" is for maintenance.
func badTable(t *testing.T, files int, props map[string]string, copts table.CreateOptions) (*table.Table, *storage.Memory, time.Time) {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	copts.Properties = props
	tb, err := table.Create(ctx, st, layoutSchema(), copts)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(9, 9))
	// Tombstones (past the retention by the maintenance clock): files overwritten.
	for i := 0; i < 5; i++ {
		writeLayout(t, tb, r, 20)
	}
	over := layoutBatch(r, 30, func(int) int64 { return r.Int64N(1_000_000) }, 0)
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{over}, table.WriteOptions{Overwrite: true})
	over.Release()
	require.NoError(t, err)
	// Thousands of one-row files in one write (one-row batches, a one-byte target).
	var recs []arrow.RecordBatch
	for i := 0; i < files; i++ {
		recs = append(recs, layoutBatch(r, 1, func(int) int64 { return r.Int64N(1_000_000) }, 0.05))
	}
	_, err = tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 1})
	require.NoError(t, err)
	for _, rec := range recs {
		rec.Release()
	}
	// More commits, so that the lost checkpoints leave the state far behind.
	for i := 0; i < 12; i++ {
		writeLayout(t, tb, r, 20)
	}
	// Bloom filters the existing files lack.
	_, err = tb.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"skiplake.bloomFilter.columns": "s"}})
	require.NoError(t, err)
	// A stale checkpoint: the checkpoints the writers wrote are lost.
	for _, p := range listAll(t, st) {
		if strings.Contains(p, ".checkpoint.") || strings.HasSuffix(p, "_last_checkpoint") {
			require.NoError(t, st.Delete(ctx, p))
		}
	}
	// An unreferenced file left by a crashed writer.
	require.NoError(t, st.Put(ctx, "part-00000-orphan.c000.zstd.parquet", []byte("junk")))
	return tb, st, time.Now().Add(40 * 24 * time.Hour)
}

// TestMaintainHealsEveryBadState runs maintenance on a table in every bad state: one
// run brings it to health (every task done, rows unchanged, layout as compact as the
// target allows), and a second run finds nothing to do and changes nothing.
func TestMaintainHealsEveryBadState(t *testing.T) {
	ctx := context.Background()
	files := proofEnvInt(t, "SKIPLAKE_MAINTAIN_FILES", 2000)
	if testing.Short() {
		files = 300
	}
	tb, st, now := badTable(t, files, map[string]string{}, table.CreateOptions{})
	rows := countRows(t, tb)
	all := readAll(t, tb)
	defer all.Release()
	before := listAll(t, st)

	dry, err := tb.Maintain(ctx, table.MaintainOptions{DryRun: true, Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.True(t, dry.WorkRemains)
	require.Equal(t, before, listAll(t, st), "a dry run changes nothing")
	f := dry.Found
	require.GreaterOrEqual(t, f.SmallFiles, files)
	require.GreaterOrEqual(t, f.CommitsSinceCheckpoint, int64(10))
	require.GreaterOrEqual(t, f.FilesLackingBloom, files)
	require.Greater(t, f.VacuumableFiles, 5)
	require.GreaterOrEqual(t, f.ExpiredTombstones, 5)
	for _, task := range dry.Tasks {
		if task.Task != table.TaskCluster && task.Task != table.TaskLogCleanup && task.Task != table.TaskPurge {
			require.Equal(t, table.StatusPlanned, task.Status, "%+v", task)
		}
	}

	rep, err := tb.Maintain(ctx, table.MaintainOptions{Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.False(t, rep.Failed, "%+v", rep.Tasks)
	require.False(t, rep.WorkRemains, "%+v", rep.Tasks)
	for _, name := range []string{table.TaskCheckpoint, table.TaskCompact, table.TaskBloomBackfill, table.TaskVacuum} {
		require.Equal(t, table.StatusDone, rep.Task(name).Status, "%+v", rep.Task(name))
	}
	require.Equal(t, rows, countRows(t, tb), "maintenance never changes the rows")
	got := readAll(t, tb)
	defer got.Release()
	compareMultiset(t, "after maintenance", got, all)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.LessOrEqual(t, snap.Log().NumFiles(), 2, "thousands of small files compacted into the target size")
	for _, a := range snap.Log().Files() {
		tag, err := bloom.DecodeTag(a.Tags[bloom.TagKey])
		require.NoError(t, err)
		require.True(t, tag.HasColumn("s"))
	}
	require.Equal(t, snap.Version(), snap.Log().CheckpointVersion(), "the state ends checkpointed")
	cutoff := now.Add(-7 * 24 * time.Hour).UnixMilli()
	for _, r := range snap.Log().Tombstones() {
		require.Greater(t, *r.DeletionTimestamp, cutoff, "expired tombstone %s left in the state", r.Path)
	}
	for _, p := range listAll(t, st) {
		if strings.HasSuffix(p, ".json") && strings.HasPrefix(p, "_delta_log/") && !strings.Contains(p, "checkpoint") {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(p, "_delta_log/"), ".json"), 10, 64)
			require.GreaterOrEqual(t, v, rep.Task(table.TaskCheckpoint).Versions[0], "commit %s older than the checkpoint the cleanup kept", p)
		}
	}
	_, err = st.Stat(ctx, "part-00000-orphan.c000.zstd.parquet")
	require.ErrorIs(t, err, storage.ErrNotExist, "VACUUM removed the orphan")

	after := listAll(t, st)
	again, err := tb.Maintain(ctx, table.MaintainOptions{Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.False(t, again.WorkRemains, "%+v", again.Tasks)
	for _, task := range again.Tasks {
		require.Equal(t, table.StatusNotNeeded, task.Status, "second run: %+v", task)
	}
	require.Equal(t, again.Version, again.FinalVersion, "a second run commits nothing")
	require.Equal(t, after, listAll(t, st), "a second run changes no file")
}

// TestMaintainClusteredTableAndBudget: on a clustered table maintenance clusters the
// unclustered data incrementally; a byte budget spreads the work over several runs
// (each reports work left), and the runs converge.
func TestMaintainClusteredTableAndBudget(t *testing.T) {
	ctx := context.Background()
	tb, _, now := badTable(t, 300, map[string]string{"delta.targetFileSize": "64kb"}, table.CreateOptions{ClusterBy: []string{"id"}})
	rows := countRows(t, tb)
	snap, _ := tb.Snapshot(ctx, table.Latest())
	var total int64
	for _, a := range snap.Log().Files() {
		total += a.Size
	}
	opts := table.MaintainOptions{Now: func() time.Time { return now }, MaxBytes: total / 3}
	var runs int
	for runs = 1; runs <= 10; runs++ {
		rep, err := tb.Maintain(ctx, opts)
		require.NoError(t, err)
		require.False(t, rep.Failed, "%+v", rep.Tasks)
		if runs == 1 {
			require.Equal(t, table.StatusPartial, rep.Task(table.TaskCluster).Status, "%+v", rep.Task(table.TaskCluster))
			require.True(t, rep.WorkRemains)
			require.Equal(t, []string{"id"}, rep.Found.ClusteringColumns)
			require.Equal(t, rep.Found.Files, rep.Found.UnclusteredFiles)
		}
		if !rep.WorkRemains {
			break
		}
	}
	require.Less(t, runs, 10, "budgeted runs must converge")
	require.GreaterOrEqual(t, runs, 3)
	require.Equal(t, rows, countRows(t, tb))
	snap, _ = tb.Snapshot(ctx, table.Latest())
	for _, a := range snap.Log().Files() {
		require.Equal(t, log.ClusteringProviderLiquid, a.ClusteringProvider, "every file clustered: %s", a.Path)
	}
	rep, err := tb.Maintain(ctx, table.MaintainOptions{Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.False(t, rep.WorkRemains, "%+v", rep.Tasks)
}

// TestMaintainBesideWriters runs maintenance repeatedly while a writer appends to a
// clustered, row-tracked table: every append lands, no row is lost or duplicated, and
// row IDs stay unique.
func TestMaintainBesideWriters(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{ClusterBy: []string{"id"},
		Properties: map[string]string{"delta.enableRowTracking": "true", "delta.autoOptimize.autoCompact": "true",
			"skiplake.autoCompact.minNumFiles": "3", "delta.checkpointInterval": "5"}})
	require.NoError(t, err)
	const appends = 40
	var ids []int64
	done := make(chan error, 1)
	go func() {
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < appends; i++ {
			base := int64(i) * 100
			rec := layoutBatch(r, 100, func(j int) int64 { return base + int64(j) }, 0)
			_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
			rec.Release()
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := int64(0); i < appends*100; i++ {
		ids = append(ids, i)
	}
	runs := 0
	for finished := false; !finished; {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
		default:
		}
		rep, err := tb.Maintain(ctx, table.MaintainOptions{})
		require.NoError(t, err)
		require.False(t, rep.Failed, "%+v", rep.Tasks)
		runs++
	}
	require.Greater(t, runs, 1)
	got := readAll(t, tb)
	defer got.Release()
	var seen []int64
	for _, ch := range got.Column(0).Data().Chunks() {
		seen = append(seen, ch.(*array.Int64).Int64Values()...)
	}
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	require.Equal(t, ids, seen, "every appended row exactly once")
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	rowIDRanges(t, snap)
}

// TestMaintainReportsWhatItCannotRewrite: maintenance clusters a table another
// engine clustered by a nested column (st.x); when that engine then clusters it by a
// column skiplake's OPTIMIZE cannot order (a map nested in the struct), maintenance
// says so in the rewrite task and still does the rest.
func TestMaintainReportsWhatItCannotRewrite(t *testing.T) {
	ctx := context.Background()
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		), Nullable: true},
	}, nil)
	tb, err := table.Create(ctx, storage.NewMemory(), sch, table.CreateOptions{})
	require.NoError(t, err)
	var ids []int64
	for w := 0; w < 3; w++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for i := 0; i < 500; i++ {
			id := int64(w*500 + i)
			ids = append(ids, id)
			b.Field(0).(*array.Int64Builder).Append(id)
			sb := b.Field(1).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32((i * 7919) % 1000))
			sb.FieldBuilder(1).AppendNull()
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	cluster := func(cols ...[]string) {
		snap, err := tb.Log().Snapshot(ctx, -1)
		require.NoError(t, err)
		p, err := log.UpgradeProtocol(snap.Protocol(), 0, 0, log.FeatureClustering)
		require.NoError(t, err)
		txn := snap.NewTransaction(log.TxnOptions{})
		txn.SetProtocol(p)
		txn.SetDomainMetadata(log.ClusteringDomain(cols))
		_, err = txn.Commit(ctx, log.CommitInfo{Operation: "CLUSTER BY"})
		require.NoError(t, err)
	}

	// Clustered by st.x: maintenance clusters the files by it.
	cluster([]string{"st", "x"})
	rep, err := tb.Maintain(ctx, table.MaintainOptions{})
	require.NoError(t, err)
	require.False(t, rep.Failed)
	require.Equal(t, table.StatusDone, rep.Task(table.TaskCluster).Status)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	for _, a := range snap.Log().Files() {
		require.Equal(t, log.ClusteringProviderLiquid, a.ClusteringProvider)
	}
	got := readAll(t, tb)
	var seen []int64
	for _, ch := range got.Column(0).Data().Chunks() {
		seen = append(seen, ch.(*array.Int64).Int64Values()...)
	}
	got.Release()
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	require.Equal(t, ids, seen, "every row exactly once")

	// Clustered by a map: no order to cluster by.
	cluster([]string{"st", "m"})
	rep, err = tb.Maintain(ctx, table.MaintainOptions{})
	require.NoError(t, err)
	require.True(t, rep.Failed)
	require.Equal(t, table.StatusFailed, rep.Task(table.TaskCluster).Status)
	require.Contains(t, rep.Task(table.TaskCluster).Error, "st.m")
	t.Log(rep.Task(table.TaskCluster).Error)
	for _, name := range []string{table.TaskCheckpoint, table.TaskVacuum, table.TaskLogCleanup} {
		require.NotNil(t, rep.Task(name), "the other tasks still run")
		require.NotEqual(t, table.StatusFailed, rep.Task(name).Status)
	}
}

// budgetClock is a MaxDuration clock a test moves by hand (safe for concurrent use).
type budgetClock struct {
	mu    sync.Mutex
	t     time.Time
	calls int
	// jumpAfter, when > 0, moves the clock by jump on that call and every later one.
	jumpAfter int
	jump      time.Duration
}

func (c *budgetClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.jumpAfter > 0 && c.calls == c.jumpAfter {
		c.t = c.t.Add(c.jump)
	}
	return c.t
}

func (c *budgetClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestMaintainMaxDurationSpentAtStart: when the MaxDuration budget is spent before
// the first task, maintenance changes nothing, reports every due task skipped
// because of the budget (work remains, nothing failed), and a later run without a
// budget does the work.
func TestMaintainMaxDurationSpentAtStart(t *testing.T) {
	ctx := context.Background()
	tb, st, now := badTable(t, 40, nil, table.CreateOptions{})
	objects := listAll(t, st)
	rows := readAllRows(t, tb)
	before, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	// The first reading starts the run; the second, before the first task, is
	// two hours later.
	clk := &budgetClock{t: time.Unix(1_000_000, 0), jumpAfter: 2, jump: 2 * time.Hour}
	opts := table.WithBudgetClock(table.MaintainOptions{Now: func() time.Time { return now }, MaxDuration: time.Hour}, clk.now)
	rep, err := tb.Maintain(ctx, opts)
	require.NoError(t, err)
	require.False(t, rep.Failed, "%+v", rep.Tasks)
	require.True(t, rep.WorkRemains)
	require.Equal(t, before.Version(), rep.FinalVersion)
	skipped := map[string]bool{}
	for _, task := range rep.Tasks {
		require.Contains(t, []string{table.StatusSkipped, table.StatusNotNeeded}, task.Status, "%+v", task)
		if task.Status == table.StatusSkipped {
			require.Contains(t, task.Reason, "MaxDuration", "%+v", task)
			skipped[task.Task] = true
		}
	}
	// Everything badTable makes due was skipped (its log has no checkpoint, so no
	// log file can be cleaned up yet).
	for _, name := range []string{table.TaskCheckpoint, table.TaskCompact, table.TaskBloomBackfill, table.TaskVacuum} {
		require.True(t, skipped[name], "%s not reported skipped: %+v", name, rep.Tasks)
	}
	require.Equal(t, objects, listAll(t, st), "a run whose budget is spent changes nothing")
	require.Equal(t, rows, readAllRows(t, tb))

	rep, err = tb.Maintain(ctx, table.MaintainOptions{Now: func() time.Time { return now }})
	require.NoError(t, err)
	require.False(t, rep.Failed, "%+v", rep.Tasks)
	require.False(t, rep.WorkRemains, "%+v", rep.Tasks)
	require.Equal(t, rows, readAllRows(t, tb))
}

// TestMaintainMaxDurationRunsOutDuringRewrite: the budget runs out while the
// rewrite works on its second bin: the first bin's commit stays, the bin in flight
// is cancelled and its files deleted, the tasks after it are skipped, the table
// reads the same rows and references only files that exist; a second run finishes.
func TestMaintainMaxDurationRunsOutDuringRewrite(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{PartitionColumns: []string{"s"}})
	require.NoError(t, err)
	// 12 partitions of 3 one-row files: 12 compaction bins, each committed alone.
	r := rand.New(rand.NewPCG(3, 4))
	for w := 0; w < 3; w++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, layoutSchema())
		for p := 0; p < 12; p++ {
			b.Field(0).(*array.Int64Builder).Append(int64(w*100 + p))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%02d", p))
			b.Field(2).(*array.Float64Builder).Append(r.NormFloat64())
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	rows := readAllRows(t, tb)
	before := listAll(t, st)
	clk := &budgetClock{t: time.Unix(1_000_000, 0)}
	var commits int
	opts := table.WithBudgetClock(table.MaintainOptions{MaxDuration: time.Hour, Parallelism: 1, Progress: func(p table.Progress) {
		switch {
		case p.Phase == "commit" && p.Done == 1:
			commits++
		case p.Phase != "commit" && commits == 1:
			clk.advance(2 * time.Hour) // the budget runs out in the second bin
		}
	}}, clk.now)
	rep, err := tb.Maintain(ctx, opts)
	require.NoError(t, err)
	require.False(t, rep.Failed, "%+v", rep.Tasks)
	require.True(t, rep.WorkRemains)
	compact := rep.Task(table.TaskCompact)
	require.Equal(t, table.StatusPartial, compact.Status, "%+v", compact)
	require.Contains(t, compact.Reason, "MaxDuration")
	require.Len(t, compact.Versions, 1, "only the first bin committed")
	require.Equal(t, 3, compact.Files, "the report counts only what was committed")
	require.Equal(t, 33, compact.LeftFiles)
	require.Len(t, rep.Commits, 1)
	require.Equal(t, 1, commits)
	seen := false
	for _, task := range rep.Tasks {
		if task.Task == table.TaskCompact {
			seen = true
			continue
		}
		if seen {
			require.NotEqual(t, table.StatusDone, task.Status, "a task ran after the budget was spent: %+v", task)
			if task.Status == table.StatusSkipped {
				require.Contains(t, task.Reason, "MaxDuration")
			}
		}
	}

	// The table is whole: same rows, every referenced file exists, and the only
	// new data files are those the committed batch added.
	require.Equal(t, rows, readAllRows(t, tb))
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, compact.Versions[0], snap.Version())
	objects := map[string]bool{}
	for _, p := range listAll(t, st) {
		objects[p] = true
	}
	live := map[string]bool{}
	for _, a := range snap.Log().Files() {
		require.True(t, objects[a.Path], "referenced file %s is missing", a.Path)
		live[a.Path] = true
	}
	old := map[string]bool{}
	for _, p := range before {
		old[p] = true
	}
	added := 0
	for p := range objects {
		if strings.HasSuffix(p, ".parquet") && !old[p] {
			require.True(t, live[p], "uncommitted data file %s left behind", p)
			added++
		}
	}
	require.Equal(t, 1, added, "the first bin's file")
	require.Equal(t, 36-3+1, len(snap.Log().Files()))

	rep, err = tb.Maintain(ctx, table.MaintainOptions{})
	require.NoError(t, err)
	require.False(t, rep.Failed, "%+v", rep.Tasks)
	require.Equal(t, table.StatusDone, rep.Task(table.TaskCompact).Status)
	snap, err = tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, 12, len(snap.Log().Files()))
	require.Equal(t, rows, readAllRows(t, tb))
}
