package stats

import (
	"strings"
	"unicode/utf8"

	"github.com/skiplake/skiplake/value"
)

// scanner is a small strict JSON reader over a string, built for stats lines: it
// hands out raw number text (exact decimals and int64s, no float detour), returns
// strings without copying when they hold no escapes, and skips what the caller does
// not need. It accepts exactly RFC 8259 JSON (checked against encoding/json by
// FuzzParse), except that invalid UTF-8 inside strings is passed through unchanged
// rather than replaced, so byte-wise bounds are not altered.
type scanner struct {
	s     string
	i     int
	err   *SyntaxError
	depth int
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

type tokKind uint8

const (
	tokInvalid tokKind = iota
	tokString
	tokNumber
	tokTrue
	tokFalse
	tokNull
	tokObject // '{' consumed; read members with nextKey
	tokArray  // '[' consumed
)

func (sc *scanner) fail(msg string) {
	if sc.err == nil {
		sc.err = &SyntaxError{Offset: sc.i, Msg: msg}
	}
	sc.i = len(sc.s)
}

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value reads the start of the next value. For strings and numbers text is the
// (unescaped) string or the number's text; for objects and arrays the opening
// bracket is consumed and the caller must read or skip the rest.
func (sc *scanner) value() (tokKind, string) {
	sc.ws()
	if sc.i >= len(sc.s) {
		sc.fail("unexpected end of input, expected a value")
		return tokInvalid, ""
	}
	switch c := sc.s[sc.i]; {
	case c == '"':
		s, ok := sc.str()
		if !ok {
			return tokInvalid, ""
		}
		return tokString, s
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number()
	case c == '{':
		sc.i++
		return tokObject, ""
	case c == '[':
		sc.i++
		return tokArray, ""
	case c == 't':
		return sc.lit("true", tokTrue)
	case c == 'f':
		return sc.lit("false", tokFalse)
	case c == 'n':
		return sc.lit("null", tokNull)
	}
	sc.fail("invalid character, expected a value")
	return tokInvalid, ""
}

func (sc *scanner) lit(word string, k tokKind) (tokKind, string) {
	if strings.HasPrefix(sc.s[sc.i:], word) {
		sc.i += len(word)
		return k, word
	}
	sc.fail("invalid literal")
	return tokInvalid, ""
}

func (sc *scanner) number() (tokKind, string) {
	start := sc.i
	end, problem := value.ScanJSONNumber(sc.s, start)
	sc.i = end
	if problem != "" {
		sc.fail(problem)
		return tokInvalid, ""
	}
	return tokNumber, sc.s[start:end]
}

// str reads a string starting at the opening quote.
func (sc *scanner) str() (string, bool) {
	s := sc.s
	i := sc.i + 1
	start := i
	for i < len(s) {
		c := s[i]
		if c == '"' {
			sc.i = i + 1
			return s[start:i], true
		}
		if c == '\\' {
			return sc.strSlow(start, i)
		}
		if c < 0x20 {
			sc.i = i
			sc.fail("control character in string")
			return "", false
		}
		i++
	}
	sc.i = i
	sc.fail("unterminated string")
	return "", false
}

// strSlow decodes a string with escapes; start is the first content byte, i the
// first backslash.
func (sc *scanner) strSlow(start, i int) (string, bool) {
	s := sc.s
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			sc.i = i + 1
			return string(buf), true
		case c < 0x20:
			sc.i = i
			sc.fail("control character in string")
			return "", false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, next, ok := value.DecodeJSONUnicodeEscape(s, i)
			if !ok {
				sc.i = i
				if i+4 > len(s) {
					sc.fail("short \\u escape")
				} else {
					sc.fail("invalid \\u escape")
				}
				return "", false
			}
			i = next
			buf = utf8.AppendRune(buf, r)
		default:
			sc.i = i - 1
			sc.fail("invalid escape")
			return "", false
		}
	}
	sc.i = len(s)
	sc.fail("unterminated string")
	return "", false
}

// nextKey advances inside an object whose '{' was consumed: it returns the next
// member's key with the ':' consumed, or ok=false at the closing '}' (consumed) or on
// error. first must be true for the first call on an object.
func (sc *scanner) nextKey(first bool) (key string, ok bool) {
	sc.ws()
	if sc.i >= len(sc.s) {
		sc.fail("unexpected end of input in object")
		return "", false
	}
	if sc.s[sc.i] == '}' {
		sc.i++
		return "", false
	}
	if !first {
		if sc.s[sc.i] != ',' {
			sc.fail("expected ',' or '}' in object")
			return "", false
		}
		sc.i++
		sc.ws()
	}
	if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
		sc.fail("expected a string key in object")
		return "", false
	}
	key, ok = sc.str()
	if !ok {
		return "", false
	}
	sc.ws()
	if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
		sc.fail("expected ':' after object key")
		return "", false
	}
	sc.i++
	return key, true
}

// skipRest skips the remainder of a value whose first token was k.
func (sc *scanner) skipRest(k tokKind) {
	switch k {
	case tokObject:
		sc.depth++
		if sc.depth > maxDepth {
			sc.fail("nesting too deep")
			return
		}
		for first := true; ; first = false {
			if _, ok := sc.nextKey(first); !ok {
				break
			}
			sc.skipValue()
		}
		sc.depth--
	case tokArray:
		sc.depth++
		if sc.depth > maxDepth {
			sc.fail("nesting too deep")
			return
		}
		sc.ws()
		if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
			sc.i++
			sc.depth--
			return
		}
		for sc.err == nil {
			sc.skipValue()
			sc.ws()
			if sc.i >= len(sc.s) {
				sc.fail("unexpected end of input in array")
				break
			}
			if sc.s[sc.i] == ']' {
				sc.i++
				break
			}
			if sc.s[sc.i] != ',' {
				sc.fail("expected ',' or ']' in array")
				break
			}
			sc.i++
		}
		sc.depth--
	}
}

// skipValue reads and discards one value, checking it as value and skipRest do
// (the same errors at the same offsets) without decoding it: a string is scanned
// for its closing quote, escapes validated but not unescaped.
func (sc *scanner) skipValue() {
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == '"' {
		sc.skipStr()
		return
	}
	k, _ := sc.value()
	sc.skipRest(k)
}

// skipStr skips a string starting at the opening quote; it fails exactly where str
// would.
func (sc *scanner) skipStr() {
	s := sc.s
	i := sc.i + 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			sc.i = i + 1
			return
		case c < 0x20:
			sc.i = i
			sc.fail("control character in string")
			return
		case c != '\\':
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			_, next, ok := value.DecodeJSONUnicodeEscape(s, i)
			if !ok {
				sc.i = i
				if i+4 > len(s) {
					sc.fail("short \\u escape")
				} else {
					sc.fail("invalid \\u escape")
				}
				return
			}
			i = next
		default:
			sc.i = i - 1
			sc.fail("invalid escape")
			return
		}
	}
	sc.i = len(s)
	sc.fail("unterminated string")
}

// end checks that only whitespace follows.
func (sc *scanner) end() {
	sc.ws()
	if sc.i < len(sc.s) {
		sc.fail("unexpected data after the stats object")
	}
}
