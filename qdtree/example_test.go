package qdtree_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/workload"
)

// ExampleBuild cuts 1,000 rows into four leaves for a workload that filters on
// day ranges, stores the tree as JSON, and routes rows through the decoded tree.
func ExampleBuild() {
	sch := arrow.NewSchema([]arrow.Field{{Name: "day", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for i := range 1000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i % 100))
	}
	sample := b.NewRecordBatch()
	defer sample.Release()

	w, err := workload.Parse(strings.NewReader("day < 25\nday >= 25 AND day < 50\nday >= 50\n"), "queries.sql")
	if err != nil {
		fmt.Println(err)
		return
	}
	tree, err := qdtree.Build(context.Background(), sample, w, qdtree.Options{Leaves: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	data, err := tree.Encode()
	if err != nil {
		fmt.Println(err)
		return
	}
	stored, err := qdtree.Decode(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("columns:", stored.Columns, "leaves:", stored.Leaves)

	router, err := stored.Router(sch)
	if err != nil {
		fmt.Println(err)
		return
	}
	leaves := make([]int32, sample.NumRows())
	if err := router.Route(sample, leaves); err != nil {
		fmt.Println(err)
		return
	}
	rows := make([]int, stored.Leaves)
	for _, l := range leaves {
		rows[l]++
	}
	fmt.Println("rows per leaf:", rows)
	// Every query of the workload reads whole leaves only: day 24 and day 25 are
	// in different leaves.
	fmt.Println("day 24 and day 25 apart:", leaves[24] != leaves[25])
	// Output:
	// columns: [day] leaves: 4
	// rows per leaf: [250 250 250 250]
	// day 24 and day 25 apart: true
}
