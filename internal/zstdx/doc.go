// Package zstdx is a zstd decoder (RFC 8878) written for the pages
// of Parquet files: a whole-frame decoder from memory into memory whose Huffman
// literal decoder uses double-symbol tables.
//
// Why: a full table scan of text columns spends about half its CPU in klauspost's
// Huffman literal decoder (one symbol per table lookup). HuffTable looks up 11 or
// 12 bits at once (chosen per table from its code lengths) and gets every symbol
// whose code those bits hold, one or two; on literals of random text two almost
// always. internal/datafile decodes the literal-heavy pages of Parquet files with
// it and every other page with klauspost's decoder (datafile's D15); see
// BENCHMARKS.md, "A zstd literal decoder of our own" and "zstdx decodes the
// literal-heavy pages".
//
// Invariants:
//   - Input is untrusted. Every length, count, table description and bitstream is
//     checked before use; malformed input gives an error wrapping ErrCorrupt (or
//     ErrTooLarge, ErrUnsupported) that names the part and the position, never a
//     panic. Frames with a content checksum are verified (XXH64, low 32 bits).
//   - The four-stream Huffman loop reads and writes through unsafe pointers only
//     within bounds computed before the loop for the worst case of every round
//     (most bits a step consumes, most bytes it writes), independent of the data;
//     the streams' last bits and outputs' last bytes are decoded by the checked
//     one-symbol path, which also checks that each stream is consumed exactly.
//     huffman.go (decodeFour11) writes down the bound of every unsafe load and
//     store; the guard-page tests and fuzz target check them.
//   - Decoded bytes equal klauspost's decoder's for every frame both accept
//     (differential tests and fuzz target in this package).
//   - Dictionaries are not supported (ErrUnsupported); windows above
//     Decoder.MaxWindow (default 128 MiB) are refused (ErrTooLarge).
package zstdx
