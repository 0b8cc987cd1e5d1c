// Package table reads, writes and maintains Delta Lake tables: it is the one package
// a Go program needs to create or open a table, append Arrow record batches, scan a
// version with a filter, change rows (DELETE, UPDATE, MERGE, RESTORE) and run
// OPTIMIZE, VACUUM and the other maintenance operations.
//
// # The model
//
// A Table is a handle on a table location (any storage.Storage; CreateURL and
// OpenURL for local directories, CreateURL and OpenURL for URLs). It is safe for
// concurrent use and never goes stale. Table.Snapshot loads one version (Latest,
// AtVersion, AtTimestamp); a Snapshot is immutable.
//
// A long-lived Table reuses what is safe to reuse (CacheOptions, Table.WithCache):
// Snapshot(Latest()) returns the snapshot it loaded last while the log's newest
// version is unchanged (one listing of the log instead of a load), and scans take the
// parsed Parquet footers and page indexes of data files they opened before from a
// footer cache bounded in bytes (least recently used first; Table.CacheStats), so a
// second selective scan of an unchanged table reads no footer (ScanReport.Footers
// and Requests show it). Delta never changes a data file in place; the cache key is the
// add action's path, size and modification time, and a cached footer is used only for
// an object of its size, so a path written again is read afresh (C1).
//
// Reading is plan, then read. Snapshot.Scan decides every live file with package
// skipping's Planner (partition values, per-file statistics, the Bloom filter
// index) and reads no data: the Scan lists each file with its verdict, the level
// that decided it and the reason. Scan.Read returns a Reader that streams the rows
// with read-ahead bounded by bytes; Scan.Count answers files proven to match from the
// log; Scan.Explain adds the row-group and page decisions from the files' footers;
// Scan.CopyParquet writes a whole version as one Parquet file of the files' own row
// groups, copied (internal/datafile's Output.Export), when the files allow it.
// This package plans (binds the filter, builds the planned files); executing the
// plan — opening the files through the footer cache, deciding row groups and pages,
// decoding under the read-ahead budget, the exact recheck — is the internal package
// scanexec's, which Reader, Count, Explain, Files and the DML commands' reads all use.
//
// Writing: Write (and CreateWrite, which creates the table with its first rows)
// commits every batch of one call in one transaction. Delete, Update, Merge and
// Restore each commit once, with Spark's operation metrics; Optimize, Vacuum,
// Checkpoint, Maintain and Alter maintain the table; History, Describe and Layout
// report on it from the log alone. Each function's documentation states what it
// reads, what it writes and how it behaves beside concurrent writers.
//
// Who writes what: data files are written only by package internal/datafile (for
// Write, DML, OPTIMIZE and auto-compaction alike) and deletion-vector files only by
// package internal/dv, both under the table root; the transaction log and its
// checkpoints only by package log. Source rows become rows of the table's columns and
// types in one place, package internal/conform (store assignment, NOT NULL), for
// Write, MERGE's source and the rows DML rewrites. Every row this package writes —
// Write's, the rows DML rewrites and its change data files — goes through one
// file-set writer (internal package writeset: conformed, checked by the write rules,
// split by partition, sorted for an optimized write on a clustered table), whose
// settings each caller states explicitly. The DML engine runs below this package
// (internal package dml: each attempt of DELETE, UPDATE, MERGE and a replaceWhere
// overwrite's deletes — reading the target files, evaluating the predicate, SET
// lists and MERGE clauses, the touched files' fates, copy-on-write rewrites, deletion
// vectors, change data files, the commit and its metrics, the re-plans after a
// concurrent OPTIMIZE and the cleanup of what a failed attempt wrote); this package
// validates the commands' options and is the engine's host: it loads and checks each
// attempt's snapshot (with MERGE's schema evolution), plans its reads, gives the
// write settings, explains a commit lost to a layout change, and fills DMLResult.
//
// Loading a version resolves it once into a view (internal package tableview): the
// typed properties, the logical, read and physical schemas, the column mapping with
// every column's physical name and field id, the partition and clustering columns,
// the statistics parser and the data-file writer settings. A Snapshot holds it, and
// scans, writes, DML, Optimize, auto-compaction, Maintain and Layout read it; none
// derives those again from the log.
//
// # Invariants
//
//   - L2 Data files, deletion-vector files and Bloom index files are uniquely named,
//     written with put-if-absent and complete before the commit that references
//     them. A failed or cancelled operation commits nothing and deletes what it wrote
//     (best effort; leftovers are unreferenced and VACUUM removes them), except after
//     a commit whose outcome is unknown (log.ErrCommitUnknown): its files stay, since
//     the commit may be visible.
//   - T1 Every add a transaction commits was written for the physical layout
//     (schema, physical column names and field ids, partitioning) of the version it
//     lands on. In particular a writer that loses the race to create a table, or
//     whose table changed layout under it, commits only files written for the
//     winner's physical layout; otherwise it fails and commits nothing.
//   - L4 Reading a table with reader features skiplake does not implement, or writing
//     one with unimplemented writer features, fails with an error naming them.
//   - S1 A scan never drops a row that satisfies its filter: every level only skips
//     units it has proven cannot match.
//   - S2 The exact recheck is skipped only for files (or row groups) proven to match
//     entirely; Count answers such files from their record counts without reading
//     them.
//   - B1 A file is probed in the Bloom index only when its add action's tag says the
//     index covers it; an unreadable index means the file is read (with a warning).
//   - D1 DML removes a file without reading it only when the Planner proves every
//     live row matches; a deletion vector only grows (the old vector is merged into
//     the new one); a file's vector is replaced by a remove/add pair keyed by (path,
//     vector).
//   - O1 Optimize never changes the multiset of live rows (package optimize).
//   - W1 Every row a write adds (append, overwrite, the rows UPDATE and MERGE
//     write) passes the write rules of the version it is written for
//     (rules.go): CHECK constraints and column invariants TRUE, generated columns
//     equal to their expressions, NOT NULL columns non-null; else the write fails
//     naming the rule and a row, and commits nothing. Rules skiplake cannot evaluate
//     exactly as Spark refuse every write that adds rows; Optimize and the rows
//     DELETE keeps are not checked (unchanged rows). Identity values a write
//     generates are recorded as high-water marks in the same commit; two writers
//     that both generated values conflict (a metadata change), so no value is
//     handed out twice.
//   - C1 A scan uses a cached footer only for a file whose add action has the path,
//     size and modification time the footer was cached under and whose object has
//     the footer's size; a reused snapshot is the newest version of the log when it
//     is handed out. Caching changes requests, never rows.
//   - P1 Table properties are validated and normalised when set, parsed once per
//     snapshot into a typed value (log.TableProperties), and read from that value
//     everywhere; an operation that depends on a property whose stored value does not
//     parse refuses to run.
//
// # Change data feed
//
// On tables with delta.enableChangeDataFeed=true, DELETE, UPDATE, MERGE and
// replaceWhere overwrites record the rows they change in change data files (cdc
// actions in the same commit) exactly when the commit's added and removed files
// would misstate them (updates, copy-on-write rewrites), as Delta Spark does;
// Table.Changes reads the changes of a range of versions from those files or, for
// the other commits, from their add and remove actions (dataChange=false commits
// change nothing). Replaying the change rows of every version rebuilds every
// version (the property test in changes_property_test.go).
//
// # The packages a program uses
//
// Every operation on a table is a function or method of this package. Its options
// and results use the types of the public packages below it as they are, without
// aliases: a program names them through those packages — optimize (Plan, Metrics,
// the curves), vacuum (Result, the retention floors and their error), log (property
// keys, isolation levels, Setting, ConflictError, ErrCommitUnknown), skipping
// (LevelStats), value (the scalars of ColumnStats), workload (a workload file) and
// storage (locations, ErrTransient, RequestCounts). Names that live in internal
// packages are re-exported here (the layout report's buckets and columns, the write
// rules' errors, ErrCorruptData). Table.Log, Snapshot.Log, Snapshot.DeltaSchema and
// Snapshot.Properties hand out package log's types on purpose, as the way down to
// the transaction log. The skiplake CLI calls no function of a package below this
// one (a test keeps it so). Object-store backends register their URL schemes when
// imported blank (storage/s3, storage/gcs, storage/azure); a program that imports
// none compiles no cloud SDK.
//
// # API conventions
//
//   - Where a table lives: Open, Create and CreateWrite take a storage.Storage;
//     OpenURL, CreateURL and CreateWriteURL take a location (a local path, file://,
//     s3://, gs:// or azblob://). One name per verb; there are no other spellings.
//   - Options: a scan composes functional options (Snapshot.Scan(WithFilter(...),
//     WithColumns(...), ...)), because scans are built up a piece at a time and
//     passed around; every other call takes one option struct named after it
//     (WriteOptions, DMLOptions, UpdateOptions, MergeOptions, OptimizeOptions,
//     VacuumOptions, MaintainOptions, AlterOptions, RestoreOptions, ...) whose zero
//     value is the default, and returns a result struct (WriteResult, DMLResult, ...).
//   - What a call cannot do without is an argument (Delete's and Update's predicate,
//     the RecordReader of Write and Merge); everything else is a named field, so no
//     two strings sit side by side to be swapped (Update's SET list is
//     UpdateOptions.Set).
//   - Data in: Write, CreateWrite and Merge read an array.RecordReader (a slice of
//     batches becomes one with array.NewRecordReader); WriteBatches is the one
//     shortcut for a slice.
//   - Errors name what the caller sets: a library error names the Go field
//     ("set VacuumOptions.Force"), the CLI's the flag ("add --force").
//
// # Not here
//
// DML that moves rows on tables with row tracking enabled (UPDATE, upserts, copy-on-write:
// they would lose the rows' stable IDs); writing inline deletion vectors (Spark never
// writes them; package internal/dv can).
//
// The repository README describes the behaviour this package gives the CLI and
// programs (sections "The CLI", "The library", "Clustered tables and scheduled
// maintenance", "Running it in production"); BENCHMARKS.md measures it.
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package table
