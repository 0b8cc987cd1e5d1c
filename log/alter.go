package log

import (
	"fmt"
	"strconv"
	"strings"
)

// NewColumn is a column ADD COLUMNS appends (see AddColumns and
// ParseColumnDefinition).
type NewColumn struct {
	// Path names the column: one element for a top-level column, more to add a
	// field to an existing struct column (the last element is the new field).
	Path []string
	// Type is the column's Delta type.
	Type DataType
	// Comment, if not empty, is stored as the field's "comment" metadata, as Spark
	// stores column comments.
	Comment string
}

// AddColumns returns the protocol and metadata of a table (protocol p, metadata
// md) after appending cols, in order (ALTER TABLE ADD COLUMNS). Every new column
// is nullable and goes at the end of its struct: the top level, or the struct
// column its path names. Names are unique case-insensitively within a struct. With
// column mapping on, each new field (and every field nested in it) gets the next
// column id and a fresh physical name col-<uuid>, and
// delta.columnMapping.maxColumnId is raised; existing data files simply lack the
// new columns, which read as null. A column that needs a table feature
// (timestamp_ntz) upgrades the protocol. Nothing is written.
func AddColumns(p Protocol, md Metadata, cols []NewColumn) (Protocol, Metadata, error) {
	if len(cols) == 0 {
		return p, md, fmt.Errorf("log: add columns: no columns: %w", ErrInvalidSchema)
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, err
	}
	props := ParseTableProperties(md.Configuration)
	if err := props.Err(PropColumnMappingMode, PropColumnMappingMaxColumnID); err != nil {
		return p, md, err
	}
	mapped := props.ColumnMappingMode != ColumnMappingNone
	maxID := props.ColumnMappingMaxColumnID
	for _, c := range cols {
		if err := addColumn(schema, c, mapped, &maxID); err != nil {
			return p, md, err
		}
	}
	if _, err := ToArrow(schema, ArrowOptions{}); err != nil {
		return p, md, fmt.Errorf("log: add columns: %w", err)
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

func addColumn(schema *StructType, c NewColumn, mapped bool, maxID *int64) error {
	name := strings.Join(c.Path, ".")
	if len(c.Path) == 0 || c.Type == nil {
		return fmt.Errorf("log: add column %q: want a name and a type: %w", name, ErrInvalidSchema)
	}
	parent := schema
	for i, part := range c.Path[:len(c.Path)-1] {
		f := parent.FieldFold(part)
		if f == nil {
			return fmt.Errorf("log: add column %q: %q does not exist (columns: %s): %w", name, strings.Join(c.Path[:i+1], "."), strings.Join(fieldNames(parent), ", "), ErrInvalidSchema)
		}
		st, ok := f.Type.(*StructType)
		if !ok {
			return fmt.Errorf("log: add column %q: %q is a %s, not a struct: %w", name, strings.Join(c.Path[:i+1], "."), DisplayType(f.Type), ErrInvalidSchema)
		}
		parent = st
	}
	leaf := c.Path[len(c.Path)-1]
	if strings.TrimSpace(leaf) == "" {
		return fmt.Errorf("log: add column %q: empty name: %w", name, ErrInvalidSchema)
	}
	if f := parent.FieldFold(leaf); f != nil {
		return fmt.Errorf("log: add column %q: a column %q exists already (names are case-insensitive): %w", name, f.Name, ErrInvalidSchema)
	}
	field := StructField{Name: leaf, Type: cloneType(c.Type), Nullable: true, Metadata: map[string]any{}}
	if c.Comment != "" {
		field.Metadata["comment"] = c.Comment
	}
	if mapped {
		st := &StructType{Fields: []StructField{field}}
		assignColumnMapping(st, true, maxID)
		field = st.Fields[0]
	}
	parent.Fields = append(parent.Fields, field)
	return nil
}

// cloneType deep-copies the struct types in t, so that assigning column mapping
// metadata never touches the caller's value.
func cloneType(t DataType) DataType {
	switch v := t.(type) {
	case *StructType:
		out := &StructType{Fields: make([]StructField, len(v.Fields))}
		for i, f := range v.Fields {
			md := make(map[string]any, len(f.Metadata))
			for k, x := range f.Metadata {
				md[k] = x
			}
			out.Fields[i] = StructField{Name: f.Name, Type: cloneType(f.Type), Nullable: f.Nullable, Metadata: md}
		}
		return out
	case *ArrayType:
		return &ArrayType{ElementType: cloneType(v.ElementType), ContainsNull: v.ContainsNull}
	case *MapType:
		return &MapType{KeyType: cloneType(v.KeyType), ValueType: cloneType(v.ValueType), ValueContainsNull: v.ValueContainsNull}
	}
	return t
}

// NewColumnJSON renders c as Spark records an added column in commitInfo
// (operationParameters.columns of ADD COLUMNS): {"column":{"name":...,"type":...,
// "nullable":true,"metadata":{...}}}, with the dotted path as name.
func NewColumnJSON(c NewColumn) string {
	st := &StructType{Fields: []StructField{{Name: strings.Join(c.Path, "."), Type: c.Type, Nullable: true, Metadata: map[string]any{}}}}
	if c.Comment != "" {
		st.Fields[0].Metadata["comment"] = c.Comment
	}
	js := st.JSON() // {"type":"struct","fields":[FIELD]}
	field := strings.TrimSuffix(strings.TrimPrefix(js, `{"type":"struct","fields":[`), "]}")
	return `{"column":` + field + `}`
}
