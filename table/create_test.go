package table_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// failingReader yields its batches, then fails with err (a bad line in the input).
type failingReader struct {
	array.RecordReader
	err  error
	done bool
}

func (r *failingReader) Next() bool {
	if r.RecordReader.Next() {
		return true
	}
	r.done = true
	return false
}

func (r *failingReader) Err() error {
	if r.done {
		return r.err
	}
	return nil
}

func readerOf(t *testing.T, recs ...arrow.RecordBatch) array.RecordReader {
	t.Helper()
	rr, err := array.NewRecordReader(recs[0].Schema(), recs)
	require.NoError(t, err)
	return rr
}

func countRows(t *testing.T, tb *table.Table) int64 {
	t.Helper()
	n, _, err := tb.Count(context.Background())
	require.NoError(t, err)
	return n
}

// Item 2 of issue #10: a directory in use is not silently turned into a table.
func TestCreateRefusesNonEmptyLocation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "input.csv"), []byte("k,v\n1,a\n"), 0o644))
	_, err := table.CreateURL(ctx, dir, simpleSchema(), table.CreateOptions{})
	require.ErrorIs(t, err, table.ErrLocationNotEmpty)
	require.Contains(t, err.Error(), "input.csv")
	_, statErr := os.Stat(filepath.Join(dir, "_delta_log"))
	require.True(t, os.IsNotExist(statErr), "a refused create must write nothing")

	rec := simpleBatch(simpleSchema(), []int64{1}, []string{"a"})
	defer rec.Release()
	_, _, err = table.CreateWriteURL(ctx, dir, simpleSchema(), table.CreateOptions{}, readerOf(t, rec), table.WriteOptions{})
	require.ErrorIs(t, err, table.ErrLocationNotEmpty)
	require.Equal(t, []string{"input.csv"}, proofDataObjects(t, localStore(t, dir)))

	tb, err := table.CreateURL(ctx, dir, simpleSchema(), table.CreateOptions{AllowNonEmpty: true})
	require.NoError(t, err, "explicitly allowed")
	require.EqualValues(t, 0, countRows(t, tb))
}

// Hidden files, a log without commits and skiplake's own leftovers do not count.
func TestCreateAcceptsHiddenFilesAndOwnLeftovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, p := range []string{".DS_Store", "_SUCCESS", "_delta_log/.00000000000000000000.json.0123456789abcdef.skiplake-tmp",
		"part-00001-" + uuid.NewString() + ".c000.zstd.parquet", "_delta_index/bloom/" + uuid.NewString() + ".bin"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte("x"), 0o644))
	}
	_, err := table.CreateURL(ctx, dir, simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
}

// Item 5: the creating commit carries the first data; nothing is committed before.
func TestCreateWriteIsOneCommit(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	rec := simpleBatch(simpleSchema(), []int64{1, 2, 3}, []string{"a", "b", "c"})
	defer rec.Release()
	tb, res, err := table.CreateWrite(ctx, st, simpleSchema(), table.CreateOptions{}, readerOf(t, rec),
		table.WriteOptions{AppID: "job", AppVersion: 4})
	require.NoError(t, err)
	require.EqualValues(t, 0, res.Version)
	require.EqualValues(t, 3, res.RowsWritten)
	h, err := tb.History(ctx, 0)
	require.NoError(t, err)
	require.Len(t, h, 1)
	raw, err := st.Get(ctx, log.CommitPath(0))
	require.NoError(t, err)
	for _, a := range []string{`{"protocol"`, `{"metaData"`, `{"txn"`, `{"add"`} {
		require.Contains(t, string(raw), a)
	}
	require.EqualValues(t, 3, countRows(t, tb))
	// The same idempotent write again: the table exists now, the write is skipped.
	rec2 := simpleBatch(simpleSchema(), []int64{1, 2, 3}, []string{"a", "b", "c"})
	defer rec2.Release()
	_, res, err = table.CreateWrite(ctx, st, simpleSchema(), table.CreateOptions{}, readerOf(t, rec2),
		table.WriteOptions{AppID: "job", AppVersion: 4})
	require.NoError(t, err)
	require.True(t, res.Skipped)
	require.EqualValues(t, 3, countRows(t, tb))
}

// A first write that fails part-way leaves no table, no files and no directory, so a
// retry starts from scratch (item 5: the CREATE commit was committed on its own).
func TestCreateWriteFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t")
	rec := simpleBatch(simpleSchema(), []int64{1, 2}, []string{"a", "b"})
	defer rec.Release()
	bad := &failingReader{RecordReader: readerOf(t, rec), err: errors.New("input.csv: line 3: broken")}
	_, _, err := table.CreateWriteURL(ctx, dir, simpleSchema(), table.CreateOptions{}, bad, table.WriteOptions{})
	require.ErrorIs(t, err, bad.err) // the reader's own error, wrapped
	_, statErr := os.Stat(dir)
	require.True(t, os.IsNotExist(statErr), "the directory created for the table must go again: %v", statErr)

	// With an existing (empty) directory: the directory stays, empty of objects.
	require.NoError(t, os.MkdirAll(dir, 0o755))
	bad = &failingReader{RecordReader: readerOf(t, rec), err: errors.New("broken")}
	_, _, err = table.CreateWriteURL(ctx, dir, simpleSchema(), table.CreateOptions{}, bad, table.WriteOptions{})
	require.Error(t, err)
	require.Empty(t, proofDataObjects(t, localStore(t, dir)))
	_, err = table.OpenURL(ctx, dir)
	require.ErrorIs(t, err, table.ErrNotATable)
	// The retry succeeds.
	_, res, err := table.CreateWriteURL(ctx, dir, simpleSchema(), table.CreateOptions{}, readerOf(t, rec), table.WriteOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 0, res.Version)
}

// Item 11: writers racing to create the same table: one creates it, the others
// append; every row lands exactly once.
func TestCreateWriteRaceLosersAppend(t *testing.T) {
	ctx := context.Background()
	for _, parts := range [][]string{nil, {"v"}} {
		dir := filepath.Join(t.TempDir(), "t")
		const writers = 8
		var wg sync.WaitGroup
		errs := make([]error, writers)
		versions := make([]int64, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := simpleBatch(simpleSchema(), []int64{int64(10 * i), int64(10*i + 1)}, []string{"x", fmt.Sprint(i % 3)})
				defer rec.Release()
				rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
				if err != nil {
					errs[i] = err
					return
				}
				_, res, err := table.CreateWriteURL(ctx, dir, simpleSchema(), table.CreateOptions{PartitionColumns: parts}, rr, table.WriteOptions{})
				errs[i] = err
				if err == nil {
					versions[i] = res.Version
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "writer %d", i)
		}
		slices.Sort(versions)
		for i, v := range versions {
			require.EqualValues(t, i, v, "versions %v", versions)
		}
		tb, err := table.OpenURL(ctx, dir)
		require.NoError(t, err)
		require.EqualValues(t, 2*writers, countRows(t, tb))
		h, err := tb.History(ctx, 0)
		require.NoError(t, err)
		require.Len(t, h, writers)
		// Every data file is referenced: the losers' files were committed, not lost.
		snap, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		data := proofDataObjects(t, localStore(t, dir))
		require.Len(t, data, snap.Log().NumFiles())
	}
}

// A loser whose data does not match the winner's table commits nothing and leaves
// no files.
func TestCreateWriteLoserWithOtherSchemaFails(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	_, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
	require.NoError(t, err)
	other := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, other)
	b.Field(0).(*array.Int32Builder).Append(1)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	_, _, err = table.CreateWrite(ctx, st, other, table.CreateOptions{}, readerOf(t, rec), table.WriteOptions{})
	require.ErrorIs(t, err, table.ErrTableExists)
	require.Empty(t, proofDataObjects(t, st))
	// Create on an existing table is ErrTableExists (not a "concurrent protocol change").
	_, err = table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
	require.ErrorIs(t, err, table.ErrTableExists)
}

// flakyCommitStore makes the commit of a data write land but report an error, and
// optionally fails reading it back (the outcome is then unknown).
type flakyCommitStore struct {
	storage.Storage
	mu        sync.Mutex
	armed     bool
	exist     bool // report ErrExist (a retried conditional PUT) instead of an I/O error
	failReads bool
	put       string // the commit file written while armed
}

func (f *flakyCommitStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed || !strings.HasPrefix(p, "_delta_log/") || !strings.HasSuffix(p, ".json") {
		return f.Storage.PutIfAbsent(ctx, p, data)
	}
	if err := f.Storage.PutIfAbsent(ctx, p, data); err != nil {
		return err
	}
	f.put = p
	if f.exist {
		return fmt.Errorf("retried put: %w", storage.ErrExist)
	}
	return errors.New("sync directory: input/output error")
}

func (f *flakyCommitStore) Get(ctx context.Context, p string) ([]byte, error) {
	f.mu.Lock()
	fail := f.armed && f.failReads && p == f.put
	f.mu.Unlock()
	if fail {
		return nil, errors.New("connection reset")
	}
	return f.Storage.Get(ctx, p)
}

// Item 8: an ambiguous commit never deletes the files it references.
func TestWriteAmbiguousCommitNeverDeletesFiles(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name             string
		exist, failReads bool
		wantErr          error
	}{
		{"landed, fsync failed, read back", false, false, nil},
		{"landed, retried put says exists", true, false, nil},
		{"landed, cannot read back", false, true, log.ErrCommitUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &flakyCommitStore{Storage: storage.NewMemory()}
			tb, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{})
			require.NoError(t, err)
			st.armed, st.exist, st.failReads = true, c.exist, c.failReads
			rec := simpleBatch(simpleSchema(), []int64{1, 2}, []string{"a", "b"})
			defer rec.Release()
			res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
			st.armed = false
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
			} else {
				require.NoError(t, err)
				require.EqualValues(t, 1, res.Version)
			}
			// Whatever was reported, the commit is there, once, and its files exist.
			latest, err := tb.Log().LatestVersion(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, latest)
			require.EqualValues(t, 2, countRows(t, tb))
		})
	}
}

// The invariant of internal/layout: every file Write produces (data files, Bloom
// index) has a name layout recognises as skiplake's own.
func TestWrittenFilesHaveSkiplakeNames(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, simpleSchema(), table.CreateOptions{PartitionColumns: []string{"v"},
		Properties: map[string]string{log.PropBloomFilterColumns: "k"}})
	require.NoError(t, err)
	rec := simpleBatch(simpleSchema(), []int64{1, 2, 3}, []string{"a", "b", "<null>"})
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	_, err = tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"k"}})
	require.NoError(t, err)
	objs := proofDataObjects(t, st)
	require.NotEmpty(t, objs)
	for _, p := range objs {
		require.True(t, layout.WrittenBySkiplake(p), "%s does not have a skiplake file name", p)
	}
}

func localStore(t *testing.T, dir string) storage.Storage {
	t.Helper()
	st, err := storage.NewLocal(dir)
	require.NoError(t, err)
	return st
}
