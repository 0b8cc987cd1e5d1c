package workload

import (
	"sync"

	"github.com/skiplake/skiplake/expr"
)

// DefaultMaxDistinct is how many distinct filters a Recorder keeps when
// RecorderOptions.MaxDistinct is 0.
const DefaultMaxDistinct = 10_000

// RecorderOptions configures a Recorder. The zero value keeps up to
// DefaultMaxDistinct distinct filters.
type RecorderOptions struct {
	// MaxDistinct bounds the distinct filters kept (default DefaultMaxDistinct);
	// filters seen after that are counted in Dropped, so a program that builds a
	// new literal into every filter cannot grow the recorder without bound.
	MaxDistinct int
}

// Recorder collects the filters a program's scans use, counting repeats: a
// filter seen n times becomes one query of weight n. It only keeps them in
// memory. It is safe for concurrent use; its zero value is not usable (use
// NewRecorder).
type Recorder struct {
	mu      sync.Mutex
	max     int
	index   map[string]int
	queries []Query
	dropped int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder(opts RecorderOptions) *Recorder {
	m := opts.MaxDistinct
	if m <= 0 {
		m = DefaultMaxDistinct
	}
	return &Recorder{max: m, index: map[string]int{}}
}

// Observe records one use of filter e (nil is ignored). Its signature fits
// table.Table.ObserveFilters.
func (r *Recorder) Observe(e expr.Expr) {
	if e == nil {
		return
	}
	text := e.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.index[text]; ok {
		r.queries[i].Weight++
		return
	}
	if len(r.queries) >= r.max {
		r.dropped++
		return
	}
	r.index[text] = len(r.queries)
	r.queries = append(r.queries, Query{Filter: text, Weight: 1, expr: e})
}

// Dropped returns how many observations were not kept because MaxDistinct
// distinct filters were already recorded.
func (r *Recorder) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Workload returns what was recorded so far, in first-seen order (nil when
// nothing was). The result is a copy: recording continues independently.
func (r *Recorder) Workload() *Workload {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queries) == 0 {
		return nil
	}
	return &Workload{Queries: append([]Query(nil), r.queries...)}
}

// Reset forgets everything recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index = map[string]int{}
	r.queries = nil
	r.dropped = 0
}
