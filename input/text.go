package input

// CSV and JSONL readers that type every value by the target schema (see convert.go)
// and report problems with file, line and column, and the schema inference that reads
// the whole input before anything is written.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
)

// textBatchRows is how many rows a CSV or JSONL reader puts in one batch.
const textBatchRows = 16 << 10

// isNullCell reports the CSV cells read as NULL: empty, NULL and null. In a string
// or binary column a quoted cell is always a value (see csvNull).
func isNullCell(s string) bool { return s == "" || s == "NULL" || s == "null" }

// csvNull reports whether a CSV cell reads as NULL in a column of type t: an empty,
// NULL or null cell, unless it was quoted in a string or binary column, where ""
// is the empty string and "NULL" the string NULL (the convention scan --format csv
// writes, as PostgreSQL and DuckDB do). In other columns quotes change nothing: there
// is no empty number, so "" is NULL there.
func csvNull(cell string, quoted bool, t arrow.DataType) bool {
	if !isNullCell(cell) {
		return false
	}
	if quoted {
		switch t.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			return false
		}
	}
	return true
}

// textReader is the array.RecordReader shared by the CSV and JSONL readers: it
// collects rows in a RecordBuilder of the target schema and hands out batches.
type textReader struct {
	refs   atomic.Int64
	name   string
	schema *arrow.Schema
	b      *array.RecordBuilder
	cur    arrow.RecordBatch
	err    error
	closer io.Closer
	// row appends the next row to b and returns false at the end of the input.
	row func() (bool, error)
}

func newTextReader(name string, schema *arrow.Schema, mem memory.Allocator, closer io.Closer) *textReader {
	r := &textReader{name: name, schema: schema, b: array.NewRecordBuilder(mem, schema), closer: closer}
	r.refs.Store(1)
	return r
}

func (r *textReader) Schema() *arrow.Schema { return r.schema }

func (r *textReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || r.row == nil {
		return false
	}
	n := 0
	for n < textBatchRows {
		ok, err := r.row()
		if err != nil {
			r.err = err
			return false
		}
		if !ok {
			r.row = nil
			break
		}
		n++
	}
	if n == 0 {
		return false
	}
	r.cur = r.b.NewRecordBatch()
	return true
}

func (r *textReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *textReader) Record() arrow.RecordBatch      { return r.cur }
func (r *textReader) Err() error                     { return r.err }
func (r *textReader) Retain()                        { r.refs.Add(1) }

func (r *textReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.b.Release()
	if r.closer != nil {
		r.closer.Close()
	}
}

// appendNull appends a null for field f, refusing it for NOT NULL columns.
func appendNull(b *array.RecordBuilder, f int) error {
	fd := b.Schema().Field(f)
	if !fd.Nullable {
		return fmt.Errorf("column %q is NOT NULL but the value is missing or null", fd.Name)
	}
	b.Field(f).AppendNull()
	return nil
}

// stripBOM drops a UTF-8 byte-order mark at the start of r.
func stripBOM(br *bufio.Reader) {
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		br.Discard(3)
	}
}

// newCSVReader reads CSV (RFC 4180, a header row naming the columns) as batches of
// schema. Columns are matched to the header by name (exactly, else ignoring case); a
// header column the schema does not have is an error before any row is read, a
// schema column the header lacks is NULL in every row (an error for a NOT NULL
// column, as a missing JSONL key is). Empty cells, NULL and null are nulls, except
// quoted ones in string and binary columns (csvNull).
//
// A column named in optional (lower case) that the header lacks is left out of the
// batches (the table computes it: a generated or identity column).
func newCSVReader(name string, rc io.ReadCloser, schema *arrow.Schema, optional map[string]bool, mem memory.Allocator) (*textReader, error) {
	if err := checkSchemaConvertible(name, schema); err != nil {
		return nil, err
	}
	cr, header, err := openCSV(name, rc)
	if err != nil {
		return nil, err
	}
	if len(optional) > 0 {
		absent := map[string]bool{}
		for _, f := range schema.Fields() {
			if optional[strings.ToLower(f.Name)] && !slices.ContainsFunc(header, func(h string) bool { return strings.EqualFold(strings.TrimSpace(h), f.Name) }) {
				absent[strings.ToLower(f.Name)] = true
			}
		}
		schema = withoutColumns(schema, absent)
	}
	idx, err := matchKeys(header, schema.Fields(), "column")
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	colOf := make([]int, len(header)) // CSV field -> schema field
	var absent []int                  // schema fields the header lacks
	for f, h := range idx {
		if h < 0 {
			absent = append(absent, f)
			continue
		}
		colOf[h] = f
	}
	r := newTextReader(name, schema, mem, rc)
	r.row = func() (bool, error) {
		rec, err := cr.Read()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return false, fmt.Errorf("%s:%d: %d fields, but the header has %d", name, line, len(rec), len(header))
		}
		for i, cell := range rec {
			f := colOf[i]
			if csvNull(cell, cr.Quoted(i), schema.Field(f).Type) {
				err = appendNull(r.b, f)
			} else {
				err = appendText(r.b.Field(f), cell)
			}
			if err != nil {
				l, c := cr.FieldPos(i)
				return false, fmt.Errorf("%s:%d:%d: column %q: %w", name, l, c, schema.Field(f).Name, err)
			}
		}
		for _, f := range absent {
			if err := appendNull(r.b, f); err != nil {
				return false, fmt.Errorf("%s:%d: %w (the header has no column %q)", name, line, err, schema.Field(f).Name)
			}
		}
		return true, nil
	}
	return r, nil
}

// checkSchemaConvertible checks that every column of schema can be read from text.
func checkSchemaConvertible(name string, schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		if err := checkConvertible(f.Type); err != nil {
			return fmt.Errorf("%s: column %q: %w", name, f.Name, err)
		}
	}
	return nil
}

// openCSV starts reading CSV from r (a UTF-8 byte-order mark is skipped) and returns
// the reader, positioned after the header, and the header.
func openCSV(name string, r io.Reader) (*csvScanner, []string, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	stripBOM(br)
	cr := newCSVScanner(br)
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("%s: empty file (want a header row naming the columns)", name)
	}
	if err != nil {
		return nil, nil, csvError(name, err)
	}
	return cr, append([]string(nil), header...), nil
}

// newLineReader reads lines from r (a UTF-8 byte-order mark is skipped).
func newLineReader(r io.Reader) *lineReader {
	br := bufio.NewReaderSize(r, 1<<20)
	stripBOM(br)
	return &lineReader{br: br}
}

// csvError formats an encoding/csv error as file:line:column.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %v", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// lineReader reads lines of any length, counting them.
type lineReader struct {
	br   *bufio.Reader
	line int
	buf  []byte
	hint []string // keys of the last object, shared by the next (see parseJSON)
}

// next returns the next line without its line break, or io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		l.buf = append(l.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(l.buf) == 0 {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		l.line++
		return bytes.TrimRight(l.buf, "\r\n"), nil
	}
}

// nextObject returns the next non-blank line decoded as a JSON object, or io.EOF.
// Errors name the file, line and (for syntax errors) column.
func (l *lineReader) nextObject(name string) (*jsonObject, error) {
	for {
		line, err := l.next()
		if err == io.EOF {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := parseJSON(line, l.hint)
		if err != nil {
			var se *jsonSyntaxError
			if errors.As(err, &se) {
				return nil, fmt.Errorf("%s:%d:%d: invalid JSON: %v", name, l.line, se.Offset+1, se)
			}
			return nil, fmt.Errorf("%s:%d: invalid JSON: %v", name, l.line, err)
		}
		obj, ok := v.(*jsonObject)
		if !ok {
			return nil, fmt.Errorf("%s:%d: want a JSON object, found %s", name, l.line, describeJSON(v))
		}
		l.hint = obj.keys
		return obj, nil
	}
}

// newJSONLReader reads JSON Lines (one object per line; blank lines skipped) as
// batches of schema. Keys are matched to columns by name (exactly, else ignoring
// case); a key the schema does not have is an error naming the line (never a
// silently dropped value), a missing key is a null.
func newJSONLReader(name string, rc io.ReadCloser, schema *arrow.Schema, mem memory.Allocator) (*textReader, error) {
	if err := checkSchemaConvertible(name, schema); err != nil {
		return nil, err
	}
	lr := newLineReader(rc)
	r := newTextReader(name, schema, mem, rc)
	// The key-to-column mapping of the previous line, reused while lines repeat
	// the same keys in the same order.
	var lastKeys []string
	var lastIdx []int
	r.row = func() (bool, error) {
		obj, err := lr.nextObject(name)
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		idx := lastIdx
		if lastIdx == nil || !equalStrings(obj.keys, lastKeys) {
			if idx, err = matchKeys(obj.keys, schema.Fields(), "field"); err != nil {
				return false, fmt.Errorf("%s:%d: %w", name, lr.line, err)
			}
			lastKeys, lastIdx = obj.keys, idx
		}
		for f, k := range idx {
			if k < 0 || obj.vals[k] == nil {
				err = appendNull(r.b, f)
			} else {
				err = appendJSON(r.b.Field(f), obj.vals[k])
			}
			if err != nil {
				return false, fmt.Errorf("%s:%d: field %q: %w", name, lr.line, schema.Field(f).Name, err)
			}
		}
		return true, nil
	}
	return r, nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// colKind is a column type inferred from text, ordered from narrow to wide: merging
// two kinds gives the narrowest that holds both.
type colKind uint8

const (
	kindNone colKind = iota // only nulls seen so far
	kindBool
	kindInt
	kindFloat
	kindDate
	kindTimestamp
	kindString
)

// mergeKinds widens: int and float make float, date and timestamp make timestamp,
// any other mix makes string.
func mergeKinds(a, b colKind) colKind {
	switch {
	case a == kindNone:
		return b
	case b == kindNone || a == b:
		return a
	case (a == kindInt && b == kindFloat) || (a == kindFloat && b == kindInt):
		return kindFloat
	case (a == kindDate && b == kindTimestamp) || (a == kindTimestamp && b == kindDate):
		return kindTimestamp
	}
	return kindString
}

// textKind classifies a CSV cell (not null). Only values the column type would hold
// exactly count as typed: integers with leading zeros (zip codes, ids) and integers
// beyond bigint stay strings, and so do timestamps with sub-microsecond digits.
func textKind(s string) colKind {
	t := strings.TrimSpace(s)
	switch {
	case strings.EqualFold(t, "true") || strings.EqualFold(t, "false"):
		return kindBool
	case isIntText(t):
		if _, err := strconv.ParseInt(t, 10, 64); err == nil {
			return kindInt
		}
		return kindString
	case isFloatText(t) && !leadingZero(t):
		if _, err := strconv.ParseFloat(t, 64); err == nil {
			return kindFloat
		}
		return kindString
	}
	if _, err := expr.ParseDate(t); err == nil {
		return kindDate
	}
	if _, _, err := expr.ParseTimestamp(t); err == nil {
		return kindTimestamp
	}
	return kindString
}

func isIntText(s string) bool {
	d := strings.TrimLeft(s, "+-")
	if len(d) == 0 || len(s)-len(d) > 1 || leadingZero(s) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// leadingZero reports a number written with a leading zero before another digit.
func leadingZero(s string) bool {
	d := strings.TrimLeft(s, "+-")
	return len(d) >= 2 && d[0] == '0' && d[1] >= '0' && d[1] <= '9'
}

// jsonKind classifies a JSON value for inference.
func jsonKind(v any) (colKind, error) {
	switch x := v.(type) {
	case nil:
		return kindNone, nil
	case bool:
		return kindBool, nil
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if _, err := strconv.ParseInt(s, 10, 64); err != nil {
				return 0, fmt.Errorf("%s does not fit a bigint; give the schema with --schema (e.g. decimal(38,0))", abbreviate(s))
			}
			return kindInt, nil
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return 0, fmt.Errorf("%s is out of range for double; give the schema with --schema (e.g. a decimal)", abbreviate(s))
		}
		return kindFloat, nil
	case string:
		return kindString, nil
	}
	return 0, fmt.Errorf("%s cannot be typed by inference; give the schema with --schema", describeJSON(v))
}

// inference accumulates column kinds over every input, in order of first appearance
// (names matched ignoring case, spelled as first seen).
type inference struct {
	names []string
	kinds map[string]colKind
}

func newInference() *inference { return &inference{kinds: map[string]colKind{}} }

func (inf *inference) see(name string, k colKind) {
	key := strings.ToLower(name)
	have, ok := inf.kinds[key]
	if !ok {
		inf.names = append(inf.names, name)
	}
	inf.kinds[key] = mergeKinds(have, k)
}

// schema returns the inferred schema: every column nullable; a column that held
// only nulls is a string.
func (inf *inference) schema() (*arrow.Schema, error) {
	if len(inf.names) == 0 {
		return nil, errors.New("no columns to infer a schema from")
	}
	fields := make([]arrow.Field, len(inf.names))
	for i, n := range inf.names {
		var t arrow.DataType
		switch inf.kinds[strings.ToLower(n)] {
		case kindBool:
			t = arrow.FixedWidthTypes.Boolean
		case kindInt:
			t = arrow.PrimitiveTypes.Int64
		case kindFloat:
			t = arrow.PrimitiveTypes.Float64
		case kindDate:
			t = arrow.FixedWidthTypes.Date32
		case kindTimestamp:
			t = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		default:
			t = arrow.BinaryTypes.String
		}
		fields[i] = arrow.Field{Name: n, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// inferCSV reads a whole CSV input into inf.
func (inf *inference) inferCSV(name string, r io.Reader) error {
	cr, header, err := openCSV(name, r)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, h := range header {
		if h == "" {
			return fmt.Errorf("%s: header: empty column name", name)
		}
		if seen[strings.ToLower(h)] {
			return fmt.Errorf("%s: header: column %q appears twice (names are case-insensitive)", name, h)
		}
		seen[strings.ToLower(h)] = true
	}
	kinds := make([]colKind, len(header))
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return csvError(name, err)
		}
		if len(rec) != len(header) {
			line, _ := cr.FieldPos(0)
			return fmt.Errorf("%s:%d: %d fields, but the header has %d", name, line, len(rec), len(header))
		}
		for i, cell := range rec {
			if !isNullCell(cell) && kinds[i] != kindString {
				kinds[i] = mergeKinds(kinds[i], textKind(cell))
			}
		}
	}
	for i, h := range header {
		inf.see(h, kinds[i])
	}
	return nil
}

// inferJSONL reads a whole JSONL input into inf.
func (inf *inference) inferJSONL(name string, r io.Reader) error {
	lr := newLineReader(r)
	for {
		obj, err := lr.nextObject(name)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for i, k := range obj.keys {
			if k == "" {
				return fmt.Errorf("%s:%d: empty field name", name, lr.line)
			}
			for _, prev := range obj.keys[:i] {
				if strings.EqualFold(prev, k) {
					return fmt.Errorf("%s:%d: fields %q and %q name the same column (names are case-insensitive)", name, lr.line, prev, k)
				}
			}
			kind, err := jsonKind(obj.vals[i])
			if err != nil {
				return fmt.Errorf("%s:%d: field %q: %w", name, lr.line, k, err)
			}
			inf.see(k, kind)
		}
	}
}
