package table_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

var exampleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func exampleOrders(ids, qtys []int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, exampleSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(qtys, nil)
	return b.NewRecordBatch()
}

// exampleTable is a table with deletion vectors enabled and two files: ids 1-3 and 4-6.
func exampleTable(ctx context.Context) *table.Table {
	t, err := table.Create(ctx, storage.NewMemory(), exampleSchema, table.CreateOptions{
		Properties: map[string]string{log.PropEnableDeletionVectors: "true"}})
	if err != nil {
		panic(err)
	}
	for _, ids := range [][]int64{{1, 2, 3}, {4, 5, 6}} {
		rec := exampleOrders(ids, []int64{10, 20, 30})
		if _, err := t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
			panic(err)
		}
		rec.Release()
	}
	return t
}

// exampleRows prints the table's rows as id:qty, by id (row order across files is not
// defined).
func exampleRows(ctx context.Context, t *table.Table) {
	tbl, err := t.ReadAll(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var rows []string
	for tr.Next() {
		rec := tr.RecordBatch()
		ids, qtys := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			rows = append(rows, fmt.Sprintf("%d:%d", ids.Value(i), qtys.Value(i)))
		}
	}
	sort.Strings(rows)
	fmt.Println(rows)
}

// ExampleTable_Delete deletes by a predicate: the file of ids 1-3 cannot match and is
// not read; the other gets a deletion vector.
func ExampleTable_Delete() {
	ctx := context.Background()
	t := exampleTable(ctx)
	res, err := t.Delete(ctx, "id >= 4 AND qty = 20", table.DMLOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("version %d: %d rows deleted, %d of %d files read, %d deletion vector(s) written\n",
		res.Version, res.RowsDeleted, res.FilesRead, res.FilesConsidered, res.DeletionVectorsAdded)
	exampleRows(ctx, t)
	// Output:
	// version 3: 1 rows deleted, 1 of 2 files read, 1 deletion vector(s) written
	// [1:10 2:20 3:30 4:10 6:30]
}

// ExampleTable_Update sets columns of matching rows; the updated rows go to a new file.
func ExampleTable_Update() {
	ctx := context.Background()
	t := exampleTable(ctx)
	res, err := t.Update(ctx, "id IN (2, 5)", table.UpdateOptions{Set: "qty = qty + id"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("version %d: %d rows updated, %d file(s) added\n", res.Version, res.RowsUpdated, res.FilesAdded)
	h, _ := t.History(ctx, 1)
	fmt.Println(h[0].Operation, h[0].OperationParameters["predicate"], "numUpdatedRows="+h[0].OperationMetrics["numUpdatedRows"])
	// Output:
	// version 3: 2 rows updated, 1 file(s) added
	// UPDATE ["id IN (2, 5)"] numUpdatedRows=2
}

// ExampleTable_Merge upserts by key: matched rows are replaced, new keys inserted.
// Only the file that can hold key 6 is read.
func ExampleTable_Merge() {
	ctx := context.Background()
	t := exampleTable(ctx)
	src := exampleOrders([]int64{6, 7}, []int64{66, 77})
	defer src.Release()
	rdr, _ := array.NewRecordReader(exampleSchema, []arrow.RecordBatch{src})
	defer rdr.Release()
	res, err := t.Merge(ctx, rdr, table.Upsert("id"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("version %d: %d updated, %d inserted, %d of %d files read\n",
		res.Version, res.RowsUpdated, res.RowsInserted, res.FilesRead, res.FilesConsidered)
	// Output:
	// version 3: 1 updated, 1 inserted, 1 of 2 files read
}

// ExampleTable_Restore undoes a DELETE by restoring the version before it.
func ExampleTable_Restore() {
	ctx := context.Background()
	t := exampleTable(ctx)
	if _, err := t.Delete(ctx, "TRUE", table.DMLOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := t.Restore(ctx, table.AtVersion(2), table.RestoreOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	n, _, _ := t.Count(ctx)
	fmt.Printf("restored version %d as version %d: %d files re-added, %d rows\n", res.RestoredVersion, res.Version, res.FilesRestored, n)
	// Output:
	// restored version 2 as version 4: 2 files re-added, 6 rows
}
