package value

import (
	"encoding/json"
	"testing"
)

func TestScanDecimalLiteral(t *testing.T) {
	cases := []struct {
		in      string
		ok      bool
		expDigs int
	}{
		{"0", true, 0}, {"-12", true, 0}, {"+1.5", true, 0}, {".5", true, 0}, {"5.", true, 0},
		{"1e3", true, 1}, {"1E-30", true, 2}, {"-2.5e+12345", true, 5},
		{"", false, 0}, {"+", false, 0}, {".", false, 0}, {"e5", false, 0}, {"1e", false, 0},
		{"1e+", false, 0}, {" 1", false, 0}, {"1 ", false, 0}, {"0x1p3", false, 0},
		{"1_000", false, 0}, {"NaN", false, 0}, {"Infinity", false, 0}, {"1.2.3", false, 0},
		{"--1", false, 0},
	}
	for _, c := range cases {
		ok, e := ScanDecimalLiteral(c.in)
		if ok != c.ok || e != c.expDigs {
			t.Errorf("ScanDecimalLiteral(%q) = %v, %d; want %v, %d", c.in, ok, e, c.ok, c.expDigs)
		}
	}
}

func FuzzScanDecimalLiteral(f *testing.F) {
	for _, s := range []string{"1", "-1.5e10", ".5", "1e", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ok, e := ScanDecimalLiteral(s)
		if !ok && e != 0 {
			t.Fatalf("rejected %q with exponent digits %d", s, e)
		}
		if ok && len(s) == 0 {
			t.Fatal("accepted the empty string")
		}
	})
}

func TestDecodeJSONUnicodeEscape(t *testing.T) {
	cases := []struct {
		in   string // text after the "\u"
		r    rune
		next int
		ok   bool
	}{
		{"0041", 'A', 4, true},
		{"00e9rest", 'é', 4, true},
		{"00E9", 'é', 4, true},
		{`D83D\uDE00`, '😀', 10, true},     // a surrogate pair is one character
		{`d83d\ude00tail`, '😀', 10, true}, // lower-case hex
		{`D83D`, '\uFFFD', 4, true},       // lone high half at the end
		{`D83Dx`, '\uFFFD', 4, true},      // lone high half before other text
		{`D83D\u0041`, '\uFFFD', 4, true}, // high half then a non-surrogate: not consumed
		{`DE00`, '\uFFFD', 4, true},       // lone low half
		{`D83D\uZZZZ`, '\uFFFD', 4, true}, // second escape not hex: left to the caller
		{"004", 0, 0, false},              // short
		{"00g1", 0, 0, false},             // not hex
		{"", 0, 0, false},
	}
	for _, c := range cases {
		for _, form := range []string{"string", "bytes"} {
			var (
				r    rune
				next int
				ok   bool
			)
			if form == "string" {
				r, next, ok = DecodeJSONUnicodeEscape(c.in, 0)
			} else {
				r, next, ok = DecodeJSONUnicodeEscape([]byte(c.in), 0)
			}
			if ok != c.ok || (ok && (r != c.r || next != c.next)) {
				t.Errorf("%s %q: got (%q, %d, %v), want (%q, %d, %v)", form, c.in, r, next, ok, c.r, c.next, c.ok)
			}
		}
	}
	// The offset is honoured.
	if r, next, ok := DecodeJSONUnicodeEscape(`ab\u0042`, 4); !ok || r != 'B' || next != 8 {
		t.Errorf("offset 4: got (%q, %d, %v)", r, next, ok)
	}
}

func TestScanJSONNumber(t *testing.T) {
	for _, c := range []struct {
		in      string
		at      int
		end     int
		problem string
	}{
		{"0", 0, 1, ""},
		{"-0", 0, 2, ""},
		{"123,", 0, 3, ""},
		{"-12.50e+3}", 0, 9, ""},
		{"1E9", 0, 3, ""},
		{"x:7.25", 2, 6, ""},
		{"01", 0, 1, ""}, // the number is "0"; what follows is the caller's
		{"-", 0, 1, "invalid number"},
		{"-a", 0, 1, "invalid number"},
		{"", 0, 0, "invalid number"},
		{"1.", 0, 2, "invalid number: no digits after '.'"},
		{"1.e5", 0, 2, "invalid number: no digits after '.'"},
		{"1e", 0, 2, "invalid number: no digits in exponent"},
		{"1e+}", 0, 3, "invalid number: no digits in exponent"},
	} {
		end, problem := ScanJSONNumber(c.in, c.at)
		if end != c.end || problem != c.problem {
			t.Errorf("ScanJSONNumber(%q, %d) = %d, %q; want %d, %q", c.in, c.at, end, problem, c.end, c.problem)
		}
	}
}

// FuzzScanJSONNumber checks ScanJSONNumber against encoding/json: a whole string is
// a number for one exactly when it is for the other.
func FuzzScanJSONNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", "1.", "01", "-", "1e+", "12345678901234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		end, problem := ScanJSONNumber(s, 0)
		ours := problem == "" && end == len(s)
		var n json.Number
		theirs := json.Unmarshal([]byte(s), &n) == nil && string(n) == s
		if ours != theirs {
			t.Fatalf("%q: ScanJSONNumber says number=%v, encoding/json %v", s, ours, theirs)
		}
	})
}
