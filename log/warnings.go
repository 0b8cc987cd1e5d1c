package log

import "sync"

// ObserveWarnings registers fn to be called with every warning the log raises while it
// reads: today, each checkpoint that could not be read and was skipped while a
// snapshot was built (see Snapshot.Warnings and L3). fn is called synchronously from
// the goroutine building the snapshot, possibly from several goroutines at once, so it
// must be safe for concurrent use and quick; the same warning is raised again by every
// snapshot that skips the same checkpoint. Logs returned by WithClock share the
// observers.
func (l *Log) ObserveWarnings(fn func(msg string)) {
	if fn == nil || l.warnings == nil {
		return
	}
	l.warnings.mu.Lock()
	defer l.warnings.mu.Unlock()
	l.warnings.fns = append(l.warnings.fns, fn)
}

// warningHook holds a log's warning observers.
type warningHook struct {
	mu  sync.Mutex
	fns []func(string)
}

// warn calls every observer with msg (h may be nil).
func (h *warningHook) warn(msg string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, fn := range fns {
		fn(msg)
	}
}
