package table

import (
	"context"
	"sync"

	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
)

// ScanReport says what a scan planned and read at each skipping level. Levels appear
// in the order they are applied:
//
//   - "partition": files decided by their partition values alone;
//   - "stats": files left by the partition level, decided by their min/max/nullCount;
//   - "bloom": files left by the stats level whose Bloom filters were probed;
//   - "rowgroup": row groups of the files read, decided by Parquet footer statistics
//     and, for equality and IN, the row groups' Parquet Bloom filters; bytes are the
//     row groups' compressed size in the file;
//   - "page": rows of the row groups left by the rowgroup level that still need a
//     recheck, decided by the Parquet page index (column + offset index). Its units are
//     ROWS, not pages (Unit says so): Total is the rows of the row groups considered,
//     Skipped the rows in pages not read, Kept the rows read; the byte counters stay
//     zero and MustMatch is always zero.
//
// Every level's Unit names what it counts; bytes are stored (compressed) bytes.
//
// Files summarises the file levels: Total files in the snapshot, Skipped by any level,
// Kept (read), MustMatch (read without recheck).
//
// Requests and SnapshotRequests say what the scan cost in object-store requests, for
// tables whose storage counts them (the object-store backends, or a store wrapped in
// storage.NewCounting); they are nil otherwise (a plain local directory).
type ScanReport struct {
	// Version is the snapshot version scanned.
	Version int64 `json:"version"`
	// Filter is the scan's filter as text (empty: none).
	Filter string `json:"filter,omitempty"`
	// Files summarises the file levels (above).
	Files skipping.LevelStats `json:"files"`
	// Levels are the levels' figures, in the order above.
	Levels []skipping.LevelStats `json:"levels"`
	// RowsReturned counts rows handed to the caller so far.
	RowsReturned int64 `json:"rowsReturned"`
	// Warnings lists conditions that made the scan read more than necessary (for
	// example an unreadable Bloom index file); they never change the result.
	Warnings []string `json:"warnings,omitempty"`
	// Requests counts the requests the scan itself made and the bytes they moved: for
	// Scan.Report, planning (Bloom index files); for Explain, planning and the footers
	// and page indexes of the files kept; for a Reader's or Count's report, planning and
	// everything read so far (footers, data, deletion vectors). Requests of other
	// operations on the same storage, concurrent or not, are not included.
	Requests *storage.RequestCounts `json:"requests,omitempty"`
	// SnapshotRequests counts the requests loading the scanned snapshot made (listing
	// the log, reading its checkpoint and commits), once per Snapshot however many
	// scans share it. With Requests, it is what the scan cost from nothing.
	SnapshotRequests *storage.RequestCounts `json:"snapshotRequests,omitempty"`
	// Footers counts the data-file footers the scan opened (Explain, a Reader, Count):
	// read from storage, or reused from the table's footer cache without a request
	// (CacheOptions). Nil when the scan opened no file.
	Footers *FooterCounts `json:"footers,omitempty"`

	mu sync.Mutex
	// live counts a Reader's requests while it reads; Requests holds the planning's
	// (copies add the two).
	live *storage.Counters
}

// FooterCounts counts the data-file footers a scan opened.
type FooterCounts struct {
	// Read counts footers read from storage (and parsed).
	Read int64 `json:"read"`
	// Cached counts footers taken from the table's footer cache: no footer or page
	// index read for them.
	Cached int64 `json:"cached"`
}

// countFooter counts one footer opened: read from storage or from the cache.
func (r *ScanReport) countFooter(read bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Footers == nil {
		r.Footers = new(FooterCounts)
	}
	if read {
		r.Footers.Read++
	} else {
		r.Footers.Cached++
	}
}

// requestCounter returns counters for the requests of an operation on store and ctx
// counting into them too, or nil and ctx when store does not count requests.
func requestCounter(ctx context.Context, store storage.Storage) (*storage.Counters, context.Context) {
	if _, ok := storage.Requests(store); !ok {
		return nil, ctx
	}
	c := new(storage.Counters)
	return c, storage.WithRequestCounters(ctx, c)
}

// countsOf returns c's counts, or nil for nil counters.
func countsOf(c *storage.Counters) *storage.RequestCounts {
	if c == nil {
		return nil
	}
	rc := c.Snapshot()
	return &rc
}

// addRequests adds c's counts to r.Requests (nil c: nothing to add).
func (r *ScanReport) addRequests(c *storage.Counters) {
	if c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Requests = sumRequests(r.Requests, countsOf(c))
}

// requestsLocked is r.Requests plus what a live Reader has counted; r.mu is held.
func (r *ScanReport) requestsLocked() *storage.RequestCounts {
	if r.live == nil {
		return copyCounts(r.Requests)
	}
	return sumRequests(r.Requests, countsOf(r.live))
}

// sumRequests returns a + b (nil when both are nil).
func sumRequests(a, b *storage.RequestCounts) *storage.RequestCounts {
	switch {
	case a == nil:
		return copyCounts(b)
	case b == nil:
		return copyCounts(a)
	}
	s := a.Add(*b)
	return &s
}

func copyCounts(c *storage.RequestCounts) *storage.RequestCounts {
	if c == nil {
		return nil
	}
	v := *c
	return &v
}

// Level returns the named level's counters (zero if the scan did not use it).
func (r *ScanReport) Level(name string) skipping.LevelStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.Levels {
		if l.Level == name {
			return l
		}
	}
	return skipping.LevelStats{Level: name, Unit: levelUnit(name)}
}

// levelUnit is what a level of the report counts.
func levelUnit(name string) string {
	switch name {
	case "rowgroup":
		return skipping.UnitRowGroups
	case "page":
		return skipping.UnitRows
	}
	return skipping.UnitFiles
}

func (r *ScanReport) level(name string) *skipping.LevelStats {
	for i := range r.Levels {
		if r.Levels[i].Level == name {
			return &r.Levels[i]
		}
	}
	r.Levels = append(r.Levels, skipping.LevelStats{Level: name, Unit: levelUnit(name)})
	return &r.Levels[len(r.Levels)-1]
}

// addRowGroups merges one file's row-group verdicts (concurrent readers call it).
func (r *ScanReport) addRowGroups(s skipping.LevelStats) {
	r.mu.Lock()
	r.level("rowgroup").Merge(s)
	r.mu.Unlock()
}

// addPages merges one file's page-level row counts (concurrent readers call it).
func (r *ScanReport) addPages(s skipping.LevelStats) {
	if s.Total == 0 {
		return
	}
	r.mu.Lock()
	r.level("page").Merge(s)
	r.mu.Unlock()
}

// clone returns a deep copy, taken under the lock.
func (r *ScanReport) clone() *ScanReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &ScanReport{
		Version:      r.Version,
		Filter:       r.Filter,
		Files:        r.Files,
		Levels:       append([]skipping.LevelStats(nil), r.Levels...),
		RowsReturned: r.RowsReturned,
		Warnings:     append([]string(nil), r.Warnings...),

		Requests:         r.requestsLocked(),
		SnapshotRequests: copyCounts(r.SnapshotRequests),
		Footers:          copyFooters(r.Footers),
	}
}

func (r *ScanReport) setRows(n int64) {
	r.mu.Lock()
	r.RowsReturned = n
	r.mu.Unlock()
}

func (r *ScanReport) warn(msg string) {
	r.mu.Lock()
	r.Warnings = append(r.Warnings, msg)
	r.mu.Unlock()
}

// merge adds src's file levels, row-group and page counters, warnings and requests to r (a
// MERGE sums the reports of its passes). Files and Version are left as they are.
func (r *ScanReport) merge(src *ScanReport) {
	src.mu.Lock()
	levels := append([]skipping.LevelStats(nil), src.Levels...)
	warnings := append([]string(nil), src.Warnings...)
	reqs := src.requestsLocked()
	footers := copyFooters(src.Footers)
	src.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range levels {
		r.level(l.Level).Merge(l)
	}
	r.Warnings = append(r.Warnings, warnings...)
	r.Requests = sumRequests(r.Requests, reqs)
	if footers != nil {
		if r.Footers == nil {
			r.Footers = new(FooterCounts)
		}
		r.Footers.Read += footers.Read
		r.Footers.Cached += footers.Cached
	}
}

func copyFooters(f *FooterCounts) *FooterCounts {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

// reportRecorder records what the scan reader finds in a ScanReport.
type reportRecorder struct{ r *ScanReport }

// recorder is rep as the scan reader's Recorder (nil for a nil rep: nothing recorded).
func recorder(rep *ScanReport) scanexec.Recorder {
	if rep == nil {
		return nil
	}
	return reportRecorder{rep}
}

func (rr reportRecorder) CountFooter(read bool)              { rr.r.countFooter(read) }
func (rr reportRecorder) AddRowGroups(s skipping.LevelStats) { rr.r.addRowGroups(s) }
func (rr reportRecorder) AddPages(s skipping.LevelStats)     { rr.r.addPages(s) }
func (rr reportRecorder) Warn(msg string)                    { rr.r.warn(msg) }
func (rr reportRecorder) SetRows(n int64)                    { rr.r.setRows(n) }
