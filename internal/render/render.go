package render

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/datafile"
)

// Writer receives record batches conforming to the schema it was made with.
type Writer interface {
	// Write renders the batch. The caller keeps ownership of rec.
	Write(rec arrow.RecordBatch) error
	// Close flushes buffered output. It does not close the underlying io.Writer.
	Close() error
	// Abort gives up on the output after a failure: it stops what the writer runs in
	// the background (the parquet format's column encoders) and releases what it
	// holds, without finishing the output, which the caller discards. It is a no-op
	// after Close or Abort.
	Abort()
}

// Formats lists the format names New accepts.
var Formats = []string{"table", "jsonl", "csv", "parquet"}

// Options tune the text formats. The zero value gives the defaults.
type Options struct {
	// Null, when set, is what the csv and table formats write for NULL. Default: an
	// empty unquoted field in csv (an empty string is written as ""), NULL in table.
	Null *string
	// Window is how many rows the table format reads to size its columns before it
	// starts printing (it never holds more); default DefaultTableWindow. A later
	// cell wider than its column widens that row only.
	Window int
}

// DefaultTableWindow is the table format's default Options.Window.
const DefaultTableWindow = 1000

// New returns a Writer for the named format ("table", "jsonl", "csv", "parquet")
// with default Options.
func New(format string, w io.Writer, schema *arrow.Schema) (Writer, error) {
	return NewWithOptions(format, w, schema, Options{})
}

// NewWithOptions returns a Writer for the named format.
func NewWithOptions(format string, w io.Writer, schema *arrow.Schema, opts Options) (Writer, error) {
	switch format {
	case "table", "":
		return newTableWriter(w, schema, opts), nil
	case "jsonl", "json":
		return &jsonlWriter{w: bufio.NewWriter(w), schema: schema}, nil
	case "csv":
		return newCSVWriter(w, schema, opts)
	case "parquet":
		return newParquetWriter(w, schema)
	}
	return nil, fmt.Errorf("render: unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// Text renders cell i of arr for human-readable output ("NULL" for nulls).
func Text(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return "0x" + hex.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return "0x" + hex.EncodeToString(a.Value(i))
	}
	v := JSONValue(arr, i)
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// JSONValue returns cell i of arr as a value encoding/json renders faithfully:
// numbers as json.Number (exact), nested types as maps and slices, nulls as nil.
func JSONValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return json.Number(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int16:
		return json.Number(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int32:
		return json.Number(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int64:
		return json.Number(strconv.FormatInt(a.Value(i), 10))
	case *array.Uint8:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint16:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint32:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint64:
		return json.Number(strconv.FormatUint(a.Value(i), 10))
	case *array.Float32:
		return floatJSON(float64(a.Value(i)), 32)
	case *array.Float64:
		return floatJSON(a.Value(i), 64)
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return json.Number(a.Value(i).ToString(dt.Scale))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.Date32:
		return time.Unix(int64(a.Value(i))*86400, 0).UTC().Format("2006-01-02")
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		return FormatTimestamp(int64(a.Value(i)), dt.Unit, dt.TimeZone != "")
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := make(map[string]any, a.NumField())
		for f := 0; f < a.NumField(); f++ {
			m[st.Field(f).Name] = JSONValue(a.Field(f), i)
		}
		return m
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, JSONValue(a.ListValues(), int(j)))
		}
		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, map[string]any{"key": JSONValue(keys, int(j)), "value": JSONValue(items, int(j))})
		}
		return out
	}
	return arr.ValueStr(i)
}

func floatJSON(f float64, bits int) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
}

// FormatTimestamp renders a timestamp value with microsecond precision; utc adds a "Z".
func FormatTimestamp(v int64, unit arrow.TimeUnit, utc bool) string {
	var t time.Time
	switch unit {
	case arrow.Second:
		t = time.Unix(v, 0)
	case arrow.Millisecond:
		t = time.UnixMilli(v)
	case arrow.Microsecond:
		t = time.UnixMicro(v)
	default:
		t = time.Unix(0, v)
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000000")
	if utc {
		s += "Z"
	}
	return s
}

type jsonlWriter struct {
	w      *bufio.Writer
	schema *arrow.Schema
}

func (j *jsonlWriter) Write(rec arrow.RecordBatch) error {
	for r := 0; r < int(rec.NumRows()); r++ {
		// Keys in schema order for stable output.
		j.w.WriteByte('{')
		for c := 0; c < int(rec.NumCols()); c++ {
			if c > 0 {
				j.w.WriteByte(',')
			}
			k, _ := json.Marshal(rec.Schema().Field(c).Name)
			j.w.Write(k)
			j.w.WriteByte(':')
			v, err := json.Marshal(JSONValue(rec.Column(c), r))
			if err != nil {
				return fmt.Errorf("render: column %q row %d: %w", rec.Schema().Field(c).Name, r, err)
			}
			j.w.Write(v)
		}
		j.w.WriteString("}\n")
	}
	return nil
}

func (j *jsonlWriter) Close() error { return j.w.Flush() }

// Abort drops nothing: the buffered text is the caller's to discard.
func (j *jsonlWriter) Abort() {}

// parquetWriter writes one Parquet file with the data-file layer's writer: the
// table files' settings (zstd, row groups of 16 MiB, page index, the Arrow schema in
// the footer), columns encoded in parallel while the scan reads ahead. It never
// closes the caller's writer.
type parquetWriter struct{ w *datafile.Writer }

func newParquetWriter(w io.Writer, schema *arrow.Schema) (Writer, error) {
	fw, err := datafile.NewWriter(w, schema, datafile.WriterOptions{})
	if err != nil {
		return nil, fmt.Errorf("render: parquet: %w", err)
	}
	return &parquetWriter{w: fw}, nil
}

func (p *parquetWriter) Write(rec arrow.RecordBatch) error { return p.w.Write(rec) }

func (p *parquetWriter) Close() error {
	_, err := p.w.Close()
	return err
}

// Abort stops the column encoders and releases the batches held for the dictionary
// sample (datafile.Writer.Abort).
func (p *parquetWriter) Abort() { p.w.Abort() }
