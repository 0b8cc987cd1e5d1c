// Package optimize rewrites the data files of a Delta table for faster reads: OPTIMIZE
// compacts small files and clusters rows (Z-order, Hilbert, a workload-aware tree, or
// a clustered table's own columns) without changing the rows. The files it replaces are
// deleted later by VACUUM (package vacuum).
//
// OPTIMIZE is two calls: NewPlan reads only the log and decides which files to
// rewrite (bins per partition; JSON-serialisable for dry runs), and Execute rewrites
// the bins and commits removes and adds with dataChange=false.
//
//   - Compaction (CurveNone) packs each partition's files smaller than MinFileSize
//     into bins of at most TargetFileSize; each bin becomes one file. Plain compaction
//     never undoes clustering: clustered files are only ever rewritten alone.
//   - Clustering (CurveLinear, CurveZOrder, CurveHilbert) and the workload layout
//     (CurveWorkload) sort each bin's rows by a key computed from ranks and cut them
//     into files of the target size; see Curve for how.
//   - Clustered tables (Delta liquid clustering, log.Snapshot.Clustering): OPTIMIZE
//     without a curve clusters by the table's clustering columns with a Hilbert curve,
//     incrementally, by size tiers (Options.CubeFanIn); the files it clusters carry
//     clusteringProvider "liquid".
//   - Bloom filters: every file written gets a native Parquet filter and an entry in
//     the commit's skiplake Bloom index for every Bloom column (the table property
//     skiplake.bloomFilter.columns and Options.BloomColumns); BackfillBloom rewrites
//     the files that lack one.
//   - Row tracking: on a table with delta.enableRowTracking every file written
//     carries its rows' stable row IDs and row commit versions (rowids.go).
//   - Concurrency: up to Parallelism goroutines read, key, sort, gather and encode;
//     each fan-out runs on an errgroup (the first error cancels the rest, nothing
//     starts after it or after ctx ends), and batches several goroutines read are
//     settled first (R1, datafile.Settle).
//
// Every file is written through the data-file layer (internal/datafile). A compaction
// bin whose inputs already are what that layer would write is not decoded: its row
// groups are copied into the new file byte for byte, or small ones merged page by
// page (datafile.Output.Stitch, invariants D11 and D12 there); the rules a bin must
// meet are the datafile.StitchRule values and the Reason constants, and
// Metrics.ReencodeReasons names the first rule each re-encoded bin broke.
//
// # Invariants
//
//   - O1 OPTIMIZE never changes the multiset of live rows. Every commit removes
//     exactly the files whose rows it re-adds (checked against each input file's
//     numRecords), at snapshot isolation: concurrent appends never make it fail; a
//     concurrent removal of an input file makes the commit fail as a whole, its new
//     files are deleted and Execute replans on the latest snapshot (at most
//     MaxRetries times, then ErrConflict).
//   - O2 Output files of one clustering bin have disjoint key ranges and are sorted
//     by key inside; two rows with equal keys are never split across files.
//   - O3 Every file an OPTIMIZE commit adds is covered by a Bloom index for exactly
//     the plan's Bloom columns (invariant B1 of package bloom): its tag names an
//     index file holding an entry per (file, column) and nothing else, written
//     with put-if-absent under a fresh name before the commit (like L2), and
//     deleted with the commit's data files when the commit fails or is retried.
//     Every filter contains every non-null value of its file (B2).
//   - O4 Every file a workload-layout commit adds is tagged with a tree file that
//     is stored (put-if-absent, under a fresh name) before the commit and decodes;
//     the file's rows all route to the node its tag names or below it, in that
//     tree and in every later generation of it; rows tagged waiting are re-read
//     at most once more (the re-split of their subtree writes them at leaves). A
//     failed commit deletes its new tree files with its data files.
//   - L2 (package log) Data files are written in full with put-if-absent under
//     unique names before the commit that references them.
//   - Cleanup of a failed batch never deletes the files of a commit whose outcome is
//     unknown (log.ErrCommitUnknown).
//   - A new file's statistics are the merge of its inputs' log statistics when its row
//     groups were copied (stats.MergeJSON), and computed from the rows otherwise;
//     never the Parquet footers'.
//
// # Column mapping
//
// On tables with column mapping (name or id mode) the plan works in logical names:
// input files are read by physical name (id mode: by Parquet field id), partition
// values and Options.Partitions are keyed by physical names as add actions key them,
// and the files written carry physical names and field ids (both modes), statistics
// and Bloom tags keyed by physical names, as every other writer of the table does
// (datafile.Spec.Mapping). Liquid clustering columns come from the domain's physical
// names translated back to logical ones.
//
// # What it does not do
//
// Deletion vectors are applied while reading (deleted rows are dropped and the new
// files have none), but this package never writes deletion vectors. It does not index
// nested columns with Bloom filters nor persist Options.BloomFPP (only the column list
// is written to the table property), does not evaluate predicate text (callers pass
// Options.PartitionFilter), and does not split clustered output after the fact (that
// would make file key ranges overlap). Package table wraps it for users; the CLI
// renders plans and progress.
//
// The repository README describes OPTIMIZE as users see it (sections "The CLI",
// "Clustered tables and scheduled maintenance", "Layouts learned from the workload",
// "Running it in production"); BENCHMARKS.md measures what clustering and copying row
// groups buy.
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package optimize
