package datafile

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
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
	CodecLZ4
	CodecUncompressed
)

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
	// column (or dotted leaf path), sized for the given number of distinct values per
	// row group. A value <= 0 means 1<<16.
	BloomColumns map[string]int64
	// BloomFPP is the Bloom filters' false-positive probability; default DefaultBloomFPP.
	// Must be in (0, 1).
	BloomFPP float64
	// StoreDecimalAsInteger writes decimals of precision <= 18 as INT32/INT64 instead of
	// FIXED_LEN_BYTE_ARRAY. Off by default (FIXED_LEN_BYTE_ARRAY is read by every engine).
	StoreDecimalAsInteger bool
	// KeyValueMetadata is added to the file footer.
	KeyValueMetadata map[string]string
	// Allocator allocates Arrow and Parquet buffers; default memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Validate reports every problem with the options at once.
func (o WriterOptions) Validate() error {
	var errs []error
	if o.Codec > CodecUncompressed {
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
	}
	return compress.Codecs.Zstd
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

// Writer writes one Parquet data file. It is not safe for concurrent use.
type Writer struct {
	opts    WriterOptions
	schema  *arrow.Schema
	sink    *countingWriter
	fw      *pqarrow.FileWriter
	rgRows  int64   // rows in the open row group
	rgArrow float64 // Arrow bytes appended to the open row group
	ratio   float64 // compressed bytes per Arrow byte, from the last closed row group
	total   int64   // rows written
	// sliceRows is how many rows are appended to the open row group before its size is
	// checked again; adapted to the observed bytes per row.
	sliceRows int64
	closed    bool
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
	props := []parquet.WriterProperty{
		parquet.WithAllocator(opts.Allocator),
		parquet.WithCompression(opts.Codec.parquet()),
		parquet.WithDataPageSize(opts.DataPageBytes),
		parquet.WithDictionaryPageSizeLimit(opts.DataPageBytes * 16),
		parquet.WithPageIndexEnabled(!opts.DisablePageIndex),
		parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(1 << 40),
		parquet.WithCreatedBy("skiplake (parquet-go arrow)"),
	}
	if opts.CompressionLevel != 0 {
		props = append(props, parquet.WithCompressionLevel(opts.CompressionLevel))
	}
	if opts.StoreDecimalAsInteger {
		props = append(props, parquet.WithStoreDecimalAsInteger(true))
	}
	if len(opts.BloomColumns) > 0 {
		props = append(props, parquet.WithBloomFilterFPP(opts.BloomFPP))
		for col, ndv := range opts.BloomColumns {
			if ndv <= 0 {
				ndv = 1 << 16
			}
			props = append(props, parquet.WithBloomFilterEnabledFor(col, true), parquet.WithBloomFilterNDVFor(col, ndv))
		}
	}
	arrProps := pqarrow.NewArrowWriterProperties(
		pqarrow.WithStoreSchema(),
		pqarrow.WithAllocator(opts.Allocator),
		pqarrow.WithCoerceTimestamps(arrow.Microsecond),
		pqarrow.WithTruncatedTimestamps(true),
	)
	sink := &countingWriter{w: w}
	fw, err := pqarrow.NewFileWriter(schema, sink, parquet.NewWriterProperties(props...), arrProps)
	if err != nil {
		return nil, fmt.Errorf("datafile: new writer: %w", err)
	}
	for k, v := range opts.KeyValueMetadata {
		if err := fw.AppendKeyValueMetadata(k, v); err != nil {
			return nil, fmt.Errorf("datafile: key-value metadata %q: %w", k, err)
		}
	}
	return &Writer{opts: opts, schema: schema, sink: sink, fw: fw, sliceRows: 1024, ratio: 1}, nil
}

// Write appends the batch. Its schema must equal the writer's. The batch is not retained.
// Row groups are closed when their estimated compressed size reaches TargetRowGroupBytes.
//
// The estimate: pqarrow only reports the bytes of pages already flushed, and dictionary
// pages and the current page stay invisible until the row group closes, so flushed bytes
// alone let a dictionary-encoded row group grow far past the target. The writer therefore
// also counts the Arrow bytes appended to the open row group and scales them by the
// compression ratio observed on the previous row group (1.0 before the first one is
// closed, which errs towards smaller row groups), and takes the larger of the two.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.closed {
		return ErrClosed
	}
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("%w: batch schema %s differs from the writer's %s", ErrInvalidArgument, rec.Schema(), w.schema)
	}
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	arrowPerRow := float64(RecordBytes(rec)) / float64(n)
	for off := int64(0); off < n; {
		end := min(n, off+w.sliceRows)
		part := rec
		if off != 0 || end != n {
			part = rec.NewSlice(off, end)
		}
		err := w.fw.WriteBuffered(part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return fmt.Errorf("datafile: write rows %d..%d: %w", off, end, err)
		}
		w.rgRows += end - off
		w.total += end - off
		w.rgArrow += float64(end-off) * arrowPerRow
		off = end
		flushed := max(w.fw.RowGroupTotalCompressedBytes(), w.fw.RowGroupTotalBytesWritten())
		est := max(float64(flushed), w.rgArrow*w.ratio)
		// Re-estimate the slice so that one slice is about a quarter of a row group.
		perRow := max(1, est/float64(w.rgRows))
		w.sliceRows = int64(min(max(float64(w.opts.TargetRowGroupBytes)/4/perRow, 64), 1<<20))
		if est >= float64(w.opts.TargetRowGroupBytes) {
			before := w.sink.n
			if err := w.fw.NewBufferedRowGroupChecked(); err != nil {
				return fmt.Errorf("datafile: new row group: %w", err)
			}
			if w.rgArrow > 0 && w.sink.n > before {
				w.ratio = min(max(float64(w.sink.n-before)/w.rgArrow, 0.01), 4)
			}
			w.rgRows, w.rgArrow = 0, 0
		}
	}
	return nil
}

// BytesWritten returns the bytes written to the sink so far. Buffered rows of the open
// row group are not included until it is flushed.
func (w *Writer) BytesWritten() int64 { return w.sink.n }

// NumRows returns the rows written so far.
func (w *Writer) NumRows() int64 { return w.total }

// Close flushes the last row group and the footer. It does not close the sink.
func (w *Writer) Close() (*WriteResult, error) {
	if w.closed {
		return nil, ErrClosed
	}
	w.closed = true
	if err := w.fw.Close(); err != nil {
		return nil, fmt.Errorf("datafile: close: %w", err)
	}
	md, err := w.fw.FileMetadata()
	if err != nil {
		return nil, fmt.Errorf("datafile: footer: %w", err)
	}
	return &WriteResult{NumRows: md.NumRows, Size: w.sink.n, RowGroups: md.NumRowGroups(), Metadata: md}, nil
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
