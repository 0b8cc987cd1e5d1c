// Package table is the face of skiplake: Delta Lake tables as Go values. It creates
// and opens tables (any storage.Storage; local directories via CreatePath/OpenPath),
// writes Arrow record batches as Parquet files plus one log commit (append, overwrite,
// idempotent by application id), scans a version with a projection and a filter, and
// runs the maintenance operations (Checkpoint, Optimize, Vacuum, Maintain, History,
// Describe, Layout) and table changes (Alter: set or unset properties, add columns,
// change clustering columns).
//
// # Reading: plan, then read
//
// The version is chosen once: Table.Snapshot(ctx, ref) loads it (latest, a version, or
// a timestamp) and Snapshot.Scan plans on it (Table.Scan is Snapshot.Scan of the latest
// version). Planning resolves the columns (the projection plus the filter's columns),
// binds the filter and decides every live file with package skipping's Planner —
// partition values, per-file statistics (a columnar index built once per Snapshot), the
// Bloom filter index — giving each file a verdict, the level that decided it and the
// reason (Scan.Files). The plan reads no data; Scan.Explain adds the row-group and page
// decisions from the files' footers.
//
// Scan.Read makes a Reader that streams the rows: files in plan order, row groups
// decoded in parallel (WithParallelism, default GOMAXPROCS), deletion vectors applied,
// the filter rechecked exactly only where a level said "might match", and decoded
// batches held ahead of the caller only up to a byte budget (WithReadAhead, default
// DefaultReadAheadBytes) — so memory follows the budget, not the file sizes. A limit
// stops the background reads early. Scan.Count answers files proven to match entirely
// from the log. The schema is known before the first batch. Every level's counts are in
// the ScanReport.
//
// # Writing
//
// Write conforms each batch to the table schema (matching names case-insensitively;
// representation-only differences such as large_string or timestamp units are cast,
// anything else is an error naming the column and both types), splits it by partition,
// and streams each partition's rows into files of about the target size
// (delta.targetFileSize, default 128 MiB) with several row groups each, encoding up to
// GOMAXPROCS files at once. Statistics are computed from the Arrow data (package
// stats), Bloom filters are built for the columns the table property
// skiplake.bloomFilter.columns names, and one transaction commits all add actions.
//
// A new table is best created with its first rows: CreateWrite commits the metaData,
// protocol and add actions as version 0 together, so a failed first write leaves no
// table; a writer that loses the race to create the table appends its files to the
// winner's table when schema and partitioning match. Create and CreateWrite refuse a
// location holding files that are not part of a table (ErrLocationNotEmpty) unless
// CreateOptions.AllowNonEmpty.
//
// # Table properties
//
// Properties are set at Create and by Alter, validated and canonicalised as Delta
// Spark does (package log: a known delta.* key in any letter case is stored under its
// canonical spelling, unknown delta.* and skiplake.* keys are refused, a property
// that needs a table feature upgrades the protocol); existing configuration is never
// re-validated. Every operation reads them from the snapshot's typed
// log.TableProperties, by canonical key only, and refuses to run when a property it
// depends on holds a value that does not parse.
//
// # Clustered tables and maintenance
//
// CreateOptions.ClusterBy makes a Delta clustered table (liquid clustering: the
// clustering writer feature and a delta.clustering domain); AlterOptions.ClusterBy
// changes its columns without rewriting a file. Writes always collect statistics on
// the clustering columns; Optimize without a curve clusters a clustered table
// incrementally by them (package optimize: new files plus full size tiers of small
// cubes, files marked clusteringProvider "liquid"). Tables with the rowTracking
// feature get row IDs and row commit versions on every commit (package log), and
// OPTIMIZE keeps the stable row IDs of the rows it rewrites when row tracking is
// enabled, which is what lets OPTIMIZE and maintenance work on Spark's clustered
// tables.
//
// delta.autoOptimize.autoCompact makes every write that commits compact (or, on a
// clustered table, cluster) the partitions it touched in a separate commit, once they
// hold skiplake.autoCompact.minNumFiles small files (WriteResult.AutoCompact; its
// failure never fails the write). Maintain does what a scheduled job should: a
// checkpoint when due, compaction, incremental clustering and Bloom backfill within a
// byte and time budget, VACUUM, expired log cleanup — safe beside writers and
// idempotent. Layout reports layout health from the log alone (no data file read):
// file sizes, small files, clustered share, per column the overlap depth and the
// expected share of files a point or 1% range query reads, write amplification.
//
// # Invariants
//
//   - L2 Data files and Bloom index files are uniquely named, written with
//     put-if-absent and complete before the commit that references them; a failed or
//     cancelled write commits nothing and deletes what it wrote (best effort; leftovers
//     are unreferenced and VACUUM removes them). A commit whose outcome is unknown
//     (log.ErrCommitUnknown) keeps its files: it may be visible.
//   - L4 Reading a table with reader features skiplake does not implement, or writing
//     one with unimplemented writer features, fails with an error naming them.
//   - S1 A scan never drops a row that satisfies its filter: every level only skips
//     units it has proven CannotMatch.
//   - S2 The exact recheck is skipped only for files (or row groups) proven MustMatch;
//     Count answers such files from their record counts without reading them.
//   - B1 A file is probed in the Bloom index only when its add action's tag says the
//     index covers it; an unreadable index means the file is read (with a warning).
//   - O1 Optimize never changes the multiset of live rows (package optimize).
//   - P1 Table properties are validated and normalised when set, parsed once per
//     snapshot into a typed value, and read from that value everywhere.
//
// # One package for programs
//
// A program needs no other skiplake package to use tables: the results and inputs
// that come from elsewhere are re-exported here deliberately, as aliases of the same
// types (OptimizePlan, VacuumResult, RetentionTooShortError, LevelStats, Value,
// RequestCounts) and small wrappers (ParseSchema, CheckFilter, ParseSize,
// ParseInterval, FileLocation). The skiplake CLI is held to this by a test; storage
// backends are still imported blank to register their URL schemes.
//
// # Not here
//
// Writing to tables with column mapping, deletion vectors or change data feed (reading
// them is supported); MERGE, UPDATE and DELETE; object stores other than what a
// storage.Storage implementation provides.
package table
