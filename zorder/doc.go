// Package zorder computes Morton (Z-order) keys: it interleaves the bits of N
// unsigned rank values into one sortable key, so that sorting by the key
// clusters rows on all N columns at once. It is a pure key function used by
// OPTIMIZE (range partitioning by key) and by the skipping benchmark.
//
// # Key layout
//
// Bits are interleaved most significant first, in column order: the top bit of
// the key is the top bit of column 0, then the top bit of column 1, ..., then
// the second bit of column 0, and so on. A key of T bits is right-aligned in a
// 128-bit [Key] (Key[0] holds the high 64 bits), so a key of at most 64 bits is
// numerically equal to the uint64 returned by the 64-bit API. Keys compare with
// [Key.Compare], or as bytes with bytes.Compare on [Key.Bytes].
//
// # Invariants
//
//   - Z1 (order): for keys produced by one [Encoder] (or one bits layout of the
//     reference), Key order is the lexicographic order of the interleaved bit
//     string; in particular a point whose ranks are all ≤ another's has a key ≤
//     the other's.
//   - Z2 (bijection): [Encoder.Decode] inverts [Encoder.Encode] for every input
//     in range; ReferenceDecode inverts ReferenceEncode.
//   - Z3 (agreement): the fast [Encoder] and the bit-by-bit [ReferenceEncode]
//     return identical keys for equal bits per column (tested exhaustively on
//     small sizes and by FuzzMortonMatchesReference).
//   - Z4 (no silent truncation): a rank ≥ 2^bits is an error naming the column
//     and row, never masked.
//
// # Unequal bits
//
// [ReferenceEncode] accepts a different number of bits per column. Ranks are
// aligned at their most significant bit: at interleave level l (0 = most
// significant) column c contributes its bit bits[c]-1-l when l < bits[c], so a
// coarse column simply drops out of the lower levels. The fast [Encoder]
// supports equal bits only, which is the main path.
//
// # What it does not do
//
// It does not turn values into ranks (see internal/rank), does not sort, and
// does no I/O. It holds no state beyond lookup tables built at init, and every
// function is safe for concurrent use.
package zorder
