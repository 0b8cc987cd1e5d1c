package datafile

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/pqguard"
)

// Damaged files (invariant D10). The defences are package pqguard's, in its order:
// the footer is validated (validateFooter, checkArrowSchema) before anything is
// decoded, and what validation cannot see is contained at the call into the decoder:
// each function below does nothing but call one arrow-go decoder entry point and
// defers guard.Contain, which turns a panic raised inside it into a CorruptError.
// Nothing of skiplake's own code runs under these recovers (emit callbacks and
// conversions run outside them), so a bug of ours still crashes loudly. A decoder
// that panicked is not used again: the read fails.

// guard contains decoder panics into a CorruptError (without a file name; Reader's
// exported methods add it).
var guard = pqguard.Guard{Wrap: func(err error) error { return &CorruptError{Err: err} }}

// checkArrowSchema refuses a damaged ARROW:schema footer entry (pqguard.CheckArrowSchema).
func checkArrowSchema(kv metadata.KeyValueMetadata) error {
	if err := pqguard.CheckArrowSchema(kv); err != nil {
		return &CorruptError{Err: err}
	}
	return nil
}

// openParquet parses the footer (or reuses md) and the Arrow schema.
func openParquet(src parquet.ReaderAtSeeker, props *parquet.ReaderProperties, md *metadata.FileMetaData, arrowProps pqarrow.ArrowReadProperties, mem memory.Allocator) (pr *file.Reader, fr *pqarrow.FileReader, sc *arrow.Schema, err error) {
	defer guard.Contain(&err, "footer")
	opts := []file.ReadOption{file.WithReadProps(props)}
	if md != nil {
		opts = append(opts, file.WithMetadata(md))
	}
	pr, err = file.NewParquetReader(src, opts...)
	if err != nil {
		return nil, nil, nil, corruptf("footer: %w", err)
	}
	if md == nil {
		if err := checkArrowSchema(pr.MetaData().KeyValueMetadata()); err != nil {
			_ = pr.Close()
			return nil, nil, nil, err
		}
	}
	fr, err = pqarrow.NewFileReader(pr, arrowProps, mem)
	if err == nil && md == nil {
		sc, err = fr.Schema()
	}
	if err != nil {
		_ = pr.Close()
		return nil, nil, nil, corruptf("arrow schema: %w", err)
	}
	return pr, fr, sc, nil
}

// recordReader starts pqarrow's record reader over leaves of row group rg.
func recordReader(ctx context.Context, fr *pqarrow.FileReader, leaves []int, rg int) (rr pqarrow.RecordReader, err error) {
	defer guard.Contain(&err, fmt.Sprintf("row group %d", rg))
	rr, err = fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		return nil, corruptf("row group %d: %w", rg, err)
	}
	return rr, nil
}

// nextRecord advances rr; ok false with a nil error is the end of the row group.
func nextRecord(rr pqarrow.RecordReader, rg int, pos int64) (ok bool, err error) {
	defer guard.Contain(&err, fmt.Sprintf("row group %d at row %d", rg, pos))
	if rr.Next() {
		return true, nil
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return false, corruptf("row group %d at row %d: %w", rg, pos, err)
	}
	return false, nil
}

// releaseRecords releases a record reader, which may panic once its decoder did.
func releaseRecords(rr pqarrow.RecordReader) {
	defer func() { _ = recover() }()
	rr.Release()
}

// fieldReaders starts pqarrow's column readers over leaves of row group rg.
func fieldReaders(ctx context.Context, fr *pqarrow.FileReader, leaves []int, rg int) (readers []*pqarrow.ColumnReader, err error) {
	defer guard.Contain(&err, fmt.Sprintf("row group %d", rg))
	readers, _, err = fr.GetFieldReaders(ctx, leaves, []int{rg})
	if err != nil {
		return nil, corruptf("row group %d: %w", rg, err)
	}
	return readers, nil
}

// releaseColumn releases a column reader, which may panic once its decoder did.
func releaseColumn(cr *pqarrow.ColumnReader) {
	defer func() { _ = recover() }()
	cr.Release()
}

// seekColumn seeks a column reader to row (relative to its row group).
func seekColumn(cr *pqarrow.ColumnReader, row int64, what string) (err error) {
	defer guard.Contain(&err, what)
	if err := cr.SeekToRow(row); err != nil {
		return corruptf("%s: seek to row %d: %w", what, row, err)
	}
	return nil
}

// nextColumnBatch reads the next n rows of a column reader.
func nextColumnBatch(cr *pqarrow.ColumnReader, n int64, what string) (ch *arrow.Chunked, err error) {
	defer guard.Contain(&err, what)
	ch, err = cr.NextBatch(n)
	if err != nil {
		return nil, corruptf("%s: %w", what, err)
	}
	return ch, nil
}

// columnChunk opens the low-level reader of one column chunk.
func columnChunk(pr *file.Reader, rg, leaf int) (cc file.ColumnChunkReader, err error) {
	defer guard.Contain(&err, fmt.Sprintf("row group %d column %d", rg, leaf))
	cc, err = pr.RowGroup(rg).Column(leaf)
	if err != nil {
		return nil, corruptf("row group %d column %d: %w", rg, leaf, err)
	}
	return cc, nil
}

// readInt96 reads up to n levels of an INT96 column chunk.
func readInt96(cr *file.Int96ColumnChunkReader, n int64, vals []parquet.Int96, defs []int16) (levels int64, nvals int, err error) {
	defer guard.Contain(&err, "INT96 column")
	return cr.ReadBatch(n, vals, defs, nil)
}

// validateFooter checks the footer against the file of size bytes before any page
// is decoded (pqguard.ValidateFooter) and returns the largest column chunk, which
// bounds every page in the file.
func validateFooter(md *metadata.FileMetaData, size int64) (maxCompressed, maxUncompressed int64, err error) {
	maxCompressed, maxUncompressed, err = pqguard.ValidateFooter(md, size)
	if err != nil {
		return 0, 0, &CorruptError{Err: err}
	}
	return maxCompressed, maxUncompressed, nil
}
