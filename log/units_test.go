package log

import (
	"errors"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"1048576", 1 << 20},
		{"1mb", 1 << 20},
		{"1MB", 1 << 20},
		{"128MiB", 128 << 20},
		{"64m", 64 << 20},
		{" 3 kb ", 3 << 10},
		{"2g", 2 << 30},
		{"1t", 1 << 40},
		{"1pb", 1 << 50},
		{"10b", 10},
		{"8191p", 8191 << 50},
	}
	for _, c := range cases {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "mb", "0", "0k", "-5k", "1.5mb", "12 parsecs", "9223372036854775808", "8192p", "9223372036854775807k", "1 m b"} {
		if n, err := ParseSize(bad); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("ParseSize(%q) = %d, %v; want ErrInvalidValue", bad, n, err)
		}
	}
}

func TestParseInterval(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		in   string
		want time.Duration
	}{
		// Spark's calendar-interval syntax, as Delta accepts it for its properties.
		{"interval 7 days", 7 * day},
		{"7 days", 7 * day},
		{"interval 1 week", 7 * day},
		{"interval 1 weeks", 7 * day},
		{"INTERVAL 168 HOURS", 168 * time.Hour},
		{"interval 30 seconds", 30 * time.Second},
		{"interval 1 day 12 hours", 36 * time.Hour},
		{"interval 1 day -1 hours", 23 * time.Hour},
		{"interval 1 day - 1 hours", 23 * time.Hour},
		{"interval +2 minutes", 2 * time.Minute},
		{"1.5 seconds", 1500 * time.Millisecond},
		{".5 second", 500 * time.Millisecond},
		{"interval 250 milliseconds", 250 * time.Millisecond},
		{"interval 7 microseconds", 7 * time.Microsecond},
		{"  interval\t2 weeks  ", 14 * day},
		{"interval 0 days", 0},
		// Go durations, for the CLI's --retain.
		{"168h", 168 * time.Hour},
		{"1h30m", 90 * time.Minute},
		{"0", 0},
	}
	for _, c := range cases {
		got, err := ParseInterval(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"", "interval", "interval days", "interval 3 fortnights", "interval -1 days", "-5h",
		"interval 1 month", "1 year", "7days", "interval 1.5 days", "interval 1.0000000001 seconds",
		"intervals 7 days", "interval 7", "7", "interval 9223372036854775807 weeks",
		"interval 106752 days", // beyond time.Duration (~292 years)
		"interval 9223372036854775807 microseconds 9223372036854775807 microseconds",
		"interval 1 nanosecond", // Spark has no nanosecond unit
	} {
		if d, err := ParseInterval(bad); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("ParseInterval(%q) = %v, %v; want ErrInvalidValue", bad, d, err)
		}
	}
}

func TestFormatIntervalRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 1500 * time.Millisecond, time.Minute, 36 * time.Hour, 7 * 24 * time.Hour, 90 * time.Second} {
		s := FormatInterval(d)
		got, err := ParseInterval(s)
		if err != nil || got != d {
			t.Errorf("FormatInterval(%v) = %q, parsed back as %v, %v", d, s, got, err)
		}
	}
	if got := FormatInterval(7 * 24 * time.Hour); got != "interval 7 days" {
		t.Errorf("FormatInterval(7d) = %q", got)
	}
}

func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"interval 7 days", "interval 1 week", "168h", "interval 9223372036854775807 weeks", "", "interval", "interval 1 millisecond", "1 day -25 hours", "- 1 seconds", ".9 second"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseInterval(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("%q: unclassified error %v", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("%q parsed to negative %v", s, d)
		}
		// Whatever parses renders back to interval text that parses to the same
		// duration (up to the microsecond).
		back, err := ParseInterval(FormatInterval(d))
		if err != nil || back != d.Truncate(time.Microsecond) {
			t.Fatalf("%q → %v → %q → %v, %v", s, d, FormatInterval(d), back, err)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"128MiB", "64m", "1048576", "1g", "0", "-5k", "9223372036854775807gib", " 3 kb ", "1.5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidValue) {
				t.Fatalf("%q: unclassified error %v", s, err)
			}
			return
		}
		if n <= 0 {
			t.Fatalf("%q parsed to %d", s, n)
		}
	})
}
