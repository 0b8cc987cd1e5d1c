package input_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/input"
)

// TestParquetInputRecycledBuffers: without an allocator of the caller's, a Parquet
// input recycles the buffers of the batches the consumer released, which are not
// zeroed. Every batch (integers, strings, lists and structs, with nulls, dictionary
// and plain pages, over several row groups) equals the batch read with a Go allocator
// of the caller's, while earlier batches, released, have handed their buffers on.
func TestParquetInputRecycledBuffers(t *testing.T) {
	const rows = 300_000
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.BinaryTypes.String},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for r := range rows {
		if r%7 == 3 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(r) * 2654435761 % 1000003)
		}
		if r%5 == 1 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%x", r*r%99991))
		}
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("c%d", r%13))
		lb := b.Field(3).(*array.ListBuilder)
		if r%11 == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := range r % 4 {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(r + k))
			}
		}
		sb := b.Field(4).(*array.StructBuilder)
		if r%9 == 2 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if r%3 == 0 {
				sb.FieldBuilder(0).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.Float64Builder).Append(float64(r) / 3)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "in.parquet")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(110_000),
		parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryFor("s", false)), pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())

	// Both read in lockstep: each batch of the pooled reader is compared, then
	// released by Next, so later batches are decoded into recycled buffers.
	want, err := input.OpenParquet(context.Background(), path, input.Options{Allocator: memory.NewGoAllocator()})
	require.NoError(t, err)
	defer want.Release()
	got, err := input.OpenParquet(context.Background(), path, input.Options{})
	require.NoError(t, err)
	defer got.Release()
	var n, batches int64
	for want.Next() {
		require.True(t, got.Next(), "pooled reader ended early")
		for c := 0; c < int(want.RecordBatch().NumCols()); c++ {
			assert.True(t, array.Equal(want.RecordBatch().Column(c), got.RecordBatch().Column(c)), "batch %d column %q differs", batches, sc.Field(c).Name)
		}
		n += got.RecordBatch().NumRows()
		batches++
	}
	require.False(t, got.Next())
	require.NoError(t, want.Err())
	require.NoError(t, got.Err())
	require.Equal(t, int64(rows), n)
	require.Greater(t, batches, int64(4))
}
