package log

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/value"
)

// statsRenderer renders the add.stats_parsed cells of one record batch as the JSON
// stats string, byte for byte what json.Marshal(arrowToAny(cell, i, true)) gives
// (object keys sorted, null fields left out, encoding/json's string escaping and
// number formats), without building a map per struct or going through reflection.
// Cells it cannot render exactly (maps, lists, types arrowToAny prints with
// ValueStr, strings needing escapes, duplicate field names) go through the generic
// path. Built once per batch; not safe for concurrent use.
type statsRenderer struct {
	root *statsNode
	buf  []byte
}

// statsNode is one column of the stats_parsed struct, prepared for rendering.
type statsNode struct {
	arr    arrow.Array
	kind   statsKind
	fields []statsField // structs: children in key order
	tz     bool         // timestamps: with a time zone (UTC-adjusted)
	unit   arrow.TimeUnit
	scale  int32
}

type statsField struct {
	key  []byte // `"name":`
	node *statsNode
}

type statsKind uint8

const (
	skStruct statsKind = iota
	skBool
	skInt
	skFloat
	skString
	skBinary
	skDate
	skTimestamp
	skDecimal
)

// newStatsRenderer prepares the rendering of the stats_parsed column sp; nil when it
// holds a type the renderer does not handle (every cell then takes the generic path).
func newStatsRenderer(sp arrow.Array) *statsRenderer {
	n := newStatsNode(sp)
	if n == nil || n.kind != skStruct {
		return nil
	}
	return &statsRenderer{root: n}
}

func newStatsNode(a arrow.Array) *statsNode {
	n := &statsNode{arr: a}
	switch c := a.(type) {
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		fields := st.Fields()
		order := make([]int, len(fields))
		for j := range order {
			order[j] = j
		}
		slices.SortFunc(order, func(x, y int) int {
			switch {
			case fields[x].Name < fields[y].Name:
				return -1
			case fields[x].Name > fields[y].Name:
				return 1
			}
			return 0
		})
		for k, j := range order {
			if k > 0 && fields[order[k-1]].Name == fields[j].Name {
				return nil // a map would keep one of them
			}
			child := newStatsNode(c.Field(j))
			if child == nil {
				return nil
			}
			key, err := json.Marshal(fields[j].Name)
			if err != nil {
				return nil
			}
			n.fields = append(n.fields, statsField{key: append(key, ':'), node: child})
		}
		n.kind = skStruct
	case *array.Boolean:
		n.kind = skBool
	case *array.Int8, *array.Int16, *array.Int32, *array.Int64:
		n.kind = skInt
	case *array.Float32, *array.Float64:
		n.kind = skFloat
	case *array.String, *array.LargeString, *array.StringView:
		n.kind = skString
	case *array.Binary:
		n.kind = skBinary
	case *array.Date32:
		n.kind = skDate
	case *array.Timestamp:
		tt := c.DataType().(*arrow.TimestampType)
		n.kind, n.tz, n.unit = skTimestamp, tt.TimeZone != "", tt.Unit
	case *array.Decimal128:
		n.kind, n.scale = skDecimal, c.DataType().(*arrow.Decimal128Type).Scale
	default:
		return nil
	}
	return n
}

// renderStats returns the JSON stats of the non-null row i of the stats_parsed
// column sp, through r (newStatsRenderer(sp); nil: the generic path).
func renderStats(r *statsRenderer, sp arrow.Array, i int) (string, error) {
	if r != nil {
		if b, ok := r.root.appendJSON(r.buf[:0], i); ok {
			r.buf = b
			return string(b), nil
		}
	}
	b, err := json.Marshal(arrowToAny(sp, i, true))
	return string(b), err
}

// appendJSON appends the JSON of the non-null cell i; ok=false when it needs the
// generic path.
func (n *statsNode) appendJSON(b []byte, i int) ([]byte, bool) {
	switch n.kind {
	case skStruct:
		b = append(b, '{')
		first := true
		for _, f := range n.fields {
			if f.node.arr.IsNull(i) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.key...)
			var ok bool
			if b, ok = f.node.appendJSON(b, i); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case skBool:
		return strconv.AppendBool(b, n.arr.(*array.Boolean).Value(i)), true
	case skInt:
		v, _ := arrInt(n.arr, i)
		return strconv.AppendInt(b, v, 10), true
	case skFloat:
		var f float64
		if c, ok := n.arr.(*array.Float32); ok {
			f = float64(c.Value(i))
		} else {
			f = n.arr.(*array.Float64).Value(i)
		}
		return appendJSONFloat(b, f), true
	case skString:
		s, _ := arrStr(n.arr, i)
		return appendPlainJSONString(b, s)
	case skBinary:
		v := n.arr.(*array.Binary).Value(i)
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"'), true
	case skDate:
		t := time.Unix(int64(n.arr.(*array.Date32).Value(i))*86400, 0).UTC()
		b = append(b, '"')
		b = t.AppendFormat(b, "2006-01-02")
		return append(b, '"'), true
	case skTimestamp:
		t := tsToTime(int64(n.arr.(*array.Timestamp).Value(i)), n.unit).UTC()
		layout := "2006-01-02T15:04:05.000"
		if n.tz {
			layout = "2006-01-02T15:04:05.000Z07:00"
		}
		start := len(b)
		b = append(b, '"')
		b = t.AppendFormat(b, layout)
		if !plainJSON(b[start+1:]) {
			return b, false
		}
		return append(b, '"'), true
	case skDecimal:
		s := n.arr.(*array.Decimal128).Value(i).ToString(n.scale)
		if !isJSONNumber(s) {
			return b, false
		}
		return append(b, s...), true
	}
	return b, false
}

// appendJSONFloat appends f as encoding/json writes a float64 (finite values as the
// shortest text, exponent form below 1e-6 and from 1e21; non-finite values as the
// strings arrowToAny gives them).
func appendJSONFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendPlainJSONString appends s quoted when it needs no escaping under
// encoding/json's rules (printable ASCII other than '"', '\\', '<', '>', '&');
// ok=false otherwise.
func appendPlainJSONString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if !plainJSONByte(s[i]) {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

func plainJSON(s []byte) bool {
	for _, c := range s {
		if !plainJSONByte(c) {
			return false
		}
	}
	return true
}

func plainJSONByte(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// isJSONNumber reports whether s is a JSON number (what json.Marshal accepts as a
// json.Number).
func isJSONNumber(s string) bool {
	end, problem := value.ScanJSONNumber(s, 0)
	return problem == "" && end == len(s)
}
