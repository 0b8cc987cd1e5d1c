package datafile

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Codec is a Parquet compression codec. The zero value is [CodecDefault] (zstd).
type Codec uint8

// The codecs.
const (
	CodecDefault Codec = iota // zstd
	CodecZstd
	CodecSnappy
	CodecGzip
	CodecLZ4 // written as LZ4_RAW
	CodecUncompressed
	CodecBrotli
)

// ParseCodec maps a delta.parquet.compression.codec value (log.TableProperties.
// ParquetCompressionCodec: lower case, already validated) to a Codec. "" (the
// property is unset) is CodecDefault. "none" is uncompressed; "lz4" and "lz4_raw" are
// both written as LZ4_RAW, the LZ4 framing Parquet specifies (the older Hadoop-framed
// LZ4 is deprecated by the format).
func ParseCodec(name string) (Codec, error) {
	switch name {
	case "":
		return CodecDefault, nil
	case "zstd":
		return CodecZstd, nil
	case "snappy":
		return CodecSnappy, nil
	case "gzip":
		return CodecGzip, nil
	case "lz4", "lz4_raw":
		return CodecLZ4, nil
	case "uncompressed", "none":
		return CodecUncompressed, nil
	case "brotli":
		return CodecBrotli, nil
	}
	return CodecDefault, fmt.Errorf("%w: unknown Parquet compression codec %q", ErrInvalidArgument, name)
}

// String names the codec as file names and messages spell it.
func (c Codec) String() string {
	switch c {
	case CodecSnappy:
		return "snappy"
	case CodecGzip:
		return "gzip"
	case CodecLZ4:
		return "lz4"
	case CodecUncompressed:
		return "uncompressed"
	case CodecBrotli:
		return "brotli"
	}
	return "zstd"
}

// Defaults applied by [WriterOptions] zero fields.
const (
	// DefaultTargetRowGroupBytes is the default row-group size: small enough that a
	// 128 MiB file has 8 row groups to skip between.
	DefaultTargetRowGroupBytes = 16 << 20
	// DefaultDataPageBytes is the default data page size: pages this small let the page
	// index skip inside a row group.
	DefaultDataPageBytes = 128 << 10
	// DefaultZstdLevel is the default zstd level.
	DefaultZstdLevel = 3
	// DefaultBloomFPP is the default false-positive probability of Bloom filters.
	DefaultBloomFPP = 0.01
)

// Dictionary says which columns start a row group dictionary-encoded. Whatever the
// choice, arrow-go falls back to plain encoding inside a column chunk whose dictionary
// outgrows the limit (16 data pages).
type Dictionary uint8

// The dictionary choices.
const (
	// DictionaryAuto (the default) decides per top-level column from a sample of the
	// first batch written (see chooseDictionary): a column whose values are mostly
	// distinct starts plain, so its values are never hashed into a dictionary that
	// would be thrown away; the others start dictionary-encoded. Nested columns keep
	// dictionary encoding.
	DictionaryAuto Dictionary = iota
	// DictionaryAll starts every column dictionary-encoded (arrow-go's default).
	DictionaryAll
	// DictionaryNone writes every column plain.
	DictionaryNone
)

// WriterOptions configures a [Writer]. The zero value is the documented default for
// every field.
type WriterOptions struct {
	// Codec is the compression codec; default zstd.
	Codec Codec
	// CompressionLevel is the codec level; 0 means the codec's default (zstd: 3).
	CompressionLevel int
	// TargetRowGroupBytes is the compressed size at which a row group is closed;
	// default DefaultTargetRowGroupBytes. Row groups overshoot it by at most one slice
	// of the incoming batch (about a quarter of the target).
	TargetRowGroupBytes int64
	// DataPageBytes is the target data page size; default DefaultDataPageBytes.
	DataPageBytes int64
	// DisablePageIndex turns off the column and offset indexes (on by default).
	DisablePageIndex bool
	// BloomColumns enables a Parquet split-block Bloom filter on each named top-level
	// column (or dotted leaf path). A positive value sizes every row group's filter
	// for that many distinct values; 0 (the usual) sizes each to its row group's own
	// distinct values, within BloomFPP (see "Bloom filter sizing" on Writer).
	BloomColumns map[string]int64
	// BloomFPP is the Bloom filters' false-positive probability; default DefaultBloomFPP.
	// Must be in (0, 1).
	BloomFPP float64
	// StoreDecimalAsInteger writes decimals of precision <= 18 as INT32/INT64 instead of
	// FIXED_LEN_BYTE_ARRAY. Off by default (FIXED_LEN_BYTE_ARRAY is read by every engine).
	StoreDecimalAsInteger bool
	// KeyValueMetadata is added to the file footer.
	KeyValueMetadata map[string]string
	// Dictionary chooses the columns that start dictionary-encoded; default
	// DictionaryAuto.
	Dictionary Dictionary
	// DictionaryColumns overrides Dictionary for the named top-level columns (true:
	// dictionary, false: plain). A writer of several files passes the choices of its
	// first file ([Writer.DictionaryChoices]) so that later files neither sample again
	// nor choose differently.
	DictionaryColumns map[string]bool
	// Parallelism bounds how many columns are encoded at once; default GOMAXPROCS.
	// Columns are encoded concurrently only when every column is flat (no struct, list
	// or map); the file is byte-for-byte the same whatever the value.
	Parallelism int
	// Allocator allocates Arrow and Parquet buffers; default memory.DefaultAllocator.
	Allocator memory.Allocator

	// serial forces pqarrow's encoder (tests compare the two encoders).
	serial bool
	// dataPageV2 writes data pages v2 (tests of page copying: the Writer itself
	// writes v1).
	dataPageV2 bool
	// sizes, when set, is shared by the files of one Output (see sizeModel).
	sizes *sizeModel
}

// Validate reports every problem with the options at once.
func (o WriterOptions) Validate() error {
	var errs []error
	if o.Codec > CodecBrotli {
		errs = append(errs, fmt.Errorf("%w: unknown codec %d", ErrInvalidArgument, o.Codec))
	}
	if o.TargetRowGroupBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: TargetRowGroupBytes %d < 0", ErrInvalidArgument, o.TargetRowGroupBytes))
	}
	if o.DataPageBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: DataPageBytes %d < 0", ErrInvalidArgument, o.DataPageBytes))
	}
	if o.BloomFPP < 0 || o.BloomFPP >= 1 {
		errs = append(errs, fmt.Errorf("%w: BloomFPP %v not in (0,1)", ErrInvalidArgument, o.BloomFPP))
	}
	if o.Dictionary > DictionaryNone {
		errs = append(errs, fmt.Errorf("%w: unknown dictionary choice %d", ErrInvalidArgument, o.Dictionary))
	}
	if o.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("%w: Parallelism %d < 0", ErrInvalidArgument, o.Parallelism))
	}
	return errors.Join(errs...)
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.TargetRowGroupBytes == 0 {
		o.TargetRowGroupBytes = DefaultTargetRowGroupBytes
	}
	if o.DataPageBytes == 0 {
		o.DataPageBytes = DefaultDataPageBytes
	}
	if o.BloomFPP == 0 {
		o.BloomFPP = DefaultBloomFPP
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.Codec == CodecDefault {
		o.Codec = CodecZstd
	}
	if o.CompressionLevel == 0 && o.Codec == CodecZstd {
		o.CompressionLevel = DefaultZstdLevel
	}
	if o.Parallelism == 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	return o
}

func (c Codec) parquet() compress.Compression {
	switch c {
	case CodecSnappy:
		return compress.Codecs.Snappy
	case CodecGzip:
		return compress.Codecs.Gzip
	case CodecLZ4:
		return compress.Codecs.Lz4Raw
	case CodecUncompressed:
		return compress.Codecs.Uncompressed
	case CodecBrotli:
		return compress.Codecs.Brotli
	}
	return compress.Codecs.Zstd
}

// properties builds the Parquet writer properties of one file; dict holds the
// dictionary choice per top-level column (absent: arrow-go's default, on), exact the
// Bloom columns' distinct values when they are known for the whole file.
func (o WriterOptions) properties(dict map[string]bool, exact map[string]int64) *parquet.WriterProperties {
	props := []parquet.WriterProperty{
		parquet.WithAllocator(parquetAllocator(o.Allocator)),
		parquet.WithCompression(o.Codec.parquet()),
		parquet.WithDataPageSize(o.DataPageBytes),
		parquet.WithDictionaryPageSizeLimit(o.DataPageBytes * 16),
		parquet.WithPageIndexEnabled(!o.DisablePageIndex),
		parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(1 << 40),
		parquet.WithCreatedBy("skiplake (parquet-go arrow)"),
	}
	switch {
	case o.Codec.parquet() == compress.Codecs.Zstd:
		// The level selects pageZstd's page encoders, for this writer only.
		level := o.CompressionLevel
		if level == 0 {
			level = compress.DefaultCompressionLevel
		}
		props = append(props, parquet.WithCompressionLevel(pageZstdLevel(level)))
	case o.CompressionLevel != 0:
		props = append(props, parquet.WithCompressionLevel(o.CompressionLevel))
	}
	if o.StoreDecimalAsInteger {
		props = append(props, parquet.WithStoreDecimalAsInteger(true))
	}
	if o.dataPageV2 {
		props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
	}
	if o.Dictionary == DictionaryNone {
		props = append(props, parquet.WithDictionaryDefault(false))
	}
	for col, on := range dict {
		props = append(props, parquet.WithDictionaryPath(parquet.ColumnPath{col}, on))
	}
	if len(o.BloomColumns) > 0 {
		props = append(props, parquet.WithBloomFilterFPP(o.BloomFPP))
		maxBytes := int64(bloomMinFilterBytes)
		for col, ndv := range o.BloomColumns {
			if e, ok := exact[col]; ok && ndv <= 0 {
				ndv = max(e, 1)
			}
			props = append(props, parquet.WithBloomFilterEnabledFor(col, true))
			if ndv > 0 {
				props = append(props, parquet.WithBloomFilterNDVFor(col, ndv))
				maxBytes = max(maxBytes, bloomFilterBytes(ndv, o.BloomFPP))
				continue
			}
			props = append(props, parquet.WithAdaptiveBloomFilterEnabledFor(col, true))
			maxBytes = max(maxBytes, bloomMaxFilterBytes)
		}
		props = append(props, parquet.WithMaxBloomFilterBytes(maxBytes), parquet.WithBloomFilterCandidates(bloomCandidates))
	}
	return parquet.NewWriterProperties(props...)
}

// Properties returns the arrow-go properties of a file written with these options
// and the given dictionary choices (see Writer.DictionaryChoices): what a plain
// pqarrow writer needs to encode exactly as this package does, for benchmarks that
// compare like with like.
func (o WriterOptions) Properties(dict map[string]bool) (*parquet.WriterProperties, pqarrow.ArrowWriterProperties) {
	o = o.withDefaults()
	return o.properties(dict, nil), o.arrowProperties()
}

func (o WriterOptions) arrowProperties() pqarrow.ArrowWriterProperties {
	return pqarrow.NewArrowWriterProperties(
		pqarrow.WithStoreSchema(),
		pqarrow.WithAllocator(o.Allocator),
		pqarrow.WithCoerceTimestamps(arrow.Microsecond),
		pqarrow.WithTruncatedTimestamps(true),
	)
}

// WriteResult describes a closed file.
type WriteResult struct {
	// NumRows is the number of rows written.
	NumRows int64
	// Size is the number of bytes written to the sink (the file size).
	Size int64
	// RowGroups is the number of row groups.
	RowGroups int
	// Metadata is the file footer as written.
	Metadata *metadata.FileMetaData
}

// countingWriter counts bytes and hides any Close method of the sink, so that closing the
// Parquet writer never closes the caller's io.Writer (invariant D4).
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder turns batches into the row groups of one Parquet file: pqarrow's writer
// (one column after the other, any schema) or the column-parallel one (flat schemas).
type encoder interface {
	// write appends rec, of about arrowBytes in memory, to the open row group
	// (starting one if needed).
	write(rec arrow.RecordBatch, arrowBytes float64) error
	// openBytes estimates the compressed bytes of the open row group.
	openBytes() int64
	// endRowGroup flushes the open row group, if any, to the sink.
	endRowGroup() error
	// close flushes everything and writes the footer.
	close() (*metadata.FileMetaData, error)
	// abort stops the encoder without writing anything more.
	abort()
	// settle waits until everything queued is encoded (openBytes is then exact but
	// for the current pages and dictionaries).
	settle()
}

// Writer writes one Parquet data file. It is not safe for concurrent use.
//
// # Bloom filter sizing
//
// Parquet keeps one split-block Bloom filter per column chunk, so a filter holds the
// distinct values of one row group. A Bloom column with a positive NDV in
// WriterOptions.BloomColumns gets filters sized for that NDV. A column with NDV 0 gets
// filters sized to the data, always within WriterOptions.BloomFPP:
//
//   - A file whose rows are all in hand when encoding starts (fewer than
//     dictionarySampleRows rows, held for the dictionary sample until Close) gets
//     filters sized for the column's exact distinct values in the file: a 34-row
//     file of distinct keys carries a 64-byte filter, not a fixed 128 KiB one.
//   - Otherwise every column chunk gets arrow-go's adaptive filter: candidate filters
//     of every power of two from bloomMaxFilterBytes down are filled side by side,
//     each dropped once the distinct values seen exceed what it holds at the fpp, and
//     the smallest survivor is written. A row group then ends at bloomCapacity of
//     bloomMaxFilterBytes rows (about 866,000 at fpp 0.01), so that even the largest
//     filter holds its distinct values at the fpp.
type Writer struct {
	opts   WriterOptions
	schema *arrow.Schema
	sink   *countingWriter
	async  *asyncSink      // under sink: writes to the caller's writer
	enc    encoder         // nil until the first non-empty Write (dictionary choice needs data)
	dict   map[string]bool // dictionary choice per top-level column, once made
	rgRows int64           // rows in the open row group
	total  int64           // rows written
	// sliceRows is how many rows are appended to the open row group before its size is
	// checked again; adapted to the observed bytes per row.
	sliceRows int64
	// pending holds the first batches (retained) until they make a sample of
	// dictionarySampleRows rows for the dictionary choice (DictionaryAuto only): a
	// caller writing small batches — a DML command's updated rows — would otherwise
	// leave the choice to a sample too small to tell, and every column of mostly
	// distinct values would hash its row groups' values into a dictionary that is
	// thrown away (hash tables of about 24 MiB per 8-byte column).
	pending      []arrow.RecordBatch
	pendingRows  int64
	pendingBytes int64 // Arrow bytes of pending
	// closedBloom is the Bloom filter bytes of closed row groups, written with the footer.
	closedBloom int64
	// exactNDV are the Bloom columns' distinct values when the writer started with
	// every row of the file in hand (a file of one small row group); nil otherwise.
	exactNDV map[string]int64
	// bloomRowCap, when positive, ends a row group at this many rows: the most
	// distinct values the largest filter a data-sized Bloom column may get holds at
	// BloomFPP (see "Bloom filter sizing" on Writer).
	bloomRowCap int64
	closed      bool
	err         error // sticky: a failed Write leaves the writer unusable
}

// NewWriter starts a Parquet file with the given Arrow schema on w. Timestamps are stored
// as microseconds (nanoseconds are truncated), the Arrow schema is stored in the footer,
// and Arrow field metadata "PARQUET:field_id" becomes the Parquet field id.
// Closing the Writer does not close w.
func NewWriter(w io.Writer, schema *arrow.Schema, opts WriterOptions) (*Writer, error) {
	if w == nil || schema == nil {
		return nil, fmt.Errorf("%w: nil writer or schema", ErrInvalidArgument)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	// Check the schema now (an unsupported type fails here, not at the first Write).
	if _, err := pqarrow.ToParquet(schema, opts.properties(nil, nil), opts.arrowProperties()); err != nil {
		return nil, fmt.Errorf("%w: schema: %v", ErrInvalidArgument, err)
	}
	// At most a row group waits to be written (see asyncSink).
	async := newAsyncSink(w, min(opts.TargetRowGroupBytes, 64<<20))
	wr := &Writer{opts: opts, schema: schema, sink: &countingWriter{w: async}, async: async, sliceRows: 1024}
	for _, ndv := range opts.BloomColumns {
		if ndv <= 0 {
			wr.bloomRowCap = bloomCapacity(bloomMaxFilterBytes, opts.BloomFPP)
		}
	}
	if opts.Dictionary != DictionaryAuto || !isFlat(schema) {
		// Nothing to sample: start now, so that an empty file is still a valid one.
		if err := wr.start(nil, false); err != nil {
			_ = async.stop()
			return nil, err
		}
	}
	return wr, nil
}

// start creates the encoder, choosing dictionary encoding from first (nil: no sample).
// whole says first holds every row of the file: the Bloom columns' filters are then
// sized for their exact distinct values.
func (w *Writer) start(first arrow.RecordBatch, whole bool) error {
	dict := map[string]bool{}
	if w.opts.Dictionary == DictionaryAuto && first != nil {
		for col, on := range chooseDictionary(first, w.opts.TargetRowGroupBytes, w.opts.DataPageBytes*16, w.opts.DictionaryColumns) {
			dict[col] = on
		}
	}
	for col, on := range w.opts.DictionaryColumns {
		dict[col] = on
	}
	w.dict = dict
	if whole && first != nil {
		w.exactNDV = distinctValues(first, w.opts.BloomColumns)
	}
	props := w.opts.properties(dict, w.exactNDV)
	arrProps := w.opts.arrowProperties()
	var err error
	if isFlat(w.schema) && !w.opts.serial {
		w.enc, err = newParallelEncoder(w.sink, w.schema, props, arrProps, w.opts.KeyValueMetadata, w.opts.Parallelism, w.opts.sizes)
	} else {
		w.enc, err = newSerialEncoder(w.sink, w.schema, props, arrProps, w.opts.KeyValueMetadata)
	}
	if err != nil {
		return fmt.Errorf("datafile: new writer: %w", err)
	}
	return nil
}

// DictionaryChoices returns which top-level columns this file started
// dictionary-encoded (true) or plain (false), for passing to the next file of the same
// data as WriterOptions.DictionaryColumns. Under DictionaryAuto it is nil until the
// choice is made: once Write has been given dictionarySampleRows rows (8,192), or at
// FlushRowGroup or Close.
func (w *Writer) DictionaryChoices() map[string]bool {
	if w.enc == nil {
		return nil
	}
	out := make(map[string]bool, len(w.dict))
	for k, v := range w.dict {
		out[k] = v
	}
	return out
}

// Write appends the batch. Its schema must equal the writer's. Under DictionaryAuto,
// the first batches are retained (not copied) until they hold dictionarySampleRows
// rows, the sample the dictionary choice is made from (or until FlushRowGroup or
// Close); later batches are not retained after Write returns (the column-parallel
// encoder retains what it still encodes). Arrow batches are immutable, so this changes
// nothing for the caller but when the memory is freed.
// Row groups are closed when their estimated compressed size reaches TargetRowGroupBytes.
//
// The estimate: pqarrow only reports the bytes of pages already flushed, and dictionary
// pages and the current page stay invisible until the row group closes. The
// column-parallel encoder therefore adds each column's current page and dictionary
// (uncompressed) to its flushed pages, and scales the sum by how far that estimate
// was off when the previous row group closed (parallelEncoder.openBytes); the pqarrow
// encoder scales the Arrow bytes appended by the previous row group's compression
// ratio (serialEncoder.openBytes).
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("%w: batch schema %s differs from the writer's %s", ErrInvalidArgument, rec.Schema(), w.schema)
	}
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	// The column encoders read rec's arrays (or slices sharing their Data) on their
	// goroutines while this one slices them and the caller keeps them (R1, share.go).
	Settle(rec)
	if w.enc == nil {
		if w.needsSample() {
			rec.Retain()
			w.pending = append(w.pending, rec)
			w.pendingRows += n
			w.pendingBytes += RecordBytes(rec)
			if w.pendingRows < dictionarySampleRows {
				return nil
			}
			if err := w.flushPending(); err != nil {
				w.err = err
				return err
			}
			return nil
		}
		if err := w.start(rec, false); err != nil {
			w.err = err
			return err
		}
	}
	if err := w.writeRows(rec); err != nil {
		w.err = err
		return err
	}
	return nil
}

// needsSample reports whether the dictionary choice still needs a sample of the data:
// under DictionaryAuto (flat schemas; the others start at NewWriter), when some column
// has no choice given in DictionaryColumns.
func (w *Writer) needsSample() bool {
	for _, f := range w.schema.Fields() {
		if _, ok := w.opts.DictionaryColumns[f.Name]; !ok {
			return true
		}
	}
	return false
}

// flushPending makes the dictionary choice from the pending batches (at most
// dictionarySampleRows of their rows), starts the encoder and writes them.
func (w *Writer) flushPending() error {
	// At Close, rows that fit one sample are the whole file.
	whole := w.closed && w.pendingRows <= dictionarySampleRows
	pending := w.pending
	w.pending, w.pendingRows, w.pendingBytes = nil, 0, 0
	defer func() {
		for _, p := range pending {
			p.Release()
		}
	}()
	if len(pending) == 0 {
		return nil
	}
	sample, err := sampleOf(pending, dictionarySampleRows, w.opts.Allocator)
	if err != nil {
		return fmt.Errorf("datafile: dictionary sample: %w", err)
	}
	err = w.start(sample, whole)
	sample.Release()
	if err != nil {
		return err
	}
	for _, p := range pending {
		if err := w.writeRows(p); err != nil {
			return err
		}
	}
	return nil
}

// sampleOf returns the first rows (at most max) of batches as one batch (a new
// reference to batches[0] when it alone suffices). The caller releases it.
func sampleOf(batches []arrow.RecordBatch, max int64, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(batches) == 1 || batches[0].NumRows() >= max {
		batches[0].Retain()
		return batches[0], nil
	}
	var parts []arrow.RecordBatch
	var n int64
	for _, b := range batches {
		if n >= max {
			break
		}
		take := min(b.NumRows(), max-n)
		parts = append(parts, b.NewSlice(0, take))
		n += take
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	schema := batches[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		arrs := make([]arrow.Array, len(parts))
		for k, p := range parts {
			arrs[k] = p.Column(i)
		}
		c, err := array.Concatenate(arrs, mem)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecordBatch(schema, cols, n), nil
}

// writeRows hands rec to the started encoder, slice by slice, closing row groups by
// size.
func (w *Writer) writeRows(rec arrow.RecordBatch) error {
	n := rec.NumRows()
	arrowPerRow := float64(RecordBytes(rec)) / float64(n)
	for off := int64(0); off < n; {
		end := min(n, off+w.sliceRows)
		if w.bloomRowCap > 0 {
			end = min(end, off+max(w.bloomRowCap-w.rgRows, 1))
		}
		part := rec
		if off != 0 || end != n {
			part = rec.NewSlice(off, end)
		}
		err := w.enc.write(part, float64(end-off)*arrowPerRow)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return fmt.Errorf("datafile: write rows %d..%d: %w", off, end, err)
		}
		w.rgRows += end - off
		w.total += end - off
		off = end
		est := float64(w.enc.openBytes())
		// Re-estimate the slice so that one slice is about a quarter of a row group.
		perRow := max(1, est/float64(w.rgRows))
		w.sliceRows = int64(min(max(float64(w.opts.TargetRowGroupBytes)/4/perRow, 64), 1<<20))
		if est >= float64(w.opts.TargetRowGroupBytes) || (w.bloomRowCap > 0 && w.rgRows >= w.bloomRowCap) {
			if err := w.endRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// FlushRowGroup ends the open row group now, if it has rows (row groups otherwise
// end by size).
func (w *Writer) FlushRowGroup() error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	err := w.endRowGroup()
	if err == nil {
		// What was written is in the caller's writer on return.
		err = w.async.flush()
	}
	if err != nil {
		w.err = err
		return err
	}
	return nil
}

// endRowGroup flushes the open row group (the rows held for the dictionary sample
// included).
func (w *Writer) endRowGroup() error {
	if err := w.flushPending(); err != nil {
		return err
	}
	if w.rgRows == 0 {
		return nil
	}
	if err := w.enc.endRowGroup(); err != nil {
		return fmt.Errorf("datafile: new row group: %w", err)
	}
	w.closedBloom += w.bloomBytes(w.rgRows)
	w.rgRows = 0
	return nil
}

// BytesWritten returns the bytes written to the sink so far. Buffered rows of the open
// row group are not included until it is flushed.
func (w *Writer) BytesWritten() int64 { return w.sink.n }

// EstimatedSize estimates the size the file would have if it were closed now: the
// bytes written, the open row group's estimated compressed size, the Bloom filters
// and the footer still to come. It is what a caller cutting files by size compares
// with its target.
func (w *Writer) EstimatedSize() int64 {
	n := w.sink.n + w.closedBloom
	if w.enc != nil && w.rgRows > 0 {
		n += w.enc.openBytes() + w.bloomBytes(w.rgRows)
	}
	if w.pendingRows > 0 {
		// Not encoded yet: half the Arrow size, the guess Roller makes before any
		// page is encoded.
		n += w.pendingBytes/2 + w.bloomBytes(w.pendingRows)
	}
	return n + w.overhead()
}

// overhead estimates what a file holds besides its rows: the magic bytes and the
// footer (a few hundred bytes, plus column and offset indexes per column).
func (w *Writer) overhead() int64 { return fileOverhead(w.schema.NumFields()) }

// fileOverhead is Writer.overhead for a schema of fields top-level columns.
func fileOverhead(fields int) int64 { return 1024 + int64(fields)*256 }

// settle waits for the encoder to catch up with what was written.
func (w *Writer) settle() {
	if w.enc != nil && !w.closed {
		w.enc.settle()
	}
}

// NumRows returns the rows written so far.
func (w *Writer) NumRows() int64 { return w.total + w.pendingRows }

// Close flushes the last row group and the footer. It does not close the sink. After
// a failed Write, Close releases the writer and returns that error.
func (w *Writer) Close() (*WriteResult, error) {
	if w.closed {
		return nil, ErrClosed
	}
	res, err := w.close()
	// Everything written is in the caller's writer on return.
	if serr := w.async.stop(); err == nil && serr != nil {
		return nil, fmt.Errorf("datafile: close: %w", serr)
	}
	return res, err
}

func (w *Writer) close() (*WriteResult, error) {
	w.closed = true
	if w.err == nil {
		w.err = w.flushPending()
	}
	if w.err != nil {
		w.releasePending()
		if w.enc != nil {
			w.enc.abort()
		}
		return nil, w.err
	}
	if w.enc == nil {
		if err := w.start(nil, false); err != nil {
			return nil, err
		}
	}
	md, err := w.enc.close()
	if err != nil {
		return nil, fmt.Errorf("datafile: close: %w", err)
	}
	return &WriteResult{NumRows: md.NumRows, Size: w.sink.n, RowGroups: md.NumRowGroups(), Metadata: md}, nil
}

// Abort stops the writer without finishing the file; what was written to the sink is
// a truncated Parquet file the caller discards. It is safe after Close (a no-op).
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.releasePending()
	if w.enc != nil {
		w.enc.abort()
	}
	_ = w.async.stop()
}

// releasePending drops the batches held for the dictionary sample.
func (w *Writer) releasePending() {
	for _, p := range w.pending {
		p.Release()
	}
	w.pending, w.pendingRows, w.pendingBytes = nil, 0, 0
}

// RecordBytes is the size of the buffers behind rec: its in-memory Arrow size. Shared
// buffers of a sliced batch count whole, so it overestimates slices (which only makes
// row groups and files cut by it smaller).
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}
