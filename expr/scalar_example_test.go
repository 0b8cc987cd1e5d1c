package expr_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/expr"
)

func ExampleBoundAssignments_Apply() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{5, 50, 500}, nil)
	for _, p := range []int64{1000, 250, 99} {
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(p))
	}
	b.Field(3).(*array.StringBuilder).AppendValues([]string{"a", "b", "c"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	// UPDATE ... SET ... WHERE qty >= 50
	set, err := expr.ParseAssignments("qty = qty + 1, price = price * 0.9, note = note || '/' || CAST(qty AS string)")
	if err != nil {
		fmt.Println(err)
		return
	}
	bound, err := expr.BindAssignments(set, schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	where, _ := expr.Bind(expr.MustParse("qty >= 50"), schema)
	sel, _ := where.Evaluate(rec)
	out, err := bound.Apply(rec, sel, memory.DefaultAllocator)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out.Release()
	fmt.Println(bound)
	for c := 1; c < 4; c++ {
		fmt.Println(out.ColumnName(c), out.Column(c))
	}

	// A value that does not fit is an error naming the row, not a wrong value.
	set, _ = expr.ParseAssignments("qty = qty * 10000000")
	bound, _ = expr.BindAssignments(set, schema)
	_, err = bound.Apply(rec, nil, memory.DefaultAllocator)
	fmt.Println(err)
	// Output:
	// qty = (qty + 1), price = CAST((price * 0.9) AS decimal(10,2)), note = concat(note, '/', CAST(qty AS string))
	// qty [5 51 501]
	// price [10 2.25 0.89]
	// note ["a" "b/50" "c/500"]
	// column qty: expr: row 2: qty * 10000000: arithmetic overflow: 500 * 10000000 overflows int
}

func ExampleBindScalar() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	for _, s := range []string{"qty / 2", "price * qty", "price / 3", "CASE WHEN qty > 10 THEN 'bulk' ELSE 'unit' END", "qty + 'a'"} {
		e, err := expr.ParseScalar(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		b, err := expr.BindScalar(e, schema)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s\n", s, expr.TypeName(b.Type()))
	}
	// Output:
	// qty / 2: double
	// price * qty: decimal(21,2)
	// price / 3: decimal(14,6)
	// CASE WHEN qty > 10 THEN 'bulk' ELSE 'unit' END: string
	// expr: cannot evaluate qty + 'a': string is not a number (use CAST)
}
