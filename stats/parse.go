package stats

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/value"
)

// conv is how a leaf's JSON bound is turned into a value.Value.
type conv uint8

const (
	cvNone conv = iota // no bounds kept (boolean, binary, list, map, unsupported)
	cvInt
	cvFloat32
	cvFloat64
	cvDecimal
	cvString
	cvDate
	cvTimestamp
	cvTimestampNTZ
)

// pnode is one schema field in a parse plan.
type pnode struct {
	name     string
	children []*pnode // non-nil for structs
	leaf     int      // index into plan.leaves, -1 for structs
	ascii    bool     // name is ASCII: it folds only to names of its length
}

type pleaf struct {
	key   string
	conv  conv
	prec  int32
	scale int32
	// fromFloat marks a double column widened from float (delta.typeChanges): old
	// files wrote float32 text, so bounds are read both ways and the wider kept.
	fromFloat bool
}

// plan is the schema prepared for parsing; immutable once built.
type plan struct {
	schema *arrow.Schema
	root   []*pnode
	leaves []pleaf
	prefix int
}

// ParseOptions tunes Parse. The zero value is the default.
type ParseOptions struct {
	// StringPrefixLength is the table's delta.dataSkippingStringPrefixLength: a string
	// maximum with at least this many code points that does not end in a tie-breaker
	// may be a cut prefix and is extended with U+10FFFF. 0 means
	// DefaultStringPrefixLength (32).
	StringPrefixLength int
}

// Parser parses the stats JSON of files sharing one schema. Build it once with
// NewParser; it is immutable and safe for concurrent use.
type Parser struct {
	p *plan
}

// NewParser prepares parsing against schema, the table's physical Arrow schema
// (long→int64, timestamp→timestamp[us, UTC], timestamp_ntz→timestamp[us],
// date→date32, decimal→decimal128(p,s), string→utf8, structs nested).
//
// A double field whose metadata has "delta.typeChanges" with "fromType":"float" (the
// typeWidening feature) gets bounds safe for files written before the change.
func NewParser(schema *arrow.Schema, opts ParseOptions) *Parser {
	return &Parser{p: buildPlan(schema, opts)}
}

func buildPlan(schema *arrow.Schema, opts ParseOptions) *plan {
	pl := &plan{schema: schema, prefix: opts.StringPrefixLength}
	if pl.prefix <= 0 {
		pl.prefix = DefaultStringPrefixLength
	}
	if schema != nil {
		pl.root = pl.nodes(schema.Fields(), nil)
	}
	return pl
}

func (pl *plan) nodes(fields []arrow.Field, path []string) []*pnode {
	out := make([]*pnode, 0, len(fields))
	for _, f := range fields {
		p := append(append([]string(nil), path...), f.Name)
		n := &pnode{name: f.Name, leaf: -1, ascii: isASCII(f.Name)}
		if st, ok := f.Type.(*arrow.StructType); ok {
			n.children = pl.nodes(st.Fields(), p)
		} else {
			n.leaf = len(pl.leaves)
			pl.leaves = append(pl.leaves, newPleaf(Key(p...), f))
		}
		out = append(out, n)
	}
	return out
}

func newPleaf(key string, f arrow.Field) pleaf {
	l := pleaf{key: key}
	switch t := f.Type.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type:
		l.conv = cvInt
	case *arrow.Float32Type:
		l.conv = cvFloat32
	case *arrow.Float64Type:
		l.conv = cvFloat64
		if tc, ok := f.Metadata.GetValue("delta.typeChanges"); ok && strings.Contains(tc, `"float"`) {
			l.fromFloat = true
		}
	case *arrow.Decimal128Type:
		l.conv = cvDecimal
		l.prec, l.scale = t.Precision, t.Scale
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		l.conv = cvString
	case *arrow.Date32Type, *arrow.Date64Type:
		l.conv = cvDate
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			l.conv = cvTimestamp
		} else {
			l.conv = cvTimestampNTZ
		}
	}
	return l
}

// lastPlan caches the plan of the most recent schema given to Parse, so that
// parsing many files of one table does not rebuild it.
var lastPlan atomic.Pointer[plan]

// Parse reads one file's stats JSON (the add action's "stats" string, any writer's
// dialect) into a typed File, using schema as NewParser does and the default
// ParseOptions. See (*Parser).Parse for the rules. It reuses the prepared schema
// while called with the same *arrow.Schema pointer; code that alternates between
// schemas, or needs ParseOptions, should keep a Parser per schema instead. Parse is
// safe for concurrent use.
func Parse(statsJSON string, schema *arrow.Schema) (*File, error) {
	pl := lastPlan.Load()
	if pl == nil || pl.schema != schema || pl.prefix != DefaultStringPrefixLength {
		pl = buildPlan(schema, ParseOptions{})
		lastPlan.Store(pl)
	}
	return pl.parse(statsJSON)
}

// Parse reads one file's stats JSON into a typed File whose bounds consumers can
// trust (invariant S1: a bound is either right or NULL):
//
//   - Only malformed JSON is an error (wrapping ErrSyntax, as a *SyntaxError). Keys
//     the schema does not have are ignored; a value that does not fit its column's
//     type leaves that bound NULL (unknown).
//   - Numbers are read from their text: int64 exactly, integers written as 1.0
//     accepted, decimals exactly at the column's scale (as JSON numbers or strings,
//     plain or with exponent; a value that needs rounding is left unknown), integers
//     for decimal or double columns (type widening). Float columns also accept
//     "NaN", "Infinity", "-Infinity" strings; a NaN bound stays NaN ("may hold NaN").
//     A float32 column reads bounds at float32 precision.
//   - Timestamps accept any ISO-8601 offset (Spark's session zone, Kernel's Z,
//     delta-rs microseconds), a space or T separator, and expanded years; the max is
//     widened by 1 ms because writers cut it to milliseconds. timestamp_ntz accepts
//     zone-less text (or offset zero) and a bare date (date→timestamp_ntz widening);
//     a timestamp with a zone needs an offset.
//   - A string max with at least the prefix length in code points that does not end
//     with a tie-breaker (U+007F or U+10FFFF) may be a cut prefix (delta-rs copies
//     Parquet footers) and is extended with U+10FFFF.
//   - Boolean and binary bounds are ignored; nullCount is kept for every column.
//   - NumRecords is -1 when absent; TightBounds is true unless "tightBounds":false.
//
// Columns holds an entry for every leaf that appears in any section. String bounds
// may share memory with statsJSON.
func (p *Parser) Parse(statsJSON string) (*File, error) {
	return p.p.parse(statsJSON)
}

// Project returns a Parser that converts only the leaf columns whose keys (Key of
// the physical path, as File.Columns is keyed) are listed, plus numRecords and
// tightBounds; the JSON of every other column is still scanned and validated, never
// converted. A document therefore parses with the same errors as with p, and each
// listed column gets the same Column p would give it; File.Columns holds only
// listed columns. Keys the schema does not have are ignored. Projecting to no key
// reads numRecords and tightBounds alone. Planning uses it to parse only what a
// filter reads. The result is immutable and safe for concurrent use.
func (p *Parser) Project(keys []string) *Parser {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	src := p.p
	pl := &plan{schema: src.schema, prefix: src.prefix}
	pl.root = pl.project(src, src.root, want)
	return &Parser{p: pl}
}

// project copies the nodes of src that lead to a wanted leaf into pl (a struct
// without one is dropped, so its members are skipped as unknown keys).
func (pl *plan) project(src *plan, nodes []*pnode, want map[string]bool) []*pnode {
	var out []*pnode
	for _, n := range nodes {
		if n.children != nil {
			if kids := pl.project(src, n.children, want); len(kids) > 0 {
				out = append(out, &pnode{name: n.name, children: kids, leaf: -1, ascii: n.ascii})
			}
			continue
		}
		if l := src.leaves[n.leaf]; want[l.key] {
			out = append(out, &pnode{name: n.name, leaf: len(pl.leaves), ascii: n.ascii})
			pl.leaves = append(pl.leaves, l)
		}
	}
	return out
}

// parseState is the per-call scratch of a parse.
type parseState struct {
	pl   *plan
	sc   scanner
	cols []Column
	// touched[i]: some section mentioned leaf i; when touched is nil (a plan of at
	// most 64 leaves parsed by Parse) bit i of mask says it instead.
	touched []bool
	mask    uint64
}

func (st *parseState) touch(i int) {
	if st.touched != nil {
		st.touched[i] = true
	} else {
		st.mask |= 1 << i
	}
}

func (pl *plan) parse(s string) (*File, error) {
	n := len(pl.leaves)
	cols := make([]Column, n)
	var touched []bool
	if n > 64 {
		touched = make([]bool, n)
	}
	st := parseState{pl: pl, sc: scanner{s: s}, cols: cols, touched: touched}
	nr, tight, err := st.run()
	if err != nil {
		return nil, err
	}
	seen := func(i int) bool {
		if touched != nil {
			return touched[i]
		}
		return st.mask&(1<<i) != 0
	}
	f := &File{NumRecords: nr, TightBounds: tight}
	count := 0
	for i := range n {
		if seen(i) {
			count++
		}
	}
	f.Columns = make(map[string]*Column, count)
	for i := range n {
		if seen(i) {
			f.Columns[pl.leaves[i].key] = &cols[i]
		}
	}
	return f, nil
}

// Leaves returns the keys (Key of the physical path) of the leaf columns p converts,
// in schema order: every leaf of the schema, or for a projection (Project) the listed
// ones the schema has. ParseColumns fills its cols in this order.
func (p *Parser) Leaves() []string {
	out := make([]string, len(p.p.leaves))
	for i := range p.p.leaves {
		out[i] = p.p.leaves[i].key
	}
	return out
}

// ParseColumns reads statsJSON as Parse does (the same errors, the same numRecords,
// tightBounds and Column values) into storage the caller owns, so that converting
// the statistics of many files allocates nothing per file (beyond the unescaped
// copy of a converted string bound holding escapes): cols[i] receives the Column of
// leaf Leaves()[i] and seen[i] whether any section mentioned it (whether Parse would
// put it in File.Columns). Keys of other columns are skipped without decoding their
// values; they are still checked to be well-formed JSON. cols and seen must have
// len(Leaves()) entries; they are overwritten, and are unspecified after an error.
// numRecords is -1 when absent; tight is true unless "tightBounds":false. String
// bounds may share memory with statsJSON.
func (p *Parser) ParseColumns(statsJSON string, cols []Column, seen []bool) (numRecords int64, tight bool, err error) {
	if len(cols) != len(p.p.leaves) || len(seen) != len(p.p.leaves) {
		return -1, true, fmt.Errorf("stats: ParseColumns: %d columns and %d flags for %d leaves: %w", len(cols), len(seen), len(p.p.leaves), ErrArgument)
	}
	clear(cols)
	clear(seen)
	st := parseState{pl: p.p, sc: scanner{s: statsJSON}, cols: cols, touched: seen}
	if seen == nil {
		st.touched = []bool{} // no leaves: never indexed, but not the mask form
	}
	return st.run()
}

// run parses st.sc's input into st.cols and the touched flags (zeroed, one entry
// per leaf of st.pl).
func (st *parseState) run() (numRecords int64, tight bool, err error) {
	pl := st.pl
	numRecords, tight = -1, true
	sc := &st.sc
	k, _ := sc.value()
	if k != tokObject {
		if sc.err == nil {
			sc.fail("stats must be a JSON object")
		}
		return -1, true, sc.err
	}
	for first := true; ; first = false {
		key, ok := sc.nextKey(first)
		if !ok {
			break
		}
		switch key {
		case "numRecords":
			vk, text := sc.value()
			if vk == tokNumber {
				if v, ok := parseIntText(text); ok && v >= 0 {
					numRecords = v
				}
			} else {
				sc.skipRest(vk)
			}
		case "tightBounds":
			vk, _ := sc.value()
			switch vk {
			case tokFalse:
				tight = false
			case tokTrue:
				tight = true
			default:
				sc.skipRest(vk)
			}
		case "minValues":
			st.section(pl.root, secMin)
		case "maxValues":
			st.section(pl.root, secMax)
		case "nullCount":
			st.section(pl.root, secNull)
		default:
			sc.skipValue()
		}
	}
	sc.end()
	if sc.err != nil {
		return -1, true, sc.err
	}
	return numRecords, tight, nil
}

func findNode(nodes []*pnode, key string) *pnode {
	for _, n := range nodes {
		if n.name == key {
			return n
		}
	}
	// Case-insensitive fallback. Two ASCII strings fold equal only at equal length
	// (the non-ASCII folds of ASCII letters, U+017F and U+212A, are not ASCII), so
	// those comparisons are skipped.
	asciiKey := isASCII(key)
	for _, n := range nodes {
		if asciiKey && n.ascii && len(n.name) != len(key) {
			continue
		}
		if strings.EqualFold(n.name, key) {
			return n
		}
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// section reads one of minValues/maxValues/nullCount (any value; non-objects are
// skipped) against the struct whose fields are nodes.
func (st *parseState) section(nodes []*pnode, sec section) {
	sc := &st.sc
	k, _ := sc.value()
	if k != tokObject {
		sc.skipRest(k)
		return
	}
	sc.depth++
	if sc.depth > maxDepth {
		sc.fail("nesting too deep")
		return
	}
	for first := true; ; first = false {
		key, ok := sc.nextKey(first)
		if !ok {
			break
		}
		n := findNode(nodes, key)
		switch {
		case n == nil:
			sc.skipValue()
		case n.children != nil:
			st.section(n.children, sec)
		default:
			st.leafValue(n.leaf, sec)
		}
	}
	sc.depth--
}

func (st *parseState) leafValue(i int, sec section) {
	sc := &st.sc
	k, text := sc.value()
	if k == tokObject || k == tokArray {
		sc.skipRest(k)
		return
	}
	if k == tokInvalid {
		return
	}
	st.touch(i)
	col := &st.cols[i]
	l := &st.pl.leaves[i]
	switch sec {
	case secNull:
		if k == tokNumber {
			if v, ok := parseIntText(text); ok && v >= 0 {
				col.NullCount, col.HasNullCount = v, true
			}
		}
	case secMin:
		col.Min = convert(l, k, text, false, st.pl.prefix)
	case secMax:
		col.Max = convert(l, k, text, true, st.pl.prefix)
	}
}

// convert turns one JSON bound into a value of the leaf's type, or NULL when it does
// not fit. isMax selects the upper-bound normalisations.
func convert(l *pleaf, k tokKind, text string, isMax bool, prefix int) value.Value {
	if k != tokNumber && k != tokString {
		return value.Null()
	}
	switch l.conv {
	case cvInt:
		if v, ok := parseIntText(text); ok {
			return value.Int64(v)
		}
	case cvFloat32, cvFloat64:
		x, ok := parseFloatText(text, k == tokString, l.conv == cvFloat32)
		if !ok {
			return value.Null()
		}
		if l.fromFloat && !math.IsNaN(x) {
			// The file may predate float→double widening: the text then names a
			// float32 value whose double is a little off the shortest double text.
			if y, ok := parseFloatText(text, k == tokString, true); ok && !math.IsNaN(y) {
				if isMax {
					x = math.Max(x, y)
				} else {
					x = math.Min(x, y)
				}
			}
		}
		if x == 0 {
			x = 0
		}
		return value.Float64(x)
	case cvDecimal:
		if n, ok := parseDecimalText(text, l.prec, l.scale); ok {
			return value.Decimal(n, l.prec, l.scale)
		}
	case cvString:
		if k != tokString {
			return value.Null()
		}
		if isMax {
			return value.String(widenStringMax(text, prefix))
		}
		return value.String(text)
	case cvDate:
		if k != tokString {
			return value.Null()
		}
		if d, ok := parseDate(text); ok {
			return value.Date(d)
		}
	case cvTimestamp, cvTimestampNTZ:
		if k != tokString {
			return value.Null()
		}
		us, ok := parseTimestamp(text, l.conv == cvTimestampNTZ, isMax)
		if !ok {
			return value.Null()
		}
		if isMax {
			// Writers cut timestamps to milliseconds: widen the max by 1 ms.
			if us > math.MaxInt64-1000 {
				return value.Null()
			}
			us += 1000
		}
		if l.conv == cvTimestamp {
			return value.Timestamp(us)
		}
		return value.TimestampNTZ(us)
	}
	return value.Null()
}

// widenStringMax extends a string maximum that may be a cut prefix (at least
// prefix code points, no tie-breaker at the end) with U+10FFFF.
func widenStringMax(s string, prefix int) string {
	if strings.HasSuffix(s, tieASCII) || strings.HasSuffix(s, tieMax) {
		return s
	}
	if _, more := prefixUnits(s, prefix-1); !more {
		return s // fewer than prefix code points: a complete value
	}
	return s + tieMax
}

// ParseNumRecords returns the numRecords of a stats JSON string without parsing the
// rest when it comes first (as every writer puts it); ok is false when it is absent,
// not a non-negative integer, or the JSON is malformed before it is found.
func ParseNumRecords(statsJSON string) (int64, bool) {
	sc := scanner{s: statsJSON}
	k, _ := sc.value()
	if k != tokObject {
		return 0, false
	}
	for first := true; ; first = false {
		key, ok := sc.nextKey(first)
		if !ok {
			return 0, false
		}
		if key == "numRecords" {
			vk, text := sc.value()
			if vk != tokNumber {
				return 0, false
			}
			v, ok := parseIntText(text)
			if !ok || v < 0 {
				return 0, false
			}
			return v, true
		}
		sc.skipValue()
		if sc.err != nil {
			return 0, false
		}
	}
}
