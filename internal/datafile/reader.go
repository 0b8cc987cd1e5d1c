package datafile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/dv"
)

// Field metadata keys the reader matches columns by (invariant D1).
const (
	// FieldIDKey is the Arrow field metadata key of a Parquet field id.
	FieldIDKey = "PARQUET:field_id"
	// ColumnMappingIDKey is the Delta column-mapping id, used when FieldIDKey is absent.
	ColumnMappingIDKey = "delta.columnMapping.id"
	// PhysicalNameKey is the Delta column-mapping physical name of a field.
	PhysicalNameKey = "delta.columnMapping.physicalName"
)

// DefaultBatchSize is the default number of rows per emitted batch.
const DefaultBatchSize = 64 << 10

// DefaultStreamBufferBytes is the default read buffer of one column chunk stream.
const DefaultStreamBufferBytes = 1 << 20

// DefaultBatchBytes is the default target size of an emitted batch (see
// ReadOptions.BatchBytes).
const DefaultBatchBytes = 8 << 20

// minBatchRows is the fewest rows BatchBytes reduces a batch to.
const minBatchRows = 1024

// ReadOptions configures a [Reader]. The zero value is the documented default.
type ReadOptions struct {
	// BatchSize is the maximum number of rows per emitted batch; default DefaultBatchSize.
	BatchSize int64
	// BatchBytes is the target decoded size of a batch: in row groups whose requested
	// columns are wide, batches hold fewer than BatchSize rows (estimated from the
	// columns' uncompressed size per row in the footer, never below 1024 rows), so
	// memory per batch stays near BatchBytes. Default DefaultBatchBytes.
	BatchBytes int64
	// Allocator allocates the Arrow buffers of emitted batches; default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Deleted, when non-nil, is the file's deletion vector: rows whose file position
	// it contains are removed from every emitted batch (invariant D6). Load it with
	// [LoadDeletionVector].
	Deleted *dv.Deleted
	// StreamBufferBytes is the read buffer of each column chunk while a row group is
	// read whole: column chunks are streamed through it rather than fetched into memory
	// whole, so a reader holds about StreamBufferBytes per column read, whatever the
	// row group size. Default DefaultStreamBufferBytes.
	StreamBufferBytes int64
	// Name names the file in errors (a *CorruptError's File); default "data file".
	Name string
	// Footer, when non-nil, is the file's footer as an earlier Reader of the same file
	// read it ([Reader.Footer]): Open then reads nothing from the file, and reads of the
	// page indexes and Bloom filters are served from the Footer once it holds them.
	// Open fails with ErrInvalidArgument when the Footer was read from a file of
	// another size.
	Footer *Footer
}

// Reader reads one Parquet data file. Read and ReadRanges may be called concurrently
// from several goroutines (each call streams through readers of its own that share
// the parsed footer); Metadata, Schema and the row-group accessors are safe for
// concurrent use too. ParquetReader's page index and Bloom filter readers are not: use
// them from one goroutine at a time.
type Reader struct {
	pr      *file.Reader
	fr      *pqarrow.FileReader // schema manifest only (read-only after Open)
	schema  *arrow.Schema
	mem     memory.Allocator
	batch   int64
	bytes   int64 // target batch size in bytes
	buffer  int64
	deleted *dv.Deleted
	rgStart []int64
	src     *io.SectionReader
	name    string
	// maxPage bounds a compressed page: the largest column chunk of the file (a
	// page header claiming more is refused before anything is allocated for it).
	maxPage int64
	watch   *watchedReaderAt // the storage reads under src (D10)
	footer  *Footer
}

// Open reads the footer of the Parquet file held by ra (size bytes long). ra is not closed
// by the Reader (a storage.File satisfies io.ReaderAt; the caller closes it after the
// Reader is no longer used).
func Open(ra io.ReaderAt, size int64, opts ReadOptions) (*Reader, error) {
	if ra == nil {
		return nil, fmt.Errorf("%w: nil reader", ErrInvalidArgument)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.StreamBufferBytes <= 0 {
		opts.StreamBufferBytes = DefaultStreamBufferBytes
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	if ft := opts.Footer; ft != nil {
		if ft.size != size {
			return nil, fmt.Errorf("%w: %s: the footer given was read from a file of %d bytes, not %d",
				ErrInvalidArgument, nameOr(opts.Name), ft.size, size)
		}
		if err := opts.Deleted.CheckRows(ft.md.NumRows); err != nil {
			return nil, fmt.Errorf("datafile: %s: %w", nameOr(opts.Name), err) // D6: never applied (dv V5)
		}
		w := watch(withFooter(ra, ft))
		src := io.NewSectionReader(w, 0, size)
		pr, fr, _, err := openParquet(src, parquet.NewReaderProperties(opts.Allocator), ft.md,
			pqarrow.ArrowReadProperties{BatchSize: opts.BatchSize}, opts.Allocator)
		if err != nil {
			return nil, w.named(err, opts.Name)
		}
		return &Reader{pr: pr, fr: fr, schema: ft.schema, mem: opts.Allocator, batch: opts.BatchSize, bytes: opts.BatchBytes, buffer: opts.StreamBufferBytes,
			deleted: opts.Deleted, rgStart: ft.rgStart, src: src, name: opts.Name, maxPage: ft.maxPage, watch: w, footer: ft}, nil
	}
	// A SectionReader adds the Seek that the Parquet reader wants, and has no Close, so
	// closing the Parquet reader never closes ra. Reads go through a watch that tells
	// failed storage reads from damage (D10); once the footer is known, reads of its
	// index region go through the Footer, which loads the region with one read.
	fra := &lateFooterReaderAt{ra: ra}
	w := watch(fra)
	src := io.NewSectionReader(w, 0, size)
	pr, fr, sc, err := openParquet(src, parquet.NewReaderProperties(opts.Allocator), nil,
		pqarrow.ArrowReadProperties{BatchSize: opts.BatchSize}, opts.Allocator)
	if err != nil {
		return nil, w.named(err, opts.Name)
	}
	md := pr.MetaData()
	maxCompressed, _, err := validateFooter(md, size)
	if err != nil {
		_ = pr.Close()
		return nil, w.named(err, opts.Name)
	}
	if err := opts.Deleted.CheckRows(md.NumRows); err != nil {
		_ = pr.Close()
		return nil, fmt.Errorf("datafile: %s: %w", nameOr(opts.Name), err) // D6: never applied (dv V5)
	}
	ft := newFooter(md, sc, size, maxCompressed)
	fra.ra = withFooter(ra, ft) // set before the Reader is handed out: no reader runs yet
	return &Reader{pr: pr, fr: fr, schema: sc, mem: opts.Allocator, batch: opts.BatchSize, bytes: opts.BatchBytes, buffer: opts.StreamBufferBytes,
		deleted: opts.Deleted, rgStart: ft.rgStart, src: src, name: opts.Name, maxPage: maxCompressed, watch: w, footer: ft}, nil
}

// lateFooterReaderAt is the io.ReaderAt under a Reader opened without a Footer: its
// target becomes the Footer's reader (withFooter) once the footer is parsed, before
// the Reader is returned.
type lateFooterReaderAt struct{ ra io.ReaderAt }

// ReadAt implements io.ReaderAt.
func (l *lateFooterReaderAt) ReadAt(b []byte, off int64) (int, error) { return l.ra.ReadAt(b, off) }

// nameOr is a file's name for messages.
func nameOr(name string) string {
	if name == "" {
		return "data file"
	}
	return name
}

// Footer returns what Open read of the file (or was given), for later Opens of the
// same file ([ReadOptions.Footer]; [FooterCache]).
func (r *Reader) Footer() *Footer { return r.footer }

// named names err with the Reader's file (see watchedReaderAt.named).
func (r *Reader) named(err error) error { return r.watch.named(err, r.name) }

// streamReaders opens Parquet and pqarrow readers for one Read or ReadRanges call:
// they stream each column chunk through a buffer of bufferBytes and share the parsed
// footer, so concurrent calls never share decoder state. The caller closes the
// returned file.Reader.
func (r *Reader) streamReaders(bufferBytes int64) (*file.Reader, *pqarrow.FileReader, error) {
	// Page buffers with room past the page for zstd's fast copies (slackAllocator).
	props := parquet.NewReaderProperties(slackAllocator{r.mem})
	props.BufferedStreamEnabled = true
	props.BufferSize = bufferBytes
	// No page of the file is larger than its largest column chunk (D10).
	props.MaxCompressedPageSize = min(parquet.DefaultMaxCompressedPageSize, r.maxPage+1)
	// PreAllocBinaryData sizes each string batch's data buffer from the footer
	// instead of growing it by doubling (which cost a third of a wide scan's CPU in
	// memmove and memclr).
	pr, fr, _, err := openParquet(io.NewSectionReader(r.src, 0, r.src.Size()), props, r.pr.MetaData(),
		pqarrow.ArrowReadProperties{BatchSize: r.batch, PreAllocBinaryData: true}, r.mem)
	if err != nil {
		return nil, nil, err
	}
	return pr, fr, nil
}

// batchRows returns the rows per batch for row group rg: BatchSize, or fewer when
// the leaves the plan reads are wider than BatchBytes per BatchSize rows; and the
// row group's rows are split evenly between the batches it needs (100,000 rows in
// batches of at most 65,536: two of 50,000). pqarrow reserves a batch's values
// rounded up to a power of two, and doubles that when the last page a batch reads
// runs past the batch's end (it reserves for the whole page's levels); a batch a
// good way under the cap leaves room for that page, and no batch is a short tail.
func (r *Reader) batchRows(rg int, p topPlan) int64 {
	rgm := r.pr.MetaData().RowGroup(rg)
	rows := rgm.NumRows()
	if rows <= 0 {
		return r.batch
	}
	n := r.widthBatchRows(rgm, rows, p)
	k := (rows + n - 1) / n
	return (rows + k - 1) / k
}

// widthBatchRows is BatchSize, or fewer when the leaves p reads are wider than
// BatchBytes per BatchSize rows.
func (r *Reader) widthBatchRows(rgm *metadata.RowGroupMetaData, rows int64, p topPlan) int64 {
	var width int64
	leaves := append(append([]int(nil), p.leaves...), p.int96At...)
	for _, fc := range p.flat {
		leaves = append(leaves, fc.leaf)
	}
	for _, leaf := range leaves {
		if cc, err := rgm.ColumnChunk(leaf); err == nil {
			width += cc.TotalUncompressedSize()
		}
	}
	if width <= 0 {
		return r.batch
	}
	n := r.bytes * rows / width
	if n < 0 || n > r.batch { // n < 0: overflow of a huge row group
		return r.batch
	}
	return max(n, min(minBatchRows, r.batch))
}

// live wraps emit so that the rows of the deletion vector are removed first (D6);
// batches left empty are not emitted. firstRow stays the file position of the first
// row read, deleted or not.
func (r *Reader) live(emit EmitFunc) EmitFunc {
	if r.deleted == nil {
		return emit
	}
	return func(rec arrow.RecordBatch, firstRow int64) error {
		kept, err := ApplyDeletionVector(rec, firstRow, r.deleted.Contains, r.mem)
		if err != nil {
			return err
		}
		defer kept.Release()
		if kept.NumRows() == 0 {
			return nil
		}
		return emit(kept, firstRow)
	}
}

// Metadata returns the file footer.
func (r *Reader) Metadata() *metadata.FileMetaData { return r.pr.MetaData() }

// Schema returns the file's own Arrow schema (physical names, Parquet field ids in the
// field metadata under FieldIDKey).
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// NumRows returns the number of rows in the file.
func (r *Reader) NumRows() int64 { return r.pr.NumRows() }

// NumRowGroups returns the number of row groups.
func (r *Reader) NumRowGroups() int { return len(r.rgStart) }

// RowGroupFirstRow returns the file position of the first row of row group i, or -1 when
// there is no row group i.
func (r *Reader) RowGroupFirstRow(i int) int64 {
	if i < 0 || i >= len(r.rgStart) {
		return -1
	}
	return r.rgStart[i]
}

// ParquetReader exposes the low-level reader for page indexes and Bloom filters
// (GetPageIndexReader, GetBloomFilterReader). It stays owned by the Reader.
func (r *Reader) ParquetReader() *file.Reader { return r.pr }

// Close releases the Reader. It does not close the io.ReaderAt given to Open. No Read
// or ReadRanges call may be running.
func (r *Reader) Close() error { return r.pr.Close() }

// EmitFunc receives one batch and the file position of its first row (invariant D3). The
// batch is released when EmitFunc returns; call Retain to keep it.
type EmitFunc func(rec arrow.RecordBatch, firstRow int64) error

// topPlan says where each requested top-level field comes from.
type topPlan struct {
	fileIdx []int        // per want field: file top-level field index, or -1 (all nulls)
	regular []int        // file top-level fields read through pqarrow, ascending
	leaves  []int        // their leaf column indices, ascending
	int96   []int        // file top-level fields that are flat INT96 columns
	int96At []int        // their leaf column index
	flat    []flatColumn // file top-level fields Read decodes itself (flat.go)
}

// flatColumnsEnabled lets tests turn off the flat-column path of Read (flat.go) to
// compare it with pqarrow's.
var flatColumnsEnabled = true

// withFlat moves the flat columns of p's pqarrow fields to p.flat (see flat.go).
func (r *Reader) withFlat(p topPlan) topPlan {
	if !flatColumnsEnabled {
		return p
	}
	descr := r.pr.MetaData().Schema
	var regular []int
	for _, idx := range p.regular {
		if fc, ok := flatColumnOf(r.fr.Manifest.Fields[idx], idx, descr); ok {
			p.flat = append(p.flat, fc)
			continue
		}
		regular = append(regular, idx)
	}
	if len(p.flat) == 0 {
		return p
	}
	flatLeaf := map[int]bool{}
	for _, fc := range p.flat {
		flatLeaf[fc.leaf] = true
	}
	kept := p.leaves[:0:0]
	for _, leaf := range p.leaves {
		if !flatLeaf[leaf] {
			kept = append(kept, leaf)
		}
	}
	p.regular, p.leaves = regular, kept
	return p
}

func (r *Reader) plan(want *arrow.Schema) topPlan {
	var p topPlan
	fileFields := r.schema.Fields()
	used := map[int]bool{}
	for _, wf := range want.Fields() {
		idx := matchField(fileFields, wf)
		p.fileIdx = append(p.fileIdx, idx)
		if idx >= 0 {
			used[idx] = true
		}
	}
	descr := r.pr.MetaData().Schema
	wantOf := map[int]arrow.Field{}
	for i, idx := range p.fileIdx {
		if idx >= 0 {
			wantOf[idx] = want.Field(i)
		}
	}
	for idx := range fileFields {
		if !used[idx] {
			continue
		}
		sf := r.fr.Manifest.Fields[idx]
		if len(sf.Children) == 0 && sf.ColIndex >= 0 && descr.Column(sf.ColIndex).PhysicalType() == parquet.Types.Int96 &&
			descr.Column(sf.ColIndex).MaxRepetitionLevel() == 0 {
			p.int96 = append(p.int96, idx)
			p.int96At = append(p.int96At, sf.ColIndex)
			continue
		}
		p.regular = append(p.regular, idx)
		p.leaves = appendWantedLeaves(p.leaves, sf, wantOf[idx].Type)
	}
	slices.Sort(p.leaves)
	return p
}

// appendWantedLeaves adds the leaves of sf that the requested type needs: inside structs
// only the children that match a requested child (at least one leaf, so the struct keeps
// its length and validity); lists and maps whole.
func appendWantedLeaves(dst []int, sf pqarrow.SchemaField, want arrow.DataType) []int {
	wst, ok := want.(*arrow.StructType)
	if !ok || sf.Field == nil || sf.Field.Type.ID() != arrow.STRUCT || len(sf.Children) == 0 {
		return appendLeaves(dst, sf)
	}
	fileChildren := make([]arrow.Field, len(sf.Children))
	for i, c := range sf.Children {
		fileChildren[i] = *c.Field
	}
	n := len(dst)
	for _, wf := range wst.Fields() {
		if i := matchField(fileChildren, wf); i >= 0 {
			dst = appendWantedLeaves(dst, sf.Children[i], wf.Type)
		}
	}
	if len(dst) == n {
		dst = appendLeaves(dst, sf.Children[0])[:n+1]
	}
	return dst
}

func appendLeaves(dst []int, sf pqarrow.SchemaField) []int {
	if len(sf.Children) == 0 {
		return append(dst, sf.ColIndex)
	}
	for _, c := range sf.Children {
		dst = appendLeaves(dst, c)
	}
	return dst
}

// Read reads the given row groups (nil means all, in file order) and emits batches that
// conform exactly to want (invariant D1). Every want field is a requested column: a subset
// of the table's logical schema, in any order; a want without fields emits batches of
// row counts only. Batches never span row groups. Column chunks are streamed, so memory
// does not grow with the row group size beyond the batches themselves.
func (r *Reader) Read(ctx context.Context, want *arrow.Schema, rowGroups []int, emit EmitFunc) error {
	if want == nil || emit == nil {
		return fmt.Errorf("%w: nil schema or emit function", ErrInvalidArgument)
	}
	if rowGroups == nil {
		rowGroups = make([]int, len(r.rgStart))
		for i := range rowGroups {
			rowGroups[i] = i
		}
	}
	for _, rg := range rowGroups {
		if rg < 0 || rg >= len(r.rgStart) {
			return fmt.Errorf("%w: row group %d not in [0,%d)", ErrInvalidArgument, rg, len(r.rgStart))
		}
	}
	p := r.withFlat(r.plan(want))
	pr, fr, err := r.streamReaders(r.buffer)
	if err != nil {
		return r.named(err)
	}
	defer pr.Close()
	emit = r.live(emit)
	var hints []float64 // what each row group's string columns held, for the next
	for _, rg := range rowGroups {
		if err := r.readRowGroup(ctx, pr, fr, want, p, rg, &hints, emit); err != nil {
			return r.named(err)
		}
	}
	return nil
}

// readRowGroup reads row group rg of plan p and emits its batches conformed to
// want; hints, when not nil, carries the flat string columns' bytes per row from
// one row group to the next (openRowGroup).
func (r *Reader) readRowGroup(ctx context.Context, pr *file.Reader, fr *pqarrow.FileReader, want *arrow.Schema, p topPlan, rg int, hints *[]float64, emit EmitFunc) error {
	var h []float64
	if hints != nil {
		h = *hints
	}
	b, err := r.openRowGroup(ctx, pr, fr, p, rg, r.batchRows(rg, p), h)
	if err != nil {
		return err
	}
	defer func() {
		if hints != nil {
			*hints = b.hints(*hints)
		}
		b.close()
	}()
	b.blame = func(err error) error { return r.blame(ctx, p, rg, err) }
	for {
		n, ok, err := b.next(ctx)
		if err != nil || !ok {
			return err
		}
		out, err := r.conformBatch(want, p, b.cols, n)
		b.drop()
		if err != nil {
			return err
		}
		err = emit(out, r.rgStart[rg]+b.pos-n)
		out.Release()
		if err != nil {
			return err
		}
	}
}

// rowGroupBatches decodes one row group of a plan batch by batch: the plan's
// pqarrow fields through one record reader, its INT96 and flat columns through
// readers of their own.
type rowGroupBatches struct {
	r     *Reader
	p     topPlan
	rg    int
	nrows int64
	pos   int64 // rows of the row group decoded so far
	batch int64
	rr    pqarrow.RecordReader
	i96   []*int96Reader
	flats []*flatReader
	// cols is the current batch by file top-level field (nil: not read), valid
	// until drop; owned are the arrays of it that drop releases.
	cols  []arrow.Array
	owned []arrow.Array
	// blame, when set, turns a failure of the record reader into the error
	// returned (Reader.blame names the column).
	blame func(error) error
}

// openRowGroup starts decoding row group rg of plan p in batches of batch rows
// (the record reader's batches when p reads fields through pqarrow). hints, when
// not nil, carries the string bytes per row the flat readers of an earlier row group
// saw (by position in p.flat: rowGroupBatches.hints).
func (r *Reader) openRowGroup(ctx context.Context, pr *file.Reader, fr *pqarrow.FileReader, p topPlan, rg int, batch int64, hints []float64) (b *rowGroupBatches, err error) {
	b = &rowGroupBatches{r: r, p: p, rg: rg, nrows: r.pr.MetaData().RowGroup(rg).NumRows(), batch: batch,
		cols: make([]arrow.Array, len(r.schema.Fields()))}
	defer func() {
		if err != nil {
			b.close()
			b = nil
		}
	}()
	if len(p.leaves) > 0 {
		fr.Props.BatchSize = batch // fr belongs to this call
		if b.rr, err = recordReader(ctx, fr, p.leaves, rg); err != nil {
			return b, r.blame(ctx, p, rg, err)
		}
	}
	for _, leaf := range p.int96At {
		i96, err := newInt96Reader(pr, rg, leaf)
		if err != nil {
			return b, err
		}
		b.i96 = append(b.i96, i96)
	}
	for j, fc := range p.flat {
		f, err := newFlatReader(pr, rg, fc, r.schema.Field(fc.idx).Name, 2*r.bytes)
		if err != nil {
			return b, err
		}
		if j < len(hints) {
			f.learned = hints[j]
		}
		b.flats = append(b.flats, f)
	}
	return b, nil
}

// next decodes the next batch into b.cols: its rows, and false at the end of the
// row group. The caller calls drop once done with b.cols.
func (b *rowGroupBatches) next(ctx context.Context) (int64, bool, error) {
	if b.pos >= b.nrows {
		return 0, false, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	b.drop()
	var n int64
	if b.rr != nil {
		ok, err := nextRecord(b.rr, b.rg, b.pos)
		if err != nil {
			if b.blame != nil {
				err = b.blame(err)
			}
			return 0, false, err
		}
		if !ok {
			return 0, false, corruptf("row group %d ended at row %d of %d", b.rg, b.pos, b.nrows)
		}
		rec := b.rr.RecordBatch()
		n = rec.NumRows()
		for j, idx := range b.p.regular {
			b.cols[idx] = rec.Column(j)
		}
	} else {
		n = min(b.batch, b.nrows-b.pos)
	}
	for j, idx := range b.p.int96 {
		a, err := b.i96[j].read(b.r.mem, n)
		if err != nil {
			b.drop()
			return 0, false, corruptf("row group %d column %q: %w", b.rg, b.r.schema.Field(idx).Name, err)
		}
		b.cols[idx] = a
		b.owned = append(b.owned, a)
	}
	for j, fc := range b.p.flat {
		a, err := b.flats[j].read(b.r.mem, n)
		if err != nil {
			b.drop()
			return 0, false, err
		}
		b.cols[fc.idx] = a
		b.owned = append(b.owned, a)
	}
	b.pos += n
	return n, true, nil
}

// drop releases the arrays of the current batch that b decoded itself.
func (b *rowGroupBatches) drop() {
	releaseAll(b.owned)
	b.owned = b.owned[:0]
	clear(b.cols)
}

// hints returns, by position in the plan's flat columns, the string bytes per row
// the flat readers saw (for the next row group's openRowGroup), in dst's storage.
func (b *rowGroupBatches) hints(dst []float64) []float64 {
	dst = dst[:0]
	for _, f := range b.flats {
		dst = append(dst, f.learned)
	}
	return dst
}

// close drops the current batch and closes the row group's readers.
func (b *rowGroupBatches) close() {
	b.drop()
	if b.rr != nil {
		releaseRecords(b.rr)
		b.rr = nil
	}
	for _, r := range b.i96 {
		r.close()
	}
	for _, f := range b.flats {
		f.close()
	}
	b.i96, b.flats = nil, nil
}

// blame names the column behind orig, a failure of the record reader (which decodes
// the columns of a row group together and does not say which one failed): it decodes
// each column of row group rg alone, with readers of its own, and returns the first
// column's failure. orig is returned as it is when it is not corruption or when every
// column decodes alone.
func (r *Reader) blame(ctx context.Context, p topPlan, rg int, orig error) error {
	if !errors.Is(orig, ErrCorruptData) || ctx.Err() != nil {
		return orig
	}
	pr, fr, err := r.streamReaders(seekBufferBytes)
	if err != nil {
		return orig
	}
	defer pr.Close()
	readers, err := fieldReaders(ctx, fr, p.leaves, rg)
	if err != nil {
		return err
	}
	defer func() {
		for _, cr := range readers {
			releaseColumn(cr)
		}
	}()
	if len(readers) != len(p.regular) {
		return orig
	}
	nrows := pr.MetaData().RowGroup(rg).NumRows()
	batch := r.batchRows(rg, p)
	for j, cr := range readers {
		name := r.schema.Field(p.regular[j]).Name
		for pos := int64(0); pos < nrows; {
			ch, err := nextColumnBatch(cr, min(batch, nrows-pos), fmt.Sprintf("row group %d column %q at row %d", rg, name, pos))
			if err != nil {
				return err
			}
			n := int64(ch.Len())
			ch.Release()
			if n == 0 {
				return corruptf("row group %d column %q ended at row %d of %d", rg, name, pos, nrows)
			}
			pos += n
		}
	}
	return orig
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

func (r *Reader) conformBatch(want *arrow.Schema, p topPlan, cols []arrow.Array, n int64) (arrow.RecordBatch, error) {
	out := make([]arrow.Array, want.NumFields())
	for i, wf := range want.Fields() {
		var err error
		if idx := p.fileIdx[i]; idx >= 0 {
			out[i], err = conform(r.mem, cols[idx], wf, wf.Name)
		} else {
			out[i] = array.MakeArrayOfNull(r.mem, wf.Type, int(n))
		}
		if err != nil {
			releaseAll(out)
			return nil, err
		}
	}
	rec := array.NewRecordBatch(want, out, n)
	releaseAll(out)
	return rec, nil
}

// fieldID returns the field id the metadata carries under any of keys (first wins).
func fieldID(f arrow.Field, keys ...string) (int64, bool) {
	for _, k := range keys {
		if s, ok := f.Metadata.GetValue(k); ok {
			id, err := strconv.ParseInt(s, 10, 64)
			if err == nil && id >= 0 {
				return id, true
			}
		}
	}
	return 0, false
}

// matchField finds the file field a requested field reads from (invariant D1): by field id
// when both sides have ids (and then only by id), else by physical name or name, exact
// first, then case-insensitive when that is unambiguous. -1 when the file lacks it.
func matchField(fileFields []arrow.Field, want arrow.Field) int {
	if id, ok := fieldID(want, FieldIDKey, ColumnMappingIDKey); ok {
		anyIDs := false
		for i, f := range fileFields {
			if fid, ok := fieldID(f, FieldIDKey); ok {
				anyIDs = true
				if fid == id {
					return i
				}
			}
		}
		if anyIDs {
			return -1
		}
	}
	name := want.Name
	if pn, ok := want.Metadata.GetValue(PhysicalNameKey); ok && pn != "" {
		name = pn
	}
	for i, f := range fileFields {
		if f.Name == name {
			return i
		}
	}
	found := -1
	for i, f := range fileFields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}
