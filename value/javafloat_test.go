package value_test

import (
	"math"
	"testing"

	"github.com/skiplake/skiplake/value"
)

func TestFormatJavaFloat(t *testing.T) {
	cases := []struct {
		x    float64
		bits int
		want string
	}{
		{1, 64, "1.0"}, {0.1, 64, "0.1"}, {100, 64, "100.0"}, {1234567, 64, "1234567.0"}, {1e7, 64, "1.0E7"},
		{12345678.9, 64, "1.23456789E7"}, {0.001, 64, "0.001"}, {0.00012, 64, "1.2E-4"}, {-2.5e-10, 64, "-2.5E-10"},
		{math.MaxFloat64, 64, "1.7976931348623157E308"}, {5e-324, 64, "4.9E-324"}, {math.Copysign(0, -1), 64, "-0.0"},
		{math.NaN(), 64, "NaN"}, {math.Inf(-1), 64, "-Infinity"},
		{float64(float32(0.1)), 32, "0.1"}, {float64(float32(1.0 / 3)), 32, "0.33333334"}, {float64(float32(3e38)), 32, "3.0E38"},
	}
	for _, c := range cases {
		if got := value.FormatJavaFloat(c.x, c.bits); got != c.want {
			t.Errorf("FormatJavaFloat(%v, %d) = %q, want %q", c.x, c.bits, got, c.want)
		}
	}
}
