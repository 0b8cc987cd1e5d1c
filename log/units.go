package log

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ErrInvalidValue reports a size or interval that does not parse (see ParseSize and
// ParseInterval).
var ErrInvalidValue = errors.New("log: invalid value")

// This file holds the one size parser and the one interval parser of the project:
// table properties (delta.targetFileSize, delta.*RetentionDuration) and the CLI flags
// (--target-size, --retain) all go through them, so a value means the same thing
// everywhere.

// sizeUnits are the byte-size suffixes ParseSize accepts, binary as in Spark's
// byteStringAs (1k = 1024).
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
	"p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
}

// ParseSize parses a positive byte size: a whole number of bytes, optionally followed
// (with or without a space, in any letter case) by a binary unit: b; k, kb, kib; m,
// mb, mib; g, gb, gib; t, tb, tib; p, pb, pib (1k = 1024, as Spark's byte strings).
// "1048576", "1mb", "128MiB" and "64 m" are accepted. Fractions, zero, negative
// sizes and sizes above math.MaxInt64 bytes are errors wrapping ErrInvalidValue.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	digits, unit := t[:i], strings.TrimSpace(t[i:])
	if digits == "" {
		return 0, fmt.Errorf("%w: size %q: want a whole number of bytes with an optional unit (b, k, m, g, t, p; kb/kib, ...)", ErrInvalidValue, s)
	}
	if strings.HasPrefix(unit, ".") {
		return 0, fmt.Errorf("%w: size %q: fractions are not supported; use a smaller unit", ErrInvalidValue, s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("%w: size %q: unknown unit %q (want b, k, m, g, t or p, optionally with b or ib)", ErrInvalidValue, s, unit)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w: size %q overflows 64 bits", ErrInvalidValue, s)
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: size %q: must be positive", ErrInvalidValue, s)
	}
	return n * mult, nil
}

// intervalUnit is one unit of a Spark calendar interval.
type intervalUnit struct {
	name   string
	micros int64 // length in microseconds; 0 for months and years
}

// Units in the order they are tried; "millisecond" and "microsecond" come before
// "minute" only for readability: their spellings do not share a prefix that
// decides between them.
var intervalUnits = []intervalUnit{
	{"year", 0}, {"month", 0},
	{"week", 7 * 24 * 3600 * 1e6}, {"day", 24 * 3600 * 1e6}, {"hour", 3600 * 1e6},
	{"minute", 60 * 1e6}, {"second", 1e6}, {"millisecond", 1e3}, {"microsecond", 1},
}

// ParseInterval parses a duration the way Delta parses its interval table properties
// (delta.logRetentionDuration, delta.deletedFileRetentionDuration, ...): Spark's
// calendar-interval syntax, case-insensitive, with an optional "interval" prefix and
// one or more "[+|-]number unit" terms: "interval 7 days", "7 days", "1 week",
// "interval 1 day 12 hours", "36 hours", "1.5 seconds". Units are week, day, hour,
// minute, second, millisecond and microsecond, each optionally plural; only seconds
// take a fraction (at most 9 digits, kept to the microsecond). As in Delta, months and
// years are refused (their length varies) and the total must not be negative.
//
// A Go duration ("168h", "1h30m") is accepted too, for the CLI's --retain flag.
//
// Errors wrap ErrInvalidValue; a total beyond time.Duration's range (about 292
// years) or a term that overflows is an error, never a wrapped-around value.
func ParseInterval(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }))
	if t == "" {
		return 0, fmt.Errorf("%w: interval %q is empty", ErrInvalidValue, s)
	}
	if !strings.HasPrefix(t, "interval") && !strings.ContainsAny(t, " \t") {
		if d, err := time.ParseDuration(t); err == nil {
			if d < 0 {
				return 0, fmt.Errorf("%w: interval %q is negative", ErrInvalidValue, s)
			}
			return d, nil
		}
	}
	micros, err := parseCalendarInterval(t)
	if err != nil {
		return 0, fmt.Errorf("%w: interval %q: %v", ErrInvalidValue, s, err)
	}
	if micros < 0 {
		return 0, fmt.Errorf("%w: interval %q is negative", ErrInvalidValue, s)
	}
	if micros > math.MaxInt64/1000 {
		return 0, fmt.Errorf("%w: interval %q is longer than about 292 years, the longest duration skiplake represents", ErrInvalidValue, s)
	}
	return time.Duration(micros) * time.Microsecond, nil
}

// parseCalendarInterval parses lower-cased Spark interval text into microseconds.
func parseCalendarInterval(t string) (int64, error) {
	fields := strings.Fields(t)
	if len(fields) > 0 && fields[0] == "interval" {
		fields = fields[1:]
		if len(fields) == 0 {
			return 0, errors.New("nothing after \"interval\"")
		}
	} else if len(fields) > 0 && strings.HasPrefix(fields[0], "interval") {
		return 0, fmt.Errorf("invalid prefix %q", fields[0])
	}
	var total int64
	for i := 0; i < len(fields); {
		// A sign may stand alone ("- 5 days") or lead the number.
		neg := false
		num := fields[i]
		if num == "-" || num == "+" {
			neg = num == "-"
			i++
			if i >= len(fields) {
				return 0, fmt.Errorf("expected a number after %q", num)
			}
			num = fields[i]
		} else if num[0] == '-' || num[0] == '+' {
			neg = num[0] == '-'
			num = num[1:]
		}
		i++
		if i >= len(fields) {
			return 0, fmt.Errorf("expected a unit after %q", num)
		}
		unit := fields[i]
		i++
		whole, frac, hasFrac := strings.Cut(num, ".")
		if !allDigits(whole) || (whole == "" && !hasFrac) || (hasFrac && (!allDigits(frac) || (whole == "" && frac == ""))) {
			return 0, fmt.Errorf("invalid number %q", num)
		}
		u, ok := lookupIntervalUnit(unit)
		if !ok {
			return 0, fmt.Errorf("invalid unit %q (want week, day, hour, minute, second, millisecond or microsecond)", unit)
		}
		if u.micros == 0 {
			return 0, fmt.Errorf("%ss are not accepted (their length varies); use days instead, e.g. 365 days", u.name)
		}
		if hasFrac && u.name != "second" {
			return 0, fmt.Errorf("%q cannot have a fractional part (only seconds can)", num+" "+unit)
		}
		if len(frac) > 9 {
			return 0, fmt.Errorf("%q has more than nanosecond precision", num)
		}
		var n int64
		if whole != "" {
			var err error
			if n, err = strconv.ParseInt(whole, 10, 64); err != nil {
				return 0, fmt.Errorf("%q overflows", num)
			}
		}
		if n > math.MaxInt64/u.micros {
			return 0, fmt.Errorf("%q overflows", num+" "+unit)
		}
		term := n * u.micros
		if frac != "" {
			f, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
			term += f / 1000 // nanoseconds to microseconds, truncated as Spark does
		}
		if neg {
			term = -term
		}
		if (term > 0 && total > math.MaxInt64-term) || (term < 0 && total < math.MinInt64-term) {
			return 0, errors.New("the total overflows")
		}
		total += term
	}
	return total, nil
}

func lookupIntervalUnit(s string) (intervalUnit, bool) {
	for _, u := range intervalUnits {
		if s == u.name || s == u.name+"s" {
			return u, true
		}
	}
	return intervalUnit{}, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatInterval renders d in the interval syntax Delta readers accept ("interval 7
// days", "interval 36 hours", "interval 1500 milliseconds"), in the largest unit
// that divides d exactly; sub-microsecond remainders are dropped. ParseInterval
// reads it back.
func FormatInterval(d time.Duration) string {
	us := d.Microseconds()
	for _, u := range []intervalUnit{{"day", 24 * 3600 * 1e6}, {"hour", 3600 * 1e6}, {"minute", 60 * 1e6}, {"second", 1e6}, {"millisecond", 1e3}} {
		if us != 0 && us%u.micros == 0 {
			return fmt.Sprintf("interval %d %ss", us/u.micros, u.name)
		}
	}
	return fmt.Sprintf("interval %d microseconds", us)
}
