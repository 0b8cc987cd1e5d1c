package table

import (
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Failures that may not recur, re-exported from the packages that report them so that
// callers of the facade (the CLI's exit status 75) test them with errors.Is/As through
// package table alone.
var (
	// ErrTransient reports a storage or network failure that may not recur: a 5xx or
	// throttling answer, a refused, reset or timed-out connection, a response cut
	// short, after the store's own retries (storage.ErrTransient).
	ErrTransient = storage.ErrTransient
	// ErrTooManyRetries reports a commit that lost the race for a version more often
	// than the transaction retries (log.ErrTooManyRetries).
	ErrTooManyRetries = log.ErrTooManyRetries
	// ErrCommitUnknown reports a commit whose outcome could not be learned: it may
	// have landed (log.ErrCommitUnknown). A retry is safe only when it is idempotent
	// (WriteOptions' transaction identifier).
	ErrCommitUnknown = log.ErrCommitUnknown
	// ErrReadFailed reports a data file whose bytes could not be read from storage;
	// it is never corrupt data (datafile.ErrReadFailed).
	ErrReadFailed = datafile.ErrReadFailed
)

// ConflictError is a commit that lost to a concurrent commit it conflicts with
// (log.ConflictError): its Kind says what changed, Version which commit won.
type ConflictError = log.ConflictError
