package advise_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/advise"
	"github.com/skiplake/skiplake/workload"
)

// ExampleSimulate ranks layouts for a workload that always filters on a day
// range and an id range: the workload tree, which cuts where those filters cut,
// reads fewer files than any curve.
func ExampleSimulate() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "day", Type: arrow.PrimitiveTypes.Int64},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range int64(20_000) {
		b.Field(0).(*array.Int64Builder).Append(i % 365)
		b.Field(1).(*array.Int64Builder).Append((i * 7919) % 20_000)
	}
	rows := b.NewRecordBatch()
	defer rows.Release()
	var file strings.Builder
	for m := range 12 {
		for k := range 4 {
			fmt.Fprintf(&file, "day >= %d AND day < %d AND id >= %d AND id < %d\n", m*30, m*30+30, k*5000, k*5000+5000)
		}
	}
	w, err := workload.Parse(strings.NewReader(file.String()), "dashboards.sql")
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := advise.Simulate(context.Background(), rows, w, advise.Options{Files: 48, Table: "/lake/events", Queries: "dashboards.sql"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("best:", rep.Best.Name)
	fmt.Println(rep.Best.Command)
	// Output:
	// best: workload
	// skiplake optimize /lake/events --layout workload --queries dashboards.sql --full
}
