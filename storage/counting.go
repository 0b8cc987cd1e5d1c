package storage

import (
	"context"
	"fmt"
	"sync/atomic"
)

// RequestCounts counts the requests a store made (or, for stores that make none, the
// requests its calls would be on an object store) and the bytes they moved.
type RequestCounts struct {
	// GET counts whole and ranged object reads.
	GET int64 `json:"get"`
	// HEAD counts metadata requests (Stat, Open without a suffix read).
	HEAD int64 `json:"head"`
	// LIST counts listing pages (up to 1,000 keys each on S3).
	LIST int64 `json:"list"`
	// PUT counts object writes (a multipart upload counts once).
	PUT int64 `json:"put"`
	// DELETE counts delete requests (a batch delete counts once).
	DELETE int64 `json:"delete"`
	// BytesRead and BytesWritten count object bytes transferred.
	BytesRead    int64 `json:"bytesRead"`
	BytesWritten int64 `json:"bytesWritten"`
}

// Total is the number of requests of every kind.
func (c RequestCounts) Total() int64 { return c.GET + c.HEAD + c.LIST + c.PUT + c.DELETE }

// Sub returns c - o, for the requests made between two readings.
func (c RequestCounts) Sub(o RequestCounts) RequestCounts {
	return RequestCounts{c.GET - o.GET, c.HEAD - o.HEAD, c.LIST - o.LIST, c.PUT - o.PUT, c.DELETE - o.DELETE,
		c.BytesRead - o.BytesRead, c.BytesWritten - o.BytesWritten}
}

// Add returns c + o.
func (c RequestCounts) Add(o RequestCounts) RequestCounts {
	return RequestCounts{c.GET + o.GET, c.HEAD + o.HEAD, c.LIST + o.LIST, c.PUT + o.PUT, c.DELETE + o.DELETE,
		c.BytesRead + o.BytesRead, c.BytesWritten + o.BytesWritten}
}

// String formats the counts as "GET 3, HEAD 0, LIST 1, PUT 0, DELETE 0, 12.0 KiB read".
func (c RequestCounts) String() string {
	return fmt.Sprintf("GET %d, HEAD %d, LIST %d, PUT %d, DELETE %d, %d bytes read, %d bytes written",
		c.GET, c.HEAD, c.LIST, c.PUT, c.DELETE, c.BytesRead, c.BytesWritten)
}

// RequestCounter is implemented by stores that count their requests (the object-store
// backends count exactly what they send; Counting counts calls).
type RequestCounter interface {
	// Requests returns the counts since the store was opened.
	Requests() RequestCounts
}

// Requests returns s's request counts and true when s counts them.
func Requests(s Storage) (RequestCounts, bool) {
	if rc, ok := s.(RequestCounter); ok {
		return rc.Requests(), true
	}
	return RequestCounts{}, false
}

// Counters is a set of atomic request counters, for implementations of
// RequestCounter. The zero value is ready; it is safe for concurrent use.
type Counters struct {
	get, head, list, put, del, read, written atomic.Int64
}

// Get counts a GET of n bytes.
func (c *Counters) Get(n int64) { c.get.Add(1); c.read.Add(n) }

// Head counts a HEAD.
func (c *Counters) Head() { c.head.Add(1) }

// List counts a listing page.
func (c *Counters) List() { c.list.Add(1) }

// Put counts a PUT of n bytes.
func (c *Counters) Put(n int64) { c.put.Add(1); c.written.Add(n) }

// Delete counts a delete request.
func (c *Counters) Delete() { c.del.Add(1) }

// Snapshot returns the counts.
func (c *Counters) Snapshot() RequestCounts {
	return RequestCounts{GET: c.get.Load(), HEAD: c.head.Load(), LIST: c.list.Load(), PUT: c.put.Load(),
		DELETE: c.del.Load(), BytesRead: c.read.Load(), BytesWritten: c.written.Load()}
}

// ctxCounters is the chain of Counters a context carries (innermost first).
type ctxCounters struct {
	c    *Counters
	next *ctxCounters
}

type countersKey struct{}

// WithRequestCounters returns a context under which the requests a counting store
// (Counting, the object-store backends) makes for a call given the context — or for a
// File it opened, or a writer it created, with the context — are also counted into c,
// besides the store's own counts. Contexts nest: requests under an inner context count
// into its Counters and every outer one's. Stores that do not count requests ignore
// it. This is how a caller attributes requests to one operation while others share the
// store (package table fills ScanReport.Requests this way).
func WithRequestCounters(ctx context.Context, c *Counters) context.Context {
	if c == nil {
		return ctx
	}
	next, _ := ctx.Value(countersKey{}).(*ctxCounters)
	return context.WithValue(ctx, countersKey{}, &ctxCounters{c: c, next: next})
}

// withoutRequestCounters hides ctx's counters from the store a wrapper calls, so a
// request is counted once, by the outermost counting layer.
func withoutRequestCounters(ctx context.Context) context.Context {
	if ctx.Value(countersKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, countersKey{}, (*ctxCounters)(nil))
}

// Tally counts requests into a store's own Counters and those of the context the
// request was made under (see WithRequestCounters). Counters.For makes one.
type Tally struct {
	own   *Counters
	chain *ctxCounters
}

// For returns the Tally of a request made under ctx: it counts into c and into
// every Counters ctx carries.
func (c *Counters) For(ctx context.Context) Tally {
	t := Tally{own: c}
	if ctx != nil {
		t.chain, _ = ctx.Value(countersKey{}).(*ctxCounters)
	}
	return t
}

func (t Tally) each(fn func(*Counters)) {
	if t.own != nil {
		fn(t.own)
	}
	for e := t.chain; e != nil; e = e.next {
		fn(e.c)
	}
}

// Get counts a GET of n bytes.
func (t Tally) Get(n int64) { t.each(func(c *Counters) { c.Get(n) }) }

// Head counts a HEAD.
func (t Tally) Head() { t.each((*Counters).Head) }

// List counts a listing page.
func (t Tally) List() { t.each((*Counters).List) }

// Put counts a PUT of n bytes.
func (t Tally) Put(n int64) { t.each(func(c *Counters) { c.Put(n) }) }

// Delete counts a delete request.
func (t Tally) Delete() { t.each((*Counters).Delete) }

// Counting wraps a store and counts its calls as the requests they would be on an
// object store without suffix reads: Get and each ReadAt one GET, Open and Stat one
// HEAD, List one LIST per 1,000 objects returned (at least one), Put, PutIfAbsent
// and a committed Create one PUT, Delete one DELETE. It keeps the Creator capability
// of the store it wraps. Use it to see what a workload costs on a local store; the
// object-store backends count their real requests themselves. Calls made under a
// context of WithRequestCounters count there too; the wrapped store is called with
// those counters hidden, so wrapping a counting store does not count a request twice.
type Counting struct {
	Storage
	c Counters
}

// NewCounting wraps s.
func NewCounting(s Storage) *Counting { return &Counting{Storage: s} }

// Requests returns the counts so far.
func (c *Counting) Requests() RequestCounts { return c.c.Snapshot() }

// Get counts one GET.
func (c *Counting) Get(ctx context.Context, p string) ([]byte, error) {
	b, err := c.Storage.Get(withoutRequestCounters(ctx), p)
	c.c.For(ctx).Get(int64(len(b)))
	return b, err
}

// Open counts one HEAD; each ReadAt of the returned file counts one GET.
func (c *Counting) Open(ctx context.Context, p string) (File, error) {
	t := c.c.For(ctx)
	t.Head()
	f, err := c.Storage.Open(withoutRequestCounters(ctx), p)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, t: t}, nil
}

// Put counts one PUT.
func (c *Counting) Put(ctx context.Context, p string, data []byte) error {
	c.c.For(ctx).Put(int64(len(data)))
	return c.Storage.Put(withoutRequestCounters(ctx), p, data)
}

// PutIfAbsent counts one PUT.
func (c *Counting) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	c.c.For(ctx).Put(int64(len(data)))
	return c.Storage.PutIfAbsent(withoutRequestCounters(ctx), p, data)
}

// List counts one LIST per started 1,000 objects.
func (c *Counting) List(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	l, err := c.Storage.List(withoutRequestCounters(ctx), prefix, startAfter)
	t := c.c.For(ctx)
	for i := 0; i == 0 || i < len(l); i += 1000 {
		t.List()
	}
	return l, err
}

// Delete counts one DELETE.
func (c *Counting) Delete(ctx context.Context, p string) error {
	c.c.For(ctx).Delete()
	return c.Storage.Delete(withoutRequestCounters(ctx), p)
}

// Stat counts one HEAD.
func (c *Counting) Stat(ctx context.Context, p string) (ObjectInfo, error) {
	c.c.For(ctx).Head()
	return c.Storage.Stat(withoutRequestCounters(ctx), p)
}

// Create streams through the wrapped store's Create (or the buffering fallback) and
// counts one PUT of the committed bytes.
func (c *Counting) Create(ctx context.Context, p string) (ObjectWriter, error) {
	w, err := CreateObject(withoutRequestCounters(ctx), c.Storage, p)
	if err != nil {
		return nil, err
	}
	return &countingWriter{ObjectWriter: w, t: c.c.For(ctx)}, nil
}

type countingFile struct {
	File
	t Tally
}

func (f *countingFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.t.Get(int64(n))
	return n, err
}

type countingWriter struct {
	ObjectWriter
	t    Tally
	done bool // the PUT is counted
	n    int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ObjectWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Commit() error {
	if !w.done {
		w.t.Put(w.n)
		w.done = true
	}
	return w.ObjectWriter.Commit()
}
