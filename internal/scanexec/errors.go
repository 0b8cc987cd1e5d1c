package scanexec

import "errors"

// Errors that users meet only through package table carry that package's prefix,
// "table: ", and table re-exports them.
var (
	// ErrMissingDataFile reports that a file the log references is not in storage.
	ErrMissingDataFile = errors.New("table: data file missing")
	// ErrUnknownColumn reports a column name the schema does not have.
	ErrUnknownColumn = errors.New("table: unknown column")
)
