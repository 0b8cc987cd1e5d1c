package table

import (
	"sync"

	"github.com/skiplake/skiplake/expr"
)

// ObserveFilters registers fn to be called with the filter of every scan (and
// count) planned on a snapshot of this table, once the filter has bound to the
// table's schema; workload.Recorder.Observe fits. Nothing is written anywhere:
// recording a workload is the caller's business. fn is called synchronously
// from the goroutine planning the scan, possibly from several goroutines at
// once, so it must be safe for concurrent use and quick. Snapshots obtained
// before the call report to it too.
func (t *Table) ObserveFilters(fn func(expr.Expr)) {
	if fn == nil {
		return
	}
	t.filters.mu.Lock()
	defer t.filters.mu.Unlock()
	t.filters.fns = append(t.filters.fns, fn)
}

// filterHook holds a table's filter observers.
type filterHook struct {
	mu  sync.Mutex
	fns []func(expr.Expr)
}

// observe calls every observer with e (h may be nil).
func (h *filterHook) observe(e expr.Expr) {
	if h == nil || e == nil {
		return
	}
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

// ObserveWarnings registers fn to be called with every warning raised while this
// table's log is read (log.Log.ObserveWarnings): a checkpoint that could not be read
// and was skipped, the snapshot then being built from an older checkpoint or from
// version 0 and the JSON commits after it (as Delta Spark does). The answer is
// right; the warning says that reading was slower than it should be and that the
// checkpoint needs rewriting (Checkpoint writes a new one). fn must be safe for
// concurrent use and quick; a warning repeats for every snapshot that meets it.
func (t *Table) ObserveWarnings(fn func(msg string)) { t.log.ObserveWarnings(fn) }
