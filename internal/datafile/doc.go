// Package datafile is skiplake's one data-file layer: it writes and reads the Parquet
// data files of a Delta table. Every writer of data files — table writes, OPTIMIZE,
// the skipping benchmark, the CLI's Parquet export — goes through it; nobody else
// builds Parquet writers.
//
// Writing, from the top:
//
//	Output (one commit) ─► Roller (one partition: files cut at the target size)
//	                  └──► File (one data file: Parquet + statistics + Bloom filters → log.Add)
//	                            └─► Writer (Parquet encoding: row groups by size, page index)
//
// The pieces:
//
//   - [Output] takes a [Spec] built by the caller (schema, column mapping, target file
//     and row-group sizes, statistics configuration, Bloom columns, codec) and
//     writes the files of one commit through storage's streaming Creator: each file
//     is a hidden object until its Close publishes it with put-if-absent, complete
//     (L2). It collects the add actions and Bloom filters, writes the commit's Bloom
//     index file ([Output.WriteBloomIndex]) and removes everything it stored when the
//     commit does not happen ([Output.Discard]).
//   - [Roller] cuts a stream of batches into files of the target size by their
//     encoded size, slicing a batch where a file should end.
//   - [File] writes one file: Parquet through a [Writer], Delta statistics (package
//     stats) and Bloom filters (package bloom) computed from the Arrow data on a
//     goroutine of their own, and returns the file's log.Add.
//   - [Output.Stitch] writes one file from the row groups of existing files of the
//     Output's layout, copying their column chunks byte for byte (stitch.go: the byte
//     layout, and the rules a source must meet, each a [StitchRule]); with
//     MergeRowGroups it merges small row groups into row groups of the target size,
//     copying the data pages of columns without a dictionary and re-encoding the
//     others (merge.go). Compaction uses it to skip the decode and the re-encode.
//   - [Output.Export] writes the same byte-for-byte copy of the Output's files to an
//     io.Writer under the footer a re-encoded export of the table's logical schema
//     would have (export.go): the CLI's Parquet export of a whole table version.
//   - [Writer] encodes Parquet laid out for skipping: zstd, row groups cut by
//     compressed size so that a file has several, small data pages, a page index,
//     optional split-block Bloom filters, dictionary encoding chosen per column from
//     a sample of the first batch. Columns of flat schemas are encoded concurrently,
//     to the bytes pqarrow's writer would write (a test checks); schemas with nested
//     columns go through pqarrow's writer.
//
// Column mapping: under mode name or id, files carry the physical names of the Delta
// schema at every nesting level and its column ids as Parquet field ids (in both
// modes, as PROTOCOL.md asks of writers; readers match by id in id mode only);
// statistics, Bloom filters and partition values are keyed by physical names.
//
// The reader ([Open], [Reader.Read]) returns record batches that conform exactly to
// the Arrow schema the caller asks for, whatever writer produced the file. Read decodes
// flat columns (top-level, unrepeated integers, floats, dates, timestamps, strings and
// binaries) with arrow-go's column chunk readers straight into buffers of its own
// (flat.go), and every other column through pqarrow's record reader; ReadRanges uses
// pqarrow's column readers for all.
//
// Invariants:
//
//   - D1 (conformance) Every batch [Reader.Read] emits has exactly the requested schema:
//     the same fields, in the same order, with the same names, types, nullability and
//     metadata, at every nesting level. Columns are matched by Parquet field id, then by
//     physical name (field metadata delta.columnMapping.physicalName), then by name
//     (exact, then case-insensitive); a column the file lacks reads as all nulls.
//   - D2 (widening only) A file value is converted only along a lossless widening path
//     (integers to wider integers, decimals or doubles; float to double; date to
//     timestamp_ntz; decimal to larger precision/scale; any timestamp unit to micros;
//     INT96 to micros). Anything else is an error naming the column, never a silent cast.
//   - D3 (row positions) The firstRow passed with each emitted batch is the 0-based
//     position within the file (counted across all row groups) of the first row read
//     for it, so a deletion vector can be applied to the batch ([ApplyDeletionVector]).
//     With [ReadOptions.Deleted] the deleted rows are already gone (D6) and firstRow
//     still names the first row read, deleted or not.
//   - D4 (ownership) Batches passed to an emit callback are released when the callback
//     returns; a callback that keeps one calls Retain. The writer never closes the
//     io.Writer it was given, and never retains a batch after Write returns (what the
//     column goroutines still encode they hold references of their own to).
//   - D5 (row ranges) [Reader.ReadRanges] emits exactly the rows of the given ranges of
//     one row group, identical to the same rows of [Reader.Read] (D1-D4 hold). When no
//     requested column is repeated (list or map), it seeks each column to each range with
//     the offset index and streams the column chunk, so pages outside the ranges are
//     neither fetched nor decoded; with a list or map column it decodes the whole row group
//     and slices (correct, no I/O saved).
//   - D6 (deletion vectors) With [ReadOptions.Deleted] (loaded by [LoadDeletionVector],
//     the one place a log deletion-vector descriptor becomes a bitmap), Read and
//     ReadRanges emit exactly the rows whose file position the vector does not hold,
//     and never an empty batch. A vector that deletes a row position the file does not
//     have (at or beyond the footer's row count) makes Open fail with an error naming
//     the file and wrapping dv.ErrInvalidRows (dv's V5).
//   - D7 (streaming, concurrency) Read and ReadRanges stream column chunks through a
//     bounded buffer (ReadOptions.StreamBufferBytes; 64 KiB when seeking), so their
//     memory does not grow with row group size, and may run concurrently on one Reader
//     (each call has its own decoders over the shared footer).
//   - D8 (write determinism) The row groups and files a write produces depend on the
//     data and the options only — never on how far the column encoders have got: the
//     size estimate is the state recorded after the oldest slice in flight, plus the
//     Arrow size of the slices after it at a ratio learned from earlier row groups.
//     Files created from one [Probe] (FileOptions.Probe) start from its dictionary
//     choices and size model, not from what the Output's other files learned, so
//     files written concurrently depend on their own rows only; a Probe depends on
//     its rows and the Spec only. Likewise the files of rollers made with
//     [Output.NewOwnRoller] (size estimate, dictionary choices and size model
//     learned from that roller's own files) depend on that roller's rows only,
//     however many write side by side on the Output.
//   - D9 (nothing half-written) A file is visible in storage only after Close
//     succeeded; Abort, a failed Write or a cancelled Close leaves nothing, and
//     Output.Discard removes what a commit that did not happen would have referenced.
//   - D10 (damaged files) A file that is not valid Parquet, or that arrow-go's decoder
//     fails on, makes Open, Read, ReadRanges and a [Stream] (OpenStream) return a
//     [*CorruptError] (errors.Is [ErrCorruptData]) naming the file ([ReadOptions.Name]) and, where the damage lies
//     in data, the row group and column; they never panic. The footer is validated
//     before anything is decoded (chunks, indexes and Bloom filters inside the file,
//     row counts adding up, pages no larger than the largest chunk, the ARROW:schema
//     entry's lengths), so no length in a damaged file is allocated before it is
//     checked; what validation cannot see is contained where arrow-go's decoder is
//     called (contain.go), never around skiplake's own code. A storage read that
//     fails under them is not damage: it is a [*ReadError] (errors.Is [ErrReadFailed],
//     and the storage's own sentinels such as storage.ErrTransient), never a
//     CorruptError, even when arrow-go reports the bytes it did not get as a bad page
//     (every read goes through a watch that remembers the storage's errors).
//   - D11 (stitched files) A file [Output.Stitch] publishes holds exactly the
//     sources' rows, in source order then row-group order, in one row group per
//     source row group whose column chunks (dictionary page through last data page)
//     are the sources' bytes unchanged; the Bloom filters and column indexes are the
//     sources' bytes, the offset indexes the sources' page locations shifted by where
//     each chunk landed, and every footer offset (data, dictionary, Bloom filter,
//     column and offset index, row-group file offset) points at the copied bytes.
//     The footer is validated (as D10 validates a source's) before the file is
//     published; every source is validated before any of its offsets is used, and a
//     source that breaks a rule or is damaged leaves nothing stored (D9). Its
//     statistics are the merge of the sources' log statistics (stats.MergeJSON),
//     never the footers'.
//   - D12 (merged files) A file [Output.Stitch] publishes with
//     StitchOptions.MergeRowGroups holds exactly the sources' rows, in source order
//     then row-group order. Each row group is either one source row group of at
//     least MinRowGroupBytes copied as D11 copies it, or consecutive smaller source
//     row groups merged into one of at most the Spec's RowGroupBytes compressed
//     bytes (a merge whose re-encoded columns would exceed it is split). In a
//     merged row group, a column that has no dictionary in any of those sources
//     and is not a Bloom column is the sources' data pages byte for byte, one
//     source after the other; every other column is re-encoded by this package's
//     Writer with the Output's settings, under the output's Parquet schema
//     elements (checked). Every chunk's footer statistics (merged with arrow-go's
//     typed order of the column: exact where the sources' are; null counts summed;
//     no distinct count), column index (the pages' entries) and offset index (the
//     pages' shifted locations and first rows) describe exactly its pages, and
//     every footer offset points at the written bytes; the footer is validated
//     before the file is published, nothing is left on failure (D9), and the
//     statistics are the merge of the sources' log statistics, as in D11.
//   - D13 (shared arrays, R1) No Arrow array whose lazily computed state (null
//     counts, a dictionary's values array) is still unfilled is read by two
//     goroutines: [File.Write] and [Writer.Write] [Settle] a batch before the
//     statistics goroutine and the column encoders read it, and every caller that
//     hands a batch to other goroutines while it keeps reading it settles it first
//     (share.go lists them).
//   - D14 (exports by copy) A file [Output.Export] writes holds exactly the
//     sources' rows, in source order then row-group order, their column chunks,
//     Bloom filters and indexes copied and every offset shifted as D11 says, and
//     its footer is validated before it is written. Its Parquet schema elements,
//     column paths, column orders and key-value metadata are those of an empty
//     file this package's Writer writes for ExportOptions.Schema with default
//     options, which must differ from the sources' in names and field ids alone.
//     Every source is checked before the first byte is written: a source that
//     breaks a rule or is damaged leaves the writer untouched.
//   - D15 (zstd page decoding) Every zstd page this package's readers decode goes
//     through pageZstd.DecodeWithError (zstd.go). A page whose frame declares its
//     content size and whose first block's Huffman-coded literals (own tree)
//     regenerate at least 7/8 of that block (text pages; zstdxPage reads only the
//     headers, bounds-checked), decoded in place, is decoded by internal/zstdx, which
//     verifies the content checksum; every other page by klauspost's decoder. When
//     zstdx fails on a page, or its output is not the page header's size in place,
//     the page is decoded again by klauspost and that result is returned: decoded
//     bytes are klauspost's for every page it accepts, and every error a caller sees
//     is klauspost's.
//
// Reusing footers: [Reader.Footer] hands out what Open read (the validated footer, the
// Arrow schema and, loaded with one read when first needed, the page index region);
// Open with [ReadOptions.Footer] reads none of it again, and [FooterCache] keeps
// Footers under keys the caller chooses, bounded in bytes (LRU). A Footer is shared by
// concurrent Readers; its metadata's lazily computed state is settled before (R1).
//
// A Parquet file that is not a table's data file — a user's input to append or MERGE —
// is read whole, in the file's own schema, through a [Stream] ([OpenStream]), with the
// same D10 defences: flat columns as Read decodes them (flat.go), the others through
// pqarrow's record reader; its INT96 columns go through arrow-go (nanoseconds,
// 1677-2262).
//
// Callers choose row groups (after skipping with footer statistics or Bloom filters via
// [Reader.ParquetReader]) and, inside a row group, row ranges (from the page index). INT96
// timestamps are decoded exactly (0001-01-01 to 9999-12-31) for top-level columns; an INT96
// nested inside a struct, list or map goes through arrow-go, which fails outside the nanosecond range (1677-2262).
//
// Process-wide state, and why it stays: arrow-go finds Parquet codecs only in its
// process-wide registry, so this package puts its zstd codec in front of arrow-go's at
// init (zstd.go); the codec keeps arrow-go's behaviour for every other writer in the
// process and gives page-sized encoders only to the writers of this package, which ask
// for them through the compression level of their writer properties. A closed
// [BufferPool] hands its free buffers to a per-size-class cache (sync.Pool) that later
// pools of this package draw from; the Parquet writers' own buffers (never a caller's
// Arrow data) come from one closed pool of the process when the caller's allocator is
// Go's default, cleared before reuse as Go's allocator would hand them out. Nothing here reads the environment: every setting
// is an option ([WriterOptions], [ReadOptions], [PoolOptions], [Spec]).
//
// How the layer is used and what it costs: the repository README ("Packages") and
// BENCHMARKS.md.
//
// What it deliberately does not do: it does not commit (the caller puts the add
// actions into a transaction), read table properties (callers build the Spec), evaluate
// predicates or page indexes (package skipping decides which row groups and row ranges
// to read), or add partition columns to the files (they live in the add actions; readers
// add them back with [ConstantColumn]).
package datafile
