package value

// CivilFromDays returns the proleptic Gregorian year, month (1-12) and day (1-31) of
// a date stored as days since 1970-01-01 (Delta's date), exact over the whole int64
// range dates use (H. Hinnant's days-from-civil algorithm, inverted).
func CivilFromDays(days int64) (y, m, d int64) {
	z := days + 719468
	era := FloorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// DaysFromCivil is CivilFromDays' inverse: the days since 1970-01-01 of a proleptic
// Gregorian date (month 1-12, day 1-31; not validated).
func DaysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := FloorDiv(y, 400)
	yoe := y - era*400
	mp := m + 9
	if m > 2 {
		mp = m - 3
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// FloorDiv is integer division rounding toward negative infinity (Go's / rounds
// toward zero): the day of a negative timestamp, the unit of a negative time.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
