package input_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/input"
)

func TestUnionSchema(t *testing.T) {
	i64, str := arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	schema := func(fs ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fs, nil) }
	f := func(name string, typ arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: typ, Nullable: nullable}
	}
	for _, tc := range []struct {
		name string
		in   []*arrow.Schema
		want *arrow.Schema
	}{
		{"none", nil, schema()},
		{"nil schemas are skipped", []*arrow.Schema{nil, schema(f("a", i64, false)), nil}, schema(f("a", i64, true))},
		{"columns in order of first appearance, all nullable",
			[]*arrow.Schema{schema(f("a", i64, false), f("b", str, true)), schema(f("c", str, false), f("a", i64, true))},
			schema(f("a", i64, true), f("b", str, true), f("c", str, true))},
		{"names match case-insensitively; the first spelling and type win",
			[]*arrow.Schema{schema(f("Id", i64, true)), schema(f("ID", str, true), f("id", str, true))},
			schema(f("Id", i64, true))},
		{"struct fields are united, also inside lists and maps",
			[]*arrow.Schema{
				schema(f("s", arrow.StructOf(f("x", i64, true)), true),
					f("l", arrow.ListOf(arrow.StructOf(f("x", i64, true))), true),
					f("m", arrow.MapOf(str, arrow.StructOf(f("x", i64, true))), true)),
				schema(f("S", arrow.StructOf(f("X", str, true), f("y", str, false)), true),
					f("l", arrow.ListOf(arrow.StructOf(f("y", str, true))), true),
					f("m", arrow.MapOf(str, arrow.StructOf(f("y", str, true))), true)),
			},
			schema(f("s", arrow.StructOf(f("x", i64, true), f("y", str, true)), true),
				f("l", arrow.ListOf(arrow.StructOf(f("x", i64, true), f("y", str, true))), true),
				f("m", arrow.MapOf(str, arrow.StructOf(f("x", i64, true), f("y", str, true))), true))},
		{"a dictionary column unites as its value type",
			[]*arrow.Schema{schema(f("s", arrow.StructOf(f("x", i64, true)), true)),
				schema(f("s", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.StructOf(f("z", str, true))}, true))},
			schema(f("s", arrow.StructOf(f("x", i64, true), f("z", str, true)), true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := input.UnionSchema(tc.in...)
			require.True(t, tc.want.Equal(got), "got %s\nwant %s", got, tc.want)
		})
	}
}
