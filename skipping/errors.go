package skipping

import "errors"

// Sentinel errors; errors returned by this package wrap one of them.
var (
	// ErrRowGroupRange: a row-group ordinal outside the file.
	ErrRowGroupRange = errors.New("skipping: row group out of range")
	// ErrPageIndex: the page index of a column chunk could not be read or is
	// inconsistent (the caller may fall back to reading the whole row group).
	ErrPageIndex = errors.New("skipping: unreadable page index")
	// ErrInvalidArgument: a required argument (predicate, reader, mapping) is nil.
	ErrInvalidArgument = errors.New("skipping: invalid argument")
	// ErrOutputLength: the verdict slice given to an evaluator has the wrong length.
	ErrOutputLength = errors.New("skipping: output slice length mismatch")
)
