package log

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// MergeSchema returns the protocol and metadata of a table (protocol p, metadata md)
// after a write with schema evolution (Delta's mergeSchema) of data whose Arrow
// schema is incoming, and the paths of the columns it adds ("note", "address.zip").
// Columns and struct fields are matched by name, case-insensitively; every column or
// struct field of incoming the table lacks is appended to its struct (the top level,
// a struct column, or a struct inside an array or map), nullable, with no metadata,
// and with column mapping on it gets the next column id and a fresh physical name
// (delta.columnMapping.maxColumnId is raised). Columns the table has keep their
// types (a write converts the data by store assignment), and table columns incoming
// lacks stay. A new column that needs a table feature (timestamp_ntz) upgrades the
// protocol. When nothing is added, p and md are returned unchanged (added is empty).
// Nothing is written.
func MergeSchema(p Protocol, md Metadata, incoming *arrow.Schema) (Protocol, Metadata, []string, error) {
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, nil, err
	}
	props := ParseTableProperties(md.Configuration)
	if err := props.Err(PropColumnMappingMode, PropColumnMappingMaxColumnID); err != nil {
		return p, md, nil, err
	}
	mapped := props.ColumnMappingMode != ColumnMappingNone
	maxID := props.ColumnMappingMaxColumnID
	var added []string
	if err := mergeFields(schema, incoming.Fields(), "", mapped, &maxID, &added); err != nil {
		return p, md, nil, err
	}
	if len(added) == 0 {
		return p, md, nil, nil
	}
	np, nmd, err := withSchema(p, md, schema, mapped, maxID)
	if err != nil {
		return p, md, nil, err
	}
	return np, nmd, added, nil
}

// withSchema returns md with schema (and maxColumnId when mapped) and the protocol
// the result needs.
func withSchema(p Protocol, md Metadata, schema *StructType, mapped bool, maxID int64) (Protocol, Metadata, error) {
	if _, err := ToArrow(schema, ArrowOptions{}); err != nil {
		return p, md, err
	}
	conf := make(map[string]string, len(md.Configuration)+1)
	for k, v := range md.Configuration {
		conf[k] = v
	}
	if mapped {
		conf[PropColumnMappingMaxColumnID] = strconv.FormatInt(maxID, 10)
	}
	md.Configuration = conf
	md.SchemaString = schema.JSON()
	np, err := protocolAfter(p, md, schema, &NormalizedProperties{}, false)
	if err != nil {
		return p, md, err
	}
	return np, md, nil
}

// mergeFields adds the fields of incoming that st lacks to st, recursing into the
// structs both have (directly, or as array elements and map keys and values).
func mergeFields(st *StructType, incoming []arrow.Field, path string, mapped bool, maxID *int64, added *[]string) error {
	for _, in := range incoming {
		p := joinPath(path, in.Name)
		f := st.FieldFold(in.Name)
		if f == nil {
			if strings.TrimSpace(in.Name) == "" {
				return fmt.Errorf("log: schema evolution: column %q has an empty name: %w", p, ErrInvalidSchema)
			}
			dt, err := fromArrowType(in.Type, p)
			if err != nil {
				return fmt.Errorf("log: schema evolution: %w", err)
			}
			field := StructField{Name: in.Name, Type: nullableType(dt), Nullable: true, Metadata: map[string]any{}}
			if mapped {
				wrap := &StructType{Fields: []StructField{field}}
				assignColumnMapping(wrap, true, maxID)
				field = wrap.Fields[0]
			}
			st.Fields = append(st.Fields, field)
			*added = append(*added, p)
			continue
		}
		if err := mergeNested(&f.Type, in.Type, p, mapped, maxID, added); err != nil {
			return err
		}
	}
	return nil
}

// mergeNested merges the structs inside an incoming type into the table type t.
func mergeNested(t *DataType, in arrow.DataType, path string, mapped bool, maxID *int64, added *[]string) error {
	if d, ok := in.(*arrow.DictionaryType); ok {
		in = d.ValueType
	}
	switch tt := (*t).(type) {
	case *StructType:
		if is, ok := in.(*arrow.StructType); ok {
			return mergeFields(tt, is.Fields(), path, mapped, maxID, added)
		}
	case *ArrayType:
		if il, ok := in.(arrow.ListLikeType); ok {
			return mergeNested(&tt.ElementType, il.Elem(), path+".element", mapped, maxID, added)
		}
	case *MapType:
		if im, ok := in.(*arrow.MapType); ok {
			if err := mergeNested(&tt.KeyType, im.KeyType(), path+".key", mapped, maxID, added); err != nil {
				return err
			}
			return mergeNested(&tt.ValueType, im.ItemType(), path+".value", mapped, maxID, added)
		}
	}
	return nil
}

// nullableType makes every struct field, array element and map value inside t
// nullable (as Delta makes the data schema of a write).
func nullableType(t DataType) DataType {
	switch v := t.(type) {
	case *StructType:
		out := &StructType{Fields: make([]StructField, len(v.Fields))}
		for i, f := range v.Fields {
			out.Fields[i] = StructField{Name: f.Name, Type: nullableType(f.Type), Nullable: true, Metadata: map[string]any{}}
		}
		return out
	case *ArrayType:
		return &ArrayType{ElementType: nullableType(v.ElementType), ContainsNull: true}
	case *MapType:
		return &MapType{KeyType: nullableType(v.KeyType), ValueType: nullableType(v.ValueType), ValueContainsNull: true}
	}
	return t
}

// ReplaceSchema returns the protocol and metadata of a table after an overwrite that
// replaces its schema (Delta's overwriteSchema) with incoming's, partitioned by
// partitions (none: unpartitioned). Every column is nullable; the table keeps its id,
// properties and column mapping mode, and under column mapping a column whose path
// and type are those of a column the table has keeps that column's id and physical
// name, every other column gets the next id and a fresh physical name. The partition
// columns must be top-level columns of primitive types. Nothing is written.
func ReplaceSchema(p Protocol, md Metadata, incoming *arrow.Schema, partitions []string) (Protocol, Metadata, error) {
	old, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, err
	}
	fresh, err := FromArrow(incoming)
	if err != nil {
		return p, md, fmt.Errorf("log: overwrite schema: %w", err)
	}
	schema := nullableType(fresh).(*StructType)
	props := ParseTableProperties(md.Configuration)
	if err := props.Err(PropColumnMappingMode, PropColumnMappingMaxColumnID); err != nil {
		return p, md, err
	}
	mapped := props.ColumnMappingMode != ColumnMappingNone
	maxID := props.ColumnMappingMaxColumnID
	if mapped {
		reuseMapping(schema, old, &maxID)
	}
	parts := make([]string, len(partitions))
	for i, c := range partitions {
		f := schema.FieldFold(c)
		if f == nil {
			return p, md, fmt.Errorf("log: overwrite schema: partition column %q is not a column (columns: %s): %w", c, strings.Join(fieldNames(schema), ", "), ErrInvalidSchema)
		}
		switch f.Type.(type) {
		case *StructType, *ArrayType, *MapType:
			return p, md, fmt.Errorf("log: overwrite schema: partition column %q is a %s, not a primitive column: %w", c, DisplayType(f.Type), ErrInvalidSchema)
		}
		for _, prev := range parts[:i] {
			if prev == f.Name {
				return p, md, fmt.Errorf("log: overwrite schema: partition column %q given twice: %w", c, ErrInvalidSchema)
			}
		}
		parts[i] = f.Name
	}
	md.PartitionColumns = parts
	return withSchema(p, md, schema, mapped, maxID)
}

// reuseMapping gives the fields of s (nested ones too) the column-mapping id and
// physical name of the field of old at the same path (case-insensitively) when their
// types are the same (ignoring nullability), else the next id above *maxID and a
// fresh physical name.
func reuseMapping(s, old *StructType, maxID *int64) {
	for i := range s.Fields {
		f := &s.Fields[i]
		var of *StructField
		if old != nil {
			of = old.FieldFold(f.Name)
		}
		if of != nil && sameShape(of.Type, f.Type) {
			id, hasID := of.FieldID()
			if phys, ok := of.Metadata[PhysicalNameKey].(string); ok && phys != "" && hasID {
				f.Metadata[FieldIDKey] = id
				f.Metadata[PhysicalNameKey] = phys
				reuseNested(f.Type, of.Type, maxID)
				continue
			}
		}
		wrap := &StructType{Fields: []StructField{*f}}
		assignColumnMapping(wrap, true, maxID)
		*f = wrap.Fields[0]
	}
}

func reuseNested(t, old DataType, maxID *int64) {
	switch v := t.(type) {
	case *StructType:
		reuseMapping(v, old.(*StructType), maxID)
	case *ArrayType:
		reuseNested(v.ElementType, old.(*ArrayType).ElementType, maxID)
	case *MapType:
		reuseNested(v.KeyType, old.(*MapType).KeyType, maxID)
		reuseNested(v.ValueType, old.(*MapType).ValueType, maxID)
	}
}

// sameShape reports whether two types are the same ignoring nullability, field
// metadata and the letter case of field names.
func sameShape(a, b DataType) bool {
	switch x := a.(type) {
	case *StructType:
		y, ok := b.(*StructType)
		if !ok || len(x.Fields) != len(y.Fields) {
			return false
		}
		for i := range x.Fields {
			if !strings.EqualFold(x.Fields[i].Name, y.Fields[i].Name) || !sameShape(x.Fields[i].Type, y.Fields[i].Type) {
				return false
			}
		}
		return true
	case *ArrayType:
		y, ok := b.(*ArrayType)
		return ok && sameShape(x.ElementType, y.ElementType)
	case *MapType:
		y, ok := b.(*MapType)
		return ok && sameShape(x.KeyType, y.KeyType) && sameShape(x.ValueType, y.ValueType)
	}
	return a.TypeName() == b.TypeName()
}
