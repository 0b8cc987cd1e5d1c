package datafile

import (
	"errors"
	"fmt"
	"io"
	"sync"
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
	// ErrReadFailed reports a data file whose bytes could not be read from storage (a
	// failed request, a response cut short): nothing is known to be wrong with the file,
	// and reading it again may succeed (invariant D10). The error returned is a
	// *ReadError naming the file and wrapping the storage error (errors.Is
	// storage.ErrTransient when the store said so); it never matches ErrCorruptData.
	ErrReadFailed = errors.New("datafile: data file could not be read from storage")
)

// ReadError reports a data file that a storage read failed on, while the decoder
// was reading it (so the decoder's own complaint is a consequence, not damage).
type ReadError struct {
	// File names the file, as the caller gave it in ReadOptions.Name ("" if none).
	File string
	// Err is the storage error.
	Err error
}

// Error implements error: "datafile: FILE: reading from storage: WHY".
func (e *ReadError) Error() string {
	f := e.File
	if f == "" {
		f = "data file"
	}
	return "datafile: " + f + ": reading from storage: " + e.Err.Error()
}

// Is reports ErrReadFailed.
func (e *ReadError) Is(target error) bool { return target == ErrReadFailed }

// Unwrap returns the storage error.
func (e *ReadError) Unwrap() error { return e.Err }

// readFailure marks an error a storage read under a data file returned (see
// watchedReaderAt), so that code turning decoder failures into CorruptErrors can tell
// a failed read from damage.
type readFailure struct{ err error }

func (e *readFailure) Error() string { return e.err.Error() }
func (e *readFailure) Unwrap() error { return e.err }

// watchedReaderAt is the io.ReaderAt every Reader and stitch source reads through: it
// marks the errors of the storage (readFailure) and remembers the first one, because
// arrow-go's decoder does not always wrap the error of the ReadAt it called (it may
// report "unexpected EOF" or a bad page header instead). io.EOF passes unchanged
// (io.ReaderAt's contract).
type watchedReaderAt struct {
	ra    io.ReaderAt
	mu    sync.Mutex
	first error
}

func watch(ra io.ReaderAt) *watchedReaderAt {
	if w, ok := ra.(*watchedReaderAt); ok {
		return w
	}
	return &watchedReaderAt{ra: ra}
}

// ReadAt implements io.ReaderAt.
func (w *watchedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := w.ra.ReadAt(p, off)
	if err != nil && err != io.EOF {
		w.mu.Lock()
		if w.first == nil {
			w.first = err
		}
		w.mu.Unlock()
		err = &readFailure{err: err}
	}
	return n, err
}

// failure returns the first storage error seen, or nil.
func (w *watchedReaderAt) failure() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

// named is the package-level named for errors of reads through w: a CorruptError
// raised while a storage read had failed becomes a ReadError (D10).
func (w *watchedReaderAt) named(err error, name string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrCorruptData) {
		if f := w.failure(); f != nil {
			return &ReadError{File: name, Err: f}
		}
	}
	return named(err, name)
}

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

// named sets the file name of a CorruptError err carries (when it has none yet). A
// CorruptError whose cause is a failed storage read (readFailure) is a ReadError
// instead (D10).
func named(err error, name string) error {
	var ce *CorruptError
	if errors.As(err, &ce) {
		var rf *readFailure
		if errors.As(err, &rf) {
			return &ReadError{File: name, Err: rf.err}
		}
		if ce.File == "" {
			ce.File = name
		}
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
