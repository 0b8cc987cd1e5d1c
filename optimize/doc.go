// Package optimize plans and executes OPTIMIZE (compaction and clustering) on Delta
// tables. The files it replaces are deleted later by VACUUM (package vacuum), which
// is garbage collection and lives apart.
//
// OPTIMIZE is two calls: NewPlan reads only the log and decides which files to
// rewrite (bins per partition; JSON-serialisable for dry runs), and Execute rewrites
// the bins and commits removes and adds with dataChange=false.
//
//   - Compaction (CurveNone) packs each partition's files smaller than MinFileSize,
//     in modification-time order, into bins of at most TargetFileSize; each bin
//     becomes one file.
//   - Clustering (CurveLinear, CurveZOrder, CurveHilbert) ranks each clustering
//     column by equal-frequency boundaries drawn from a sample (internal/rank: the
//     resolution grows with the data, heavy hitters are spread), combines the ranks
//     into one key per row (lexicographic, Morton or Hilbert), sorts the rows by key
//     and writes them in key order into files of TargetFileSize by their encoded
//     size, cutting only where the key changes: a bin held in memory plans its cuts
//     from a size probe (evenly spaced runs of the sorted rows encoded as the files
//     are, datafile.Output.Probe, weighing each row's width by its region's
//     compression) and writes up to Parallelism files at once, each from the probe's
//     dictionary choices and size model, so the files are the same at any
//     Parallelism; files that miss the target anyway are written again by the
//     roller from the first that did. A spilled bin, or one whose input fits a
//     file, writes file after file (internal/datafile Roller). Every file of a bin
//     but the last is within 10% of the target (1% on the tests' uniform data, 6%
//     on rows ten times wider at one end of the order). Row groups are
//     about an eighth of the target so that row-group and page skipping work inside
//     a file too. Output
//     files carry the tags ZCUBE_ID, ZCUBE_ZORDER_BY, ZCUBE_ZORDER_CURVE and
//     OPTIMIZE_TARGET_SIZE; later runs leave cubes of at least MinCubeSize alone
//     and cluster only new files and small cubes (Full re-clusters everything).
//   - The workload layout (CurveWorkload, Options.Workload) builds a tree of cuts
//     from a workload's filters (package qdtree) on a sample of a partition's rows,
//     with one leaf per file of TargetFileSize, and writes one file per leaf
//     (sorted inside by the Hilbert key of the tree's columns). The tree is stored
//     in a side file under TreeDir that every file names in its tags (TagTree,
//     TagTreeNode); the table's metadata and protocol are untouched. Later runs
//     route new rows through the stored tree: a new file waits where it was
//     appended, at its home (the lowest node holding all its rows by its
//     statistics), until the subtree it is at home in has about doubled; then that
//     subtree is re-split: its files are read, each leaf is cut anew by a tree on
//     its rows for the stored workload, and the stored tree is extended below it
//     (a new generation of the tree file; files written earlier keep naming
//     their nodes by key). Every row is so written once per doubling of its
//     subtree. Full builds a new tree; PartitionPlan.Drift compares Options.Workload with the tree's training
//     workload. Workload bins are rewritten in bounded memory by reading the input
//     again per group of destinations that fits a third of MemoryBudget.
//   - Inputs larger than MemoryBudget are clustered through key-range spill runs
//     (temporary Arrow IPC files in SpillDir, never in the table) that are sorted
//     one at a time.
//   - Up to Parallelism goroutines read the input files, compute keys, sort (parts
//     sorted concurrently, then merged), gather the sorted rows and encode the
//     files being written; small bins run side by side and share the workers (a
//     lone small bin has them all). Each of these fans out on an errgroup: the
//     first error cancels the rest and nothing starts after it or after ctx ends.
//     The batches several goroutines read (sampled, keyed, gathered from) are
//     settled first (R1, datafile.Settle).
//   - Every file is written through the data-file layer (internal/datafile: one
//     Output per commit, which also deletes the commit's files when it fails).
//   - Bloom filters: every file OPTIMIZE writes gets a filter per Bloom column
//     (table property skiplake.bloomFilter.columns ∪ Options.BloomColumns), both
//     natively in the Parquet file (split-block, per row group) and in one
//     skiplake Bloom index file per commit (package bloom) that the commit's adds
//     name in their skiplake.bloom tag. With Options.BloomColumns (or
//     BackfillBloom) files whose tag lacks a column are rewritten too, and new
//     columns are added to the table property by the run's last commit.
//
// # Copying row groups
//
// A compaction bin (plain compaction, and the single-file bins that purge deleted
// rows or add Bloom filters) is written by copying its files' row groups into the
// new file unchanged — no decode, no re-encode, only a new footer
// (datafile.Output.Stitch, invariant D11 there) — when all of these hold, and is
// decoded and re-encoded otherwise (Metrics.NumCopiedBins, NumReencodedBins, and
// ReencodeReasons naming the first rule a bin broke):
//
//   - Options.StitchMinRowGroupBytes is not negative (ReasonStitchDisabled);
//   - the table has no row tracking (ReasonRowTracking: the new file must
//     materialize the rows' stable row IDs, which copied pages lack);
//   - no input has a deletion vector (ReasonDeletionVector: deleted rows must go);
//   - every input was written by skiplake's data-file writer with exactly the
//     Parquet schema (leaf paths, physical and logical types, repetition, field
//     ids), column orders and ARROW:schema the bin's output would have — so files
//     from before a column mapping or type change, with INT96, or from other
//     writers are re-encoded (datafile rules writer, schema);
//   - every column chunk is compressed with the table's codec (codec) and has a
//     column index and an offset index, so page skipping keeps working (page-index);
//   - every row group holds at least StitchMinRowGroupBytes compressed bytes
//     (row-group-size; default a quarter of the output's row-group size): many
//     small files, as streaming ingest leaves them, are merged into row groups of
//     the target size (below) rather than kept as many tiny ones;
//   - every row group has a native Bloom filter for every Bloom column of the
//     plan (bloom; a file that lacks one is re-encoded, as BackfillBloom wants);
//   - every input's log statistics have numRecords (equal to its footer's rows, else
//     ErrCorruptData), tight bounds, a nullCount for every statistics column and
//     min/max for every one with non-null values (stats).
//
// A bin that meets every rule but the row-group size (many small files: the common
// case of streaming ingest) is merged instead (Metrics.NumMergedBins; off with
// Options.NoRowGroupMerge, which re-encodes it): its row groups of at least
// StitchMinRowGroupBytes are copied whole, and runs of consecutive smaller ones are
// merged into row groups of at most the output's row-group size, each column
// either copied page by page — when no input chunk of it has a dictionary and it
// is not a Bloom column: its data pages are the inputs' bytes, with merged footer
// statistics, column index and offset index — or decoded and re-encoded, as the
// rest of a re-encode would write it (datafile invariant D12). On data whose
// high-cardinality columns are plain-encoded (keys, prices, free text) most bytes
// are copied, and only the small dictionary-encoded columns cost a decode and a
// compression.
//
// The new file's statistics are the merge of the inputs' log statistics
// (stats.MergeJSON: counts summed, min of mins and max of maxes by the column's
// type, sound for cut string bounds), never the Parquet footers'. Its skiplake Bloom
// index filters are built from the inputs' Bloom columns, read (only those columns
// are decoded), so O3 holds as for any other file; the native filters come along
// with the chunks. Inputs are validated before anything is written; a damaged one
// fails the bin with ErrCorruptData, as the re-encode would.
//
// Clustered tables (Delta liquid clustering, log.Snapshot.Clustering): OPTIMIZE
// without a curve clusters by the table's clustering columns with a Hilbert curve;
// explicit curves are refused there, as in Delta. The run is incremental: it takes
// the files without a clusteringProvider and, per size tier (Options.CubeFanIn),
// the unfinished cubes of a tier once it holds CubeFanIn of them; a small cube is
// cut into at least Options.CubeFiles files. Files it clusters carry
// clusteringProvider "liquid" (a single-file rewrite keeps its input's). Files
// clustered by earlier clustering columns are left alone unless Full.
//
// Row tracking: on a table with delta.enableRowTracking every file OPTIMIZE writes
// carries the rows' stable row IDs and row commit versions in the hidden
// materialized columns (rowids.go), so rows keep them through any rewrite; the
// new files get fresh baseRowId and defaultRowCommitVersion from the commit.
//
// Plain compaction never undoes clustering: files with cube tags or a
// clusteringProvider are never merged with others (only rewritten alone, rows in
// order, to purge deleted rows or add Bloom filters). Options.MaxBytes bounds a run
// (scheduled maintenance), Options.Partitions and MinFiles serve auto-compaction.
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
//     at most once more (the re-split of their subtree writes them at leaves). A failed commit deletes its new tree files with its
//     data files.
//   - L2 (package log) Data files are written in full with put-if-absent under
//     unique names before the commit that references them.
//   - Cleanup of a failed batch never deletes the files of a commit whose outcome is
//     unknown (log.ErrCommitUnknown).
//
// # Column mapping
//
// On tables with column mapping (name or id mode) the plan works in logical names:
// input files are read by physical name (id mode: by Parquet field id), partition
// values and Options.Partitions are keyed by physical names as add actions key them,
// and the files written carry physical names (and field ids in id mode), statistics
// and Bloom tags keyed by physical names, as every other writer of the table does
// (datafile.Spec.Mapping). Liquid clustering columns come from the domain's physical
// names translated back to logical ones.
//
// # What it does not do
//
// Deletion vectors are applied while reading (deleted rows are dropped and the new
// files have none), but this package never writes deletion vectors. It does not
// index nested
// columns with Bloom filters nor persist Options.BloomFPP (only the column list is
// written to the table property), does not evaluate predicate text (callers pass Options.PartitionFilter),
// and does not split clustered output after the fact (that would make file key
// ranges overlap). Package table wraps it for users; the CLI renders plans and
// progress.
package optimize
