// Package log implements the Delta Lake transaction log: the action types and
// their JSON form, the Delta schema model (schemaString) and its Arrow mapping,
// snapshot reconstruction from checkpoints and commit files, time travel,
// protocol and table-feature checks, optimistic transactions with
// Spark-compatible conflict detection, checkpoint writing and commit history.
//
// A Log is rooted at a table root in a storage.Storage; the log itself lives
// under "_delta_log/". A Log is safe for concurrent use. Snapshots are
// immutable once returned and safe for concurrent readers; the slices and
// actions they return are shared and must not be modified. A Transaction is
// single-use and not meant to be shared between goroutines.
//
// Invariants kept here:
//
//   - L1 Versions are contiguous from the checkpoint a snapshot starts at (or
//     from version 0); a gap is an error naming the missing version.
//   - L2 A commit file is created only with PutIfAbsent and never overwritten.
//     Checkpoints are written with Put after their commit exists (a checkpoint
//     may be rewritten identically).
//   - L3 A snapshot is the newest complete checkpoint at or below the version
//     plus the commits after it, reconciled by (path, deletion-vector unique
//     id). A stale, missing, empty or corrupt _last_checkpoint only costs a
//     listing. A checkpoint that cannot be read makes the reader fall back, as
//     Delta Spark does (SnapshotManagement), to the newest complete checkpoint
//     older than it, or to version 0 when there is none, provided every JSON
//     commit from there to the version is present; at most twice (Spark's
//     snapshotLoading.maxRetries default). The snapshot then carries a warning
//     (Snapshot.Warnings, Log.ObserveWarnings) naming the skipped checkpoint and
//     why; when no such fallback exists the error leads with the checkpoint's
//     failure.
//   - L4 Unknown or unsupported reader features make a read fail with an
//     *UnsupportedFeatureError naming them; writer features likewise for
//     writes.
//   - CK1 Checkpoint and sidecar Parquet is read with package pqguard's defences,
//     as data files are: the footer is validated before anything is decoded, a
//     panic of arrow-go's decoder is contained at the call into it, and the arrays
//     it decodes are checked for consistency (checkDecoded) before a value is read.
//     A damaged checkpoint is an ErrCorruptLog naming the file, never a panic.
//   - CK2 The row groups of a checkpoint's Parquet files (classic, multi-part parts,
//     v2 sidecars) are decoded into actions on up to GOMAXPROCS goroutines, at most
//     GOMAXPROCS row groups decoded and not yet replayed, and replayed on the loading
//     goroutine in file and row-group order: every action, row count and error reaches
//     the replay exactly as from a sequential read of file after file. The replay
//     records the checkpoint's adds in that order and then indexes them by key on up
//     to GOMAXPROCS goroutines (a checkpoint holds each key once); a checkpoint with
//     a repeated add key or a remove of an added key is reconciled action by action
//     instead, so the live files are those of the sequential replay in every case.
//   - CK3 A row group's add column is decoded straight from the Parquet pages (column
//     chunk readers, levels into reused slices, strings copied into one string per
//     column and row group, or per range of rows when a large row group's path or
//     stats leaf is read as one range per worker, each range from its own column
//     chunk reader skipped to its first row; the ranges cover the rows in order and
//     their strings are assigned to the adds in row order) when its shape is one
//     whose Arrow reading that decoder reproduces; columns other than add are then
//     read through pqarrow only for row groups whose probe leaves show such actions. Any other shape (stats_parsed or
//     partitionValues_parsed under add, other types, duplicated names) and any error
//     or inconsistency between leaves sends the row group to the pqarrow path, which
//     reports the error: both paths give the same actions and errors.
//
// Reconciliation key: files are keyed by their *decoded* path (the log stores
// percent-encoded relative URIs; "a%20b" and "a b" are the same file) plus the
// deletion vector's UniqueID. Absolute URIs (s3://, file:/) are not supported
// and are reported by DecodedPath.
//
// Partition values: Add.PartitionValues is map[string]*string so that both
// forms writers use for null (JSON null and "") survive a round trip;
// PartitionValue reports either as null. Files read from one checkpoint with equal
// partition values share one map (another reason a snapshot's actions must not be
// modified).
//
// Transactions: commitInfo.readVersion is the version of the snapshot the
// transaction started from, also after retries (as in Spark). Every commit carries a
// fresh commitInfo.txnId; when writing the commit file fails in a way that may have
// left it in place (a directory fsync after the link, a lost PUT response), or a
// retried put reports "exists", the version is read back and its txnId tells whether
// the commit is this transaction's (success) or another writer's (a lost race, checked
// for conflicts); when it cannot be read back, Commit returns ErrCommitUnknown and the
// caller must keep the commit's files. An empty commit file is ErrCorruptLog. Commit
// timestamps are monotonic: when the previous commit's timestamp is not
// below the wall clock, previous+1 ms is used. After a commit whose version
// is a multiple of delta.checkpointInterval (default 10) a checkpoint is
// written (classic; v2 in JSON for tables with the v2Checkpoint feature); its
// failure never fails the commit and is reported by Transaction.CheckpointErr.
//
// Read tracking: a transaction declares what its result depends on — files
// (ReadFiles), the whole table (ReadWholeTable) or predicates (AddReadPredicate, which
// DML uses) — and a concurrent winner conflicts per Delta's rules for the isolation
// level: removing a file read is ErrConcurrentDeleteRead, adding files a read predicate
// might match is ErrConcurrentAppend under Serializable (any winner) and
// WriteSerializable (winners that are not blind appends). A *ConflictError says whether
// the winner only rearranged data (Rearrangement: OPTIMIZE), in which case redoing the
// transaction's reads on the new snapshot is safe.
//
// DML file actions: Add.RemoveAction builds the remove that cancels exactly one live
// (path, deletion vector) key, and ReplaceDeletionVector the remove/add pair that gives
// a live file a grown deletion vector, with stats marked "tightBounds":false
// (invariant D1: a vector only grows; numRecords is required). Log.Now exposes the
// injectable clock for their deletionTimestamp.
//
// Commit files are parsed line by line (one action decoded at a time, errors
// name the file and line); checkpoints are read with arrow-go's pqarrow,
// with add and remove columns decoded directly and rare actions through
// their JSON form. When a checkpoint carries only stats_parsed (or
// partitionValues_parsed), it is rendered back to the JSON stats string (or
// serialized partition values), so consumers see one form. Classic checkpoints are
// written as the table's properties say: add.stats unless
// delta.checkpoint.writeStatsAsJson=false, and add.stats_parsed (typed min/max over
// the data columns that have bounds, null counts over every data leaf, physical
// names) when delta.checkpoint.writeStatsAsStruct=true; stats that do not fit the
// struct leave that file's stats_parsed null. With writeStatsAsStruct a partitioned
// table's checkpoints also carry add.partitionValues_parsed (PROTOCOL.md requires it):
// the partition values typed, fields named by physical name in
// metaData.partitionColumns order, NULL for a value that does not parse. Fields are in
// Delta Spark's order; removes carry neither stats nor tags. V2 (JSON) checkpoints
// always carry the JSON stats.
//
// JSON forms Delta readers rely on: a remove with extendedFileMetadata=true always
// has partitionValues ({} when unpartitioned) and size; commitInfo's
// operationParameters hold each value's JSON text, written once as the value
// (Delta Spark's form: "mode":"Append", "version":1) and read back as that text
// (CommitInfo.DisplayParameters gives DESCRIBE HISTORY's form).
//
// Table properties (P1): Snapshot.Properties parses metaData.configuration once
// into a *TableProperties (typed values, defaults applied, invalid stored values
// listed); every reader of a property — this package's checkpoint interval,
// tombstone retention and append-only check, and the table, optimize and vacuum
// layers — reads that value, by canonical key only. Setting properties
// (NormalizeProperties, PrepareCreate, ApplyPropertyChange) follows Spark's
// DeltaConfigs: known delta.* keys in any letter case are validated and stored
// under their canonical spelling, unknown delta.* and skiplake.* keys are
// refused, delta.constraints.* is refused (AddCheckConstraint and
// DropCheckConstraint change CHECK constraints, as Spark's ADD/DROP CONSTRAINT
// do), delta.feature.<name> adds a feature; existing configuration is never
// re-validated. A property that needs a table feature upgrades the protocol
// (UpgradeProtocol: legacy versions become table features listing every feature
// they implied), except that the features of the legacy writer versions keep a
// legacy table legacy at the lowest version implying them (a CHECK constraint:
// writer 3, a generated column: 4, an identity column: 6), as Delta Spark does.
// ParseSize and ParseInterval are the project's only size and interval parsers.
//
// Write rules (constraints.go): CHECK constraints, column invariants, generation
// expressions and identity columns are kept in the metadata and changed here
// (AddCheckConstraint, DropCheckConstraint, SetIdentityHighWaterMarks); package
// table enforces them. A commit whose metaData only advances identity high-water
// marks is tagged delta.identity.schemaUpdate, and such a winner does not conflict
// with a transaction that changes no metadata (Delta Spark's rule); any other
// concurrent metadata change is a conflict.
//
// Domain metadata: reconciled per domain (newest wins, removed=true is a
// tombstone the snapshot drops), kept in checkpoints, and never touched unless a
// transaction sets it; callers may set user domains and, on a clustered table,
// delta.clustering (Snapshot.Clustering reads it, and Databricks' delta.liquid;
// ClusteringDomain writes it), never other system-controlled delta.* domains.
// Row tracking (rowtracking.go): on tables whose protocol supports rowTracking
// every commit attempt gives new files fresh baseRowId (above the
// delta.rowTracking high-water mark, which the commit raises) and
// defaultRowCommitVersion (the committed version); a mark below an assigned row ID
// (lowered, or its domain removed) or one that would pass math.MaxInt64 makes the
// commit fail with ErrCorruptLog (RT1) instead of repeating or wrapping IDs; recommitted files and removes
// keep their file's values; a retry reassigns from the winners' mark; commitInfo
// says delta.rowTracking.preserved (OPTIMIZE materializes stable row IDs and
// declares it with PreserveRowTracking). CleanupExpiredLog deletes
// log files past delta.logRetentionDuration that a checkpoint covers.
//
// Column mapping: schemas keep every field's id and physical name through commits
// and checkpoints; the add actions of a column-mapped table key statistics and
// partition values by physical name, as the data-file writers (internal/datafile)
// write them.
//
// What this package deliberately does not do: it never reads or writes data files
// (internal/datafile does) or deletion-vector files (internal/dv does), for package
// table and package optimize, which put their add and remove actions into a
// Transaction; the change data files of a commit are written there too and
// committed as cdc actions (Transaction.AddChangeFiles). It does not write
// multi-part checkpoints, v2 checkpoints with sidecars, log compaction files or .crc
// files (it ignores the last two when reading), and it does not support absolute
// file URIs. Tables with the v2Checkpoint feature get v2 checkpoints in JSON with
// every action inline. It does not evaluate the write rules' expressions (CHECK
// constraints, invariants, generation expressions; package expr does, for package
// table).
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package log
