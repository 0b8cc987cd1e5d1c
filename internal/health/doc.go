// Package health measures how well a table's files are laid out for data skipping,
// from what the transaction log records about each file (size, row count, tags,
// per-column min/max) — no data file is read.
//
// # The range model
//
// Skipping on a column sees each file as the closed interval [min, max] of its
// values, so every metric here is defined on those intervals. The distinct endpoint
// values e0 < e1 < ... < e(m-1) of all files cut the column's domain into pieces:
// the points [ei] and the open gaps (ei, ei+1), 2m-1 pieces in all. A file covers
// the pieces from [min] to [max]; its live rows are assumed spread evenly over the
// pieces it covers (the only assumption: the log knows no finer distribution). That
// gives every piece p a row weight w(p) and a depth d(p), the number of files a
// query for a value in p cannot skip. A file whose statistics lack bounds for the
// column (but that has non-null values) covers every piece; a file whose values are
// all null covers none (a comparison with a non-null value never reads it).
//
//   - Average depth = Σ w(p)·d(p) / Σ w(p): how many files a point query reads for the
//     value of a random row (Snowflake's clustering depth, row-weighted).
//   - Point read % = average depth / files × 100.
//   - Range read % for a fraction q: the rows laid out along the pieces in order
//     form a line of length W = Σ w(p); a query selecting the fraction q of the rows
//     is a window [s, s+qW] with s uniform in [0, (1-q)W]; it reads every file that
//     covers a piece the window touches. The expectation over s is computed exactly.
//
// Everything is a function of the per-file (min, max, rows) triples, so the same
// numbers follow from the data by computing each file's min and max from its rows:
// the tests check that, and check the sweep used here against a direct evaluation.
//
// This package does not read the log itself: package table gathers the inputs.
package health
