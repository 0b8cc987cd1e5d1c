// Package render turns Arrow record batches into the CLI's stable output formats:
// an aligned text table, JSON Lines, CSV and Parquet.
//
// Cell formatting is defined here once so every format agrees: decimals print with
// their exact scale, dates as YYYY-MM-DD, timestamps as ISO-8601 with microseconds
// (UTC timestamps end in "Z", timestamp_ntz has no zone), binary as base64 in JSON and
// hex in text, floats with the shortest representation that round-trips (NaN, Infinity).
//
// Writers buffer only what their format needs (the text table buffers all rows to size
// its columns; the others stream). They are not safe for concurrent use.
package render
