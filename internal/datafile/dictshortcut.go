package datafile

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// dictShortcut is the dictionary-encoding shortcut of one dictionary-encoded
// column chunk (one row group of one column) of strings, binaries, 32- or 64-bit
// integers or dates.
//
// arrow-go encodes such a column by hashing every value into its dictionary's memo
// table (for byte arrays an interface conversion and an allocation per value: about
// 60 ns, most of a low-cardinality string column's encoding), and keeps the page
// statistics by comparing every value. The shortcut mirrors the memo table (value →
// dictionary index, in arrow-go's order: first appearance) and, for each run of
// WriteBatchSize rows whose values are all in it already, hands arrow-go the indices
// (ColumnChunkWriter.WriteDictIndices) and updates the statistics from the distinct
// values of the run. A run with a new value (or an array with nulls) is written as
// before, through pqarrow, and its new values then join the mirror.
//
// The file is byte-for-byte the one pqarrow writes (TestParallelEncoderWritesWhatPqarrowWrites,
// TestDictShortcutWritesWhatPqarrowWrites): per run of WriteBatchSize rows — the
// unit at which arrow-go's dense path updates statistics, checks the page size and
// the dictionary size — the shortcut makes the same changes to the column writer:
// the indices appended to the encoder (same memo indices), the raw size the encoder
// observes, the page statistics' counts, minimum and maximum, the levels and the
// page-size check. A run of known values cannot grow the dictionary, so the
// dictionary size check it skips could not trigger; the shortcut is off where
// arrow-go's cost-based fallback (dictionary plus indices against plain size) may
// run, which it only does for uncompressed columns by default. If the mirror and
// arrow-go ever disagree on the number of entries, the shortcut turns itself off
// for the rest of the column chunk.
type dictShortcut struct {
	vals dictValues
	// stamp is, per dictionary index, the run that last referenced it; refs the
	// distinct indices of the current run; idx its indices.
	stamp []uint32
	run   uint32
	refs  []int32
	idx   []int32
	// nFast and nDense count the runs written each way in this column chunk; the
	// shortcut turns itself off when most runs bring new values.
	nFast, nDense int
	off           bool
}

// dictValues is the value kind of a dictShortcut: byte arrays or integers.
type dictValues interface {
	// reset empties the mirror.
	reset()
	// load takes the values of arr (false: arr is not of the kind).
	load(arr arrow.Array) bool
	// lookup maps rows lo..hi of the loaded array to d.idx, marking the distinct
	// indices (d.mark); false as soon as one is not in the mirror.
	lookup(d *dictShortcut, lo, hi int) bool
	// learn adds the new non-null values of rows lo..hi, in order.
	learn(arr arrow.Array, lo, hi int)
	// entries is the number of values in the mirror.
	entries() int
	// update adds rows lo..hi (no nulls, distinct indices d.refs) to the page
	// statistics (nil: none) and returns their plain size, the raw size arrow-go's
	// encoder counts for them.
	update(d *dictShortcut, stats metadata.TypedStatistics, lo, hi int) int64
}

// mark records that the current run references dictionary index id.
func (d *dictShortcut) mark(id int32) {
	if d.stamp[id] != d.run {
		d.stamp[id] = d.run
		d.refs = append(d.refs, id)
	}
}

// dictMaxEntries bounds the dictionary a dictShortcut mirrors; arrow-go's own falls
// back to plain at DictionaryPageSizeLimit bytes long before this.
const dictMaxEntries = 1 << 20

// smallDict is the dictionary size up to which values are looked up by comparing
// them with each entry (cheaper than hashing).
const smallDict = 8

// dictMemo is what arrow-go's dictionary encoders have beyond the interface they are
// returned as: the number of dictionary entries and the raw-size accounting.
type dictMemo interface {
	NumEntries() int
	AddRawSize(int64)
}

// newDictShortcut returns the shortcut for the column chunk cw starts (reusing the
// maps of reuse, a previous one of the column, if not nil), or nil when it does not
// apply: not a flat string, binary, int32, date32 or int64 column, not
// dictionary-encoded, or subject to the cost-based fallback.
func newDictShortcut(cw file.ColumnChunkWriter, typ arrow.DataType, props *parquet.WriterProperties, reuse *dictShortcut) *dictShortcut {
	ps := cw.PageStatistics()
	var ok bool
	switch typ.ID() {
	case arrow.STRING, arrow.BINARY:
		_, ok = cw.(*file.ByteArrayColumnChunkWriter)
		if ps != nil {
			_, isStats := ps.(*metadata.ByteArrayStatistics)
			ok = ok && isStats
		}
	case arrow.INT32, arrow.DATE32:
		_, ok = cw.(*file.Int32ColumnChunkWriter)
		if ps != nil {
			_, isStats := ps.(*metadata.Int32Statistics)
			ok = ok && isStats
		}
	case arrow.INT64:
		_, ok = cw.(*file.Int64ColumnChunkWriter)
		if ps != nil {
			_, isStats := ps.(*metadata.Int64Statistics)
			ok = ok && isStats
		}
	}
	if !ok || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict ||
		props.DictionaryCostFallbackEnabledFor(cw.Descr().Path()) {
		return nil
	}
	if _, ok := cw.CurrentEncoder().(dictMemo); !ok {
		return nil
	}
	d := reuse
	if d == nil {
		d = &dictShortcut{}
		switch typ.ID() {
		case arrow.STRING, arrow.BINARY:
			d.vals = &byteDict{ids: map[string]int32{}}
		case arrow.INT64:
			d.vals = &intDict[int64]{ids: map[int64]int32{}}
		default:
			d.vals = &intDict[int32]{ids: map[int32]int32{}}
		}
	}
	d.vals.reset()
	d.stamp, d.refs = d.stamp[:0], d.refs[:0]
	d.nFast, d.nDense, d.off = 0, 0, false
	return d
}

// write encodes arr (its definition levels def, nil for a required column) into
// the column writer of c, run by run.
func (d *dictShortcut) write(c *columnEncoder, arr arrow.Array, def []int16) error {
	cw := c.cw
	n := arr.Len()
	if d.off || arr.NullN() != 0 || !d.vals.load(arr) {
		return d.dense(c, arr, def, 0, n)
	}
	batch := int(c.e.props.WriteBatchSize())
	for lo := 0; lo < n; lo += batch {
		hi := min(n, lo+batch)
		if d.off || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict {
			// Off (or fallen back to plain): the rest in one call, whose runs start
			// where these would.
			d.off = true
			return d.dense(c, arr, def, lo, n)
		}
		d.run++
		d.refs = d.refs[:0]
		if cap(d.idx) < hi-lo {
			d.idx = make([]int32, batch)
		}
		d.idx = d.idx[:hi-lo]
		if d.vals.lookup(d, lo, hi) {
			if err := d.writeIndices(cw, lo, hi, levels(def, lo, hi)); err != nil {
				return err
			}
			d.nFast++
			continue
		}
		if err := d.dense(c, arr, def, lo, hi); err != nil {
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

// writeIndices writes the run lo..hi (no nulls, indices in d.idx) as arrow-go's
// dense path would: statistics, raw size, then indices and levels.
func (d *dictShortcut) writeIndices(cw file.ColumnChunkWriter, lo, hi int, def []int16) error {
	n := hi - lo
	raw := d.vals.update(d, cw.PageStatistics(), lo, hi)
	cw.CurrentEncoder().(dictMemo).AddRawSize(raw)
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
func (d *dictShortcut) dense(c *columnEncoder, arr arrow.Array, def []int16, lo, hi int) error {
	part := arr
	if lo != 0 || hi != arr.Len() {
		part = array.NewSlice(arr, int64(lo), int64(hi))
		defer part.Release()
	}
	leafNullable := c.nullable && part.NullN() > 0
	if err := pqarrow.WriteArrowToColumn(c.actx, c.cw, part, levels(def, lo, hi), nil, leafNullable); err != nil {
		return err
	}
	if d.off {
		return nil
	}
	memo, ok := c.cw.CurrentEncoder().(dictMemo)
	if !ok || c.cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict {
		d.off = true
		return nil
	}
	d.vals.learn(arr, lo, hi)
	for len(d.stamp) < d.vals.entries() {
		d.stamp = append(d.stamp, 0)
	}
	if memo.NumEntries() != d.vals.entries() || d.vals.entries() > dictMaxEntries {
		d.off = true
	}
	return nil
}

// byteDict is the dictValues of string and binary columns. Values of at most
// shortBytes bytes are found in short by their bytes packed into a word (no
// string hashing or comparison of bytes), longer ones in the map.
type byteDict struct {
	ids   map[string]int32
	short shortTable
	vals  [][]byte // by index (copies)
	// The loaded array: its offsets and whole value buffer (which the offsets
	// index, as pqarrow reads them).
	offsets []int32
	data    []byte
}

func (b *byteDict) reset() {
	clear(b.ids)
	b.short.reset()
	b.vals = b.vals[:0]
}

func (b *byteDict) entries() int { return len(b.vals) }

func (b *byteDict) load(arr arrow.Array) bool {
	switch a := arr.(type) {
	case *array.String:
		b.offsets = a.ValueOffsets()
	case *array.Binary:
		b.offsets = a.ValueOffsets()
	default:
		return false
	}
	b.data = []byte{}
	if buf := arr.Data().Buffers()[2]; buf != nil {
		b.data = buf.Bytes()
	}
	return true
}

// find returns the dictionary index of the loaded array's value at row i.
func (b *byteDict) find(i int) (int32, bool) {
	lo, hi := int(b.offsets[i]), int(b.offsets[i+1])
	if hi-lo <= shortBytes {
		return b.short.find(packShort(b.data, lo, hi))
	}
	id, ok := b.ids[string(b.data[lo:hi])]
	return id, ok
}

func (b *byteDict) lookup(d *dictShortcut, lo, hi int) bool {
	offsets, data, idx := b.offsets, b.data, d.idx
	small := len(b.vals) <= smallDict
	for i := lo; i < hi; i++ {
		var id int32
		var ok bool
		if small {
			v := data[offsets[i]:offsets[i+1]]
			for k, dv := range b.vals {
				if string(dv) == string(v) {
					id, ok = int32(k), true
					break
				}
			}
		} else {
			id, ok = b.find(i)
		}
		if !ok {
			return false
		}
		idx[i-lo] = id
		d.mark(id)
	}
	return true
}

func (b *byteDict) learn(arr arrow.Array, lo, hi int) {
	if !b.load(arr) {
		return
	}
	for i := lo; i < hi; i++ {
		if arr.IsNull(i) {
			continue
		}
		if _, ok := b.find(i); ok {
			continue
		}
		id := int32(len(b.vals))
		vlo, vhi := int(b.offsets[i]), int(b.offsets[i+1])
		v := b.data[vlo:vhi]
		if len(v) <= shortBytes {
			b.short.add(packShort(b.data, vlo, vhi), id)
		} else {
			b.ids[string(v)] = id
		}
		b.vals = append(b.vals, append([]byte{}, v...)) // never nil, as pqarrow's values
	}
}

func (b *byteDict) update(d *dictShortcut, stats metadata.TypedStatistics, lo, hi int) int64 {
	n := int64(hi - lo)
	if stats != nil {
		s := stats.(*metadata.ByteArrayStatistics) // checked by newDictShortcut
		s.IncNulls(0)
		s.IncNumValues(n)
		if len(d.refs) > 0 && s.Descr().SortOrder() == schema.SortUNSIGNED {
			// The run's least and greatest values in the statistics' own order
			// (unsigned bytes): one update gives the minimum and maximum that one
			// update per value gives.
			least, greatest := b.vals[d.refs[0]], b.vals[d.refs[0]]
			for _, id := range d.refs[1:] {
				v := b.vals[id]
				if bytes.Compare(v, least) < 0 {
					least = v
				} else if bytes.Compare(v, greatest) > 0 {
					greatest = v
				}
			}
			s.SetMinMax(least, greatest)
		} else {
			for _, id := range d.refs {
				v := parquet.ByteArray(b.vals[id])
				s.SetMinMax(v, v)
			}
		}
	}
	return int64(b.offsets[hi]-b.offsets[lo]) + 4*n
}

// shortBytes is the longest value byteDict finds by its packed bytes (shortTable).
const shortBytes = 7

// packShort packs data[lo:hi] (at most shortBytes bytes) into one word: the bytes
// in its low bytes (little-endian), the length in its top byte. Distinct values
// pack to distinct words.
func packShort(data []byte, lo, hi int) uint64 {
	n := hi - lo
	var w uint64
	if lo+8 <= len(data) {
		w = binary.LittleEndian.Uint64(data[lo:]) & (1<<(8*n) - 1)
	} else {
		for i := n - 1; i >= 0; i-- {
			w = w<<8 | uint64(data[lo+i])
		}
	}
	return w | uint64(n)<<56
}

// shortTable maps packed short values (packShort) to dictionary indices: open
// addressing with linear probing, at most half full.
type shortTable struct {
	slots []shortSlot // a power of two long (or empty)
	n     int
	shift uint // 64 - log2(len(slots))
}

// shortSlot is one slot of a shortTable: id is the index plus one, 0 when empty.
type shortSlot struct {
	key uint64
	id  int32
}

func (t *shortTable) reset() {
	clear(t.slots)
	t.n = 0
}

// slot is where the probe for key starts (Fibonacci hashing).
func (t *shortTable) slot(key uint64) int { return int((key * 0x9E3779B97F4A7C15) >> t.shift) }

func (t *shortTable) find(key uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.slot(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// add maps key (not in the table) to id.
func (t *shortTable) add(key uint64, id int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.put(key, id+1)
	t.n++
}

func (t *shortTable) put(key uint64, id1 int32) {
	mask := len(t.slots) - 1
	i := t.slot(key)
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = shortSlot{key, id1}
}

func (t *shortTable) grow() {
	old := t.slots
	size := max(2*len(old), 256)
	t.slots = make([]shortSlot, size)
	t.shift = uint(64 - bits.Len(uint(size-1)))
	for _, s := range old {
		if s.id != 0 {
			t.put(s.key, s.id)
		}
	}
}

// intDict is the dictValues of int32, date32 and int64 columns. Values within
// intWindow of the first one learned are found by position in win (index+1, 0:
// not in the dictionary), the others in the map.
type intDict[T int32 | int64] struct {
	ids    map[T]int32
	vals   []T
	base   T
	win    []int32
	values []T // the loaded array's
}

// intWindow is the span of integer values intDict finds by position.
const intWindow = 1 << 12

func (b *intDict[T]) reset() {
	clear(b.ids)
	b.vals = b.vals[:0]
	if b.win == nil {
		b.win = make([]int32, intWindow)
	}
	clear(b.win)
}

// find returns the dictionary index of v.
func (b *intDict[T]) find(v T) (int32, bool) {
	if len(b.vals) > 0 {
		// The difference wraps modulo 2^64, which keeps it one-to-one: the window
		// slot of a value is its own whatever the base (add puts every value whose
		// slot is in the window there).
		if k := uint64(int64(v) - int64(b.base)); k < intWindow {
			id := b.win[k] - 1
			return id, id >= 0
		}
	}
	id, ok := b.ids[v]
	return id, ok
}

// has reports whether v is in the dictionary.
func (b *intDict[T]) has(v T) bool {
	_, ok := b.find(v)
	return ok
}

// add makes v the next dictionary entry.
func (b *intDict[T]) add(v T) {
	id := int32(len(b.vals))
	if id == 0 {
		b.base = v - intWindow/2 // wraps near the type's minimum: see find
	}
	b.vals = append(b.vals, v)
	if k := uint64(int64(v) - int64(b.base)); k < intWindow && b.win[k] == 0 {
		b.win[k] = id + 1
		return
	}
	b.ids[v] = id
}

func (b *intDict[T]) entries() int { return len(b.vals) }

func (b *intDict[T]) load(arr arrow.Array) bool {
	switch arr.DataType().ID() {
	case arrow.INT32, arrow.DATE32, arrow.INT64:
	default:
		return false
	}
	var zero T
	buf := arr.Data().Buffers()[1]
	if buf == nil {
		return false
	}
	off := arr.Data().Offset()
	switch any(zero).(type) {
	case int32:
		if arr.DataType().ID() == arrow.INT64 {
			return false
		}
		v := arrow.Int32Traits.CastFromBytes(buf.Bytes())[off : off+arr.Len()]
		b.values = any(v).([]T)
	case int64:
		if arr.DataType().ID() != arrow.INT64 {
			return false
		}
		v := arrow.Int64Traits.CastFromBytes(buf.Bytes())[off : off+arr.Len()]
		b.values = any(v).([]T)
	}
	return true
}

func (b *intDict[T]) lookup(d *dictShortcut, lo, hi int) bool {
	idx := d.idx
	for i, v := range b.values[lo:hi] {
		id, ok := b.find(v)
		if !ok {
			return false
		}
		idx[i] = id
		d.mark(id)
	}
	return true
}

func (b *intDict[T]) learn(arr arrow.Array, lo, hi int) {
	if !b.load(arr) {
		return
	}
	for i := lo; i < hi; i++ {
		if arr.IsNull(i) {
			continue
		}
		if v := b.values[i]; !b.has(v) {
			b.add(v)
		}
	}
}

func (b *intDict[T]) update(d *dictShortcut, stats metadata.TypedStatistics, lo, hi int) int64 {
	var zero T
	n := int64(hi - lo)
	width := int64(4)
	if _, ok := any(zero).(int64); ok {
		width = 8
	}
	if stats == nil {
		return n * width
	}
	stats.IncNulls(0)
	stats.IncNumValues(n)
	switch s := stats.(type) { // checked by newDictShortcut
	case *metadata.Int32Statistics:
		for _, id := range d.refs {
			v := int32(b.vals[id])
			s.SetMinMax(v, v)
		}
	case *metadata.Int64Statistics:
		for _, id := range d.refs {
			v := int64(b.vals[id])
			s.SetMinMax(v, v)
		}
	}
	return n * width
}
