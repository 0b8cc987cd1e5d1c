package optimize

import (
	"testing"
	"time"
)

func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"interval 7 days", "interval 1 week", "168h", "interval 9223372036854775807 weeks", "", "interval", "interval 1 millisecond"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseInterval(s)
		if err == nil && d < 0 {
			t.Fatalf("%q parsed to negative %v", s, d)
		}
		if err == nil && d > time.Duration(1<<62) {
			t.Fatalf("%q overflowed to %v", s, d)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"128MiB", "64m", "1048576", "1g", "0", "-5k", "9223372036854775807gib", " 3 kb "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n <= 0 {
			t.Fatalf("%q parsed to non-positive %d", s, n)
		}
	})
}

func FuzzParseCurve(f *testing.F) {
	for _, s := range []string{"zorder", "Z-Order", "hilbert", "linear", "none", "", "curve(9)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCurve(s)
		if err != nil {
			return
		}
		back, err := ParseCurve(c.String())
		if err != nil || back != c {
			t.Fatalf("%q → %v → %q → %v, %v", s, c, c.String(), back, err)
		}
	})
}
