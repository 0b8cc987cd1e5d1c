package table_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// Alter sets properties (upgrading the protocol when one needs a table feature) or
// adds columns, one commit each.
func ExampleTable_Alter() {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	t, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := t.Alter(ctx, table.AlterOptions{SetProperties: map[string]string{"delta.enableDeletionVectors": "true"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Version, res.Operation, res.MinReaderVersion, res.MinWriterVersion, res.WriterFeatures)
	col, err := table.ParseColumn("amount decimal(10,2)")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err = t.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{col}})
	if err != nil {
		fmt.Println(err)
		return
	}
	snap, _ := t.Snapshot(ctx, table.Latest())
	fmt.Println(res.Version, res.Operation, snap.Schema().Field(1))
	// Output:
	// 1 SET TBLPROPERTIES 3 7 [appendOnly invariants deletionVectors]
	// 2 ADD COLUMNS amount: type=decimal(10, 2), nullable
}
