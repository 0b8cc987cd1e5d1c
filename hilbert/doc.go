// Package hilbert computes N-dimensional Hilbert indexes: it maps a point of
// 1 to 8 unsigned coordinates (ranks) of equal bit width to its position along
// a Hilbert curve that fills the cube [0, 2^bits)^dims. Sorting rows by the
// index clusters them on all dimensions, with better locality than Z-order:
// consecutive indexes are always neighbouring cells. It is a pure key function
// used by OPTIMIZE and the skipping benchmark.
//
// The curve is the one defined by Skilling's transform ("Programming the
// Hilbert curve", AIP Conf. Proc. 707, 2004): coordinates are transformed to a
// "transposed" index whose bits, interleaved most significant first with
// dimension 0 first, form the index. Indexes use the layout of zorder.Key:
// right-aligned in 128 bits, Key[0] high.
//
// # Invariants
//
//   - H1 (bijection): Decode(Encode(p)) = p for every in-range point, so every
//     index in [0, 2^(dims*bits)) belongs to exactly one point.
//   - H2 (adjacency): the points of indexes i and i+1 differ by exactly 1 in
//     exactly one coordinate (Manhattan distance 1).
//   - H3 (origin): index 0 is the origin.
//   - H4 (agreement): the fast Curve (table-driven state machine for 2..5
//     dimensions, a branch-free loop for 6..8) and the plain ReferenceEncode
//     return identical indexes; tested exhaustively on small sizes and by
//     FuzzHilbertMatchesReference.
//   - H5 (identity): with one dimension the index is the coordinate itself (a
//     1-D Hilbert curve is the identity), so callers with a single clustering
//     column may use the plain rank.
//
// # What it does not do
//
// It does not support unequal bits per dimension (scale coarse ranks up
// instead), does not turn values into ranks (see internal/rank), does not sort
// and does no I/O. State-machine tables are built lazily, once per dimension
// count, and shared read-only; all functions are safe for concurrent use.
package hilbert
