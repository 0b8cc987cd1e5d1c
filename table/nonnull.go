package table

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/log"
)

// Nested NOT NULL. A Delta schema can declare struct fields, array elements and map
// values non-nullable (nullable: false, containsNull: false, valueContainsNull: false).
// Arrow input may carry nulls there whatever its schema says, so the conformer checks
// every batch: a null counts only where its parents are present (a null struct has no
// fields; a null or empty list no elements), as Delta's invariant checker does for
// struct fields. The check costs nothing for columns with no such field (hasRequired).

// hasRequired reports whether dt has a non-nullable field, element or value at any
// depth below the top level.
func hasRequired(dt log.DataType) bool {
	switch t := dt.(type) {
	case *log.StructType:
		for _, f := range t.Fields {
			if !f.Nullable || hasRequired(f.Type) {
				return true
			}
		}
	case *log.ArrayType:
		return !t.ContainsNull || hasRequired(t.ElementType)
	case *log.MapType:
		return !t.ValueContainsNull || hasRequired(t.KeyType) || hasRequired(t.ValueType)
	}
	return false
}

// nestedNull returns the path (below arr) of the first non-nullable field, element or
// value of dt that holds a null in a present row, and "" when there is none. present
// marks arr's rows that exist (nil: all of them).
func nestedNull(arr arrow.Array, dt log.DataType, present []bool) string {
	switch t := dt.(type) {
	case *log.StructType:
		sa, ok := arr.(*array.Struct)
		if !ok {
			return ""
		}
		rows := liveRows(arr, present)
		st := sa.DataType().(*arrow.StructType)
		for i := range t.Fields {
			f := &t.Fields[i]
			j := structChild(st, f.Name, i)
			if j < 0 {
				continue
			}
			c := sa.Field(j)
			if !f.Nullable && nullIn(c, rows) {
				return f.Name
			}
			if p := nestedNull(c, f.Type, rows); p != "" {
				return f.Name + "." + p
			}
		}
	case *log.ArrayType:
		la, ok := arr.(array.ListLike)
		if !ok {
			return ""
		}
		elems := childRows(la, liveRows(arr, present), la.ListValues().Len())
		if !t.ContainsNull && nullIn(la.ListValues(), elems) {
			return "element"
		}
		if p := nestedNull(la.ListValues(), t.ElementType, elems); p != "" {
			return "element." + p
		}
	case *log.MapType:
		ma, ok := arr.(*array.Map)
		if !ok {
			return ""
		}
		entries := childRows(ma, liveRows(arr, present), ma.Items().Len())
		if !t.ValueContainsNull && nullIn(ma.Items(), entries) {
			return "value"
		}
		if p := nestedNull(ma.Keys(), t.KeyType, entries); p != "" {
			return "key." + p
		}
		if p := nestedNull(ma.Items(), t.ValueType, entries); p != "" {
			return "value." + p
		}
	}
	return ""
}

// structChild finds the child of st for the Delta field name (by position when the
// names agree, else case-insensitively), or -1.
func structChild(st *arrow.StructType, name string, pos int) int {
	if pos < st.NumFields() && strings.EqualFold(st.Field(pos).Name, name) {
		return pos
	}
	for j := 0; j < st.NumFields(); j++ {
		if strings.EqualFold(st.Field(j).Name, name) {
			return j
		}
	}
	return -1
}

// liveRows returns which rows of arr exist and are not null (nil: all of them).
func liveRows(arr arrow.Array, present []bool) []bool {
	if arr.NullN() == 0 {
		return present
	}
	rows := make([]bool, arr.Len())
	for i := range rows {
		rows[i] = (present == nil || present[i]) && arr.IsValid(i)
	}
	return rows
}

// childRows marks the child positions the lists of the given rows cover.
func childRows(l array.ListLike, rows []bool, n int) []bool {
	out := make([]bool, n)
	for i := 0; i < l.Len(); i++ {
		if rows != nil && !rows[i] {
			continue
		}
		s, e := l.ValueOffsets(i)
		for j := s; j < e && j < int64(n); j++ {
			out[j] = true
		}
	}
	return out
}

// nullIn reports whether arr has a null in a row rows marks (nil: any row).
func nullIn(arr arrow.Array, rows []bool) bool {
	if arr.NullN() == 0 {
		return false
	}
	for i := 0; i < arr.Len(); i++ {
		if (rows == nil || rows[i]) && arr.IsNull(i) {
			return true
		}
	}
	return false
}

// retype returns arr with the type to, which sameType(to, arr's type) says has the
// same physical layout (only nested field names, nullability, metadata or a UTC
// spelling differ): the same buffers under the table's type.
func retype(arr arrow.Array, to arrow.DataType) arrow.Array {
	d := retypeData(arr.Data(), to)
	defer d.Release()
	return array.MakeFromData(d)
}

func retypeData(d arrow.ArrayData, to arrow.DataType) arrow.ArrayData {
	var kids []arrow.ArrayData
	children := d.Children()
	switch t := to.(type) {
	case *arrow.StructType:
		for i, c := range children {
			if i < t.NumFields() {
				kids = append(kids, retypeData(c, t.Field(i).Type))
			}
		}
	case *arrow.MapType:
		if len(children) == 1 {
			kids = []arrow.ArrayData{retypeData(children[0], t.Elem())}
		}
	case *arrow.ListType:
		if len(children) == 1 {
			kids = []arrow.ArrayData{retypeData(children[0], t.Elem())}
		}
	default:
		for _, c := range children {
			c.Retain()
			kids = append(kids, c)
		}
	}
	out := array.NewData(to, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
	for _, k := range kids {
		k.Release()
	}
	return out
}
