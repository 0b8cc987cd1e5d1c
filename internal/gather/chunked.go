package gather

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Chunks is one column held as several arrays of one type — the batches it was
// read in — whose rows are addressed by packed row IDs: the chunk's index shifted
// left by Shift, or'ed with the row's position within the chunk. Every chunk has at
// most 1<<Shift rows. A gather from Chunks reads the batches where they are, so
// that a caller reordering a whole input need not first concatenate it (a copy of
// every byte, held next to the input while the reordered output is written).
type Chunks struct {
	Arrays []arrow.Array
	Shift  uint
}

// ID returns the packed row ID of row within chunk.
func (c Chunks) ID(chunk, row int) uint32 { return uint32(chunk)<<c.Shift | uint32(row) }

// ChunkedType reports whether TakeChunks gathers arrays of type dt: fixed-width
// types, booleans, strings and binaries (the types with a loop in this package).
func ChunkedType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.UINT8, arrow.INT16, arrow.UINT16, arrow.INT32, arrow.UINT32, arrow.INT64, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
		arrow.DURATION, arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY, arrow.BOOL,
		arrow.STRING, arrow.BINARY:
		return true
	}
	return false
}

// TakeChunks returns the rows of c at the packed row IDs ids, in that order: row
// ids[i]&(1<<Shift-1) of chunk ids[i]>>Shift (invariant G1 with the chunks read as
// one array). The chunks must be of one type that ChunkedType accepts, or be one
// array with Shift 32 (IDs are then its rows, and every type is taken as Take does);
// an ID outside the chunks is an ErrIndex error. The caller releases the result.
func TakeChunks(ctx context.Context, c Chunks, ids []uint32, mem memory.Allocator) (arrow.Array, error) {
	return takeChunks(ctx, c, ids, nil, mem)
}

// Grouping is the IDs of a chunked take grouped by chunk (see chunkGroups), made
// once by GroupIDs for several columns chunked alike — the columns of the same
// batches — so that each column's take need not group them again.
type Grouping struct {
	ids    []uint32
	shift  uint
	chunks int
	groups *chunkGroups // nil when there are too few IDs to gain from grouping
}

// GroupIDs groups ids, packed row IDs over chunks chunks with the given shift, for
// TakeGrouped. An ID whose chunk is not below chunks is an ErrIndex error.
func GroupIDs(ids []uint32, shift uint, chunks int) (*Grouping, error) {
	if shift > 32 {
		return nil, fmt.Errorf("gather: chunk shift %d is over 32", shift)
	}
	for _, id := range ids {
		if k := id >> shift; int(k) >= chunks {
			return nil, fmt.Errorf("%w: chunk %d of %d", ErrIndex, k, chunks)
		}
	}
	g := &Grouping{ids: ids, shift: shift, chunks: chunks}
	if len(ids) >= groupMinRows && chunks > 1 {
		g.groups = groupByChunk(ids, shift, uint32(uint64(1)<<shift-1), chunks)
	}
	return g, nil
}

// TakeGrouped is TakeChunks(ctx, c, ids, mem) for the ids g was made of; c must have
// g's shift and number of chunks.
func TakeGrouped(ctx context.Context, c Chunks, g *Grouping, mem memory.Allocator) (arrow.Array, error) {
	if c.Shift != g.shift || len(c.Arrays) != g.chunks {
		return nil, fmt.Errorf("gather: IDs grouped for %d chunks at shift %d, taken from %d at shift %d", g.chunks, g.shift, len(c.Arrays), c.Shift)
	}
	return takeChunks(ctx, c, g.ids, g, mem)
}

// takeChunks is TakeChunks, with the IDs already grouped when grouped is not nil.
func takeChunks(ctx context.Context, c Chunks, ids []uint32, grouped *Grouping, mem memory.Allocator) (arrow.Array, error) {
	if len(c.Arrays) == 0 {
		if len(ids) > 0 {
			return nil, fmt.Errorf("%w: %d rows taken from no chunks", ErrIndex, len(ids))
		}
		return nil, fmt.Errorf("gather: no chunks (their type is unknown)")
	}
	if c.Shift > 32 {
		return nil, fmt.Errorf("gather: chunk shift %d is over 32", c.Shift)
	}
	if len(c.Arrays) == 1 && c.Shift == 32 {
		return Take(ctx, c.Arrays[0], ids, mem) // IDs are rows: any type
	}
	dt := c.Arrays[0].DataType()
	for _, a := range c.Arrays[1:] {
		if !arrow.TypeEqual(a.DataType(), dt) {
			return nil, fmt.Errorf("gather: chunks of types %s and %s", dt, a.DataType())
		}
	}
	if !ChunkedType(dt) {
		return nil, fmt.Errorf("gather: chunked take of %s is not supported", dt)
	}
	mask := uint32(uint64(1)<<c.Shift - 1)
	lens := make([]uint32, len(c.Arrays))
	for i, a := range c.Arrays {
		if uint64(a.Len()) > uint64(mask)+1 {
			return nil, fmt.Errorf("gather: chunk %d has %d rows, more than 1<<%d", i, a.Len(), c.Shift)
		}
		lens[i] = uint32(a.Len())
	}
	for _, id := range ids {
		k := id >> c.Shift // 0 when Shift is 32
		if int(k) >= len(lens) || id&mask >= lens[k] {
			return nil, fmt.Errorf("%w: row %d of chunk %d (%d chunks)", ErrIndex, id&mask, k, len(lens))
		}
	}
	g := chunkGather{shift: c.Shift, mask: mask}
	switch {
	case grouped != nil:
		g.groups = grouped.groups
	case len(ids) >= groupMinRows && len(c.Arrays) > 1:
		g.groups = groupByChunk(ids, c.Shift, mask, len(c.Arrays))
	}
	switch dt.ID() {
	case arrow.BOOL:
		return g.boolean(c.Arrays, ids, mem), nil
	case arrow.STRING, arrow.BINARY:
		return g.varBinary(c.Arrays, ids, mem)
	}
	w := dt.(arrow.FixedWidthDataType).BitWidth() / 8
	return g.fixed(c.Arrays, ids, w, mem), nil
}

// chunkGather holds how a gather splits packed row IDs, and the IDs grouped by
// chunk when there are enough of them (groupByChunk).
type chunkGather struct {
	shift  uint
	mask   uint32
	groups *chunkGroups // nil: gather in output order
}

// groupMinRows is the fewest IDs for which a gather over several chunks groups them
// by chunk first: below it the grouping costs more than the misses it saves.
const groupMinRows = 4096

// chunkGroups is a gather's IDs grouped by chunk: ents[start[k]:start[k+1]] are
// chunk k's, each an output position (high 32 bits) and a row of the chunk (low 32
// bits), in output order within the chunk.
//
// Why: the IDs of a reordering (OPTIMIZE's sorted rows) are random over the whole
// input, so a gather in output order misses the cache on nearly every value of every
// column (measured: ~21 ns a value over nine 8 MiB columns, against ~4 ns when the
// source fits the cache). Grouped, the gather reads one chunk (a batch as read, a
// few hundred KiB a column) at a time while the output window stays in cache, and
// the grouping is one sequential pass over the IDs.
type chunkGroups struct {
	ents  []uint64
	start []int
}

// groupByChunk groups ids (all valid for chunks chunks) by chunk: a counting sort,
// stable, so that each chunk's entries are in output order.
func groupByChunk(ids []uint32, shift uint, mask uint32, chunks int) *chunkGroups {
	start := make([]int, chunks+1)
	for _, id := range ids {
		start[(id>>shift)+1]++ // id>>shift is 0 when shift is 32
	}
	for k := 1; k <= chunks; k++ {
		start[k] += start[k-1]
	}
	next := append([]int(nil), start[:chunks]...)
	ents := make([]uint64, len(ids))
	for i, id := range ids {
		k := id >> shift
		ents[next[k]] = uint64(i)<<32 | uint64(id&mask)
		next[k]++
	}
	return &chunkGroups{ents: ents, start: start}
}

// chunk returns chunk k's entries.
func (c *chunkGroups) chunk(k int) []uint64 { return c.ents[c.start[k]:c.start[k+1]] }

// validity gathers the validity bitmap over chunks (nil, and 0 nulls, when no
// chunk has nulls).
func (g chunkGather) validity(arrs []arrow.Array, ids []uint32, mem memory.Allocator) (*memory.Buffer, int) {
	hasNulls := false
	bits := make([][]byte, len(arrs)) // nil: every row valid
	offs := make([]int, len(arrs))
	for i, a := range arrs {
		d := a.Data()
		// Array.NullN, not Data.NullN: a slice's Data counts its nulls lazily (-1).
		if a.NullN() > 0 && d.Buffers()[0] != nil {
			bits[i], offs[i], hasNulls = d.Buffers()[0].Bytes(), d.Offset(), true
		}
	}
	if !hasNulls {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(ids)))))
	out := buf.Bytes()
	clear(out)
	nulls := 0
	if g.groups != nil {
		for k, b := range bits {
			for _, e := range g.groups.chunk(k) {
				if b == nil || bitutil.BitIsSet(b, offs[k]+int(uint32(e))) {
					bitutil.SetBit(out, int(e>>32))
				} else {
					nulls++
				}
			}
		}
		return buf, nulls
	}
	for i, id := range ids {
		k, r := id>>g.shift, id&g.mask
		if b := bits[k]; b == nil || bitutil.BitIsSet(b, offs[k]+int(r)) {
			bitutil.SetBit(out, i)
		} else {
			nulls++
		}
	}
	return buf, nulls
}

func (g chunkGather) fixed(arrs []arrow.Array, ids []uint32, w int, mem memory.Allocator) arrow.Array {
	valid, nulls := g.validity(arrs, ids, mem)
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(ids) * w)
	dst := buf.Bytes()
	srcs := make([][]byte, len(arrs))
	for i, a := range arrs {
		d := a.Data()
		if b := d.Buffers()[1]; b != nil {
			srcs[i] = b.Bytes()[d.Offset()*w:]
		}
	}
	switch w {
	case 8:
		gatherChunkWords(g, arrow.Uint64Traits.CastFromBytes(dst), castAll(srcs, arrow.Uint64Traits.CastFromBytes), ids)
	case 4:
		gatherChunkWords(g, arrow.Uint32Traits.CastFromBytes(dst), castAll(srcs, arrow.Uint32Traits.CastFromBytes), ids)
	case 16:
		gatherChunkWords(g, arrow.Decimal128Traits.CastFromBytes(dst), castAll(srcs, arrow.Decimal128Traits.CastFromBytes), ids)
	case 2:
		gatherChunkWords(g, arrow.Uint16Traits.CastFromBytes(dst), castAll(srcs, arrow.Uint16Traits.CastFromBytes), ids)
	case 1:
		gatherChunkWords(g, dst, srcs, ids)
	default:
		for i, id := range ids { // 32-byte decimals and odd fixed-size binaries: rare
			k, r := id>>g.shift, int(id&g.mask)
			copy(dst[i*w:(i+1)*w], srcs[k][r*w:(r+1)*w])
		}
	}
	return makeArray(arrs[0].DataType(), len(ids), []*memory.Buffer{valid, buf}, nulls)
}

// castAll views every chunk's bytes as a slice of T.
func castAll[T any](srcs [][]byte, cast func([]byte) []T) [][]T {
	out := make([][]T, len(srcs))
	for i, s := range srcs {
		out[i] = cast(s)
	}
	return out
}

func gatherChunkWords[T any](g chunkGather, dst []T, srcs [][]T, ids []uint32) {
	dst = dst[:len(ids)]
	if g.groups != nil {
		for k, src := range srcs {
			for _, e := range g.groups.chunk(k) {
				dst[e>>32] = src[uint32(e)]
			}
		}
		return
	}
	for i, id := range ids {
		dst[i] = srcs[id>>g.shift][id&g.mask]
	}
}

func (g chunkGather) boolean(arrs []arrow.Array, ids []uint32, mem memory.Allocator) arrow.Array {
	valid, nulls := g.validity(arrs, ids, mem)
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(ids)))))
	dst := buf.Bytes()
	clear(dst)
	srcs := make([][]byte, len(arrs))
	offs := make([]int, len(arrs))
	for i, a := range arrs {
		srcs[i], offs[i] = a.Data().Buffers()[1].Bytes(), a.Data().Offset()
	}
	for i, id := range ids {
		k, r := id>>g.shift, id&g.mask
		if bitutil.BitIsSet(srcs[k], offs[k]+int(r)) {
			bitutil.SetBit(dst, i)
		}
	}
	return makeArray(arrs[0].DataType(), len(ids), []*memory.Buffer{valid, buf}, nulls)
}

// varBinary gathers strings or binaries over chunks in two tight passes, so that
// the random accesses of many rows are in flight at once: the first reads each
// value's bounds in the chunks' offsets and lays out the output offsets; the second
// copies the values, a short one as one 32-byte block (the output has room for it:
// the next value overwrites the excess), a longer one with copy.
func (g chunkGather) varBinary(arrs []arrow.Array, ids []uint32, mem memory.Allocator) (arrow.Array, error) {
	valid, nulls := g.validity(arrs, ids, mem)
	offs := make([][]int32, len(arrs))
	data := make([][]byte, len(arrs))
	for i, a := range arrs {
		d := a.Data()
		offs[i] = arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
		if b := d.Buffers()[2]; b != nil {
			data[i] = b.Bytes()
		}
	}
	obuf := memory.NewResizableBuffer(mem)
	obuf.Resize((len(ids) + 1) * 4)
	dst := arrow.Int32Traits.CastFromBytes(obuf.Bytes())
	starts := make([]int32, len(ids))
	var pos int64
	tooLarge := func() (arrow.Array, error) {
		obuf.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, fmt.Errorf("gather: %d rows of %s hold more than 2 GiB, too large for 32-bit offsets", len(ids), arrs[0].DataType())
	}
	if g.groups != nil {
		// Each value's start and length, chunk by chunk; then the lengths become
		// offsets in one sequential pass.
		for k, o := range offs {
			for _, e := range g.groups.chunk(k) {
				i, r := e>>32, uint32(e)
				starts[i] = o[r]
				dst[i] = o[r+1] - o[r]
			}
		}
		for i := range ids {
			n := dst[i]
			dst[i] = int32(pos)
			pos += int64(n)
			if pos > math.MaxInt32 {
				return tooLarge()
			}
		}
	} else {
		for i, id := range ids {
			o := offs[id>>g.shift]
			r := id & g.mask
			s := o[r]
			starts[i] = s
			dst[i] = int32(pos)
			pos += int64(o[r+1] - s)
			if pos > math.MaxInt32 {
				return tooLarge()
			}
		}
	}
	dst[len(ids)] = int32(pos)
	vbuf := memory.NewResizableBuffer(mem)
	vbuf.Resize(int(pos) + block)
	vals := vbuf.Bytes()
	copyValue := func(src []byte, i int) {
		s, d, n := int(starts[i]), int(dst[i]), int(dst[i+1]-dst[i])
		if n <= block && s+block <= len(src) {
			*(*[block]byte)(vals[d : d+block]) = *(*[block]byte)(src[s : s+block])
		} else {
			copy(vals[d:d+n], src[s:s+n])
		}
	}
	if g.groups != nil {
		// Values land out of output order here, so a copy must not write past its
		// value's end (the 32-byte block of copyValue would clobber a neighbour
		// already written): copyExact.
		for k, src := range data {
			for _, e := range g.groups.chunk(k) {
				i := int(e >> 32)
				s, d, n := int(starts[i]), int(dst[i]), int(dst[i+1]-dst[i])
				copyExact(vals[d:d+n], src[s:s+n])
			}
		}
	} else {
		for i, id := range ids {
			copyValue(data[id>>g.shift], i)
		}
	}
	vbuf.ResizeNoShrink(int(pos))
	return makeArray(arrs[0].DataType(), len(ids), []*memory.Buffer{valid, obuf, vbuf}, nulls), nil
}

// copyExact copies src to dst (of the same length) writing no byte outside dst:
// values of up to 32 bytes as two overlapping words, without a call to memmove.
func copyExact(dst, src []byte) {
	n := len(src)
	switch {
	case n > 32:
		copy(dst, src)
	case n >= 16:
		*(*[16]byte)(dst[:16]) = *(*[16]byte)(src[:16])
		*(*[16]byte)(dst[n-16:]) = *(*[16]byte)(src[n-16:])
	case n >= 8:
		*(*[8]byte)(dst[:8]) = *(*[8]byte)(src[:8])
		*(*[8]byte)(dst[n-8:]) = *(*[8]byte)(src[n-8:])
	case n >= 4:
		*(*[4]byte)(dst[:4]) = *(*[4]byte)(src[:4])
		*(*[4]byte)(dst[n-4:]) = *(*[4]byte)(src[n-4:])
	default:
		for i := range n {
			dst[i] = src[i]
		}
	}
}

// block is the size of the copies of short values in varBinary.
const block = 32

// makeArray wraps buffers (released: the array holds them) into an array.
func makeArray(dt arrow.DataType, n int, bufs []*memory.Buffer, nulls int) arrow.Array {
	d := array.NewData(dt, n, bufs, nil, nulls, 0)
	defer d.Release()
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	return array.MakeFromData(d)
}
