// Package input reads the files a program loads into a table — CSV, JSON Lines and
// Parquet — as Arrow record readers (array.RecordReader), the form table.Write and
// table.Merge take. CSV and JSONL values are typed by a target schema, or by a
// schema InferSchema infers from the files themselves; Parquet keeps the file's own
// types. The CLI's append and merge read their inputs through this package.
//
// The entry points: NewCSVReader and NewJSONLReader (any io.Reader), OpenParquet (a
// local file), Source (a named file or stream) with Source.Reader, InferSchema over
// several sources, and Concat, which streams several sources as one reader and says
// which source a row came from.
//
// # Typing (every reader)
//
// A value that does not fit its column exactly is an error, never a NULL, a rounded
// or a truncated value: 31.5 or "31" into a bigint, 1e400 into a double, 1.234 into
// decimal(10,2), a zone on a timestamp_ntz value, sub-millisecond digits into a
// millisecond timestamp. Booleans are true/false (any case), dates YYYY-MM-DD,
// timestamps YYYY-MM-DD[ HH:MM:SS[.ffffff]][Z|+HH:MM] (a wall clock without zone is
// taken as UTC); in CSV, binary is the cell's bytes or 0x followed by hex, and
// struct, array and map cells are JSON text; in JSONL, binary is base64, NaN and the
// infinities are strings, and a map is an object or a list of {"key","value"}
// objects. JSON text is parsed strictly: duplicate keys and invalid UTF-8 are errors
// (not the last key or U+FFFD), nesting is bounded at 512 levels.
//
// Columns are matched by name, exactly, else ignoring case (Delta column names are
// case-insensitive); two keys naming one column, and a key or header column the
// schema lacks, are errors (a value is never dropped silently).
//
// # NULL spellings
//
//   - CSV: an empty cell, NULL and null are NULL — except a quoted cell in a string or
//     binary column, where "" is the empty string and "NULL" the string NULL (what
//     skiplake scan --format csv writes, as PostgreSQL's and DuckDB's COPY do). In
//     other columns quotes change nothing: "" in a number column is NULL. A schema
//     column the header lacks is NULL in every row.
//   - JSONL: null and a missing key are NULL.
//   - NULL in a NOT NULL column is an error naming the column.
//
// # Inference
//
// InferSchema reads every CSV and JSONL source completely (a column first seen on the
// last line is kept) and gives every column a type from the values it holds, nulls
// aside; columns keep the order in which they are first seen, spelled as first seen,
// and are all nullable. Per value:
//
//   - CSV: true/false (any case) is boolean; an integer that fits 64 bits, without a
//     leading zero, is bigint; a decimal or exponent number (or NaN, Infinity, Inf)
//     without a leading zero is double; YYYY-MM-DD is date; a timestamp as above is
//     timestamp (UTC, microseconds); anything else is string. So zip codes and ids
//     with leading zeros, integers beyond 64 bits and timestamps with sub-microsecond
//     digits stay strings: their values survive exactly.
//   - JSONL: true/false is boolean, an integer is bigint (beyond 64 bits is an error:
//     give the schema), any other number is double (out of range is an error), a
//     string is string, an array or object is an error (give the schema).
//
// Types then widen across values and sources: bigint and double make double, date
// and timestamp make timestamp, any other mix makes string; a column holding only
// NULLs is string. A CSV header with an empty or repeated (ignoring case) name, and a
// JSONL object with two keys naming one column, are errors. A source that can be read
// only once (Source.Once) is refused with ErrReadOnce.
//
// # Error positions
//
// Every error names its input, and the place in it where the reader knows one:
//
//   - CSV: "name:line:column: column "c": ..." for a value (line and column in bytes,
//     from 1, where the field starts), "name:line:column: ..." for a syntax error
//     (encoding/csv's rules and positions), "name:line: N fields, but the header has
//     M" for a short or long record, "name: header: ..." for the header.
//   - JSONL: "name:line:column: invalid JSON: ..." for a syntax error (column = byte
//     offset + 1), "name:line: field "f": ..." for a value, "name:line: ..." for a
//     line that is not an object or names an unknown column.
//   - Concat adds "name: " to a source's error whose message lacks the name, and
//     Concat.Locate maps a row number the consumer reports (as table.CastError does)
//     to the source and the row's position in it.
//
// Readers are not safe for concurrent use. The caller releases every reader;
// releasing one closes its file (and a CSV or JSONL reader's io.Reader when it is an
// io.Closer; Stream never closes its reader). Batches are valid until the next call
// of Next. CSV and JSONL batches hold up to 16Ki rows, Parquet batches 64Ki.
//
// Some messages suggest the CLI's flags (--schema, --merge-schema) as the remedy: the
// texts are shared with skiplake's append and merge, whose output is a contract.
package input
