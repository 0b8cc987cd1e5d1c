package input_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/input"
)

func TestFormatOf(t *testing.T) {
	for _, c := range []struct {
		path string
		want input.Format
	}{
		{"a.parquet", input.Parquet}, {"a.PQ", input.Parquet}, {"a.csv", input.CSV},
		{"a.jsonl", input.JSONL}, {"a.ndjson", input.JSONL}, {"dir/a.JSON", input.JSONL},
	} {
		got, err := input.FormatOf(c.path)
		if err != nil || got != c.want {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
	}
	if _, err := input.FormatOf("a.txt"); !errors.Is(err, input.ErrUnknownFormat) {
		t.Errorf("FormatOf(a.txt): %v, want ErrUnknownFormat", err)
	}
}

// writeFiles writes name→content under a new directory and returns the paths.
func writeFiles(t *testing.T, files ...string) []string {
	dir := t.TempDir()
	var out []string
	for i := 0; i < len(files); i += 2 {
		p := filepath.Join(dir, files[i])
		if err := os.WriteFile(p, []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestInferSchema(t *testing.T) {
	ts := "timestamp[us, tz=UTC]"
	for _, c := range []struct {
		name  string
		files []string // name, content pairs
		want  string   // name:type, comma-separated
	}{
		{"csv kinds", []string{"a.csv", "b,i,f,d,t,s,n\ntrue,1,1.5,2026-01-01,2026-01-01 10:00:00,x,\nFALSE,-2,1e3,2026-01-02,2026-01-02T00:00Z,y,NULL\n"},
			"b:bool,i:int64,f:float64,d:date32,t:" + ts + ",s:utf8,n:utf8"},
		{"leading zeros and huge integers stay strings", []string{"a.csv", "zip,big,f\n02134,99999999999999999999,0.5\n"},
			"zip:utf8,big:utf8,f:float64"},
		{"widening int+double, date+timestamp, other mixes", []string{"a.csv", "x,y,z\n1,2026-01-01,1\n1.5,2026-01-01 10:00,true\n"},
			"x:float64,y:" + ts + ",z:utf8"},
		{"across sources, names ignoring case, spelled as first seen", []string{"a.csv", "Id,v\n1,2\n", "b.jsonl", `{"id":2.5,"w":true}` + "\n"},
			"Id:float64,v:int64,w:bool"},
		{"jsonl strings are strings", []string{"a.jsonl", `{"d":"2026-01-01","n":null}` + "\n"},
			"d:utf8,n:utf8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var srcs []input.Source
			for _, p := range writeFiles(t, c.files...) {
				f, _ := input.FormatOf(p)
				srcs = append(srcs, input.File(p, f))
			}
			s, err := input.InferSchema(srcs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range s.Fields() {
				if !f.Nullable {
					t.Errorf("%s is NOT NULL; inferred columns are nullable", f.Name)
				}
				got = append(got, f.Name+":"+f.Type.String())
			}
			if g := strings.Join(got, ","); g != c.want {
				t.Errorf("inferred %s\nwant     %s", g, c.want)
			}
		})
	}
}

func TestInferSchemaErrors(t *testing.T) {
	for _, c := range []struct{ name, content, want string }{
		{"a.csv", "a,A\n1,2\n", `a.csv: header: column "A" appears twice (names are case-insensitive)`},
		{"a.csv", "a,b\n1\n", "a.csv:2: 1 fields, but the header has 2"},
		{"a.csv", "a\n\"x\n", "a.csv:2:4: extraneous or missing \" in quoted-field"},
		{"a.jsonl", "{\"a\":1}\n{\"a\":[1]}\n", `a.jsonl:2: field "a": an array cannot be typed by inference; give the schema with --schema`},
		{"a.jsonl", "{\"a\":1}\n\n{\"a\" 1}\n", `a.jsonl:3:6: invalid JSON: invalid character '1' after an object key, want ':'`},
		{"a.jsonl", "{\"a\":1,\"A\":2}\n", `a.jsonl:1: fields "a" and "A" name the same column (names are case-insensitive)`},
	} {
		p := writeFiles(t, c.name, c.content)[0]
		f, _ := input.FormatOf(p)
		_, err := input.InferSchema([]input.Source{input.File(p, f)})
		if err == nil {
			t.Errorf("%q: no error, want %s", c.content, c.want)
			continue
		}
		if got := strings.ReplaceAll(err.Error(), filepath.Dir(p)+string(filepath.Separator), ""); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.content, got, c.want)
		}
	}
	_, err := input.InferSchema([]input.Source{input.Stream("<stdin>", input.CSV, strings.NewReader("a\n1\n"))})
	if !errors.Is(err, input.ErrReadOnce) {
		t.Errorf("a stream: %v, want ErrReadOnce", err)
	}
}

// TestConcat reads three sources as one: rows in order, Locate maps rows back to
// sources, and an error in the last names its file and line once.
func TestConcat(t *testing.T) {
	paths := writeFiles(t, "a.csv", "id\n1\n2\n", "b.jsonl", `{"id":3}`+"\n", "c.csv", "id\n4\nx\n")
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	srcs := []input.Source{input.File(paths[0], input.CSV), input.File(paths[1], input.JSONL), input.File(paths[2], input.CSV)}
	r := input.NewConcat(context.Background(), srcs, schema, input.Options{Allocator: mem})
	if r.Current() != "" {
		t.Errorf("Current before Next = %q", r.Current())
	}
	var rows int64
	for r.Next() {
		rows += r.RecordBatch().NumRows()
	}
	r.Release()
	if rows != 3 {
		t.Errorf("%d rows before the error, want 3", rows)
	}
	want := paths[2] + `:3:1: column "id": cannot read "x" as bigint`
	if r.Err() == nil || r.Err().Error() != want {
		t.Errorf("Err = %v\nwant %s", r.Err(), want)
	}
	for row, want := range []struct {
		name string
		pos  int64
	}{{paths[0], 1}, {paths[0], 2}, {paths[1], 1}} {
		if n, p := r.Locate(int64(row)); n != want.name || p != want.pos {
			t.Errorf("Locate(%d) = %s, %d; want %s, %d", row, n, p, want.name, want.pos)
		}
	}
}

// TestConcatNamesSource: an error whose message lacks the source's name gets it.
func TestConcatNamesSource(t *testing.T) {
	srcs := []input.Source{{Name: "gone.csv", Format: input.CSV, Path: filepath.Join(t.TempDir(), "absent.csv")}}
	r := input.NewConcat(context.Background(), srcs, arrow.NewSchema(nil, nil), input.Options{})
	defer r.Release()
	if r.Next() {
		t.Fatal("Next on a missing file")
	}
	if err := r.Err(); err == nil || !strings.HasPrefix(err.Error(), "gone.csv: ") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Err = %v, want gone.csv: ... wrapping ErrNotExist", err)
	}
}

// TestComputed: a computed column a CSV header lacks is left out; JSONL is read
// without it; a NOT NULL column the header lacks is an error.
func TestComputed(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "Gen", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	opts := input.Options{Computed: []string{"gen"}}
	for _, c := range []struct {
		name string
		open func() (interface{ Err() error }, *arrow.Schema, error)
	}{
		{"csv", func() (interface{ Err() error }, *arrow.Schema, error) {
			r, err := input.NewCSVReader("a.csv", strings.NewReader("id\n1\n"), schema, opts)
			if err != nil {
				return nil, nil, err
			}
			defer r.Release()
			return r, r.Schema(), nil
		}},
		{"jsonl", func() (interface{ Err() error }, *arrow.Schema, error) {
			r, err := input.NewJSONLReader("a.jsonl", strings.NewReader(`{"id":1}`+"\n"), schema, opts)
			if err != nil {
				return nil, nil, err
			}
			defer r.Release()
			return r, r.Schema(), nil
		}},
	} {
		_, s, err := c.open()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.NumFields() != 1 || s.Field(0).Name != "id" {
			t.Errorf("%s: schema %s, want id only", c.name, s)
		}
	}
	r, err := input.NewCSVReader("a.csv", strings.NewReader("id\n1\n"), schema, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if r.Next() {
		t.Fatal("a row without its NOT NULL column")
	}
	want := `a.csv:2: column "Gen" is NOT NULL but the value is missing or null (the header has no column "Gen")`
	if r.Err() == nil || r.Err().Error() != want {
		t.Errorf("Err = %v\nwant %s", r.Err(), want)
	}
}

func TestParquetSource(t *testing.T) {
	dir := t.TempDir()
	if _, err := input.OpenParquet(context.Background(), dir, input.Options{}); !errors.Is(err, input.ErrNotAFile) {
		t.Errorf("a directory: %v, want ErrNotAFile", err)
	}
	s := input.Stream("<stdin>", input.Parquet, strings.NewReader(""))
	if _, err := s.Reader(context.Background(), nil, input.Options{}); !errors.Is(err, input.ErrParquetNeedsFile) {
		t.Errorf("a Parquet stream: %v, want ErrParquetNeedsFile", err)
	}
}
