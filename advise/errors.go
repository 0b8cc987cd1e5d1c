package advise

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them (or an error
// of the table, workload or qdtree packages) and start with "advise: ".
var (
	// ErrInvalidOptions reports Options or inputs the advisor cannot use.
	ErrInvalidOptions = errors.New("advise: invalid options")
	// ErrNoColumns reports a workload that filters on no column a layout can
	// cluster on.
	ErrNoColumns = errors.New("advise: no columns to cluster on")
	// ErrUnsupportedTable reports a table the advisor cannot sample (no rows, or
	// files without row counts).
	ErrUnsupportedTable = errors.New("advise: unsupported table")
)
