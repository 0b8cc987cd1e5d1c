package log

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by this package wrap them with %w, so
// callers test with errors.Is.
var (
	// ErrTableNotFound reports that there is no _delta_log commit or checkpoint.
	ErrTableNotFound = errors.New("log: table not found (no _delta_log entries)")
	// ErrVersionNotFound reports a requested version newer than the latest or
	// older than the oldest reconstructable one.
	ErrVersionNotFound = errors.New("log: version not found")
	// ErrMissingVersion reports a gap in the commit sequence (L1).
	ErrMissingVersion = errors.New("log: missing log version")
	// ErrCorruptLog reports an unparseable commit, checkpoint or action.
	ErrCorruptLog = errors.New("log: corrupt log entry")
	// ErrInvalidSchema reports an unparseable or invalid schemaString.
	ErrInvalidSchema = errors.New("log: invalid schema")
	// ErrUnsupportedType reports a data type without a Delta or Arrow counterpart.
	ErrUnsupportedType = errors.New("log: unsupported data type")
	// ErrUnsupportedPath reports a file path this package cannot handle
	// (absolute URIs such as s3://... or file:/...).
	ErrUnsupportedPath = errors.New("log: unsupported file path")
	// ErrUnsupportedFeature reports a protocol version or table feature this
	// package does not implement (see UnsupportedFeatureError).
	ErrUnsupportedFeature = errors.New("log: unsupported table feature")
	// ErrTimestampOutOfRange reports a time-travel timestamp before the first commit.
	ErrTimestampOutOfRange = errors.New("log: timestamp before the first commit")
	// ErrInvalidTransaction reports a transaction whose actions are invalid
	// (missing metadata on create, append-only violation, reuse, ...).
	ErrInvalidTransaction = errors.New("log: invalid transaction")
	// ErrTooManyRetries reports that a commit lost the race MaxRetries+1 times.
	ErrTooManyRetries = errors.New("log: too many commit retries")
	// ErrCommitUnknown reports a commit whose outcome could not be learned: writing
	// the commit file failed in a way that may have left it in place, and reading
	// the version back failed too. The commit may be visible; a caller must not
	// delete the files it references (they are orphans for VACUUM if it did not land).
	ErrCommitUnknown = errors.New("log: commit outcome unknown")

	// ErrMetadataChanged reports a concurrent commit that changed metaData.
	ErrMetadataChanged = errors.New("log: concurrent metadata change")
	// ErrProtocolChanged reports a concurrent commit that changed the protocol.
	ErrProtocolChanged = errors.New("log: concurrent protocol change")
	// ErrConcurrentAppend reports files added concurrently that this
	// transaction should have read.
	ErrConcurrentAppend = errors.New("log: concurrent append")
	// ErrConcurrentDeleteRead reports a concurrent removal of a file this transaction read.
	ErrConcurrentDeleteRead = errors.New("log: concurrent delete of a file read")
	// ErrConcurrentDeleteDelete reports a concurrent removal of a file this transaction removes.
	ErrConcurrentDeleteDelete = errors.New("log: concurrent delete of a file deleted")
	// ErrConcurrentTransaction reports a concurrent commit with the same txn
	// appId or the same domainMetadata domain.
	ErrConcurrentTransaction = errors.New("log: concurrent transaction")

	// ErrConstraintExists reports adding a CHECK constraint under a name the table
	// already uses.
	ErrConstraintExists = errors.New("log: constraint already exists")
	// ErrConstraintNotFound reports dropping a CHECK constraint the table does not have.
	ErrConstraintNotFound = errors.New("log: no such constraint")
)

// UnsupportedFeatureError names the protocol versions or table features that
// make a table unreadable (Reader true) or unwritable (Reader false) by this
// package. It matches ErrUnsupportedFeature with errors.Is.
type UnsupportedFeatureError struct {
	// Features lists the unsupported features; protocol versions appear as
	// "minReaderVersion=N" / "minWriterVersion=N".
	Features []string
	// Reader is true for a read check, false for a write check.
	Reader bool
}

// Error lists the unsupported features.
func (e *UnsupportedFeatureError) Error() string {
	kind := "writer"
	if e.Reader {
		kind = "reader"
	}
	return fmt.Sprintf("log: unsupported %s features: %s", kind, strings.Join(e.Features, ", "))
}

// Unwrap returns ErrUnsupportedFeature.
func (e *UnsupportedFeatureError) Unwrap() error { return ErrUnsupportedFeature }

// ConflictError describes a commit that lost to a concurrent winner. Kind is
// one of the ErrConcurrent*/ErrMetadataChanged/ErrProtocolChanged sentinels,
// and errors.Is(err, Kind) holds.
type ConflictError struct {
	// Kind is the conflict sentinel.
	Kind error
	// Version is the winning commit's version.
	Version int64
	// Files names the conflicting files (or app ids / domains), if any.
	Files []string
	// Rearrangement is true when the winning commit only rearranged data: it
	// changed neither metadata nor protocol and every add and remove it holds has
	// dataChange=false (OPTIMIZE, REORG). Redoing the losing transaction's reads on
	// the new snapshot then sees the same rows, so a DML command may re-plan and
	// retry instead of failing (Spark fails with ConcurrentDeleteReadException).
	Rearrangement bool
}

// Error names the conflict kind, the winning version and up to five files.
func (e *ConflictError) Error() string {
	msg := fmt.Sprintf("%v: conflicts with commit %d", e.Kind, e.Version)
	if len(e.Files) > 0 {
		shown := e.Files
		if len(shown) > 5 {
			shown = shown[:5]
		}
		msg += " (" + strings.Join(shown, ", ")
		if len(e.Files) > len(shown) {
			msg += fmt.Sprintf(", and %d more", len(e.Files)-len(shown))
		}
		msg += ")"
	}
	return msg
}

// Unwrap returns Kind.
func (e *ConflictError) Unwrap() error { return e.Kind }
