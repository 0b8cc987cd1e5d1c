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

// SafetyFloor is the shortest retention Run accepts without Options.Force, whatever
// the table's delta.deletedFileRetentionDuration says: 7 days, Delta Spark's default
// retention and the threshold of its spark.databricks.delta.retentionDurationCheck
// (Spark checks a VACUUM's RETAIN against the table's retention, which defaults to
// 7 days; skiplake also refuses a table retention below 7 days, since setting the
// property is how a scheduled `maintain` would otherwise end up vacuuming with it).
// Readers of versions older than the retention, and writes that take longer to
// commit, may lose files below it.
const SafetyFloor = 7 * 24 * time.Hour

// MinUnreferencedAge is the youngest an unreferenced file, an abandoned temporary or
// an unfinished multipart upload can be for Run to delete it, whatever the retention
// and even with Options.Force (V4). It is the longest skiplake assumes a commit can
// take: from the moment a writer's first data file lands in storage to the moment its
// commit file does. skiplake's writers (an append, a DML command, an OPTIMIZE batch)
// write their files and commit in one go, well within it; a write that takes longer
// (say, a single append of hundreds of gigabytes over a slow link) must not run beside
// a VACUUM forced to a retention below it.
const MinUnreferencedAge = time.Hour

// Sentinel errors. Errors returned by this package wrap one of these (or an error of
// package log or storage) with %w; test with errors.Is.
var (
	// ErrInvalidOptions reports an Options value (or a table retention property)
	// that cannot be used.
	ErrInvalidOptions = errors.New("vacuum: invalid options")
	// ErrRetentionTooShort reports a retention shorter than the table's
	// delta.deletedFileRetentionDuration, or than SafetyFloor, without Options.Force.
	ErrRetentionTooShort = errors.New("vacuum: retention shorter than the table's retention period")
)

// RetentionTooShortError is the refusal, without Force, of a retention shorter than
// the table's retention period (delta.deletedFileRetentionDuration) or than
// SafetyFloor: files an older version still references, or a writer still committing,
// could be deleted. It wraps ErrRetentionTooShort.
type RetentionTooShortError struct {
	// Retention is the retention asked for (or the table's, when none was);
	// TableRetention the table's.
	Retention, TableRetention time.Duration
	// BelowFloor is true when Retention is at least the table's retention but below
	// SafetyFloor (the table's retention itself is below the floor).
	BelowFloor bool
	// Override names what the caller sets to vacuum anyway, in the caller's terms
	// ("vacuum.Options.Force" from Run; package table names its own option, the CLI
	// its flag); empty means "vacuum.Options.Force".
	Override string
}

func (e *RetentionTooShortError) Error() string {
	override := e.Override
	if override == "" {
		override = "vacuum.Options.Force"
	}
	if e.BelowFloor {
		return fmt.Sprintf("vacuum: retention %s (the table's %s) is below the safety floor of %s; set %s to vacuum anyway",
			e.Retention, log.PropDeletedFileRetentionDuration, SafetyFloor, override)
	}
	return fmt.Sprintf("vacuum: retention %s is shorter than the table's retention period %s (%s); set %s to vacuum anyway",
		e.Retention, e.TableRetention, log.PropDeletedFileRetentionDuration, override)
}

// Naming returns the error with Override set to the caller's name for the option
// that forces the vacuum; any other error is returned as it is.
func Naming(err error, override string) error {
	var short *RetentionTooShortError
	if !errors.As(err, &short) {
		return err
	}
	named := *short
	named.Override = override
	return &named
}

// Unwrap returns ErrRetentionTooShort.
func (e *RetentionTooShortError) Unwrap() error { return ErrRetentionTooShort }
