// Package benchskip is the skipping-ratio benchmark behind `skiplake bench
// skipping`: it measures how many files a data layout makes a query read,
// against the best any layout of the same number of files could do.
//
// Everything happens in memory, seeded and deterministic (apart from timings):
//
//  1. Generate a dataset: TPC-H lineitem at a scale factor, from this
//     package's own generator following the TPC-H specification (§4.2.3;
//     GenerateLineitem), or a synthetic table of uniform, Zipf, lognormal,
//     correlated, long-shared-prefix string and UUID columns
//     (GenerateSynthetic).
//  2. Lay the rows out into Config.Files files of equal row counts (±1) with
//     each layout: insertion order; a lexicographic sort; Z-order on raw
//     value bytes (the delta-rs way, as a control); Z-order and Hilbert on
//     equal-frequency ranks (internal/rank + zorder / hilbert); and a
//     median-split k-d tree, the reference for the best layout that does not
//     know the queries. Each file is in its layout's key order and is cut into
//     Config.RowGroups row groups.
//  3. Compute per-file and per-row-group statistics exactly as a Delta writer
//     does: the data-file layer's Summary (internal/datafile: the statistics and
//     Bloom filter a file's add action and index entry carry) per file, and
//     stats.NewCollector per row group; with Config.ParquetBytes the files are
//     encoded by the same layer, row groups cut where the layout says.
//  4. Run workloads: random boxes on 1–4 clustering columns at a selectivity
//     (each column's range covers selectivity^(1/d) of its quantiles), point
//     lookups of present and absent keys with and without per-file Bloom
//     filters (package bloom), and a range on a column no layout clusters on.
//     Predicates are expr.Parse text bound with expr.Bind; files and row
//     groups are kept or skipped by skipping.FileIndex.
//  5. Report per layout × workload: % files and % bytes read, the ratio of
//     files read to the lower bound ceil(matching rows / max rows per file)
//     (geometric mean and p90), row groups read and planning time; as a text
//     table, JSON, and SVG charts.
//
// # Invariants
//
//   - K1 (same files): every layout is a permutation of the same rows and
//     cuts them into the same number of files with the same sizes (file f
//     holds rows [f·N/F, (f+1)·N/F) of the layout's order).
//   - K2 (exact truth): matching row counts are exact (counted on dense
//     order codes, not estimated), so the lower bound is a true bound: with
//     sound skipping (package skipping's S1) files read ≥ lower bound for every
//     query.
//   - K3 (cross-check): for every query and file, package skipping's verdict
//     is compared with a direct box-intersection test on the typed min/max
//     (value.Compare); disagreements are counted in Cell.CrossCheckMismatches.
//   - K4 (determinism): equal Configs give equal data, layouts, queries and
//     figures; only the timing fields differ between runs.
//
// # Definitions
//
// Raw Z-order takes each value's order-preserving byte encoding (big-endian
// with the sign bit flipped for integers, dates and decimals at their Arrow
// width; the IEEE total-order transform for floats; the bytes of strings),
// truncated or zero-padded to 16 bytes, and interleaves the bits of those
// 16-byte strings, column 0 first at each level. The ratio uses
// max(files read, 1) / max(lower bound, 1) so that a query matching nothing
// scores the files it still reads. Bytes are estimated from Arrow sizes
// (fixed width, or 4 offset bytes plus the data of strings) over all columns
// of the dataset, including those no query touches.
//
// # What it does not do
//
// It writes no Delta table and no Parquet (bytes are estimates, not file
// sizes), does not time scans, and does not run queries in parallel. Row
// groups are skipped from the same Delta-style statistics as files (not from
// Parquet footers), and Bloom filters are per file, not per row group. The CLI
// wiring (flags, progress bar) lives in cmd/skiplake.
//
// The package is internal: it is a measuring instrument of this repository, not
// an API. Programs that want a layout recommendation for their own table and
// workload use package advise (advise.Table, advise.Simulate).
package benchskip
