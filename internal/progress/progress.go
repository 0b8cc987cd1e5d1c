package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar renders "label [=====>    ] 42% 3/7 units" on one terminal line, followed by
// any secondary counts (", 2/6 bins, 31/90 files").
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	enabled bool
	last    time.Time
	drawn   bool
}

// IsTerminal reports whether f is a character device (a terminal), without cgo.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// New returns a bar writing to stderr when stderr is a terminal; otherwise a silent bar.
func New(label string) *Bar {
	return &Bar{w: os.Stderr, label: label, enabled: IsTerminal(os.Stderr) && os.Getenv("CI") == ""}
}

// NewWriter returns a bar that always draws to w (tests and forced output).
func NewWriter(w io.Writer, label string) *Bar { return &Bar{w: w, label: label, enabled: true} }

// Update redraws the bar for done of total units (total <= 0 draws a counter only),
// with the given secondary counts after it. Redraws are throttled to 10 per second,
// except the final one.
func (b *Bar) Update(done, total int64, unit string, counts ...Count) {
	if b == nil || !b.enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(b.last) < 100*time.Millisecond {
		return
	}
	b.last = now
	const width = 30
	if total > 0 {
		frac := float64(done) / float64(total)
		if frac > 1 {
			frac = 1
		}
		n := int(frac * width)
		bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
		fmt.Fprintf(b.w, "\r%s [%s] %3.0f%% %d/%d %s", b.label, bar, frac*100, done, total, unit)
	} else {
		fmt.Fprintf(b.w, "\r%s %d %s", b.label, done, unit)
	}
	for _, c := range counts {
		fmt.Fprintf(b.w, ", %s", c)
	}
	b.drawn = true
}

// Done ends the bar's line, if anything was drawn.
func (b *Bar) Done() {
	if b == nil || !b.enabled {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}
