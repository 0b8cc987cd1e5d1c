package bloom

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultConcurrency is the number of index loads a Cache runs at once when
// CacheOptions.Concurrency is 0.
const DefaultConcurrency = 8

// Loader fetches the bytes of an index file given its path relative to the table
// root. The table layer passes storage.Storage.Get. It must be safe for concurrent use.
type Loader func(ctx context.Context, path string) ([]byte, error)

// CacheOptions configures a Cache. The zero value is ready to use.
type CacheOptions struct {
	// Concurrency bounds the index loads in flight across all callers of one Cache.
	// 0 means DefaultConcurrency; negative values are treated as 1.
	Concurrency int
}

// FileRef names a data file and the raw value of its TagKey tag ("" when absent).
type FileRef struct {
	// Path is add.path, exactly as in the log.
	Path string
	// Tag is add.tags[TagKey], or "" when the file has none.
	Tag string
}

// Warning explains why a file that claimed a Bloom index for a column is treated as
// not covered (bad tag, missing or corrupt index file, entry absent). The file is
// read; the warning exists so that the operator learns the index is broken.
type Warning struct {
	// DataPath is the affected data file.
	DataPath string
	// IndexPath is the index file named by the tag ("" when the tag did not decode).
	IndexPath string
	// Column is the probed column.
	Column string
	// Err is the cause; it wraps a package sentinel (ErrBadTag, ErrChecksum,
	// ErrNotCovered, ...) or the loader's error.
	Err error
}

// String renders the warning for logs.
func (w Warning) String() string {
	return fmt.Sprintf("bloom: data file %q column %q not covered (index %q): %v", w.DataPath, w.Column, w.IndexPath, w.Err)
}

// Cache loads index files lazily, at most once each, with bounded parallelism, and
// keeps them for the life of one snapshot. A failed load is remembered too (the
// snapshot's index files do not change), except a load cut short by its context,
// which the next caller retries. A Cache is safe for concurrent use.
type Cache struct {
	load Loader
	sem  chan struct{}

	mu      sync.Mutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	done chan struct{} // closed when ix/err are set
	ix   *Index
	err  error
}

// NewCache returns an empty Cache that loads index files through load.
func NewCache(load Loader, opts CacheOptions) *Cache {
	n := opts.Concurrency
	switch {
	case n == 0:
		n = DefaultConcurrency
	case n < 0:
		n = 1
	}
	return &Cache{load: load, sem: make(chan struct{}, n), entries: make(map[string]*cacheEntry)}
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Index returns the decoded index file at path, loading it on first use. Concurrent
// callers for one path share one load.
func (c *Cache) Index(ctx context.Context, path string) (*Index, error) {
	for {
		c.mu.Lock()
		e, loaded := c.entries[path]
		if !loaded {
			e = &cacheEntry{done: make(chan struct{})}
			c.entries[path] = e
		}
		c.mu.Unlock()
		if !loaded {
			c.fill(ctx, path, e)
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if isCtxErr(e.err) && ctx.Err() == nil {
			continue // another caller's context ended its load; try again with ours
		}
		return e.ix, e.err
	}
}

// fill performs the load for e and publishes its result.
func (c *Cache) fill(ctx context.Context, path string, e *cacheEntry) {
	defer close(e.done)
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		e.err = ctx.Err()
		c.forget(path, e)
		return
	}
	data, err := c.load(ctx, path)
	<-c.sem
	if err != nil {
		e.err = fmt.Errorf("bloom: loading index %q: %w", path, err)
		if isCtxErr(err) {
			c.forget(path, e)
		}
		return
	}
	ix, err := ReadIndex(data)
	if err != nil {
		e.err = fmt.Errorf("bloom: decoding index %q: %w", path, err)
		return
	}
	e.ix = ix
}

func (c *Cache) forget(path string, e *cacheEntry) {
	c.mu.Lock()
	if c.entries[path] == e {
		delete(c.entries, path)
	}
	c.mu.Unlock()
}

// Filter returns the filter of column for one data file, or nil when the file is not
// covered. The Warning is non-nil when the file claimed coverage but the index is
// unusable. The error is non-nil only when ctx ended.
func (c *Cache) Filter(ctx context.Context, file FileRef, column string) (*Filter, *Warning, error) {
	fs, ws, err := c.Filters(ctx, []FileRef{file}, column)
	if err != nil {
		return nil, nil, err
	}
	var w *Warning
	if len(ws) > 0 {
		w = &ws[0]
	}
	return fs[0], w, nil
}

// Filters returns, for each file, the filter of column or nil when the file is not
// covered (no tag, tag without the column, or a Warning). Index files are loaded in
// parallel, at most CacheOptions.Concurrency at a time. Invariant B1: a filter is
// returned only when the file's tag lists the column and the index file it names
// holds an entry for exactly (file.Path, column); every other case yields nil, so
// the file is read. The error is non-nil only when ctx ended.
func (c *Cache) Filters(ctx context.Context, files []FileRef, column string) ([]*Filter, []Warning, error) {
	filters := make([]*Filter, len(files))
	var warnings []Warning
	tags := make([]Tag, len(files))
	want := make([]bool, len(files))
	var paths []string
	seen := make(map[string]struct{})
	for i, f := range files {
		if f.Tag == "" {
			continue
		}
		t, err := DecodeTag(f.Tag)
		if err != nil {
			warnings = append(warnings, Warning{DataPath: f.Path, Column: column, Err: err})
			continue
		}
		if !t.HasColumn(column) {
			continue
		}
		tags[i], want[i] = t, true
		if _, ok := seen[t.Path]; !ok {
			seen[t.Path] = struct{}{}
			paths = append(paths, t.Path)
		}
	}
	results := make(map[string]*cacheEntry, len(paths))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ix, err := c.Index(ctx, p)
			mu.Lock()
			results[p] = &cacheEntry{ix: ix, err: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("bloom: loading indexes: %w", err)
	}
	for i, f := range files {
		if !want[i] {
			continue
		}
		r := results[tags[i].Path]
		if r.err != nil {
			warnings = append(warnings, Warning{DataPath: f.Path, IndexPath: tags[i].Path, Column: column, Err: r.err})
			continue
		}
		flt, ok := r.ix.Filter(f.Path, column)
		if !ok {
			warnings = append(warnings, Warning{DataPath: f.Path, IndexPath: tags[i].Path, Column: column,
				Err: fmt.Errorf("%w: index %q has no entry for data path %q column %q", ErrNotCovered, tags[i].Path, f.Path, column)})
			continue
		}
		filters[i] = flt
	}
	return filters, warnings, nil
}
