package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/value"
)

// ToJSON renders f as the Delta stats JSON string
// {"numRecords":N,"minValues":{...},"maxValues":{...},"nullCount":{...}}, nested
// like schema and keyed by its (physical) field names, in schema order. Columns of f
// that the schema does not have are left out.
//
// Rendering rules (chosen so every Delta reader gets correct bounds):
//   - timestamps are cut down to milliseconds, written in UTC as
//     2006-01-02T15:04:05.000Z; timestamp_ntz as 2006-01-02T15:04:05.000; dates as
//     2006-01-02 (years outside 0000..9999 as ISO-8601 expanded years, e.g. +10000);
//   - decimals are JSON numbers with exactly the column's scale (written digit by
//     digit, never through a float);
//   - float columns use the shortest text that reads back to the same float32 or
//     float64; a NaN or ±Inf bound is left out (JSON has no such number and readers
//     disagree on the quoted forms), and so is a Min or Max that is NULL;
//   - a string bound that is not valid UTF-8 is left out (a JSON encoder would
//     replace the bad bytes and the bound could move the wrong way);
//   - boolean and binary bounds are not written (Delta collects none);
//   - "tightBounds":false is written only when f.TightBounds is false;
//   - a struct with nothing to write in a section is left out of that section, and a
//     section with nothing in it is left out altogether.
//
// With a nil schema the nesting is taken from the column keys (sorted by name) and
// floats are written as float64; this is what (*File).MarshalJSON does.
func ToJSON(f *File, schema *arrow.Schema) (string, error) {
	b, err := appendStatsJSON(nil, f, schema)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// MarshalJSON implements json.Marshaler: ToJSON(f, nil) as a JSON object.
func (f *File) MarshalJSON() ([]byte, error) {
	return appendStatsJSON(nil, f, nil)
}

// wnode is a schema node for writing: a struct (children) or a leaf.
type wnode struct {
	name     string
	key      string
	children []*wnode
	float32  bool
}

func schemaTree(fields []arrow.Field, path []string) []*wnode {
	out := make([]*wnode, 0, len(fields))
	for _, f := range fields {
		p := append(append([]string(nil), path...), f.Name)
		n := &wnode{name: f.Name}
		if st, ok := f.Type.(*arrow.StructType); ok {
			n.children = schemaTree(st.Fields(), p)
		} else {
			n.key = Key(p...)
			n.float32 = f.Type.ID() == arrow.FLOAT32
		}
		out = append(out, n)
	}
	return out
}

// keyTree builds the nesting from column keys when no schema is given.
func keyTree(cols map[string]*Column) []*wnode {
	keys := make([]string, 0, len(cols))
	for k := range cols {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	root := &wnode{}
	for _, k := range keys {
		parts := strings.Split(k, "\x00")
		cur := root
		for i, p := range parts {
			var next *wnode
			for _, ch := range cur.children {
				if ch.name == p && (ch.key == "") == (i < len(parts)-1) {
					next = ch
				}
			}
			if next == nil {
				next = &wnode{name: p}
				if i == len(parts)-1 {
					next.key = k
				}
				cur.children = append(cur.children, next)
			}
			cur = next
		}
	}
	return root.children
}

type section uint8

const (
	secMin section = iota
	secMax
	secNull
)

func appendStatsJSON(b []byte, f *File, schema *arrow.Schema) ([]byte, error) {
	if f == nil {
		return nil, fmt.Errorf("stats: ToJSON of a nil File")
	}
	var tree []*wnode
	if schema != nil {
		tree = schemaTree(schema.Fields(), nil)
	} else {
		tree = keyTree(f.Columns)
	}
	b = append(b, '{')
	first := true
	if f.NumRecords >= 0 {
		b = append(b, `"numRecords":`...)
		b = strconv.AppendInt(b, f.NumRecords, 10)
		first = false
	}
	for _, s := range []struct {
		name string
		sec  section
	}{{"minValues", secMin}, {"maxValues", secMax}, {"nullCount", secNull}} {
		mark := len(b)
		if !first {
			b = append(b, ',')
		}
		b = appendJSONString(b, s.name)
		b = append(b, ':')
		var wrote bool
		b, wrote = appendSection(b, tree, f.Columns, s.sec)
		if wrote {
			first = false
		} else {
			b = b[:mark]
		}
	}
	if !f.TightBounds {
		if !first {
			b = append(b, ',')
		}
		b = append(b, `"tightBounds":false`...)
	}
	return append(b, '}'), nil
}

// appendSection writes one object of a section; wrote is false (and b unchanged in
// meaning) when nothing was written, so the caller can drop the key.
func appendSection(b []byte, nodes []*wnode, cols map[string]*Column, sec section) ([]byte, bool) {
	start := len(b)
	b = append(b, '{')
	n := 0
	for _, nd := range nodes {
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, nd.name)
		b = append(b, ':')
		var ok bool
		if nd.key == "" {
			b, ok = appendSection(b, nd.children, cols, sec)
		} else {
			b, ok = appendLeaf(b, cols[nd.key], nd.float32, sec)
		}
		if ok {
			n++
		} else {
			b = b[:mark]
		}
	}
	if n == 0 {
		return b[:start], false
	}
	return append(b, '}'), true
}

func appendLeaf(b []byte, c *Column, float32 bool, sec section) ([]byte, bool) {
	if c == nil {
		return b, false
	}
	switch sec {
	case secNull:
		if !c.HasNullCount {
			return b, false
		}
		return strconv.AppendInt(b, c.NullCount, 10), true
	case secMin:
		return appendValue(b, c.Min, float32)
	}
	return appendValue(b, c.Max, float32)
}

func appendValue(b []byte, v value.Value, float32 bool) ([]byte, bool) {
	switch v.Kind() {
	case value.KindInt64:
		return strconv.AppendInt(b, v.AsInt64(), 10), true
	case value.KindFloat64:
		x := v.AsFloat64()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, false
		}
		if x == 0 {
			x = 0
		}
		mark := len(b)
		if float32 {
			b = strconv.AppendFloat(b, x, 'g', -1, 32)
		} else {
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
		if !strings.ContainsAny(string(b[mark:]), ".eE") {
			b = append(b, '.', '0')
		}
		return b, true
	case value.KindDecimal:
		unscaled, _, scale := v.AsDecimal()
		if scale < 0 || scale > decimal128.MaxScale {
			return b, false
		}
		return append(b, unscaled.ToString(scale)...), true
	case value.KindString:
		s := v.AsString()
		if !utf8.ValidString(s) {
			return b, false
		}
		return appendJSONString(b, s), true
	case value.KindDate:
		b = append(b, '"')
		b = appendDate(b, v.AsInt64())
		return append(b, '"'), true
	case value.KindTimestamp, value.KindTimestampNTZ:
		ms := value.FloorDiv(v.AsInt64(), 1000)
		days := value.FloorDiv(ms, 86_400_000)
		rem := ms - days*86_400_000
		b = append(b, '"')
		b = appendDate(b, days)
		b = append(b, 'T')
		b = append2(b, rem/3_600_000)
		b = append(b, ':')
		b = append2(b, rem/60_000%60)
		b = append(b, ':')
		b = append2(b, rem/1000%60)
		b = append(b, '.')
		ms3 := rem % 1000
		b = append(b, byte('0'+ms3/100), byte('0'+ms3/10%10), byte('0'+ms3%10))
		if v.Kind() == value.KindTimestamp {
			b = append(b, 'Z')
		}
		return append(b, '"'), true
	}
	return b, false
}

func append2(b []byte, n int64) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

// appendDate writes days since 1970-01-01 as YYYY-MM-DD (proleptic Gregorian),
// with an ISO-8601 expanded year (+YYYYY / -YYYY) outside 0000..9999.
func appendDate(b []byte, days int64) []byte {
	y, m, d := value.CivilFromDays(days)
	switch {
	case y > 9999:
		b = append(b, '+')
		b = strconv.AppendInt(b, y, 10)
	case y < 0:
		b = append(b, '-')
		ay := -y
		for p := int64(1000); p > 1 && ay < p; p /= 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, ay, 10)
	default:
		b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	}
	b = append(b, '-')
	b = append2(b, m)
	b = append(b, '-')
	return append2(b, d)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string; s must be valid UTF-8. Only what JSON
// requires is escaped (quote, backslash, control characters).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
