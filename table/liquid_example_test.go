package table_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// exampleBatch makes rows (id, user) with ids from start.
func exampleBatch(schema *arrow.Schema, start int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := int64(0); i < int64(n); i++ {
		b.Field(0).(*array.Int64Builder).Append(start + i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("user-%03d", (start+i)*7%100))
	}
	return b.NewRecordBatch()
}

// Example_clustered creates a clustered table (Delta liquid clustering), appends to
// it, clusters it incrementally with OPTIMIZE, changes its clustering columns
// without rewriting anything, and reads the layout health from the log.
func Example_clustered() {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user", Type: arrow.BinaryTypes.String},
	}, nil)
	t, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{ClusterBy: []string{"user"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := int64(0); i < 4; i++ {
		rec := exampleBatch(schema, i*100, 100)
		_, err := t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	res, err := t.Optimize(ctx, table.OptimizeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("OPTIMIZE clustered %d files by %v (liquid: %v)\n", res.Metrics.NumRemovedFiles, res.Plan.ClusterBy, res.Plan.Liquid)
	alt, err := t.Alter(ctx, table.AlterOptions{ClusterBy: []string{"id", "user"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("version", alt.Version, alt.Operation)
	rep, err := t.Layout(ctx, table.LayoutOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d file, clustering columns %v, %.0f%% of bytes clustered\n", rep.Files, rep.ClusteringColumns, 100*rep.ClusteredFraction)
	// Output:
	// OPTIMIZE clustered 4 files by [user] (liquid: true)
	// version 6 CLUSTER BY
	// 1 file, clustering columns [id user], 100% of bytes clustered
}

// ExampleTable_Maintain runs scheduled maintenance: a dry run says what is due, the
// run does it, and a second run finds nothing to do.
func ExampleTable_Maintain() {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "user", Type: arrow.BinaryTypes.String},
	}, nil)
	t, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := int64(0); i < 12; i++ {
		rec := exampleBatch(schema, i*10, 10)
		_, err := t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, dry := range []bool{true, false, false} {
		rep, err := t.Maintain(ctx, table.MaintainOptions{DryRun: dry})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("dry run %v: compact %s, work remains %v\n", dry, rep.Task(table.TaskCompact).Status, rep.WorkRemains)
	}
	// Output:
	// dry run true: compact planned, work remains true
	// dry run false: compact done, work remains false
	// dry run false: compact not-needed, work remains false
}
