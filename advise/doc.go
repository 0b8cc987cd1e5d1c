// Package advise recommends a data layout for a table from the filters it is
// read with: which columns to cluster on and how (a plain sort, a Z-order or a
// Hilbert curve over ranks, or a workload tree, package qdtree), predicted from
// a sample of the table's rows, with the command that applies the winner.
//
// Table draws a uniform sample of the rows (only the columns the workload
// filters on, and partition columns), lays the sample out with every candidate
// exactly as OPTIMIZE would (per partition, the curves' keys from
// optimize.ClusterKeys cut into equal files, the trees from qdtree.Build with
// the columns `optimize --layout workload` cuts given the candidate's command:
// its --workload-columns, then the workload's other columns), builds
// Delta statistics for the simulated files, and plans every filter against them
// with package skipping, as a scan does. The current layout is measured on the
// table itself: each filter is planned against the real files. Per candidate the
// report gives the weighted mean share of files read and its ratio to the lower
// bound ceil(matching rows / rows per file), whose matching rows are counted
// exactly on the sample. Simulate does the same for rows given directly.
//
// Every column the workload filters on that can be clustered is a candidate
// column: each gets a plain sort, and the Options.MaxColumns heaviest are also
// combined into multi-column curves. Table plans every candidate's command as
// an OPTIMIZE dry run on the table (table.Optimize, the validation and planning
// `skiplake optimize` runs) and leaves out those OPTIMIZE refuses, saying why in
// Report.Notes; on a clustered table that is every explicit curve and workload
// layout. A liquid-clustered table is modelled as OPTIMIZE clusters it: a
// Hilbert curve over its clustering columns (candidate kind "liquid", applied by
// `optimize --full`); other clustering columns are set with `alter
// --cluster-by`, which a note names, with the best refused curve's figures when
// it would read fewer files.
//
// Predict models one planned rewrite the same way (`optimize --dry-run
// --queries`): the current layout measured on the table, the planned curve or
// workload tree simulated on a sample, both as files and bytes a query reads.
//
// # Sampling and file counts
//
// Candidates are compared with the current layout at equal file counts: by
// default they have as many files as the table has now (Options.Files, or a
// TargetFileSize that implies another count, ranks them at that count; the
// current layout is then listed but never recommended). The sample keeps each row with
// probability SampleRows/rows (default 200 rows per file, between 100,000 and
// 2,000,000 rows), so each simulated file holds a few hundred sample rows; with
// fewer than MinSampleRowsPerFile per file the simulation uses fewer, larger
// files and says so in Report.Notes. File statistics from a sample are slightly
// narrower than the table's (the extremes of a file are rarely sampled), which
// flatters every candidate alike; the ranking is what the advisor is for.
//
// # Invariants
//
//   - A1 (same rules) simulated files are skipped by package skipping from
//     Delta-style statistics (min, max, null count) of their sample rows, so a
//     candidate's figures are what its files' statistics would let a scan skip
//     on the sample.
//   - A2 (true bound) the lower bound of a candidate uses its own largest file:
//     no layout with files of that size reads fewer (ratios are ≥ 1).
//   - A3 (determinism) equal tables, workloads and options give equal reports.
//   - A4 (applicable) every candidate Table reports other than the current
//     layout is one OPTIMIZE accepts on the table's measured version.
//   - A5 (no empty rewrites) a rewrite is recommended only when it reads more
//     than 2% fewer files than the current layout at the same file count;
//     otherwise Best is the current layout and Report.Warnings says a rewrite
//     would gain nothing.
//
// # What it does not do
//
// It does not change the table (Report.Best.Command does that), time queries,
// estimate bytes beyond rows (the current layout's rows-read share is its bytes
// share), model Bloom filters or row groups, or truncate string statistics to 32
// characters as writers do.
package advise
