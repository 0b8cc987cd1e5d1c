package scanexec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/value"
)

// testColumns: a (file), p (partition), b (file), t (override: a file column a
// task's constant replaces when it has one).
func testColumns() []Column {
	a := arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	p := arrow.Field{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true}
	b := arrow.Field{Name: "B", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	t := arrow.Field{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true}
	return []Column{
		{Field: a, Read: a},
		{Field: p, Partition: true, Physical: "col-p"},
		{Field: b, Read: b},
		{Field: t, Read: t, Physical: "t", Override: true},
	}
}

// TestProject: which columns a projection returns, reads and asks of the files, for
// column lists, a filter and counts; bad column lists are errors naming the column.
func TestProject(t *testing.T) {
	cols := testColumns()
	for _, tc := range []struct {
		name      string
		columns   []string
		countOnly bool
		filter    string
		out       string // output schema field names
		read      string // read schema field names
		want      string // file columns asked for
		err       error
	}{
		{name: "every column", out: "a, p, B, t", read: "a, p, B, t", want: "a, B, t"},
		{name: "chosen, in the given order, case-insensitive", columns: []string{"b", " p "}, out: "B, p", read: "p, B", want: "B"},
		{name: "filter columns are read, not returned", columns: []string{"p"}, filter: "a > 1", out: "p", read: "a, p", want: "a"},
		{name: "count reads only the filter's columns", countOnly: true, filter: "p = 'x' AND B < 3", out: "", read: "p, B", want: "B"},
		{name: "count without a filter reads nothing", countOnly: true, out: "", read: "", want: ""},
		{name: "unknown column", columns: []string{"zz"}, err: ErrUnknownColumn},
		{name: "column twice", columns: []string{"a", "A"}, err: tableview.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pred expr.Expr
			var bound *expr.Bound
			if tc.filter != "" {
				var err error
				if pred, err = expr.Parse(tc.filter); err != nil {
					t.Fatal(err)
				}
				if bound, err = expr.Bind(pred, ColumnSchema(cols)); err != nil {
					t.Fatal(err)
				}
			}
			p, err := Project(cols, tc.columns, tc.countOnly, pred, bound)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what string
				s    *arrow.Schema
				want string
			}{{"output", p.Schema, tc.out}, {"read", p.ReadSchema, tc.read}, {"file", p.Want, tc.want}} {
				if got := FieldNames(c.s); got != c.want {
					t.Errorf("%s columns %q, want %q", c.what, got, c.want)
				}
			}
			if (p.Recheck != nil) != (tc.filter != "") {
				t.Errorf("recheck %v with filter %q", p.Recheck, tc.filter)
			}
		})
	}
}

// TestWithPartitions checks every value of the batches WithPartitions and output
// build against the columns they come from: file columns from the data batch in
// order, partition columns from the task's constants, an override column from the
// task when it has a value, from the file otherwise.
func TestWithPartitions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	cols := testColumns()
	p, err := Project(cols, []string{"t", "p", "a"}, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	ab := array.NewInt64Builder(mem)
	tb := array.NewStringBuilder(mem)
	for i := range n {
		ab.Append(int64(i))
		tb.Append(fmt.Sprint("file", i))
	}
	fileCols := []arrow.Array{ab.NewArray(), tb.NewArray()}
	data := array.NewRecordBatch(p.Want, fileCols, n)
	ReleaseArrays(fileCols)
	ab.Release()
	tb.Release()
	defer data.Release()
	for _, tc := range []struct {
		name  string
		parts map[string]value.Value
		tWant func(i int) string
	}{
		{"override given", map[string]value.Value{"col-p": value.String("x"), "t": value.String("insert")}, func(int) string { return "insert" }},
		{"override absent: the file's column", map[string]value.Value{"col-p": value.String("x")}, func(i int) string { return fmt.Sprint("file", i) }},
	} {
		rec, err := p.WithPartitions(&Task{PartVals: tc.parts}, data, mem)
		if err != nil {
			t.Fatal(err)
		}
		if got := FieldNames(rec.Schema()); got != "a, p, t" {
			t.Fatalf("%s: read batch columns %q", tc.name, got)
		}
		out := p.output(rec) // consumes rec
		if got := FieldNames(out.Schema()); got != "t, p, a" || out.NumRows() != n {
			t.Fatalf("%s: output %q with %d rows", tc.name, got, out.NumRows())
		}
		for i := range n {
			if got := out.Column(0).(*array.String).Value(i); got != tc.tWant(i) {
				t.Errorf("%s: row %d t = %q, want %q", tc.name, i, got, tc.tWant(i))
			}
			if got := out.Column(1).(*array.String).Value(i); got != "x" {
				t.Errorf("%s: row %d p = %q, want x", tc.name, i, got)
			}
			if got := out.Column(2).(*array.Int64).Value(i); got != int64(i) {
				t.Errorf("%s: row %d a = %d, want %d", tc.name, i, got, i)
			}
		}
		out.Release()
	}
	// A partition value that does not fit the column's type fails, leaking nothing.
	if _, err := p.WithPartitions(&Task{PartVals: map[string]value.Value{"col-p": value.Int64(1)}}, data, mem); err == nil {
		t.Fatal("a bigint partition value for a string column was accepted")
	}
}
