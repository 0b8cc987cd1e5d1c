// Package bloom is skiplake's Bloom-filter index: it lets planning skip data files
// for `col = literal` and `col IN (...)` on high-cardinality columns (UUIDs, e-mail
// addresses, order ids) where min/max statistics cannot help. No open Delta
// implementation has such an index; it lives beside the table in index files that
// the log points to, so other Delta readers simply ignore it.
//
// # Pieces
//
//   - AppendCanonical: one byte encoding per Delta type, used identically when a
//     file is written and when a literal is probed.
//   - Builder → Filter: one filter per (data file, column), built while the file is
//     written (Add, or the Arrow fast path AddArray) and sized at Finish.
//   - WriteIndex / ReadIndex: the index file format ("SKLBLOOM", versioned, CRC32C).
//   - Tag, EncodeTag, DecodeTag, TagKey, NewIndexPath: how an add action names its index.
//   - Probe, Filter.MightContain, ProbeAny: testing literals, precomputed once per literal.
//   - Cache: per-snapshot, lazy, memoised, bounded-parallel loading of index files.
//   - ParquetWriterOptions, RowGroupMightContain: the native Parquet split-block
//     filters inside data files (row-group level; readable by every engine).
//
// # Canonical encoding
//
//	Delta type                  value.Kind        canonical bytes
//	byte, short, integer, long  KindInt64         int64, 8 bytes little-endian
//	date                        KindDate          days since epoch as int64, 8 bytes LE
//	timestamp, timestamp_ntz    KindTimestamp(NTZ) microseconds as int64, 8 bytes LE
//	float, double               KindFloat64       float64 bits, 8 bytes LE; -0 → +0,
//	                                              every NaN → 0x7ff8000000000000
//	decimal(p,s)                KindDecimal       unscaled integer at scale s,
//	                                              16 bytes LE two's complement
//	string                      KindString        raw UTF-8 bytes (no normalisation)
//	binary                      KindBinary        raw bytes
//	boolean                     KindBool          one byte, 0 or 1
//
// Integers are widened so a filter survives Delta type widening (int → long) and
// matches Parquet's PLAIN encoding of INT64. Float32 values are widened to float64
// exactly, so a float literal coerced to double probes the same bytes.
//
// No type tag is part of the key. A literal is always coerced to the column's type
// before probing, so only values of one kind meet in a filter; the filter records
// its kind (and decimal scale) in the index, and a literal of another kind gets the
// conservative answer "might contain" rather than a wrong skip. A decimal literal at
// another scale is rescaled exactly to the column's scale before hashing.
//
// # Sizing
//
// A Builder keeps the 64-bit XXH64 digest of every value's canonical bytes,
// deduplicating them (sort + compact) whenever its buffer fills, and builds the
// bloom/v3 filter at Finish from the exact distinct digest count n:
// m = ⌈-n·ln p / ln²2⌉ bits, k = ⌈ln 2 · m/n⌉ probes (k ≤ MaxK). The filter's key for
// a value is that digest as 8 little-endian bytes. This is exact (no NDV estimator
// error), needs one pass, and is bounded by the distinct values of one file, which
// the writer bounds by its target file size. Default p is DefaultFPP (0.01).
//
// # Index files: one segment per write
//
// An index file holds entries for many data files: the writer (append, OPTIMIZE)
// writes one index file per commit, covering exactly the data files that commit
// adds, at NewIndexPath() = "_delta_index/bloom/<uuid>.bin", and each of those add
// actions carries tags[TagKey] = {"v":1,"path":...,"cols":[...]}. Trade-offs
// against one index file per data file:
//
//   - Planning reads one object per commit that wrote indexed files instead of one
//     per candidate file; 10,000 files written by 50 commits cost 50 small reads,
//     done in parallel by Cache and shared by every file of the segment.
//   - Commit granularity: the segment is written (durable, under a fresh UUID name)
//     before the commit, like data files; a failed commit leaves an orphan index
//     file that VACUUM removes, never a wrong index.
//   - OPTIMIZE rewrites files into new ones and writes a new segment for them; the
//     old segment keeps entries for removed files, which are harmless because only
//     live add actions are probed (B1).
//   - VACUUM deletes a segment once no live add action's tag names it (files under
//     IndexDir older than the retention window and unreferenced).
//
// The byte layout is documented on the Magic constant block in index.go.
//
// # Invariants
//
//   - B1 An index covers exactly the files the log says it covers: a Filter is used
//     for a data file only when that file's add.tags[TagKey] lists the column and the
//     named index file holds an entry for exactly (add.path, column). A missing tag,
//     an unknown tag version, a missing, unreadable or corrupt index file, or a
//     missing entry makes the file "not covered", and an uncovered file is read.
//     Cache turns every such failure into a Warning and a nil Filter.
//   - B2 No false negatives: a value added to a Builder always tests positive in the
//     Filter built from it, after any round trip through WriteIndex/ReadIndex, for
//     every literal that equals it after coercion (including -0/+0, any NaN, and
//     decimals at another scale).
//   - B3 Corrupt input never panics: ReadIndex and DecodeTag validate every length
//     and count against the bytes present before allocating, and the CRC32C must
//     match before the structure is trusted.
//
// # What this package does not do
//
// It does not write or read the Delta log (the table layer puts the tag into add
// actions and hands Cache a loader), does not decide predicate semantics (the
// skipping package asks it about equality and IN only; NULL literals are not
// indexed and answer "might contain"), does not merge filters across files, and
// does not support range predicates, LIKE or nested/complex column types.
package bloom
