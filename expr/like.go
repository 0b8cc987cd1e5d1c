package expr

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// likeShape classifies a LIKE pattern for fast matching.
type likeShape uint8

const (
	likeExact    likeShape = iota // no wildcard: equality
	likePrefix                    // 'p%'
	likeSuffix                    // '%s'
	likeContains                  // '%s%'
	likeGeneral                   // anything else
)

// likeSeg is one piece of a compiled pattern: a literal run, or a wildcard.
type likeSeg struct {
	lit  string // literal text (unescaped) when !any && !one
	many bool   // '%'
	one  bool   // '_'
}

// LikePattern is a compiled LIKE pattern.
type LikePattern struct {
	src    string
	segs   []likeSeg
	shape  likeShape
	lit    string // the literal of exact/prefix/suffix/contains shapes
	prefix string // literal text before the first wildcard
}

var errLikeEscape = errors.New("LIKE pattern ends with an escape character '\\'")

// compileLike compiles pattern: `%` any sequence, `_` one code point, `\` escapes.
func compileLike(pattern string) (*LikePattern, error) {
	lp := &LikePattern{src: pattern}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			lp.segs = append(lp.segs, likeSeg{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '\\':
			if i+1 >= len(pattern) {
				return nil, errLikeEscape
			}
			i++
			lit.WriteByte(pattern[i]) // multi-byte runes are copied byte by byte
		case '%':
			flush()
			if n := len(lp.segs); n == 0 || !lp.segs[n-1].many {
				lp.segs = append(lp.segs, likeSeg{many: true})
			}
		case '_':
			flush()
			lp.segs = append(lp.segs, likeSeg{one: true})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	if len(lp.segs) > 0 && lp.segs[0].lit != "" {
		lp.prefix = lp.segs[0].lit
	}
	s := lp.segs
	switch {
	case len(s) == 0:
		lp.shape, lp.lit = likeExact, ""
	case len(s) == 1 && !s[0].many && !s[0].one:
		lp.shape, lp.lit = likeExact, s[0].lit
	case len(s) == 1 && s[0].many:
		lp.shape, lp.lit = likePrefix, ""
	case len(s) == 2 && s[0].lit != "" && s[1].many:
		lp.shape, lp.lit = likePrefix, s[0].lit
	case len(s) == 2 && s[0].many && s[1].lit != "":
		lp.shape, lp.lit = likeSuffix, s[1].lit
	case len(s) == 3 && s[0].many && s[1].lit != "" && s[2].many:
		lp.shape, lp.lit = likeContains, s[1].lit
	default:
		lp.shape = likeGeneral
	}
	return lp, nil
}

// Pattern returns the pattern text as written.
func (lp *LikePattern) Pattern() string { return lp.src }

// Prefix returns the literal text every match starts with (the text before the
// first wildcard, unescaped); empty when the pattern starts with a wildcard.
func (lp *LikePattern) Prefix() string { return lp.prefix }

// IsPrefixOnly reports whether the pattern is exactly `prefix%`: a string matches
// if and only if it starts with Prefix().
func (lp *LikePattern) IsPrefixOnly() bool { return lp.shape == likePrefix }

// IsExact reports whether the pattern has no wildcard: a string matches if and only
// if it equals Prefix().
func (lp *LikePattern) IsExact() bool { return lp.shape == likeExact }

// Match reports whether s matches the pattern (case-sensitive, code-point `_`).
func (lp *LikePattern) Match(s string) bool {
	switch lp.shape {
	case likeExact:
		return s == lp.lit
	case likePrefix:
		return strings.HasPrefix(s, lp.lit)
	case likeSuffix:
		return strings.HasSuffix(s, lp.lit)
	case likeContains:
		return strings.Contains(s, lp.lit)
	}
	return matchSegs(lp.segs, s)
}

// matchSegs is a backtracking matcher that remembers only the last '%' (the classic
// linear-space glob algorithm): on a mismatch after a '%', retry with the '%'
// absorbing one more code point.
func matchSegs(segs []likeSeg, s string) bool {
	si, pi := 0, 0
	starPi, starSi := -1, 0
	for {
		if pi < len(segs) {
			seg := segs[pi]
			switch {
			case seg.many:
				starPi, starSi = pi, si
				pi++
				continue
			case seg.one:
				if si < len(s) {
					_, w := utf8.DecodeRuneInString(s[si:])
					si += w
					pi++
					continue
				}
			default:
				if strings.HasPrefix(s[si:], seg.lit) {
					si += len(seg.lit)
					pi++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		if starPi < 0 || starSi >= len(s) {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starSi:])
		starSi += w
		pi, si = starPi+1, starSi
	}
}
