package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultLineInterval is how often Lines prints at most, unless told otherwise.
const DefaultLineInterval = 10 * time.Second

// Lines reports progress as plain lines for logs, where a redrawn bar would be
// noise: at most one line per interval, each saying how far the work has come (and
// any secondary counts, such as bins and files done), its rate since the start and
// the estimated time left, e.g.
//
//	optimize: 35% (1.20 GiB of 3.40 GiB), 2/6 bins, 31/90 files, 45.2 MiB/s, ETA 50s, elapsed 27s [write]
//
// and one final line from Done. Counts in bytes are printed in binary units. Lines is
// safe for concurrent use; a nil *Lines does nothing.
type Lines struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	interval time.Duration
	now      func() time.Time
	start    time.Time
	last     time.Time // when the last line was printed (zero: none yet)
	done     int64
	total    int64
	unit     string
	phase    string
	counts   []Count
	started  bool
	dirty    bool // an update came after the last line
}

// NewLines returns a Lines writing to w at most once per interval (<= 0:
// DefaultLineInterval).
func NewLines(w io.Writer, label string, interval time.Duration) *Lines {
	if interval <= 0 {
		interval = DefaultLineInterval
	}
	return &Lines{w: w, label: label, interval: interval, now: time.Now}
}

// Count is a secondary count a progress report shows beside its main amount, such
// as bins or files done of a total ("2/6 bins"; Total <= 0: unknown, "2 bins").
type Count struct {
	Unit        string
	Done, Total int64
}

func (c Count) String() string {
	if c.Total > 0 {
		return fmt.Sprintf("%d/%d %s", c.Done, c.Total, c.Unit)
	}
	return fmt.Sprintf("%d %s", c.Done, c.Unit)
}

// Update records that done of total units are finished in the named phase, with
// the given secondary counts (shown after the amount, in order); unit "bytes"
// prints sizes. The rate and ETA follow the main amount. The first call starts the
// clock for the rate.
func (l *Lines) Update(done, total int64, unit, phase string, counts ...Count) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.started {
		l.start, l.started = now, true
	}
	l.done, l.total, l.unit, l.phase = done, total, unit, phase
	l.counts = append(l.counts[:0], counts...)
	l.dirty = true
	if l.last.IsZero() && now.Sub(l.start) < l.interval || !l.last.IsZero() && now.Sub(l.last) < l.interval {
		return
	}
	l.print(now)
}

// Done prints the final state, unless the last line already showed it.
func (l *Lines) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirty {
		l.print(l.now())
	}
}

func (l *Lines) print(now time.Time) {
	l.last, l.dirty = now, false
	elapsed := now.Sub(l.start)
	s := l.label + ": "
	if l.total > 0 {
		s += fmt.Sprintf("%.0f%% (%s of %s)", 100*float64(l.done)/float64(l.total), l.amount(l.done), l.amount(l.total))
	} else {
		s += l.amount(l.done)
	}
	for _, c := range l.counts {
		s += ", " + c.String()
	}
	if elapsed > 0 && l.done > 0 {
		rate := float64(l.done) / elapsed.Seconds()
		s += ", " + l.amount(int64(rate)) + "/s"
		if l.total > l.done && 1000*l.done < 999*l.total { // no ETA once it would round to nothing
			eta := time.Duration(float64(l.total-l.done) / rate * float64(time.Second))
			s += ", ETA " + roundDuration(eta)
		}
	}
	s += ", elapsed " + roundDuration(elapsed)
	if l.phase != "" {
		s += " [" + l.phase + "]"
	}
	fmt.Fprintln(l.w, s)
}

func (l *Lines) amount(n int64) string {
	if l.unit == "bytes" {
		return FormatBytes(n)
	}
	return fmt.Sprintf("%d %s", n, l.unit)
}

// roundDuration prints d to the second (to the 100 ms under ten seconds).
func roundDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// FormatBytes prints a byte count in binary units: 512 B, 1.5 KiB, 12.0 MiB, 3.40 GiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	prec := 1
	if v < 10 && exp >= 2 {
		prec = 2
	}
	return fmt.Sprintf("%.*f %ciB", prec, v, "KMGTPE"[exp])
}
