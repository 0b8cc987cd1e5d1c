package log

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestParseDDLType(t *testing.T) {
	cases := map[string]string{
		"bigint":                       "long",
		"INT":                          "integer",
		"smallint":                     "short",
		"TinyInt":                      "byte",
		"real":                         "float",
		"double":                       "double",
		"varchar(20)":                  "string",
		"timestamp":                    "timestamp",
		"timestamp_ntz":                "timestamp_ntz",
		"decimal":                      "decimal(10,0)",
		"DECIMAL(12, 3)":               "decimal(12,3)",
		"numeric(5)":                   "decimal(5,0)",
		"array<string>":                `{"type":"array","elementType":"string","containsNull":true}`,
		"map<string, array<int>>":      `{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"integer","containsNull":true},"valueContainsNull":true}`,
		"struct<a: int, `b c` string>": `{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"b c","type":"string","nullable":true,"metadata":{}}]}`,
		"struct<é:date>":               `{"type":"struct","fields":[{"name":"é","type":"date","nullable":true,"metadata":{}}]}`,
	}
	for in, want := range cases {
		typ, err := ParseDDLType(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		var b strings.Builder
		st := &StructType{Fields: []StructField{{Name: "x", Type: typ}}}
		js := st.JSON()
		b.WriteString(strings.TrimSuffix(strings.TrimPrefix(js, `{"type":"struct","fields":[{"name":"x","type":`), `,"nullable":false,"metadata":{}}]}`))
		got := b.String()
		if strings.HasPrefix(got, `"`) {
			got = strings.Trim(got, `"`)
		}
		if got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"", "text", "decimal(40,2)", "decimal(5,6)", "array<int", "map<int>", "struct<>", "struct<a int, A string>", "int extra", "varchar(x)"} {
		if _, err := ParseDDLType(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseColumnDefinitionAndSchema(t *testing.T) {
	c, err := ParseColumnDefinition(" `my col`.zip  decimal(5, 0) ")
	if err != nil || !reflect.DeepEqual(c.Path, []string{"my col", "zip"}) || c.Type.TypeName() != "decimal(5,0)" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"nameonly", "`open int", "a..b int", "a nosuchtype"} {
		if _, err := ParseColumnDefinition(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	s, err := ParseDDLSchema("id bigint, ts timestamp, m map<string, int>, d decimal(10,2)")
	if err != nil {
		t.Fatal(err)
	}
	if names := fieldNames(s); !reflect.DeepEqual(names, []string{"id", "ts", "m", "d"}) {
		t.Fatalf("fields %v", names)
	}
	for _, bad := range []string{"", "id bigint, ID int", "a.b int", "id bigint,"} {
		if _, err := ParseDDLSchema(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseDDLType(f *testing.F) {
	for _, s := range []string{"int", "map<string,array<struct<a:int>>>", "decimal(38,38)", "struct<`a``b`:int>", "array<", "varchar(3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := ParseDDLType(s)
		if err != nil {
			return
		}
		// Whatever parses is a valid Delta type: it survives a schema round trip.
		st := &StructType{Fields: []StructField{{Name: "x", Type: typ, Nullable: true}}}
		back, err := ParseSchema(st.JSON())
		if err != nil || back.JSON() != st.JSON() {
			t.Fatalf("%q: %v", s, err)
		}
	})
}

func TestAddColumns(t *testing.T) {
	md := propsMetadata()
	addr, _ := ParseDDLType("struct<zip: int>")
	cols := []NewColumn{
		{Path: []string{"added"}, Type: Primitive(TypeString), Comment: "new"},
		{Path: []string{"ST", "c"}, Type: Primitive(TypeLong)},
		{Path: []string{"addr"}, Type: addr},
	}
	p, out, err := AddColumns(legacy12, md, cols)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, legacy12) {
		t.Fatalf("protocol changed to %+v", p)
	}
	s, _ := out.Schema()
	if names := fieldNames(s); !reflect.DeepEqual(names, []string{"id", "s", "flag", "st", "p", "added", "addr"}) {
		t.Fatalf("fields %v", names)
	}
	if names := fieldNames(s.Field("st").Type.(*StructType)); !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Fatalf("struct fields %v", names)
	}
	if f := s.Field("added"); !f.Nullable || f.Metadata["comment"] != "new" {
		t.Fatalf("added %+v", f)
	}
	if md.SchemaString != propsSchema {
		t.Fatal("input metadata modified")
	}
	bad := []struct {
		col NewColumn
		msg string
	}{
		{NewColumn{Path: []string{"ID"}, Type: Primitive(TypeLong)}, "exists already"},
		{NewColumn{Path: []string{"nope", "x"}, Type: Primitive(TypeLong)}, "does not exist"},
		{NewColumn{Path: []string{"id", "x"}, Type: Primitive(TypeLong)}, "not a struct"},
		{NewColumn{Path: []string{"v"}, Type: Primitive(TypeVariant)}, "variant"},
		{NewColumn{Path: []string{"x"}}, "want a name and a type"},
	}
	for _, c := range bad {
		if _, _, err := AddColumns(legacy12, md, []NewColumn{c.col}); !errors.Is(err, ErrInvalidSchema) && !errors.Is(err, ErrUnsupportedType) || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: err = %v, want mention of %q", c.col.Path, err, c.msg)
		}
	}
}

func TestAddColumnsTimestampNTZUpgradesProtocol(t *testing.T) {
	p, _, err := AddColumns(legacy12, propsMetadata(), []NewColumn{{Path: []string{"t"}, Type: Primitive(TypeTimestampNTZ)}})
	if err != nil {
		t.Fatal(err)
	}
	want := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"appendOnly", "invariants", "timestampNtz"}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("protocol %+v", p)
	}
}

func TestAddColumnsWithColumnMapping(t *testing.T) {
	p, md, err := ApplyPropertyChange(legacy12, propsMetadata(), PropertyChange{Set: map[string]string{"delta.columnMapping.mode": "name"}})
	if err != nil {
		t.Fatal(err)
	}
	nested, _ := ParseDDLType("struct<x: int, y: array<struct<z: int>>>")
	_, md, err = AddColumns(p, md, []NewColumn{{Path: []string{"n"}, Type: nested}, {Path: []string{"st", "c"}, Type: Primitive(TypeLong)}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := md.Schema()
	n := s.Field("n")
	ids := []int64{}
	for _, f := range []*StructField{n, &n.Type.(*StructType).Fields[0], &n.Type.(*StructType).Fields[1], s.Field("st").Type.(*StructType).Field("c")} {
		id, ok := f.FieldID()
		if !ok || !strings.HasPrefix(f.PhysicalName(), "col-") {
			t.Fatalf("field %s: id %v physical %q", f.Name, ok, f.PhysicalName())
		}
		ids = append(ids, id)
	}
	// Existing ids were 1..7; the new ones continue from there (z inside the array is 11).
	if !reflect.DeepEqual(ids, []int64{8, 9, 10, 12}) || md.Configuration[PropColumnMappingMaxColumnID] != "12" {
		t.Fatalf("ids %v, maxColumnId %s", ids, md.Configuration[PropColumnMappingMaxColumnID])
	}
}

// NOT NULL in a DDL schema makes the top-level field non-nullable (issue 31 item 9:
// the README and `help create` show `--schema "id bigint NOT NULL, ..."`).
func TestParseDDLSchemaNotNull(t *testing.T) {
	s, err := ParseDDLSchema("id bigint NOT NULL, note string, ts timestamp not   null , m map<string,int>\tNot Null, `not` int, `null` int, nn string")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"id": false, "note": true, "ts": false, "m": false, "not": true, "null": true, "nn": true}
	for _, f := range s.Fields {
		if w, ok := want[f.Name]; !ok || f.Nullable != w {
			t.Errorf("field %q nullable=%v, want %v (known %v)", f.Name, f.Nullable, w, ok)
		}
	}
	if len(s.Fields) != len(want) {
		t.Fatalf("fields %v", fieldNames(s))
	}
	for _, bad := range []string{
		"id bigint NOT", "id bigint NULL NOT", "id bigintnot null", "id NOT NULL", "id bigint NOT NULL NOT NULL",
		"s struct<a: int NOT NULL>", "id bigint NOTNULL",
	} {
		if _, err := ParseDDLSchema(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	_, err = ParseDDLSchema("s struct<a: int NOT NULL>")
	if err == nil || !strings.Contains(err.Error(), "top-level") {
		t.Errorf("struct field NOT NULL: %v", err)
	}
	// ADD COLUMNS cannot add a NOT NULL column (existing rows have no value).
	if _, err := ParseColumnDefinition("c int NOT NULL"); err == nil || !strings.Contains(err.Error(), "NOT NULL") {
		t.Errorf("ADD COLUMN NOT NULL: %v", err)
	}
}

// TestInvalidUTF8FieldNamesRefused: a field name that is not valid UTF-8 is refused
// wherever a schema is built (a DDL type, an ADD COLUMNS definition, an Arrow schema);
// stored as JSON it would silently become another name (U+FFFD). FuzzParseDDLType
// found the DDL case ("struCt<`\xe0`int>").
func TestInvalidUTF8FieldNamesRefused(t *testing.T) {
	if _, err := ParseDDLType("struCt<`\xe0`int>"); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("DDL type: %v", err)
	}
	if _, err := ParseColumnDefinition("`a\xff` int"); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("column definition: %v", err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "ok", Type: arrow.StructOf(arrow.Field{Name: "b\xc3", Type: arrow.PrimitiveTypes.Int64})}}, nil)
	if _, err := FromArrow(sc); !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), "ok.b") {
		t.Errorf("Arrow schema: %v", err)
	}
	if _, err := ParseDDLType("struct<`naïve`:int>"); err != nil {
		t.Errorf("valid UTF-8 refused: %v", err)
	}
}
