package log

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestDisplayTypeNamesTypesAsSparkSQL(t *testing.T) {
	cases := []struct {
		in   string // a schemaString type
		want string
	}{
		{`"byte"`, "tinyint"}, {`"short"`, "smallint"}, {`"integer"`, "int"}, {`"long"`, "bigint"},
		{`"float"`, "float"}, {`"double"`, "double"}, {`"decimal(10,2)"`, "decimal(10,2)"},
		{`"string"`, "string"}, {`"binary"`, "binary"}, {`"boolean"`, "boolean"}, {`"date"`, "date"},
		{`"timestamp"`, "timestamp"}, {`"timestamp_ntz"`, "timestamp_ntz"}, {`"variant"`, "variant"},
		{`{"type":"array","elementType":"integer","containsNull":true}`, "array<int>"},
		{`{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true}`, "map<string,bigint>"},
		{`{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},` +
			`{"name":"b c","type":{"type":"array","elementType":"short","containsNull":false},"nullable":true,"metadata":{}}]}`,
			"struct<a:int,`b c`:array<smallint>>"},
	}
	for _, c := range cases {
		st, err := ParseSchema(`{"type":"struct","fields":[{"name":"x","type":` + c.in + `,"nullable":true,"metadata":{}}]}`)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := DisplayType(st.Fields[0].Type); got != c.want {
			t.Errorf("DisplayType(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

// randomDDLType builds a random type whose nested fields and elements are nullable,
// as ParseDDLType builds them.
func randomDDLType(r *rand.Rand, depth int) DataType {
	prims := []string{TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble,
		TypeBoolean, TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ}
	k := r.IntN(7)
	if depth <= 0 {
		k = r.IntN(4)
	}
	switch k {
	case 0, 1, 2:
		return &PrimitiveType{Name: prims[r.IntN(len(prims))]}
	case 3:
		p := 1 + r.IntN(38)
		return &DecimalType{Precision: p, Scale: r.IntN(p + 1)}
	case 4:
		return &ArrayType{ElementType: randomDDLType(r, depth-1), ContainsNull: true}
	case 5:
		return &MapType{KeyType: randomDDLType(r, 0), ValueType: randomDDLType(r, depth-1), ValueContainsNull: true}
	}
	names := []string{"a", "B_1", "with space", "dot.ted", "back`tick", "é", "x"}
	st := &StructType{}
	for _, n := range r.Perm(len(names))[:1+r.IntN(3)] {
		st.Fields = append(st.Fields, StructField{Name: names[n], Type: randomDDLType(r, depth-1), Nullable: true, Metadata: map[string]any{}})
	}
	return st
}

// DisplayType's text is SQL DDL: it parses back to the same type (property test,
// fixed seed).
func TestDisplayTypeParsesBack(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 10))
	for i := range 2000 {
		typ := randomDDLType(r, 3)
		text := DisplayType(typ)
		back, err := ParseDDLType(text)
		if err != nil {
			t.Fatalf("case %d: %q does not parse: %v", i, text, err)
		}
		if !reflect.DeepEqual(back, typ) {
			t.Fatalf("case %d: %q parses as %s", i, text, fmt.Sprint(DisplayType(back)))
		}
	}
}
