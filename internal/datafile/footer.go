package datafile

import (
	"container/list"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Footer is what [Open] reads of a data file before any data: the parsed and
// validated Parquet footer, the file's Arrow schema and, once a reader needed them,
// the bytes of its page index (column and offset indexes; the index region). A Footer
// taken from one Reader ([Reader.Footer]) and given to later Opens of the same file
// ([ReadOptions.Footer]) spares them every footer read, and every page-index read once
// the region is loaded. It is safe for concurrent use by any
// number of Readers: everything but the region is immutable after Open, and the
// region is loaded once, under a lock.
//
// A Footer describes one file of one size: Open refuses it for a file of another size.
// Whether the bytes behind a path are still that file is the caller's to know (a Delta
// data file never changes once written; see package table's footer cache key).
type Footer struct {
	md      *metadata.FileMetaData
	schema  *arrow.Schema
	size    int64 // the file's size
	maxPage int64 // the largest compressed column chunk (D10)
	rgStart []int64

	// The index region [idxOff, idxEnd): empty when the file has no indexes after its
	// data or they are larger than maxIndexRegion.
	idxOff, idxEnd int64
	idxMu          sync.Mutex
	idx            atomic.Pointer[[]byte] // nil until loaded
	reads          atomic.Int64           // region loads (storage reads)
}

// maxIndexRegion is the largest index region a Footer keeps in memory (and loads with
// one read, even when a scan needs the index of one column): a file with a larger page
// index reads it from storage every time, as without a Footer.
const maxIndexRegion = 1 << 20

// newFooter builds the Footer of a file whose footer md was just validated against
// size.
func newFooter(md *metadata.FileMetaData, schema *arrow.Schema, size, maxPage int64) *Footer {
	// Settle arrow-go's lazily computed state of the metadata before it is shared by
	// goroutines (R1): RowGroup fills the writer version on first use.
	md.WriterVersion()
	f := &Footer{md: md, schema: schema, size: size, maxPage: maxPage}
	f.rgStart = make([]int64, md.NumRowGroups())
	var at int64
	for i := range f.rgStart {
		f.rgStart[i] = at
		at += md.RowGroup(i).NumRows()
	}
	f.idxOff, f.idxEnd = indexRegion(md, size)
	return f
}

// indexRegion returns the bytes that hold the file's column and offset indexes (the
// page index) when they lie together after every column chunk, as Parquet writers put
// them: from the first to the end of the last. The region is empty when the file has
// no page index, when part of it lies among the column chunks, or when it exceeds
// maxIndexRegion (such files read their page indexes from storage, as without a
// Footer). Bloom filters are not in it: they are read only by equality and IN probes,
// and can be large.
func indexRegion(md *metadata.FileMetaData, size int64) (int64, int64) {
	var dataEnd int64
	lo, hi := size, int64(0)
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		rgm := md.RowGroup(rg)
		for c := 0; c < rgm.NumColumns(); c++ {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return 0, 0
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			dataEnd = max(dataEnd, start+cc.TotalCompressedSize())
			for _, loc := range []*metadata.IndexLocation{cc.GetColumnIndexLocation(), cc.GetOffsetIndexLocation()} {
				if loc != nil && loc.Length > 0 {
					lo = min(lo, loc.Offset)
					hi = max(hi, loc.Offset+int64(loc.Length))
				}
			}
		}
	}
	footerStart := size - 8 - int64(md.Size())
	if hi <= lo || lo < dataEnd || hi > footerStart || hi-lo > maxIndexRegion {
		return 0, 0
	}
	return lo, hi
}

// Size is the size of the file the Footer was read from.
func (f *Footer) Size() int64 { return f.size }

// Metadata returns the parsed footer (shared: read only).
func (f *Footer) Metadata() *metadata.FileMetaData { return f.md }

// Bytes estimates the memory the Footer holds: the parsed footer (a few times its
// serialized size), the row-group starts and the index region (counted whether or not
// it is loaded yet). [FooterCache] bounds the sum of these.
func (f *Footer) Bytes() int64 {
	return 4*int64(f.md.Size()) + 8*int64(len(f.rgStart)) + (f.idxEnd - f.idxOff) + 1024
}

// IndexRegionReads counts the storage reads that loaded the Footer's index region
// (at most one per failed attempt plus one).
func (f *Footer) IndexRegionReads() int64 { return f.reads.Load() }

// IndexRegion returns where the index region lies ([off, end); off == end: none).
func (f *Footer) IndexRegion() (off, end int64) { return f.idxOff, f.idxEnd }

// region returns the loaded index region, loading it through ra on first use.
func (f *Footer) region(ra io.ReaderAt) ([]byte, error) {
	if p := f.idx.Load(); p != nil {
		return *p, nil
	}
	f.idxMu.Lock()
	defer f.idxMu.Unlock()
	if p := f.idx.Load(); p != nil {
		return *p, nil
	}
	buf := make([]byte, f.idxEnd-f.idxOff)
	f.reads.Add(1)
	n, err := ra.ReadAt(buf, f.idxOff)
	if n == len(buf) {
		err = nil // io.EOF with every byte read
	}
	if err != nil {
		return nil, err
	}
	f.idx.Store(&buf)
	return buf, nil
}

// footerReaderAt serves reads inside a Footer's index region from memory (loading
// the region with one read the first time) and passes every other read to ra.
type footerReaderAt struct {
	ra io.ReaderAt
	f  *Footer
}

// withFooter wraps ra so that reads of f's index region are served from f.
func withFooter(ra io.ReaderAt, f *Footer) io.ReaderAt {
	if f == nil || f.idxOff >= f.idxEnd {
		return ra
	}
	return &footerReaderAt{ra: ra, f: f}
}

// ReadAt implements io.ReaderAt.
func (r *footerReaderAt) ReadAt(b []byte, off int64) (int, error) {
	if off < r.f.idxOff || off+int64(len(b)) > r.f.idxEnd || len(b) == 0 {
		return r.ra.ReadAt(b, off)
	}
	reg, err := r.f.region(r.ra)
	if err != nil {
		return 0, err
	}
	return copy(b, reg[off-r.f.idxOff:]), nil
}

// FooterCache keeps the Footers of recently opened data files, bounded by their
// estimated memory ([Footer.Bytes]) and evicting the least recently used first. Keys
// are the caller's: they must name one file's bytes (package table keys by path, size
// and modification time of the add action). It is safe for concurrent use; a nil
// *FooterCache caches nothing.
type FooterCache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // of *footerEntry, most recently used first
	byKey map[string]*list.Element

	hits, misses, evictions atomic.Int64
}

type footerEntry struct {
	key string
	f   *Footer
	n   int64
}

// NewFooterCache returns a cache holding at most maxBytes of Footers (maxBytes <= 0:
// nil, which caches nothing).
func NewFooterCache(maxBytes int64) *FooterCache {
	if maxBytes <= 0 {
		return nil
	}
	return &FooterCache{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

// Get returns the Footer cached under key, or nil; a hit makes it the most recently
// used.
func (c *FooterCache) Get(key string) *Footer {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	c.order.MoveToFront(e)
	return e.Value.(*footerEntry).f
}

// Put caches f under key (replacing what was there), evicting the least recently used
// Footers until the cache fits its bound. A Footer larger than the whole bound is not
// cached.
func (c *FooterCache) Put(key string, f *Footer) {
	if c == nil || f == nil {
		return
	}
	n := f.Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.removeLocked(e)
	}
	if n > c.max {
		return
	}
	for c.used+n > c.max {
		c.removeLocked(c.order.Back())
		c.evictions.Add(1)
	}
	c.byKey[key] = c.order.PushFront(&footerEntry{key: key, f: f, n: n})
	c.used += n
}

// Remove drops key's Footer (a file found changed).
func (c *FooterCache) Remove(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.removeLocked(e)
	}
}

func (c *FooterCache) removeLocked(e *list.Element) {
	fe := c.order.Remove(e).(*footerEntry)
	delete(c.byKey, fe.key)
	c.used -= fe.n
}

// FooterCacheStats describes a FooterCache.
type FooterCacheStats struct {
	// Entries and Bytes are the Footers held and their estimated memory.
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// MaxBytes is the bound.
	MaxBytes int64 `json:"maxBytes"`
	// Hits and Misses count Get calls; Evictions counts Footers dropped for room.
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Evictions int64 `json:"evictions"`
}

// Stats returns the cache's counters (zero for a nil cache).
func (c *FooterCache) Stats() FooterCacheStats {
	if c == nil {
		return FooterCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return FooterCacheStats{Entries: len(c.byKey), Bytes: c.used, MaxBytes: c.max,
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}
