package scanexec

import (
	"context"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// Task is one planned file of a scan: the add action, where the file is, the
// constants its rows get and what the planner said of it.
type Task struct {
	// Idx is the file's index in the snapshot's files (and its Planner); -1 for a
	// file outside the snapshot (a change read's, a DML command's own).
	Idx int
	// Add is the file's add action (for a change read's remove, the add it removed).
	Add *log.Add
	// Path is the add's path, decoded (the storage path).
	Path string
	// PartVals holds the values of the file's constant columns by physical name: its
	// partition values, and a change read's change columns.
	PartVals map[string]value.Value
	// Verdict is what the planner decided of the file, at which level and why.
	Verdict skipping.FileVerdict
	// Recheck is true when the filter must be evaluated on the rows (the planner
	// could not prove that every row matches).
	Recheck bool
	// Change is set for the files of a change read: which of the file's rows it
	// returns, and the error of a file storage no longer has. Nil otherwise.
	Change Change
}

// Change is where the rows of a change read's task come from.
type Change interface {
	// Deleted returns the rows of task's file the read must not return.
	Deleted(ctx context.Context, store storage.Storage, task *Task) (*dv.Deleted, error)
	// Missing is the error for task's file (at path) not being in storage.
	Missing(path string) error
}

// Unit is one row group of a file to read: whole (Ranges nil) or only the row ranges
// the page index left, with or without the exact recheck.
type Unit struct {
	// RG is the row group's index in the file.
	RG int
	// Ranges are the row ranges to read within the row group (nil: all of it).
	Ranges []datafile.RowRange
	// Recheck is true when the filter must be evaluated on the unit's rows.
	Recheck bool
}

// Recorder receives what reading finds out, for the caller's report. Readers call it
// from several goroutines at once; an implementation synchronises itself.
type Recorder interface {
	// CountFooter counts one footer opened: read from storage (read) or taken from
	// the footer cache.
	CountFooter(read bool)
	// AddRowGroups adds one file's row-group verdicts (level "rowgroup").
	AddRowGroups(skipping.LevelStats)
	// AddPages adds one file's page-level row counts (level "page").
	AddPages(skipping.LevelStats)
	// Warn records a condition that made the read do more than necessary.
	Warn(msg string)
	// SetRows records the rows handed to the caller so far.
	SetRows(n int64)
}

// nopRecorder records nothing (a nil Recorder).
type nopRecorder struct{}

func (nopRecorder) CountFooter(bool)                 {}
func (nopRecorder) AddRowGroups(skipping.LevelStats) {}
func (nopRecorder) AddPages(skipping.LevelStats)     {}
func (nopRecorder) Warn(string)                      {}
func (nopRecorder) SetRows(int64)                    {}

func orNop(rec Recorder) Recorder {
	if rec == nil {
		return nopRecorder{}
	}
	return rec
}
