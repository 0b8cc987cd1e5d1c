package input

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/datafile"
)

// Fuzz targets for every input reader. They run as plain tests over their seeds and
// the corpora under testdata/fuzz/, and CI fuzzes each for a bounded number of
// executions (.ci/fuzz). The properties: no input makes a reader panic, and
// inference is consistent with reading: when a schema is inferred from an input, the
// input reads with that schema, every record becoming one row.

// fuzzSchema has a column of every type the text readers convert.
var fuzzSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int16), Nullable: true},
}, nil)

// drain reads every batch of r and returns the row count and the reader's error.
func drain(r array.RecordReader) (int64, error) {
	defer r.Release()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	return n, r.Err()
}

// csvRecords counts the records after the header, as encoding/csv sees them.
func csvRecords(data []byte) int64 {
	br := bufio.NewReader(bytes.NewReader(data))
	stripBOM(br)
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	var n int64 = -1
	for {
		if _, err := cr.Read(); err != nil {
			return n
		}
		n++
	}
}

// jsonlRecords counts the non-blank lines.
func jsonlRecords(data []byte) int64 {
	lr := &lineReader{br: bufio.NewReader(bytes.NewReader(data))}
	var n int64
	for {
		line, err := lr.next()
		if err != nil {
			return n
		}
		if len(bytes.TrimSpace(line)) > 0 {
			n++
		}
	}
}

func FuzzCSVInput(f *testing.F) {
	for _, s := range []string{
		"id,amount\n1,5\n2,5.5\n",
		"i,b,f,d,s,bin,ok,day,ts,ntz,st,arr,m\n1,2,1.5,3.25,x,0x00ff,true,2026-01-01,2026-01-01 10:00:00Z,2026-01-01 10:00,\"{\"\"x\"\":1}\",\"[1.5,null]\",\"{\"\"k\"\":1}\"\n",
		"a,b\n\"q\"\"uote\",\n,NULL\n",
		"a\n007\n1e5\nNaN\n-Infinity\n",
		"t\n2026-01-01\n2026-01-01T00:00:00.5\n2026-01-01 00:00:00+02:00\n",
		"x,y\n1\n",
		"\xef\xbb\xbfa\n1\n",
		"a,a\n1,2\n",
		"a\n\"unterminated\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Reading against a fixed schema: errors are fine, panics are not.
		if r, err := newCSVReader("x.csv", io.NopCloser(bytes.NewReader(data)), fuzzSchema, nil, memory.DefaultAllocator); err == nil {
			drain(r)
		}
		inf := newInference()
		if err := inf.inferCSV("x.csv", bytes.NewReader(data)); err != nil {
			return
		}
		schema, err := inf.schema()
		if err != nil {
			return
		}
		r, err := newCSVReader("x.csv", io.NopCloser(bytes.NewReader(data)), schema, nil, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("inferred %s, but the header does not read: %v", schema, err)
		}
		n, err := drain(r)
		if err != nil {
			t.Fatalf("inferred %s, but the data does not read with it: %v", schema, err)
		}
		if want := csvRecords(data); n != want {
			t.Fatalf("%d rows read, %d records", n, want)
		}
	})
}

func FuzzJSONLInput(f *testing.F) {
	for _, s := range []string{
		`{"id":32,"v":2}` + "\n" + `{"ID":37,"V":3}` + "\n",
		`{"i":1,"b":2,"f":"NaN","d":"3.25","s":"x","bin":"AP8=","ok":true,"day":"2026-01-01","ts":"2026-01-01T10:00:00Z","ntz":"2026-01-01 10:00","st":{"x":1},"arr":[1.5,null],"m":[{"key":"k","value":1}]}` + "\n",
		`{"s":"a","m":{"k":1,"l":null}}` + "\n\n",
		`{"id":1}` + "\n" + `{"id":2,"v":[}` + "\n" + `{"id":3}` + "\n",
		`{"a":1}{"a":2}` + "\n",
		`[1,2]` + "\n",
		`{"a":1,"a":2}` + "\n",
		`{"a":99999999999999999999}` + "\n",
		`{"a":1.5e400}` + "\n",
		`{"a":"` + strings.Repeat("[", 10) + `"}` + "\n",
		strings.Repeat("[", 600) + "\n",
		`{"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00"}`,
		`{"n":[-0,0.5,1e10,-1E-5,123456789012345678901234567890]}`,
		` { "a" : [ true , false , null ] } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkJSONParser(t, data)
		if r, err := newJSONLReader("x.jsonl", io.NopCloser(bytes.NewReader(data)), fuzzSchema, memory.DefaultAllocator); err == nil {
			drain(r)
		}
		inf := newInference()
		if err := inf.inferJSONL("x.jsonl", bytes.NewReader(data)); err != nil {
			return
		}
		schema, err := inf.schema()
		if err != nil {
			return
		}
		r, err := newJSONLReader("x.jsonl", io.NopCloser(bytes.NewReader(data)), schema, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		n, err := drain(r)
		if err != nil {
			t.Fatalf("inferred %s, but the data does not read with it: %v", schema, err)
		}
		if want := jsonlRecords(data); n != want {
			t.Fatalf("%d rows read, %d lines", n, want)
		}
	})
}

// FuzzParquetInput feeds damaged Parquet files to OpenParquet (the CLI's append
// and merge sources): opening and draining one must end in rows or an error, never
// a panic or an unbounded allocation. arrow-go v18.8.0's Parquet reader panics on
// about 1 in 100 random byte mutations of a small file (nil page headers, "invalid
// logical type", makeslice with a corrupt length; the class of apache/arrow#43605);
// OpenParquet reads through internal/datafile, which validates the footer first and
// contains the decoder's panics (datafile invariant D10), so a damaged input is an
// error matching datafile.ErrCorruptData (table.ErrCorruptData). Its seeds and
// testdata/fuzz corpus replay under go test; .ci/fuzz fuzzes it on every CI run.
func FuzzParquetInput(f *testing.F) {
	var buf bytes.Buffer
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 20 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).Append(int32(i))
	}
	rec := b.NewRecordBatch()
	b.Release()
	w, err := pqarrow.NewFileWriter(schema, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		f.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	rec.Release()
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)-9])
	f.Add(append(append([]byte{}, good[:len(good)/2]...), good[len(good)-8:]...))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenParquet(context.Background(), p, Options{})
		if err != nil {
			if !errors.Is(err, datafile.ErrCorruptData) {
				t.Fatalf("a damaged input is not ErrCorruptData: %v", err)
			}
			return
		}
		n, err := drain(r)
		if err != nil && !errors.Is(err, datafile.ErrCorruptData) {
			t.Fatalf("a damaged input fails reading, but not as ErrCorruptData: %v", err)
		}
		if bytes.Equal(data, good) && (err != nil || n != 20) {
			t.Fatalf("the undamaged seed read %d rows (want 20), err %v", n, err)
		}
	})
}

// checkJSONParser compares parseJSON with encoding/json (the oracle) on data taken as
// one value: on valid UTF-8 both accept the same texts and decode them to the same
// values, except that parseJSON refuses duplicate keys and deep nesting.
func checkJSONParser(t *testing.T, data []byte) {
	if !utf8.Valid(data) {
		return
	}
	ours, err := parseJSON(data, nil)
	var theirs any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	jerr := dec.Decode(&theirs)
	if jerr == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			jerr = errors.New("trailing data")
		}
	}
	if err != nil {
		if strings.Contains(err.Error(), "duplicate key") || strings.Contains(err.Error(), "nested deeper") {
			return
		}
		if jerr == nil {
			t.Fatalf("parseJSON refused %q (%v), encoding/json accepts it", data, err)
		}
		return
	}
	if jerr != nil {
		t.Fatalf("parseJSON accepted %q, encoding/json refuses it: %v", data, jerr)
	}
	if !reflect.DeepEqual(plainJSON(ours), theirs) {
		t.Fatalf("%q: parseJSON %#v, encoding/json %#v", data, plainJSON(ours), theirs)
	}
}

// plainJSON turns parseJSON's objects into maps, as encoding/json decodes them.
func plainJSON(v any) any {
	switch x := v.(type) {
	case *jsonObject:
		m := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			m[k] = plainJSON(x.vals[i])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}

// FuzzCSVScanner checks csvScanner against encoding/csv: the same records, the same
// field positions, and an error exactly where encoding/csv has one (same line and
// column). TestCSVScannerQuoted covers what encoding/csv cannot say: quoting.
func FuzzCSVScanner(f *testing.F) {
	for _, s := range []string{
		"a,b\n1,2\n",
		"a,\"\"\n,\"\"\"x\"\"\",NULL\n\"NULL\",\r\n",
		"\"multi\nline\",x\r\ny,\"z\"\r\n\n\nlast",
		"a\"b\n",
		"\"a\"b\n",
		"\"unterminated\n",
		"x,\"\n",
		"\r\n\r\n,\n\r",
		"\"a\r\nb\"\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := csv.NewReader(bytes.NewReader(data))
		want.FieldsPerRecord = -1
		got := newCSVScanner(bufio.NewReaderSize(bytes.NewReader(data), 16)) // a small buffer: long lines too
		for rec := 0; ; rec++ {
			w, werr := want.Read()
			g, gerr := got.Read()
			if werr == io.EOF || gerr == io.EOF {
				if werr != gerr {
					t.Fatalf("record %d: encoding/csv %v, csvScanner %v", rec, werr, gerr)
				}
				return
			}
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("record %d: encoding/csv error %v, csvScanner error %v", rec, werr, gerr)
			}
			if werr != nil {
				var wp, gp *csv.ParseError
				if errors.As(werr, &wp) != errors.As(gerr, &gp) || (wp != nil && (wp.Line != gp.Line || wp.Column != gp.Column || wp.Err != gp.Err)) {
					t.Fatalf("record %d: encoding/csv error %v, csvScanner error %v", rec, werr, gerr)
				}
				return
			}
			if !reflect.DeepEqual(w, g) {
				t.Fatalf("record %d: encoding/csv %q, csvScanner %q", rec, w, g)
			}
			for i := range w {
				wl, wc := want.FieldPos(i)
				gl, gc := got.FieldPos(i)
				if wl != gl || wc != gc {
					t.Fatalf("record %d field %d: encoding/csv at %d:%d, csvScanner at %d:%d", rec, i, wl, wc, gl, gc)
				}
			}
		}
	})
}

func TestCSVScannerQuoted(t *testing.T) {
	in := "a,\"\",,\"NULL\",NULL,\"x\"\"y\"\r\n\"multi\nline\",z\n"
	c := newCSVScanner(bufio.NewReader(strings.NewReader(in)))
	rec, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "", "", "NULL", "NULL", `x"y`}
	quoted := []bool{false, true, false, true, false, true}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("fields %q, want %q", rec, want)
	}
	for i, q := range quoted {
		if c.Quoted(i) != q {
			t.Errorf("field %d (%q): quoted %v, want %v", i, rec[i], c.Quoted(i), q)
		}
	}
	rec, err = c.Read()
	if err != nil || !reflect.DeepEqual(rec, []string{"multi\nline", "z"}) || !c.Quoted(0) || c.Quoted(1) {
		t.Fatalf("second record %q, %v", rec, err)
	}
	if _, err := c.Read(); err != io.EOF {
		t.Fatalf("after the last record: %v, want io.EOF", err)
	}
}
