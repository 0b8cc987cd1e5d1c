package expr_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/expr"
)

func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)

	e, err := expr.Parse("id >= 2 AND NOT (name LIKE 'b%' OR name IS NULL)")
	if err != nil {
		fmt.Println(err)
		return
	}
	bound, err := expr.Bind(e, schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("bound:", bound)

	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4, 5}, nil)
	rb.Field(1).(*array.StringBuilder).AppendValues([]string{"apple", "banana", "cherry", "", "date"}, []bool{true, true, true, false, true})
	rec := rb.NewRecordBatch()
	defer rec.Release()

	sel, err := bound.Evaluate(rec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rows:", sel.Indices(nil))
	// Output:
	// bound: id >= 2 AND name NOT LIKE 'b%' AND name IS NOT NULL
	// rows: [2 4]
}

func ExampleParse_error() {
	_, err := expr.Parse("(a = 1 AND b = 2")
	fmt.Println(err)
	// Output:
	// expr: at 17: expected ')' but found end of input
}

func ExampleBind_coercion() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "small", Type: arrow.PrimitiveTypes.Int8},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}},
	}, nil)
	for _, s := range []string{"small < 300", "small = 300", "price < 1.005", "price = 1.005", "price = 'abc'"} {
		b, err := expr.Bind(expr.MustParse(s), schema)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-14s -> %s\n", s, b)
	}
	// Output:
	// small < 300    -> small <= 127
	// small = 300    -> FALSE
	// price < 1.005  -> price <= 1.00
	// price = 1.005  -> FALSE
	// expr: cannot compare column "price" (decimal(5,2)) with 'abc'
}
