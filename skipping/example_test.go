package skipping_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

func ExampleFileIndex_Evaluate() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	file := func(lo, hi int64, nulls int64, cityLo, cityHi string) *stats.File {
		return &stats.File{NumRecords: 100, TightBounds: true, Columns: map[string]*stats.Column{
			stats.Key("id"):   {Min: value.Int64(lo), Max: value.Int64(hi), NullCount: nulls, HasNullCount: true},
			stats.Key("city"): {Min: value.String(cityLo), Max: value.String(cityHi), HasNullCount: true},
		}}
	}
	files := []*stats.File{
		file(0, 99, 0, "Amsterdam", "Berlin"),
		file(100, 199, 0, "Berlin", "Oslo"),
		file(200, 299, 5, "Paris", "Zurich"),
		nil, // a file without statistics
	}
	idx := skipping.NewFileIndex(files, schema)

	pred, err := expr.Bind(expr.MustParse("id >= 100 AND city LIKE 'Pa%'"), schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	out := make([]skipping.Verdict, idx.Len())
	if err := idx.Evaluate(pred, out); err != nil {
		fmt.Println(err)
		return
	}
	for i, v := range out {
		fmt.Println(i, v)
	}
	// Output:
	// 0 cannot-match
	// 1 cannot-match
	// 2 might-match
	// 3 might-match
}

func ExampleEvaluatePartition() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	pred, err := expr.Bind(expr.MustParse("day >= DATE '2024-03-01'"), schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range []string{"2024-02-29", "2024-03-01"} {
		days, _ := expr.ParseDate(d)
		fmt.Println(d, skipping.EvaluatePartition(pred, map[string]value.Value{"day": value.Date(days)}))
	}
	fmt.Println("NULL", skipping.EvaluatePartition(pred, map[string]value.Value{"day": value.Null()}))
	// Output:
	// 2024-02-29 cannot-match
	// 2024-03-01 must-match
	// NULL cannot-match
}
