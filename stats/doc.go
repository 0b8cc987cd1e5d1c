// Package stats computes and reads Delta Lake per-file column statistics
// ("stats" of an add action): numRecords, minValues, maxValues, nullCount and
// tightBounds, nested like the table schema and keyed by physical column names.
//
// Write side: a Collector is fed the Arrow record batches of one data file and
// produces the statistics with Spark's rules (Config, which
// log.TableProperties.StatsConfig derives from the table properties): which
// leaf columns are indexed (delta.dataSkippingNumIndexedCols /
// delta.dataSkippingStatsColumns, partition columns excluded), min/max only for
// numbers, decimals, dates, timestamps and strings, strings cut to a prefix with a
// tie-breaker on the max, timestamps cut to milliseconds. ToJSON renders the result
// as the JSON string Delta readers expect.
//
// Read side: Parse (or a Parser built once per schema) reads the stats JSON of any
// writer (Spark, Delta Kernel, delta-rs, older or type-widened files) into a typed
// File whose bounds can be trusted. Parser.Project narrows a parser to the columns
// a filter reads, and Parser.ParseColumns converts them into columns the caller
// owns, allocating nothing per file (other keys are skipped, still validated), for
// converting one column of many files.
//
// Invariants kept here:
//
//   - S1 (from the design): a bound is never wrong. Every Min this package returns
//     is ≤ every non-null value of the column in the file and every Max ≥ (by
//     value.Compare; NaN greatest); where that cannot be guaranteed the bound is
//     NULL. On the write side: a string max is cut only with a tie-breaker, or left
//     out; timestamps are cut down; a NaN or ±Inf float bound, or a non-UTF-8 string
//     bound, is left out of the JSON. On the read side: a timestamp max is widened by
//     1 ms, a possibly cut string max is extended with U+10FFFF, a bound that does
//     not fit the column type (or would need rounding) is NULL.
//   - ST1: nullCount is exact on the write side and counts a leaf as null where any
//     enclosing struct is null; for lists and maps it counts null lists/maps.
//   - ST2: Parse fails only on malformed JSON (ErrSyntax); any well-formed input,
//     whatever its values, yields a File (fuzzed by FuzzParse).
//   - ST3: the JSON written by ToJSON parses back (Parse) to bounds that contain
//     every row of the file (property-tested round trip).
//
// What it deliberately does not do: it does not read Parquet footers or page
// indexes (stats are computed from the Arrow data while writing), does not parse
// the typed checkpoint column stats_parsed (the log package hands its values over),
// does not decide skipping (package skipping does), and does not collect distinct
// counts. Min/max are not collected for boolean, binary, list and map columns, as
// in Spark; unsigned 64-bit, decimal256, dictionary and time columns get nullCount
// only.
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package stats
