package table

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/skiplake/skiplake/internal/datafile"
)

// defaultFooterCacheBytes bounds a Table's footer cache unless WithCache says
// otherwise: the estimated memory of the parsed Parquet footers and page indexes it
// keeps (CacheOptions.FooterBytes).
const defaultFooterCacheBytes = 32 << 20

// CacheOptions says what a Table keeps between operations (Table.WithCache). The
// zero value is the default: a footer cache of 32 MiB and the latest
// snapshot kept.
type CacheOptions struct {
	// FooterBytes bounds the footer cache: the parsed footers (and page indexes) of
	// the data files scans opened, kept so that a later scan of the same files reads
	// neither again. 0 means 32 MiB; negative, no footer cache. The
	// least recently used footers are dropped first.
	FooterBytes int64
	// NoSnapshot turns off keeping the latest snapshot: by default Snapshot(Latest())
	// reuses the snapshot it loaded last when the log has not advanced since (it
	// checks the newest version, one listing of the log, before every reuse).
	NoSnapshot bool
}

// CacheStats reports what a Table's caches hold and how often they served a request.
type CacheStats struct {
	// Footers describes the footer cache (zero when it is off).
	Footers datafile.FooterCacheStats `json:"footers"`
	// SnapshotLoads counts the latest snapshots loaded from the log, and
	// SnapshotReuses those reused because the log had not advanced.
	SnapshotLoads  int64 `json:"snapshotLoads"`
	SnapshotReuses int64 `json:"snapshotReuses"`
}

// tableCache is what a Table keeps between operations. Its zero value is the default
// (the caches are made on first use), so every way of making a Table has one.
type tableCache struct {
	opts CacheOptions

	once    sync.Once
	footers *datafile.FooterCache

	mu     sync.Mutex
	latest *Snapshot // the newest snapshot loaded with Latest (nil: none, or off)

	loads, reuses atomic.Int64
}

// footerCache returns the Table's footer cache (nil: off).
func (t *Table) footerCache() *datafile.FooterCache {
	c := &t.cache
	c.once.Do(func() {
		n := c.opts.FooterBytes
		if n == 0 {
			n = defaultFooterCacheBytes
		}
		c.footers = datafile.NewFooterCache(n) // nil for n < 0
	})
	return c.footers
}

// WithCache returns a Table of the same table whose caches follow opts, starting
// empty. The receiver and its caches are not changed.
func (t *Table) WithCache(opts CacheOptions) *Table {
	return &Table{store: t.store, log: t.log, cache: tableCache{opts: opts}}
}

// CacheStats returns what the Table's caches hold and how often they were used.
func (t *Table) CacheStats() CacheStats {
	return CacheStats{Footers: t.footerCache().Stats(), SnapshotLoads: t.cache.loads.Load(), SnapshotReuses: t.cache.reuses.Load()}
}

// reuseLatest returns the kept latest snapshot when the log's newest version is still
// its version, as a Snapshot whose load requests are those of the check (ctx counts
// them); nil when there is none, it is off, or the log advanced or could not be
// listed (the caller then loads the snapshot, which reports any error).
func (t *Table) reuseLatest(ctx context.Context) *Snapshot {
	if t.cache.opts.NoSnapshot {
		return nil
	}
	t.cache.mu.Lock()
	kept := t.cache.latest
	t.cache.mu.Unlock()
	if kept == nil {
		return nil
	}
	v, err := t.log.LatestVersion(ctx)
	if err != nil || v != kept.Version() {
		// Let the old snapshot go before the new one loads: a table of a million
		// files would otherwise hold two at once.
		t.cache.mu.Lock()
		if t.cache.latest == kept {
			t.cache.latest = nil
		}
		t.cache.mu.Unlock()
		return nil
	}
	t.cache.reuses.Add(1)
	s := *kept // shares the log snapshot, the view and the planning state (fm)
	s.loadRequests = nil
	return &s
}

// keepLatest remembers s as the latest snapshot (unless an even newer one is kept).
func (t *Table) keepLatest(s *Snapshot) {
	t.cache.loads.Add(1)
	if t.cache.opts.NoSnapshot {
		return
	}
	t.cache.mu.Lock()
	if t.cache.latest == nil || t.cache.latest.Version() <= s.Version() {
		t.cache.latest = s
	}
	t.cache.mu.Unlock()
}
