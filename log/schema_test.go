package log

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

const nestedSchema = `{"type":"struct","fields":[` +
	`{"name":"a","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}},` +
	`{"name":"d","type":"decimal(12,5)","nullable":true,"metadata":{}},` +
	`{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"timestamp_ntz","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{"comment":"c"}},` +
	`{"name":"arr","type":{"type":"array","elementType":{"type":"array","elementType":"integer","containsNull":false},"containsNull":true},"nullable":true,"metadata":{}},` +
	`{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"v","type":"binary","nullable":true,"metadata":{}}]},"valueContainsNull":false},"nullable":true,"metadata":{}}]}`

func TestParseSchemaRoundTrip(t *testing.T) {
	s, err := ParseSchema(nestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.JSON(); got != nestedSchema {
		t.Fatalf("round trip not exact:\n%s\n%s", got, nestedSchema)
	}
	if f := s.Field("a"); f.PhysicalName() != "col-a" {
		t.Errorf("physical name %q", f.PhysicalName())
	} else if id, ok := f.FieldID(); !ok || id != 1 {
		t.Errorf("field id %d %v", id, ok)
	}
	if f := s.Field("d"); f.PhysicalName() != "d" {
		t.Errorf("no mapping: physical name must be the name, got %q", f.PhysicalName())
	}
	if d := s.Field("d").Type.(*DecimalType); d.Precision != 12 || d.Scale != 5 {
		t.Errorf("decimal %v", d)
	}
	if got := strings.Join(s.LeafColumns(), ","); got != "a,d,s.x,arr,m" {
		t.Errorf("leaf columns %s", got)
	}
	if s.FieldFold("A") == nil {
		t.Error("FieldFold must match case-insensitively")
	}
}

func TestParseSchemaPlainDecimalAndVariant(t *testing.T) {
	s, err := ParseSchema(`{"type":"struct","fields":[{"name":"d","type":"decimal","nullable":true,"metadata":{}},{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Fields[0].Type.(*DecimalType); d.Precision != 10 || d.Scale != 0 {
		t.Errorf("plain decimal = %s, want decimal(10,0)", d.TypeName())
	}
	if _, err := ToArrow(s, ArrowOptions{}); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `"v"`) {
		t.Errorf("variant must be rejected naming the column, got %v", err)
	}
}

func TestParseSchemaErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"not json", `{`, "invalid schema"},
		{"top level not struct", `"long"`, "not struct"},
		{"unknown type names field", `{"type":"struct","fields":[{"name":"x","type":"int128","nullable":true}]}`, `"x"`},
		{"nested unknown type names path", `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"y","type":"nope"}]}}]}`, `"s.y"`},
		{"decimal precision too large", `{"type":"struct","fields":[{"name":"d","type":"decimal(39,0)"}]}`, "invalid decimal"},
		{"scale above precision", `{"type":"struct","fields":[{"name":"d","type":"decimal(3,4)"}]}`, "invalid decimal"},
		{"duplicate names", `{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}`, "duplicate"},
		{"array without element", `{"type":"struct","fields":[{"name":"a","type":{"type":"array"}}]}`, "elementType"},
		{"nullable not bool", `{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}`, "nullable"},
		{"trailing data", `{"type":"struct","fields":[]} {}`, "trailing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSchema(c.in)
			if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want ErrInvalidSchema mentioning %q, got %v", c.want, err)
			}
		})
	}
}

func TestColumnMappingMode(t *testing.T) {
	cases := map[string]ColumnMapping{"": ColumnMappingNone, "none": ColumnMappingNone, "name": ColumnMappingName, "ID": ColumnMappingID, "weird": ColumnMappingNone}
	for in, want := range cases {
		cfg := map[string]string{}
		if in != "" {
			cfg[ColumnMappingModeKey] = in
		}
		if got := ColumnMappingMode(cfg); got != want {
			t.Errorf("%q: got %s want %s", in, got, want)
		}
	}
}

func TestToArrowTypes(t *testing.T) {
	s, err := ParseSchema(`{"type":"struct","fields":[` +
		`{"name":"l","type":"long","nullable":true,"metadata":{}},{"name":"i","type":"integer","nullable":true,"metadata":{}},` +
		`{"name":"sh","type":"short","nullable":true,"metadata":{}},{"name":"b","type":"byte","nullable":true,"metadata":{}},` +
		`{"name":"f","type":"float","nullable":true,"metadata":{}},{"name":"db","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"bo","type":"boolean","nullable":true,"metadata":{}},{"name":"st","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"bi","type":"binary","nullable":true,"metadata":{}},{"name":"dt","type":"date","nullable":true,"metadata":{}},` +
		`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},{"name":"tn","type":"timestamp_ntz","nullable":true,"metadata":{}},` +
		`{"name":"dec","type":"decimal(20,10)","nullable":false,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	as, err := ToArrow(s, ArrowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"int64", "int32", "int16", "int8", "float32", "float64", "bool", "utf8", "binary", "date32",
		"timestamp[us, tz=UTC]", "timestamp[us]", "decimal(20, 10)"}
	for i, f := range as.Fields() {
		if f.Type.String() != want[i] {
			t.Errorf("%s: got %s want %s", f.Name, f.Type, want[i])
		}
	}
	if as.Field(12).Nullable {
		t.Error("nullability lost")
	}
	back, err := FromArrow(as)
	if err != nil {
		t.Fatal(err)
	}
	if back.JSON() != s.JSON() {
		t.Errorf("FromArrow(ToArrow(s)) != s:\n%s\n%s", back.JSON(), s.JSON())
	}
}

func TestToArrowNestedAndMapping(t *testing.T) {
	s, err := ParseSchema(nestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	as, err := ToArrow(s, ArrowOptions{PhysicalNames: true, FieldIDs: true, MappingMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	a := as.Field(0)
	if a.Name != "col-a" {
		t.Errorf("physical name not used: %s", a.Name)
	}
	if v, ok := a.Metadata.GetValue(ArrowFieldIDKey); !ok || v != "1" {
		t.Errorf("field id metadata %v", a.Metadata)
	}
	if v, ok := a.Metadata.GetValue(PhysicalNameKey); !ok || v != "col-a" {
		t.Errorf("physical name metadata %v", a.Metadata)
	}
	m := as.Field(4).Type.(*arrow.MapType)
	if m.KeyField().Nullable || m.ItemField().Nullable {
		t.Errorf("map key must be non-null and valueContainsNull=false kept: %s", m)
	}
	back, err := FromArrow(as)
	if err != nil {
		t.Fatal(err)
	}
	if back.Fields[3].Type.(*ArrayType).ElementType.(*ArrayType).ContainsNull {
		t.Error("inner containsNull lost")
	}
}

func TestFromArrowTypes(t *testing.T) {
	ok := []struct {
		name string
		typ  arrow.DataType
		want string
	}{
		{"large string", arrow.BinaryTypes.LargeString, "string"},
		{"timestamp ns with zone", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "America/New_York"}, "timestamp"},
		{"timestamp ms without zone", &arrow.TimestampType{Unit: arrow.Millisecond}, "timestamp_ntz"},
		{"date64", arrow.FixedWidthTypes.Date64, "date"},
		{"dictionary of strings", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, "string"},
		{"large list", arrow.LargeListOf(arrow.PrimitiveTypes.Int64), "array"},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			s, err := FromArrow(arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.typ, Nullable: true}}, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Fields[0].Type.TypeName(); got != c.want {
				t.Fatalf("got %s want %s", got, c.want)
			}
		})
	}
	bad := []arrow.DataType{arrow.PrimitiveTypes.Uint32, arrow.FixedWidthTypes.Float16, arrow.FixedWidthTypes.Time32ms, arrow.Null,
		arrow.StructOf(arrow.Field{Name: "inner", Type: arrow.FixedWidthTypes.Duration_s})}
	for _, typ := range bad {
		_, err := FromArrow(arrow.NewSchema([]arrow.Field{{Name: "bad", Type: typ}}, nil))
		if !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `"bad`) {
			t.Errorf("%s: want ErrUnsupportedType naming the field, got %v", typ, err)
		}
	}
}
