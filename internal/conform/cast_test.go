package conform

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// fromJSON builds an array of type t from its JSON form.
func fromJSON(t *testing.T, mem memory.Allocator, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	arr, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
	require.NoError(t, err, js)
	return arr
}

// valuesOf renders an array's values (null as "null"), "|"-separated.
func valuesOf(a arrow.Array) string {
	out := make([]string, a.Len())
	for i := range out {
		switch d := a.(type) {
		case *array.Decimal128:
			if a.IsNull(i) {
				out[i] = "null"
			} else {
				out[i] = d.Value(i).ToString(d.DataType().(*arrow.Decimal128Type).Scale)
			}
		default:
			if a.IsNull(i) {
				out[i] = "null"
			} else {
				out[i] = a.ValueStr(i)
			}
		}
	}
	return strings.Join(out, "|")
}

var (
	tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

// TestStoreAssignment checks the conversions of a write against Spark's ANSI store
// assignment: what converts, to which values, what fails value by value (naming
// the value, both types and the row) and what is refused before any row.
func TestStoreAssignment(t *testing.T) {
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	cases := []struct {
		name     string
		from, to arrow.DataType
		in       string
		want     string // values, or "" when an error is wanted
		errRow   int64  // the failing row (0-based) when want is ""
		errValue string
		refused  bool // refused before any row (ErrSchemaMismatch)
	}{
		{name: "int widens to bigint", from: arrow.PrimitiveTypes.Int32, to: arrow.PrimitiveTypes.Int64, in: `[1, null, -2147483648]`, want: "1|null|-2147483648"},
		{name: "bigint narrows to int when it fits", from: arrow.PrimitiveTypes.Int64, to: arrow.PrimitiveTypes.Int32, in: `[5, 2147483647, -2147483648]`, want: "5|2147483647|-2147483648"},
		{name: "bigint narrows to int: a value out of range fails", from: arrow.PrimitiveTypes.Int64, to: arrow.PrimitiveTypes.Int32, in: `[5, 2147483648]`, errRow: 1, errValue: "2147483648"},
		{name: "smallint to tinyint", from: arrow.PrimitiveTypes.Int16, to: arrow.PrimitiveTypes.Int8, in: `[127, -128, 128]`, errRow: 2, errValue: "128"},
		{name: "unsigned to bigint", from: arrow.PrimitiveTypes.Uint32, to: arrow.PrimitiveTypes.Int64, in: `[4294967295]`, want: "4294967295"},
		{name: "unsigned 64 beyond bigint fails", from: arrow.PrimitiveTypes.Uint64, to: arrow.PrimitiveTypes.Int64, in: `[1, 9223372036854775808]`, errRow: 1, errValue: "9223372036854775808"},
		{name: "double to bigint truncates toward zero", from: arrow.PrimitiveTypes.Float64, to: arrow.PrimitiveTypes.Int64, in: `[1.9, -1.9, 0.5]`, want: "1|-1|0"},
		{name: "double NaN into an integer fails", from: arrow.PrimitiveTypes.Float64, to: arrow.PrimitiveTypes.Int32, in: `[1, "NaN"]`, errRow: 1, errValue: "NaN"},
		{name: "double beyond bigint fails", from: arrow.PrimitiveTypes.Float64, to: arrow.PrimitiveTypes.Int64, in: `[9.3e18]`, errRow: 0, errValue: "9.3e+18"},
		{name: "float widens to double", from: arrow.PrimitiveTypes.Float32, to: arrow.PrimitiveTypes.Float64, in: `[1.5, null]`, want: "1.5|null"},
		{name: "double narrows to float; beyond float's range fails", from: arrow.PrimitiveTypes.Float64, to: arrow.PrimitiveTypes.Float32, in: `[1.5, 1e300]`, errRow: 1, errValue: "1e+300"},
		{name: "int to double", from: arrow.PrimitiveTypes.Int32, to: arrow.PrimitiveTypes.Float64, in: `[7]`, want: "7"},
		{name: "decimal(16,2) fills decimal(15,2) when every value fits", from: dec(16, 2), to: dec(15, 2), in: `["1234567890123.45", "-0.01", null]`, want: "1234567890123.45|-0.01|null"},
		{name: "decimal(16,2) into decimal(15,2): 14 integer digits fail", from: dec(16, 2), to: dec(15, 2), in: `["1.00", "12345678901234.56"]`, errRow: 1, errValue: "12345678901234.56"},
		{name: "a failing decimal is spelled with its scale's digits", from: dec(16, 2), to: dec(15, 2), in: `["12345678901234.50"]`, errRow: 0, errValue: "12345678901234.50"},
		{name: "decimal scale up", from: dec(5, 2), to: dec(10, 4), in: `["123.45"]`, want: "123.4500"},
		{name: "decimal scale down rounds half away from zero", from: dec(6, 3), to: dec(5, 2), in: `["1.005", "-1.005", "1.004"]`, want: "1.01|-1.01|1.00"},
		{name: "bigint to decimal checks digits", from: arrow.PrimitiveTypes.Int64, to: dec(5, 2), in: `[999, 1000]`, errRow: 1, errValue: "1000"},
		{name: "double to decimal through its shortest spelling", from: arrow.PrimitiveTypes.Float64, to: dec(10, 2), in: `[0.1, 2.675, -1.005]`, want: "0.10|2.68|-1.01"},
		{name: "decimal to int truncates", from: dec(6, 2), to: arrow.PrimitiveTypes.Int32, in: `["12.99", "-12.99"]`, want: "12|-12"},
		{name: "decimal to double", from: dec(6, 2), to: arrow.PrimitiveTypes.Float64, in: `["12.25"]`, want: "12.25"},
		{name: "int to string", from: arrow.PrimitiveTypes.Int32, to: arrow.BinaryTypes.String, in: `[42, -1]`, want: "42|-1"},
		{name: "double to string as Spark (Java) spells it", from: arrow.PrimitiveTypes.Float64, to: arrow.BinaryTypes.String, in: `[1, 0.001, 1e7, 1.5e-5, 123.25, "NaN", "Inf"]`, want: "1.0|0.001|1.0E7|1.5E-5|123.25|NaN|Infinity"},
		{name: "decimal to string", from: dec(6, 2), to: arrow.BinaryTypes.String, in: `["-0.50"]`, want: "-0.50"},
		{name: "boolean to string", from: arrow.FixedWidthTypes.Boolean, to: arrow.BinaryTypes.String, in: `[true, false]`, want: "true|false"},
		{name: "date to string", from: arrow.FixedWidthTypes.Date32, to: arrow.BinaryTypes.String, in: `[19783]`, want: "2024-03-01"},
		{name: "timestamp to string in UTC", from: tsUTC, to: arrow.BinaryTypes.String, in: `["2024-03-01T10:00:00.5Z"]`, want: "2024-03-01 10:00:00.5"},
		{name: "large string to string", from: arrow.BinaryTypes.LargeString, to: arrow.BinaryTypes.String, in: `["a", null]`, want: "a|null"},
		{name: "binary to string when valid UTF-8", from: arrow.BinaryTypes.Binary, to: arrow.BinaryTypes.String, in: `["aGk=", "/w=="]`, errRow: 1, errValue: "/w=="},
		{name: "date to timestamp is midnight UTC", from: arrow.FixedWidthTypes.Date32, to: tsUTC, in: `[19783]`, want: "2024-03-01T00:00:00Z"},
		{name: "timestamp to date in UTC", from: tsUTC, to: arrow.FixedWidthTypes.Date32, in: `["2024-03-01T23:59:59Z", "1969-12-31T23:00:00Z"]`, want: "2024-03-01|1969-12-31"},
		{name: "timestamp_ntz to timestamp reads UTC wall-clock time", from: tsNTZ, to: tsUTC, in: `["2024-03-01T10:00:00"]`, want: "2024-03-01T10:00:00Z"},
		{name: "nanosecond timestamps floor to microseconds", from: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, to: tsUTC, in: `[-1, 1999]`, want: "1969-12-31T23:59:59.999999Z|1970-01-01T00:00:00.000001Z"},
		{name: "timestamp zone spelling differs only", from: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, to: tsUTC, in: `[0]`, want: "1970-01-01T00:00:00Z"},
		{name: "string to int is refused", from: arrow.BinaryTypes.String, to: arrow.PrimitiveTypes.Int32, refused: true},
		{name: "string to date is refused", from: arrow.BinaryTypes.String, to: arrow.FixedWidthTypes.Date32, refused: true},
		{name: "boolean to int is refused", from: arrow.FixedWidthTypes.Boolean, to: arrow.PrimitiveTypes.Int32, refused: true},
		{name: "int to boolean is refused", from: arrow.PrimitiveTypes.Int32, to: arrow.FixedWidthTypes.Boolean, refused: true},
		{name: "binary to int is refused", from: arrow.BinaryTypes.Binary, to: arrow.PrimitiveTypes.Int64, refused: true},
		{name: "date to int is refused", from: arrow.FixedWidthTypes.Date32, to: arrow.PrimitiveTypes.Int32, refused: true},
		{name: "string to binary is refused", from: arrow.BinaryTypes.String, to: arrow.BinaryTypes.Binary, refused: true},
		{name: "struct to string is refused", from: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), to: arrow.BinaryTypes.String, refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			conv, err := Converter(c.from, c.to, "col")
			if c.refused {
				require.ErrorIs(t, err, ErrSchemaMismatch)
				require.Contains(t, err.Error(), `column "col"`)
				return
			}
			require.NoError(t, err)
			src := fromJSON(t, mem, c.from, c.in)
			defer src.Release()
			out, err := Apply(conv, mem, src, func(i int) int64 { return 100 + int64(i) })
			if c.want == "" {
				var ce *CastError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, ErrValueDoesNotFit)
				require.Equal(t, "col", ce.Column)
				require.Equal(t, 100+c.errRow, ce.Row)
				require.Contains(t, ce.Value, c.errValue)
				require.Contains(t, err.Error(), ce.From)
				require.Contains(t, err.Error(), ce.To)
				return
			}
			require.NoError(t, err)
			defer out.Release()
			require.True(t, arrow.TypeEqual(out.DataType(), c.to), "%s", out.DataType())
			require.Equal(t, c.want, valuesOf(out))
		})
	}
}

// TestConformNested: structs are matched by field name (in any order and letter
// case), missing nullable fields are NULL, and lists and maps convert their
// elements; errors inside lists name the row of the list.
func TestConformNested(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "addr", Type: arrow.StructOf(
			arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		), Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int16), Nullable: true},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	source := arrow.NewSchema([]arrow.Field{
		{Name: "TAGS", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "addr", Type: arrow.StructOf(arrow.Field{Name: "ZIP", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.LargeString, arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(mem, source, strings.NewReader(`[
		{"TAGS": [1, 2], "addr": {"ZIP": 75001}, "id": 1, "attrs": [{"key": "a", "value": 1}]},
		{"TAGS": null, "addr": null, "id": 2, "attrs": null},
		{"TAGS": [], "addr": {"ZIP": null}, "id": 3, "attrs": []}
	]`))
	require.NoError(t, err)
	defer rec.Release()
	c := New(table, mem)
	out, err := c.Conform(context.Background(), rec)
	require.NoError(t, err)
	defer out.Release()
	require.True(t, out.Schema().Equal(table))
	js, err := out.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"id":1,"addr":{"city":null,"zip":75001},"tags":[1,2],"attrs":[{"key":"a","value":1}],"note":null},
		{"id":2,"addr":null,"tags":null,"attrs":null,"note":null},
		{"id":3,"addr":{"city":null,"zip":null},"tags":[],"attrs":[],"note":null}
	]`, string(js))

	// A list element that does not fit names the row of its list (the rows
	// conformed before count: this is rows 3 and 4 of the input).
	bad, _, err := array.RecordFromJSON(mem, source, strings.NewReader(`[
		{"TAGS": [1], "addr": null, "id": 4, "attrs": null},
		{"TAGS": [1, 40000], "addr": null, "id": 5, "attrs": null}
	]`))
	require.NoError(t, err)
	defer bad.Release()
	_, err = c.Conform(context.Background(), bad)
	var ce *CastError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "tags.element", ce.Column)
	require.EqualValues(t, 4, ce.Row)
	require.Equal(t, "40000", ce.Value)

	// A NOT NULL column the source lacks, an extra column, a refused nested type.
	for _, tc := range []struct {
		src  *arrow.Schema
		want error
		msg  string
	}{
		{arrow.NewSchema([]arrow.Field{{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), ErrNullInNonNullable, `column "id" (bigint) is NOT NULL and missing`},
		{arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "extra", Type: arrow.PrimitiveTypes.Int64}}, nil), ErrSchemaMismatch, `column "extra" (bigint) is not in the table schema`},
		{arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "addr", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String})}}, nil), ErrSchemaMismatch, `column "addr.zip": table has int, data has string`},
		{arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "addr", Type: arrow.StructOf(arrow.Field{Name: "street", Type: arrow.BinaryTypes.String})}}, nil), ErrSchemaMismatch, `field "addr.street" (string) is not in the table schema`},
	} {
		err := New(table, nil).Check(tc.src)
		require.ErrorIs(t, err, tc.want)
		require.Contains(t, err.Error(), tc.msg)
	}
}

// TestConformNotNull: a NULL in a NOT NULL column or field names the column and
// the row.
func TestConformNotNull(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64}), Nullable: true},
	}, nil)
	source := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	}, nil)
	for _, tc := range []struct{ rows, col, row string }{
		{`[{"id": 1, "s": null}, {"id": null, "s": null}]`, `"id"`, "row 2"},
		{`[{"id": 1, "s": null}, {"id": 2, "s": {"x": null}}]`, `"s.x"`, "row 2"},
	} {
		rec, _, err := array.RecordFromJSON(mem, source, strings.NewReader(tc.rows))
		require.NoError(t, err)
		_, err = New(table, mem).Conform(context.Background(), rec)
		rec.Release()
		require.True(t, errors.Is(err, ErrNullInNonNullable), "%v", err)
		require.Contains(t, err.Error(), tc.col)
		require.Contains(t, err.Error(), tc.row)
	}
}

// TestJavaFloatString: the string a double becomes is Java's Double.toString.
func TestJavaFloatString(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", -2.5: "-2.5", 1e-3: "0.001", 9999999: "9999999.0", 1e7: "1.0E7",
		1.25e-4: "1.25E-4", 123456789012: "1.23456789012E11", 1e21: "1.0E21",
	} {
		require.Equal(t, want, javaFloatString(f, 64), "%v", f)
	}
	require.Equal(t, "0.1", javaFloatString(float64(float32(0.1)), 32))
}

// TestConformOptional: a NOT NULL column marked Optional may be missing from the
// input; it becomes a placeholder of NULLs that Missing lists. Unmarked, the same
// input is refused before any row is converted.
func TestConformOptional(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "gen", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	source := arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int32}}, nil)
	rec, _, err := array.RecordFromJSON(mem, source, strings.NewReader(`[{"ID": 1}, {"ID": 2}]`))
	require.NoError(t, err)
	defer rec.Release()

	plain := New(table, mem)
	require.ErrorIs(t, plain.Check(source), ErrNullInNonNullable)
	_, err = plain.Conform(context.Background(), rec)
	require.ErrorIs(t, err, ErrNullInNonNullable)
	require.Contains(t, err.Error(), `"gen"`)

	c := New(table, mem)
	c.Optional = []bool{false, true, false}
	out, err := c.Conform(context.Background(), rec)
	require.NoError(t, err)
	defer out.Release()
	require.Equal(t, []int{1}, c.Missing())
	require.True(t, out.Schema().Equal(table))
	require.Equal(t, "1|2", valuesOf(out.Column(0)))
	require.Equal(t, "null|null", valuesOf(out.Column(1)))
	require.Equal(t, "null|null", valuesOf(out.Column(2)))
}

// TestErrorsCarryTheFacadePrefix: the errors reach users through package table
// (which re-exports them), and every error of a table write starts with "table: ".
func TestErrorsCarryTheFacadePrefix(t *testing.T) {
	for _, err := range []error{ErrSchemaMismatch, ErrNullInNonNullable, ErrValueDoesNotFit,
		&CastError{Column: "c", From: "bigint", To: "int", Value: "1", Reason: "r"}} {
		require.True(t, strings.HasPrefix(err.Error(), "table: "), "%q", err)
	}
}
