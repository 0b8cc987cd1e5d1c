package value

import (
	"math"
	"strconv"
	"strings"
)

// FormatJavaFloat spells a float the way Java's Double.toString (bits 64) and
// Float.toString (bits 32) do, which is how Delta writes float partition values and
// Spark casts floats to strings
// (JDK 19 and later: the shortest decimal that reads back to the same value): plain
// notation with at least one fractional digit for 1e-3 <= |x| < 1e7, otherwise
// d.dddE±n; NaN, Infinity, -Infinity; -0.0.
func FormatJavaFloat(x float64, bits int) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case x == 0:
		if math.Signbit(x) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	e := strconv.FormatFloat(x, 'e', -1, bits) // d.ddde±XX
	if !strings.Contains(e, ".") {
		// The shortest decimal has one digit. Java then takes the two-digit decimal
		// closest to x when it reads back to x (only low-precision subnormals make a
		// difference: Double.MIN_VALUE prints as 4.9E-324, not 5.0E-324).
		if two := strconv.FormatFloat(x, 'e', 1, bits); mustParse(two, bits) == x {
			e = two
		}
	}
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if t := strings.TrimRight(digits, "0"); t != "" {
		digits = t
	}
	if exp >= -3 && exp < 7 {
		if exp < 0 {
			return sign + "0." + strings.Repeat("0", -exp-1) + digits
		}
		for len(digits) <= exp {
			digits += "0"
		}
		frac := digits[exp+1:]
		if frac == "" {
			frac = "0"
		}
		return sign + digits[:exp+1] + "." + frac
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(exp)
}

func mustParse(s string, bits int) float64 {
	f, _ := strconv.ParseFloat(s, bits)
	return f
}
