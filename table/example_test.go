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

// Example creates a partitioned table, appends two commits, and scans it with a
// filter that partition values and file statistics decide without reading most files.
func Example() {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "country", Type: arrow.BinaryTypes.String},
	}, nil)
	t, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{PartitionColumns: []string{"country"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ids := range [][]int64{{1, 2, 3}, {4, 5, 6}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"DE", "FR", "DE"}, nil)
		rec := b.NewRecordBatch()
		res, err := t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		b.Release()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("version %d: %d rows in %d files\n", res.Version, res.RowsWritten, res.FilesAdded)
	}
	sc, err := t.Scan(ctx, table.WithFilter("country = 'DE' AND id >= 4"), table.WithColumns("id"))
	if err != nil {
		fmt.Println(err)
		return
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Release()
	for rd.Next() {
		fmt.Println(rd.RecordBatch().Column(0))
	}
	rep := rd.Report()
	fmt.Printf("files: %d total, %d skipped\n", rep.Files.Total, rep.Files.Skipped)
	// Output:
	// version 1: 3 rows in 2 files
	// version 2: 3 rows in 2 files
	// [4 6]
	// files: 4 total, 3 skipped
}

// ExampleTable_Count answers a count from file statistics alone when every file left
// after skipping is known to match entirely.
func ExampleTable_Count() {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	t, _ := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{})
	for start := int64(0); start < 300; start += 100 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := start; i < start+100; i++ {
			b.Field(0).(*array.Int64Builder).Append(i)
		}
		rec := b.NewRecordBatch()
		_, _ = t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		b.Release()
	}
	n, rep, err := t.Count(ctx, table.WithFilter("n >= 100"))
	if err != nil {
		fmt.Println(err)
		return
	}
	md := rep.Level("metadata")
	fmt.Printf("%d rows; %d files answered from metadata, %d read\n", n, md.MustMatch, md.Kept-md.MustMatch)
	// Output:
	// 200 rows; 2 files answered from metadata, 0 read
}
