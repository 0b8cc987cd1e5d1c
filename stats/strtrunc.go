package stats

import (
	"strings"
	"unicode/utf8"
)

// Tie-breaker characters appended to a cut string maximum (Spark's rule).
const (
	tieASCII = "\u007f"     // used when the next character is below U+007F
	tieMax   = "\U0010FFFF" // the largest code point, used otherwise
)

// unitLen returns the byte length of the code point starting at s[0]; an invalid
// UTF-8 byte counts as a unit of its own (so cutting never depends on validity).
func unitLen(s string) int {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		return 1
	}
	return size
}

// prefixUnits returns the byte offset just after the first n code points of s and
// whether s has more than n code points.
func prefixUnits(s string, n int) (end int, more bool) {
	for k := 0; k < n; k++ {
		if end >= len(s) {
			return end, false
		}
		end += unitLen(s[end:])
	}
	return end, end < len(s)
}

// truncateMin returns the first prefix code points of s: a lower bound of s that
// sorts below or equal to it (prefix > 0).
func truncateMin(s string, prefix int) string {
	end, _ := prefixUnits(s, prefix)
	return s[:end]
}

// truncateMax returns an upper bound of s of at most 2×prefix code points plus one
// tie-breaker, following Spark: s itself when it has at most prefix code points;
// otherwise the shortest cut at or after prefix code points whose next character
// sorts below a tie-breaker (U+007F if below it, else U+10FFFF), followed by that
// tie-breaker. Characters equal to U+10FFFF cannot be beaten and extend the cut. If
// no cut within 2×prefix code points works, ok is false: there is no short bound.
//
// Comparison is byte-wise on UTF-8, which is code-point order for valid text; for
// invalid bytes the byte-wise test keeps the result an upper bound as well.
func truncateMax(s string, prefix int) (bound string, ok bool) {
	b, more := prefixUnits(s, prefix)
	if !more {
		return s, true
	}
	for cur := prefix; cur <= 2*prefix; cur++ {
		if b >= len(s) {
			return s, true
		}
		rest := s[b:]
		if strings.Compare(rest, tieASCII) < 0 {
			return s[:b] + tieASCII, true
		}
		if strings.Compare(rest, tieMax) < 0 {
			return s[:b] + tieMax, true
		}
		b += unitLen(rest)
	}
	return "", false
}

// maxKeepBytes is how many leading bytes of a running string maximum the Collector
// keeps: enough for truncateMax to reach 2×prefix+1 code points (4 bytes each) and
// compare 4 more bytes. Byte-prefix cutting is monotone, so the maximum of the cut
// values is the cut of the maximum and truncateMax gives the same answer on both.
func maxKeepBytes(prefix int) int { return 4*(2*prefix+1) + 4 }

// minKeepBytes is the analogue for the running minimum (prefix code points).
func minKeepBytes(prefix int) int { return 4 * prefix }

func cutBytes(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
