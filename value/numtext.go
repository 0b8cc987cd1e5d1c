package value

// ScanDecimalLiteral reports whether s is a plain decimal number literal,
// [+-](digits[.digits] | .digits)[(e|E)[+-]digits], with no surrounding space, no hex
// digits, no underscores and no special words (NaN, Infinity). expDigits is the number
// of digits of the exponent (0 without one), so callers that must bound the exponent
// (a big.Rat parse of "1e999999999" allocates without bound) can refuse long ones.
// It is the one scanner behind text → float inference in package input and CAST(string
// AS DECIMAL) in package expr, so both accept the same spellings.
func ScanDecimalLiteral(s string) (ok bool, expDigits int) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false, 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, expDigits = i+1, expDigits+1
		}
		if expDigits == 0 {
			return false, 0
		}
	}
	if i != len(s) {
		return false, 0
	}
	return true, expDigits
}
