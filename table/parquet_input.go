package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/input"
)

// OpenParquetFile reads a local Parquet file that is not part of a table — an input
// to Write, WriteBatches or Merge — as a record reader over all its columns and row
// groups in file order, with the file's own Arrow schema. It reads with the same
// defences as a scan of a table's data files: a damaged file (footer, ARROW:schema
// entry, page headers or pages) is an error matching ErrCorruptData that names the
// file and, where known, the row group and row, never a panic; and column chunks are
// streamed, so memory does not grow with the file's row-group size. batchRows is the
// rows per batch (0: 65,536). mem may be nil. Release the
// reader to close the file.
func OpenParquetFile(ctx context.Context, path string, batchRows int64, mem memory.Allocator) (array.RecordReader, error) {
	r, err := input.OpenParquet(ctx, path, input.Options{Allocator: mem, ParquetBatchRows: batchRows})
	if errors.Is(err, input.ErrNotAFile) {
		return nil, fmt.Errorf("%w: %s is a directory, not a Parquet file", ErrInvalidArgument, path)
	}
	return r, err
}
