package datafile

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Flat columns: a top-level column of one leaf, not repeated, required or optional,
// whose Parquet values are the Arrow values bit for bit (INT32 as int32 or date32,
// INT64 as int64 or a timestamp of the column's own unit, FLOAT, DOUBLE, BYTE_ARRAY as
// string or binary). Read reads them with arrow-go's column chunk readers (which
// decode pages, levels and every encoding, dictionaries included) into buffers of
// its own, instead of through pqarrow's record reader and Arrow builders:
//
//   - fixed-width values are decoded straight into the batch's value buffer (nulls
//     spread in place), with no builder in between;
//   - strings are copied once into a data buffer sized from the footer; pqarrow's
//     BinaryBuilder zeroes each reserved data buffer before filling it (arrow-go's
//     bufferBuilder.resize clears new capacity) and pays per value for offsets and
//     validity, which on the interop full scan was about a fifth of the CPU.
//
// Everything else (nested columns, booleans, decimals, INT96, other logical types)
// still goes through pqarrow. The arrays are the ones pqarrow would build: the file
// schema's type, nulls from the definition levels, and conform turns them into the
// requested type as before (a test compares both paths value by value).

// flatColumn is a flat column of the file that Read decodes itself.
type flatColumn struct {
	idx    int // file top-level field
	leaf   int // its leaf column index
	typ    arrow.DataType
	maxDef int16
	width  int // bytes per value; 0 for strings and binaries
}

// flatColumnOf returns the flat column for file top-level field sf, ok false when it
// is not one (see above).
func flatColumnOf(sf pqarrow.SchemaField, idx int, descr *schema.Schema) (flatColumn, bool) {
	if len(sf.Children) != 0 || sf.ColIndex < 0 || sf.Field == nil || sf.ColIndex >= descr.NumColumns() {
		return flatColumn{}, false
	}
	col := descr.Column(sf.ColIndex)
	if col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
		return flatColumn{}, false
	}
	fc := flatColumn{idx: idx, leaf: sf.ColIndex, typ: sf.Field.Type, maxDef: col.MaxDefinitionLevel()}
	lt := col.LogicalType()
	plainInt := func(bits int8) bool {
		if lt == nil || lt.Equals(schema.NoLogicalType{}) {
			return true
		}
		it, ok := lt.(schema.IntLogicalType)
		return ok && it.IsSigned() && it.BitWidth() == bits
	}
	switch col.PhysicalType() {
	case parquet.Types.Int32:
		fc.width = 4
		switch fc.typ.ID() {
		case arrow.INT32:
			return fc, plainInt(32)
		case arrow.DATE32:
			_, ok := lt.(schema.DateLogicalType)
			return fc, ok
		}
	case parquet.Types.Int64:
		fc.width = 8
		switch fc.typ.ID() {
		case arrow.INT64:
			return fc, plainInt(64)
		case arrow.TIMESTAMP:
			tl, ok := lt.(schema.TimestampLogicalType)
			if !ok {
				return fc, false
			}
			unit := map[schema.TimeUnitType]arrow.TimeUnit{schema.TimeUnitMillis: arrow.Millisecond,
				schema.TimeUnitMicros: arrow.Microsecond, schema.TimeUnitNanos: arrow.Nanosecond}
			u, known := unit[tl.TimeUnit()]
			return fc, known && u == fc.typ.(*arrow.TimestampType).Unit
		}
	case parquet.Types.Float:
		fc.width = 4
		return fc, fc.typ.ID() == arrow.FLOAT32 && (lt == nil || lt.Equals(schema.NoLogicalType{}))
	case parquet.Types.Double:
		fc.width = 8
		return fc, fc.typ.ID() == arrow.FLOAT64 && (lt == nil || lt.Equals(schema.NoLogicalType{}))
	case parquet.Types.ByteArray:
		return fc, fc.typ.ID() == arrow.STRING || fc.typ.ID() == arrow.BINARY
	}
	return flatColumn{}, false
}

// flatReader decodes one flat column of one row group, batch by batch.
type flatReader struct {
	col  flatColumn
	cr   file.ColumnChunkReader
	what string // names the column in errors
	defs []int16
	vals []parquet.ByteArray
	// perRow estimates the bytes of string data per row (from the footer), to size
	// each batch's data buffer once; maxReserve bounds that first reservation (the
	// footer's sizes are not checked against anything: a damaged one must not make
	// a huge allocation, D10). Past it the buffer grows with the values decoded.
	perRow     float64
	maxReserve int64
	// learned is the string bytes per row of the last batch decoded (or of an
	// earlier row group's, see openRowGroup): a dictionary-encoded chunk's footer
	// sizes count indices, not strings, so the data buffer is reserved from what
	// the column really held instead of grown by doubling batch after batch.
	learned float64
}

// newFlatReader opens column col of row group rg; maxReserve bounds the first
// reservation of a batch's string data (see flatReader).
func newFlatReader(pr *file.Reader, rg int, col flatColumn, name string, maxReserve int64) (*flatReader, error) {
	cc, err := columnChunk(pr, rg, col.leaf)
	if err != nil {
		return nil, err
	}
	f := &flatReader{col: col, cr: cc, what: fmt.Sprintf("row group %d column %q", rg, name), maxReserve: maxReserve}
	if col.width == 0 {
		rgm := pr.MetaData().RowGroup(rg)
		if ccm, err := rgm.ColumnChunk(col.leaf); err == nil && rgm.NumRows() > 0 {
			// PLAIN values carry a 4-byte length each; a dictionary column's pages
			// hold indices only, so its estimate is low and the buffer grows.
			f.perRow = math.Max(0, float64(ccm.TotalUncompressedSize())/float64(rgm.NumRows())-4)
		}
	}
	return f, nil
}

func (f *flatReader) close() {
	defer func() { _ = recover() }() // a decoder that panicked may panic again
	_ = f.cr.Close()
}

// read decodes the next n rows into an array of the column's type.
func (f *flatReader) read(mem memory.Allocator, n int64) (arrow.Array, error) {
	if int64(cap(f.defs)) < n {
		f.defs = make([]int16, n)
	}
	var defs []int16
	if f.col.maxDef > 0 {
		defs = f.defs[:n]
	}
	if f.col.width == 0 {
		return f.readBinary(mem, n, defs)
	}
	return f.readFixed(mem, n, defs)
}

// readFixed decodes n fixed-width values straight into the value buffer: the present
// values land densely at its start, then move to their rows, back to front.
func (f *flatReader) readFixed(mem memory.Allocator, n int64, defs []int16) (arrow.Array, error) {
	w := int64(f.col.width)
	data := memory.NewResizableBuffer(mem)
	defer data.Release()
	data.Resize(int(n * w))
	buf := data.Bytes()
	levels, nvals, err := readFixedBatch(f.cr, n, buf, defs, f.what)
	if err != nil {
		return nil, err
	}
	if levels != n {
		return nil, corruptf("%s: column chunk ended %d rows early", f.what, n-levels)
	}
	var validity *memory.Buffer
	nulls := int64(0)
	if defs != nil && int64(nvals) < n {
		validity, nulls, err = f.validity(mem, defs, int64(nvals))
		if err != nil {
			return nil, err
		}
		defer validity.Release()
		// Spread the values to their rows: runs of present rows, from the back (the
		// destination of every run is at or after its source).
		v := int64(nvals)
		for i := n; i > 0; {
			j := i
			for j > 0 && defs[j-1] == f.col.maxDef {
				j--
			}
			run := i - j
			v -= run
			copy(buf[j*w:i*w], buf[v*w:(v+run)*w])
			for j > 0 && defs[j-1] != f.col.maxDef {
				j--
				clear(buf[j*w : (j+1)*w])
			}
			i = j
		}
	} else if int64(nvals) != n {
		return nil, corruptf("%s: %d values for %d rows", f.what, nvals, n)
	}
	d := array.NewData(f.col.typ, int(n), []*memory.Buffer{validity, data}, nil, int(nulls), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// binaryChunkRows is the most rows readBinary decodes per call of the column reader
// (at most one page's values, pointing into the page, are held at once): its value
// slice is this long whatever the batch size, not a slice of a batch's length
// allocated and zeroed for every row group.
const binaryChunkRows = 8192

// readBinary decodes n strings or binaries, at most binaryChunkRows of one page's
// values at a time (they point into the page, which the next page replaces), copying
// them into one data buffer.
func (f *flatReader) readBinary(mem memory.Allocator, n int64, defs []int16) (arrow.Array, error) {
	if f.vals == nil {
		f.vals = make([]parquet.ByteArray, binaryChunkRows)
	}
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize(int(n+1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	data := memory.NewResizableBuffer(mem)
	defer data.Release()
	data.Reserve(int(min(max(f.perRow, f.learned*17/16)*float64(n), float64(f.maxReserve))) + 64)
	var used, total int64
	offs[0] = 0
	for got := int64(0); got < n; {
		var d []int16
		if defs != nil {
			d = defs[got:]
		}
		levels, nvals, err := readBinaryPage(f.cr, min(n-got, binaryChunkRows), f.vals, d, f.what)
		if err != nil {
			return nil, err
		}
		if levels == 0 {
			return nil, corruptf("%s: column chunk ended %d rows early", f.what, n-got)
		}
		vals := f.vals[:nvals]
		var size int64
		for _, v := range vals {
			size += int64(len(v))
		}
		if used+size > math.MaxInt32 {
			return nil, fmt.Errorf("datafile: %s: more than 2 GiB of values in one batch", f.what)
		}
		if need := int(used + size); need > data.Cap() {
			data.Reserve(max(need, 2*data.Cap()))
		}
		buf := data.Buf()
		o := offs[got+1 : got+1+levels]
		if int64(nvals) == levels {
			// Every row present (a required column, or no null among these rows):
			// values and offsets in one pass, no level looked at.
			end := int32(used)
			for i, val := range vals {
				end += int32(copy(buf[end:], val))
				o[i] = end
			}
			used = int64(end)
		} else {
			v := 0
			for i := range o {
				if d == nil || d[i] == f.col.maxDef {
					if v >= nvals {
						return nil, corruptf("%s: fewer values than definition levels", f.what)
					}
					used += int64(copy(buf[used:], vals[v]))
					v++
				}
				o[i] = int32(used)
			}
			if v != nvals {
				return nil, corruptf("%s: %d values for %d present rows", f.what, nvals, v)
			}
		}
		total += int64(nvals)
		got += levels
	}
	data.ResizeNoShrink(int(used))
	if n > 0 {
		f.learned = float64(used) / float64(n)
	}
	var validity *memory.Buffer
	nulls := int64(0)
	if defs != nil && total < n {
		var err error
		if validity, nulls, err = f.validity(mem, defs, total); err != nil {
			return nil, err
		}
		defer validity.Release()
	}
	d := array.NewData(f.col.typ, int(n), []*memory.Buffer{validity, offsets, data}, nil, int(nulls), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// validity builds the validity bitmap of defs, checking that nvals rows are present.
func (f *flatReader) validity(mem memory.Allocator, defs []int16, nvals int64) (*memory.Buffer, int64, error) {
	n := int64(len(defs))
	bm := memory.NewResizableBuffer(mem)
	bm.Resize(int((n + 7) / 8))
	bits := bm.Bytes()
	clear(bits)
	present := int64(0)
	for i, d := range defs {
		if d == f.col.maxDef {
			bits[i>>3] |= 1 << (i & 7)
			present++
		}
	}
	if present != nvals {
		bm.Release()
		return nil, 0, corruptf("%s: %d values for %d present rows", f.what, nvals, present)
	}
	return bm, n - present, nil
}

// readFixedBatch reads up to n levels of a fixed-width column chunk, the values into
// buf (densely), the decoder call contained (D10).
func readFixedBatch(cr file.ColumnChunkReader, n int64, buf []byte, defs []int16, what string) (levels int64, nvals int, err error) {
	defer guard.Contain(&err, what)
	switch cr := cr.(type) {
	case *file.Int32ColumnChunkReader:
		levels, nvals, err = cr.ReadBatch(n, arrow.Int32Traits.CastFromBytes(buf), defs, nil)
	case *file.Int64ColumnChunkReader:
		levels, nvals, err = cr.ReadBatch(n, arrow.Int64Traits.CastFromBytes(buf), defs, nil)
	case *file.Float32ColumnChunkReader:
		levels, nvals, err = cr.ReadBatch(n, arrow.Float32Traits.CastFromBytes(buf), defs, nil)
	case *file.Float64ColumnChunkReader:
		levels, nvals, err = cr.ReadBatch(n, arrow.Float64Traits.CastFromBytes(buf), defs, nil)
	default:
		return 0, 0, corruptf("%s: column chunk of type %s", what, cr.Type())
	}
	if err != nil {
		return 0, 0, corruptf("%s: %w", what, err)
	}
	return levels, nvals, nil
}

// readBinaryPage reads up to n levels of a BYTE_ARRAY column chunk from one page, the
// decoder call contained (D10). The values point into the page.
func readBinaryPage(cr file.ColumnChunkReader, n int64, vals []parquet.ByteArray, defs []int16, what string) (levels int64, nvals int, err error) {
	defer guard.Contain(&err, what)
	bc, ok := cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return 0, 0, corruptf("%s: column chunk of type %s", what, cr.Type())
	}
	levels, nvals, err = bc.ReadBatchInPage(n, vals, defs, nil)
	if err != nil {
		return 0, 0, corruptf("%s: %w", what, err)
	}
	return levels, nvals, nil
}
