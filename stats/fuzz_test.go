package stats

import (
	"encoding/json"
	"errors"
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

// projectionSeeds are stats documents that exercise the skipping scanner: escapes
// (including surrogate pairs and bad ones) in skipped and kept strings and keys,
// unicode, nested structs, nulls, missing sections and malformed input.
var projectionSeeds = []string{
	`{"numRecords":3,"minValues":{"i":1,"s":"a\"b\\c\/\b\f\n\r\t\u00e9\ud83d\ude00","st":{"x":1,"t":{"y":"q\u0000"}}},"maxValues":{"i":9,"d":"NaN","st":{"x":4}},"nullCount":{"i":0,"st":{"x":1,"t":{"y":2}},"l":1},"tightBounds":false}`,
	`{"minValues":{"I":1,"ST":{"X":2}},"maxValues":{"st":7,"s":{"a":1}},"nullCount":{"dec":"x"}}`,
	`{"numRecords":2,"minValues":{"i":1,"s":"a"},"maxValues":{"i":2,"s":"b"},"nullCount":{"i":0}`,
	`{"numRecords":1,"minValues":{"ts":"2000-01-01T00:00:00Z"},"maxValues":{"dec":1E+2},"x":[1,{"i":2}]}`,
	`{"minValues":{"i":1},"minValues":{"i":2,"dt":"2020-02-30"}}`,
	`{"minValues":{"s":"\ud800","dt":null,"ts":null},"maxValues":null,"nullCount":{"s":null}}`,
	`{"minValues":{"s":"x\q"}}`, `{"minValues":{"s":"x\u12"}}`, `{"minValues":{"s":"x\u12zz"}}`,
	`{"minValues":{"s":"x` + "\x01" + `"}}`, `{"minValues":{"s":"x\`, `{"minValues":{"s":"x`,
	`{"minValues":{"n\u00f6":"\u00fc","\u0069":5}}`, `{"numRecords":10}`, `{}`, `[]`, ``, `{"a":}`,
	`{"minValues":{"i":01}}`, `{"minValues":{"i":-}}`, `{"minValues":{"i":1.}}`, `{"minValues":{"i":1e}}`,
	`{"minValues":{"i":tru}}`, `{"minValues":{"i":1} x`, `{"minValues":{"i":[1,2,]}}`,
	"{\"minValues\":{\"s\":\"\xff\xfe\",\"i\":3}}",
}

// TestSkipValueMatchesDecoding checks the skipping scanner against reading the value
// (strings unescaped): on every seed, at every offset, both stop at the same byte
// with the same error.
func TestSkipValueMatchesDecoding(t *testing.T) {
	for _, s := range projectionSeeds {
		for at := range len(s) + 1 {
			checkSkip(t, s, at)
		}
	}
}

// FuzzSkipValue is TestSkipValueMatchesDecoding on arbitrary input.
func FuzzSkipValue(f *testing.F) {
	for _, s := range projectionSeeds {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, s string, at int) {
		if at < 0 || at > len(s) {
			at = 0
		}
		checkSkip(t, s, at)
	})
}

func checkSkip(t *testing.T, s string, at int) {
	t.Helper()
	fast := scanner{s: s, i: at}
	fast.skipValue()
	slow := scanner{s: s, i: at}
	k, _ := slow.value()
	slow.skipRest(k)
	if fast.i != slow.i || (fast.err == nil) != (slow.err == nil) || fast.err != nil && *fast.err != *slow.err {
		t.Fatalf("skipping %q at %d: stopped at %d with %v, decoding stopped at %d with %v", s, at, fast.i, fast.err, slow.i, slow.err)
	}
}

// FuzzParseColumns checks Parser.ParseColumns, with the parser whole and projected
// (none, each leaf alone, every other leaf), against Parse with the whole parser:
// the same error (offset and message, wrapping ErrSyntax), and otherwise the same
// numRecords and tightBounds, each leaf seen exactly when Parse gives it a Column
// and with that Column. Buffers are reused across inputs, dirty, as a caller would.
func FuzzParseColumns(f *testing.F) {
	for _, s := range projectionSeeds {
		f.Add(s)
	}
	full := NewParser(fuzzSchema, ParseOptions{StringPrefixLength: 4})
	leaves := full.Leaves()
	sets := [][]string{nil, leaves}
	for _, k := range leaves {
		sets = append(sets, []string{k})
	}
	var alt []string
	for i := 0; i < len(leaves); i += 2 {
		alt = append(alt, leaves[i])
	}
	sets = append(sets, alt)
	type proj struct {
		p    *Parser
		keys []string
		cols []Column
		seen []bool
	}
	projs := make([]proj, len(sets))
	for i, keys := range sets {
		p := full.Project(keys)
		got := p.Leaves()
		want := slices.DeleteFunc(slices.Clone(leaves), func(k string) bool { return !slices.Contains(keys, k) })
		if !slices.Equal(got, want) {
			f.Fatalf("projection to %q has leaves %q, want %q", keys, got, want)
		}
		projs[i] = proj{p: p, keys: got, cols: make([]Column, len(got)), seen: make([]bool, len(got))}
	}
	f.Fuzz(func(t *testing.T, in string) {
		want, werr := full.Parse(in)
		for _, pr := range projs {
			nr, tight, err := pr.p.ParseColumns(in, pr.cols, pr.seen)
			if werr != nil || err != nil {
				var a, b *SyntaxError
				if !errors.As(err, &a) || !errors.As(werr, &b) || *a != *b || !errors.Is(err, ErrSyntax) {
					t.Fatalf("projection %q of %q: error %v, Parse error %v", pr.keys, in, err, werr)
				}
				continue
			}
			if nr != want.NumRecords || tight != want.TightBounds {
				t.Fatalf("projection %q of %q: numRecords %d tight %v, Parse %d %v", pr.keys, in, nr, tight, want.NumRecords, want.TightBounds)
			}
			for j, k := range pr.keys {
				w := want.Columns[k]
				if pr.seen[j] != (w != nil) || w != nil && !sameColumn(&pr.cols[j], w) {
					t.Fatalf("projection %q of %q: column %q seen %v %+v, Parse %+v", pr.keys, in, k, pr.seen[j], pr.cols[j], w)
				}
			}
		}
	})
}

// TestParseColumnsArguments checks that buffers of the wrong length are refused.
func TestParseColumnsArguments(t *testing.T) {
	p := NewParser(fuzzSchema, ParseOptions{}).Project([]string{"i"})
	if _, _, err := p.ParseColumns(`{}`, make([]Column, 2), make([]bool, 1)); !errors.Is(err, ErrArgument) {
		t.Fatalf("ParseColumns with 2 columns for 1 leaf: %v, want ErrArgument", err)
	}
}

// TestParseColumnsAllocations checks that converting a projected column of a stats
// line without escapes allocates nothing.
func TestParseColumnsAllocations(t *testing.T) {
	in := `{"numRecords":1000,"minValues":{"i":5,"s":"a\"b","dt":"2021-01-01","st":{"x":1,"t":{"y":"q\u00e9"}}},` +
		`"maxValues":{"i":9,"s":"zz\n","dt":"2021-02-01","st":{"x":2}},"nullCount":{"i":0,"s":3,"dt":0,"st":{"x":0,"t":{"y":1}}}}`
	p := NewParser(fuzzSchema, ParseOptions{}).Project([]string{"i", "dt"})
	cols, seen := make([]Column, 2), make([]bool, 2)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := p.ParseColumns(in, cols, seen); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ParseColumns allocated %v times per call, want 0", allocs)
	}
	if !seen[0] || !seen[1] || cols[0].Min.AsInt64() != 5 || cols[1].NullCount != 0 || !cols[1].HasNullCount {
		t.Fatalf("ParseColumns read %+v %v", cols, seen)
	}
}
