// Package rank normalises clustering columns into small unsigned ranks for
// Z-order and Hilbert keys, so that the curves work on the distribution of the
// data rather than on raw bytes: a column whose values crowd into a narrow
// range, or share a long common prefix, still spreads over the whole rank
// space.
//
// Points (exact cut values, as a workload tree's) is the exact counterpart.
//
// One column at a time: a [Sampler] draws a seeded reservoir sample of the
// column's values (from Arrow arrays, or value.Value for tests), then
// [Sampler.Boundaries] turns the sample into equal-frequency cut points, and
// [Boundaries.Ranks] maps arrays to ranks by binary search.
//
// Supported Arrow types: int8..int64, uint8..uint64, float16/32/64, boolean,
// date32/64, time32/64, timestamp (any unit and zone, one per column),
// duration, decimal128, and utf8, large_utf8, utf8_view, binary,
// large_binary, binary_view, fixed_size_binary compared in full (no prefix
// truncation).
//
// # Invariants
//
//   - R1 (nulls): NULL ranks 0; every non-null value ranks in 1..B, B =
//     NumBuckets() < 2^bits.
//   - R2 (monotone): each value v has a span [lo(v), hi(v)] that contains every
//     rank it is given, and a < b implies hi(a) ≤ lo(b). Floats follow Spark
//     order: -0 = 0, NaN after +Inf. Strings and binary compare byte-wise.
//   - R3 (deterministic): the sample depends only on the seed and the sequence
//     of values (not on how they are split into arrays); a rank depends only on
//     the value and its row position.
//   - R4 (heavy hitters): a value filling more than one bucket's worth of the
//     sample spreads its rows over every rank of its span by a hash of the row
//     position, so no single rank — and no output file cut on rank ranges —
//     has to hold all of its rows.
//   - R5 (equal frequency): buckets hold about the same number of rows; exactly
//     one sample value each when the sample holds every value and values are
//     distinct.
//   - R6 (exact slots) Points maps every value to a slot among explicit cut
//     values such that a comparison with any cut value is decided by the slot
//     alone (see Points); NULL has slot 0.
//
// # What it does not do
//
// It does not build keys (see zorder and hilbert), does not read files, and
// does not merge samplers. Dictionary, nested, interval and decimal256 columns
// are rejected with ErrUnsupportedType. It is internal because its rank
// definition is an implementation detail of OPTIMIZE and the benchmark.
package rank
