package stats

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

var fuzzSchema = arrow.NewSchema([]arrow.Field{
	f("i", arrow.PrimitiveTypes.Int32), f("f", arrow.PrimitiveTypes.Float32), f("d", arrow.PrimitiveTypes.Float64),
	f("dec", &arrow.Decimal128Type{Precision: 38, Scale: 4}), f("s", arrow.BinaryTypes.String),
	f("dt", arrow.FixedWidthTypes.Date32), f("ts", tsUTC), f("ntz", tsNTZ),
	f("st", arrow.StructOf(f("x", arrow.PrimitiveTypes.Int64), f("t", arrow.StructOf(f("y", arrow.BinaryTypes.String))))),
	f("l", arrow.ListOf(arrow.PrimitiveTypes.Int32)),
}, nil)

// FuzzParse checks that Parse never panics, fails exactly on malformed JSON (as
// encoding/json judges it, for non-pathological nesting), and that what it returns
// renders (ToJSON) to JSON that parses again.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`{"numRecords":3,"minValues":{"i":1,"f":1.5,"d":"NaN","dec":"12.3400","s":"abc","dt":"2020-01-01","ts":"2000-01-01T00:00:00.000-08:00","ntz":"2021-11-18T02:30:00.123","st":{"x":1,"t":{"y":"q"}}},"maxValues":{"i":9,"d":"Infinity","dec":1E+2,"s":"abc\u007f","ts":"2022-01-01T00:00:00.123456Z"},"nullCount":{"i":0,"st":{"x":1,"t":{"y":2}},"l":1},"tightBounds":false}`,
		`{"numRecords":1,"minValues":{"dec":0E-10,"ts":"+10000-01-01T00:00:00Z"},"maxValues":{"s":"\ud83d\ude00\udbff\udfff"}}`,
		`{"minValues":{"i":1.0e0,"dt":"-0001-12-31"},"foo":[1,[2,{"a":null}],true,false]}`,
		`{}`, `[]`, `{"a":}`, `{"s":"\x"}`, "{\"s\":\"\xff\"}", `{"numRecords":-0}`,
		`{"minValues":{"ts":"2000-01-01 00:00:00+05:30:15","ntz":"2000-02-30T00:00:00"}}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	p := NewParser(fuzzSchema, ParseOptions{StringPrefixLength: 4})
	f.Fuzz(func(t *testing.T, in string) {
		got, err := p.Parse(in)
		_, _ = ParseNumRecords(in)
		deep := strings.Count(in, "[")+strings.Count(in, "{") > 400
		trimmed := strings.TrimLeft(in, " \t\r\n")
		valid := json.Valid([]byte(in))
		switch {
		case err != nil && valid && strings.HasPrefix(trimmed, "{") && !deep:
			t.Fatalf("Parse rejected valid JSON %q: %v", in, err)
		case err == nil && !valid:
			t.Fatalf("Parse accepted invalid JSON %q", in)
		}
		if err != nil {
			return
		}
		out, err := ToJSON(got, fuzzSchema)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("ToJSON wrote invalid JSON %q (from %q)", out, in)
		}
		if _, err := p.Parse(out); err != nil {
			t.Fatalf("re-Parse of %q: %v", out, err)
		}
	})
}

// FuzzProject checks Parser.Project against Parse: a projection to any set of leaf
// columns (none, each alone, every other one) fails exactly when the full parse does,
// reads the same numRecords and tightBounds, and gives each listed column the
// Column the full parse gives it and no other column.
func FuzzProject(f *testing.F) {
	f.Add(`{"numRecords":3,"minValues":{"i":1,"s":"abc","st":{"x":1,"t":{"y":"q"}}},"maxValues":{"i":9,"d":"NaN","st":{"x":4}},"nullCount":{"i":0,"st":{"x":1,"t":{"y":2}},"l":1},"tightBounds":false}`)
	f.Add(`{"minValues":{"I":1,"ST":{"X":2}},"maxValues":{"st":7,"s":{"a":1}},"nullCount":{"dec":"x"}}`)
	f.Add(`{"numRecords":2,"minValues":{"i":1,"s":"a"},"maxValues":{"i":2,"s":"b"},"nullCount":{"i":0}`)
	f.Add(`{"numRecords":1,"minValues":{"ts":"2000-01-01T00:00:00Z"},"maxValues":{"dec":1E+2},"x":[1,{"i":2}]}`)
	f.Add(`{"minValues":{"i":1},"minValues":{"i":2,"dt":"2020-02-30"}}`)
	full := NewParser(fuzzSchema, ParseOptions{StringPrefixLength: 4})
	var leaves []string
	for _, l := range full.p.leaves {
		leaves = append(leaves, l.key)
	}
	sets := [][]string{nil, {"nope"}}
	for _, k := range leaves {
		sets = append(sets, []string{k})
	}
	var alt []string
	for i := 0; i < len(leaves); i += 2 {
		alt = append(alt, leaves[i])
	}
	sets = append(sets, alt, leaves)
	projected := make([]*Parser, len(sets))
	for i, keys := range sets {
		projected[i] = full.Project(keys)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want, werr := full.Parse(in)
		for i, keys := range sets {
			got, err := projected[i].Parse(in)
			if (err == nil) != (werr == nil) {
				t.Fatalf("projection %q of %q: error %v, full parse error %v", keys, in, err, werr)
			}
			if err != nil {
				continue
			}
			if got.NumRecords != want.NumRecords || got.TightBounds != want.TightBounds {
				t.Fatalf("projection %q of %q: numRecords %d tight %v, full parse %d %v", keys, in, got.NumRecords, got.TightBounds, want.NumRecords, want.TightBounds)
			}
			for k, c := range got.Columns {
				if !slices.Contains(keys, k) {
					t.Fatalf("projection %q of %q converted column %q", keys, in, k)
				}
				if !sameColumn(c, want.Columns[k]) {
					t.Fatalf("projection %q of %q: column %q = %+v, full parse %+v", keys, in, k, c, want.Columns[k])
				}
			}
			for _, k := range keys {
				if want.Columns[k] != nil && got.Columns[k] == nil {
					t.Fatalf("projection %q of %q lost column %q", keys, in, k)
				}
			}
		}
	})
}

// sameColumn compares two columns' statistics (NaN bounds equal by their text).
func sameColumn(a, b *Column) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Min.Kind() == b.Min.Kind() && a.Min.String() == b.Min.String() &&
		a.Max.Kind() == b.Max.Kind() && a.Max.String() == b.Max.String() &&
		a.HasNullCount == b.HasNullCount && a.NullCount == b.NullCount
}
