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

// ReadOptions configures a [Reader]. The zero value is the documented default.
type ReadOptions struct {
	// BatchSize is the maximum number of rows per emitted batch; default DefaultBatchSize.
	BatchSize int64
	// Allocator allocates the Arrow buffers of emitted batches; default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// Reader reads one Parquet data file. Its methods may be called from one goroutine at a
// time; open one Reader per goroutine to read a file concurrently.
type Reader struct {
	pr      *file.Reader
	fr      *pqarrow.FileReader
	schema  *arrow.Schema
	mem     memory.Allocator
	batch   int64
	rgStart []int64
	src     *io.SectionReader
	seekPR  *file.Reader        // lazily opened by ReadRanges: streams column chunks
	seekFR  *pqarrow.FileReader // pqarrow view of seekPR
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
	// A SectionReader adds the Seek that the Parquet reader wants, and has no Close, so
	// closing the Parquet reader never closes ra.
	src := io.NewSectionReader(ra, 0, size)
	pr, err := file.NewParquetReader(src, file.WithReadProps(parquet.NewReaderProperties(opts.Allocator)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: opts.BatchSize}, opts.Allocator)
	if err != nil {
		return nil, fmt.Errorf("%w: arrow schema: %w", ErrCorrupt, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%w: arrow schema: %w", ErrCorrupt, err)
	}
	md := pr.MetaData()
	starts := make([]int64, md.NumRowGroups())
	var at int64
	for i := range starts {
		starts[i] = at
		at += md.RowGroup(i).NumRows()
	}
	return &Reader{pr: pr, fr: fr, schema: sc, mem: opts.Allocator, batch: opts.BatchSize, rgStart: starts, src: src}, nil
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

// Close releases the Reader. It does not close the io.ReaderAt given to Open.
func (r *Reader) Close() error {
	var err error
	if r.seekPR != nil {
		err = r.seekPR.Close()
		r.seekPR, r.seekFR = nil, nil
	}
	return errors.Join(r.pr.Close(), err)
}

// EmitFunc receives one batch and the file position of its first row (invariant D3). The
// batch is released when EmitFunc returns; call Retain to keep it.
type EmitFunc func(rec arrow.RecordBatch, firstRow int64) error

// topPlan says where each requested top-level field comes from.
type topPlan struct {
	fileIdx []int // per want field: file top-level field index, or -1 (all nulls)
	regular []int // file top-level fields read through pqarrow, ascending
	leaves  []int // their leaf column indices, ascending
	int96   []int // file top-level fields that are flat INT96 columns
	int96At []int // their leaf column index
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
// of the table's logical schema, in any order. Batches never span row groups.
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
	p := r.plan(want)
	for _, rg := range rowGroups {
		if err := r.readRowGroup(ctx, want, p, rg, emit); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) readRowGroup(ctx context.Context, want *arrow.Schema, p topPlan, rg int, emit EmitFunc) (err error) {
	nrows := r.pr.MetaData().RowGroup(rg).NumRows()
	var rr pqarrow.RecordReader
	if len(p.leaves) > 0 {
		rr, err = r.fr.GetRecordReader(ctx, p.leaves, []int{rg})
		if err != nil {
			return fmt.Errorf("%w: row group %d: %w", ErrCorrupt, rg, err)
		}
		defer rr.Release()
	}
	i96 := make([]*int96Reader, len(p.int96))
	for j, leaf := range p.int96At {
		if i96[j], err = newInt96Reader(r.pr, rg, leaf); err != nil {
			return err
		}
		defer i96[j].close()
	}
	cols := make([]arrow.Array, len(r.schema.Fields()))
	for pos := int64(0); pos < nrows; {
		if err := ctx.Err(); err != nil {
			return err
		}
		clear(cols)
		var n int64
		if rr != nil {
			if !rr.Next() {
				if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("%w: row group %d at row %d: %w", ErrCorrupt, rg, pos, err)
				}
				return fmt.Errorf("%w: row group %d ended at row %d of %d", ErrCorrupt, rg, pos, nrows)
			}
			rec := rr.RecordBatch()
			n = rec.NumRows()
			for j, idx := range p.regular {
				cols[idx] = rec.Column(j)
			}
		} else {
			n = min(r.batch, nrows-pos)
		}
		var owned []arrow.Array
		for j, idx := range p.int96 {
			a, err := i96[j].read(r.mem, n)
			if err != nil {
				releaseAll(owned)
				return fmt.Errorf("%w: row group %d column %q: %w", ErrCorrupt, rg, r.schema.Field(idx).Name, err)
			}
			cols[idx] = a
			owned = append(owned, a)
		}
		out, err := r.conformBatch(want, p, cols, n)
		releaseAll(owned)
		if err != nil {
			return err
		}
		err = emit(out, r.rgStart[rg]+pos)
		out.Release()
		if err != nil {
			return err
		}
		pos += n
	}
	return nil
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
