package datafile

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// serialEncoder writes through pqarrow's FileWriter, one column after the other. It
// handles every schema (nested columns need pqarrow's level builder, which arrow-go
// does not export) and is used when a column is not flat.
type serialEncoder struct {
	fw    *pqarrow.FileWriter
	sink  *countingWriter
	rgArr float64 // Arrow bytes appended to the open row group
	ratio float64 // compressed bytes per Arrow byte, from the last closed row group
}

func newSerialEncoder(sink *countingWriter, schema *arrow.Schema, props *parquet.WriterProperties, arrProps pqarrow.ArrowWriterProperties, kv map[string]string) (*serialEncoder, error) {
	fw, err := pqarrow.NewFileWriter(schema, sink, props, arrProps)
	if err != nil {
		return nil, err
	}
	for k, v := range kv {
		if err := fw.AppendKeyValueMetadata(k, v); err != nil {
			return nil, fmt.Errorf("key-value metadata %q: %w", k, err)
		}
	}
	return &serialEncoder{fw: fw, sink: sink, ratio: 1}, nil
}

func (e *serialEncoder) write(rec arrow.RecordBatch, arrowBytes float64) error {
	if err := e.fw.WriteBuffered(rec); err != nil {
		return err
	}
	e.rgArr += arrowBytes
	return nil
}

// openBytes: pqarrow reports only the pages already flushed, so the Arrow bytes
// appended are scaled by the previous row group's compression ratio (1.0 before the
// first one closes, which errs towards smaller row groups), and the larger of the two
// is taken.
func (e *serialEncoder) openBytes() int64 {
	flushed := max(e.fw.RowGroupTotalCompressedBytes(), e.fw.RowGroupTotalBytesWritten())
	return int64(max(float64(flushed), e.rgArr*e.ratio))
}

func (e *serialEncoder) endRowGroup() error {
	before := e.sink.n
	if err := e.fw.NewBufferedRowGroupChecked(); err != nil {
		return err
	}
	if e.rgArr > 0 && e.sink.n > before {
		e.ratio = min(max(float64(e.sink.n-before)/e.rgArr, 0.01), 4)
	}
	e.rgArr = 0
	return nil
}

func (e *serialEncoder) close() (*metadata.FileMetaData, error) {
	if err := e.fw.Close(); err != nil {
		return nil, err
	}
	return e.fw.FileMetadata()
}

func (e *serialEncoder) abort() {}

func (e *serialEncoder) settle() {}

// isFlat reports whether every column of schema is a leaf type the column-parallel
// encoder writes exactly as pqarrow does (no struct, list, map, dictionary or
// extension type).
func isFlat(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
			arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
			arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
			arrow.DECIMAL128, arrow.DECIMAL256,
			arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		default:
			return false
		}
	}
	return true
}

// parallelEncoder encodes the columns of a flat schema concurrently: one goroutine per
// column consumes that column's arrays in order (so each column chunk is exactly what
// pqarrow would write), at most Parallelism of them encoding at a time, all into one
// buffered row group of arrow-go's file writer, whose column writers are independent
// of each other. Write returns once the arrays are queued, so the caller (computing
// statistics, reading the next batch) overlaps with the encoding; a row group is
// flushed only after every column has caught up.
//
// Up to maxInFlight slices are in flight: before queuing one more, write waits until
// every column has encoded the oldest. Each column records its chunk's size after
// each slice in that slice's own state, so the size estimate — and every row-group
// and file cut made from it — is deterministic: the recorded state after the oldest
// completed slice plus the Arrow bytes of the slices after it at the learned ratio,
// never a snapshot of how far each goroutine happened to get. (With one slice in
// flight, the slowest column set the pace of every slice; several let the columns
// overlap.)
//
// The definition levels are those pqarrow's level builder produces for a top-level
// leaf: none for a required column; for a nullable one, 1 per value when it has no
// nulls (leaf not nullable), 0 per value when all are null, else from the validity
// bitmap.
type parallelEncoder struct {
	fw    *file.Writer
	props *parquet.WriterProperties
	sink  *countingWriter
	rgw   file.BufferedRowGroupWriter // nil when no row group is open
	cols  []*columnEncoder
	sem   chan struct{}
	// inflight are the slices queued and not known to be encoded, oldest first.
	inflight []*sliceState
	model    *sizeModel
	// blooms are the row groups' Parquet Bloom filters, released once the file is
	// written (arrow-go otherwise leaves them to GC cleanups).
	blooms  []metadata.BloomFilterBuilder
	mu      sync.Mutex
	err     error
	stopped bool
}

// columnEncoder is one column's goroutine and its size accounting. Fields written by
// the goroutine are atomics; the others are touched only by the writer's goroutine.
type columnEncoder struct {
	e        *parallelEncoder
	idx      int
	name     string
	typ      arrow.DataType
	nullable bool
	in       chan slice
	done     chan struct{}
	actx     context.Context
	cw       file.ColumnChunkWriter // the open row group's writer; set while the goroutine is idle
	// dict is the dictionary shortcut of the open column chunk (nil: none; see
	// dictShortcut), set with cw; spare keeps the last one's maps for reuse.
	dict, spare *dictShortcut
	def         []int16
	// written is the bytes of the open column chunk's pages already encoded and
	// compressed; unwritten the bytes encoded but not yet compressed (the current
	// page, the dictionary). Both are published after each array (see encode).
	written, unwritten atomic.Int64
	// settled is the estimated chunk size after the newest slice known to be
	// encoded (see openBytes).
	settled float64
	// arrow is the Arrow bytes queued to the open row group. ratio (compressed bytes
	// per Arrow byte) and pending (compressed bytes per unwritten byte) are learned
	// from the last closed row group.
	arrow, ratio, pending float64
}

// maxInFlight bounds the slices queued to the column goroutines at once.
const maxInFlight = 3

// sliceState is one queued slice of rows: done when every column has encoded its
// part, the Arrow bytes of each column's part, and each column's estimated chunk
// size after it (written by that column's goroutine before done).
type sliceState struct {
	done  sync.WaitGroup
	arrow []float64
	after []float64
}

// slice is one column's part of a queued slice of rows.
type slice struct {
	arr   arrow.Array
	state *sliceState
}

// sizeModel carries what the encoders learn about each column's sizes (see
// columnEncoder.ratio and pending) from one file to the next of the same data, so
// that a new file's first row group is estimated as well as the last one of the
// previous file. Safe for concurrent use.
type sizeModel struct {
	mu             sync.Mutex
	ratio, pending []float64
}

// defaultPendingRatio is the assumed size, after compression, of a byte of a page or
// dictionary not yet written, before a row group has shown the real one.
const defaultPendingRatio = 0.5

func newSizeModel(cols int) *sizeModel {
	m := &sizeModel{ratio: make([]float64, cols), pending: make([]float64, cols)}
	for i := range m.ratio {
		m.ratio[i], m.pending[i] = 1, defaultPendingRatio
	}
	return m
}

// clone returns a copy of m (a fresh model when m is nil).
func (m *sizeModel) clone() *sizeModel {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return &sizeModel{ratio: append([]float64(nil), m.ratio...), pending: append([]float64(nil), m.pending...)}
}

// serializeArrowSchema returns the value pqarrow stores, base64-encoded, under the
// footer key ARROW:schema: an Arrow IPC stream holding only the schema message and
// the end-of-stream marker (what arrow-go's flight.SerializeSchema returns, which
// pqarrow's FileWriter uses and its FileReader decodes). Built with arrow/ipc, so
// this package does not import arrow/flight, and the bytes are the same
// (TestSerializeArrowSchemaMatchesPqarrow).
func serializeArrowSchema(schema *arrow.Schema, mem memory.Allocator) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("datafile: serialize the Arrow schema: %w", err)
	}
	return buf.Bytes(), nil
}

// errAborted stops the column goroutines of an aborted writer.
var errAborted = errors.New("datafile: writer aborted")

func newParallelEncoder(sink *countingWriter, schema *arrow.Schema, props *parquet.WriterProperties, arrProps pqarrow.ArrowWriterProperties, kv map[string]string, par int, model *sizeModel) (*parallelEncoder, error) {
	pqSchema, err := pqarrow.ToParquet(schema, props, arrProps)
	if err != nil {
		return nil, err
	}
	// The footer key-value metadata pqarrow writes: the schema's own, then the
	// serialized Arrow schema (flat schemas need no list-name normalisation).
	meta := make(metadata.KeyValueMetadata, 0)
	md := schema.Metadata()
	for i := 0; i < md.Len(); i++ {
		meta.Append(md.Keys()[i], md.Values()[i])
	}
	stored, err := serializeArrowSchema(schema, props.Allocator())
	if err != nil {
		return nil, err
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(stored))
	fw, err := file.NewParquetWriterWithError(sink, pqSchema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	for k, v := range kv {
		if err := fw.AppendKeyValueMetadata(k, v); err != nil {
			return nil, fmt.Errorf("key-value metadata %q: %w", k, err)
		}
	}
	if model == nil || len(model.ratio) != schema.NumFields() {
		model = newSizeModel(schema.NumFields())
	}
	e := &parallelEncoder{fw: fw, props: props, sink: sink, sem: make(chan struct{}, max(par, 1)), model: model}
	model.mu.Lock()
	defer model.mu.Unlock()
	for i, f := range schema.Fields() {
		c := &columnEncoder{e: e, idx: i, name: f.Name, typ: f.Type, nullable: f.Nullable, in: make(chan slice, maxInFlight), done: make(chan struct{}),
			actx: pqarrow.NewArrowWriteContext(context.Background(), &arrProps), ratio: model.ratio[i], pending: model.pending[i]}
		e.cols = append(e.cols, c)
		go c.run()
	}
	return e, nil
}

func (e *parallelEncoder) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *parallelEncoder) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

func (c *columnEncoder) run() {
	defer close(c.done)
	for sl := range c.in {
		if c.e.failed() == nil {
			c.e.sem <- struct{}{}
			err := c.encode(sl.arr)
			<-c.e.sem
			if err != nil {
				c.e.fail(fmt.Errorf("column %q: %w", c.name, err))
			}
		}
		sl.state.after[c.idx] = float64(c.written.Load()) + float64(c.unwritten.Load())*c.pending
		sl.arr.Release()
		sl.state.done.Done()
	}
}

// sizer and dictSizer are methods arrow-go's column writers and dictionary encoders
// have beyond the interfaces they are returned as.
type sizer interface{ EstimatedBufferedValueBytes() int64 }
type dictSizer interface{ DictEncodedSize() int }

func (c *columnEncoder) encode(arr arrow.Array) error {
	var def []int16
	leafNullable := false
	if c.nullable {
		n := arr.Len()
		if cap(c.def) < n {
			c.def = make([]int16, n)
		}
		def = c.def[:n]
		switch nulls := arr.NullN(); {
		case nulls == 0:
			for i := range def {
				def[i] = 1
			}
		case nulls == n:
			clear(def)
			leafNullable = true
		default:
			bits, off := arr.NullBitmapBytes(), arr.Data().Offset()
			for i := range def {
				if bitutil.BitIsSet(bits, off+i) {
					def[i] = 1
				} else {
					def[i] = 0
				}
			}
			leafNullable = true
		}
	}
	var err error
	if c.dict != nil {
		err = c.dict.write(c, arr, def)
	} else {
		err = pqarrow.WriteArrowToColumn(c.actx, c.cw, arr, def, nil, leafNullable)
	}
	if err != nil {
		return err
	}
	var unwritten int64
	if s, ok := c.cw.(sizer); ok {
		unwritten += s.EstimatedBufferedValueBytes()
	}
	if d, ok := c.cw.CurrentEncoder().(dictSizer); ok {
		unwritten += int64(d.DictEncodedSize())
	}
	c.written.Store(c.cw.TotalBytesWritten())
	c.unwritten.Store(unwritten)
	return nil
}

func (e *parallelEncoder) write(rec arrow.RecordBatch, _ float64) error {
	if len(e.inflight) >= maxInFlight {
		e.complete(1)
	}
	if err := e.failed(); err != nil {
		return err
	}
	if e.rgw == nil {
		rgw, err := e.fw.AppendBufferedRowGroupChecked()
		if err != nil {
			return err
		}
		e.rgw = rgw
		for i, c := range e.cols {
			if c.cw, err = rgw.Column(i); err != nil {
				return err
			}
			if c.dict != nil {
				c.spare = c.dict
			}
			c.dict = newDictShortcut(c.cw, c.typ, e.props, c.spare)
			c.written.Store(0)
			c.unwritten.Store(0)
			c.arrow, c.settled = 0, 0
		}
	}
	st := &sliceState{arrow: make([]float64, len(e.cols)), after: make([]float64, len(e.cols))}
	st.done.Add(len(e.cols))
	for i, c := range e.cols {
		arr := rec.Column(i)
		// A slice counts its nulls lazily: settle it before the column's goroutine
		// reads it (R1, share.go).
		SettleArray(arr)
		st.arrow[i] = float64(leafBytes(arr))
		c.arrow += st.arrow[i]
		arr.Retain()
		c.in <- slice{arr, st}
	}
	e.inflight = append(e.inflight, st)
	return nil
}

// leafBytes is the Arrow size of a flat array's values (a slice counts only its own
// values, unlike dataBytes, which counts the shared buffers whole).
func leafBytes(arr arrow.Array) int64 {
	n := int64(arr.Len())
	if n == 0 {
		return 0
	}
	switch a := arr.(type) {
	case *array.String:
		o := a.ValueOffsets()
		return n*4 + int64(o[n]-o[0])
	case *array.Binary:
		o := a.ValueOffsets()
		return n*4 + int64(o[n]-o[0])
	case *array.LargeString:
		o := a.ValueOffsets()
		return n*8 + o[n] - o[0]
	case *array.LargeBinary:
		o := a.ValueOffsets()
		return n*8 + o[n] - o[0]
	}
	if fw, ok := arr.DataType().(arrow.FixedWidthDataType); ok {
		return (n*int64(fw.BitWidth()) + 7) / 8
	}
	return n * 8
}

// openBytes sums the columns' estimates of the open row group: each column's state
// when the previous slice was encoded — compressed pages as they are, unwritten bytes
// (the current page, the dictionary) at the compression the last row group showed
// for them — plus the slice in flight's Arrow bytes at the column's compression ratio
// of the last row group (1.0 before the first, which errs towards smaller row
// groups). It does not depend on how far the encoders have got (see parallelEncoder).
func (e *parallelEncoder) openBytes() int64 {
	if e.rgw == nil {
		return 0
	}
	var est float64
	for i, c := range e.cols {
		est += c.settled
		for _, st := range e.inflight {
			est += st.arrow[i] * c.ratio
		}
	}
	return int64(est)
}

func (e *parallelEncoder) endRowGroup() error {
	if e.rgw == nil {
		return nil
	}
	e.settle()
	if err := e.failed(); err != nil {
		return err
	}
	err := e.rgw.Close()
	e.rgw = nil
	if err != nil {
		e.fail(err)
		return err
	}
	e.model.mu.Lock()
	defer e.model.mu.Unlock()
	for i, c := range e.cols {
		if b := c.cw.GetBloomFilter(); b != nil {
			e.blooms = append(e.blooms, b)
		}
		// After Close, a column writer's TotalBytesWritten is its chunk's size.
		real := float64(c.cw.TotalBytesWritten())
		if u := float64(c.unwritten.Load()); u > 0 {
			c.pending = min(max((real-float64(c.written.Load()))/u, 0.02), 1.5)
		}
		if c.arrow > 0 && real > 0 {
			c.ratio = min(max(real/c.arrow, 0.01), 4)
		}
		e.model.ratio[i], e.model.pending[i] = c.ratio, c.pending
		c.cw = nil
	}
	return nil
}

// stop ends the column goroutines (after the queued arrays are encoded, or dropped
// once the encoder has failed).
func (e *parallelEncoder) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	for _, c := range e.cols {
		close(c.in)
	}
	for _, c := range e.cols {
		<-c.done
	}
}

func (e *parallelEncoder) close() (*metadata.FileMetaData, error) {
	err := e.endRowGroup()
	e.stop()
	if err != nil {
		return nil, err
	}
	err = e.fw.Close()
	e.releaseBlooms()
	if err != nil {
		return nil, err
	}
	return e.fw.FileMetadata()
}

func (e *parallelEncoder) releaseBlooms() {
	for _, b := range e.blooms {
		b.Release()
	}
	e.blooms = nil
}

// settle waits until every slice in flight is encoded.
func (e *parallelEncoder) settle() { e.complete(len(e.inflight)) }

// complete waits for the n oldest slices in flight and takes the columns' sizes
// after the last of them.
func (e *parallelEncoder) complete(n int) {
	if n == 0 {
		return
	}
	for _, st := range e.inflight[:n] {
		st.done.Wait()
	}
	last := e.inflight[n-1]
	for i, c := range e.cols {
		c.settled = last.after[i]
	}
	e.inflight = append(e.inflight[:0], e.inflight[n:]...)
}

// abort lets the slice in flight finish (so that every column writer is consistent),
// stops the goroutines and closes each column writer of the open row group into the
// sink, which the caller discards: arrow-go's column writers release their buffers
// only on Close. (The row group writer's own Close refuses columns of unequal row
// counts, as a column that failed leaves them, and would then release nothing.)
func (e *parallelEncoder) abort() {
	e.settle()
	e.fail(errAborted)
	e.stop()
	if e.rgw != nil {
		for _, c := range e.cols {
			if c.cw == nil {
				continue
			}
			_ = c.cw.Close()
			if b := c.cw.GetBloomFilter(); b != nil {
				e.blooms = append(e.blooms, b)
			}
		}
		e.rgw = nil
	}
	e.releaseBlooms()
}
