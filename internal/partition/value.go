package partition

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

// Format serializes v for add.partitionValues of a column of the given Delta type (the
// schemaString spelling: "integer", "decimal(12,5)", "timestamp", ...). isNull reports a
// NULL (written as a JSON null; an empty string value is NULL too, invariant P2). A
// timestamp is written in ISO 8601, adjusted to UTC, with microseconds
// ("2024-03-01T10:00:00.000000Z", what PROTOCOL.md recommends and Delta Spark writes);
// a timestamp_ntz as "2024-03-01 10:00:00[.ffffff]", without a zone.
func Format(v value.Value, deltaType string) (s string, isNull bool, err error) {
	return format(v, deltaType, false)
}

// DirValue serializes v for the partition directory name (before EscapePathName): as
// Format, except that a timestamp is spelled as Spark casts it to a string in UTC,
// "2024-03-01 10:00:00[.ffffff]" — Spark names the directory so while it writes the
// ISO form in the log.
func DirValue(v value.Value, deltaType string) (s string, isNull bool, err error) {
	return format(v, deltaType, true)
}

func format(v value.Value, deltaType string, dir bool) (s string, isNull bool, err error) {
	if v.IsNull() {
		return "", true, nil
	}
	bad := func() error {
		return fmt.Errorf("%w: %s value %s for a %s column", ErrInvalidValue, v.Kind(), v, deltaType)
	}
	switch {
	case deltaType == "boolean":
		if v.Kind() != value.KindBool {
			return "", false, bad()
		}
		return strconv.FormatBool(v.AsBool()), false, nil
	case deltaType == "byte" || deltaType == "short" || deltaType == "integer" || deltaType == "long":
		if v.Kind() != value.KindInt64 {
			return "", false, bad()
		}
		return strconv.FormatInt(v.AsInt64(), 10), false, nil
	case deltaType == "float" || deltaType == "double":
		if v.Kind() != value.KindFloat64 {
			return "", false, bad()
		}
		bits := 64
		if deltaType == "float" {
			bits = 32
		}
		return value.FormatJavaFloat(v.AsFloat64(), bits), false, nil
	case strings.HasPrefix(deltaType, "decimal"):
		var p, sc int32
		if _, err := fmt.Sscanf(deltaType, "decimal(%d,%d)", &p, &sc); err != nil {
			return "", false, fmt.Errorf("%w: %q", ErrUnsupportedType, deltaType)
		}
		if v.Kind() != value.KindDecimal {
			return "", false, bad()
		}
		num, _, vs := v.AsDecimal()
		resc, err := num.Rescale(vs, sc)
		if err != nil || !resc.FitsInPrecision(p) {
			return "", false, bad()
		}
		return resc.ToString(sc), false, nil
	case deltaType == "date":
		if v.Kind() != value.KindDate {
			return "", false, bad()
		}
		return formatDate(v.AsInt64()), false, nil
	case deltaType == "timestamp" || deltaType == "timestamp_ntz":
		want := value.KindTimestamp
		if deltaType == "timestamp_ntz" {
			want = value.KindTimestampNTZ
		}
		if v.Kind() != want {
			return "", false, bad()
		}
		t := time.UnixMicro(v.AsInt64()).UTC()
		if deltaType == "timestamp" && !dir {
			return t.Format("2006-01-02T15:04:05.000000Z"), false, nil
		}
		return t.Format("2006-01-02 15:04:05.999999"), false, nil
	case deltaType == "string":
		if v.Kind() != value.KindString {
			return "", false, bad()
		}
		if v.AsString() == "" {
			return "", true, nil
		}
		return v.AsString(), false, nil
	case deltaType == "binary":
		return "", false, fmt.Errorf("%w: binary partition columns cannot be written", ErrUnsupportedType)
	}
	return "", false, fmt.Errorf("%w: %q", ErrUnsupportedType, deltaType)
}

// Parse reads a partition value of a column of Arrow type t. present is false when the
// log holds a JSON null; a missing value and "" both mean NULL (invariant P2).
// Timestamps accept "YYYY-MM-DD HH:MM:SS[.f...]" (UTC for timestamp, wall clock for
// timestamp_ntz) and, for timestamp, ISO-8601 with 'T' and a zone ("Z" or an offset).
func Parse(s string, present bool, t arrow.DataType) (value.Value, error) {
	if !present || s == "" {
		return value.Null(), nil
	}
	bad := func(err error) error {
		if err != nil {
			return fmt.Errorf("%w: %q as %s: %w", ErrInvalidValue, s, value.DisplayType(t), err)
		}
		return fmt.Errorf("%w: %q as %s", ErrInvalidValue, s, value.DisplayType(t))
	}
	switch tt := t.(type) {
	case *arrow.BooleanType:
		switch strings.ToLower(s) {
		case "true":
			return value.Bool(true), nil
		case "false":
			return value.Bool(false), nil
		}
		return value.Value{}, bad(nil)
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		i, err := strconv.ParseInt(s, 10, tt.(arrow.FixedWidthDataType).BitWidth())
		if err != nil {
			return value.Value{}, bad(err)
		}
		return value.Int64(i), nil
	case *arrow.Float32Type, *arrow.Float64Type:
		f, err := strconv.ParseFloat(s, tt.(arrow.FixedWidthDataType).BitWidth())
		if err != nil {
			return value.Value{}, bad(err)
		}
		return value.Float64(f), nil
	case *arrow.Decimal128Type:
		n, err := parseDecimal(s, tt.Precision, tt.Scale)
		if err != nil {
			return value.Value{}, bad(err)
		}
		return value.Decimal(n, tt.Precision, tt.Scale), nil
	case *arrow.Date32Type:
		d, err := parseDate(s)
		if err != nil {
			return value.Value{}, bad(err)
		}
		return value.Date(d), nil
	case *arrow.TimestampType:
		us, err := parseTimestamp(s, tt.TimeZone != "")
		if err != nil {
			return value.Value{}, bad(err)
		}
		if tt.TimeZone == "" {
			return value.TimestampNTZ(us), nil
		}
		return value.Timestamp(us), nil
	case *arrow.StringType, *arrow.LargeStringType:
		return value.String(s), nil
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return value.Binary([]byte(s)), nil
	}
	return value.Value{}, fmt.Errorf("%w: %s", ErrUnsupportedType, value.DisplayType(t))
}

// formatDate writes days since 1970-01-01 as Spark writes a date partition value:
// yyyy-MM-dd with a proleptic year of at least four digits, "-" before a year before
// 1 (year 0 is 1 BC) and "+" before a year past 9999.
func formatDate(days int64) string {
	y, m, d := value.CivilFromDays(days)
	sign := ""
	switch {
	case y < 0:
		sign, y = "-", -y
	case y > 9999:
		sign = "+"
	}
	return fmt.Sprintf("%s%04d-%02d-%02d", sign, y, m, d)
}

// parseDate reads what formatDate writes (a year of four or more digits, optionally
// signed) into days since 1970-01-01, refusing a month or day that does not exist.
func parseDate(s string) (int64, error) {
	body, neg := s, false
	if len(body) > 0 && (body[0] == '-' || body[0] == '+') {
		neg, body = body[0] == '-', body[1:]
	}
	ys, rest, ok1 := strings.Cut(body, "-")
	ms, ds, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || len(ys) < 4 || len(ms) != 2 || len(ds) != 2 || !allDigits(ys) || !allDigits(ms) || !allDigits(ds) {
		return 0, fmt.Errorf("want yyyy-mm-dd")
	}
	y, err := strconv.ParseInt(ys, 10, 32)
	if err != nil {
		return 0, err
	}
	if neg {
		y = -y
	}
	m, _ := strconv.ParseInt(ms, 10, 64)
	d, _ := strconv.ParseInt(ds, 10, 64)
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, fmt.Errorf("month or day out of range")
	}
	days := value.DaysFromCivil(y, m, d)
	if cy, cm, cd := value.CivilFromDays(days); cy != y || cm != m || cd != d {
		return 0, fmt.Errorf("no such day")
	}
	return days, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func parseTimestamp(s string, zoned bool) (int64, error) {
	// A bare date is midnight: the values of a date partition column widened to
	// timestamp_ntz (type widening) are dates.
	layouts := []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"}
	if zoned {
		layouts = append(layouts, "2006-01-02T15:04:05Z07:00", "2006-01-02 15:04:05Z07:00")
	}
	var firstErr error
	for _, l := range layouts {
		tm, err := time.Parse(l, s)
		if err == nil {
			return tm.Unix()*1_000_000 + int64(tm.Nanosecond()/1000), nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return 0, firstErr
}

// parseDecimal reads a decimal string (optionally with an exponent, as Java's
// BigDecimal.toString may write) exactly at the given scale: digits beyond the scale must
// be zeros, and the value must fit the precision.
func parseDecimal(s string, precision, scale int32) (decimal128.Num, error) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return decimal128.Num{}, err
		}
		mant, exp = s[:i], e
	}
	neg := false
	switch {
	case strings.HasPrefix(mant, "-"):
		neg, mant = true, mant[1:]
	case strings.HasPrefix(mant, "+"):
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return decimal128.Num{}, fmt.Errorf("not a decimal number")
	}
	// value = digits * 10^(exp - len(frac)); rescale to 10^-scale.
	shift := int(scale) + exp - len(frac)
	if shift > 80 || shift < -80 {
		return decimal128.Num{}, fmt.Errorf("exponent out of range")
	}
	n, _ := new(big.Int).SetString(digits, 10)
	ten := big.NewInt(10)
	if shift >= 0 {
		n.Mul(n, new(big.Int).Exp(ten, big.NewInt(int64(shift)), nil))
	} else {
		q, r := new(big.Int).QuoRem(n, new(big.Int).Exp(ten, big.NewInt(int64(-shift)), nil), new(big.Int))
		if r.Sign() != 0 {
			return decimal128.Num{}, fmt.Errorf("more than %d fractional digits", scale)
		}
		n = q
	}
	if neg {
		n.Neg(n)
	}
	limit := new(big.Int).Exp(ten, big.NewInt(int64(precision)), nil)
	if new(big.Int).Abs(n).Cmp(limit) >= 0 {
		return decimal128.Num{}, fmt.Errorf("does not fit precision %d", precision)
	}
	return decimal128.FromBigInt(n), nil
}
