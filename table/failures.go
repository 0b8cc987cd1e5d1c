package table

import (
	"github.com/skiplake/skiplake/internal/datafile"
)

// Failures of reading a data file, from the package that reads them (internal, so
// named here). A program tests the other failures that may not recur through the
// packages that report them: storage.ErrTransient, log.ErrTooManyRetries,
// log.ErrCommitUnknown and *log.ConflictError (the CLI's exit status 75).
var (
	// ErrReadFailed reports a data file whose bytes could not be read from storage;
	// it is never corrupt data (datafile.ErrReadFailed).
	ErrReadFailed = datafile.ErrReadFailed
)
