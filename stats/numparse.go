package stats

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// num is a parsed decimal number: value = (-1 if neg) × digits × 10^exp, where
// digits has no leading zeros ("" for zero).
type num struct {
	neg    bool
	digits string
	exp    int
}

// maxExp bounds exponents so that arithmetic on them cannot overflow; any bound
// with a larger exponent is far outside every Delta type.
const maxExp = 10_000

// parseNum parses text in JSON number syntax. Leading zeros of the integer part
// are rejected as JSON does (except a single 0).
func parseNum(s string) (num, bool) {
	var n num
	i := 0
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return n, false
	}
	frac := ""
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
		if frac == "" {
			return n, false
		}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if exp <= maxExp*10 {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if i == es {
			return n, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return n, false
	}
	// Combine integer and fraction digits, strip leading zeros and trailing zeros
	// (moving them into the exponent).
	digits := intPart + frac
	exp -= len(frac)
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	n.digits = trimmed
	if n.digits == "" {
		n.exp, n.neg = 0, false
		return n, true
	}
	if exp > maxExp || exp < -maxExp {
		return n, false
	}
	n.exp = exp
	return n, true
}

// parseIntText parses an integer bound: integral JSON numbers, including 1.0 and
// 1e3 forms, that fit int64.
func parseIntText(s string) (int64, bool) {
	// Fast path: plain decimal integer.
	if len(s) > 0 && len(s) < 19 {
		neg := s[0] == '-'
		t := s
		if neg {
			t = s[1:]
		}
		if len(t) > 0 && (t[0] != '0' || len(t) == 1) {
			var v int64
			ok := true
			for k := 0; k < len(t); k++ {
				c := t[k]
				if c < '0' || c > '9' {
					ok = false
					break
				}
				v = v*10 + int64(c-'0')
			}
			if ok {
				if neg {
					v = -v
				}
				return v, true
			}
		}
	}
	n, ok := parseNum(s)
	if !ok || n.exp < 0 {
		return 0, false // not an integer (trailing zeros were folded into exp)
	}
	if n.digits == "" {
		return 0, true
	}
	if len(n.digits)+n.exp > 19 {
		return 0, false
	}
	var u uint64
	for k := 0; k < len(n.digits); k++ {
		u = u*10 + uint64(n.digits[k]-'0')
	}
	for k := 0; k < n.exp; k++ {
		if u > math.MaxUint64/10 {
			return 0, false
		}
		u *= 10
	}
	if n.neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true //nolint:gosec // range checked above
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// parseFloatText parses a float bound: JSON number text, or (in a JSON string) the
// same text or NaN / Infinity / -Infinity. bits32 rounds to float32 first.
func parseFloatText(s string, quoted, bits32 bool) (float64, bool) {
	if quoted {
		switch strings.ToLower(s) {
		case "nan":
			return math.NaN(), true
		case "infinity", "+infinity", "inf", "+inf":
			return math.Inf(1), true
		case "-infinity", "-inf":
			return math.Inf(-1), true
		}
	}
	// Quoted text has not been through the scanner's number grammar: check it, so
	// that strconv's extras (hex floats, underscores, "inf") are not accepted.
	if quoted {
		if _, ok := parseNum(s); !ok {
			return 0, false
		}
	}
	bits := 64
	if bits32 {
		bits = 32
	}
	// Out-of-range text rounds to ±Inf or 0 (with an error we ignore): still the
	// nearest representable bound, as a reader of the data would see it.
	x, err := strconv.ParseFloat(s, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return x, true
}

// parseDecimalText parses a decimal bound exactly at the column's scale. Text that
// would need rounding, or more than 38 digits, is rejected.
func parseDecimalText(s string, prec, scale int32) (decimal128.Num, bool) {
	_ = prec
	n, ok := parseNum(s)
	if !ok {
		return decimal128.Num{}, false
	}
	if n.digits == "" {
		return decimal128.Num{}, true
	}
	shift := n.exp + int(scale) // unscaled = digits × 10^shift
	if shift < 0 {
		return decimal128.Num{}, false // trailing zeros are already folded: needs rounding
	}
	total := len(n.digits) + shift
	if total > 38 {
		return decimal128.Num{}, false
	}
	if total <= 18 {
		var u int64
		for k := 0; k < len(n.digits); k++ {
			u = u*10 + int64(n.digits[k]-'0')
		}
		for k := 0; k < shift; k++ {
			u *= 10
		}
		if n.neg {
			u = -u
		}
		return decimal128.FromI64(u), true
	}
	b, ok := new(big.Int).SetString(n.digits, 10)
	if !ok {
		return decimal128.Num{}, false
	}
	if shift > 0 {
		b.Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	}
	if n.neg {
		b.Neg(b)
	}
	return decimal128.FromBigInt(b), true
}
