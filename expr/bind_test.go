package expr

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func testSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "sh", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "dbl", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "Name", Type: arrow.BinaryTypes.String, Nullable: true},
		), Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "Mixed", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "mixed", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "dup", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "DUP", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "tsns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	}, nil)
}

func TestBindNormalises(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"NOT flips comparison", "NOT id < 5", "id >= 5"},
		{"NOT pushes through AND (De Morgan)", "NOT (id = 1 AND s = 'a')", "id <> 1 OR s <> 'a'"},
		{"NOT pushes through OR", "NOT (id = 1 OR s IS NULL)", "id <> 1 AND s IS NOT NULL"},
		{"NOT IN becomes IN negated", "NOT id IN (3, 1, 2, 1)", "id NOT IN (1, 2, 3)"},
		{"NOT NOT IN becomes IN", "NOT id NOT IN (1, 2)", "id IN (1, 2)"},
		{"NOT LIKE", "NOT s LIKE 'a%'", "s NOT LIKE 'a%'"},
		{"LIKE '%' is IS NOT NULL", "s LIKE '%%'", "s IS NOT NULL"},
		{"NOT LIKE '%' is never true", "s NOT LIKE '%'", "FALSE"},
		{"BETWEEN desugars", "id BETWEEN 1 AND 5", "id >= 1 AND id <= 5"},
		{"NOT BETWEEN desugars", "id NOT BETWEEN 1 AND 5", "id < 1 OR id > 5"},
		{"NOT of NOT BETWEEN", "NOT id NOT BETWEEN 1 AND 5", "id >= 1 AND id <= 5"},
		{"literal on the left flips", "5 < id", "id > 5"},
		{"case-insensitive column", "ID = 1", "id = 1"},
		{"exact match wins over case-insensitive", "mixed = 1", "mixed = 1"},
		{"nested column case-insensitive", "ST.name = 'a'", "st.Name = 'a'"},
		{"IN with one value is equality", "id IN (7)", "id = 7"},
		{"IN drops NULL", "id IN (1, NULL, 2)", "id IN (1, 2)"},
		{"NOT IN with NULL is never true", "id NOT IN (1, NULL)", "FALSE"},
		{"NOT of IN with NULL is never true", "NOT id IN (1, NULL)", "FALSE"},
		{"comparison with NULL is never true", "id = NULL", "FALSE"},
		{"null-safe equality with NULL is IS NULL", "id <=> NULL", "id IS NULL"},
		{"null-safe equality with value is =", "id <=> 3", "id = 3"},
		{"NOT null-safe equality", "NOT id <=> 3", "id IS NULL OR id <> 3"},
		{"byte = 300 is never true", "b = 300", "FALSE"},
		{"byte <> 300 is every non-null row", "b <> 300", "b IS NOT NULL"},
		{"byte < 300 keeps all non-null rows", "b < 300", "b <= 127"},
		{"byte > 300 is never true", "b > 300", "FALSE"},
		{"byte > -300 keeps all non-null rows", "b > -300", "b >= -128"},
		{"int vs fractional decimal: <", "i < 1.5", "i <= 1"},
		{"int vs fractional decimal: >", "i > 1.5", "i >= 2"},
		{"int vs negative fraction: >=", "i >= -1.5", "i >= -1"},
		{"int vs integral decimal is exact", "i = 2.00", "i = 2"},
		{"int vs fraction: =", "i = 1.5", "FALSE"},
		{"int vs double NaN: < NaN is every non-null", "i < DOUBLE 'NaN'", "i <= 2147483647"},
		{"decimal literal with more scale: = matches nothing", "d = 1.005", "FALSE"},
		{"decimal literal with more scale: < is <= floor", "d < 1.005", "d <= 1.00"},
		{"decimal literal with more scale: >= is >= ceil", "d >= 1.005", "d >= 1.01"},
		{"decimal literal with less scale is rescaled", "d = 1.5", "d = 1.50"},
		{"decimal vs integer", "d > 7", "d > 7.00"},
		{"decimal out of precision", "d < 1000", "d <= 999.99"},
		{"decimal vs string number", "price = '12.5'", "price = 12.50"},
		{"float vs decimal literal", "dbl < 0.5", "dbl < 5e-01"},
		{"double vs NaN string", "dbl = 'NaN'", "dbl = DOUBLE 'NaN'"},
		{"date vs string", "dt = '2024-01-31'", "dt = DATE '2024-01-31'"},
		{"date vs timestamp literal rounds", "dt < TIMESTAMP '2024-01-31 12:00:00'", "dt <= DATE '2024-01-31'"},
		{"date vs timestamp literal at midnight is exact", "dt >= TIMESTAMP '2024-01-31 00:00:00'", "dt >= DATE '2024-01-31'"},
		{"timestamp vs date literal is midnight UTC", "ts >= DATE '2024-01-31'", "ts >= TIMESTAMP '2024-01-31 00:00:00+00:00'"},
		{"timestamp vs zone-less literal is UTC", "ts < TIMESTAMP '2024-01-31 10:00:00'", "ts < TIMESTAMP '2024-01-31 10:00:00+00:00'"},
		{"timestamp vs string with zone", "ts = '2024-01-31 10:00:00-01:00'", "ts = TIMESTAMP '2024-01-31 11:00:00+00:00'"},
		{"timestamp_ntz keeps wall clock", "ntz = TIMESTAMP '2024-01-31 10:00:00'", "ntz = TIMESTAMP '2024-01-31 10:00:00'"},
		{"binary vs string", "bin = 'ab'", "bin = X'6162'"},
		{"boolean", "flag = TRUE", "flag = TRUE"},
		{"constant comparison", "1 = 1", "TRUE"},
		{"constant IS NULL", "NULL IS NULL AND id = 1", "id = 1"},
		{"column vs column", "NOT id < i", "id >= i"},
		{"IN with out-of-range value drops it", "b IN (1, 300)", "b = 1"},
		{"NOT IN with only impossible values is IS NOT NULL", "b NOT IN (300, 1.5)", "b IS NOT NULL"},
	}
	sc := testSchema()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bd, err := Bind(MustParse(tc.in), sc)
			if err != nil {
				t.Fatalf("Bind(%q): %v", tc.in, err)
			}
			if got := bd.String(); got != tc.want {
				t.Fatalf("Bind(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestBindErrorsAreClear(t *testing.T) {
	cases := []struct {
		name, in string
		is       error
		msg      string
	}{
		{"string that is not a number vs decimal", "price = 'abc'", ErrType, `expr: cannot compare column "price" (decimal(10,2)) with 'abc'`},
		{"unknown column lists candidates", "prise > 1", ErrUnknownColumn, `expr: unknown column "prise" (did you mean "price"?)`},
		{"unknown column without candidates", "zzzzzz = 1", ErrUnknownColumn, `expr: unknown column "zzzzzz"`},
		{"double-quoted string is a column name, with a hint", `s = "JP"`, ErrUnknownColumn, `expr: unknown column "JP"; double quotes delimit column names: for the string, use single quotes ('JP')`},
		{"double-quoted misspelt column: candidates and the string hint", `"prise" > 1`, ErrUnknownColumn, `expr: unknown column "prise" (did you mean "price"?); double quotes delimit column names: for the string, use single quotes ('prise')`},
		{"double-quoted hint keeps quotes in the suggestion", `s = "it's"`, ErrUnknownColumn, `expr: unknown column "` + "`it's`" + `"; double quotes delimit column names: for the string, use single quotes ('it''s')`},
		{"ambiguous case-insensitive column", "Dup = 1", ErrAmbiguousColumn, `expr: ambiguous column: "Dup" matches several fields case-insensitively`},
		{"date vs garbage", "dt = 'yesterday'", ErrType, `expr: cannot compare column "dt" (date) with 'yesterday': not a date (YYYY-MM-DD)`},
		{"string vs number", "s = 5", ErrType, `expr: cannot compare column "s" (string) with 5`},
		{"LIKE on a number", "id LIKE 'a%'", ErrType, `expr: cannot compare column "id" (bigint) with LIKE 'a%': LIKE needs a string column`},
		{"nanosecond timestamps unsupported", "tsns = 1", ErrUnsupportedType, `expr: unsupported column type: column "tsns" has type timestamp_ntz (Arrow timestamp[ns])`},
		{"struct is not a leaf", "st = 1", ErrUnsupportedType, `expr: unsupported column type: column "st" has type struct<x:bigint,Name:string>`},
		{"path through a non-struct", "id.x = 1", ErrUnknownColumn, `expr: unknown column: column "id.x": "id" is not a struct`},
		{"column vs column of different kinds", "id < s", ErrType, `expr: cannot compare column "id" (bigint) with column "s" (string)`},
	}
	sc := testSchema()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Parse(tc.in)
			if err == nil {
				_, err = Bind(e, sc)
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("Bind(%q) error = %v, want errors.Is %v", tc.in, err, tc.is)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Fatalf("Bind(%q) error = %q, want %q", tc.in, err.Error(), tc.msg)
			}
		})
	}
}
