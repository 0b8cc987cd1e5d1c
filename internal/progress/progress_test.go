package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBarDrawsFinalStateAndEndsLine(t *testing.T) {
	var buf bytes.Buffer
	b := NewWriter(&buf, "optimize")
	b.Update(1, 4, "bins")
	b.Update(2, 4, "bins") // throttled: within 100 ms of the previous draw
	b.Update(4, 4, "bins") // the final state is always drawn
	b.Done()
	out := buf.String()
	if !strings.Contains(out, "optimize [") || !strings.Contains(out, "100% 4/4 bins") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("unexpected bar output %q", out)
	}
	if strings.Contains(out, "2/4") {
		t.Fatalf("update within the throttle window was drawn: %q", out)
	}
}

func TestNilAndSilentBarsDoNothing(t *testing.T) {
	var b *Bar
	b.Update(1, 2, "x")
	b.Done()
	silent := &Bar{}
	silent.Update(1, 2, "x")
	silent.Done()
}

// fakeClock is a settable clock for Lines.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLinesPrintAtMostOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLines(&buf, "optimize", 10*time.Second)
	l.now = clk.now
	const gib = 1 << 30
	l.Update(0, 4*gib, "bytes", "read") // starts the clock
	clk.t = clk.t.Add(5 * time.Second)
	l.Update(gib/2, 4*gib, "bytes", "read") // inside the first interval: quiet
	if buf.Len() != 0 {
		t.Fatalf("printed inside the interval: %q", buf.String())
	}
	clk.t = clk.t.Add(5 * time.Second)
	l.Update(gib, 4*gib, "bytes", "write") // 10 s: 1 GiB done, 102.4 MiB/s, 30 s left
	clk.t = clk.t.Add(time.Second)
	l.Update(gib+gib/10, 4*gib, "bytes", "write") // 1 s later: quiet
	clk.t = clk.t.Add(9 * time.Second)
	l.Update(2*gib, 4*gib, "bytes", "write") // 20 s: 2 GiB
	clk.t = clk.t.Add(9 * time.Second)
	l.Update(3*gib, 4*gib, "bytes", "write") // 29 s: inside the interval
	clk.t = clk.t.Add(11 * time.Second)
	l.Update(4*gib, 4*gib, "bytes", "write") // 40 s: done, printed (interval passed)
	l.Done()                                 // the last line showed the final state: nothing more
	l2 := NewLines(&buf, "optimize", 10*time.Second)
	l2.now = clk.now
	l2.Update(5, 0, "files", "")
	clk.t = clk.t.Add(time.Second)
	l2.Done() // the final state was never printed: Done prints it
	want := []string{
		"optimize: 25% (1.00 GiB of 4.00 GiB), 102.4 MiB/s, ETA 30s, elapsed 10s [write]",
		"optimize: 50% (2.00 GiB of 4.00 GiB), 102.4 MiB/s, ETA 20s, elapsed 20s [write]",
		"optimize: 100% (4.00 GiB of 4.00 GiB), 102.4 MiB/s, elapsed 40s [write]",
		"optimize: 5 files, 5 files/s, elapsed 1s",
	}
	if got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNilLinesDoNothing(t *testing.T) {
	var l *Lines
	l.Update(1, 2, "x", "p")
	l.Done()
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 12 << 20: "12.0 MiB", 3 << 30: "3.00 GiB", 1 << 40: "1.00 TiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLinesShowSecondaryCounts(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLines(&buf, "optimize", 10*time.Second)
	l.now = clk.now
	const mib = 1 << 20
	l.Update(0, 40*mib, "bytes", "read", Count{"bins", 0, 4}, Count{"files", 0, 40})
	clk.t = clk.t.Add(10 * time.Second)
	l.Update(10*mib, 40*mib, "bytes", "write", Count{"bins", 1, 4}, Count{"files", 10, 40})
	clk.t = clk.t.Add(30 * time.Second)
	l.Update(40*mib, 40*mib, "bytes", "commit", Count{"bins", 4, 4}, Count{"files", 40, 40})
	l2 := NewLines(&buf, "scan", 10*time.Second)
	l2.now = clk.now
	l2.Update(3, 0, "rows", "", Count{"files", 2, 0})
	l2.Update(4, 0, "rows", "") // no counts now: none shown
	clk.t = clk.t.Add(time.Second)
	l2.Done()
	want := []string{
		"optimize: 25% (10.0 MiB of 40.0 MiB), 1/4 bins, 10/40 files, 1.0 MiB/s, ETA 30s, elapsed 10s [write]",
		"optimize: 100% (40.0 MiB of 40.0 MiB), 4/4 bins, 40/40 files, 1.0 MiB/s, elapsed 40s [commit]",
		"scan: 4 rows, 4 rows/s, elapsed 1s",
	}
	if got := strings.TrimSuffix(buf.String(), "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestBarShowsSecondaryCounts(t *testing.T) {
	var buf bytes.Buffer
	b := NewWriter(&buf, "optimize")
	b.Update(4, 4, "write bytes", Count{"bins", 2, 2}, Count{"files", 7, 0})
	b.Done()
	if got, want := buf.String(), "\roptimize [==============================] 100% 4/4 write bytes, 2/2 bins, 7 files\n"; got != want {
		t.Fatalf("bar %q, want %q", got, want)
	}
}
