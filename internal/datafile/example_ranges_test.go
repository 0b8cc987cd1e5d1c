package datafile_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/internal/datafile"
)

// Read two row ranges of a row group (as a page index would select them); firstRow is
// the file position of each batch's first row.
func ExampleReader_ReadRanges() {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range int64(1000) {
		b.Append(i * 10)
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 1000)
	col.Release()
	defer rec.Release()

	var buf bytes.Buffer
	w, err := datafile.NewWriter(&buf, sc, datafile.WriterOptions{DataPageBytes: 1 << 10})
	if err != nil {
		panic(err)
	}
	if err := w.Write(rec); err != nil {
		panic(err)
	}
	if _, err := w.Close(); err != nil {
		panic(err)
	}
	r, err := datafile.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), datafile.ReadOptions{})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	ranges := []datafile.RowRange{{Start: 3, End: 5}, {Start: 997, End: 1000}}
	err = r.ReadRanges(context.Background(), sc, 0, ranges, func(b arrow.RecordBatch, firstRow int64) error {
		fmt.Println(firstRow, b.Column(0))
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// 3 [30 40]
	// 997 [9970 9980 9990]
}
