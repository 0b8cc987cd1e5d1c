package stats

import (
	"strings"

	"github.com/skiplake/skiplake/value"
)

// File is the statistics of one data file, typed and normalised so that consumers
// (package skipping) can trust them as bounds:
//
//   - Min is a lower bound and Max an upper bound of the column's non-null values
//     (both NULL when unknown). Readers normalise every writer's dialect into this:
//     timestamp maxima truncated to milliseconds are widened by 1 ms, string maxima
//     that may be a truncated prefix are extended so they stay an upper bound.
//   - A float Min or Max that is NaN means the column may hold NaN (NaN sorts above
//     every number, as in Spark).
//   - NullCount is meaningful only when HasNullCount is true. When TightBounds is
//     false (deletion vectors present), NullCount is meaningful only when it is 0 or
//     equals NumRecords, and Min/Max are bounds, not attained values.
//
// A File is immutable once built and safe for concurrent reads.
type File struct {
	// NumRecords is the physical row count; -1 when unknown.
	NumRecords int64
	// TightBounds is false when the writer said "tightBounds": false.
	TightBounds bool
	// Columns holds per-leaf-column statistics keyed by Key(path...), where path is the
	// column's physical path from the top-level field down to the leaf.
	Columns map[string]*Column
}

// Column is the statistics of one leaf column of one file.
type Column struct {
	// Min is a lower bound of the non-null values, or NULL if unknown.
	Min value.Value
	// Max is an upper bound of the non-null values, or NULL if unknown.
	Max value.Value
	// NullCount is the number of nulls; valid only when HasNullCount.
	NullCount int64
	// HasNullCount reports whether NullCount was given.
	HasNullCount bool
}

// Key builds the map key of a column path (physical names, top level first).
// The separator is a NUL byte, which cannot occur in Delta column names.
func Key(path ...string) string { return strings.Join(path, "\x00") }

// Column returns the statistics of the column at path, or nil if there are none.
func (f *File) Column(path ...string) *Column {
	if f == nil || f.Columns == nil {
		return nil
	}
	return f.Columns[Key(path...)]
}
