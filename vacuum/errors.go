package vacuum

import (
	"errors"
	"fmt"
	"time"

	"github.com/skiplake/skiplake/log"
)

// DefaultRetention is the retention when the table has no
// delta.deletedFileRetentionDuration: 7 days.
const DefaultRetention = log.DefaultDeletedFileRetention

// Sentinel errors. Errors returned by this package wrap one of these (or an error of
// package log or storage) with %w; test with errors.Is.
var (
	// ErrInvalidOptions reports an Options value (or a table retention property)
	// that cannot be used.
	ErrInvalidOptions = errors.New("vacuum: invalid options")
	// ErrRetentionTooShort reports a retention shorter than the table's
	// delta.deletedFileRetentionDuration without Options.Force.
	ErrRetentionTooShort = errors.New("vacuum: retention shorter than the table's retention period")
)

// RetentionTooShortError is the refusal of a retention shorter than the table's
// retention period (delta.deletedFileRetentionDuration) without Force: files an
// older version still references, or a writer still committing, could be deleted.
// It wraps ErrRetentionTooShort.
type RetentionTooShortError struct {
	// Retention is the retention asked for; TableRetention the table's.
	Retention, TableRetention time.Duration
}

func (e *RetentionTooShortError) Error() string {
	return fmt.Sprintf("vacuum: retention %s is shorter than the table's retention period %s (%s); set Options.Force to vacuum anyway",
		e.Retention, e.TableRetention, log.PropDeletedFileRetentionDuration)
}

// Unwrap returns ErrRetentionTooShort.
func (e *RetentionTooShortError) Unwrap() error { return ErrRetentionTooShort }
