package bloom_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
)

var propsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "Email", Type: arrow.BinaryTypes.String},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	{Name: "big", Type: arrow.PrimitiveTypes.Uint64},
}, nil)

func TestResolveColumns(t *testing.T) {
	cases := []struct {
		name    string
		names   []string
		cols    []string
		wantErr error
	}{
		{"no names means no columns", nil, nil, nil},
		{"names are trimmed and keep their order", []string{" Email ", "id"}, []string{"Email", "id"}, nil},
		{"names match case-insensitively and return the schema spelling", []string{"EMAIL", "ID"}, []string{"Email", "id"}, nil},
		{"duplicates are dropped", []string{"id", "ID", "id"}, []string{"id"}, nil},
		{"empty names are ignored", []string{"", "id", " "}, []string{"id"}, nil},
		{"decimal columns are accepted", []string{"amount"}, []string{"amount"}, nil},
		{"unknown column is rejected", []string{"id", "nope"}, nil, bloom.ErrInvalidArgument},
		{"nested column is rejected", []string{"tags"}, nil, bloom.ErrUnsupportedType},
		{"uint64 column is rejected", []string{"big"}, nil, bloom.ErrUnsupportedType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cols, err := bloom.ResolveColumns(propsSchema, c.names)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cols, c.cols) {
				t.Fatalf("got %q, want %q", cols, c.cols)
			}
		})
	}
}

func TestResolveColumnErrorsNameTheColumn(t *testing.T) {
	_, err := bloom.ResolveColumn(propsSchema, "nope")
	if err == nil || !errors.Is(err, bloom.ErrInvalidArgument) {
		t.Fatalf("err = %v", err)
	}
	if want := `bloom: invalid argument: column "nope" is not a top-level data column (columns: id, Email, amount, tags, big)`; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	if _, err := bloom.ResolveColumn(nil, "id"); !errors.Is(err, bloom.ErrInvalidArgument) {
		t.Fatalf("nil schema: err = %v", err)
	}
}

// Resolve the Bloom-indexed columns a table property names against the data schema.
func ExampleResolveColumns() {
	data := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
	}, nil)
	cols, err := bloom.ResolveColumns(data, []string{"USER_ID", "user_id"})
	fmt.Println(cols, err)
	// Output: [user_id] <nil>
}

// FuzzResolveColumns checks that any list of names either fails with a classified
// error or yields distinct columns of the schema.
func FuzzResolveColumns(f *testing.F) {
	for _, s := range []string{"id,Email", " id , ,ID", "tags", "nope", "", "big,amount"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, names string) {
		got, err := bloom.ResolveColumns(propsSchema, strings.Split(names, ","))
		if err != nil {
			if !errors.Is(err, bloom.ErrInvalidArgument) && !errors.Is(err, bloom.ErrUnsupportedType) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, c := range got {
			if seen[c] || len(propsSchema.FieldIndices(c)) != 1 {
				t.Fatalf("column %q duplicated or not in the schema: %q", c, got)
			}
			seen[c] = true
		}
	})
}
