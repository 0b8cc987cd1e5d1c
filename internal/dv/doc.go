// Package dv reads and writes Delta deletion vectors: the sets of row positions of a
// data file that are deleted.
//
// A deletion vector is named by a [Descriptor] (the log's deletionVector object): stored
// inline in the log (storage type 'i'), in a file named by a UUID relative to the table
// root ('u'), or in a file at an absolute path ('p'). The bitmap is a 64-bit RoaringBitmap
// in the portable format behind a magic number; files hold a version byte and, per
// vector, a big-endian size, the bitmap and a big-endian CRC-32 (PROTOCOL.md, "Deletion
// Vector Format"):
//
//	file:   | version=1 (1 byte) | DV | DV | ...
//	DV at descriptor.offset:
//	        | dataSize int32 BE | magic 1681511377 int32 LE | portable roaring64 ... | CRC-32 BE of magic+bitmap |
//	        |<------ 4 ------>|<----------------- dataSize = sizeInBytes -------->|<----- 4 ------>|
//
// Reading: [Load] (whole DV file through a GetFunc) and [LoadRange] (only the vector's
// range, through an OpenFunc; use it when DV files hold many vectors). Writing:
// [FileWriter] appends vectors to one file and returns their descriptors; [Write] stores
// the vectors of one commit through a storage.Storage (streamed, packed into files of
// about [DefaultTargetFileSize], optionally inline) and returns log descriptors; [Union]
// merges a file's existing vector with new deletions; [Descriptor.ToLog] and [FromLog]
// convert to and from the log's descriptor; [UUIDDescriptor] and [Descriptor.Absolute]
// build 'u' and 'p' descriptors.
//
// Invariants:
//
//   - V1 (verified) [Load] and [LoadRange] return a bitmap only after checking the
//     version byte, the size against the descriptor, the magic number, the checksum, that
//     the bitmap bytes are consumed exactly, that no row position has its top bit set,
//     and that the cardinality equals the descriptor's. Any failure is an error naming
//     the file and offset; a deletion vector is never half-applied.
//   - V2 (contained) Only paths inside the table root are read: 'p' descriptors pointing
//     elsewhere are refused.
//   - V3 (byte-compatible) A vector is serialized exactly as Spark serializes it: every
//     Spark-written vector of the golden tables re-encodes to the same bytes, file by
//     file. The one documented difference (Spark also writes empty 32-bit buckets below
//     the highest one) only arises for row positions of 2^32 and above; see
//     [SerializeBitmap].
//   - V4 (durable before referenced) [Write] returns descriptors only once every DV file
//     they name is published; on failure it removes what it published.
//   - V5 (rows that exist) A vector is applied or counted only after
//     [Deleted.CheckRows] has checked that every position it deletes is below the
//     data file's row count; every reader (the data-file reader, the metadata-only
//     count, [Union]) makes that one check, so a vector naming rows a file does not
//     have is an error, never a silently ignored or subtracted row.
//   - D1 (a deletion vector only grows; package table's DML invariant) [Union] returns
//     a superset of the old vector; the log's ReplaceDeletionVector refuses a smaller
//     cardinality.
//
// What it deliberately does not do: it does not cache vectors across calls (the table
// layer does), does not write the log (package log builds the add/remove pair), and
// never rewrites an existing DV file: a grown vector goes to a new file.
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package dv
