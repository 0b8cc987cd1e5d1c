package value

import "testing"

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
