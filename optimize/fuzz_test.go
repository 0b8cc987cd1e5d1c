package optimize

import "testing"

func FuzzParseCurve(f *testing.F) {
	for _, s := range []string{"zorder", "Z-Order", "hilbert", "linear", "none", "", "curve(9)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCurve(s)
		if err != nil {
			return
		}
		back, err := ParseCurve(c.String())
		if err != nil || back != c {
			t.Fatalf("%q → %v → %q → %v, %v", s, c, c.String(), back, err)
		}
	})
}
