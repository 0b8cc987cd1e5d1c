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
//     position of its first row within the file, counted across all row groups, so a
//     deletion vector can be applied to the batch ([ApplyDeletionVector]).
//   - D4 (ownership) Batches passed to an emit callback are released when the callback
//     returns; a callback that keeps one calls Retain. The writer never closes the
//     io.Writer it was given.
//
// Reading is row-group granular: callers choose row groups (after skipping with footer
// statistics, page indexes or Bloom filters via [Reader.ParquetReader]); reading page
// ranges inside a row group is not offered yet. INT96 timestamps are decoded exactly
// (0001-01-01 to 9999-12-31) for top-level columns; an INT96 nested inside a struct, list
// or map goes through arrow-go, which fails outside the nanosecond range (1677-2262).
//
// What it deliberately does not do: it knows nothing of the Delta log (partition columns are
// added by the caller with [ConstantColumn]); it computes no Delta statistics (package
// stats does); it does not evaluate predicates or page indexes (package skipping decides which
// row groups to pass to [Reader.Read]).
package datafile
