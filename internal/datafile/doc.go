// Package datafile writes and reads the Parquet data files of a Delta table.
//
// The writer ([NewWriter]) turns Arrow record batches into one Parquet file laid out for
// skipping: zstd compression, row groups cut by size so that a file has several of them,
// small data pages, a page index and optional split-block Bloom filters. The reader
// ([Open], [Reader.Read]) returns record batches that conform exactly to the Arrow schema
// the caller asks for, whatever writer produced the file.
//
// Invariants:
//
//   - D1 (conformance) Every batch [Reader.Read] emits has exactly the requested schema:
//     the same fields, in the same order, with the same names, types, nullability and
//     metadata, at every nesting level. Columns are matched by Parquet field id, then by
//     physical name (field metadata delta.columnMapping.physicalName), then by name
//     (exact, then case-insensitive); a column the file lacks reads as all nulls.
//   - D2 (widening only) A file value is converted only along a lossless widening path
//     (integers to wider integers, decimals or doubles; float to double; date to
//     timestamp_ntz; decimal to larger precision/scale; any timestamp unit to micros;
//     INT96 to micros). Anything else is an error naming the column, never a silent cast.
//   - D3 (row positions) The firstRow passed with each emitted batch is the 0-based
//     position within the file (counted across all row groups) of the first row read
//     for it, so a deletion vector can be applied to the batch ([ApplyDeletionVector]).
//     With [ReadOptions.Deleted] the deleted rows are already gone (D6) and firstRow
//     still names the first row read, deleted or not.
//   - D4 (ownership) Batches passed to an emit callback are released when the callback
//     returns; a callback that keeps one calls Retain. The writer never closes the
//     io.Writer it was given.
//   - D5 (row ranges) [Reader.ReadRanges] emits exactly the rows of the given ranges of
//     one row group, identical to the same rows of [Reader.Read] (D1-D4 hold). When no
//     requested column is repeated (list or map), it seeks each column to each range with
//     the offset index and streams the column chunk, so pages outside the ranges are
//     neither fetched nor decoded; with a list or map column it decodes the whole row group
//     and slices (correct, no I/O saved).
//   - D6 (deletion vectors) With [ReadOptions.Deleted] (loaded by [LoadDeletionVector],
//     the one place a log deletion-vector descriptor becomes a bitmap), Read and
//     ReadRanges emit exactly the rows whose file position the vector does not hold,
//     and never an empty batch.
//   - D7 (streaming, concurrency) Read and ReadRanges stream column chunks through a
//     bounded buffer (ReadOptions.StreamBufferBytes; 64 KiB when seeking), so their
//     memory does not grow with row group size, and may run concurrently on one Reader
//     (each call has its own decoders over the shared footer).
//
// Callers choose row groups (after skipping with footer statistics or Bloom filters via
// [Reader.ParquetReader]) and, inside a row group, row ranges (from the page index). INT96
// timestamps are decoded exactly (0001-01-01 to 9999-12-31) for top-level columns; an INT96
// nested inside a struct, list or map goes through arrow-go, which fails outside the nanosecond range (1677-2262).
//
// What it deliberately does not do: it knows nothing of the Delta log (partition columns are
// added by the caller with [ConstantColumn]); it computes no Delta statistics (package
// stats does); it does not evaluate predicates or page indexes (package skipping decides which
// row groups and row ranges to read).
package datafile
