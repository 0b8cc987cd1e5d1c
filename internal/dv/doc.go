// Package dv reads (and, for tests and future DELETE support, writes) Delta deletion
// vectors: the sets of row positions of a data file that are deleted.
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
// Invariants:
//
//   - V1 (verified) [Load] returns a bitmap only after checking the version byte, the size
//     against the descriptor, the magic number, the checksum, that the bitmap bytes are
//     consumed exactly, that no row position has its top bit set, and that the
//     cardinality equals the descriptor's. Any failure is an error naming the file and
//     offset; a deletion vector is never half-applied.
//   - V2 (contained) Only paths inside the table root are read: 'p' descriptors pointing
//     elsewhere are refused.
//
// What it deliberately does not do: it does not cache vectors across calls (the table layer
// does), does not write the log, and does not rewrite or merge existing DV files.
package dv
