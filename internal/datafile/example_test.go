package datafile_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/value"
)

// Write a file, then read it back under a wider schema with a partition column appended
// and a deleted row removed.
func Example() {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{10, 20, 30}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()

	var buf bytes.Buffer
	w, err := datafile.NewWriter(&buf, sc, datafile.WriterOptions{})
	if err != nil {
		panic(err)
	}
	if err := w.Write(rec); err != nil {
		panic(err)
	}
	res, err := w.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println("rows:", res.NumRows, "row groups:", res.RowGroups)

	r, err := datafile.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), datafile.ReadOptions{})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	// The table says id is now a long (type widening).
	want := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	err = r.Read(context.Background(), want, nil, func(b arrow.RecordBatch, firstRow int64) error {
		live, err := datafile.ApplyDeletionVector(b, firstRow, func(row uint64) bool { return row == 1 }, nil)
		if err != nil {
			return err
		}
		defer live.Release()
		part, err := datafile.ConstantColumn(value.String("2024-01-01"), arrow.BinaryTypes.String, int(live.NumRows()), nil)
		if err != nil {
			return err
		}
		defer part.Release()
		fmt.Println(live.Column(0), part)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// rows: 3 row groups: 1
	// [10 30] ["2024-01-01" "2024-01-01"]
}
