package datafile

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Damaged files (invariant D10). arrow-go v18.8.0's Parquet reader panics on some
// damaged inputs instead of returning an error: a nil page header, an invalid logical
// type, a makeslice with a corrupt length, an encoding it does not implement (about 1
// in 100 random byte mutations of a small file). Two defences, in this order:
//
//  1. validate what the footer says before anything is decoded (validateFooter): row
//     counts, column chunk and index ranges inside the file, page sizes bounded by the
//     column chunks they belong to. Most damage is refused here, with a precise message.
//  2. contain what validation cannot see (page headers, encoded values) at the call
//     into the decoder: each function below does nothing but call one arrow-go decoder
//     entry point, and turns a panic raised inside it into a CorruptError. Nothing of
//     skiplake's own code runs under these recovers (emit callbacks and conversions
//     run outside them), so a bug of ours still crashes loudly. A decoder that panicked
//     is not used again: the read fails.
//
// Upstream issue class: apache/arrow#43605 (panics on malformed Parquet input).

// contain recovers a panic of the decoder call it guards into *err.
func contain(err *error, what string) {
	if v := recover(); v != nil {
		*err = corruptf("%s: %w: %v", what, errDecoderPanic, v)
	}
}

// openParquet parses the footer (or reuses md) and the Arrow schema.
func openParquet(src parquet.ReaderAtSeeker, props *parquet.ReaderProperties, md *metadata.FileMetaData, arrowProps pqarrow.ArrowReadProperties, mem memory.Allocator) (pr *file.Reader, fr *pqarrow.FileReader, sc *arrow.Schema, err error) {
	defer contain(&err, "footer")
	opts := []file.ReadOption{file.WithReadProps(props)}
	if md != nil {
		opts = append(opts, file.WithMetadata(md))
	}
	pr, err = file.NewParquetReader(src, opts...)
	if err != nil {
		return nil, nil, nil, corruptf("footer: %w", err)
	}
	if md == nil {
		if err := checkArrowSchema(pr.MetaData().KeyValueMetadata()); err != nil {
			_ = pr.Close()
			return nil, nil, nil, err
		}
	}
	fr, err = pqarrow.NewFileReader(pr, arrowProps, mem)
	if err == nil && md == nil {
		sc, err = fr.Schema()
	}
	if err != nil {
		_ = pr.Close()
		return nil, nil, nil, corruptf("arrow schema: %w", err)
	}
	return pr, fr, sc, nil
}

// checkArrowSchema refuses an ARROW:schema footer entry whose IPC message claims more
// than it holds. arrow-go allocates what a length in the message says before it reads
// what the length covers, so a damaged length is an allocation of gigabytes: a fatal
// out-of-memory that no recover contains. The entry is base64 of an IPC stream whose
// first message is the schema: [0xFFFFFFFF] int32 metadata length, then a flatbuffer
// Message (Message.fbs/Schema.fbs) and its body. Checked: the metadata length, the
// body length, and every vector arrow-go sizes a slice from (Schema.fields,
// Field.children, the custom_metadata of both) against the bytes that hold it.
func checkArrowSchema(kv metadata.KeyValueMetadata) error {
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var raw []byte
	var err error
	if len(*v)%4 == 0 { // decoded as pqarrow does: padded, else unpadded
		raw, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(raw) == 0 || err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return corruptf("footer: ARROW:schema is not base64: %w", err)
		}
	}
	if err := checkSchemaMessage(raw); err != nil {
		return corruptf("footer: ARROW:schema of %d bytes: %w", len(raw), err)
	}
	return nil
}

// checkSchemaMessage checks the lengths of an IPC schema message (see checkArrowSchema).
func checkSchemaMessage(raw []byte) error {
	at := int64(0)
	n, err := fbuf(raw).u32(at)
	if err == nil && n == 0xFFFFFFFF {
		at += 4
		n, err = fbuf(raw).u32(at)
	}
	if err != nil {
		return errors.New("no message length")
	}
	at += 4
	if int32(n) < 4 || int64(n) > int64(len(raw))-at {
		return fmt.Errorf("message length %d, %d bytes follow", int32(n), int64(len(raw))-at)
	}
	b := fbuf(raw[at : at+int64(n)])
	rest := int64(len(raw)) - at - int64(n)
	root, err := b.u32(0)
	if err != nil {
		return err
	}
	// Message: version 0, header_type 1, header 2, bodyLength 3, custom_metadata 4.
	if f, ok, err := b.field(int64(root), 3); err != nil {
		return err
	} else if ok {
		body, err := b.u64(f)
		if err != nil {
			return err
		}
		if int64(body) < 0 || int64(body) > rest {
			return fmt.Errorf("message body of %d bytes, %d follow", int64(body), rest)
		}
	}
	if _, _, err := b.vector(int64(root), 4, 4); err != nil {
		return err
	}
	schema, ok, err := b.ref(int64(root), 2)
	if err != nil || !ok {
		return err
	}
	// Schema: endianness 0, fields 1, custom_metadata 2, features 3.
	if _, _, err := b.vector(schema, 2, 4); err != nil {
		return err
	}
	budget := len(b) // fields visited: a field shared by many parents is not a tree
	return b.fields(schema, 1, 0, &budget)
}

// fbuf reads a flatbuffer, every access bounds-checked.
type fbuf []byte

func (b fbuf) u32(at int64) (uint32, error) {
	if at < 0 || at > int64(len(b))-4 {
		return 0, fmt.Errorf("offset %d outside the message", at)
	}
	return binary.LittleEndian.Uint32(b[at:]), nil
}

func (b fbuf) u64(at int64) (uint64, error) {
	if at < 0 || at > int64(len(b))-8 {
		return 0, fmt.Errorf("offset %d outside the message", at)
	}
	return binary.LittleEndian.Uint64(b[at:]), nil
}

// field returns where field slot of the table at tab is stored (ok false: absent).
func (b fbuf) field(tab int64, slot int) (at int64, ok bool, err error) {
	soff, err := b.u32(tab)
	if err != nil {
		return 0, false, err
	}
	vt := tab - int64(int32(soff))
	if vt < 0 || vt > int64(len(b))-4 {
		return 0, false, fmt.Errorf("vtable at %d outside the message", vt)
	}
	vtSize := int64(binary.LittleEndian.Uint16(b[vt:]))
	s := int64(4 + 2*slot)
	if s >= vtSize { // as flatbuffers decides presence (an odd size counts)
		return 0, false, nil
	}
	if vt+s+2 > int64(len(b)) {
		return 0, false, fmt.Errorf("vtable at %d outside the message", vt)
	}
	off := int64(binary.LittleEndian.Uint16(b[vt+s:]))
	if off == 0 {
		return 0, false, nil
	}
	return tab + off, true, nil
}

// ref follows the offset stored in field slot of the table at tab.
func (b fbuf) ref(tab int64, slot int) (at int64, ok bool, err error) {
	f, ok, err := b.field(tab, slot)
	if err != nil || !ok {
		return 0, false, err
	}
	off, err := b.u32(f)
	if err != nil {
		return 0, false, err
	}
	return f + int64(off), true, nil
}

// vector returns the first element and length of the vector in field slot of the
// table at tab, checked to fit in the message with elements of size bytes.
func (b fbuf) vector(tab int64, slot int, size int64) (start, n int64, err error) {
	at, ok, err := b.ref(tab, slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	l, err := b.u32(at)
	if err != nil {
		return 0, 0, err
	}
	start, n = at+4, int64(l)
	if n > (int64(len(b))-start)/size {
		return 0, 0, fmt.Errorf("vector of %d elements at %d does not fit in the message", n, at)
	}
	return start, n, nil
}

// fields checks the vector of Field tables in field slot of the table at tab, and
// their children. Field: name 0, nullable 1, type_type 2, type 3, dictionary 4,
// children 5, custom_metadata 6.
func (b fbuf) fields(tab int64, slot, depth int, budget *int) error {
	start, n, err := b.vector(tab, slot, 4)
	if err != nil {
		return err
	}
	if depth > 64 {
		return errors.New("fields nested more than 64 deep")
	}
	for i := range n {
		if *budget--; *budget < 0 {
			return errors.New("more fields than the message has bytes")
		}
		off, err := b.u32(start + 4*i)
		if err != nil {
			return err
		}
		f := start + 4*i + int64(off)
		if _, _, err := b.vector(f, 6, 4); err != nil {
			return err
		}
		if err := b.fields(f, 5, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

// recordReader starts pqarrow's record reader over leaves of row group rg.
func recordReader(ctx context.Context, fr *pqarrow.FileReader, leaves []int, rg int) (rr pqarrow.RecordReader, err error) {
	defer contain(&err, fmt.Sprintf("row group %d", rg))
	rr, err = fr.GetRecordReader(ctx, leaves, []int{rg})
	if err != nil {
		return nil, corruptf("row group %d: %w", rg, err)
	}
	return rr, nil
}

// nextRecord advances rr; ok false with a nil error is the end of the row group.
func nextRecord(rr pqarrow.RecordReader, rg int, pos int64) (ok bool, err error) {
	defer contain(&err, fmt.Sprintf("row group %d at row %d", rg, pos))
	if rr.Next() {
		return true, nil
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return false, corruptf("row group %d at row %d: %w", rg, pos, err)
	}
	return false, nil
}

// releaseRecords releases a record reader, which may panic once its decoder did.
func releaseRecords(rr pqarrow.RecordReader) {
	defer func() { _ = recover() }()
	rr.Release()
}

// fieldReaders starts pqarrow's column readers over leaves of row group rg.
func fieldReaders(ctx context.Context, fr *pqarrow.FileReader, leaves []int, rg int) (readers []*pqarrow.ColumnReader, err error) {
	defer contain(&err, fmt.Sprintf("row group %d", rg))
	readers, _, err = fr.GetFieldReaders(ctx, leaves, []int{rg})
	if err != nil {
		return nil, corruptf("row group %d: %w", rg, err)
	}
	return readers, nil
}

// releaseColumn releases a column reader, which may panic once its decoder did.
func releaseColumn(cr *pqarrow.ColumnReader) {
	defer func() { _ = recover() }()
	cr.Release()
}

// seekColumn seeks a column reader to row (relative to its row group).
func seekColumn(cr *pqarrow.ColumnReader, row int64, what string) (err error) {
	defer contain(&err, what)
	if err := cr.SeekToRow(row); err != nil {
		return corruptf("%s: seek to row %d: %w", what, row, err)
	}
	return nil
}

// nextColumnBatch reads the next n rows of a column reader.
func nextColumnBatch(cr *pqarrow.ColumnReader, n int64, what string) (ch *arrow.Chunked, err error) {
	defer contain(&err, what)
	ch, err = cr.NextBatch(n)
	if err != nil {
		return nil, corruptf("%s: %w", what, err)
	}
	return ch, nil
}

// columnChunk opens the low-level reader of one column chunk.
func columnChunk(pr *file.Reader, rg, leaf int) (cc file.ColumnChunkReader, err error) {
	defer contain(&err, fmt.Sprintf("row group %d column %d", rg, leaf))
	cc, err = pr.RowGroup(rg).Column(leaf)
	if err != nil {
		return nil, corruptf("row group %d column %d: %w", rg, leaf, err)
	}
	return cc, nil
}

// readInt96 reads up to n levels of an INT96 column chunk.
func readInt96(cr *file.Int96ColumnChunkReader, n int64, vals []parquet.Int96, defs []int16) (levels int64, nvals int, err error) {
	defer contain(&err, "INT96 column")
	return cr.ReadBatch(n, vals, defs, nil)
}

// validateFooter checks what the footer says against the file of size bytes before
// any page is decoded: row counts add up, every column chunk, page index and Bloom
// filter lies inside the file, and the schema has the columns the row groups
// describe. It returns the largest column chunk (compressed and uncompressed bytes),
// which bound every page in the file.
func validateFooter(md *metadata.FileMetaData, size int64) (maxCompressed, maxUncompressed int64, err error) {
	defer contain(&err, "footer")
	ncols := md.Schema.NumColumns()
	var rows int64
	inFile := func(off, n int64) bool { return off >= 0 && n >= 0 && off <= size && n <= size-off }
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		rgm := md.RowGroup(rg)
		n := rgm.NumRows()
		if n < 0 {
			return 0, 0, corruptf("row group %d has %d rows", rg, n)
		}
		rows += n
		if rgm.NumColumns() != ncols {
			return 0, 0, corruptf("row group %d has %d column chunks, the schema %d columns", rg, rgm.NumColumns(), ncols)
		}
		for c := 0; c < ncols; c++ {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return 0, 0, corruptf("row group %d column %d: %w", rg, c, err)
			}
			if cc.FilePath() != "" {
				return 0, 0, corruptf("row group %d column %d is in another file (%q)", rg, c, cc.FilePath())
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			clen, ulen := cc.TotalCompressedSize(), cc.TotalUncompressedSize()
			if !inFile(start, clen) || ulen < 0 {
				return 0, 0, corruptf("row group %d column %d: chunk at %d of %d bytes (%d uncompressed) is not inside the file of %d bytes",
					rg, c, start, clen, ulen, size)
			}
			if cc.NumValues() < 0 {
				return 0, 0, corruptf("row group %d column %d has %d values", rg, c, cc.NumValues())
			}
			for _, loc := range []*metadata.IndexLocation{cc.GetColumnIndexLocation(), cc.GetOffsetIndexLocation()} {
				if loc != nil && !inFile(loc.Offset, int64(loc.Length)) {
					return 0, 0, corruptf("row group %d column %d: page index at %d of %d bytes is not inside the file", rg, c, loc.Offset, loc.Length)
				}
			}
			if off := cc.BloomFilterOffset(); off > 0 && !inFile(off, max(0, int64(cc.BloomFilterLength()))) {
				return 0, 0, corruptf("row group %d column %d: Bloom filter at %d is not inside the file", rg, c, off)
			}
			maxCompressed, maxUncompressed = max(maxCompressed, clen), max(maxUncompressed, ulen)
		}
	}
	if rows != md.NumRows {
		return 0, 0, corruptf("row groups hold %d rows, the footer says %d", rows, md.NumRows)
	}
	return maxCompressed, maxUncompressed, nil
}
