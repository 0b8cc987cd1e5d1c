package partition

import (
	"bufio"
	"encoding/json"
	"github.com/skiplake/skiplake/internal/goldentest"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
	"github.com/stretchr/testify/require"
)

var (
	tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

func dec(s string, p, sc int32) value.Value {
	n, err := decimal128.FromString(s, p, sc)
	if err != nil {
		panic(err)
	}
	return value.Decimal(n, p, sc)
}

func TestFormatParse(t *testing.T) {
	cases := []struct {
		name      string
		v         value.Value
		deltaType string
		arrowType arrow.DataType
		want      string
	}{
		{"boolean true", value.Bool(true), "boolean", arrow.FixedWidthTypes.Boolean, "true"},
		{"byte min", value.Int64(-128), "byte", arrow.PrimitiveTypes.Int8, "-128"},
		{"long max", value.Int64(math.MaxInt64), "long", arrow.PrimitiveTypes.Int64, "9223372036854775807"},
		{"double whole number keeps .0", value.Float64(1), "double", arrow.PrimitiveTypes.Float64, "1.0"},
		{"double full precision", value.Float64(math.Nextafter(0.3, 1)), "double", arrow.PrimitiveTypes.Float64, "0.30000000000000004"},
		{"double large uses E notation", value.Float64(1e10), "double", arrow.PrimitiveTypes.Float64, "1.0E10"},
		{"double small uses E notation", value.Float64(-1.5e-5), "double", arrow.PrimitiveTypes.Float64, "-1.5E-5"},
		{"double NaN", value.Float64(math.NaN()), "double", arrow.PrimitiveTypes.Float64, "NaN"},
		{"double +inf", value.Float64(math.Inf(1)), "double", arrow.PrimitiveTypes.Float64, "Infinity"},
		{"double -inf", value.Float64(math.Inf(-1)), "double", arrow.PrimitiveTypes.Float64, "-Infinity"},
		{"float shortest float32 digits", value.Float64(float64(float32(3.4))), "float", arrow.PrimitiveTypes.Float32, "3.4"},
		{"decimal negative with scale", dec("-2342342.23423", 12, 5), "decimal(12,5)", &arrow.Decimal128Type{Precision: 12, Scale: 5}, "-2342342.23423"},
		{"decimal keeps trailing zeros of the scale", dec("234", 12, 5), "decimal(12,5)", &arrow.Decimal128Type{Precision: 12, Scale: 5}, "234.00000"},
		{"decimal tiny", dec("0.00004", 12, 5), "decimal(12,5)", &arrow.Decimal128Type{Precision: 12, Scale: 5}, "0.00004"},
		{"decimal 38 digits", dec("-99999999999999999999999999999999999999", 38, 0), "decimal(38,0)", &arrow.Decimal128Type{Precision: 38, Scale: 0}, "-99999999999999999999999999999999999999"},
		{"date first day", value.Date(-719162), "date", arrow.FixedWidthTypes.Date32, "0001-01-01"},
		{"date last day", value.Date(2932896), "date", arrow.FixedWidthTypes.Date32, "9999-12-31"},
		{"timestamp ISO 8601 in UTC", value.Timestamp(1631099471000000), "timestamp", tsUTC, "2021-09-08T11:11:11.000000Z"},
		{"timestamp keeps six fraction digits", value.Timestamp(1577866150001000), "timestamp", tsUTC, "2020-01-01T08:09:10.001000Z"},
		{"timestamp micros before 1970", value.Timestamp(-1), "timestamp", tsUTC, "1969-12-31T23:59:59.999999Z"},
		{"timestamp_ntz has no zone", value.TimestampNTZ(1631099471123456), "timestamp_ntz", tsNTZ, "2021-09-08 11:11:11.123456"},
		{"timestamp_ntz drops trailing zeros", value.TimestampNTZ(1631099471000000), "timestamp_ntz", tsNTZ, "2021-09-08 11:11:11"},
		{"string as is", value.String("a=b/c%d é"), "string", arrow.BinaryTypes.String, "a=b/c%d é"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, isNull, err := Format(tc.v, tc.deltaType)
			require.NoError(t, err)
			require.False(t, isNull)
			require.Equal(t, tc.want, s)
			back, err := Parse(s, true, tc.arrowType)
			require.NoError(t, err)
			require.True(t, value.Equal(tc.v, back), "parse(%q) = %s, want %s", s, back, tc.v)
		})
	}
}

// Directory names spell a timestamp as Spark's cast to string in UTC; every other
// type as Format does.
func TestDirValue(t *testing.T) {
	cases := []struct {
		name      string
		v         value.Value
		deltaType string
		want      string
	}{
		{"timestamp whole seconds", value.Timestamp(1631099471000000), "timestamp", "2021-09-08 11:11:11"},
		{"timestamp drops trailing zeros", value.Timestamp(1577866150001000), "timestamp", "2020-01-01 08:09:10.001"},
		{"timestamp before 1970", value.Timestamp(-1), "timestamp", "1969-12-31 23:59:59.999999"},
		{"timestamp_ntz", value.TimestampNTZ(1631099471123456), "timestamp_ntz", "2021-09-08 11:11:11.123456"},
		{"date", value.Date(0), "date", "1970-01-01"},
		{"double", value.Float64(1), "double", "1.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, isNull, err := DirValue(tc.v, tc.deltaType)
			require.NoError(t, err)
			require.False(t, isNull)
			require.Equal(t, tc.want, s)
		})
	}
	_, isNull, err := DirValue(value.Null(), "timestamp")
	require.NoError(t, err)
	require.True(t, isNull)
	_, _, err = DirValue(value.Int64(1), "timestamp")
	require.ErrorIs(t, err, ErrInvalidValue)
}

func TestNulls(t *testing.T) {
	for _, dt := range []string{"integer", "string", "timestamp", "binary"} {
		_, isNull, err := Format(value.Null(), dt)
		require.NoError(t, err)
		require.True(t, isNull, dt)
	}
	_, isNull, err := Format(value.String(""), "string")
	require.NoError(t, err)
	require.True(t, isNull, "Spark writes an empty string partition value as null")
	for _, at := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String, tsUTC} {
		v, err := Parse("", true, at)
		require.NoError(t, err)
		require.True(t, v.IsNull(), "empty string is NULL for %s", at)
		v, err = Parse("x", false, at)
		require.NoError(t, err)
		require.True(t, v.IsNull(), "JSON null is NULL for %s", at)
	}
}

func TestParseAcceptsOtherWritersSpellings(t *testing.T) {
	cases := []struct {
		name string
		s    string
		t    arrow.DataType
		want value.Value
	}{
		{"ISO timestamp with Z", "2021-09-08T11:11:11.000Z", tsUTC, value.Timestamp(1631099471000000)},
		{"ISO timestamp with offset", "2021-09-08T13:11:11+02:00", tsUTC, value.Timestamp(1631099471000000)},
		{"ISO timestamp_ntz with T", "2021-09-08T11:11:11.5", tsNTZ, value.TimestampNTZ(1631099471500000)},
		{"decimal with exponent", "1.5E+2", &arrow.Decimal128Type{Precision: 5, Scale: 1}, dec("150", 5, 1)},
		{"decimal with fewer fraction digits", "1.5", &arrow.Decimal128Type{Precision: 5, Scale: 3}, dec("1.5", 5, 3)},
		{"boolean any case", "TRUE", arrow.FixedWidthTypes.Boolean, value.Bool(true)},
		{"double Inf", "-Inf", arrow.PrimitiveTypes.Float64, value.Float64(math.Inf(-1))},
		{"binary raw bytes", "\x01\x02", arrow.BinaryTypes.Binary, value.Binary([]byte{1, 2})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.s, true, tc.t)
			require.NoError(t, err)
			require.True(t, value.Equal(tc.want, got), "got %s want %s", got, tc.want)
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name string
		s    string
		t    arrow.DataType
		err  error
	}{
		{"byte overflow", "128", arrow.PrimitiveTypes.Int8, ErrInvalidValue},
		{"not a number", "x1", arrow.PrimitiveTypes.Int64, ErrInvalidValue},
		{"decimal beyond scale", "1.234", &arrow.Decimal128Type{Precision: 10, Scale: 2}, ErrInvalidValue},
		{"decimal beyond precision", "1000", &arrow.Decimal128Type{Precision: 3, Scale: 0}, ErrInvalidValue},
		{"bad date", "2021-13-01", arrow.FixedWidthTypes.Date32, ErrInvalidValue},
		{"timestamp_ntz with zone", "2021-09-08T11:11:11Z", tsNTZ, ErrInvalidValue},
		{"boolean word", "yes", arrow.FixedWidthTypes.Boolean, ErrInvalidValue},
		{"nested type", "x", arrow.ListOf(arrow.PrimitiveTypes.Int8), ErrUnsupportedType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.s, true, tc.t)
			require.ErrorIs(t, err, tc.err)
			require.True(t, strings.HasPrefix(err.Error(), "partition: "), err.Error())
		})
	}
}

func TestFormatRejects(t *testing.T) {
	cases := []struct {
		name string
		v    value.Value
		dt   string
		err  error
	}{
		{"binary refused", value.Binary([]byte{1}), "binary", ErrUnsupportedType},
		{"kind mismatch", value.String("1"), "integer", ErrInvalidValue},
		{"decimal does not fit", dec("123.45", 5, 2), "decimal(4,2)", ErrInvalidValue},
		{"unknown type", value.Int64(1), "interval", ErrUnsupportedType},
		{"timestamp kind for ntz column", value.Timestamp(0), "timestamp_ntz", ErrInvalidValue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Format(tc.v, tc.dt)
			require.ErrorIs(t, err, tc.err)
		})
	}
}

func TestEscaping(t *testing.T) {
	cases := []struct{ in, escaped string }{
		{"plain-._~ é", "plain-._~ é"},
		{"2021-09-08 11:11:11", "2021-09-08 11%3A11%3A11"},
		{"bar+%21", "bar+%2521"},
		{"a/b=c?d#e", "a%2Fb%3Dc%3Fd%23e"},
		{"\"'*\\{[]^\x7f\x01\n", "%22%27%2A%5C%7B%5B%5D%5E%7F%01%0A"},
		{"}<>| ", "}<>| "},
	}
	for _, tc := range cases {
		require.Equal(t, tc.escaped, EscapePathName(tc.in), tc.in)
		require.Equal(t, tc.in, UnescapePathName(tc.escaped))
	}
	require.Equal(t, "50%", UnescapePathName("50%"), "lone percent kept")
	require.Equal(t, "%zz", UnescapePathName("%zz"))

	dir, err := DirName([]string{"a", "b:c", "s"}, []string{"1", "x/y", ""}, []bool{false, false, false})
	require.NoError(t, err)
	require.Equal(t, "a=1/b%3Ac=x%2Fy/s="+DefaultPartitionName, dir)
	_, err = DirName([]string{"a"}, nil, nil)
	require.ErrorIs(t, err, ErrInvalidValue)

	require.Equal(t, "a=2021-09-08%2011%253A11%253A11/f%C3%A9.parquet", EncodeLogPath("a=2021-09-08 11%3A11%3A11/fé.parquet"))
	p, err := DecodeLogPath("a=2021-09-08%2011%253A11%253A11/f%C3%A9.parquet")
	require.NoError(t, err)
	require.Equal(t, "a=2021-09-08 11%3A11%3A11/fé.parquet", p)
	_, err = DecodeLogPath("bad%2")
	require.ErrorIs(t, err, ErrInvalidValue)
}

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t testing.TB) string { return goldentest.Dir(t) }

var deltaToArrow = map[string]arrow.DataType{
	"boolean": arrow.FixedWidthTypes.Boolean, "byte": arrow.PrimitiveTypes.Int8, "short": arrow.PrimitiveTypes.Int16,
	"integer": arrow.PrimitiveTypes.Int32, "long": arrow.PrimitiveTypes.Int64, "float": arrow.PrimitiveTypes.Float32,
	"double": arrow.PrimitiveTypes.Float64, "string": arrow.BinaryTypes.String, "date": arrow.FixedWidthTypes.Date32,
	"timestamp": tsUTC, "timestamp_ntz": tsNTZ,
	"decimal(1,0)": &arrow.Decimal128Type{Precision: 1, Scale: 0}, "decimal(12,5)": &arrow.Decimal128Type{Precision: 12, Scale: 5},
}

type goldenAdd struct {
	path   string
	values map[string]*string
	cols   []string
	types  map[string]string
}

func goldenAdds(t *testing.T, table string) []goldenAdd {
	files, err := filepath.Glob(filepath.Join(table, "_delta_log", "*.json"))
	require.NoError(t, err)
	var out []goldenAdd
	var cols []string
	types := map[string]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var a struct {
				MetaData *struct {
					SchemaString     string   `json:"schemaString"`
					PartitionColumns []string `json:"partitionColumns"`
				} `json:"metaData"`
				Add *struct {
					Path            string             `json:"path"`
					PartitionValues map[string]*string `json:"partitionValues"`
				} `json:"add"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
			if a.MetaData != nil {
				cols = a.MetaData.PartitionColumns
				var s struct {
					Fields []struct {
						Name string `json:"name"`
						Type any    `json:"type"`
					} `json:"fields"`
				}
				require.NoError(t, json.Unmarshal([]byte(a.MetaData.SchemaString), &s))
				types = map[string]string{}
				for _, f := range s.Fields {
					if ts, ok := f.Type.(string); ok {
						types[f.Name] = ts
					}
				}
			}
			if a.Add != nil && len(cols) > 0 {
				out = append(out, goldenAdd{a.Add.Path, a.Add.PartitionValues, cols, types})
			}
		}
		fh.Close()
	}
	return out
}

// Spark-written tables (written before Spark wrote timestamps in ISO 8601): every
// value parses; Format writes it as the log holds it, but for timestamps, which it
// writes in ISO 8601 (and which parse back to the same instant); DirValue spells it as
// the log holds it, so DirName + EncodeLogPath reproduce the directory part of add.path
// exactly.
func TestGoldenSparkPathsAndValues(t *testing.T) {
	g := goldenDir(t)
	tables := []string{
		"delta-golden/data-reader-partition-values", "delta-golden/data-reader-escaped-chars",
		"delta-golden/kernel-timestamp-int96", "delta-golden/basic-decimal-table",
		"delta-golden/data-reader-timestamp_ntz", "delta-golden/dv-partitioned-with-checkpoint",
		"dat/basic_partitioned",
	}
	checked, timestamps := 0, 0
	for _, name := range tables {
		t.Run(name, func(t *testing.T) {
			adds := goldenAdds(t, filepath.Join(g, name, "delta"))
			require.NotEmpty(t, adds)
			for _, a := range adds {
				vals := make([]string, len(a.cols))
				nulls := make([]bool, len(a.cols))
				for i, c := range a.cols {
					v := a.values[c]
					if v == nil {
						nulls[i] = true
					} else {
						vals[i] = *v
					}
					at, ok := deltaToArrow[a.types[c]]
					require.True(t, ok, "type %q", a.types[c])
					parsed, err := Parse(vals[i], v != nil, at)
					require.NoError(t, err)
					s, isNull, err := Format(parsed, a.types[c])
					require.NoError(t, err)
					require.Equal(t, nulls[i] || vals[i] == "", isNull)
					d, _, err := DirValue(parsed, a.types[c])
					require.NoError(t, err)
					if isNull {
						continue
					}
					require.Equal(t, vals[i], d, "column %s", c)
					if a.types[c] == "timestamp" {
						require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, s, "column %s", c)
						back, err := Parse(s, true, at)
						require.NoError(t, err)
						require.True(t, value.Equal(parsed, back), "column %s: %s reads back as %s", c, s, back)
						timestamps++
					} else {
						require.Equal(t, vals[i], s, "column %s", c)
					}
				}
				dir, err := DirName(a.cols, vals, nulls)
				require.NoError(t, err)
				require.Equal(t, path.Dir(a.path), EncodeLogPath(dir), "add.path %s", a.path)
				checked++
			}
		})
	}
	require.Greater(t, checked, 20)
	require.Greater(t, timestamps, 5)
}

// Any writer: decoding add.path and unescaping each directory value gives back the
// partition value in the log (delta-rs 0.8 escaped a space as %20, which Spark does not).
func TestGoldenLogPathsDecodeToPartitionValues(t *testing.T) {
	g := goldenDir(t)
	for _, name := range []string{"delta-rs/delta-0.8.0-special-partition", "delta-golden/data-reader-escaped-chars"} {
		for _, a := range goldenAdds(t, filepath.Join(g, name, "delta")) {
			rel, err := DecodeLogPath(a.path)
			require.NoError(t, err)
			segs := strings.Split(path.Dir(rel), "/")
			require.Len(t, segs, len(a.cols))
			for i, seg := range segs {
				col, val, ok := strings.Cut(seg, "=")
				require.True(t, ok)
				require.Equal(t, a.cols[i], UnescapePathName(col))
				require.Equal(t, *a.values[a.cols[i]], UnescapePathName(val), a.path)
			}
		}
	}
}

// P4: NULL and the string "__HIVE_DEFAULT_PARTITION__" get different directories, and
// the string's directory unescapes to the string.
func TestDirNameNullAndDefaultPartitionString(t *testing.T) {
	null, err := DirName([]string{"p"}, []string{""}, []bool{true})
	require.NoError(t, err)
	str, err := DirName([]string{"p"}, []string{DefaultPartitionName}, []bool{false})
	require.NoError(t, err)
	require.Equal(t, "p="+DefaultPartitionName, null)
	require.NotEqual(t, null, str)
	require.Equal(t, "p=%5F_HIVE_DEFAULT_PARTITION__", str)
	require.Equal(t, DefaultPartitionName, UnescapePathName(strings.TrimPrefix(str, "p=")))
	// A value that merely contains the name, or spells it in another case, is escaped as usual.
	for _, v := range []string{"x" + DefaultPartitionName, strings.ToLower(DefaultPartitionName), "%5F_HIVE_DEFAULT_PARTITION__"} {
		d, err := DirName([]string{"p"}, []string{v}, []bool{false})
		require.NoError(t, err)
		require.Equal(t, "p="+EscapePathName(v), d)
		require.NotEqual(t, str, d)
	}
}

// FuzzDirNameInjective: different partition values (NULL counting as one value, the
// empty string being NULL) never share a directory (invariant P4), and a non-NULL
// value's directory unescapes to the value.
func FuzzDirNameInjective(f *testing.F) {
	f.Add("", true, DefaultPartitionName, false)
	f.Add(DefaultPartitionName, false, "%5F_HIVE_DEFAULT_PARTITION__", false)
	f.Add("a/b", false, "a%2Fb", false)
	f.Fuzz(func(t *testing.T, a string, aNull bool, b string, bNull bool) {
		aNull, bNull = aNull || a == "", bNull || b == ""
		da, err := DirName([]string{"p"}, []string{a}, []bool{aNull})
		if err != nil {
			t.Fatal(err)
		}
		db, err := DirName([]string{"p"}, []string{b}, []bool{bNull})
		if err != nil {
			t.Fatal(err)
		}
		same := aNull == bNull && (aNull || a == b)
		if (da == db) != same {
			t.Fatalf("DirName(%q null=%v) = %q, DirName(%q null=%v) = %q", a, aNull, da, b, bNull, db)
		}
		if !aNull {
			if got := UnescapePathName(strings.TrimPrefix(da, "p=")); got != a {
				t.Fatalf("directory %q of %q unescapes to %q", da, a, got)
			}
		}
	})
}
