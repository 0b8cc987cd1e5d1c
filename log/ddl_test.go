package log

import (
	"errors"
	"testing"
)

func TestParseDDL(t *testing.T) {
	cases := []struct {
		in   string
		want string // the schema's JSON, abbreviated by type names
	}{
		{"id bigint, ts timestamp", "id:long ts:timestamp"},
		{"ID BIGINT NOT NULL,amount Decimal(10, 2),d date", "ID:long! amount:decimal(10,2) d:date"},
		{"a tinyint, b smallint, c int, d integer, e long, f real, g double, h varchar(20), i char(3), j binary, k boolean, l timestamp_ntz, m timestamp_ltz, n dec",
			"a:byte b:short c:integer d:integer e:long f:float g:double h:string i:string j:binary k:boolean l:timestamp_ntz m:timestamp n:decimal(10,0)"},
		{"tags array<string>, m map<string, int>, p struct<x: double, `y z`:double not null>", "tags:array m:map p:struct"},
		{"`we``ird` string", "we`ird:string"},
		{"  x : int  ", "x:integer"},
	}
	for _, c := range cases {
		st, err := ParseDDL(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		got := ""
		for i, f := range st.Fields {
			if i > 0 {
				got += " "
			}
			got += f.Name + ":" + f.Type.TypeName()
			if !f.Nullable {
				got += "!"
			}
		}
		if got != c.want {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
		// The result is a valid Delta schema that survives a JSON round trip.
		if back, err := ParseSchema(st.JSON()); err != nil || back.JSON() != st.JSON() {
			t.Errorf("%q: round trip %v", c.in, err)
		}
	}
	p, _ := ParseDDL("p struct<x: double, y:double not null>, a array<struct<k:int>>")
	if st := p.Fields[0].Type.(*StructType); len(st.Fields) != 2 || st.Fields[1].Nullable {
		t.Errorf("struct fields %+v", st.Fields)
	}
	for _, bad := range []string{"", "id", "id bigint,", "id bigint id2 int", "id blob", "id decimal(40,2)", "id decimal(5,6)",
		"a int, A int", "s struct<>", "s struct<a int, a int>", "m map<string>", "a array<int", "`x int", "``` int", "x int not", "x int not nil"} {
		if _, err := ParseDDL(bad); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("%q: got %v, want ErrInvalidSchema", bad, err)
		}
	}
}

func FuzzParseDDL(f *testing.F) {
	for _, s := range []string{"id bigint, ts timestamp", "p struct<x: double, `y`:double not null>", "m map<string, array<decimal(10,2)>>", "`a``b` int"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseDDL(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidSchema", s, err)
			}
			return
		}
		if back, err := ParseSchema(st.JSON()); err != nil || back.JSON() != st.JSON() {
			t.Fatalf("%q: parsed schema does not round-trip: %v", s, err)
		}
	})
}
