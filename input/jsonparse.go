package input

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/skiplake/skiplake/value"
)

// A small JSON parser for JSONL input (RFC 8259), three times faster than
// encoding/json's Decoder.Token on typical lines, with the checks input needs: one
// value per line, objects keep their keys in order, duplicate keys and invalid UTF-8
// are errors (encoding/json keeps the last duplicate and replaces bad bytes with
// U+FFFD, both silent changes of the data), nesting is bounded. It accepts exactly what
// encoding/json accepts on valid UTF-8 input without duplicate keys, and decodes to the
// same values (FuzzJSONLInput checks both).

// jsonSyntaxError is a parse error at a byte offset of the parsed text.
type jsonSyntaxError struct {
	msg    string
	Offset int // 0-based byte offset
}

func (e *jsonSyntaxError) Error() string { return e.msg }

// jsonParser parses one text. keyHint holds the keys of the previous object at this
// level: keys equal to them reuse their string instead of allocating.
type jsonParser struct {
	data    []byte
	pos     int
	keyHint []string
}

// parseJSON parses data as exactly one JSON value (whitespace around it allowed) into
// nil, bool, json.Number, string, []any or *jsonObject. keyHint (may be nil) is the
// key list of a previous top-level object, to share key strings.
func parseJSON(data []byte, keyHint []string) (any, error) {
	p := &jsonParser{data: data, keyHint: keyHint}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected %s after the value", p.describe())
	}
	return v, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return &jsonSyntaxError{msg: fmt.Sprintf(format, args...), Offset: p.pos}
}

// describe names the byte at the current position for messages.
func (p *jsonParser) describe() string {
	if p.pos >= len(p.data) {
		return "end of line"
	}
	return strconv.QuoteRune(rune(p.data[p.pos]))
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of line, want a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.errorf("invalid character %s looking for a value", p.describe())
}

func (p *jsonParser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.errorf("invalid literal, want %s", word)
	}
	p.pos += len(word)
	return nil
}

func (p *jsonParser) object(depth int) (any, error) {
	if depth >= maxJSONDepth {
		return nil, p.errorf("values nested deeper than %d levels", maxJSONDepth)
	}
	p.pos++ // '{'
	obj := &jsonObject{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("invalid character %s looking for an object key", p.describe())
		}
		keyAt := p.pos
		k, err := p.key(depth, len(obj.keys))
		if err != nil {
			return nil, err
		}
		for _, prev := range obj.keys {
			if prev == k {
				p.pos = keyAt
				return nil, p.errorf("duplicate key %q", k)
			}
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("invalid character %s after an object key, want ':'", p.describe())
		}
		p.pos++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj.keys = append(obj.keys, k)
		obj.vals = append(obj.vals, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of line inside an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.errorf("invalid character %s after an object value, want ',' or '}'", p.describe())
		}
	}
}

// key parses an object key; at the top level a key equal to the hint at its position
// reuses the hint's string.
func (p *jsonParser) key(depth, i int) (string, error) {
	if depth == 0 && i < len(p.keyHint) {
		h := p.keyHint[i]
		end := p.pos + 1 + len(h)
		if end < len(p.data) && p.data[end] == '"' && string(p.data[p.pos+1:end]) == h && plainString(p.data[p.pos+1:end]) {
			p.pos = end + 1
			return h, nil
		}
	}
	return p.str()
}

// plainString reports bytes that stand for themselves inside a JSON string (no quote,
// backslash or control character).
func plainString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func (p *jsonParser) array(depth int) (any, error) {
	if depth >= maxJSONDepth {
		return nil, p.errorf("values nested deeper than %d levels", maxJSONDepth)
	}
	p.pos++ // '['
	out := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of line inside an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return out, nil
		default:
			return nil, p.errorf("invalid character %s after an array element, want ',' or ']'", p.describe())
		}
	}
}

func (p *jsonParser) number() (any, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		p.pos = i
		return nil, p.errorf("invalid number: want a digit, found %s", p.describe())
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			p.pos = i
			return nil, p.errorf("invalid number: want a digit after '.', found %s", p.describe())
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.pos = i
			return nil, p.errorf("invalid number: want a digit in the exponent, found %s", p.describe())
		}
	}
	p.pos = i
	return json.Number(d[start:i]), nil
}

// str parses a string at p.pos (the opening quote).
func (p *jsonParser) str() (string, error) {
	d := p.data
	i := p.pos + 1
	// Fast path: no escapes, all ASCII or valid UTF-8.
	for i < len(d) {
		c := d[i]
		if c == '"' {
			if !utf8.Valid(d[p.pos+1 : i]) {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			s := string(d[p.pos+1 : i])
			p.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		i++
	}
	buf := make([]byte, 0, i-p.pos+16)
	buf = append(buf, d[p.pos+1:i]...)
	for {
		if i >= len(d) {
			p.pos = i
			return "", p.errorf("unexpected end of line inside a string")
		}
		c := d[i]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			p.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			p.pos = i
			return "", p.errorf("control character %s in a string (escape it)", p.describe())
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(d) {
			p.pos = i + 1
			return "", p.errorf("unexpected end of line inside a string")
		}
		switch e := d[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
			i += 2
		case 'b':
			buf, i = append(buf, '\b'), i+2
		case 'f':
			buf, i = append(buf, '\f'), i+2
		case 'n':
			buf, i = append(buf, '\n'), i+2
		case 'r':
			buf, i = append(buf, '\r'), i+2
		case 't':
			buf, i = append(buf, '\t'), i+2
		case 'u':
			// A pair \uD8xx\uDCxx is one character; a lone half is U+FFFD, as in
			// encoding/json.
			r, next, ok := value.DecodeJSONUnicodeEscape(d, i+2)
			if !ok {
				p.pos = i
				return "", p.errorf("invalid \\u escape in a string")
			}
			i = next
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos = i
			return "", p.errorf("invalid escape \\%c in a string", e)
		}
	}
}
