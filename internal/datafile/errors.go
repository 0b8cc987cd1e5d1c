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
	// ErrCorruptData reports a Parquet data file that cannot be decoded: a footer,
	// page or value that validation refused or that the Parquet decoder failed on
	// (invariant D10). The error returned is a *CorruptError naming the file.
	ErrCorruptData = errors.New("datafile: corrupt Parquet data file")
)

// CorruptError reports a damaged data file: which file (ReadOptions.Name), and what
// is wrong with it, where (row group, column, row). errors.Is(err, ErrCorruptData)
// holds for it.
type CorruptError struct {
	// File names the file, as the caller gave it in ReadOptions.Name ("" if none).
	File string
	// Err says what is wrong and where.
	Err error
}

// Error implements error: "datafile: FILE: corrupt Parquet: WHAT".
func (e *CorruptError) Error() string {
	f := e.File
	if f == "" {
		f = "data file"
	}
	return "datafile: " + f + ": corrupt Parquet: " + e.Err.Error()
}

// Is reports ErrCorruptData.
func (e *CorruptError) Is(target error) bool { return target == ErrCorruptData }

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }

// corruptf returns a CorruptError without a file name; Reader's exported methods add it
// (named).
func corruptf(format string, args ...any) error {
	return &CorruptError{Err: fmt.Errorf(format, args...)}
}

// named sets the file name of a CorruptError err carries (when it has none yet).
func named(err error, name string) error {
	var ce *CorruptError
	if errors.As(err, &ce) && ce.File == "" {
		ce.File = name
	}
	return err
}

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
