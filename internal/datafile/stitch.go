package datafile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
)

// Stitching: one Parquet file made of the row groups of existing files, their
// column chunks copied byte for byte (as parquet-mr's ParquetFileWriter.appendFile
// and parquet-cli's rewrite do): no page is decoded or encoded, only a new footer
// is written. Compaction of files whose row groups are already what this package's
// Writer writes costs a copy instead of a decode and a zstd re-encode.
//
// Layout of a stitched file (invariant D10), every offset of the sources' footers
// shifted by where the bytes landed:
//
//	"PAR1"
//	source 0 row group 0: column chunk 0 … column chunk n-1   (copied: dictionary page through last data page)
//	source 0 row group 1: …
//	source 1 row group 0: …
//	…
//	Bloom filters of every chunk that has one                  (copied, in row-group order)
//	column indexes of every chunk                              (copied: they hold no offsets)
//	offset indexes of every chunk                              (re-encoded: page offsets shifted)
//	footer: FileMetaData                                       (the sources' row groups, offsets shifted, ordinals renumbered)
//	footer length (4 bytes, little-endian), "PAR1"
//
// The footer is arrow-go's own: metadata.FileMetaData embeds the Thrift struct it
// decoded, whose fields (exported, of a type in an internal package) can be set
// without naming the type, and FileMetaData.WriteTo serializes it; offset indexes
// are rebuilt with the public metadata.OffsetIndexBuilder. So no Thrift code of our
// own is needed, and every field arrow-go knows survives the round trip. (A field
// arrow-go does not know would be dropped; the sources are files this package's
// Writer wrote, with arrow-go, so there is none.)
//
// Sources must be files this package's Writer would have written for the Output:
// the rules are in Output.Stitch, each with a StitchRule naming it.

// StitchRule names why a set of files cannot be stitched ([NotStitchableError]).
type StitchRule string

// The rules of Output.Stitch.
const (
	// RuleWriter: the file was not written by this package's Writer (created_by
	// differs), or it is encrypted.
	RuleWriter StitchRule = "writer"
	// RuleSchema: the file's Parquet schema (leaf paths, physical and logical types,
	// repetition, field ids), column orders or key-value metadata (ARROW:schema)
	// differ from what the Output writes: column mapping or type changes since the
	// file was written, INT96, another Arrow schema.
	RuleSchema StitchRule = "schema"
	// RuleCodec: a column chunk is compressed with another codec than the Output's.
	RuleCodec StitchRule = "codec"
	// RulePageIndex: a column chunk lacks a column index or an offset index (page
	// skipping needs both), or its offset index carries fields the rebuilt one would
	// lose.
	RulePageIndex StitchRule = "page-index"
	// RuleRowGroupSize: a row group is smaller than StitchOptions.MinRowGroupBytes:
	// many small files (streaming ingest) are re-encoded into proper row groups.
	RuleRowGroupSize StitchRule = "row-group-size"
	// RuleBloom: a row group lacks the native Bloom filter of a Bloom column, or a
	// chunk has a filter without a recorded length.
	RuleBloom StitchRule = "bloom"
	// RuleStats: the file's Delta statistics are missing, not tight, or lack
	// numRecords, a nullCount of a statistics column, or the min/max of one that
	// has non-null values (a merge would lose them).
	RuleStats StitchRule = "stats"
	// RuleLayout: the file uses what the stitcher does not copy (an index page
	// offset), or the output would have more row groups than Parquet numbers.
	RuleLayout StitchRule = "layout"
)

// ErrNotStitchable reports sources that Output.Stitch refuses to copy; the error is
// a *NotStitchableError. Nothing was stored.
var ErrNotStitchable = errors.New("datafile: files cannot be stitched")

// NotStitchableError says which source broke which rule. errors.Is(err,
// ErrNotStitchable) holds for it.
type NotStitchableError struct {
	// Path is the source (StitchSource.Path).
	Path string
	// Rule is the rule it breaks.
	Rule StitchRule
	// Detail says where and how (row group, column, values).
	Detail string
}

// Error implements error: "datafile: cannot stitch PATH (RULE): DETAIL".
func (e *NotStitchableError) Error() string {
	return fmt.Sprintf("datafile: cannot stitch %s (%s): %s", e.Path, e.Rule, e.Detail)
}

// Is reports ErrNotStitchable.
func (e *NotStitchableError) Is(target error) bool { return target == ErrNotStitchable }

// StitchSource is one input file of Output.Stitch.
type StitchSource struct {
	// Path is the file's storage path (decoded), in the Output's store.
	Path string
	// Size is the file's size as the log records it; a stored object of another
	// size is corrupt. 0 skips the check.
	Size int64
	// Stats are the file's Delta statistics as the log records them (parsed by the
	// caller with the table's reading rules, stats.Parser, against the Output's
	// FileSchema). The output's statistics are their merge (stats.MergeJSON), never
	// the Parquet footers' (which can be wrong).
	Stats *stats.File
}

// StitchOptions tunes Output.Stitch. The zero value is the documented default.
type StitchOptions struct {
	// MinRowGroupBytes is the smallest row group (compressed bytes of its column
	// chunks) a source may have; default DefaultStitchMinRowGroupBytes of the
	// Spec's RowGroupBytes. Smaller row groups are not worth keeping: they are
	// refused (RuleRowGroupSize), for the caller to re-encode, or merged
	// (MergeRowGroups).
	MinRowGroupBytes int64
	// BufferBytes is the copy buffer; default 1 MiB. Memory does not grow with the
	// file: the bytes stream from source to destination through it.
	BufferBytes int64
	// Progress, if set, is called after the row groups of sources[i] are copied,
	// from the calling goroutine.
	Progress func(i int)
	// MergeRowGroups merges the row groups smaller than MinRowGroupBytes instead of
	// refusing them (RuleRowGroupSize): consecutive small row groups become one row
	// group of at most the Spec's RowGroupBytes, whose columns without a dictionary
	// are copied page by page and whose other columns (dictionary-encoded in some
	// source, or Bloom columns) are re-encoded (merge.go, invariant D12). Row groups
	// of at least MinRowGroupBytes are still copied whole.
	MergeRowGroups bool
}

// StitchResult is what Output.Stitch wrote.
type StitchResult struct {
	// Add is the new file's add action.
	Add *log.Add
	// RowGroups counts the file's row groups; MergedRowGroups those of them made
	// of several source row groups (StitchOptions.MergeRowGroups), the others
	// being source row groups copied whole.
	RowGroups, MergedRowGroups int
	// CopiedChunks counts the column chunks whose pages are the sources' bytes
	// (whole chunks, or a merged row group's columns copied page by page);
	// ReencodedChunks the merged row groups' column chunks that were re-encoded.
	CopiedChunks, ReencodedChunks int
}

// DefaultStitchMinRowGroupBytes is the default StitchOptions.MinRowGroupBytes for a
// Spec whose row groups are rowGroupBytes: a quarter of them (4 MiB of the default
// 16 MiB). A file of row groups that small is most likely one of many small
// appends, whose rows are better merged into row groups of the target size.
func DefaultStitchMinRowGroupBytes(rowGroupBytes int64) int64 { return rowGroupBytes / 4 }

// stitchCopyBuffer is the default StitchOptions.BufferBytes.
const stitchCopyBuffer = 1 << 20

// maxIndexBytes bounds one column or offset index read from a source (they are a
// few bytes per page): a damaged length is refused before it is allocated.
const maxIndexBytes = 16 << 20

// stitchProbe is what this Output's Writer writes, learnt once from an empty file.
type stitchProbe struct {
	md     *metadata.FileMetaData
	kv     map[string]string
	cols   [][]string // statistics columns
	bounds [][]string // those of them that get min/max
	footer []byte     // the empty file's serialized FileMetaData
	err    error
}

// probe writes an empty file with the Output's writer options and reads its
// footer: the schema, column orders, key-value metadata and created_by every file
// of this Output has, by construction.
func (o *Output) probe() *stitchProbe {
	o.probeOnce.Do(func() {
		p := &stitchProbe{}
		o.stitchProbe = p
		opts := o.opts
		opts.sizes = nil // learns nothing from an empty file; keep the shared model out of it
		md, b, err := emptyFileFooter(o.file, opts)
		if err != nil {
			p.err = fmt.Errorf("datafile: stitching: probe file: %w", err)
			return
		}
		p.md = md
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		p.footer = bytes.Clone(b[len(b)-8-n : len(b)-8])
		p.kv = kvMap(p.md.KeyValueMetadata())
		coll, err := stats.NewCollector(o.file, nil, o.spec.Stats)
		if err != nil {
			p.err = err
			return
		}
		p.cols, p.bounds = coll.Columns(), coll.BoundColumns()
	})
	return o.stitchProbe
}

// emptyFileFooter writes a file of schema without rows with opts and returns its
// footer as Open reads it, and the file's bytes.
func emptyFileFooter(schema *arrow.Schema, opts WriterOptions) (*metadata.FileMetaData, []byte, error) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, schema, opts)
	if err == nil {
		_, err = w.Close()
	}
	var r *Reader
	if err == nil {
		r, err = Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReadOptions{Name: "probe file"})
	}
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	return r.Metadata(), buf.Bytes(), nil
}

func kvMap(kv metadata.KeyValueMetadata) map[string]string {
	m := make(map[string]string, len(kv))
	for _, e := range kv {
		v := ""
		if e.Value != nil {
			v = *e.Value
		}
		m[e.Key] = v
	}
	return m
}

// chunkCopy is one column chunk of a source: the bytes to copy and its indexes.
type chunkCopy struct {
	start, length int64  // in the source
	columnIndex   []byte // copied as is
	offsetIndex   []metadata.PageLocation
}

// stitchInput is one checked source.
type stitchInput struct {
	src     StitchSource
	md      *metadata.FileMetaData
	chunks  [][]chunkCopy // [row group][column]
	rgBytes []int64       // compressed bytes of each row group's chunks
	bloom   bool          // some chunk has a Bloom filter
}

// Stitch writes one data file at place holding exactly the rows of sources, in
// order, by copying their row groups' column chunks byte for byte (see the layout
// above; invariant D11), and returns its add action, as File.Close does: the file
// is a hidden object until it is published with put-if-absent, complete (D9, L2);
// its Bloom filters go into the Output's index like a written file's.
//
// Sources are checked before anything is stored. They must all be what the
// Output's Writer writes — the same created_by, Parquet schema, column orders and
// key-value metadata (ARROW:schema) as an empty file of this Output (RuleWriter,
// RuleSchema); every column chunk compressed with the Output's codec (RuleCodec;
// the level is not recorded and not checked), with a column index and an offset
// index (RulePageIndex), no index page (RuleLayout); a native Bloom filter for
// every Bloom column in every row group (RuleBloom); every row group at least
// MinRowGroupBytes (RuleRowGroupSize); Delta statistics with numRecords, tight
// bounds, a nullCount for every statistics column and min/max for every one that
// has non-null values (RuleStats). A source that breaks a rule makes Stitch return
// a *NotStitchableError (errors.Is ErrNotStitchable) with nothing stored; the
// caller then re-encodes. Each source's footer is validated before any offset in
// it is trusted (D10: Open's validation, plus: chunks hold their dictionary and
// data page offsets, offset index pages tile the chunk from its first data page,
// rows add up with the statistics); a damaged source makes Stitch fail with a
// *CorruptError (ErrCorruptData) naming it, with nothing stored.
//
// The statistics of the add are the merge of the sources' (stats.MergeJSON); the
// index Bloom filters are built from the sources' Bloom columns, read (only those
// columns are decoded). The column indexes and offset indexes of the sources are
// held in memory until the footer is written (a few bytes per page), as a Writer
// holds its own; the data streams through StitchOptions.BufferBytes.
//
// With StitchOptions.MergeRowGroups, row groups smaller than MinRowGroupBytes are
// not refused but merged into row groups of at most the Spec's RowGroupBytes
// (merge.go: columns without a dictionary copied page by page, the others
// re-encoded; invariant D12); the other rules stay.
//
// On any error (ctx cancelled, a failed read or write) nothing is left in storage.
func (o *Output) Stitch(ctx context.Context, place FileOptions, sources []StitchSource, opts StitchOptions) (*StitchResult, error) {
	if len(sources) == 0 {
		return nil, fmt.Errorf("%w: Stitch without sources", ErrInvalidArgument)
	}
	if opts.MinRowGroupBytes < 0 || opts.BufferBytes < 0 {
		return nil, fmt.Errorf("%w: negative StitchOptions.MinRowGroupBytes or BufferBytes", ErrInvalidArgument)
	}
	if opts.MinRowGroupBytes == 0 {
		opts.MinRowGroupBytes = DefaultStitchMinRowGroupBytes(o.spec.RowGroupBytes)
	}
	if opts.BufferBytes == 0 {
		opts.BufferBytes = stitchCopyBuffer
	}
	pr := o.probe()
	if pr.err != nil {
		return nil, pr.err
	}
	inputs := make([]*stitchInput, len(sources))
	files := make([]*stats.File, len(sources))
	groups := 0
	for i, src := range sources {
		in, err := o.checkSource(ctx, src, pr, opts, false)
		if err != nil {
			return nil, err
		}
		inputs[i], files[i] = in, src.Stats
		groups += len(in.chunks)
	}
	var plan [][]rgRef
	merging := false
	if opts.MergeRowGroups {
		plan, merging = planMerge(inputs, opts.MinRowGroupBytes, o.spec.RowGroupBytes)
		groups = len(plan)
	}
	if groups > 1<<15-1 {
		return nil, &NotStitchableError{Path: sources[0].Path, Rule: RuleLayout,
			Detail: fmt.Sprintf("%d row groups in all, more than a Parquet ordinal numbers", groups)}
	}
	statsJSON, err := stats.MergeJSON(files, o.file)
	if err != nil {
		return nil, fmt.Errorf("datafile: stitching: %w", err)
	}
	sum, err := o.NewSummary()
	if err != nil {
		return nil, err
	}
	rel, logPath := o.newPath(place)
	obj, err := storage.CreateObject(ctx, o.store, rel)
	if err != nil {
		return nil, fmt.Errorf("datafile: creating data file %s: %w", rel, err)
	}
	res := &StitchResult{}
	var size, rows int64
	if merging {
		size, rows, err = o.writeMerged(ctx, obj, inputs, plan, sum, pr, opts, res)
	} else {
		size, rows, err = o.writeStitched(ctx, obj, inputs, sum, opts, nil)
		res.RowGroups = groups
		for _, in := range inputs {
			for _, ch := range in.chunks {
				res.CopiedChunks += len(ch)
			}
		}
	}
	var filters []bloom.Entry
	if err == nil {
		filters, err = sum.Filters(logPath)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = obj.Abort()
		return nil, err
	}
	if err := obj.Commit(); err != nil {
		return nil, fmt.Errorf("datafile: writing data file %s: %w", rel, err)
	}
	add := o.newAdd(place, logPath, size, statsJSON)
	o.mu.Lock()
	o.stored = append(o.stored, rel)
	o.adds = append(o.adds, add)
	o.filters = append(o.filters, filters...)
	o.closedBytes += size
	o.closedRows += rows
	o.mu.Unlock()
	res.Add = add
	return res, nil
}

// checkSource opens and validates one source and checks the rules of Stitch, or
// with export those of Export (no statistics rules, no row-group size rule: Export
// has its own, on the whole export).
func (o *Output) checkSource(ctx context.Context, src StitchSource, pr *stitchProbe, opts StitchOptions, export bool) (*stitchInput, error) {
	no := func(rule StitchRule, format string, args ...any) error {
		return &NotStitchableError{Path: src.Path, Rule: rule, Detail: fmt.Sprintf(format, args...)}
	}
	bad := func(format string, args ...any) error {
		return &CorruptError{File: src.Path, Err: fmt.Errorf(format, args...)}
	}
	if !export && !opts.MergeRowGroups && src.Size > 0 && src.Size < opts.MinRowGroupBytes {
		// Its row groups are smaller still: refused without a read (the common case
		// of many small files costs no extra request per file).
		return nil, no(RuleRowGroupSize, "the file holds %d bytes, less than %d", src.Size, opts.MinRowGroupBytes)
	}
	sf, err := o.store.Open(ctx, src.Path)
	if err != nil {
		return nil, fmt.Errorf("datafile: stitching: open %s: %w", src.Path, err)
	}
	defer sf.Close()
	if src.Size > 0 && sf.Size() != src.Size {
		return nil, bad("%d bytes stored, the log says %d", sf.Size(), src.Size)
	}
	f := watch(sf)                                            // D10: failed reads are not damage
	r, err := Open(f, sf.Size(), ReadOptions{Name: src.Path}) // D10: the footer is validated
	if err != nil {
		return nil, err
	}
	md := r.Metadata()
	_ = r.Close()

	// Rules on the whole file.
	exp := pr.md
	if md.GetCreatedBy() != exp.GetCreatedBy() {
		return nil, no(RuleWriter, "created by %q, not %q", md.GetCreatedBy(), exp.GetCreatedBy())
	}
	if md.FileMetaData.EncryptionAlgorithm != nil || md.FileMetaData.FooterSigningKeyMetadata != nil {
		return nil, no(RuleWriter, "encrypted")
	}
	if !reflect.DeepEqual(md.FileMetaData.Schema, exp.FileMetaData.Schema) {
		return nil, no(RuleSchema, "Parquet schema differs from the output's")
	}
	if !reflect.DeepEqual(md.FileMetaData.ColumnOrders, exp.FileMetaData.ColumnOrders) {
		return nil, no(RuleSchema, "column orders differ from the output's")
	}
	if !reflect.DeepEqual(kvMap(md.KeyValueMetadata()), pr.kv) {
		return nil, no(RuleSchema, "key-value metadata (ARROW:schema) differs from the output's")
	}
	if export {
		if st := src.Stats; st != nil && st.NumRecords >= 0 && st.NumRecords != md.NumRows {
			return nil, bad("the footer holds %d rows, the statistics say %d", md.NumRows, st.NumRecords)
		}
	} else if err := checkStitchStats(src, md.NumRows, pr, no, bad); err != nil {
		return nil, err
	}

	// Rules per row group and column chunk; offsets checked before they are used.
	codec := o.opts.withDefaults().Codec.parquet()
	ncols := md.Schema.NumColumns()
	bloomLeaf := make([]bool, ncols)
	for c := range ncols {
		if path := md.Schema.Column(c).ColumnPath(); len(path) == 1 {
			_, bloomLeaf[c] = o.opts.BloomColumns[path[0]]
		}
	}
	in := &stitchInput{src: src, md: md, chunks: make([][]chunkCopy, md.NumRowGroups()), rgBytes: make([]int64, md.NumRowGroups())}
	idx, err := prefetchIndexes(f, md)
	if err != nil {
		return nil, named(err, src.Path)
	}
	for rg := range md.NumRowGroups() {
		rgm := md.RowGroup(rg)
		in.chunks[rg] = make([]chunkCopy, ncols)
		var rgBytes int64
		for c := range ncols {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return nil, bad("row group %d column %d: %w", rg, c, err)
			}
			where := fmt.Sprintf("row group %d column %q", rg, md.Schema.Column(c).Path())
			if cc.Compression() != codec {
				return nil, no(RuleCodec, "%s is %s, the output %s", where, cc.Compression(), codec)
			}
			if cc.CryptoMetadata() != nil {
				return nil, no(RuleWriter, "%s is encrypted", where)
			}
			if cc.HasIndexPage() {
				return nil, no(RuleLayout, "%s has an index page", where)
			}
			ciLoc, oiLoc := cc.GetColumnIndexLocation(), cc.GetOffsetIndexLocation()
			if ciLoc == nil || oiLoc == nil {
				return nil, no(RulePageIndex, "%s has no column index or no offset index", where)
			}
			hasBloom := cc.BloomFilterOffset() > 0
			if hasBloom && cc.BloomFilterLength() <= 0 {
				return nil, no(RuleBloom, "%s has a Bloom filter without a length", where)
			}
			if bloomLeaf[c] && !hasBloom {
				return nil, no(RuleBloom, "%s has no Bloom filter", where)
			}
			in.bloom = in.bloom || hasBloom
			// Open validated that the chunk lies inside the file; it must also hold its
			// pages' offsets.
			start, length := cc.DataPageOffset(), cc.TotalCompressedSize()
			if cc.HasDictionaryPage() {
				d := cc.DictionaryPageOffset()
				if d <= 0 || d >= start {
					return nil, bad("%s: dictionary page at %d, data pages at %d", where, d, start)
				}
				start = d
			}
			if length <= cc.DataPageOffset()-start {
				return nil, bad("%s: chunk of %d bytes at %d ends before its first data page at %d", where, length, start, cc.DataPageOffset())
			}
			if md.Schema.Column(c).MaxRepetitionLevel() == 0 && cc.NumValues() != rgm.NumRows() {
				return nil, bad("%s has %d values in %d rows", where, cc.NumValues(), rgm.NumRows())
			}
			ci, err := readIndex(idx, ciLoc, where+": column index")
			if err != nil {
				return nil, named(err, src.Path)
			}
			locs, err := readOffsetIndex(idx, oiLoc, cc.DataPageOffset(), start+length, rgm.NumRows(), where)
			if err != nil {
				if errors.Is(err, ErrNotStitchable) {
					return nil, no(RulePageIndex, "%v", err)
				}
				return nil, named(err, src.Path)
			}
			in.chunks[rg][c] = chunkCopy{start: start, length: length, columnIndex: ci, offsetIndex: locs}
			rgBytes += length
		}
		in.rgBytes[rg] = rgBytes
		if !export && !opts.MergeRowGroups && rgBytes < opts.MinRowGroupBytes {
			return nil, no(RuleRowGroupSize, "row group %d holds %d bytes, less than %d", rg, rgBytes, opts.MinRowGroupBytes)
		}
	}
	return in, nil
}

// checkStitchStats checks the statistics rules of Stitch, and that the footer's
// rows are the log's.
func checkStitchStats(src StitchSource, rows int64, pr *stitchProbe, no func(StitchRule, string, ...any) error, bad func(string, ...any) error) error {
	st := src.Stats
	if st == nil || st.NumRecords < 0 {
		return no(RuleStats, "no numRecords")
	}
	if st.NumRecords != rows {
		return bad("the footer holds %d rows, the statistics say %d", rows, st.NumRecords)
	}
	if !st.TightBounds {
		return no(RuleStats, "bounds are not tight")
	}
	for _, p := range pr.cols {
		if c := st.Column(p...); c == nil || !c.HasNullCount {
			return no(RuleStats, "no nullCount for %q", stats.Key(p...))
		}
	}
	for _, p := range pr.bounds {
		c := st.Column(p...)
		if c.NullCount != st.NumRecords && (c.Min.IsNull() || c.Max.IsNull()) {
			return no(RuleStats, "no minimum or maximum for %q", p)
		}
	}
	return nil
}

// maxIndexSpan bounds the bytes prefetchIndexes reads at once.
const maxIndexSpan = 64 << 20

// prefetchIndexes reads the span of the file that holds every column and offset
// index (the Writer writes them together, before the footer) in one read, so that
// a source on an object store costs one request for its page index, not two per
// column chunk. Locations are those Open validated; a span larger than
// maxIndexSpan is not prefetched (each index is then read on its own).
func prefetchIndexes(f io.ReaderAt, md *metadata.FileMetaData) (io.ReaderAt, error) {
	lo, hi := int64(-1), int64(-1)
	for rg := range md.NumRowGroups() {
		for c := range md.Schema.NumColumns() {
			cc, err := md.RowGroup(rg).ColumnChunk(c)
			if err != nil {
				return nil, corruptf("row group %d column %d: %w", rg, c, err)
			}
			for _, loc := range []*metadata.IndexLocation{cc.GetColumnIndexLocation(), cc.GetOffsetIndexLocation()} {
				if loc == nil {
					continue
				}
				if lo < 0 || loc.Offset < lo {
					lo = loc.Offset
				}
				hi = max(hi, loc.Offset+int64(loc.Length))
			}
		}
	}
	if lo < 0 || hi-lo > maxIndexSpan {
		return f, nil
	}
	b := make([]byte, hi-lo)
	if _, err := f.ReadAt(b, lo); err != nil {
		return nil, corruptf("page index at %d: %w", lo, err)
	}
	return &spanReader{f: f, at: lo, b: b}, nil
}

// spanReader serves reads inside b (the bytes of f at at) from memory, others
// from f.
type spanReader struct {
	f  io.ReaderAt
	at int64
	b  []byte
}

func (s *spanReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.at && off-s.at <= int64(len(s.b)) && int64(len(p)) <= int64(len(s.b))-(off-s.at) {
		return copy(p, s.b[off-s.at:]), nil
	}
	return s.f.ReadAt(p, off)
}

// readIndex reads the page index entry at loc (validated by Open to lie inside the
// file).
func readIndex(f io.ReaderAt, loc *metadata.IndexLocation, what string) ([]byte, error) {
	if loc.Length <= 0 || loc.Length > maxIndexBytes {
		return nil, corruptf("%s of %d bytes", what, loc.Length)
	}
	b := make([]byte, loc.Length)
	if _, err := f.ReadAt(b, loc.Offset); err != nil {
		return nil, corruptf("%s at %d: %w", what, loc.Offset, err)
	}
	return b, nil
}

// readOffsetIndex reads and checks an offset index: its pages must tile the chunk
// from its first data page (dataStart) to its end, their first rows rising from 0
// below rows. Fields the rebuilt index would lose make it ErrNotStitchable.
func readOffsetIndex(f io.ReaderAt, loc *metadata.IndexLocation, dataStart, end, rows int64, where string) ([]metadata.PageLocation, error) {
	raw, err := readIndex(f, loc, where+": offset index")
	if err != nil {
		return nil, err
	}
	oi, err := decodeOffsetIndex(raw, where)
	if err != nil {
		return nil, err
	}
	if len(oi.GetUnencodedByteArrayDataBytes()) > 0 {
		return nil, fmt.Errorf("%w: %s: offset index with unencoded byte array sizes", ErrNotStitchable, where)
	}
	pages := oi.GetPageLocations()
	if len(pages) == 0 && rows > 0 {
		return nil, corruptf("%s: offset index without pages", where)
	}
	out := make([]metadata.PageLocation, len(pages))
	at, prevRow := dataStart, int64(-1)
	for i, p := range pages {
		if p == nil || p.Offset != at || p.CompressedPageSize <= 0 || int64(p.CompressedPageSize) > end-at ||
			p.FirstRowIndex <= prevRow || p.FirstRowIndex >= max(rows, 1) || (i == 0 && p.FirstRowIndex != 0) {
			return nil, corruptf("%s: offset index page %d does not follow the chunk's pages", where, i)
		}
		out[i] = metadata.PageLocation{Offset: p.Offset, CompressedPageSize: p.CompressedPageSize, FirstRowIndex: p.FirstRowIndex}
		at += int64(p.CompressedPageSize)
		prevRow = p.FirstRowIndex
	}
	if at != end {
		return nil, corruptf("%s: offset index pages end at %d, the chunk at %d", where, at, end)
	}
	return out, nil
}

// decodeOffsetIndex decodes a serialized offset index (arrow-go panics on bad input:
// contained, D10).
func decodeOffsetIndex(raw []byte, where string) (oi metadata.OffsetIndex, err error) {
	defer guard.Contain(&err, where+": offset index")
	oi = metadata.NewOffsetIndex(raw, nil, nil)
	if oi == nil {
		return nil, corruptf("%s: offset index does not decode", where)
	}
	return oi, nil
}

// writeStitched writes the stitched file to w (see the layout above) and returns its
// size and rows. The sources' footers (in.md) are rewritten in place. A nil sum
// builds no index Bloom filters (Export); retarget, if set, rewrites the combined
// footer (Export: the export's schema) before it is serialized and validated.
func (o *Output) writeStitched(ctx context.Context, w io.Writer, inputs []*stitchInput, sum *Summary, opts StitchOptions, retarget func(*metadata.FileMetaData)) (size, rows int64, err error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := &countingWriter{w: bw}
	buf := make([]byte, opts.BufferBytes)
	if _, err := cw.Write([]byte("PAR1")); err != nil {
		return 0, 0, fmt.Errorf("datafile: stitching: %w", err)
	}
	// Row groups: the column chunks, byte for byte; contiguous chunks (a row group's,
	// and row groups one after the other, as the Writer lays them out) are copied as
	// one range.
	ordinal := int16(0)
	shifts := make([][][]int64, len(inputs))
	for i, in := range inputs {
		shifts[i] = make([][]int64, len(in.chunks))
		err := o.withSource(ctx, in, func(f storage.File) error {
			cp := &rangeCopier{w: cw, f: f, buf: buf}
			for rg, chunks := range in.chunks {
				trg := in.md.RowGroups[rg]
				shifts[i][rg] = make([]int64, len(chunks))
				first := cp.pos()
				for c, ch := range chunks {
					if err := ctx.Err(); err != nil {
						return err
					}
					shift := cp.pos() - ch.start
					if err := cp.add(ch.start, ch.length); err != nil {
						return fmt.Errorf("datafile: stitching %s row group %d column %d: %w", in.src.Path, rg, c, err)
					}
					shifts[i][rg][c] = shift
					tc := trg.Columns[c]
					tc.MetaData.DataPageOffset += shift
					if tc.MetaData.DictionaryPageOffset != nil {
						d := *tc.MetaData.DictionaryPageOffset + shift
						tc.MetaData.DictionaryPageOffset = &d
					}
					if tc.FileOffset != 0 {
						tc.FileOffset += shift
					}
				}
				start, ord := first, ordinal
				trg.FileOffset, trg.Ordinal = &start, &ord
				ordinal++
				rows += trg.NumRows
			}
			if err := cp.flush(); err != nil {
				return fmt.Errorf("datafile: stitching %s: %w", in.src.Path, err)
			}
			if sum == nil {
				return nil
			}
			return o.addBloomColumns(ctx, f, in, nil, sum)
		})
		if err != nil {
			return 0, 0, err
		}
		if opts.Progress != nil {
			opts.Progress(i)
		}
	}
	// Bloom filters, copied (contiguous ones as one range).
	for _, in := range inputs {
		if !in.bloom {
			continue
		}
		err := o.withSource(ctx, in, func(f storage.File) error {
			cp := &rangeCopier{w: cw, f: f, buf: buf}
			for rg := range in.chunks {
				for c, tc := range in.md.RowGroups[rg].Columns {
					if tc.MetaData.BloomFilterOffset == nil || *tc.MetaData.BloomFilterOffset <= 0 {
						continue
					}
					if err := ctx.Err(); err != nil {
						return err
					}
					at := cp.pos()
					if err := cp.add(*tc.MetaData.BloomFilterOffset, int64(*tc.MetaData.BloomFilterLength)); err != nil {
						return fmt.Errorf("datafile: stitching %s row group %d column %d Bloom filter: %w", in.src.Path, rg, c, err)
					}
					tc.MetaData.BloomFilterOffset = &at
				}
			}
			if err := cp.flush(); err != nil {
				return fmt.Errorf("datafile: stitching %s Bloom filters: %w", in.src.Path, err)
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
	}
	// Column indexes (no offsets inside), then offset indexes (page offsets shifted).
	for _, in := range inputs {
		for rg, chunks := range in.chunks {
			for c, ch := range chunks {
				at, n := cw.n, int32(len(ch.columnIndex))
				if _, err := cw.Write(ch.columnIndex); err != nil {
					return 0, 0, fmt.Errorf("datafile: stitching: %w", err)
				}
				tc := in.md.RowGroups[rg].Columns[c]
				tc.ColumnIndexOffset, tc.ColumnIndexLength = &at, &n
			}
		}
	}
	for i, in := range inputs {
		for rg, chunks := range in.chunks {
			for c, ch := range chunks {
				var b metadata.OffsetIndexBuilder
				for _, p := range ch.offsetIndex {
					if err := b.AddPage(p.Offset+shifts[i][rg][c], p.FirstRowIndex, p.CompressedPageSize); err != nil {
						return 0, 0, fmt.Errorf("datafile: stitching: offset index: %w", err)
					}
				}
				if err := b.Finish(0); err != nil {
					return 0, 0, fmt.Errorf("datafile: stitching: offset index: %w", err)
				}
				at := cw.n
				if _, err := b.WriteTo(cw, nil); err != nil {
					return 0, 0, fmt.Errorf("datafile: stitching: %w", err)
				}
				n := int32(cw.n - at)
				tc := in.md.RowGroups[rg].Columns[c]
				tc.OffsetIndexOffset, tc.OffsetIndexLength = &at, &n
			}
		}
	}
	footer, err := stitchedFooter(inputs, rows, cw.n, retarget)
	if err != nil {
		return 0, 0, err
	}
	if err := writeFooter(cw, bw, footer); err != nil {
		return 0, 0, err
	}
	return cw.n, rows, nil
}

// writeFooter ends a stitched or merged file: the serialized footer, its length and
// the closing magic, then flushes bw (which cw counts into). It returns the first
// error of any of these writes.
func writeFooter(cw *countingWriter, bw *bufio.Writer, footer []byte) error {
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(len(footer)))
	copy(tail[4:], "PAR1")
	_, err := cw.Write(footer)
	if err == nil {
		_, err = cw.Write(tail[:])
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("datafile: stitching: writing the footer: %w", err)
	}
	return nil
}

// stitchedFooter serializes the footer of the stitched file, whose footer starts at
// at: the first source's file metadata with every source's (shifted) row groups.
// retarget, if set, rewrites that metadata first. The bytes are parsed back and
// validated against the file they end (D10 of our own output: a bad offset is
// caught here, before the file is published).
func stitchedFooter(inputs []*stitchInput, rows, at int64, retarget func(*metadata.FileMetaData)) ([]byte, error) {
	base := inputs[0].md
	all := base.RowGroups[:len(base.RowGroups):len(base.RowGroups)]
	for _, in := range inputs[1:] {
		all = append(all, in.md.RowGroups...)
	}
	base.RowGroups = all
	if retarget != nil {
		retarget(base)
	}
	return footerBytes(base, rows, at)
}

// footerBytes serializes md, with rows rows, as the footer of a file whose footer
// starts at at, and validates it as D10 validates a source's: parsed back,
// every offset inside the file, rows adding up.
func footerBytes(md *metadata.FileMetaData, rows, at int64) ([]byte, error) {
	md.NumRows = rows
	var buf bytes.Buffer
	if _, err := md.WriteTo(&buf, nil); err != nil {
		return nil, fmt.Errorf("datafile: stitching: footer: %w", err)
	}
	back, err := parseFooter(buf.Bytes())
	if err == nil {
		_, _, err = validateFooter(back, at+int64(buf.Len())+8)
	}
	if err == nil && (back.NumRows != rows || back.NumRowGroups() != len(md.RowGroups)) {
		err = corruptf("footer reads back as %d rows in %d row groups", back.NumRows, back.NumRowGroups())
	}
	if err != nil {
		return nil, fmt.Errorf("datafile: stitching: internal error: the stitched footer does not validate: %w", err)
	}
	return buf.Bytes(), nil
}

// parseFooter decodes serialized file metadata (contained, D10).
func parseFooter(b []byte) (md *metadata.FileMetaData, err error) {
	defer guard.Contain(&err, "footer")
	md, err = metadata.NewFileMetaData(b, nil)
	if err != nil {
		return nil, corruptf("footer: %w", err)
	}
	return md, nil
}

// withSource opens in's file for fn and closes it afterwards.
func (o *Output) withSource(ctx context.Context, in *stitchInput, fn func(storage.File) error) error {
	f, err := o.store.Open(ctx, in.src.Path)
	if err != nil {
		return fmt.Errorf("datafile: stitching: open %s: %w", in.src.Path, err)
	}
	defer f.Close()
	return fn(watchedFile{File: f, w: watch(f)}) // D10: failed reads are not damage
}

// watchedFile is a storage.File whose reads go through a watchedReaderAt.
type watchedFile struct {
	storage.File
	w *watchedReaderAt
}

func (f watchedFile) ReadAt(p []byte, off int64) (int, error) { return f.w.ReadAt(p, off) }

// rangeCopier copies ranges of f to w, merging each range that starts where the
// previous one ended into one copy (one read per buffer of a contiguous run).
type rangeCopier struct {
	w            *countingWriter
	f            io.ReaderAt
	buf          []byte
	off, pending int64 // the run not copied yet
}

// pos is where the next range added will land in w.
func (c *rangeCopier) pos() int64 { return c.w.n + c.pending }

// add queues n bytes at off, copying the run before when off does not continue it.
func (c *rangeCopier) add(off, n int64) error {
	if c.pending > 0 && off == c.off+c.pending {
		c.pending += n
		return nil
	}
	if err := c.flush(); err != nil {
		return err
	}
	c.off, c.pending = off, n
	return nil
}

// flush copies the queued run.
func (c *rangeCopier) flush() error {
	if c.pending == 0 {
		return nil
	}
	off, n := c.off, c.pending
	c.pending = 0
	return copyRange(c.w, c.f, off, n, c.buf)
}

// copyRange copies n bytes at off of f to w through buf.
func copyRange(w io.Writer, f io.ReaderAt, off, n int64, buf []byte) error {
	got, err := io.CopyBuffer(w, io.NewSectionReader(f, off, n), buf)
	if err != nil {
		return err
	}
	if got != n {
		return corruptf("%d bytes at %d, %d read", n, off, got)
	}
	return nil
}

// addBloomColumns feeds the index Bloom filters with the Bloom columns of one
// source's row groups (nil: all; only those columns are decoded).
func (o *Output) addBloomColumns(ctx context.Context, f storage.File, in *stitchInput, rowGroups []int, sum *Summary) error {
	if len(o.bloom) == 0 {
		return nil
	}
	fields := make([]arrow.Field, len(o.bloom))
	for i, b := range o.bloom {
		fields[i] = o.file.Field(b.idx)
	}
	want := arrow.NewSchema(fields, nil)
	r, err := Open(f, f.Size(), ReadOptions{Name: in.src.Path, Allocator: o.spec.Allocator})
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Read(ctx, want, rowGroups, func(rec arrow.RecordBatch, _ int64) error {
		for i, b := range sum.builders {
			if err := b.AddArray(rec.Column(i)); err != nil {
				return fmt.Errorf("datafile: Bloom filter on %q: %w", o.bloom[i].phys, err)
			}
		}
		return nil
	})
}

// stitchState is the Output's lazily built stitching probe.
type stitchState struct {
	probeOnce   sync.Once
	stitchProbe *stitchProbe
	exports     exportProbes // Export's probes (export.go)
}
