package stats

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/value"
)

func dec(t testing.TB, s string, p, sc int32) value.Value {
	t.Helper()
	n, err := decimal128.FromString(s, p, sc)
	if err != nil {
		t.Fatal(err)
	}
	return value.Decimal(n, p, sc)
}

const msUS = 1000

func TestParseDialects(t *testing.T) {
	d52 := &arrow.Decimal128Type{Precision: 5, Scale: 2}
	d2010 := &arrow.Decimal128Type{Precision: 20, Scale: 10}
	d41 := &arrow.Decimal128Type{Precision: 4, Scale: 1}
	widened := arrow.Field{Name: "fd", Type: arrow.PrimitiveTypes.Float64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"delta.typeChanges"}, []string{`[{"toType":"double","fromType":"float","tableVersion":2}]`})}
	schema := arrow.NewSchema([]arrow.Field{
		f("i", arrow.PrimitiveTypes.Int32), f("l", arrow.PrimitiveTypes.Int64),
		f("f", arrow.PrimitiveTypes.Float32), f("d", arrow.PrimitiveTypes.Float64),
		f("dec", d52), f("big", d2010), f("w", d41),
		f("s", arrow.BinaryTypes.String), f("dt", arrow.FixedWidthTypes.Date32),
		f("ts", tsUTC), f("ntz", tsNTZ), f("b", arrow.FixedWidthTypes.Boolean),
		f("st", arrow.StructOf(f("x", arrow.PrimitiveTypes.Int64))),
		f("lst", arrow.ListOf(arrow.PrimitiveTypes.Int32)), widened,
	}, nil)
	const ts2000 = int64(946684800000000) // 2000-01-01T00:00:00Z
	long32 := strings.Repeat("x", 32)
	type exp struct {
		col      string
		min, max value.Value
		nc       int64 // -1: no null count
	}
	cases := []struct {
		name string
		in   string
		want []exp
		n    int64
		tb   bool
	}{
		{"spark timestamp with session offset", `{"numRecords":1,"minValues":{"ts":"2000-01-01T00:00:00.000-08:00"},"maxValues":{"ts":"2000-01-01T00:00:00.000-08:00"},"nullCount":{"ts":0}}`,
			[]exp{{"ts", value.Timestamp(ts2000 + 8*3600e6), value.Timestamp(ts2000 + 8*3600e6 + msUS), 0}}, 1, true},
		{"kernel UTC Z, max widened by 1ms", `{"numRecords":3,"minValues":{"ts":"2000-01-01T00:00:00.123Z"},"maxValues":{"ts":"2000-01-01T00:00:00.123Z"}}`,
			[]exp{{"ts", value.Timestamp(ts2000 + 123000), value.Timestamp(ts2000 + 124000), -1}}, 3, true},
		{"delta-rs microseconds", `{"numRecords":1,"minValues":{"ts":"2000-01-01T00:00:00.123456Z"},"maxValues":{"ts":"2000-01-01T00:00:00.123456Z"}}`,
			[]exp{{"ts", value.Timestamp(ts2000 + 123456), value.Timestamp(ts2000 + 124456), -1}}, 1, true},
		{"nanosecond max rounds up before widening", `{"maxValues":{"ts":"2000-01-01T00:00:00.0000001Z"},"minValues":{"ts":"2000-01-01T00:00:00.0000009Z"}}`,
			[]exp{{"ts", value.Timestamp(ts2000), value.Timestamp(ts2000 + 1 + msUS), -1}}, -1, true},
		{"zoneless text for a zoned timestamp is unknown", `{"minValues":{"ts":"2000-01-01T00:00:00.000"}}`,
			[]exp{{"ts", value.Null(), value.Null(), -1}}, -1, true},
		{"ntz zoneless and date-only (type widening)", `{"minValues":{"ntz":"2024-09-09"},"maxValues":{"ntz":"2024-09-09T12:34:56.123"}}`,
			[]exp{{"ntz", value.TimestampNTZ(1725840000000000), value.TimestampNTZ(1725885296123000 + msUS), -1}}, -1, true},
		{"ntz with a non-zero offset is unknown", `{"minValues":{"ntz":"2024-09-09T00:00:00+01:00"}}`,
			[]exp{{"ntz", value.Null(), value.Null(), -1}}, -1, true},
		{"integers as floats and strings", `{"minValues":{"i":1.0,"l":"-5"},"maxValues":{"i":1e2,"l":1.5}}`,
			[]exp{{"i", value.Int64(1), value.Int64(100), -1}, {"l", value.Int64(-5), value.Null(), -1}}, -1, true},
		{"int64 extremes exact", `{"minValues":{"l":-9223372036854775808},"maxValues":{"l":9223372036854775807}}`,
			[]exp{{"l", value.Int64(math.MinInt64), value.Int64(math.MaxInt64), -1}}, -1, true},
		{"int64 overflow is unknown", `{"maxValues":{"l":9223372036854775808}}`,
			[]exp{{"l", value.Null(), value.Null(), -1}}, -1, true},
		{"float strings NaN and Infinity", `{"minValues":{"d":"-Infinity","f":"NaN"},"maxValues":{"d":"Infinity","f":"NaN"}}`,
			[]exp{{"d", value.Float64(math.Inf(-1)), value.Float64(math.Inf(1)), -1}, {"f", value.Float64(math.NaN()), value.Float64(math.NaN()), -1}}, -1, true},
		{"float32 bounds read at float32 precision", `{"minValues":{"f":3.4},"maxValues":{"f":3.4000000953674316}}`,
			[]exp{{"f", value.Float64(float64(float32(3.4))), value.Float64(float64(float32(3.4))), -1}}, -1, true},
		{"float widened from float keeps both readings", `{"minValues":{"fd":3.4},"maxValues":{"fd":3.4}}`,
			[]exp{{"fd", value.Float64(3.4), value.Float64(float64(float32(3.4))), -1}}, -1, true},
		{"decimals as numbers, strings and exponents", `{"minValues":{"dec":-999.99,"big":0E-10},"maxValues":{"dec":"1.5","big":"3.0000000000"}}`,
			[]exp{{"dec", dec(t, "-999.99", 5, 2), dec(t, "1.50", 5, 2), -1}, {"big", dec(t, "0", 20, 10), dec(t, "3", 20, 10), -1}}, -1, true},
		{"decimal needing rounding is unknown", `{"minValues":{"dec":1.234}}`,
			[]exp{{"dec", value.Null(), value.Null(), -1}}, -1, true},
		{"type-widened int stats read as decimal", `{"minValues":{"w":1},"maxValues":{"w":123.4}}`,
			[]exp{{"w", dec(t, "1.0", 4, 1), dec(t, "123.4", 4, 1), -1}}, -1, true},
		{"short string max kept, long one extended", `{"minValues":{"s":"` + long32 + `"},"maxValues":{"s":"` + long32 + `"}}`,
			[]exp{{"s", value.String(long32), value.String(long32 + "\U0010FFFF"), -1}}, -1, true},
		{"string max with tie-breaker kept", `{"maxValues":{"s":"` + long32 + `\u007f"}}`,
			[]exp{{"s", value.Null(), value.String(long32 + "\x7f"), -1}}, -1, true},
		{"string escapes decoded", `{"minValues":{"s":"a\"\\\u00e9\ud83d\ude00"}}`,
			[]exp{{"s", value.String("a\"\\é😀"), value.Null(), -1}}, -1, true},
		{"date", `{"minValues":{"dt":"1969-12-31"},"maxValues":{"dt":"2021-11-18"}}`,
			[]exp{{"dt", value.Date(-1), value.Date(18949), -1}}, -1, true},
		{"bad date is unknown", `{"minValues":{"dt":"2021-02-30"},"maxValues":{"dt":7}}`,
			[]exp{{"dt", value.Null(), value.Null(), -1}}, -1, true},
		{"boolean bounds ignored, nullCount kept", `{"minValues":{"b":false},"nullCount":{"b":2}}`,
			[]exp{{"b", value.Null(), value.Null(), 2}}, -1, true},
		{"nested struct and list nullCount", `{"minValues":{"st":{"x":4}},"nullCount":{"st":{"x":1},"lst":3}}`,
			[]exp{{"st\x00x", value.Int64(4), value.Null(), 1}, {"lst", value.Null(), value.Null(), 3}}, -1, true},
		{"unknown columns and keys ignored, case-insensitive match", `{"numRecords":2,"foo":[1,{"a":null}],"minValues":{"zz":1,"I":7,"st":5},"tightBounds":false}`,
			[]exp{{"i", value.Int64(7), value.Null(), -1}}, 2, false},
		{"wrong JSON types leave bounds unknown", `{"minValues":{"i":"x","s":5,"ts":1},"nullCount":{"i":-1,"s":1.5}}`,
			[]exp{{"i", value.Null(), value.Null(), -1}, {"s", value.Null(), value.Null(), -1}}, -1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in, schema)
			if err != nil {
				t.Fatal(err)
			}
			if got.NumRecords != tc.n || got.TightBounds != tc.tb {
				t.Errorf("NumRecords, TightBounds = %d, %v; want %d, %v", got.NumRecords, got.TightBounds, tc.n, tc.tb)
			}
			for _, e := range tc.want {
				c := got.Columns[e.col]
				if c == nil {
					t.Fatalf("column %q missing", e.col)
				}
				if !sameValue(c.Min, e.min) || !sameValue(c.Max, e.max) {
					t.Errorf("%s: [%v, %v], want [%v, %v]", e.col, c.Min, c.Max, e.min, e.max)
				}
				if (e.nc >= 0) != c.HasNullCount || (e.nc >= 0 && c.NullCount != e.nc) {
					t.Errorf("%s: nullCount %d (has %v), want %d", e.col, c.NullCount, c.HasNullCount, e.nc)
				}
			}
		})
	}
}

// sameValue is identity with NaN equal to NaN and the kind checked.
func sameValue(a, b value.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	if a.Kind() == value.KindDecimal {
		x, _, s1 := a.AsDecimal()
		y, _, s2 := b.AsDecimal()
		return x == y && s1 == s2
	}
	return value.Equal(a, b)
}

func TestParseSyntaxErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{f("a", arrow.PrimitiveTypes.Int64)}, nil)
	for _, in := range []string{``, `[]`, `{"numRecords":1`, `{"a":}`, `{"minValues":{"a":01}}`, `{"a":1,}`, `{"a":"x` + "\n" + `"}`, `{} x`, `{"a":tru}`, `{"a":"\x"}`, `{"a":NaN}`} {
		_, err := Parse(in, schema)
		var se *SyntaxError
		if !errors.Is(err, ErrSyntax) || !errors.As(err, &se) {
			t.Errorf("Parse(%q) err = %v, want a SyntaxError", in, err)
		}
	}
}

func TestParseNumRecords(t *testing.T) {
	cases := []struct {
		in   string
		n    int64
		ok   bool
		name string
	}{
		{`{"numRecords":42,"minValues":{}}`, 42, true, "first key"},
		{`{"minValues":{"numRecords":7},"numRecords":3}`, 3, true, "nested key of same name ignored"},
		{`{"numRecords":-1}`, 0, false, "negative rejected"},
		{`{"numRecords":"5"}`, 0, false, "string rejected"},
		{`{"minValues":{}}`, 0, false, "absent"},
		{`garbage`, 0, false, "not JSON"},
		{`{"numRecords":1.0}`, 1, true, "integral float"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := ParseNumRecords(tc.in)
			if n != tc.n || ok != tc.ok {
				t.Errorf("ParseNumRecords(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
			}
		})
	}
}

// goldenSchema converts a Delta schemaString to the physical Arrow schema (enough
// of it for the tables used here: primitives, decimals, structs; arrays and maps
// as lists/maps of int32 placeholders since only their nullCount matters).
func goldenSchema(t *testing.T, schemaString string) *arrow.Schema {
	t.Helper()
	var st struct {
		Fields []json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal([]byte(schemaString), &st); err != nil {
		t.Fatal(err)
	}
	return arrow.NewSchema(goldenFields(t, st.Fields), nil)
}

func goldenFields(t *testing.T, raw []json.RawMessage) []arrow.Field {
	var out []arrow.Field
	for _, r := range raw {
		var fd struct {
			Name     string                     `json:"name"`
			Type     json.RawMessage            `json:"type"`
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(r, &fd); err != nil {
			t.Fatal(err)
		}
		name := fd.Name
		if pn, ok := fd.Metadata["delta.columnMapping.physicalName"]; ok {
			_ = json.Unmarshal(pn, &name)
		}
		fl := arrow.Field{Name: name, Type: goldenType(t, fd.Type), Nullable: true}
		if tc, ok := fd.Metadata["delta.typeChanges"]; ok {
			fl.Metadata = arrow.NewMetadata([]string{"delta.typeChanges"}, []string{string(tc)})
		}
		out = append(out, fl)
	}
	return out
}

func goldenType(t *testing.T, raw json.RawMessage) arrow.DataType {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch {
		case s == "byte":
			return arrow.PrimitiveTypes.Int8
		case s == "short":
			return arrow.PrimitiveTypes.Int16
		case s == "integer":
			return arrow.PrimitiveTypes.Int32
		case s == "long":
			return arrow.PrimitiveTypes.Int64
		case s == "float":
			return arrow.PrimitiveTypes.Float32
		case s == "double":
			return arrow.PrimitiveTypes.Float64
		case s == "string":
			return arrow.BinaryTypes.String
		case s == "binary":
			return arrow.BinaryTypes.Binary
		case s == "boolean":
			return arrow.FixedWidthTypes.Boolean
		case s == "date":
			return arrow.FixedWidthTypes.Date32
		case s == "timestamp":
			return tsUTC
		case s == "timestamp_ntz":
			return tsNTZ
		case strings.HasPrefix(s, "decimal("):
			var p, sc int32
			if _, err := fmtSscanf(s, &p, &sc); err != nil {
				t.Fatalf("bad decimal %q", s)
			}
			return &arrow.Decimal128Type{Precision: p, Scale: sc}
		}
		t.Fatalf("unhandled type %q", s)
	}
	var cx struct {
		Type   string            `json:"type"`
		Fields []json.RawMessage `json:"fields"`
	}
	_ = json.Unmarshal(raw, &cx)
	switch cx.Type {
	case "struct":
		return arrow.StructOf(goldenFields(t, cx.Fields)...)
	case "array":
		return arrow.ListOf(arrow.PrimitiveTypes.Int32)
	case "map":
		return arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int32)
	}
	t.Fatalf("unhandled complex type %s", raw)
	return nil
}

// TestParseGolden reads every stats line of real tables written by Spark, Kernel and
// delta-rs, parses it against the table schema and checks it against a generic
// decode: every section value that is present comes back non-NULL (these writers
// only write well-typed values), timestamps are widened, and nullCounts match.
func TestParseGolden(t *testing.T) {
	g := goldenDir(t)
	tables := []string{
		"delta-golden/data-skipping-basic-stats-all-types",
		"delta-golden/basic-decimal-table",
		"delta-golden/data-reader-timestamp_ntz",
		"delta-golden/table-with-columnmapping-mode-name",
		"delta-golden/kernel-timestamp-int96",
		"delta-rs/table_with_edge_timestamps",
		"delta-kernel-rs/table-with-dv-small",
		"delta-kernel-rs/type-widening",
		"dat/basic_append",
		"dat/basic_partitioned",
		"dat/with_schema_change",
	}
	total := 0
	for _, tbl := range tables {
		t.Run(tbl, func(t *testing.T) {
			logs, _ := filepath.Glob(filepath.Join(g, tbl, "delta", "_delta_log", "*.json"))
			if len(logs) == 0 {
				t.Skipf("no commit files for %s", tbl)
			}
			var schema *arrow.Schema
			for _, lf := range logs {
				fh, err := os.Open(lf)
				if err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(fh)
				sc.Buffer(make([]byte, 1<<20), 1<<24)
				for sc.Scan() {
					var a struct {
						MetaData *struct {
							SchemaString string `json:"schemaString"`
						} `json:"metaData"`
						Add *struct {
							Stats string `json:"stats"`
						} `json:"add"`
					}
					if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
						t.Fatal(err)
					}
					if a.MetaData != nil {
						schema = goldenSchema(t, a.MetaData.SchemaString)
					}
					if a.Add == nil || a.Add.Stats == "" || schema == nil {
						continue
					}
					total++
					checkGoldenStats(t, a.Add.Stats, schema)
				}
				fh.Close()
			}
		})
	}
	t.Logf("checked %d golden stats lines", total)
}

func checkGoldenStats(t *testing.T, stats string, schema *arrow.Schema) {
	t.Helper()
	fs, err := Parse(stats, schema)
	if err != nil {
		t.Fatalf("Parse(%s): %v", stats, err)
	}
	var generic map[string]any
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		t.Fatal(err)
	}
	if n, ok := generic["numRecords"].(json.Number); ok {
		if want, _ := n.Int64(); fs.NumRecords != want {
			t.Errorf("numRecords %d, want %d", fs.NumRecords, want)
		}
	}
	leafType := map[string]arrow.DataType{}
	var walk func(fields []arrow.Field, path []string)
	walk = func(fields []arrow.Field, path []string) {
		for _, fl := range fields {
			p := append(append([]string(nil), path...), fl.Name)
			if st, ok := fl.Type.(*arrow.StructType); ok {
				walk(st.Fields(), p)
				continue
			}
			leafType[Key(p...)] = fl.Type
		}
	}
	walk(schema.Fields(), nil)
	var visit func(sec string, m map[string]any, path []string)
	visit = func(sec string, m map[string]any, path []string) {
		for k, v := range m {
			p := append(append([]string(nil), path...), k)
			if sub, ok := v.(map[string]any); ok {
				visit(sec, sub, p)
				continue
			}
			key := Key(p...)
			typ, known := leafType[key]
			if !known || v == nil {
				continue
			}
			col := fs.Columns[key]
			if col == nil {
				t.Errorf("%s: column %v missing", stats, p)
				continue
			}
			switch sec {
			case "nullCount":
				want, _ := v.(json.Number).Int64()
				if !col.HasNullCount || col.NullCount != want {
					t.Errorf("%v nullCount = %d, want %d", p, col.NullCount, want)
				}
			case "minValues", "maxValues":
				b := col.Min
				if sec == "maxValues" {
					b = col.Max
				}
				if b.IsNull() {
					t.Errorf("%s %v (%s) = %v parsed as NULL", sec, p, typ, v)
				}
				if ts, ok := typ.(*arrow.TimestampType); ok && sec == "maxValues" && !col.Min.IsNull() {
					_ = ts
					if c, _ := value.Compare(col.Max, col.Min); c <= 0 {
						t.Errorf("%v timestamp max %v not above min %v", p, col.Max, col.Min)
					}
				}
			}
		}
	}
	for _, sec := range []string{"minValues", "maxValues", "nullCount"} {
		if m, ok := generic[sec].(map[string]any); ok {
			visit(sec, m, nil)
		}
	}
}

// TestParseGoldenTypeWidening parses the stats written before a table's types were
// widened (byte→long/double/decimal, float→double, date→timestamp_ntz, decimal scale
// increase) against the widened schema: every bound must come back in the new type.
func TestParseGoldenTypeWidening(t *testing.T) {
	g := goldenDir(t)
	logs, _ := filepath.Glob(filepath.Join(g, "delta-kernel-rs/type-widening/delta/_delta_log/*.json"))
	if len(logs) == 0 {
		t.Skip("type-widening table absent")
	}
	var schema *arrow.Schema
	var stats []string
	for _, lf := range logs {
		data, err := os.ReadFile(lf)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var a struct {
				MetaData *struct{ SchemaString string } `json:"metaData"`
				Add      *struct{ Stats string }        `json:"add"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			if a.MetaData != nil {
				schema = goldenSchema(t, a.MetaData.SchemaString)
			}
			if a.Add != nil && a.Add.Stats != "" {
				stats = append(stats, a.Add.Stats)
			}
		}
	}
	if len(stats) < 2 {
		t.Fatalf("expected stats before and after widening, got %d", len(stats))
	}
	old, err := Parse(stats[0], schema)
	if err != nil {
		t.Fatal(err)
	}
	for key, col := range old.Columns {
		if col.Min.IsNull() || col.Max.IsNull() {
			t.Errorf("pre-widening stats of %q did not parse in the widened type: [%v, %v]", key, col.Min, col.Max)
		}
	}
	if got := old.Column("byte_decimal").Min; !sameValue(got, dec(t, "1.0", 4, 1)) {
		t.Errorf("byte_decimal min = %v, want 1.0", got)
	}
	if got := old.Column("date_timestamp_ntz").Min; !sameValue(got, value.TimestampNTZ(1725840000000000)) {
		t.Errorf("date_timestamp_ntz min = %v", got)
	}
	if mn, mx := old.Column("float_double").Min.AsFloat64(), old.Column("float_double").Max.AsFloat64(); mn > float64(float32(3.4)) || mx < float64(float32(3.4)) {
		t.Errorf("float_double bounds [%v, %v] do not contain float32(3.4)", mn, mx)
	}
}

// TestParseConcurrent parses with several goroutines and alternating schemas, so
// -race checks the shared plan cache and the immutable Parser.
func TestParseConcurrent(t *testing.T) {
	s1 := arrow.NewSchema([]arrow.Field{f("a", arrow.PrimitiveTypes.Int64)}, nil)
	s2 := arrow.NewSchema([]arrow.Field{f("a", arrow.BinaryTypes.String)}, nil)
	p := NewParser(s1, ParseOptions{})
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for i := 0; i < 200; i++ {
				sch, in, want := s1, `{"minValues":{"a":5}}`, value.Int64(5)
				if (g+i)%2 == 1 {
					sch, in, want = s2, `{"minValues":{"a":"q"}}`, value.String("q")
				}
				got, err := Parse(in, sch)
				if err != nil {
					done <- err
					return
				}
				if !sameValue(got.Column("a").Min, want) {
					done <- errors.New("wrong value under concurrency: " + got.Column("a").Min.String())
					return
				}
				if pf, err := p.Parse(`{"maxValues":{"a":1}}`); err != nil || pf.Column("a").Max.AsInt64() != 1 {
					done <- errors.New("Parser.Parse failed under concurrency")
					return
				}
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestFindNodeFolding checks the key lookup against the plain rule (an exact match
// first, else the first name equal under Unicode case folding), including the
// non-ASCII folds of ASCII letters (U+212A KELVIN SIGN, U+017F LONG S) that change
// a name's byte length.
func TestFindNodeFolding(t *testing.T) {
	names := []string{"k", "s", "Id", "id", "amount", "ſtart", "KELVIN", "é", "É"}
	var nodes []*pnode
	for _, n := range names {
		nodes = append(nodes, &pnode{name: n, ascii: isASCII(n)})
	}
	oracle := func(key string) *pnode {
		for _, n := range nodes {
			if n.name == key {
				return n
			}
		}
		for _, n := range nodes {
			if strings.EqualFold(n.name, key) {
				return n
			}
		}
		return nil
	}
	keys := []string{"k", "K", "\u212a", "s", "S", "\u017f", "ID", "iD", "id", "Amount", "AMOUNTS", "start",
		"START", "\u212aelvin", "kelvin", "é", "É", "e", "", "x", "amoun"}
	for _, k := range keys {
		if got, want := findNode(nodes, k), oracle(k); got != want {
			t.Errorf("findNode(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestParseAllocations bounds what Parse allocates for a stats line without
// escapes: the columns, the File and its map (no per-leaf scratch on the heap).
func TestParseAllocations(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "note", Type: arrow.BinaryTypes.String}, {Name: "day", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	in := `{"numRecords":1000,"minValues":{"id":0,"amount":1.5,"note":"n0000001","day":"2021-01-02"},` +
		`"maxValues":{"id":999,"amount":101.5,"note":"n0000051","day":"2021-01-02"},"nullCount":{"id":0,"amount":0,"note":3,"day":0}}`
	p := NewParser(sch, ParseOptions{})
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := p.Parse(in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Fatalf("Parse allocated %v times per call, want at most 4", allocs)
	}
}

// TestParseManyLeaves checks Parse past 64 leaves (where it tracks mentioned
// columns in a slice, not a bit mask): exactly the mentioned leaves get a Column.
func TestParseManyLeaves(t *testing.T) {
	var fields []arrow.Field
	for i := range 70 {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64})
	}
	p := NewParser(arrow.NewSchema(fields, nil), ParseOptions{})
	f, err := p.Parse(`{"minValues":{"c0":1,"c63":2,"c64":3},"nullCount":{"c69":4}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"c0": 1, "c63": 2, "c64": 3}
	if len(f.Columns) != 4 || f.Column("c69") == nil || f.Column("c69").NullCount != 4 {
		t.Fatalf("columns %v", f.Columns)
	}
	for k, v := range want {
		if c := f.Column(k); c == nil || c.Min.AsInt64() != v {
			t.Fatalf("column %s = %+v, want min %d", k, c, v)
		}
	}
}
