package stats

import "github.com/skiplake/skiplake/value"

// Hand-written ISO-8601 readers: faster than time.Parse, and they accept what the
// Delta writers emit (any offset, seconds offsets from Java's historic zones, a
// space or T, fractions of any length, expanded years).

// maxAbsYear keeps every computed microsecond count inside int64.
const maxAbsYear = 200_000

func digitsAt(s string, i, n int) (int64, bool) {
	if i+n > len(s) {
		return 0, false
	}
	var v int64
	for k := i; k < i+n; k++ {
		c := s[k]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseDatePart reads [+-]YYYY[YY]-MM-DD at the start of s and returns days since
// the epoch and the index after it.
func parseDatePart(s string) (days int64, end int, ok bool) {
	i := 0
	neg, signed := false, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg, signed = s[i] == '-', true
		i++
	}
	ys := i
	var y int64
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && i-ys < 7 {
		y = y*10 + int64(s[i]-'0')
		i++
	}
	nd := i - ys
	if nd < 4 || (nd > 4 && !signed) || y > maxAbsYear {
		return 0, 0, false
	}
	if neg {
		y = -y
	}
	if i >= len(s) || s[i] != '-' {
		return 0, 0, false
	}
	m, ok1 := digitsAt(s, i+1, 2)
	if !ok1 || i+3 >= len(s) || s[i+3] != '-' {
		return 0, 0, false
	}
	d, ok2 := digitsAt(s, i+4, 2)
	if !ok2 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, 0, false
	}
	return value.DaysFromCivil(y, m, d), i + 6, true
}

func daysInMonth(y, m int64) int64 {
	switch m {
	case 4, 6, 9, 11:
		return 30
	case 2:
		if (y%4 == 0 && y%100 != 0) || y%400 == 0 {
			return 29
		}
		return 28
	}
	return 31
}

// parseDate reads a date bound (exactly a date).
func parseDate(s string) (int64, bool) {
	d, end, ok := parseDatePart(s)
	if !ok || end != len(s) {
		return 0, false
	}
	return d, true
}

// parseTimestamp reads a timestamp bound into microseconds since the epoch (UTC for
// a zoned timestamp, wall clock for ntz). A zoned timestamp needs an offset; an ntz
// one accepts none, or offset zero, and a bare date. Fraction digits beyond
// microseconds are dropped for a min and rounded up for a max.
func parseTimestamp(s string, ntz, isMax bool) (int64, bool) {
	days, i, ok := parseDatePart(s)
	if !ok {
		return 0, false
	}
	us := days * 86_400_000_000
	if i == len(s) {
		return us, ntz
	}
	if s[i] != 'T' && s[i] != 't' && s[i] != ' ' {
		return 0, false
	}
	i++
	h, ok1 := digitsAt(s, i, 2)
	if !ok1 || i+2 >= len(s) || s[i+2] != ':' {
		return 0, false
	}
	mi, ok2 := digitsAt(s, i+3, 2)
	if !ok2 || h > 23 || mi > 59 {
		return 0, false
	}
	i += 5
	var sec, frac int64
	if i < len(s) && s[i] == ':' {
		v, ok := digitsAt(s, i+1, 2)
		if !ok || v > 59 {
			return 0, false
		}
		sec = v
		i += 3
		if i < len(s) && s[i] == '.' {
			i++
			fs := i
			roundUp := false
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if i-fs < 6 {
					frac = frac*10 + int64(s[i]-'0')
				} else if s[i] != '0' {
					roundUp = true
				}
				i++
			}
			nd := i - fs
			if nd == 0 {
				return 0, false
			}
			for k := nd; k < 6; k++ {
				frac *= 10
			}
			if roundUp && isMax {
				frac++
			}
		}
	}
	us += (h*3600+mi*60+sec)*1_000_000 + frac
	// Zone.
	if i == len(s) {
		return us, ntz
	}
	var off int64
	switch s[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		sign := int64(1)
		if s[i] == '-' {
			sign = -1
		}
		i++
		oh, ok := digitsAt(s, i, 2)
		if !ok || oh > 18 {
			return 0, false
		}
		i += 2
		var om, os int64
		if i < len(s) && s[i] == ':' {
			if om, ok = digitsAt(s, i+1, 2); !ok || om > 59 {
				return 0, false
			}
			i += 3
			if i < len(s) && s[i] == ':' {
				if os, ok = digitsAt(s, i+1, 2); !ok || os > 59 {
					return 0, false
				}
				i += 3
			}
		} else if i < len(s) {
			if om, ok = digitsAt(s, i, 2); !ok || om > 59 {
				return 0, false
			}
			i += 2
		}
		off = sign * (oh*3600 + om*60 + os)
	default:
		return 0, false
	}
	if i != len(s) {
		return 0, false
	}
	if ntz && off != 0 {
		return 0, false
	}
	return us - off*1_000_000, true
}
