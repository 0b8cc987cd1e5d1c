package bloom_test

import (
	"errors"
	"fmt"
	"slices"
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

func TestColumnsFromProperties(t *testing.T) {
	cases := []struct {
		name    string
		props   map[string]string
		cols    []string
		fpp     float64
		wantErr error
	}{
		{"no properties means no columns and the default rate", nil, nil, bloom.DefaultFPP, nil},
		{"columns are trimmed and keep property order", map[string]string{bloom.PropColumns: " Email , id "}, []string{"Email", "id"}, bloom.DefaultFPP, nil},
		{"names match case-insensitively and return the schema spelling", map[string]string{bloom.PropColumns: "EMAIL,ID"}, []string{"Email", "id"}, bloom.DefaultFPP, nil},
		{"duplicates are dropped", map[string]string{bloom.PropColumns: "id,ID,id"}, []string{"id"}, bloom.DefaultFPP, nil},
		{"empty items are ignored", map[string]string{bloom.PropColumns: ",id,,"}, []string{"id"}, bloom.DefaultFPP, nil},
		{"decimal columns are accepted", map[string]string{bloom.PropColumns: "amount"}, []string{"amount"}, bloom.DefaultFPP, nil},
		{"rate is parsed", map[string]string{bloom.PropColumns: "id", bloom.PropFPP: "0.001"}, []string{"id"}, 0.001, nil},
		{"property keys match case-insensitively", map[string]string{"SKIPLAKE.BLOOMFILTER.COLUMNS": "id", "skiplake.bloomfilter.fpp": "0.05"}, []string{"id"}, 0.05, nil},
		{"unknown column is rejected", map[string]string{bloom.PropColumns: "id,nope"}, nil, 0, bloom.ErrInvalidArgument},
		{"nested column is rejected", map[string]string{bloom.PropColumns: "tags"}, nil, 0, bloom.ErrUnsupportedType},
		{"uint64 column is rejected", map[string]string{bloom.PropColumns: "big"}, nil, 0, bloom.ErrUnsupportedType},
		{"rate above the maximum is rejected", map[string]string{bloom.PropFPP: "0.9"}, nil, 0, bloom.ErrInvalidArgument},
		{"rate of zero is rejected", map[string]string{bloom.PropFPP: "0"}, nil, 0, bloom.ErrInvalidArgument},
		{"malformed rate is rejected", map[string]string{bloom.PropFPP: "1%"}, nil, 0, bloom.ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cols, fpp, err := bloom.ColumnsFromProperties(c.props, propsSchema)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cols, c.cols) || fpp != c.fpp {
				t.Fatalf("got %q %v, want %q %v", cols, fpp, c.cols, c.fpp)
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

// Read the Bloom filter configuration of a table from its properties.
func ExampleColumnsFromProperties() {
	data := arrow.NewSchema([]arrow.Field{
		{Name: "user_id", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
	}, nil)
	props := map[string]string{bloom.PropColumns: "USER_ID", bloom.PropFPP: "0.001"}
	cols, fpp, err := bloom.ColumnsFromProperties(props, data)
	fmt.Println(cols, fpp, err)
	// Output: [user_id] 0.001 <nil>
}

// FuzzColumnsFromProperties checks that any property text either fails with a
// classified error or yields distinct columns of the schema and a valid rate.
func FuzzColumnsFromProperties(f *testing.F) {
	for _, s := range [][2]string{{"id,Email", "0.01"}, {" id , ,ID", ""}, {"tags", "0.5"}, {"nope", "1e-9"}, {"", "NaN"}, {"big,amount", "-1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cols, fpp string) {
		props := map[string]string{bloom.PropColumns: cols}
		if fpp != "" {
			props[bloom.PropFPP] = fpp
		}
		got, rate, err := bloom.ColumnsFromProperties(props, propsSchema)
		if err != nil {
			if !errors.Is(err, bloom.ErrInvalidArgument) && !errors.Is(err, bloom.ErrUnsupportedType) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if !(rate >= bloom.MinFPP && rate <= bloom.MaxFPP) {
			t.Fatalf("rate %v", rate)
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
