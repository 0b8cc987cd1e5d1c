package log

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Column-mapping field metadata keys and table property.
const (
	// PhysicalNameKey is the field metadata key holding a column's physical name.
	PhysicalNameKey = "delta.columnMapping.physicalName"
	// FieldIDKey is the field metadata key holding a column's field id.
	FieldIDKey = "delta.columnMapping.id"
	// ColumnMappingModeKey is the table property selecting the column mapping mode.
	ColumnMappingModeKey = "delta.columnMapping.mode"
)

// DataType is a Delta data type: *PrimitiveType, *DecimalType, *StructType,
// *ArrayType or *MapType.
type DataType interface {
	// TypeName is the type's Delta name ("long", "decimal(10,2)", "struct", ...).
	TypeName() string
	isDataType()
}

// Primitive type names.
const (
	TypeString       = "string"
	TypeLong         = "long"
	TypeInteger      = "integer"
	TypeShort        = "short"
	TypeByte         = "byte"
	TypeFloat        = "float"
	TypeDouble       = "double"
	TypeBoolean      = "boolean"
	TypeBinary       = "binary"
	TypeDate         = "date"
	TypeTimestamp    = "timestamp"
	TypeTimestampNTZ = "timestamp_ntz"
	// TypeVariant is accepted in schemas but cannot be converted to Arrow.
	TypeVariant = "variant"
)

var primitiveNames = map[string]bool{
	TypeString: true, TypeLong: true, TypeInteger: true, TypeShort: true, TypeByte: true,
	TypeFloat: true, TypeDouble: true, TypeBoolean: true, TypeBinary: true, TypeDate: true,
	TypeTimestamp: true, TypeTimestampNTZ: true, TypeVariant: true,
}

// PrimitiveType is a non-decimal scalar type, named by one of the Type* constants.
type PrimitiveType struct {
	// Name is the Delta type name.
	Name string
}

// TypeName returns Name.
func (p *PrimitiveType) TypeName() string { return p.Name }
func (*PrimitiveType) isDataType()        {}

// Primitive returns the primitive type with the given name.
func Primitive(name string) *PrimitiveType { return &PrimitiveType{Name: name} }

// DecimalType is decimal(Precision, Scale).
type DecimalType struct {
	// Precision is the number of digits, 1..38.
	Precision int
	// Scale is the number of digits after the point, 0..Precision.
	Scale int
}

// TypeName returns "decimal(p,s)".
func (d *DecimalType) TypeName() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }
func (*DecimalType) isDataType()        {}

// ArrayType is an array of ElementType.
type ArrayType struct {
	// ElementType is the element type.
	ElementType DataType
	// ContainsNull reports whether elements may be null.
	ContainsNull bool
}

// TypeName returns "array".
func (*ArrayType) TypeName() string { return "array" }
func (*ArrayType) isDataType()      {}

// MapType maps KeyType (never null) to ValueType.
type MapType struct {
	// KeyType is the key type.
	KeyType DataType
	// ValueType is the value type.
	ValueType DataType
	// ValueContainsNull reports whether values may be null.
	ValueContainsNull bool
}

// TypeName returns "map".
func (*MapType) TypeName() string { return "map" }
func (*MapType) isDataType()      {}

// StructField is one field of a struct.
type StructField struct {
	// Name is the logical column name.
	Name string
	// Type is the field's type.
	Type DataType
	// Nullable reports whether the field may be null.
	Nullable bool
	// Metadata is the field metadata (column mapping, invariants, comments...).
	// JSON numbers are kept as json.Number.
	Metadata map[string]any
}

// PhysicalName returns the column-mapping physical name, or Name when absent.
func (f *StructField) PhysicalName() string {
	if s, ok := f.Metadata[PhysicalNameKey].(string); ok && s != "" {
		return s
	}
	return f.Name
}

// FieldID returns the column-mapping field id and whether it is present.
func (f *StructField) FieldID() (int64, bool) {
	switch v := f.Metadata[FieldIDKey].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), true
	case int64:
		return v, true
	case int:
		return int64(v), true
	}
	return 0, false
}

// StructType is a struct (and the table schema).
type StructType struct {
	// Fields are the struct's fields, in order.
	Fields []StructField
}

// TypeName returns "struct".
func (*StructType) TypeName() string { return "struct" }
func (*StructType) isDataType()      {}

// Field returns the field with the given name (exact match) or nil.
func (s *StructType) Field(name string) *StructField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// FieldFold returns the field whose name matches case-insensitively, or nil.
func (s *StructType) FieldFold(name string) *StructField {
	if f := s.Field(name); f != nil {
		return f
	}
	for i := range s.Fields {
		if strings.EqualFold(s.Fields[i].Name, name) {
			return &s.Fields[i]
		}
	}
	return nil
}

// ColumnMapping is a column mapping mode.
type ColumnMapping string

// Column mapping modes.
const (
	ColumnMappingNone ColumnMapping = "none"
	ColumnMappingName ColumnMapping = "name"
	ColumnMappingID   ColumnMapping = "id"
)

// ColumnMappingMode returns the mode selected by delta.columnMapping.mode
// (absent or unknown values mean none). It parses the whole configuration; with a
// snapshot at hand use Snapshot.Properties().ColumnMappingMode.
func ColumnMappingMode(cfg map[string]string) ColumnMapping {
	return ParseTableProperties(cfg).ColumnMappingMode
}

// ParseSchema parses a schemaString (Spark's JSON schema of a struct).
func ParseSchema(s string) (*StructType, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("log: schema: %w: %v", ErrInvalidSchema, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("log: schema: %w: trailing data", ErrInvalidSchema)
	}
	t, err := parseType(raw, "")
	if err != nil {
		return nil, err
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("log: schema: %w: top level is %s, not struct", ErrInvalidSchema, DisplayType(t))
	}
	return st, nil
}

func schemaErr(path, format string, args ...any) error {
	where := path
	if where == "" {
		where = "<root>"
	}
	return fmt.Errorf("log: schema field %q: %w: %s", where, ErrInvalidSchema, fmt.Sprintf(format, args...))
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func parseType(raw any, path string) (DataType, error) {
	switch v := raw.(type) {
	case string:
		return parsePrimitive(v, path)
	case map[string]any:
		typ, _ := v["type"].(string)
		switch typ {
		case "struct":
			fields, ok := v["fields"].([]any)
			if !ok && v["fields"] != nil {
				return nil, schemaErr(path, "fields is not an array")
			}
			st := &StructType{Fields: make([]StructField, 0, len(fields))}
			seen := map[string]bool{}
			for i, fr := range fields {
				fm, ok := fr.(map[string]any)
				if !ok {
					return nil, schemaErr(path, "field %d is not an object", i)
				}
				name, ok := fm["name"].(string)
				if !ok {
					return nil, schemaErr(path, "field %d has no name", i)
				}
				fp := joinPath(path, name)
				lower := strings.ToLower(name)
				if seen[lower] {
					return nil, schemaErr(fp, "duplicate field name")
				}
				seen[lower] = true
				if fm["type"] == nil {
					return nil, schemaErr(fp, "missing type")
				}
				ft, err := parseType(fm["type"], fp)
				if err != nil {
					return nil, err
				}
				nullable := true
				if nv, ok := fm["nullable"]; ok {
					b, ok := nv.(bool)
					if !ok {
						return nil, schemaErr(fp, "nullable is not a boolean")
					}
					nullable = b
				}
				var md map[string]any
				if mv, ok := fm["metadata"]; ok && mv != nil {
					m, ok := mv.(map[string]any)
					if !ok {
						return nil, schemaErr(fp, "metadata is not an object")
					}
					md = m
				}
				if md == nil {
					md = map[string]any{}
				}
				st.Fields = append(st.Fields, StructField{Name: name, Type: ft, Nullable: nullable, Metadata: md})
			}
			return st, nil
		case "array":
			if v["elementType"] == nil {
				return nil, schemaErr(path, "array without elementType")
			}
			et, err := parseType(v["elementType"], path+"[]")
			if err != nil {
				return nil, err
			}
			cn, ok := v["containsNull"].(bool)
			if !ok {
				cn = true
			}
			return &ArrayType{ElementType: et, ContainsNull: cn}, nil
		case "map":
			if v["keyType"] == nil || v["valueType"] == nil {
				return nil, schemaErr(path, "map without keyType or valueType")
			}
			kt, err := parseType(v["keyType"], path+".key")
			if err != nil {
				return nil, err
			}
			vt, err := parseType(v["valueType"], path+".value")
			if err != nil {
				return nil, err
			}
			vn, ok := v["valueContainsNull"].(bool)
			if !ok {
				vn = true
			}
			return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: vn}, nil
		default:
			return nil, schemaErr(path, "unknown complex type %q", typ)
		}
	default:
		return nil, schemaErr(path, "type is neither a name nor an object")
	}
}

func parsePrimitive(name, path string) (DataType, error) {
	if primitiveNames[name] {
		return &PrimitiveType{Name: name}, nil
	}
	if name == "decimal" {
		return &DecimalType{Precision: 10, Scale: 0}, nil
	}
	if strings.HasPrefix(name, "decimal(") && strings.HasSuffix(name, ")") {
		inner := name[len("decimal(") : len(name)-1]
		ps, ss, ok := strings.Cut(inner, ",")
		if ok {
			p, err1 := strconv.Atoi(strings.TrimSpace(ps))
			s, err2 := strconv.Atoi(strings.TrimSpace(ss))
			if err1 == nil && err2 == nil && p >= 1 && p <= 38 && s >= 0 && s <= p {
				return &DecimalType{Precision: p, Scale: s}, nil
			}
		}
		return nil, schemaErr(path, "invalid decimal type %q", name)
	}
	return nil, schemaErr(path, "unknown type %q", name)
}

// JSON renders the schema as a schemaString. ParseSchema(s.JSON()) equals s.
func (s *StructType) JSON() string {
	var buf bytes.Buffer
	writeType(&buf, s)
	return buf.String()
}

// marshalMetadata renders field metadata as JSON without escaping <, > and & (Spark
// writes `x > 3`, not `x \u003e 3`, in invariants and generation expressions).
func marshalMetadata(md map[string]any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(md); err != nil {
		return []byte("{}")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func writeJSONString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // marshalling a string cannot fail
	buf.Write(b)
}

func writeType(buf *bytes.Buffer, t DataType) {
	switch v := t.(type) {
	case *StructType:
		buf.WriteString(`{"type":"struct","fields":[`)
		for i, f := range v.Fields {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(`{"name":`)
			writeJSONString(buf, f.Name)
			buf.WriteString(`,"type":`)
			writeType(buf, f.Type)
			buf.WriteString(`,"nullable":`)
			buf.WriteString(strconv.FormatBool(f.Nullable))
			buf.WriteString(`,"metadata":`)
			md := f.Metadata
			if md == nil {
				md = map[string]any{}
			}
			buf.Write(marshalMetadata(md))
			buf.WriteByte('}')
		}
		buf.WriteString(`]}`)
	case *ArrayType:
		buf.WriteString(`{"type":"array","elementType":`)
		writeType(buf, v.ElementType)
		buf.WriteString(`,"containsNull":`)
		buf.WriteString(strconv.FormatBool(v.ContainsNull))
		buf.WriteByte('}')
	case *MapType:
		buf.WriteString(`{"type":"map","keyType":`)
		writeType(buf, v.KeyType)
		buf.WriteString(`,"valueType":`)
		writeType(buf, v.ValueType)
		buf.WriteString(`,"valueContainsNull":`)
		buf.WriteString(strconv.FormatBool(v.ValueContainsNull))
		buf.WriteByte('}')
	default:
		writeJSONString(buf, t.TypeName())
	}
}

// LeafColumns returns the dotted logical paths of the schema's leaf columns
// (struct fields recursed; arrays and maps count as leaves), in order.
func (s *StructType) LeafColumns() []string {
	var out []string
	var walk func(st *StructType, prefix string)
	walk = func(st *StructType, prefix string) {
		for _, f := range st.Fields {
			p := joinPath(prefix, f.Name)
			if sub, ok := f.Type.(*StructType); ok {
				walk(sub, p)
				continue
			}
			out = append(out, p)
		}
	}
	walk(s, "")
	return out
}
