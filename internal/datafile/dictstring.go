package datafile

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// stringDict is the dictionary-encoding shortcut of one dictionary-encoded string
// or binary column chunk (one row group of one column).
//
// arrow-go encodes such a column by hashing every value into its dictionary's memo
// table (an interface conversion and an allocation per value: about 60 ns, 20% of
// a low-cardinality string column's encoding), and keeps the column's page
// statistics by comparing every value. stringDict mirrors the memo table in a Go map
// (value → dictionary index, in arrow-go's order: first appearance) and, for each
// run of WriteBatchSize rows whose values are all in it already, hands arrow-go the
// indices (ColumnChunkWriter.WriteDictIndices) and updates the statistics from the
// distinct values of the run. A run with a new value (or a null) is written as
// before, through pqarrow, and its new values then join the map.
//
// The file is byte-for-byte the one pqarrow writes (TestParallelEncoderWritesWhatPqarrowWrites,
// TestStringDictShortcutWritesWhatPqarrowWrites): per run of WriteBatchSize rows —
// the unit at which arrow-go's dense path updates statistics, checks the page size
// and the dictionary size — the shortcut makes the same changes to the column
// writer: the indices appended to the encoder (same memo indices), the raw size the
// encoder observes, the page statistics' counts, minimum and maximum, the levels and
// the page-size check. A run of known values cannot grow the dictionary, so the
// dictionary size check it skips could not trigger; the shortcut is off where
// arrow-go's cost-based fallback (dictionary plus indices against plain size) may
// run, which it only does for uncompressed columns by default.
type stringDict struct {
	ids   map[string]int32
	vals  [][]byte // dictionary values by index (copies)
	stamp []uint32 // per index: the run that last referenced it
	run   uint32
	refs  []int32 // the distinct indices of the current run
	idx   []int32 // the current run's indices
	// fast and dense count the runs written each way in this column chunk; the
	// shortcut turns itself off when most runs bring new values.
	nFast, nDense int
	off           bool
}

// smallDict is the dictionary size up to which stringDict looks values up by
// comparing them with each entry.
const smallDict = 8

// stringDictMaxEntries bounds the dictionary a stringDict mirrors; arrow-go's own
// falls back to plain at DictionaryPageSizeLimit bytes long before this.
const stringDictMaxEntries = 1 << 20

// newStringDict returns the shortcut for the column chunk cw starts, or nil when it
// does not apply: not a flat string or binary column, not dictionary-encoded, or
// subject to the cost-based fallback.
func newStringDict(cw file.ColumnChunkWriter, typ arrow.DataType, props *parquet.WriterProperties, reuse *stringDict) *stringDict {
	switch typ.ID() {
	case arrow.STRING, arrow.BINARY:
	default:
		return nil
	}
	if _, ok := cw.(*file.ByteArrayColumnChunkWriter); !ok {
		return nil
	}
	if cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict {
		return nil
	}
	if props.DictionaryCostFallbackEnabledFor(cw.Descr().Path()) {
		return nil
	}
	if _, ok := cw.CurrentEncoder().(dictMemo); !ok {
		return nil
	}
	if ps := cw.PageStatistics(); ps != nil {
		if _, ok := ps.(*metadata.ByteArrayStatistics); !ok {
			return nil
		}
	}
	d := reuse
	if d == nil {
		d = &stringDict{ids: map[string]int32{}}
	}
	clear(d.ids)
	d.vals, d.stamp, d.refs = d.vals[:0], d.stamp[:0], d.refs[:0]
	d.nFast, d.nDense, d.off = 0, 0, false
	return d
}

// dictMemo is what arrow-go's dictionary encoders have beyond the interface they are
// returned as: the number of dictionary entries and the raw-size accounting.
type dictMemo interface {
	NumEntries() int
	AddRawSize(int64)
}

// binaryValues returns the offsets of a string or binary array and its whole value
// buffer, which the offsets index (as pqarrow reads them).
func binaryValues(arr arrow.Array) ([]int32, []byte) {
	var offsets []int32
	switch a := arr.(type) {
	case *array.String:
		offsets = a.ValueOffsets()
	case *array.Binary:
		offsets = a.ValueOffsets()
	default:
		return nil, nil
	}
	data := []byte{}
	if b := arr.Data().Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	return offsets, data
}

// write encodes arr (its definition levels def, nil for a required column) into
// cw, run by run.
func (d *stringDict) write(ctx *columnEncoder, arr arrow.Array, def []int16) error {
	cw := ctx.cw
	n := arr.Len()
	offsets, data := binaryValues(arr)
	if d.off || offsets == nil || arr.NullN() != 0 {
		return d.dense(ctx, arr, def, 0, n, offsets, data)
	}
	batch := int(ctx.e.props.WriteBatchSize())
	for lo := 0; lo < n; lo += batch {
		hi := min(n, lo+batch)
		if d.off || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict {
			// Off (or fallen back to plain): the rest in one call, whose runs start
			// where these would.
			d.off = true
			return d.dense(ctx, arr, def, lo, n, offsets, data)
		}
		if d.lookup(offsets, data, lo, hi) {
			if err := d.writeIndices(cw, offsets, lo, hi, levels(def, lo, hi)); err != nil {
				return err
			}
			d.nFast++
			continue
		}
		if err := d.dense(ctx, arr, def, lo, hi, offsets, data); err != nil {
			return err
		}
		d.nDense++
		if d.nDense > 32 && d.nDense > d.nFast {
			d.off = true
		}
	}
	return nil
}

func levels(def []int16, lo, hi int) []int16 {
	if def == nil {
		return nil
	}
	return def[lo:hi]
}

// lookup maps rows lo..hi to dictionary indices (d.idx) and collects the distinct
// ones (d.refs); false if a value is not in the dictionary.
func (d *stringDict) lookup(offsets []int32, data []byte, lo, hi int) bool {
	d.run++
	d.refs = d.refs[:0]
	if cap(d.idx) < hi-lo {
		d.idx = make([]int32, hi-lo)
	}
	idx := d.idx[:hi-lo]
	small := len(d.vals) <= smallDict
	for i := lo; i < hi; i++ {
		v := data[offsets[i]:offsets[i+1]]
		var id int32
		var ok bool
		if small {
			// A few values: comparing is cheaper than hashing.
			for k, dv := range d.vals {
				if string(dv) == string(v) {
					id, ok = int32(k), true
					break
				}
			}
		} else {
			id, ok = d.ids[string(v)]
		}
		if !ok {
			return false
		}
		idx[i-lo] = id
		if d.stamp[id] != d.run {
			d.stamp[id] = d.run
			d.refs = append(d.refs, id)
		}
	}
	return true
}

// writeIndices writes the run lo..hi (no nulls, indices in d.idx) as arrow-go's
// dense path would: statistics, raw size, then indices and levels.
func (d *stringDict) writeIndices(cw file.ColumnChunkWriter, offsets []int32, lo, hi int, def []int16) error {
	n := hi - lo
	if ps := cw.PageStatistics(); ps != nil {
		bs := ps.(*metadata.ByteArrayStatistics) // checked by newStringDict
		bs.IncNulls(0)
		bs.IncNumValues(int64(n))
		for _, id := range d.refs {
			v := parquet.ByteArray(d.vals[id])
			bs.SetMinMax(v, v)
		}
	}
	cw.CurrentEncoder().(dictMemo).AddRawSize(int64(offsets[hi]-offsets[lo]) + 4*int64(n))
	buf := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(d.idx[:n]))
	data := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	indices := array.NewInt32Data(data)
	data.Release()
	err := cw.WriteDictIndices(indices, def, nil)
	indices.Release()
	return err
}

// dense writes rows lo..hi of arr through pqarrow and adds the values new to the
// dictionary, in order, as arrow-go's memo table did; the shortcut turns off if the
// two disagree on the number of entries.
func (d *stringDict) dense(ctx *columnEncoder, arr arrow.Array, def []int16, lo, hi int, offsets []int32, data []byte) error {
	part := arr
	if lo != 0 || hi != arr.Len() {
		part = array.NewSlice(arr, int64(lo), int64(hi))
		defer part.Release()
	}
	if err := ctx.writeDense(part, levels(def, lo, hi)); err != nil {
		return err
	}
	if d.off {
		return nil
	}
	memo, ok := ctx.cw.CurrentEncoder().(dictMemo)
	if !ok || ctx.cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict || offsets == nil {
		d.off = true
		return nil
	}
	for i := lo; i < hi; i++ {
		if arr.IsNull(i) {
			continue
		}
		v := data[offsets[i]:offsets[i+1]]
		if _, ok := d.ids[string(v)]; ok {
			continue
		}
		d.ids[string(v)] = int32(len(d.vals))
		d.vals = append(d.vals, append([]byte{}, v...))
		d.stamp = append(d.stamp, 0)
	}
	if memo.NumEntries() != len(d.vals) || len(d.vals) > stringDictMaxEntries {
		d.off = true
	}
	return nil
}

// writeDense hands arr to pqarrow's writer (the definition levels and nullability
// of the leaf as columnEncoder.encode computed them for arr).
func (c *columnEncoder) writeDense(arr arrow.Array, def []int16) error {
	leafNullable := c.nullable && arr.NullN() > 0
	return pqarrow.WriteArrowToColumn(c.actx, c.cw, arr, def, nil, leafNullable)
}
