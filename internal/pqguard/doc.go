// Package pqguard reads Parquet files that may be damaged without letting arrow-go's
// decoder crash the process. arrow-go v18.8.0's Parquet reader panics on some damaged
// inputs instead of returning an error (a nil page header, an invalid logical type, a
// makeslice with a corrupt length, an encoding it does not implement); the upstream
// issue class is apache/arrow#43605. Every reader of Parquet that skiplake did not just
// write itself — data files (internal/datafile) and checkpoints and sidecars (log) —
// uses the two defences here, in this order:
//
//  1. validate what the footer says before anything is decoded: [ValidateFooter]
//     (row counts add up, every column chunk, page index and Bloom filter lies inside
//     the file, the row groups have the schema's columns; the largest column chunk it
//     returns bounds every page, see [BoundPages]) and [CheckArrowSchema] (the lengths
//     inside the ARROW:schema entry, which arrow-go allocates before it reads them).
//     Most damage is refused here with a precise message.
//  2. contain what validation cannot see (page headers, encoded values) at the call
//     into the decoder: a function that does nothing but call one arrow-go entry point
//     defers [Guard.Contain], which turns a panic raised inside it into an error
//     wrapping [ErrDecoderPanic]. Nothing of skiplake's own code may run under such a
//     recover (callbacks and conversions run outside it), so a bug of ours still
//     crashes loudly; a decoder that panicked is not used again.
//
// Invariant G1: validation comes first because containment cannot reach every panic.
// pqarrow builds the readers of a struct's children on goroutines of its own
// (errgroup), and a panic there cannot be recovered by the caller; what those
// goroutines do (read a column chunk's byte range, start its page reader) is exactly
// what [ValidateFooter] checks beforehand.
//
// What it deliberately does not do: it decodes nothing itself and knows nothing of
// Delta; errors carry no package prefix (the caller names the file and wraps them into
// its own corrupt-file error).
package pqguard
