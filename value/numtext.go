package value

import (
	"unicode/utf16"
	"unicode/utf8"
)

// ScanDecimalLiteral reports whether s is a plain decimal number literal,
// [+-](digits[.digits] | .digits)[(e|E)[+-]digits], with no surrounding space, no hex
// digits, no underscores and no special words (NaN, Infinity). expDigits is the number
// of digits of the exponent (0 without one), so callers that must bound the exponent
// (a big.Rat parse of "1e999999999" allocates without bound) can refuse long ones.
// It is the one scanner behind text → float inference in package input and CAST(string
// AS DECIMAL) in package expr, so both accept the same spellings.
func ScanDecimalLiteral(s string) (ok bool, expDigits int) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false, 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, expDigits = i+1, expDigits+1
		}
		if expDigits == 0 {
			return false, 0
		}
	}
	if i != len(s) {
		return false, 0
	}
	return true, expDigits
}

// ScanJSONNumber scans the JSON number (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
// that starts at s[i]. It returns the index just after it and an empty problem, or,
// when s[i:] does not start with a number, the index where the grammar broke and what
// broke it ("invalid number", "invalid number: no digits after '.'", "invalid number:
// no digits in exponent"). It does not look past the number: the caller decides what
// may follow. It is the one number grammar of the stats JSON scanner (package stats)
// and of the stats_parsed renderer (package log), so what one writes the other reads.
func ScanJSONNumber(s string, i int) (end int, problem string) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return i, "invalid number"
	}
	if i < len(s) && s[i] == '.' {
		d := i + 1
		if i = skipDigits(s, d); i == d {
			return i, "invalid number: no digits after '.'"
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(s, d); i == d {
			return i, "invalid number: no digits in exponent"
		}
	}
	return i, ""
}

// skipDigits returns the index of the first byte at or after s[i] that is not an
// ASCII digit.
func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// DecodeJSONUnicodeEscape decodes the hex digits of a JSON "\uXXXX" escape whose
// first digit is at s[i] (just after the "\u"). A UTF-16 surrogate pair written as
// two escapes ("\uD83D\uDE00") is one character; a lone or mismatched surrogate half
// decodes to U+FFFD, as encoding/json does. next is the index just after what was
// consumed; ok is false when s[i:] does not start with four hex digits. It is the one
// decoder behind the stats JSON scanner (package stats) and the JSONL input reader
// (package input), so both read the same text the same way.
func DecodeJSONUnicodeEscape[T string | []byte](s T, i int) (r rune, next int, ok bool) {
	r, ok = hex4(s, i)
	if !ok {
		return 0, i, false
	}
	next = i + 4
	if !utf16.IsSurrogate(r) {
		return r, next, true
	}
	if next+6 <= len(s) && s[next] == '\\' && s[next+1] == 'u' {
		if lo, ok := hex4(s, next+2); ok {
			if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
				return d, next + 6, true
			}
		}
	}
	return utf8.RuneError, next, true
}

// hex4 reads four hex digits at s[i:].
func hex4[T string | []byte](s T, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
