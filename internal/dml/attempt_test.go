package dml

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
)

// hostTable is a table in memory for the attempt tests: schema sinkSchema
// (id, p), unpartitioned, one file per hundred ids, with deletion vectors or
// without.
type hostTable struct {
	store storage.Storage
	lg    *log.Log
	md    log.Metadata
	proto log.Protocol
}

func newHostTable(t *testing.T, files int, withDV bool) *hostTable {
	t.Helper()
	return newHostTableOn(t, storage.NewMemory(), files, withDV)
}

func newHostTableOn(t *testing.T, store storage.Storage, files int, withDV bool) *hostTable {
	t.Helper()
	conf := map[string]string{}
	proto := log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	if withDV {
		conf[log.PropEnableDeletionVectors] = "true"
		proto = log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{log.FeatureDeletionVectors}, WriterFeatures: []string{log.FeatureDeletionVectors}}
	}
	md := log.Metadata{ID: "00000000-0000-4000-8000-000000000024", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: strings.Join(strings.Fields(sinkSchema), ""), PartitionColumns: []string{}, Configuration: conf}
	h := &hostTable{store: store, lg: log.New(store), md: md, proto: proto}
	v, err := tableview.New(h.lg.NewTableSnapshot(md, proto))
	require.NoError(t, err)
	var adds []*log.Add
	for k := range files {
		adds = append(adds, h.writeFile(t, v, k*100, (k+1)*100))
	}
	_, err = h.lg.Create(context.Background(), md, proto, adds, log.CommitInfo{Operation: "CREATE TABLE"})
	require.NoError(t, err)
	return h
}

// writeFile stores one data file of ids lo..hi-1 for v's layout and returns its add.
func (h *hostTable) writeFile(t *testing.T, v *tableview.View, lo, hi int) *log.Add {
	t.Helper()
	ctx := context.Background()
	s := NewFileSink(h.store, v, writeset.Settings{})
	require.NoError(t, s.Start(ctx))
	rec := sinkRows(memory.DefaultAllocator, v, lo, hi, 3, false)
	defer rec.Release()
	require.NoError(t, s.Write(ctx, rec))
	adds, err := s.Finish(ctx)
	require.NoError(t, err)
	require.Len(t, adds, 1)
	return adds[0]
}

func (h *hostTable) latest(t *testing.T) *log.Snapshot {
	t.Helper()
	ls, err := h.lg.Snapshot(context.Background(), -1)
	require.NoError(t, err)
	return ls
}

// objects lists the table's stored files outside the log, sorted.
func (h *hostTable) objects(t *testing.T) []string {
	t.Helper()
	objs, err := h.store.List(context.Background(), "", "")
	require.NoError(t, err)
	var out []string
	for _, o := range objs {
		if !strings.HasPrefix(o.Path, "_delta_log/") {
			out = append(out, o.Path)
		}
	}
	slices.Sort(out)
	return out
}

// ids reads the live ids of the newest version, sorted.
func (h *hostTable) ids(t *testing.T) []int64 {
	t.Helper()
	ctx := context.Background()
	ls := h.latest(t)
	v, err := tableview.New(ls)
	require.NoError(t, err)
	s := &testSnap{view: v, store: h.store}
	tg, err := s.Whole(ctx, memory.DefaultAllocator)
	require.NoError(t, err)
	var out []int64
	for _, add := range ls.Files() {
		task, err := s.Task(add)
		require.NoError(t, err)
		del, err := datafile.LoadDeletionVector(ctx, h.store, add.DeletionVector)
		require.NoError(t, err)
		_, err = tg.ReadLive(ctx, task, del, true, nil, func(b LiveBatch) error {
			col := b.Rec.Column(0).(*array.Int64)
			for i := range col.Len() {
				out = append(out, col.Value(i))
			}
			return nil
		})
		require.NoError(t, err)
	}
	slices.Sort(out)
	return out
}

// commitConcurrent commits, as another writer, the removal of the newest
// version's first file: dataChange=false with a copy of its rows added (an
// OPTIMIZE), or dataChange=true (a DELETE). It returns the objects it stored.
func (h *hostTable) commitConcurrent(t *testing.T, rearrange bool) []string {
	t.Helper()
	ctx := context.Background()
	ls := h.latest(t)
	first := ls.Files()[0]
	txn := ls.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	txn.ReadFiles(first.Path)
	txn.Remove(first.RemoveAction(time.Now().UnixMilli(), !rearrange))
	var stored []string
	if rearrange {
		v, err := tableview.New(ls)
		require.NoError(t, err)
		n, ok := first.NumRecords()
		require.True(t, ok)
		var lo int64
		h.readFirstID(t, v, first, &lo)
		cp := h.writeFile(t, v, int(lo), int(lo+n))
		cp.DataChange = false
		txn.Add(cp)
		stored = append(stored, cp.Path)
	}
	op := "DELETE"
	if rearrange {
		op = "OPTIMIZE"
	}
	_, err := txn.Commit(ctx, log.CommitInfo{Operation: op})
	require.NoError(t, err)
	return stored
}

// readFirstID sets *lo to the first id of add (its files hold consecutive ids).
func (h *hostTable) readFirstID(t *testing.T, v *tableview.View, add *log.Add, lo *int64) {
	t.Helper()
	s := &testSnap{view: v, store: h.store}
	tg, err := s.Whole(context.Background(), memory.DefaultAllocator)
	require.NoError(t, err)
	task, err := s.Task(add)
	require.NoError(t, err)
	first := true
	_, err = tg.ReadLive(context.Background(), task, nil, true, nil, func(b LiveBatch) error {
		if first {
			*lo, first = b.Rec.Column(0).(*array.Int64).Value(0), false
		}
		return nil
	})
	require.NoError(t, err)
}

// testHost is a Host over a hostTable: every attempt runs on the newest version;
// it counts the attempts begun and the errors explained.
type testHost struct {
	tb        *hostTable
	mu        sync.Mutex
	begins    int
	explained []error
}

func (h *testHost) Begin(ctx context.Context) (Snap, error) {
	h.mu.Lock()
	h.begins++
	h.mu.Unlock()
	ls, err := h.tb.lg.Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	v, err := tableview.New(ls)
	if err != nil {
		return nil, err
	}
	return &testSnap{view: v, store: h.tb.store}, nil
}

func (h *testHost) Explain(_ context.Context, _ Snap, err error) error {
	h.mu.Lock()
	h.explained = append(h.explained, err)
	h.mu.Unlock()
	return fmt.Errorf("explained: %w", err)
}

func (h *testHost) Now() time.Time { return time.Now() }

// testSnap plans every read as a read of every live file (no skipping), the
// filter rechecked on every row.
type testSnap struct {
	view  *tableview.View
	store storage.Storage
}

func (s *testSnap) View() *tableview.View  { return s.view }
func (s *testSnap) Store() storage.Storage { return s.store }

func (s *testSnap) target(pred expr.Expr, columns []string, batchRows int64, mem memory.Allocator) (*Target, *expr.Bound, error) {
	cols := scanexec.TableColumns(s.view)
	var bound *expr.Bound
	if pred != nil {
		var err error
		if bound, err = expr.Bind(pred, scanexec.ColumnSchema(cols)); err != nil {
			return nil, nil, err
		}
	}
	proj, err := scanexec.Project(cols, columns, false, pred, bound)
	if err != nil {
		return nil, nil, err
	}
	if batchRows <= 0 {
		batchRows = 16
	}
	return &Target{Scan: &scanexec.Scan{Store: s.store, Version: s.view.Log().Version(), Filter: bound}, Proj: proj, BatchSize: batchRows, Mem: mem}, bound, nil
}

func (s *testSnap) Plan(_ context.Context, pred expr.Expr, columns []string, batchRows int64, mem memory.Allocator) (*Plan, error) {
	tg, bound, err := s.target(pred, columns, batchRows, mem)
	if err != nil {
		return nil, err
	}
	p := &Plan{Target: tg, Bound: bound, Predicate: log.ReadPredicate{Text: "true"}}
	if bound != nil {
		p.Predicate = log.ReadPredicate{Text: bound.String(), MightMatch: func(*log.Add) bool { return true }}
	}
	for _, add := range s.view.Log().Files() {
		task, err := s.Task(add)
		if err != nil {
			return nil, err
		}
		task.Recheck = bound != nil
		p.Tasks = append(p.Tasks, task)
	}
	return p, nil
}

func (s *testSnap) Whole(_ context.Context, mem memory.Allocator) (*Target, error) {
	tg, _, err := s.target(nil, nil, 0, mem)
	return tg, err
}

func (s *testSnap) Task(add *log.Add) (*scanexec.Task, error) {
	for i, a := range s.view.Log().Files() {
		if a.Key() == add.Key() {
			path, err := a.DecodedPath()
			if err != nil {
				return nil, err
			}
			return &scanexec.Task{Idx: i, Add: a, Path: path,
				Verdict: skipping.FileVerdict{Verdict: skipping.MightMatch, Reason: skipping.ReasonNoFilter}}, nil
		}
	}
	return nil, fmt.Errorf("file %s not in version %d", add.Path, s.view.Log().Version())
}

func (s *testSnap) Recorder() scanexec.Recorder { return nil }

// Settings writes files of one row group each (a tiny target size), so that rows
// written are stored before the command finishes.
func (s *testSnap) Settings() (rows, changes writeset.Settings) {
	return writeset.Settings{TargetFileSize: 1, RowGroupBytes: 1}, writeset.Settings{}
}

func mustParse(t *testing.T, text string) expr.Expr {
	t.Helper()
	e, err := expr.Parse(text)
	require.NoError(t, err)
	return e
}

// deleteCommand is a DELETE of the rows pred selects; before, when set, runs after
// the attempt's reads (attempt n, 1-based), before its finish and commit.
func deleteCommand(pred expr.Expr, before func(n int)) Command {
	n := 0
	return Command{Op: "DELETE", Body: func(ctx context.Context, a *Attempt) error {
		n++
		if err := a.DeleteWhere(ctx, pred); err != nil {
			return err
		}
		if before != nil {
			before(n)
		}
		return nil
	}, Info: func(a *Attempt) log.CommitInfo {
		return log.CommitInfo{Operation: "DELETE", OperationMetrics: a.RowMetrics("numDeletedRows", a.Result().RowsDeleted)}
	}}
}

// An attempt whose commit loses to a concurrent OPTIMIZE of a file it read is
// re-planned on the new version: the second attempt commits, the first one's
// rewritten file is deleted, and the rows are the ones the command leaves.
// Without retries the conflict is returned (through Explain) and nothing of the
// command's stays in storage.
func TestRunRetriesAfterRearrangement(t *testing.T) {
	for _, retries := range []int{0, -1} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			ctx := context.Background()
			tb := newHostTable(t, 2, false)
			before := tb.objects(t)
			var copied []string
			cmd := deleteCommand(mustParse(t, "id < 50"), func(n int) {
				if n == 1 {
					copied = tb.commitConcurrent(t, true)
				}
			})
			h := &testHost{tb: tb}
			res, err := Run(ctx, h, Options{ConflictRetries: retries, Parallelism: 2}, cmd)
			want := slices.Sorted(slices.Values(append(append([]string(nil), before...), copied...)))
			if retries < 0 {
				var ce *log.ConflictError
				require.ErrorAs(t, err, &ce)
				require.True(t, ce.Rearrangement)
				require.Len(t, h.explained, 1)
				require.Equal(t, 1, h.begins)
				require.Equal(t, int64(1), tb.latest(t).Version(), "the command committed")
				require.Equal(t, want, tb.objects(t), "files the failed attempt wrote were left")
				return
			}
			require.NoError(t, err)
			require.Equal(t, 2, h.begins)
			require.Empty(t, h.explained)
			require.Equal(t, 2, res.Attempts)
			require.Equal(t, int64(1), res.ReadVersion)
			require.Equal(t, int64(2), res.Version)
			require.Equal(t, ModeCopyOnWrite, res.Mode)
			require.Equal(t, int64(50), res.RowsDeleted)
			require.Equal(t, int64(50), res.RowsCopied)
			require.Equal(t, "50", res.Metrics["numDeletedRows"])
			require.Len(t, res.Files, 1)
			require.Equal(t, FileRewritten, res.Files[0].Action)
			for _, add := range tb.latest(t).Files() {
				if !slices.Contains(want, add.Path) {
					want = append(want, add.Path)
				}
			}
			slices.Sort(want)
			require.Equal(t, want, tb.objects(t), "storage holds files no version references")
			var ids []int64
			for i := int64(50); i < 200; i++ {
				ids = append(ids, i)
			}
			require.Equal(t, ids, tb.ids(t))
		})
	}
}

var errBoom = errors.New("boom")

// A command that fails after it wrote files — its body failing after the updated
// rows went to the sink, or its commit losing to a concurrent data change once the
// rewritten files, new rows and deletion vectors were all stored — commits nothing
// and deletes every file it wrote.
func TestRunFailureDeletesWrittenFiles(t *testing.T) {
	for _, withDV := range []bool{false, true} {
		for _, failure := range []string{"body", "conflict"} {
			t.Run(fmt.Sprintf("dv=%v/%s", withDV, failure), func(t *testing.T) {
				ctx := context.Background()
				tb := newHostTable(t, 2, withDV)
				before := tb.objects(t)
				beforeIDs := tb.ids(t)
				set, err := expr.ParseAssignments("p = 'updated'")
				require.NoError(t, err)
				cmd := Command{Op: "UPDATE", Body: func(ctx context.Context, a *Attempt) error {
					if _, err := a.UpdateWhere(ctx, set, mustParse(t, "id >= 20 AND id < 130")); err != nil {
						return err
					}
					if failure == "body" {
						return errBoom
					}
					tb.commitConcurrent(t, false)
					return nil
				}, Info: func(a *Attempt) log.CommitInfo {
					return log.CommitInfo{Operation: "UPDATE", OperationMetrics: a.RowMetrics("numUpdatedRows", a.Result().RowsUpdated)}
				}}
				h := &testHost{tb: tb}
				_, err = Run(ctx, h, Options{Parallelism: 2}, cmd)
				require.Error(t, err)
				require.Len(t, h.explained, 1)
				require.Equal(t, 1, h.begins)
				if failure == "body" {
					require.ErrorIs(t, err, errBoom)
					require.Equal(t, int64(0), tb.latest(t).Version())
					require.Equal(t, beforeIDs, tb.ids(t))
				} else {
					var ce *log.ConflictError
					require.ErrorAs(t, err, &ce)
					require.False(t, ce.Rearrangement)
					require.Equal(t, int64(1), tb.latest(t).Version(), "the command committed")
				}
				require.Equal(t, before, tb.objects(t), "files the failed command wrote were left")
			})
		}
	}
}

// A command whose context ends commits nothing and leaves no file, whether it
// ends before the reads or after them (before the finish).
func TestRunCancelledCommitsNothing(t *testing.T) {
	for _, withDV := range []bool{false, true} {
		for _, when := range []string{"before reads", "after reads"} {
			t.Run(fmt.Sprintf("dv=%v/%s", withDV, when), func(t *testing.T) {
				tb := newHostTable(t, 3, withDV)
				before := tb.objects(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				pred := mustParse(t, "id < 30 OR id >= 250 OR (id >= 120 AND id < 140)")
				cmd := Command{Op: "DELETE", Body: func(ctx context.Context, a *Attempt) error {
					if when == "before reads" {
						cancel()
					}
					err := a.DeleteWhere(ctx, pred)
					cancel()
					return err
				}, Info: func(a *Attempt) log.CommitInfo { return log.CommitInfo{Operation: "DELETE"} }}
				h := &testHost{tb: tb}
				_, err := Run(ctx, h, Options{Parallelism: 2}, cmd)
				require.ErrorIs(t, err, context.Canceled)
				require.Equal(t, int64(0), tb.latest(t).Version(), "a cancelled command committed")
				require.Equal(t, before, tb.objects(t))
			})
		}
	}
}

// A dry run reads and counts but writes and commits nothing; a real run of the
// same command then deletes exactly the rows the dry run counted, with a deletion
// vector per file on a table that has them.
func TestRunDryRunThenRun(t *testing.T) {
	for _, withDV := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", withDV), func(t *testing.T) {
			ctx := context.Background()
			tb := newHostTable(t, 3, withDV)
			before := tb.objects(t)
			pred := mustParse(t, "id < 30 OR id >= 200 OR (id >= 120 AND id < 140)")
			dry, err := Run(ctx, &testHost{tb: tb}, Options{DryRun: true}, deleteCommand(pred, nil))
			require.NoError(t, err)
			require.Equal(t, int64(-1), dry.Version)
			require.Equal(t, before, tb.objects(t))
			require.Equal(t, int64(0), tb.latest(t).Version())

			res, err := Run(ctx, &testHost{tb: tb}, Options{}, deleteCommand(pred, nil))
			require.NoError(t, err)
			require.Equal(t, int64(1), res.Version)
			require.Equal(t, dry.RowsDeleted, res.RowsDeleted)
			require.Equal(t, dry.Files, res.Files)
			var want []int64
			for i := int64(0); i < 300; i++ {
				if !(i < 30 || i >= 200 || (i >= 120 && i < 140)) {
					want = append(want, i)
				}
			}
			require.Equal(t, int64(300-len(want)), res.RowsDeleted)
			require.Equal(t, want, tb.ids(t))
			wantAction := FileRewritten
			if withDV {
				wantAction = FileDeletionVector
				require.Equal(t, 2, res.DeletionVectorsAdded)
			}
			require.Len(t, res.Files, 3)
			for _, f := range res.Files {
				if f.RowsDeleted == 100 {
					require.Equal(t, FileRemoved, f.Action, "the file of ids 200..299 is wholly deleted")
				} else {
					require.Equal(t, wantAction, f.Action)
				}
				require.True(t, f.Read)
			}
		})
	}
}

// unknownCommitStore, armed, stores a commit file and reports an I/O error, and
// fails reading it back: the log cannot learn the commit's outcome.
type unknownCommitStore struct {
	storage.Storage
	mu    sync.Mutex
	armed bool
	put   string
}

func (f *unknownCommitStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed || !strings.HasPrefix(p, "_delta_log/") || !strings.HasSuffix(p, ".json") {
		return f.Storage.PutIfAbsent(ctx, p, data)
	}
	if err := f.Storage.PutIfAbsent(ctx, p, data); err != nil {
		return err
	}
	f.put = p
	return errors.New("sync directory: input/output error")
}

func (f *unknownCommitStore) Get(ctx context.Context, p string) ([]byte, error) {
	f.mu.Lock()
	fail := f.armed && p == f.put
	f.mu.Unlock()
	if fail {
		return nil, errors.New("connection reset")
	}
	return f.Storage.Get(ctx, p)
}

// A commit whose outcome is unknown (log.ErrCommitUnknown) keeps every file the
// attempt wrote: the commit landed, and its rows read back right.
func TestRunUnknownCommitKeepsFiles(t *testing.T) {
	for _, withDV := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", withDV), func(t *testing.T) {
			ctx := context.Background()
			st := &unknownCommitStore{Storage: storage.NewMemory()}
			tb := newHostTableOn(t, st, 2, withDV)
			pred := mustParse(t, "id >= 20 AND id < 130")
			st.mu.Lock()
			st.armed = true
			st.mu.Unlock()
			h := &testHost{tb: tb}
			_, err := Run(ctx, h, Options{}, deleteCommand(pred, nil))
			st.mu.Lock()
			st.armed = false
			st.mu.Unlock()
			require.ErrorIs(t, err, log.ErrCommitUnknown)
			require.Equal(t, 1, h.begins, "an unknown outcome is not retried")
			ls := tb.latest(t)
			require.Equal(t, int64(1), ls.Version())
			objs := tb.objects(t)
			for _, add := range ls.Files() {
				require.Contains(t, objs, add.Path, "a file of the landed commit was deleted")
			}
			var want []int64
			for i := int64(0); i < 200; i++ {
				if i < 20 || i >= 130 {
					want = append(want, i)
				}
			}
			require.Equal(t, want, tb.ids(t), "the landed commit's rows")
		})
	}
}
