package log

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// ArrowFieldIDKey is the Arrow field metadata key pqarrow maps to the Parquet field_id.
const ArrowFieldIDKey = "PARQUET:field_id"

// ArrowOptions controls ToArrow. The zero value uses logical names and attaches no metadata.
type ArrowOptions struct {
	// PhysicalNames names Arrow fields by their column-mapping physical names
	// (default false: logical names). Fields without a physical name keep Name.
	PhysicalNames bool
	// FieldIDs attaches PARQUET:field_id metadata from delta.columnMapping.id
	// (column mapping mode id; default false).
	FieldIDs bool
	// MappingMetadata attaches delta.columnMapping.physicalName metadata to
	// fields that have one (default false).
	MappingMetadata bool
}

// ToArrow converts a Delta schema to an Arrow schema: long→int64,
// integer→int32, short→int16, byte→int8, float→float32, double→float64,
// boolean, string→utf8, binary, date→date32, timestamp→timestamp[us, UTC],
// timestamp_ntz→timestamp[us], decimal(p,s)→decimal128(p,s), struct, array→list,
// map→map (keys non-null). variant is rejected with ErrUnsupportedType.
func ToArrow(s *StructType, opts ArrowOptions) (*arrow.Schema, error) {
	if s == nil {
		return nil, fmt.Errorf("log: ToArrow: nil schema: %w", ErrInvalidSchema)
	}
	fields, err := toArrowFields(s, "", opts)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func toArrowFields(s *StructType, path string, opts ArrowOptions) ([]arrow.Field, error) {
	out := make([]arrow.Field, 0, len(s.Fields))
	for i := range s.Fields {
		f := &s.Fields[i]
		fp := joinPath(path, f.Name)
		dt, err := toArrowType(f.Type, fp, opts)
		if err != nil {
			return nil, err
		}
		name := f.Name
		if opts.PhysicalNames {
			name = f.PhysicalName()
		}
		var keys, vals []string
		if opts.FieldIDs {
			if id, ok := f.FieldID(); ok {
				keys = append(keys, ArrowFieldIDKey)
				vals = append(vals, strconv.FormatInt(id, 10))
			}
		}
		if opts.MappingMetadata {
			if pn, ok := f.Metadata[PhysicalNameKey].(string); ok && pn != "" {
				keys = append(keys, PhysicalNameKey)
				vals = append(vals, pn)
			}
		}
		// Type-widening history travels with the field so that statistics written
		// before a float→double widening are read with float precision (stats.Parse).
		if tc, ok := f.Metadata["delta.typeChanges"]; ok {
			if b, err := json.Marshal(tc); err == nil {
				keys = append(keys, "delta.typeChanges")
				vals = append(vals, string(b))
			}
		}
		af := arrow.Field{Name: name, Type: dt, Nullable: f.Nullable}
		if len(keys) > 0 {
			af.Metadata = arrow.NewMetadata(keys, vals)
		}
		out = append(out, af)
	}
	return out, nil
}

func toArrowType(t DataType, path string, opts ArrowOptions) (arrow.DataType, error) {
	switch v := t.(type) {
	case *PrimitiveType:
		switch v.Name {
		case TypeString:
			return arrow.BinaryTypes.String, nil
		case TypeLong:
			return arrow.PrimitiveTypes.Int64, nil
		case TypeInteger:
			return arrow.PrimitiveTypes.Int32, nil
		case TypeShort:
			return arrow.PrimitiveTypes.Int16, nil
		case TypeByte:
			return arrow.PrimitiveTypes.Int8, nil
		case TypeFloat:
			return arrow.PrimitiveTypes.Float32, nil
		case TypeDouble:
			return arrow.PrimitiveTypes.Float64, nil
		case TypeBoolean:
			return arrow.FixedWidthTypes.Boolean, nil
		case TypeBinary:
			return arrow.BinaryTypes.Binary, nil
		case TypeDate:
			return arrow.FixedWidthTypes.Date32, nil
		case TypeTimestamp:
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
		case TypeTimestampNTZ:
			return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
		}
		return nil, fmt.Errorf("log: column %q: %w: %s has no Arrow mapping", path, ErrUnsupportedType, v.Name)
	case *DecimalType:
		return &arrow.Decimal128Type{Precision: int32(v.Precision), Scale: int32(v.Scale)}, nil
	case *StructType:
		fields, err := toArrowFields(v, path, opts)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	case *ArrayType:
		et, err := toArrowType(v.ElementType, path+"[]", opts)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: et, Nullable: v.ContainsNull}), nil
	case *MapType:
		kt, err := toArrowType(v.KeyType, path+".key", opts)
		if err != nil {
			return nil, err
		}
		vt, err := toArrowType(v.ValueType, path+".value", opts)
		if err != nil {
			return nil, err
		}
		mt := arrow.MapOf(kt, vt)
		mt.SetItemNullable(v.ValueContainsNull)
		return mt, nil
	}
	return nil, fmt.Errorf("log: column %q: %w: %T", path, ErrUnsupportedType, t)
}

// DisplayType names a Delta type for people as Spark SQL does (bigint, int,
// decimal(10,2), timestamp_ntz, array<int>, struct<a:int,b:string>, ...):
// value.DisplayType of the type's Arrow mapping, so a table column and the Arrow data
// written to it are named alike. A type without an Arrow mapping (variant, or a
// struct, array or map holding one) is named by its schemaString name. Not to be
// confused with TypeName, the schemaString spelling (long, integer) the log stores.
func DisplayType(t DataType) string {
	if t == nil {
		return "<nil>"
	}
	at, err := toArrowType(t, "", ArrowOptions{})
	if err != nil {
		return t.TypeName()
	}
	return value.DisplayType(at)
}

// FromArrow converts an Arrow schema to a Delta schema. int64→long,
// int32→integer, int16→short, int8→byte, float32→float, float64→double,
// bool→boolean, utf8/large_utf8/string_view→string,
// binary/large_binary/binary_view/fixed_size_binary→binary, date32/date64→date,
// timestamp with a zone→timestamp and without→timestamp_ntz (any unit),
// decimal128/decimal256 (precision ≤ 38)→decimal, struct, list/large_list/
// fixed_size_list/list_view→array, map→map, dictionary→its value type.
// Unsigned integers, float16, times, durations, intervals and null are
// rejected with ErrUnsupportedType naming the field. Field metadata is not
// carried over.
func FromArrow(s *arrow.Schema) (*StructType, error) {
	if s == nil {
		return nil, fmt.Errorf("log: FromArrow: nil schema: %w", ErrInvalidSchema)
	}
	return fromArrowFields(s.Fields(), "")
}

func fromArrowFields(fields []arrow.Field, path string) (*StructType, error) {
	st := &StructType{Fields: make([]StructField, 0, len(fields))}
	for _, f := range fields {
		fp := joinPath(path, f.Name)
		if err := checkFieldName(f.Name); err != nil {
			return nil, fmt.Errorf("log: column %q: %w", fp, err)
		}
		dt, err := fromArrowType(f.Type, fp)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, StructField{Name: f.Name, Type: dt, Nullable: f.Nullable, Metadata: map[string]any{}})
	}
	return st, nil
}

func fromArrowType(t arrow.DataType, path string) (DataType, error) {
	switch v := t.(type) {
	case *arrow.Int64Type:
		return Primitive(TypeLong), nil
	case *arrow.Int32Type:
		return Primitive(TypeInteger), nil
	case *arrow.Int16Type:
		return Primitive(TypeShort), nil
	case *arrow.Int8Type:
		return Primitive(TypeByte), nil
	case *arrow.Float32Type:
		return Primitive(TypeFloat), nil
	case *arrow.Float64Type:
		return Primitive(TypeDouble), nil
	case *arrow.BooleanType:
		return Primitive(TypeBoolean), nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return Primitive(TypeString), nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return Primitive(TypeBinary), nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return Primitive(TypeDate), nil
	case *arrow.TimestampType:
		if v.TimeZone != "" {
			return Primitive(TypeTimestamp), nil
		}
		return Primitive(TypeTimestampNTZ), nil
	case *arrow.Decimal128Type:
		return &DecimalType{Precision: int(v.Precision), Scale: int(v.Scale)}, nil
	case *arrow.Decimal256Type:
		if v.Precision > 38 {
			return nil, fmt.Errorf("log: column %q: %w: decimal256 precision %d exceeds 38", path, ErrUnsupportedType, v.Precision)
		}
		return &DecimalType{Precision: int(v.Precision), Scale: int(v.Scale)}, nil
	case *arrow.StructType:
		return fromArrowFields(v.Fields(), path)
	case *arrow.MapType:
		kt, err := fromArrowType(v.KeyType(), path+".key")
		if err != nil {
			return nil, err
		}
		vt, err := fromArrowType(v.ItemType(), path+".value")
		if err != nil {
			return nil, err
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: v.ItemField().Nullable}, nil
	case arrow.ListLikeType:
		ef := v.ElemField()
		et, err := fromArrowType(ef.Type, path+"[]")
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: et, ContainsNull: ef.Nullable}, nil
	case *arrow.DictionaryType:
		return fromArrowType(v.ValueType, path)
	}
	return nil, fmt.Errorf("log: column %q: %w: Arrow type %s has no Delta counterpart", path, ErrUnsupportedType, t)
}
