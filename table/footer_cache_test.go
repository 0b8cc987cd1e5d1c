package table_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// recordingStore records the reads made through the files it opens.
type recordingStore struct {
	storage.Storage
	mu    sync.Mutex
	reads []fileRead
}

type fileRead struct {
	path     string
	off, len int64
}

func (s *recordingStore) Open(ctx context.Context, p string) (storage.File, error) {
	f, err := s.Storage.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return &recordingFile{File: f, s: s, path: p}, nil
}

// take returns the reads recorded since the last take.
func (s *recordingStore) take() []fileRead {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reads
	s.reads = nil
	return r
}

type recordingFile struct {
	storage.File
	s    *recordingStore
	path string
}

func (f *recordingFile) ReadAt(b []byte, off int64) (int, error) {
	f.s.mu.Lock()
	f.s.reads = append(f.s.reads, fileRead{f.path, off, int64(len(b))})
	f.s.mu.Unlock()
	return f.File.ReadAt(b, off)
}

// footerStart returns where a data file's page index (or, without one, its footer)
// starts: a read at or after it reads footer or page-index bytes.
func footerStart(t *testing.T, st storage.Storage, path string) int64 {
	t.Helper()
	data, err := st.Get(context.Background(), path)
	require.NoError(t, err)
	r, err := datafile.Open(bytes.NewReader(data), int64(len(data)), datafile.ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	if off, end := r.Footer().IndexRegion(); off < end {
		return off
	}
	return int64(len(data)) - 8 - int64(r.Metadata().Size())
}

// footerReads returns the reads that touched a footer or page index.
func footerReads(t *testing.T, st storage.Storage, reads []fileRead) []fileRead {
	t.Helper()
	starts := map[string]int64{}
	var out []fileRead
	for _, r := range reads {
		if strings.HasPrefix(r.path, "_delta_log/") {
			continue
		}
		s, ok := starts[r.path]
		if !ok {
			s = footerStart(t, st, r.path)
			starts[r.path] = s
		}
		if r.off+r.len > s {
			out = append(out, r)
		}
	}
	return out
}

// filteredIDs scans tb with filter and returns the sorted ids and the report.
func filteredIDs(t *testing.T, tb *table.Table, filter string) ([]int64, *table.ScanReport) {
	t.Helper()
	ids, rep, err := scanIDs(tb, filter)
	require.NoError(t, err)
	return ids, rep
}

// scanIDs is filteredIDs for any goroutine.
func scanIDs(tb *table.Table, filter string) ([]int64, *table.ScanReport, error) {
	ctx := context.Background()
	sc, err := tb.Scan(ctx, table.WithFilter(filter), table.WithColumns("id"))
	if err != nil {
		return nil, nil, err
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Release()
	var ids []int64
	for rd.Next() {
		ids = append(ids, rd.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	if err := rd.Err(); err != nil {
		return nil, nil, err
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, rd.Report(), nil
}

// TestSecondScanReadsNoFooter (issue 27 item 7): a Table that scans the same
// unchanged table again reuses its snapshot (one listing of the log instead of a
// load) and the footers and page indexes of the files it opened: the second selective
// scan, Count and Explain read no footer and no page index, and the report says so
// (Footers, Requests).
func TestSecondScanReadsNoFooter(t *testing.T) {
	ctx := context.Background()
	rs := &recordingStore{Storage: storage.NewMemory()}
	st := storage.NewCounting(rs)
	tb, err := table.Create(ctx, st, layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 4 {
		base := int64(i * 1000)
		rec := layoutBatch(r, 1000, func(j int) int64 { return base + int64(j) }, 0.1)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	const filter = "id = 2005"
	rs.take()

	ids, first := filteredIDs(t, tb, filter)
	require.Equal(t, []int64{2005}, ids)
	require.Equal(t, &table.FooterCounts{Read: 1}, first.Footers)
	require.NotEmpty(t, footerReads(t, st, rs.take()), "the first scan reads the footer")

	ids, second := filteredIDs(t, tb, filter)
	require.Equal(t, []int64{2005}, ids)
	require.Equal(t, &table.FooterCounts{Cached: 1}, second.Footers)
	require.Empty(t, footerReads(t, st, rs.take()), "the second scan reads no footer or page index")
	require.Less(t, second.Requests.GET, first.Requests.GET)
	require.Less(t, second.Requests.BytesRead, first.Requests.BytesRead)
	require.Positive(t, second.Requests.GET, "the data is still read")
	// The snapshot was reused: the check lists the log and reads no commit.
	require.Less(t, second.SnapshotRequests.GET, first.SnapshotRequests.GET)
	require.Equal(t, int64(1), second.SnapshotRequests.LIST)
	cs := tb.CacheStats()
	require.Equal(t, int64(1), cs.SnapshotReuses)
	require.Equal(t, 1, cs.Footers.Entries)

	n, crep, err := tb.Count(ctx, table.WithFilter(filter))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, &table.FooterCounts{Cached: 1}, crep.Footers)
	sc, err := tb.Scan(ctx, table.WithFilter(filter))
	require.NoError(t, err)
	ex, err := sc.Explain(ctx)
	require.NoError(t, err)
	require.Equal(t, &table.FooterCounts{Cached: 1}, ex.Footers)
	require.Equal(t, int64(0), ex.Requests.GET, "explain of a cached file makes no read")
	require.Empty(t, footerReads(t, st, rs.take()))

	// Without the cache every scan reads the footer again.
	off := tb.WithCache(table.CacheOptions{FooterBytes: -1, NoSnapshot: true})
	for range 2 {
		ids, rep := filteredIDs(t, off, filter)
		require.Equal(t, []int64{2005}, ids)
		require.Equal(t, &table.FooterCounts{Read: 1}, rep.Footers)
		require.NotEmpty(t, footerReads(t, st, rs.take()))
	}
	require.Equal(t, int64(0), off.CacheStats().SnapshotReuses)
}

// TestFooterCacheNeverServesAChangedTable: after a new commit, a compaction that
// replaces the files, and a file written again at a path the cache knows (removed
// and re-added with other bytes), a Table that cached footers and its snapshot
// returns exactly the rows of the new version.
func TestFooterCacheNeverServesAChangedTable(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemory()
	tb, err := table.Create(ctx, mem, layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 5))
	write := func(tb *table.Table, from, n int) {
		rec := layoutBatch(r, n, func(j int) int64 { return int64(from + j) }, 0)
		defer rec.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		require.NoError(t, err)
	}
	write(tb, 0, 1000)
	write(tb, 1000, 1000)
	ids, _ := filteredIDs(t, tb, "id >= 990 AND id < 1010")
	require.Len(t, ids, 20)
	ids, rep := filteredIDs(t, tb, "id >= 990 AND id < 1010")
	require.Len(t, ids, 20)
	require.Equal(t, int64(2), rep.Footers.Cached)

	// A new commit: the snapshot is loaded again, the new file's footer read.
	write(tb, 1005, 10)
	ids, rep = filteredIDs(t, tb, "id >= 990 AND id < 1010")
	require.Len(t, ids, 25)
	require.Equal(t, &table.FooterCounts{Read: 1, Cached: 2}, rep.Footers)

	// Compaction replaces every file.
	_, err = tb.Optimize(ctx, table.OptimizeOptions{})
	require.NoError(t, err)
	ids, rep = filteredIDs(t, tb, "id >= 990 AND id < 1010")
	require.Len(t, ids, 25)
	require.Zero(t, rep.Footers.Cached, "the compacted files are new")

	// A path comes back with other bytes: the file is removed and the same path added
	// again holding another table's file (other rows, size and time).
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	files := snap.Log().Files()
	require.Len(t, files, 1)
	old := files[0]
	otherStore := storage.NewMemory()
	other, err := table.Create(ctx, otherStore, layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	write(other, 5000, 300)
	os, err := other.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	src := os.Log().Files()[0]
	data, err := otherStore.Get(ctx, src.Path)
	require.NoError(t, err)
	require.NoError(t, mem.Put(ctx, old.Path, data))
	add := *src
	add.Path = old.Path
	ls, err := tb.Log().Snapshot(ctx, -1)
	require.NoError(t, err)
	txn := ls.NewTransaction(log.TxnOptions{})
	txn.Remove(old.RemoveAction(old.ModificationTime+1, true))
	txn.Add(&add)
	_, err = txn.Commit(ctx, log.CommitInfo{Operation: "WRITE"})
	require.NoError(t, err)
	ids, rep = filteredIDs(t, tb, "id >= 0")
	require.Len(t, ids, 300)
	require.Equal(t, int64(5000), ids[0])
	require.Equal(t, &table.FooterCounts{Read: 1}, rep.Footers, "another file under a known path: its own footer")

	// The same file under the same path and log entry but other bytes (what Delta
	// never does, and an out-of-band copy could): the object's size differs from the
	// cached footer's, which is dropped.
	write(other, 9000, 700)
	os, err = other.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	var bigger *log.Add
	for _, a := range os.Log().Files() {
		if a.Path != src.Path {
			bigger = a
		}
	}
	data, err = otherStore.Get(ctx, bigger.Path)
	require.NoError(t, err)
	require.NotEqual(t, add.Size, int64(len(data)))
	require.NoError(t, mem.Put(ctx, old.Path, data))
	ids, rep = filteredIDs(t, tb, "id >= 0")
	require.Len(t, ids, 700)
	require.Equal(t, int64(9000), ids[0])
	require.Equal(t, &table.FooterCounts{Read: 1}, rep.Footers)
}

// TestFooterCacheConcurrentScans: scans of one Table at once, with a footer cache
// small enough to evict all the time, return exactly the rows a scan without the cache
// returns (-race in CI).
func TestFooterCacheConcurrentScans(t *testing.T) {
	const nfiles = 6
	tb, _ := requestsTable(t, nfiles)
	plain := tb.WithCache(table.CacheOptions{FooterBytes: -1, NoSnapshot: true})
	tiny := tb.WithCache(table.CacheOptions{FooterBytes: 8 << 10})
	filters := []string{"id = 5", "id >= 2000 AND id < 4000", "id = 5005", "id > 100000", "id IN (5, 1999, 4005)", "id < 1500"}
	want := make([]string, len(filters))
	for i, f := range filters {
		ids, _ := filteredIDs(t, plain, f)
		want[i] = fmt.Sprint(ids)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		for i, f := range filters {
			wg.Go(func() {
				for range 3 {
					ids, _, err := scanIDs(tiny, f)
					if err != nil {
						errs <- err
						return
					}
					if got := fmt.Sprint(ids); got != want[i] {
						errs <- fmt.Errorf("goroutine %d, filter %q: rows differ", g, f)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := tiny.CacheStats().Footers
	require.LessOrEqual(t, st.Bytes, st.MaxBytes)
	require.Positive(t, st.Hits)
}

// BenchmarkRepeatedSelectiveCount is a service counting "id = 5" again and again on an
// unchanged local table of 21 files (every file needs its footer: each holds ids
// 0..1999): with the Table's caches (the default) and without (CacheOptions off).
// Each op is Table.Count: the latest snapshot, planning and the reads.
func BenchmarkRepeatedSelectiveCount(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	tb, err := table.CreateURL(ctx, dir, layoutSchema(), table.CreateOptions{})
	require.NoError(b, err)
	r := rand.New(rand.NewPCG(1, 2))
	for range 21 {
		rec := layoutBatch(r, 2000, func(j int) int64 { return int64(j) }, 0)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(b, err)
	}
	for _, c := range []struct {
		name string
		tb   *table.Table
	}{
		{"cached", tb.WithCache(table.CacheOptions{})},
		{"uncached", tb.WithCache(table.CacheOptions{FooterBytes: -1, NoSnapshot: true})},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				n, _, err := c.tb.Count(ctx, table.WithFilter("id = 5"))
				if err != nil || n != 21 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
