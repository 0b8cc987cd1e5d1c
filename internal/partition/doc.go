// Package partition serializes Delta partition values and builds Hive-style partition
// directory names and the percent-encoded paths the log records.
//
// Three encodings meet here, each undone by the matching reader:
//
//  1. Partition value serialization (PROTOCOL.md "Partition Value Serialization"):
//     typed value -> the string in add.partitionValues ([Format], [Parse]).
//  2. Hive directory escaping (Spark's escapePathName): that string -> a directory name
//     segment "col=value", with a fixed set of ASCII characters written as %XX
//     ([EscapePathName], [DirName]).
//  3. URI path encoding (RFC 3986): the relative file path -> add.path in the log
//     ([EncodeLogPath], [DecodeLogPath]). The '%' of step 2 is encoded again, which is why
//     Spark's logs hold "as_timestamp=2021-09-08%2011%253A11%253A11".
//
// Invariants:
//
//   - P1 (round trip) For every value of a supported type, Parse(Format(v)) == v, and
//     UnescapePathName(EscapePathName(s)) == s, DecodeLogPath(EncodeLogPath(p)) == p.
//   - P2 (nulls) NULL is written as a JSON null (isNull) and as the directory value
//     __HIVE_DEFAULT_PARTITION__; on read both a null and an empty string mean NULL for
//     every type, strings included (the protocol says so, and Spark never writes an
//     empty string partition value).
//   - P3 (Spark spelling) Values are written as Spark writes them: Java's Double.toString
//     for floats ("1.0", "1.0E10", "NaN", "Infinity"), plain decimals with exactly the
//     column's scale, timestamps in ISO 8601 adjusted to UTC with microseconds
//     ("2024-03-01T10:00:00.000000Z", PROTOCOL.md's recommendation) and timestamp_ntz
//     as "YYYY-MM-DD HH:MM:SS[.ffffff]" (no zone; trailing zeros of the fraction
//     dropped). Directory names spell a timestamp as Spark's cast to string does in
//     UTC, "YYYY-MM-DD HH:MM:SS[.ffffff]" ([DirValue]); readers accept both forms for
//     timestamps ([Parse]).
//   - P4 (distinct directories) DirName maps different partition values to different
//     directories: NULL is DefaultPartitionName, and the string "__HIVE_DEFAULT_PARTITION__"
//     (a legal value of a string column) is written "%5F_HIVE_DEFAULT_PARTITION__", which
//     unescapes to the string. Writers key a partition's open files by its directory.
//
// What it deliberately does not do: it refuses to write binary partition values (Spark's
// spelling of arbitrary bytes is not pinned down by the protocol); it does not evaluate
// partition predicates (package skipping does); it never derives values from directory
// names — the log is the only source of partition values.
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package partition
