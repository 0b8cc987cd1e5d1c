// Package vacuum is the garbage collector of Delta tables: Run deletes the files under
// a table root that no version inside the retention window references (data files,
// deletion vector files, skiplake Bloom index files, the workload layout's tree
// files) and abandoned temporaries of interrupted writes. It reads the log and lists
// and deletes objects; it never writes data and never commits. OPTIMIZE (package
// optimize) is what leaves most of the garbage behind; package table wraps both for
// users (Table.Vacuum, Maintain).
//
// # Invariants
//
//   - V1 Run deletes only files no version inside the retention window references,
//     never files younger than the retention period, never anything under
//     _delta_log/ or in hidden directories other than _delta_index/ and the tree
//     files _skiplake_layout/qdtree-<uuid>.json (except abandoned .skiplake-tmp
//     temporaries older than the retention), and never anything outside the table
//     root: it lists and deletes through store paths relative to the root only.
//   - V2 Run never deletes a file older than the table (modified before version 0's
//     commit) unless the log names it or it has skiplake's own file name: files that
//     were in the location before the table was created there are not the table's
//     garbage.
//   - V3 Run refuses tables with reader or writer features it does not support
//     (log.CheckVacuumable), with or without vacuumProtocolCheck.
//   - V4 Run never deletes an unreferenced file, abandoned temporary or unfinished
//     upload younger than MinUnreferencedAge (1 hour, the longest a commit is assumed
//     to take), whatever the retention and even with Options.Force: the files of a
//     write that has not committed yet survive a VACUUM with retention 0.
//   - A retention shorter than the table's delta.deletedFileRetentionDuration, or
//     than SafetyFloor (7 days, Spark's retention-check threshold) — including a
//     table whose own retention is set below it — is refused
//     (RetentionTooShortError) unless Options.Force is set.
//
// # What it does not do
//
// It does not delete expired log files (log.Cleanup does, after checkpoints) and
// does not keep files for time travel beyond the retention window: versions older
// than the window may become unreadable, as in Delta.
package vacuum
