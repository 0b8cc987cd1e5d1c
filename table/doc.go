// Package table is the face of skiplake: Delta Lake tables as Go values. It creates
// and opens tables (any storage.Storage; local directories via CreatePath/OpenPath),
// writes Arrow record batches as Parquet files plus one log commit (append, overwrite,
// idempotent by application id), scans a version with a projection and a filter, and
// changes rows (Delete, Update, Merge — DML — and Restore), runs the maintenance
// operations (Checkpoint, Optimize, Vacuum, Maintain, History, Describe, Layout) and
// table changes (Alter: set or unset properties, add columns, change clustering
// columns).
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
// table; a writer that loses the race to create the table appends its rows to the
// winner's table when schema and partitioning match — its files as they are when
// the winner's physical layout is its own, else rewritten for the winner's physical
// names and field ids (with column mapping each creator picks its own), its own
// files then deleted. A write whose table changed metaData or protocol under it
// commits nothing and deletes its files; the error says how the layout changed
// (ErrLayoutChanged) when it did. Create and CreateWrite refuse a
// location holding files that are not part of a table (ErrLocationNotEmpty) unless
// CreateOptions.AllowNonEmpty.
//
// # Changing rows: DELETE, UPDATE, MERGE, RESTORE
//
// A DML command plans on the latest snapshot with the same Planner as a scan, then
// touches only the files it must (invariant D1): files that cannot match are
// untouched; files proven to match entirely are removed by DELETE without being read;
// the others are read — only the columns the command needs, skipping the row groups and
// pages their footers and page indexes exclude — and the positions of the changed rows
// are recorded per file. The touched files then get a grown deletion vector (tables
// with delta.enableDeletionVectors=true, files written as deletion_vector_<uuid>.bin, at
// most one new vector per file per command) or are rewritten without those rows
// (copy-on-write: every other table, or DMLOptions.RewriteFiles); a file whose live rows
// all go is removed. Updated and inserted rows go to new files through the same writer
// as Write. Everything lands in one commit with Spark's operation name, parameters and
// metrics (DELETE, UPDATE, MERGE).
//
// Merge joins a source (Arrow batches, read once) with the table by key columns. The
// source's keys become a predicate (IN list, or range) that prunes files by partition
// values, statistics and the Bloom index, and row groups and pages inside them; a
// source larger than MergeOptions.MemoryBudget is partitioned by key hash into spill
// files and merged in passes, so memory follows the budget and the touched files,
// never the table; a file's deletions from all passes make one deletion vector.
//
// Concurrency: a DML command records what it read as read predicates and files
// (log.Transaction.AddReadPredicate, ReadFiles). Under WriteSerializable (the default)
// concurrent blind appends never conflict with it; under Serializable an append whose
// files could hold matching rows does; a concurrent removal of a file it read or
// removes conflicts (*log.ConflictError). When the winner only rearranged data
// (OPTIMIZE), the command re-plans and re-reads on the new snapshot instead, up to
// DMLOptions.ConflictRetries times, then fails with nothing committed. Files written by
// a failed attempt are deleted, except after log.ErrCommitUnknown.
//
// Row tracking: on a table with delta.enableRowTracking=true, DML runs only when it
// moves no existing row — DELETE, and MERGE without update clauses, with deletion
// vectors — so every remaining row keeps its stable row ID and row commit version
// (its file is re-added with the same baseRowId), inserted rows get fresh IDs, and the
// commit says delta.rowTracking.preserved=true. UPDATE, upserts and copy-on-write
// would copy rows to new files without their stable IDs and are refused
// (log.ErrUnsupportedFeature). With the feature merely supported, every command runs
// and moved rows take fresh IDs.
//
// Deletion vectors are off for new tables by default (reader 1 / writer 2, which every
// Delta reader reads, as Delta Spark creates tables): enabling them makes the table
// reader 3 / writer 7 with the deletionVectors feature, which readers without table
// features or without deletion-vector support refuse to read. Set delta.enableDeletionVectors=true at Create or with Alter
// for tables whose DML touches a few rows of large files.
//
// Restore makes the table hold what an older version held in one commit, after
// checking that every file it re-adds still exists (VACUUM may have deleted some).
//
// # Workloads
//
// ObserveFilters hands the filter of every scan and count to a callback (a
// workload.Recorder collects them); OptimizeOptions.Layout "workload" lays the files
// out by a tree of cuts learned from a workload (package qdtree via package
// optimize), which later runs route new rows through. Package advise predicts, from
// a sample, which layout suits a workload.
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
// # One view per version
//
// Loading a version resolves it once into a view (internal package tableview): the
// typed properties, the logical, read and physical schemas, the column mapping with
// every column's physical name and field id, the partition and clustering columns,
// the statistics parser and the data-file writer settings. A Snapshot holds it, and
// scans, writes, DML, Optimize, auto-compaction, Maintain and Layout read it; none
// derives those again from the log. Every commit of newly written data files
// checks invariant T1 against it: the files were written for the physical layout
// (names, field ids, partitioning) of the version the commit lands on.
//
// # Which types are table's own
//
// Options types are table's own (CreateOptions, WriteOptions, OptimizeOptions,
// VacuumOptions, ...): they take the user's terms and leave out what only an engine
// package needs. Results are table's own where table computes them (WriteResult,
// ScanReport, AlterResult, MaintainResult, Layout, ...). The results of the engine
// packages are re-exported deliberately as type aliases (reexport.go), the same types
// under table's name: OptimizePlan and OptimizeMetrics (package optimize),
// VacuumResult, RetentionTooShortError and ErrRetentionTooShort (package vacuum).
// Table.Log, Snapshot.Log, Snapshot.DeltaSchema and Snapshot.Properties hand out
// package log's types on purpose: they are the way down to the transaction log for
// callers that need more than the facade offers.
//
// VACUUM is garbage collection, not optimisation: Table.Vacuum and Maintain call
// package vacuum; Optimize and Maintain call package optimize.
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
//   - T1 Every add a commit carries for a newly written data file was written for
//     the physical layout of the version the commit lands on (checked at commit;
//     in test and race builds the files' Parquet footers are checked too).
//   - D1 DML removes a file without reading it only when the Planner proves every live
//     row matches; a deletion vector only grows (the old vector is merged into the new
//     one); a file's vector is replaced by a remove/add pair keyed by (path, vector).
//
// # One package for programs
//
// A program needs no other skiplake package to use tables: the results and inputs
// that come from elsewhere are re-exported here deliberately, as aliases of the same
// types (OptimizePlan, VacuumResult, RetentionTooShortError, LevelStats, Value, Workload,
// RequestCounts) and small wrappers (ParseSchema, CheckFilter, ParseSize,
// ParseInterval, FileLocation). The skiplake CLI is held to this by a test; storage
// backends are still imported blank to register their URL schemes.
//
// # Not here
//
// Writing to tables with change data feed (reading them is supported); DML that moves
// rows on tables with row tracking enabled (see above); inline deletion vectors (Spark never writes them; package dv
// can); object stores other than what a storage.Storage implementation provides.
package table
