package input

import "errors"

var (
	// ErrUnknownFormat: FormatOf found no format for a file's extension, or a Source
	// names a format this package does not read.
	ErrUnknownFormat = errors.New("input: unknown input format")
	// ErrReadOnce: InferSchema reached a source that can be read only once
	// (Source.Once, such as standard input); give the schema instead of inferring it.
	ErrReadOnce = errors.New("input: the source can be read only once, so a schema cannot be inferred from it")
	// ErrParquetNeedsFile: a Parquet source without a path (a Parquet file is read
	// from its end, so a stream cannot be one).
	ErrParquetNeedsFile = errors.New("input: a Parquet source needs a file")
	// ErrNotAFile: OpenParquet was given a directory.
	ErrNotAFile = errors.New("input: not a file")
)
