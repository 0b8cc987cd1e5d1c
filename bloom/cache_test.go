package bloom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// memLoader serves index files from a map and counts loads per path.
type memLoader struct {
	mu       sync.Mutex
	files    map[string][]byte
	loads    map[string]int
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	delay    time.Duration
}

func newMemLoader() *memLoader {
	return &memLoader{files: map[string][]byte{}, loads: map[string]int{}}
}

func (l *memLoader) load(ctx context.Context, path string) ([]byte, error) {
	n := l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	for {
		m := l.maxSeen.Load()
		if n <= m || l.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	l.mu.Lock()
	l.loads[path]++
	data, ok := l.files[path]
	l.mu.Unlock()
	if l.delay > 0 {
		select {
		case <-time.After(l.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if !ok {
		return nil, fmt.Errorf("get %q: %w", path, storage.ErrNotExist)
	}
	return data, nil
}

func (l *memLoader) loadCount(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loads[path]
}

func mustTag(t testing.TB, path string, cols ...string) string {
	t.Helper()
	s, err := EncodeTag(Tag{Path: path, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCacheCoverage (B1): a filter is returned only when the tag lists the column
// and the index holds an entry for exactly (path, column); every failure is a
// warning plus "not covered", never a wrong skip.
func TestCacheCoverage(t *testing.T) {
	l := newMemLoader()
	good := IndexDir + "good.bin"
	data, err := MarshalIndex(
		Entry{DataPath: "a.parquet", Filter: filterOf(t, "id", value.Int64(1))},
		Entry{DataPath: "b.parquet", Filter: filterOf(t, "id", value.Int64(2))},
	)
	if err != nil {
		t.Fatal(err)
	}
	l.files[good] = data
	corrupt := append([]byte(nil), data...)
	corrupt[30] ^= 1
	l.files[IndexDir+"corrupt.bin"] = corrupt
	l.files[IndexDir+"empty.bin"] = nil

	tests := []struct {
		name     string
		file     FileRef
		covered  bool
		warnWith error // nil: no warning expected
	}{
		{"tagged file with entry is covered", FileRef{"a.parquet", mustTag(t, good, "id")}, true, nil},
		{"untagged file is not covered, silently", FileRef{"a.parquet", ""}, false, nil},
		{"tag without the column is not covered, silently", FileRef{"a.parquet", mustTag(t, good, "email")}, false, nil},
		{"unparseable tag warns", FileRef{"a.parquet", "{not json"}, false, ErrBadTag},
		{"future tag version warns", FileRef{"a.parquet", `{"v":9,"path":"_delta_index/bloom/good.bin","cols":["id"]}`}, false, ErrUnsupportedVersion},
		{"missing index file warns", FileRef{"a.parquet", mustTag(t, IndexDir+"gone.bin", "id")}, false, storage.ErrNotExist},
		{"corrupt index file warns", FileRef{"a.parquet", mustTag(t, IndexDir+"corrupt.bin", "id")}, false, ErrChecksum},
		{"empty index file warns", FileRef{"a.parquet", mustTag(t, IndexDir+"empty.bin", "id")}, false, ErrTruncated},
		{"index without the file's entry warns", FileRef{"c.parquet", mustTag(t, good, "id")}, false, ErrNotCovered},
		{"entry of another file is not borrowed", FileRef{"b.parquet ", mustTag(t, good, "id")}, false, ErrNotCovered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache(l.load, CacheOptions{})
			f, w, err := c.Filter(context.Background(), tc.file, "id")
			if err != nil {
				t.Fatal(err)
			}
			if (f != nil) != tc.covered {
				t.Fatalf("covered = %v, want %v (warning %v)", f != nil, tc.covered, w)
			}
			switch {
			case tc.warnWith == nil && w != nil:
				t.Fatalf("unexpected warning %s", w)
			case tc.warnWith != nil && (w == nil || !errors.Is(w.Err, tc.warnWith)):
				t.Fatalf("warning %v, want one wrapping %v", w, tc.warnWith)
			}
			if w != nil && (w.DataPath != tc.file.Path || w.Column != "id") {
				t.Fatalf("warning does not name the file and column: %s", w)
			}
			if f != nil && !f.MightContain(value.Int64(1)) {
				t.Fatal("covered filter lost its value")
			}
		})
	}
}

func TestCacheLoadsEachIndexOnceUnderConcurrency(t *testing.T) {
	l := newMemLoader()
	l.delay = time.Millisecond
	const segments, filesPer = 12, 25
	var files []FileRef
	for s := 0; s < segments; s++ {
		path := fmt.Sprintf("%sseg-%02d.bin", IndexDir, s)
		var entries []Entry
		for i := 0; i < filesPer; i++ {
			dp := fmt.Sprintf("s%02d-f%02d.parquet", s, i)
			entries = append(entries, Entry{DataPath: dp, Filter: filterOf(t, "id", value.Int64(int64(s*1000+i)))})
			files = append(files, FileRef{Path: dp, Tag: mustTag(t, path, "id")})
		}
		data, err := MarshalIndex(entries...)
		if err != nil {
			t.Fatal(err)
		}
		l.files[path] = data
	}
	c := NewCache(l.load, CacheOptions{Concurrency: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs, ws, err := c.Filters(context.Background(), files, "id")
			if err != nil || len(ws) != 0 {
				errs <- fmt.Errorf("err %v, warnings %v", err, ws)
				return
			}
			for i, f := range fs {
				s, k := i/filesPer, i%filesPer
				if f == nil || !f.MightContain(value.Int64(int64(s*1000+k))) {
					errs <- fmt.Errorf("file %s: filter %v lost its value", files[i].Path, f)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s := 0; s < segments; s++ {
		if n := l.loadCount(fmt.Sprintf("%sseg-%02d.bin", IndexDir, s)); n != 1 {
			t.Errorf("segment %d loaded %d times, want 1", s, n)
		}
	}
	if m := l.maxSeen.Load(); m > 3 || m < 1 {
		t.Errorf("max loads in flight %d, want 1..3", m)
	}
}

func TestCacheFailuresAreMemoisedButCancellationIsNot(t *testing.T) {
	l := newMemLoader()
	l.delay = 50 * time.Millisecond
	path := IndexDir + "x.bin"
	data, _ := MarshalIndex(Entry{DataPath: "a", Filter: filterOf(t, "id", value.Int64(1))})
	l.files[path] = data
	c := NewCache(l.load, CacheOptions{Concurrency: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Filters(ctx, []FileRef{{"a", mustTag(t, path, "id")}}, "id"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Filters: err %v", err)
	}
	f, w, err := c.Filter(context.Background(), FileRef{"a", mustTag(t, path, "id")}, "id")
	if err != nil || w != nil || f == nil {
		t.Fatalf("after cancellation the next caller must load: f=%v w=%v err=%v", f, w, err)
	}
	missing := IndexDir + "missing.bin"
	for i := 0; i < 3; i++ {
		if _, w, _ := c.Filter(context.Background(), FileRef{"a", mustTag(t, missing, "id")}, "id"); w == nil {
			t.Fatal("missing index gave no warning")
		}
	}
	if n := l.loadCount(missing); n != 1 {
		t.Fatalf("missing index loaded %d times, want 1 (failures are memoised per snapshot)", n)
	}
}

func TestCacheWaiterRetriesAfterOwnerCancelled(t *testing.T) {
	l := newMemLoader()
	l.delay = 100 * time.Millisecond
	path := IndexDir + "y.bin"
	data, _ := MarshalIndex(Entry{DataPath: "a", Filter: filterOf(t, "id", value.Int64(1))})
	l.files[path] = data
	c := NewCache(l.load, CacheOptions{})
	ownerCtx, cancel := context.WithCancel(context.Background())
	ownerDone := make(chan error)
	go func() {
		_, err := c.Index(ownerCtx, path)
		ownerDone <- err
	}()
	for l.inFlight.Load() == 0 { // wait until the owner's load is running
		time.Sleep(time.Millisecond)
	}
	waiter := make(chan error)
	go func() {
		ix, err := c.Index(context.Background(), path)
		if err == nil && ix.Len() != 1 {
			err = fmt.Errorf("index has %d entries", ix.Len())
		}
		waiter <- err
	}()
	cancel()
	if err := <-ownerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("owner: %v", err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("waiter with a live context failed: %v", err)
	}
}
