// Package skipping decides, per unit of a Delta table (partition, file, Parquet row
// group, page), whether a bound predicate (package expr) cannot match, might match
// or must match any of the unit's rows, from the unit's metadata alone.
//
// Levels and entry points:
//
//   - partitions: EvaluatePartition (exact: every row of a file has its partition
//     values);
//   - files: FileIndex (columnar, all files of a snapshot at once) and EvaluateFile
//     (one file, the reference implementation FileIndex is tested against); both
//     combine partition values and per-file statistics leaf by leaf;
//   - row groups: EvaluateRowGroups, from Parquet footer statistics;
//   - pages: EvaluatePages, from the Parquet column and offset indexes, as row
//     ranges to read.
//
// Planner runs the file-level passes for a whole snapshot in order (partition
// values, statistics, Bloom filters) and returns per file the verdict, the pass
// that decided it and the reason; scans, Count, explain and DML plan through it.
//
// Statistics may stay JSON until a predicate reads them (NewLazyFileIndex,
// PlannerOptions.Stats): a column's bounds are converted for every file the first
// time a predicate names it, with the parser projected to that column, straight into
// the column's typed bounds (stats.Parser.ParseColumns: nothing allocated per file),
// and kept; a plan without a predicate parses nothing. Its verdicts are those of the index
// built from the files' statistics parsed whole (tested against it). A column is
// converted over ranges of files on up to GOMAXPROCS goroutines, and so is an exact
// partition column filled; the result does not depend on the split.
//
// Invariants:
//
//   - S1 Skipping never drops a unit that holds a matching live row. A verdict of
//     CannotMatch needs a proof from bounds that are valid in Spark's total order;
//     missing, truncated, NaN-tainted, wrongly-typed or unparseable statistics give
//     MightMatch. Specifically: a NaN lower bound is ignored; a footer or page float
//     upper bound is replaced by NaN (footers ignore NaN, arrow-go G4); an empty
//     byte-array footer maximum is unknown (dropped for size, arrow-go G3); string
//     bounds are used as bounds only, never as attained values; decimal bounds at
//     another scale are rounded outward; with tightBounds=false only null counts of
//     0 or numRecords are used.
//   - S2 Each level states its precision. MustMatch is claimed only when the bounds
//     prove every row TRUE, which always needs a proof that no value is NULL.
//
// The rules are the baseline table of Spark's data skipping (see delta-notes.md)
// made tighter where provably safe: IN is decided per value instead of by the
// list's range, LIKE with a literal prefix before the first wildcard is decided by
// that prefix, NOT IN / <> / NOT LIKE skip files holding a single matching value,
// and AND/OR/NOT reach MustMatch.
//
// What it deliberately does not do: read data, build or store Bloom filters (package
// bloom; the Planner only probes them through a bloom.Cache), or
// column-to-column comparisons (always MightMatch); it does not rewrite predicates
// over expressions of columns (the language has none).
package skipping
