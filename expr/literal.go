package expr

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

const microsPerDay = 86400 * 1000000

// decimalString renders an unscaled decimal at scale without exponent notation.
func decimalString(num decimal128.Num, scale int32) string {
	digits := num.BigInt().String()
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if scale > 0 {
		for int32(len(digits)) <= scale {
			digits = "0" + digits
		}
		cut := int32(len(digits)) - scale
		digits = digits[:cut] + "." + digits[cut:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// formatMicros renders micros since the epoch as `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC
// wall clock), with a sign and more year digits outside years 0..9999.
func formatMicros(us int64) string {
	t := time.UnixMicro(us).UTC()
	y := t.Year()
	var ys string
	switch {
	case y < 0:
		ys = fmt.Sprintf("-%04d", -y)
	case y > 9999:
		ys = fmt.Sprintf("+%d", y)
	default:
		ys = fmt.Sprintf("%04d", y)
	}
	s := ys + t.Format("-01-02 15:04:05")
	if frac := t.Nanosecond() / 1000; frac != 0 {
		f := fmt.Sprintf("%06d", frac)
		s += "." + strings.TrimRight(f, "0")
	}
	return s
}

// formatDays renders days since the epoch as YYYY-MM-DD.
func formatDays(d int64) string {
	s := formatMicros(d * microsPerDay)
	return s[:strings.IndexByte(s, ' ')]
}

// dateParts scans `[+-]YYYY-MM-DD` from s, returning the rest.
func scanDate(s string) (y, m, d int, rest string, ok bool) {
	sign := 1
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		if s[i] == '-' {
			sign = -1
		}
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j-i < 4 || j-i > 6 {
		return 0, 0, 0, "", false
	}
	y = atoi(s[i:j]) * sign
	s = s[j:]
	if len(s) < 6 || s[0] != '-' || s[3] != '-' || !isDigits(s[1:3]) || !isDigits(s[4:6]) {
		return 0, 0, 0, "", false
	}
	m, d = atoi(s[1:3]), atoi(s[4:6])
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, "", false
	}
	return y, m, d, s[6:], true
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// ParseDate parses `YYYY-MM-DD` into days since the epoch.
func ParseDate(s string) (int64, error) {
	y, m, d, rest, ok := scanDate(strings.TrimSpace(s))
	if !ok || rest != "" {
		return 0, fmt.Errorf("%w: invalid date %q (want YYYY-MM-DD)", ErrType, s)
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400, nil
}

// ParseTimestamp parses `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][Z|(+|-)HH[:MM]]` into
// micros since the epoch. hasZone reports whether a zone was given; without one the
// wall clock is taken as UTC. Fractions beyond microseconds must be zero.
func ParseTimestamp(s string) (micros int64, hasZone bool, err error) {
	bad := func() (int64, bool, error) {
		return 0, false, fmt.Errorf("%w: invalid timestamp %q (want YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM|Z])", ErrType, s)
	}
	y, mo, d, rest, ok := scanDate(strings.TrimSpace(s))
	if !ok {
		return bad()
	}
	var hh, mm, ss, frac int
	if rest != "" && (rest[0] == ' ' || rest[0] == 'T') {
		rest = rest[1:]
		if len(rest) < 5 || rest[2] != ':' || !isDigits(rest[:2]) || !isDigits(rest[3:5]) {
			return bad()
		}
		hh, mm = atoi(rest[:2]), atoi(rest[3:5])
		rest = rest[5:]
		if len(rest) >= 3 && rest[0] == ':' {
			if !isDigits(rest[1:3]) {
				return bad()
			}
			ss = atoi(rest[1:3])
			rest = rest[3:]
			if rest != "" && rest[0] == '.' {
				j := 1
				for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
					j++
				}
				f := rest[1:j]
				if f == "" || len(f) > 9 || (len(f) > 6 && strings.Trim(f[6:], "0") != "") {
					return bad()
				}
				if len(f) > 6 {
					f = f[:6]
				}
				frac = atoi(f + strings.Repeat("0", 6-len(f)))
				rest = rest[j:]
			}
		}
		if hh > 23 || mm > 59 || ss > 59 {
			return bad()
		}
	}
	offset := 0
	if rest != "" {
		hasZone = true
		switch {
		case rest == "Z" || rest == "z":
		case rest[0] == '+' || rest[0] == '-':
			z := rest[1:]
			var oh, om int
			switch {
			case len(z) == 2 && isDigits(z):
				oh = atoi(z)
			case len(z) == 5 && z[2] == ':' && isDigits(z[:2]) && isDigits(z[3:]):
				oh, om = atoi(z[:2]), atoi(z[3:])
			case len(z) == 4 && isDigits(z):
				oh, om = atoi(z[:2]), atoi(z[2:])
			default:
				return bad()
			}
			if oh > 18 || om > 59 {
				return bad()
			}
			offset = oh*3600 + om*60
			if rest[0] == '-' {
				offset = -offset
			}
		default:
			return bad()
		}
	}
	secs := time.Date(y, time.Month(mo), d, hh, mm, ss, 0, time.UTC).Unix() - int64(offset)
	const maxSecs = 9223372036854 // micros range of int64
	if secs > maxSecs || secs < -maxSecs {
		return bad()
	}
	return secs*1000000 + int64(frac), hasZone, nil
}

// parseNumber parses an SQL numeric literal: integers (KindInt64, or KindDecimal
// with scale 0 beyond int64), decimals `1.50` (KindDecimal), and numbers with an
// exponent (KindFloat64).
func parseNumber(s string) (value.Value, bool) {
	if s == "" {
		return value.Value{}, false
	}
	if strings.ContainsAny(s, "eE") {
		f, _, err := big.ParseFloat(s, 10, 53, big.ToNearestEven)
		if err != nil {
			return value.Value{}, false
		}
		x, _ := f.Float64()
		return value.Float64(x), true
	}
	neg := false
	body := s
	if body[0] == '-' || body[0] == '+' {
		neg = body[0] == '-'
		body = body[1:]
	}
	intPart, fracPart, _ := strings.Cut(body, ".")
	if (intPart == "" && fracPart == "") || (intPart != "" && !isDigits(intPart)) || (fracPart != "" && !isDigits(fracPart)) {
		return value.Value{}, false
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	unscaled, ok := new(big.Int).SetString("0"+digits, 10)
	if !ok {
		return value.Value{}, false
	}
	if neg {
		unscaled.Neg(unscaled)
	}
	scale := int32(len(fracPart))
	if scale == 0 && unscaled.IsInt64() {
		return value.Int64(unscaled.Int64()), true
	}
	prec := int32(len(digits))
	if prec < scale {
		prec = scale
	}
	if prec == 0 {
		prec = 1
	}
	if prec > 38 {
		f, _ := new(big.Float).SetPrec(53).SetInt(unscaled).Float64()
		if scale > 0 {
			bf, _, err := big.ParseFloat(s, 10, 53, big.ToNearestEven)
			if err != nil {
				return value.Value{}, false
			}
			f, _ = bf.Float64()
		}
		return value.Float64(f), true
	}
	return value.Decimal(decimal128.FromBigInt(unscaled), prec, scale), true
}
