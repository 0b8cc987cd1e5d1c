// Package render turns Arrow record batches into the CLI's stable output formats:
// an aligned text table, JSON Lines, CSV and Parquet.
//
// Cell formatting is defined here once so every format agrees: decimals print with
// their exact scale, dates as YYYY-MM-DD, timestamps as ISO-8601 with microseconds
// (UTC timestamps end in "Z", timestamp_ntz has no zone), binary as base64 in JSON and
// hex in text, floats with the shortest representation that round-trips (NaN, Infinity).
//
// CSV tells NULL from the empty string as PostgreSQL and DuckDB do: NULL is an empty
// unquoted field, the empty string is "" (Options.Null picks another NULL spelling).
// The text table escapes control characters (a newline prints as \n) so every row is
// one line.
//
// Every writer streams: the text table holds at most Options.Window rows (to size its
// columns from them) before it prints, so memory does not grow with the result.
// Writers are not safe for concurrent use.
package render
