package datafile

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped with %w; test with errors.Is.
var (
	// ErrSchemaMismatch reports a file column whose type cannot be converted to the
	// requested type (see invariant D2).
	ErrSchemaMismatch = errors.New("datafile: file column does not match the requested type")
	// ErrInvalidArgument reports bad input: an unknown row group, a nil schema, a value of the
	// wrong kind for a column type, an invalid option.
	ErrInvalidArgument = errors.New("datafile: invalid argument")
	// ErrClosed reports use of a writer after Close.
	ErrClosed = errors.New("datafile: writer is closed")
	// ErrCorrupt reports a Parquet file that cannot be decoded.
	ErrCorrupt = errors.New("datafile: corrupt or unreadable parquet file")
)

// ColumnError names the column (dotted logical path) a conversion failed on.
type ColumnError struct {
	// Column is the dotted logical path of the requested column.
	Column string
	// Err is the underlying error (wrapping one of the sentinels).
	Err error
}

// Error implements error.
func (e *ColumnError) Error() string { return fmt.Sprintf("datafile: column %q: %v", e.Column, e.Err) }

// Unwrap returns the underlying error.
func (e *ColumnError) Unwrap() error { return e.Err }
