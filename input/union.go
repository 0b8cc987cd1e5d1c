package input

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// UnionSchema returns the schema whose columns are those of the given schemas, in
// order of first appearance, matched by name case-insensitively (the first
// spelling and type win), with the fields of struct columns — also inside arrays
// and maps — united the same way: the source schema a table write with schema
// evolution (table.WriteOptions.MergeSchema) of inputs of these schemas evolves the
// table to. Nil schemas are skipped.
func UnionSchema(schemas ...*arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for _, s := range schemas {
		if s == nil {
			continue
		}
		fields = unionFields(fields, s.Fields())
	}
	return arrow.NewSchema(fields, nil)
}

// unionFields returns have with more's fields united into it: a field of more
// whose name is new is appended (nullable), one whose name matches keeps have's
// spelling and its type united.
func unionFields(have, more []arrow.Field) []arrow.Field {
	out := append([]arrow.Field(nil), have...)
	for _, f := range more {
		i := value.MatchField(out, f.Name)
		if i < 0 {
			out = append(out, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
			continue
		}
		out[i].Type = unionType(out[i].Type, f.Type)
	}
	return out
}

// unionType unites b into a: struct fields by name, list elements, map keys and
// items; otherwise a (the first type) wins. A dictionary b is its value type.
func unionType(a, b arrow.DataType) arrow.DataType {
	if d, ok := b.(*arrow.DictionaryType); ok {
		b = d.ValueType
	}
	switch at := a.(type) {
	case *arrow.StructType:
		if bt, ok := b.(*arrow.StructType); ok {
			return arrow.StructOf(unionFields(at.Fields(), bt.Fields())...)
		}
	case *arrow.ListType:
		if bt, ok := b.(arrow.ListLikeType); ok {
			ef := at.ElemField()
			ef.Type = unionType(ef.Type, bt.Elem())
			return arrow.ListOfField(ef)
		}
	case *arrow.MapType:
		if bt, ok := b.(*arrow.MapType); ok {
			return arrow.MapOf(unionType(at.KeyType(), bt.KeyType()), unionType(at.ItemType(), bt.ItemType()))
		}
	}
	return a
}
