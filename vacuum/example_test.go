package vacuum_test

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
)

// Run after the retention period has passed: the files OPTIMIZE compacted go.
func ExampleRun() {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	t, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 4 { // four commits of one small file each
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(2 * i), int64(2*i + 1)}, nil)
		rec := b.NewRecordBatch()
		_, err := t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		b.Release()
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	if _, err := t.Optimize(ctx, table.OptimizeOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := vacuum.Run(ctx, t.Log(), vacuum.Options{
		DryRun: true,
		Now:    func() time.Time { return time.Now().Add(8 * 24 * time.Hour) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("would delete %d files (retention %s)\n", len(res.Files), res.Retention)
	// Output:
	// would delete 4 files (retention 168h0m0s)
}
