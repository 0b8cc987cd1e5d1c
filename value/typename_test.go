package value

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestDisplayTypeSpellsDeltaTypesAsSparkSQL(t *testing.T) {
	cases := []struct {
		t    arrow.DataType
		want string
	}{
		{arrow.FixedWidthTypes.Boolean, "boolean"},
		{arrow.PrimitiveTypes.Int8, "tinyint"},
		{arrow.PrimitiveTypes.Int16, "smallint"},
		{arrow.PrimitiveTypes.Int32, "int"},
		{arrow.PrimitiveTypes.Int64, "bigint"},
		{arrow.PrimitiveTypes.Float32, "float"},
		{arrow.PrimitiveTypes.Float64, "double"},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, "decimal(10,2)"},
		{&arrow.Decimal256Type{Precision: 38, Scale: 0}, "decimal(38,0)"},
		{arrow.BinaryTypes.String, "string"},
		{arrow.BinaryTypes.LargeString, "string"},
		{arrow.BinaryTypes.StringView, "string"},
		{arrow.BinaryTypes.Binary, "binary"},
		{&arrow.FixedSizeBinaryType{ByteWidth: 4}, "binary"},
		{arrow.FixedWidthTypes.Date32, "date"},
		{arrow.FixedWidthTypes.Date64, "date"},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "timestamp"},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}, "timestamp"},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, "timestamp_ntz"},
		{arrow.Null, "void"},
		{&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, "string"},
		{arrow.ListOf(arrow.PrimitiveTypes.Int32), "array<int>"},
		{arrow.LargeListOf(arrow.BinaryTypes.String), "array<string>"},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Int64)), "map<string,array<bigint>>"},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "b_2", Type: arrow.BinaryTypes.String}),
			"struct<a:int,b_2:string>"},
		{arrow.StructOf(arrow.Field{Name: "my col", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "x`y", Type: arrow.FixedWidthTypes.Boolean}),
			"struct<`my col`:int,`x``y`:boolean>"},
		// No Delta counterpart: the Arrow name.
		{arrow.PrimitiveTypes.Uint32, "uint32"},
		{arrow.FixedWidthTypes.Float16, "float16"},
		{arrow.StructOf(arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Uint8}), "struct<u:uint8>"},
		{nil, "<nil>"},
	}
	for _, c := range cases {
		if got := DisplayType(c.t); got != c.want {
			t.Errorf("DisplayType(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

func TestDisplayTypesShowsTheDifference(t *testing.T) {
	a, b := DisplayTypes(arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String)
	if a != "bigint" || b != "string" {
		t.Errorf("got %q, %q", a, b)
	}
	a, b = DisplayTypes(arrow.BinaryTypes.LargeString, arrow.BinaryTypes.String)
	if a != "string (Arrow large_utf8)" || b != "string (Arrow utf8)" {
		t.Errorf("same Delta type, other Arrow types: got %q, %q", a, b)
	}
	a, b = DisplayTypes(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	if a != "string" || b != "string" {
		t.Errorf("equal types: got %q, %q", a, b)
	}
}
