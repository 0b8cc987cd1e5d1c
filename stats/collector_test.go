package stats

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

func f(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

var tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
var tsNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}

func TestCollectorJSON(t *testing.T) {
	long := strings.Repeat("a", 40)
	cases := []struct {
		name   string
		fields []arrow.Field
		rows   string
		parts  []string
		cfg    Config
		want   string
	}{
		{
			name:   "integers of every width widen to one number",
			fields: []arrow.Field{f("b", arrow.PrimitiveTypes.Int8), f("s", arrow.PrimitiveTypes.Int16), f("i", arrow.PrimitiveTypes.Int32), f("l", arrow.PrimitiveTypes.Int64)},
			rows:   `[{"b":-128,"s":5,"i":-7,"l":9223372036854775807},{"b":127,"s":null,"i":3,"l":-9223372036854775808}]`,
			want:   `{"numRecords":2,"minValues":{"b":-128,"s":5,"i":-7,"l":-9223372036854775808},"maxValues":{"b":127,"s":5,"i":3,"l":9223372036854775807},"nullCount":{"b":0,"s":1,"i":0,"l":0}}`,
		},
		{
			name:   "all-null column has nullCount only",
			fields: []arrow.Field{f("x", arrow.PrimitiveTypes.Int64), f("y", arrow.BinaryTypes.String)},
			rows:   `[{"x":null,"y":"q"},{"x":null,"y":null}]`,
			want:   `{"numRecords":2,"minValues":{"y":"q"},"maxValues":{"y":"q"},"nullCount":{"x":2,"y":1}}`,
		},
		{
			name:   "floats and doubles use shortest text with .0",
			fields: []arrow.Field{f("f", arrow.PrimitiveTypes.Float32), f("d", arrow.PrimitiveTypes.Float64)},
			rows:   `[{"f":3.4,"d":1},{"f":-1.5,"d":2.25}]`,
			want:   `{"numRecords":2,"minValues":{"f":-1.5,"d":1.0},"maxValues":{"f":3.4,"d":2.25},"nullCount":{"f":0,"d":0}}`,
		},
		{
			name:   "decimals keep exact scale, negative and p=38",
			fields: []arrow.Field{f("a", &arrow.Decimal128Type{Precision: 5, Scale: 2}), f("b", &arrow.Decimal128Type{Precision: 38, Scale: 10})},
			rows:   `[{"a":"-999.99","b":"9999999999999999999999999999.9999999999"},{"a":"0.5","b":"-0.0000000001"}]`,
			want:   `{"numRecords":2,"minValues":{"a":-999.99,"b":-0.0000000001},"maxValues":{"a":0.50,"b":9999999999999999999999999999.9999999999},"nullCount":{"a":0,"b":0}}`,
		},
		{
			name:   "dates render as yyyy-mm-dd",
			fields: []arrow.Field{f("d", arrow.FixedWidthTypes.Date32)},
			rows:   `[{"d":"1969-12-31"},{"d":"2024-02-29"}]`,
			want:   `{"numRecords":2,"minValues":{"d":"1969-12-31"},"maxValues":{"d":"2024-02-29"},"nullCount":{"d":0}}`,
		},
		{
			name:   "string min is the prefix and max gets U+007F tie-breaker",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"` + long + `"},{"s":"` + long + `b"}]`,
			cfg:    Config{StringPrefixLength: 32},
			want:   `{"numRecords":2,"minValues":{"s":"` + long[:32] + `"},"maxValues":{"s":"` + long[:32] + "\u007f" + `"},"nullCount":{"s":0}}`,
		},
		{
			name:   "string max takes U+10FFFF when next char is at or above U+007F",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"abcé123"}]`,
			cfg:    Config{StringPrefixLength: 3},
			want:   `{"numRecords":1,"minValues":{"s":"abc"},"maxValues":{"s":"abc` + "\U0010FFFF" + `"},"nullCount":{"s":0}}`,
		},
		{
			name:   "prefix counts code points not bytes",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"日本語テキスト"}]`,
			cfg:    Config{StringPrefixLength: 3},
			want:   `{"numRecords":1,"minValues":{"s":"日本語"},"maxValues":{"s":"日本語` + "\U0010FFFF" + `"},"nullCount":{"s":0}}`,
		},
		{
			name:   "string of exactly prefix length is kept whole",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"abc"},{"s":"ab"}]`,
			cfg:    Config{StringPrefixLength: 3},
			want:   `{"numRecords":2,"minValues":{"s":"ab"},"maxValues":{"s":"abc"},"nullCount":{"s":0}}`,
		},
		{
			name:   "U+10FFFF run after the prefix extends the cut",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"ab` + "\U0010FFFF\U0010FFFF" + `cd"}]`,
			cfg:    Config{StringPrefixLength: 2},
			want:   `{"numRecords":1,"minValues":{"s":"ab"},"maxValues":{"s":"ab` + "\U0010FFFF\U0010FFFF\u007f" + `"},"nullCount":{"s":0}}`,
		},
		{
			name:   "max omitted when no bound fits within 2x prefix",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"` + strings.Repeat("\U0010FFFF", 6) + `"}]`,
			cfg:    Config{StringPrefixLength: 2},
			want:   `{"numRecords":1,"minValues":{"s":"` + strings.Repeat("\U0010FFFF", 2) + `"},"nullCount":{"s":0}}`,
		},
		{
			name:   "NoStringBounds (property 0) writes no string min or max, as Spark",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String), f("x", arrow.PrimitiveTypes.Int64)},
			rows:   `[{"s":"abc","x":1},{"s":null,"x":2}]`,
			cfg:    Config{StringPrefixLength: NoStringBounds},
			want:   `{"numRecords":2,"minValues":{"x":1},"maxValues":{"x":2},"nullCount":{"s":1,"x":0}}`,
		},
		{
			name:   "string escapes are JSON-escaped",
			fields: []arrow.Field{f("s", arrow.BinaryTypes.String)},
			rows:   `[{"s":"a\"b\\c\n\u0001"}]`,
			want:   `{"numRecords":1,"minValues":{"s":"a\"b\\c\n\u0001"},"maxValues":{"s":"a\"b\\c\n\u0001"},"nullCount":{"s":0}}`,
		},
		{
			name:   "boolean and binary get nullCount only",
			fields: []arrow.Field{f("b", arrow.FixedWidthTypes.Boolean), f("y", arrow.BinaryTypes.Binary)},
			rows:   `[{"b":true,"y":"AQI="},{"b":null,"y":null}]`,
			want:   `{"numRecords":2,"nullCount":{"b":1,"y":1}}`,
		},
		{
			name: "nested struct recurses and a null parent nulls its leaves",
			fields: []arrow.Field{f("id", arrow.PrimitiveTypes.Int64), f("s", arrow.StructOf(
				f("x", arrow.PrimitiveTypes.Int32), f("t", arrow.StructOf(f("y", arrow.BinaryTypes.String)))))},
			rows: `[{"id":1,"s":{"x":5,"t":{"y":"k"}}},{"id":2,"s":null},{"id":3,"s":{"x":null,"t":null}},{"id":4,"s":{"x":-2,"t":{"y":"a"}}}]`,
			want: `{"numRecords":4,"minValues":{"id":1,"s":{"x":-2,"t":{"y":"a"}}},"maxValues":{"id":4,"s":{"x":5,"t":{"y":"k"}}},"nullCount":{"id":0,"s":{"x":2,"t":{"y":2}}}}`,
		},
		{
			name:   "lists and maps get nullCount of null lists only",
			fields: []arrow.Field{f("l", arrow.ListOf(arrow.PrimitiveTypes.Int32)), f("m", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)), f("z", arrow.PrimitiveTypes.Int32)},
			rows:   `[{"l":[1,null],"m":[{"key":"a","value":1}],"z":1},{"l":null,"m":null,"z":2},{"l":[],"m":[],"z":3}]`,
			want:   `{"numRecords":3,"minValues":{"z":1},"maxValues":{"z":3},"nullCount":{"l":1,"m":1,"z":0}}`,
		},
		{
			name:   "partition columns are excluded and not counted",
			fields: []arrow.Field{f("p", arrow.PrimitiveTypes.Int32), f("a", arrow.PrimitiveTypes.Int32), f("b", arrow.PrimitiveTypes.Int32)},
			rows:   `[{"p":1,"a":2,"b":3}]`,
			parts:  []string{"P"},
			cfg:    Config{NumIndexedCols: 1},
			want:   `{"numRecords":1,"minValues":{"a":2},"maxValues":{"a":2},"nullCount":{"a":0}}`,
		},
		{
			name: "NumIndexedCols counts leaves inside structs",
			fields: []arrow.Field{f("a", arrow.PrimitiveTypes.Int32), f("s", arrow.StructOf(
				f("x", arrow.PrimitiveTypes.Int32), f("y", arrow.PrimitiveTypes.Int32))), f("b", arrow.PrimitiveTypes.Int32)},
			rows: `[{"a":1,"s":{"x":2,"y":3},"b":4}]`,
			cfg:  Config{NumIndexedCols: 2},
			want: `{"numRecords":1,"minValues":{"a":1,"s":{"x":2}},"maxValues":{"a":1,"s":{"x":2}},"nullCount":{"a":0,"s":{"x":0}}}`,
		},
		{
			name:   "IndexNoColumns writes numRecords only",
			fields: []arrow.Field{f("a", arrow.PrimitiveTypes.Int32)},
			rows:   `[{"a":1}]`,
			cfg:    Config{NumIndexedCols: IndexNoColumns},
			want:   `{"numRecords":1}`,
		},
		{
			name: "StatsColumns takes precedence, is case-insensitive, struct selects leaves",
			fields: []arrow.Field{f("a", arrow.PrimitiveTypes.Int32), f("s", arrow.StructOf(
				f("x.y", arrow.PrimitiveTypes.Int32), f("z", arrow.PrimitiveTypes.Int32))), f("b", arrow.PrimitiveTypes.Int32), f("c", arrow.StructOf(f("d", arrow.PrimitiveTypes.Int32)))},
			rows: `[{"a":1,"s":{"x.y":2,"z":3},"b":4,"c":{"d":5}}]`,
			cfg:  Config{NumIndexedCols: 1, StatsColumns: []string{"B", "s.`x.y`", "C"}},
			want: `{"numRecords":1,"minValues":{"s":{"x.y":2},"b":4,"c":{"d":5}},"maxValues":{"s":{"x.y":2},"b":4,"c":{"d":5}},"nullCount":{"s":{"x.y":0},"b":0,"c":{"d":0}}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			schema := arrow.NewSchema(tc.fields, nil)
			rec := buildRecord(t, mem, schema, tc.rows)
			defer rec.Release()
			c, err := NewCollector(schema, tc.parts, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Update(rec); err != nil {
				t.Fatal(err)
			}
			got, err := c.ToJSON()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			// The JSON must parse back to bounds consistent with the typed result.
			if _, err := Parse(got, schema); err != nil {
				t.Errorf("Parse of own output: %v", err)
			}
		})
	}
}

func TestCollectorFloatEdgeCases(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name     string
		vals     []float64
		valid    []bool
		want     string
		min, max float64 // typed Result; NaN compared by IsNaN
	}{
		{"NaN keeps min, max is NaN in Result and omitted in JSON", []float64{1, nan, -2}, nil,
			`{"numRecords":3,"minValues":{"d":-2.0},"nullCount":{"d":0}}`, -2, nan},
		{"all NaN gives NaN bounds, both omitted", []float64{nan, nan}, nil,
			`{"numRecords":2,"nullCount":{"d":0}}`, nan, nan},
		{"-0.0 is treated as 0.0", []float64{math.Copysign(0, -1), 3}, nil,
			`{"numRecords":2,"minValues":{"d":0.0},"maxValues":{"d":3.0},"nullCount":{"d":0}}`, 0, 3},
		{"infinite bounds are omitted in JSON", []float64{math.Inf(-1), 1, math.Inf(1)}, nil,
			`{"numRecords":3,"nullCount":{"d":0}}`, math.Inf(-1), math.Inf(1)},
		{"nulls are skipped", []float64{100, 2, 5}, []bool{false, true, true},
			`{"numRecords":3,"minValues":{"d":2.0},"maxValues":{"d":5.0},"nullCount":{"d":1}}`, 2, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			schema := arrow.NewSchema([]arrow.Field{f("d", arrow.PrimitiveTypes.Float64)}, nil)
			b := array.NewFloat64Builder(mem)
			b.AppendValues(tc.vals, tc.valid)
			arr := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(len(tc.vals)))
			arr.Release()
			defer rec.Release()
			c, err := NewCollector(schema, nil, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Update(rec); err != nil {
				t.Fatal(err)
			}
			got, _ := c.ToJSON()
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			col := c.Result().Column("d")
			check := func(what string, got, want float64) {
				if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && got != want) || math.Signbit(got) != math.Signbit(want) && !math.IsNaN(want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("Min", col.Min.AsFloat64(), tc.min)
			check("Max", col.Max.AsFloat64(), tc.max)
		})
	}
}

func TestCollectorTimestamps(t *testing.T) {
	cases := []struct {
		name string
		typ  arrow.DataType
		vals []int64
		want string
	}{
		{"UTC micros truncate down to ms, before 1970 too", tsUTC,
			[]int64{-1, 1_700_000_000_123_999},
			`{"numRecords":2,"minValues":{"t":"1969-12-31T23:59:59.999Z"},"maxValues":{"t":"2023-11-14T22:13:20.123Z"},"nullCount":{"t":0}}`},
		{"ntz renders without zone", tsNTZ,
			[]int64{0, 86_400_000_000 + 1500},
			`{"numRecords":2,"minValues":{"t":"1970-01-01T00:00:00.000"},"maxValues":{"t":"1970-01-02T00:00:00.001"},"nullCount":{"t":0}}`},
		{"nanoseconds floor to micros then ms", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "America/New_York"},
			[]int64{-1_000_001, 999_999},
			`{"numRecords":2,"minValues":{"t":"1969-12-31T23:59:59.998Z"},"maxValues":{"t":"1970-01-01T00:00:00.000Z"},"nullCount":{"t":0}}`},
		{"seconds widen", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"},
			[]int64{253402214400}, // 9999-12-31
			`{"numRecords":1,"minValues":{"t":"9999-12-31T00:00:00.000Z"},"maxValues":{"t":"9999-12-31T00:00:00.000Z"},"nullCount":{"t":0}}`},
		{"expanded years", tsUTC,
			[]int64{-62_135_596_800_000_000 - 86_400_000_000*(366+365), 253_402_300_800_000_000},
			`{"numRecords":2,"minValues":{"t":"-0001-01-01T00:00:00.000Z"},"maxValues":{"t":"+10000-01-01T00:00:00.000Z"},"nullCount":{"t":0}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			schema := arrow.NewSchema([]arrow.Field{f("t", tc.typ)}, nil)
			b := array.NewTimestampBuilder(mem, tc.typ.(*arrow.TimestampType))
			for _, v := range tc.vals {
				b.Append(arrow.Timestamp(v))
			}
			arr := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(len(tc.vals)))
			arr.Release()
			defer rec.Release()
			c, _ := NewCollector(schema, nil, Config{})
			if err := c.Update(rec); err != nil {
				t.Fatal(err)
			}
			got, _ := c.ToJSON()
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			// Reading it back must bracket every value (max widened by 1 ms).
			ps := arrow.NewSchema([]arrow.Field{f("t", map[bool]arrow.DataType{true: tsUTC, false: tsNTZ}[tc.typ.(*arrow.TimestampType).TimeZone != ""])}, nil)
			pf, err := Parse(got, ps)
			if err != nil {
				t.Fatal(err)
			}
			col := pf.Column("t")
			for _, v := range tc.vals {
				us, _ := toMicros(v, tc.typ.(*arrow.TimestampType).Unit)
				if col.Min.AsInt64() > us || col.Max.AsInt64() < us {
					t.Errorf("value %d outside [%d, %d]", us, col.Min.AsInt64(), col.Max.AsInt64())
				}
			}
		})
	}
}

func TestCollectorMultipleBatchesAndSlices(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{f("s", arrow.BinaryTypes.String), f("n", arrow.PrimitiveTypes.Int64)}, nil)
	rec := buildRecord(t, mem, schema, `[{"s":"zzz","n":100},{"s":"m","n":5},{"s":"b","n":null},{"s":"a","n":-100}]`)
	defer rec.Release()
	c, _ := NewCollector(schema, nil, Config{})
	// Slices hide the first and last rows: their values must not leak in.
	mid := rec.NewSlice(1, 3)
	defer mid.Release()
	if err := c.Update(mid); err != nil {
		t.Fatal(err)
	}
	got, _ := c.ToJSON()
	want := `{"numRecords":2,"minValues":{"s":"b","n":5},"maxValues":{"s":"m","n":5},"nullCount":{"s":0,"n":1}}`
	if got != want {
		t.Errorf("slice: got %s want %s", got, want)
	}
	if err := c.Update(rec); err != nil {
		t.Fatal(err)
	}
	got, _ = c.ToJSON()
	want = `{"numRecords":6,"minValues":{"s":"a","n":-100},"maxValues":{"s":"zzz","n":100},"nullCount":{"s":0,"n":2}}`
	if got != want {
		t.Errorf("two batches: got %s want %s", got, want)
	}
}

func TestCollectorErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{f("a", arrow.PrimitiveTypes.Int32), f("l", arrow.ListOf(arrow.PrimitiveTypes.Int32))}, nil)
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"unknown stats column", Config{StatsColumns: []string{"nope"}}, ErrUnknownColumn},
		{"stats column inside a list", Config{StatsColumns: []string{"l.element"}}, ErrUnknownColumn},
		{"bad NumIndexedCols", Config{NumIndexedCols: -3}, ErrInvalidConfig},
		{"prefix below NoStringBounds", Config{StringPrefixLength: -2}, ErrInvalidConfig},
		{"unterminated quote", Config{StatsColumns: []string{"`a"}}, ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCollector(schema, nil, tc.cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "stats: ") {
				t.Errorf("error %q lacks package prefix", err)
			}
		})
	}
	t.Run("batch with other schema is rejected", func(t *testing.T) {
		mem := memory.NewGoAllocator()
		c, err := NewCollector(schema, nil, Config{})
		if err != nil {
			t.Fatal(err)
		}
		other := arrow.NewSchema([]arrow.Field{f("a", arrow.PrimitiveTypes.Int64), f("l", arrow.ListOf(arrow.PrimitiveTypes.Int32))}, nil)
		rec := buildRecord(t, mem, other, `[{"a":1,"l":null}]`)
		defer rec.Release()
		if err := c.Update(rec); !errors.Is(err, ErrSchemaMismatch) {
			t.Fatalf("err = %v, want ErrSchemaMismatch", err)
		}
	})
}

func TestCollectorDecimalTyped(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := &arrow.Decimal128Type{Precision: 38, Scale: 0}
	schema := arrow.NewSchema([]arrow.Field{f("d", dt)}, nil)
	b := array.NewDecimal128Builder(mem, dt)
	big := decimal128.GetMaxValue(38)
	b.Append(big)
	b.Append(big.Negate())
	arr := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, 2)
	arr.Release()
	defer rec.Release()
	c, _ := NewCollector(schema, nil, Config{})
	if err := c.Update(rec); err != nil {
		t.Fatal(err)
	}
	js, _ := c.ToJSON()
	want := `{"numRecords":2,"minValues":{"d":-99999999999999999999999999999999999999},"maxValues":{"d":99999999999999999999999999999999999999},"nullCount":{"d":0}}`
	if js != want {
		t.Fatalf("got %s want %s", js, want)
	}
	p, err := Parse(js, schema)
	if err != nil {
		t.Fatal(err)
	}
	if u, _, _ := p.Column("d").Max.AsDecimal(); u != big {
		t.Errorf("max round trip = %v", u)
	}
}

func TestMarshalJSONWithoutSchema(t *testing.T) {
	f := &File{NumRecords: 5, TightBounds: false, Columns: map[string]*Column{
		Key("b"):      {Min: value.Float64(1.5), Max: value.Float64(math.NaN()), NullCount: 1, HasNullCount: true},
		Key("a", "y"): {Min: value.String("x"), Max: value.String("y")},
		Key("a", "x"): {Min: value.Date(0), Max: value.TimestampNTZ(1500)},
	}}
	got, err := f.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"numRecords":5,"minValues":{"a":{"x":"1970-01-01","y":"x"},"b":1.5},"maxValues":{"a":{"x":"1970-01-01T00:00:00.001","y":"y"}},"nullCount":{"b":1},"tightBounds":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestConfigValidateReportsAllProblems(t *testing.T) {
	err := Config{NumIndexedCols: -9, StringPrefixLength: -5, StatsColumns: []string{"a.", "`b"}}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, frag := range []string{"NumIndexedCols", "StringPrefixLength", "StatsColumns[0]", "StatsColumns[1]"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not mention %s", err, frag)
		}
	}
}

func TestCollectorAlwaysColumns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String})},
		{Name: "p", Type: arrow.BinaryTypes.String},
	}, nil)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"beyond the first n leaves", Config{NumIndexedCols: 1, AlwaysColumns: [][]string{{"ST", "y"}}}, "a st.y"},
		{"with an explicit list, in schema order", Config{StatsColumns: []string{"b"}, AlwaysColumns: [][]string{{"a"}}}, "a b"},
		{"a struct selects its leaves", Config{NumIndexedCols: IndexNoColumns, AlwaysColumns: [][]string{{"st"}}}, "st.x st.y"},
		{"already selected once only", Config{AlwaysColumns: [][]string{{"a"}}}, "a b st.x st.y"},
		{"unknown and partition columns ignored", Config{NumIndexedCols: 1, AlwaysColumns: [][]string{{"zz"}, {"p"}}}, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			coll, err := NewCollector(schema, []string{"p"}, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range coll.Columns() {
				got = append(got, strings.Join(p, "."))
			}
			if strings.Join(got, " ") != c.want {
				t.Fatalf("columns %v, want %s", got, c.want)
			}
		})
	}
}
