package partition

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

var fuzzTypes = []struct {
	arrow arrow.DataType
	delta string
}{
	{arrow.PrimitiveTypes.Int32, "integer"}, {arrow.PrimitiveTypes.Float64, "double"},
	{&arrow.Decimal128Type{Precision: 12, Scale: 5}, "decimal(12,5)"}, {arrow.FixedWidthTypes.Date32, "date"},
	{tsUTC, "timestamp"}, {tsNTZ, "timestamp_ntz"}, {arrow.FixedWidthTypes.Boolean, "boolean"},
	{arrow.BinaryTypes.String, "string"},
}

// FuzzParse: whatever Parse accepts, Format writes back in a form Parse reads as the same
// value (invariant P1).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1", "-2342342.23423", "2021-09-08", "2021-09-08 11:11:11.001", "2021-09-08T11:11:11Z", "NaN", "1.0E10", "true", "a%b"} {
		for i := range fuzzTypes {
			f.Add(s, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, s string, ti uint8) {
		ft := fuzzTypes[int(ti)%len(fuzzTypes)]
		v, err := Parse(s, true, ft.arrow)
		if err != nil || v.IsNull() {
			return
		}
		out, isNull, err := Format(v, ft.delta)
		if err != nil {
			if ft.delta == "timestamp" || ft.delta == "timestamp_ntz" || ft.delta == "date" {
				return
			}
			t.Fatalf("Format(%s) after Parse(%q): %v", v, s, err)
		}
		if isNull {
			t.Fatalf("non-null %s formatted as null", v)
		}
		back, err := Parse(out, true, ft.arrow)
		if err != nil || !value.Equal(v, back) {
			t.Fatalf("Parse(Format(Parse(%q))) = %s (%v) via %q, want %s", s, back, err, out, v)
		}
	})
}

// FuzzEscape: escaping and log-path encoding invert exactly.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"bar+%21", "2021-09-08 11:11:11", "a/b=c", "é\x00\x7f%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := UnescapePathName(EscapePathName(s)); got != s {
			t.Fatalf("unescape(escape(%q)) = %q", s, got)
		}
		got, err := DecodeLogPath(EncodeLogPath(s))
		if err != nil || got != s {
			t.Fatalf("decode(encode(%q)) = %q, %v", s, got, err)
		}
		_, _ = DecodeLogPath(s)
	})
}
