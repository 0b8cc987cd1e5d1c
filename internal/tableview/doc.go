// Package tableview resolves one version of a Delta table, once, into what every
// engine that reads or writes it needs: a View. New builds it from a log.Snapshot
// when the snapshot loads and validates it there (the model is delta-kernel-rs's
// TableConfiguration); package table's Snapshot holds it, and the scan planner and
// reader, DML, OPTIMIZE, auto-compaction, maintenance, the layout report and the
// create-race path take it instead of deriving anything from the log again.
//
// A View holds the protocol and the typed properties (parsed once: P1); the logical,
// read and physical Arrow schemas; the column mapping mode with every column's
// physical name and field id, and the one logical→physical translation
// (PhysicalPath), nested paths included; the partition columns with their physical
// names, types and typed values; the clustering columns resolved to physical paths;
// the statistics configuration and parser; the small-file size; and the data-file
// writer settings, assembled in one place (FileSpec).
//
// # Invariants
//
//   - TV1 A View is valid for reading once New returns: the protocol
//     is readable (L4), the schema converts to Arrow, column mapping annotations are
//     complete (a physical name per field, unique among siblings; a field id per
//     field in id mode, unique in the schema) and every partition column is a
//     top-level primitive column. Nothing about it changes afterwards.
//   - T1 Every add a transaction commits was written for the physical layout (names,
//     field ids, partitioning) of the version it lands on. Compare says how two
//     versions' layouts differ; CheckCommit, called by every committer of newly
//     written data files right before the commit, refuses files written for another
//     layout, and in test and race builds (package invariants) also reads the
//     files' Parquet footers and checks their column names and field ids
//     (VerifyFiles). Across commit retries the log keeps the layout fixed: a winner
//     that changes metaData or protocol is a conflict for every transaction (but
//     one that only advances identity high-water marks, which leaves the layout as
//     it is, for a transaction that changes no metadata).
//   - TV2 WriteRules are resolved once per view from the metadata: every CHECK
//     constraint, invariant and generation expression parsed and bound to the
//     logical schema, identity definitions read. If any of them cannot be
//     enforced exactly as Spark would, WriteRules is an error (ErrWriteRules) and
//     writers of rows refuse the table; a rule is never skipped.
//   - TV4 Applying the rules to the rows being written (complete.go) never hands out
//     an identity value twice within a write: an IdentityAssigner gives each column's
//     values in Step order from its Start or one Step past the recorded high-water
//     mark, fails with ErrIdentityColumn rather than overflow bigint, and Marks is
//     what the write's commit records. CompleteInsert fills the generated and
//     identity columns rows being inserted lack (refusing explicit values for a
//     GENERATED ALWAYS identity column), RecomputeGenerated recomputes those an
//     update does not assign, CheckIdentityUpdate refuses an update of an identity
//     column.
//   - TV3 ImpliedPartitionFilter (prune.go) derives from a filter only predicates on
//     generated partition columns that every row the filter accepts also satisfies
//     (S1), given that the table's generated values equal their expressions; for a
//     timestamp source it allows for any session time zone the writer used.
//
// Like the kernel's, the view answers the questions that need protocol and
// properties together: CheckWritable (L4 for writers), KeepsStableRowIDs,
// WritesDeletionVectors.
//
// Errors that users meet only through package table (ErrInvalidArgument,
// ErrIdentityColumn) carry that package's prefix, "table: ", and table re-exports
// them.
//
// What this package does not do: it reads no data file (VerifyFiles reads footers,
// and only when asked) and writes nothing; it decides nothing about an operation —
// writers check the properties they depend on and their own options.
package tableview
