package hilbert

import (
	"errors"
	"fmt"
	"sync"

	"github.com/skiplake/skiplake/zorder"
)

// Key is a Hilbert index, right-aligned in 128 bits like a Morton key (see
// zorder.Key): Key[0] holds the high 64 bits.
type Key = zorder.Key

// Limits of a layout.
const (
	// MaxDims is the largest number of dimensions.
	MaxDims = 8
	// MaxBits is the largest number of bits per dimension.
	MaxBits = 32
	// MaxKeyBits is the widest index.
	MaxKeyBits = 128
)

// fsms caches the state machine per dimension count; built on first use.
var fsms [MaxDims + 1]struct {
	once sync.Once
	m    *fsm
}

func machine(n int) *fsm {
	if n > maxTableDims {
		return nil
	}
	f := &fsms[n]
	f.once.Do(func() { f.m = buildFSM(n) })
	return f.m
}

// Curve is the fast Hilbert encoder for Dims() dimensions of Bits() bits each.
// It is immutable and safe for concurrent use.
//
// For up to five dimensions it runs a table-driven state machine over the
// levels of a Morton key (table.go); for six to eight dimensions, whose
// machines would be too large, it runs a branch-free form of Skilling's loop.
type Curve struct {
	dims, bits int
	z          *zorder.Encoder
	m          *fsm // nil: loop implementation or dims == 1
}

// New returns a Curve for dims dimensions (1..8) of bits bits each (1..32,
// dims*bits ≤ 128). A 1-dimensional curve is the identity: callers with a
// single clustering column can use the plain rank directly.
func New(dims, bits int) (*Curve, error) {
	if err := validate(dims, bits); err != nil {
		return nil, err
	}
	z, err := zorder.NewEncoder(dims, bits)
	if err != nil {
		return nil, fmt.Errorf("hilbert: %w", err)
	}
	c := &Curve{dims: dims, bits: bits, z: z}
	if dims > 1 {
		c.m = machine(dims)
	}
	return c, nil
}

// Dims returns the number of dimensions.
func (c *Curve) Dims() int { return c.dims }

// Bits returns the number of bits per dimension.
func (c *Curve) Bits() int { return c.bits }

// KeyBits returns the number of significant index bits, Dims()*Bits().
func (c *Curve) KeyBits() int { return c.dims * c.bits }

func (c *Curve) wide() bool { return c.dims*c.bits > 64 }

// loop reports whether the curve uses Skilling's loop rather than a table.
func (c *Curve) loop() bool { return c.dims > 1 && c.m == nil }

// Encode returns the Hilbert index of one point; len(coords) must equal Dims()
// and every coordinate must be < 2^Bits().
func (c *Curve) Encode(coords []uint32) (Key, error) {
	if err := checkCoords(c.bits, coords, c.dims); err != nil {
		return Key{}, err
	}
	if c.loop() {
		var t [MaxDims]uint32
		c.transposeRow(coords, t[:c.dims])
		k, err := c.z.Encode(t[:c.dims])
		return k, wrapZ(err)
	}
	k, err := c.z.Encode(coords)
	if err != nil {
		return Key{}, wrapZ(err)
	}
	return c.mortonToHilbert(k), nil
}

// Encode64 is Encode for layouts of at most 64 index bits.
func (c *Curve) Encode64(coords []uint32) (uint64, error) {
	if c.wide() {
		return 0, fmt.Errorf("%w: layout has %d bits", ErrKeyTooWide, c.KeyBits())
	}
	k, err := c.Encode(coords)
	return k[1], err
}

// Decode writes the coordinates of index k into out (len(out) == Dims()).
// Bits of k above KeyBits() are an error (ErrIndexRange).
func (c *Curve) Decode(k Key, out []uint32) error {
	if len(out) != c.dims {
		return fmt.Errorf("%w: %d outputs for %d dimensions", ErrShape, len(out), c.dims)
	}
	if err := checkIndex(k, c.KeyBits()); err != nil {
		return err
	}
	if c.loop() {
		if err := c.z.Decode(k, out); err != nil {
			return wrapZ(err)
		}
		var x [MaxDims]uint64
		for i, v := range out {
			x[i] = uint64(v)
		}
		transposeToAxes(x[:c.dims], c.bits)
		for i := range out {
			out[i] = uint32(x[i])
		}
		return nil
	}
	if err := c.z.Decode(c.hilbertToMorton(k), out); err != nil {
		return wrapZ(err)
	}
	return nil
}

// Decode64 is Decode for an index from the 64-bit API.
func (c *Curve) Decode64(k uint64, out []uint32) error { return c.Decode(Key{0, k}, out) }

// EncodeBatch64 fills out[i] with the index of row i, where cols[d][i] is the
// coordinate of dimension d in row i (column-major, every column as long as
// out). The layout must fit 64 bits. On error the contents of out are
// unspecified.
func (c *Curve) EncodeBatch64(cols [][]uint32, out []uint64) error {
	if c.wide() {
		return fmt.Errorf("%w: layout has %d bits", ErrKeyTooWide, c.KeyBits())
	}
	if c.loop() {
		return c.loopBatch(cols, len(out), func(lo, hi int, t [][]uint32) error {
			return c.z.EncodeBatch64(t, out[lo:hi])
		})
	}
	if err := c.z.EncodeBatch64(cols, out); err != nil {
		return wrapZ(err)
	}
	if c.m == nil {
		return nil
	}
	if c.m.multi != nil && c.bits >= c.m.multiLevels {
		c.multiBatch64(out)
		return nil
	}
	n := uint(c.dims)
	enc := c.m.enc
	// Each key is consumed from the top: align it to bit 63, take the top n
	// bits per level, and shift the digits into h.
	align := uint(64 - c.dims*c.bits)
	top := 64 - n
	mask := uint64(1)<<n - 1
	// Four rows per iteration: each row is a chain of dependent table loads
	// (about 8 cycles of latency per level), and interleaving independent
	// chains lets them overlap. The dev VM was too overloaded while this was
	// written to separate one, two and four rows reliably (all ~35-40
	// cpu-ns/key for dims=4); four is kept because it can only help.
	i := 0
	for ; i+3 < len(out); i += 4 {
		ka, kb, kc, kd := out[i]<<align, out[i+1]<<align, out[i+2]<<align, out[i+3]<<align
		var ha, hb, hc, hd uint64
		var sa, sb, sc, sd uint32
		for l := 0; l < c.bits; l++ {
			ea := enc[sa|uint32(ka>>top)]
			eb := enc[sb|uint32(kb>>top)]
			ec := enc[sc|uint32(kc>>top)]
			ed := enc[sd|uint32(kd>>top)]
			ka, kb, kc, kd = ka<<n, kb<<n, kc<<n, kd<<n
			ha = ha<<n | uint64(ea)&mask
			hb = hb<<n | uint64(eb)&mask
			hc = hc<<n | uint64(ec)&mask
			hd = hd<<n | uint64(ed)&mask
			sa, sb, sc, sd = ea>>8, eb>>8, ec>>8, ed>>8
		}
		out[i], out[i+1], out[i+2], out[i+3] = ha, hb, hc, hd
	}
	for ; i < len(out); i++ {
		k := out[i] << align
		var h uint64
		st := uint32(0)
		for l := 0; l < c.bits; l++ {
			e := enc[st|uint32(k>>top)]
			k <<= n
			h = h<<n | uint64(e)&mask
			st = e >> 8
		}
		out[i] = h
	}
	return nil
}

// multiBatch64 turns the Morton keys in out into Hilbert indexes with the
// multi-level table: the levels above a multiple of multiLevels one at a time
// (enc), the rest multiLevels at a time (multi). Four rows per iteration, as in
// EncodeBatch64, so that independent chains of lookups overlap.
func (c *Curve) multiBatch64(out []uint64) {
	n := uint(c.dims)
	enc, multi := c.m.enc, c.m.multi
	levels := c.m.multiLevels
	step := n * uint(levels)
	head := c.bits % levels // single levels first
	steps := c.bits / levels
	align := uint(64 - c.dims*c.bits)
	top1, topM := 64-n, 64-step
	mask1, maskM := uint64(1)<<n-1, uint64(1)<<step-1
	// A single-level state (number<<n) becomes a multi-level one (number<<step).
	up := step - n
	i := 0
	for ; i+3 < len(out); i += 4 {
		ka, kb, kc, kd := out[i]<<align, out[i+1]<<align, out[i+2]<<align, out[i+3]<<align
		var ha, hb, hc, hd uint64
		var sa, sb, sc, sd uint32
		for l := 0; l < head; l++ {
			ea := enc[sa|uint32(ka>>top1)]
			eb := enc[sb|uint32(kb>>top1)]
			ec := enc[sc|uint32(kc>>top1)]
			ed := enc[sd|uint32(kd>>top1)]
			ka, kb, kc, kd = ka<<n, kb<<n, kc<<n, kd<<n
			ha = ha<<n | uint64(ea)&mask1
			hb = hb<<n | uint64(eb)&mask1
			hc = hc<<n | uint64(ec)&mask1
			hd = hd<<n | uint64(ed)&mask1
			sa, sb, sc, sd = ea>>8, eb>>8, ec>>8, ed>>8
		}
		sa, sb, sc, sd = sa<<up, sb<<up, sc<<up, sd<<up
		for l := 0; l < steps; l++ {
			ea := multi[sa|uint32(ka>>topM)]
			eb := multi[sb|uint32(kb>>topM)]
			ec := multi[sc|uint32(kc>>topM)]
			ed := multi[sd|uint32(kd>>topM)]
			ka, kb, kc, kd = ka<<step, kb<<step, kc<<step, kd<<step
			ha = ha<<step | uint64(ea)&maskM
			hb = hb<<step | uint64(eb)&maskM
			hc = hc<<step | uint64(ec)&maskM
			hd = hd<<step | uint64(ed)&maskM
			sa, sb, sc, sd = ea>>16, eb>>16, ec>>16, ed>>16
		}
		out[i], out[i+1], out[i+2], out[i+3] = ha, hb, hc, hd
	}
	for ; i < len(out); i++ {
		k := out[i] << align
		var h uint64
		st := uint32(0)
		for l := 0; l < head; l++ {
			e := enc[st|uint32(k>>top1)]
			k <<= n
			h = h<<n | uint64(e)&mask1
			st = e >> 8
		}
		st <<= up
		for l := 0; l < steps; l++ {
			e := multi[st|uint32(k>>topM)]
			k <<= step
			h = h<<step | uint64(e)&maskM
			st = e >> 16
		}
		out[i] = h
	}
}

// EncodeBatch is EncodeBatch64 for indexes of any width (up to 128 bits).
func (c *Curve) EncodeBatch(cols [][]uint32, out []Key) error {
	if c.loop() {
		return c.loopBatch(cols, len(out), func(lo, hi int, t [][]uint32) error {
			return c.z.EncodeBatch(t, out[lo:hi])
		})
	}
	if err := c.z.EncodeBatch(cols, out); err != nil {
		return wrapZ(err)
	}
	if c.m == nil {
		return nil
	}
	for i, k := range out {
		out[i] = c.mortonToHilbert(k)
	}
	return nil
}

// loopChunk is the number of rows the loop implementation transposes before
// handing them to the Morton batch encoder.
const loopChunk = 256

// loopBatch transposes rows in chunks and calls emit for each chunk.
func (c *Curve) loopBatch(cols [][]uint32, rows int, emit func(lo, hi int, t [][]uint32) error) error {
	if len(cols) != c.dims {
		return fmt.Errorf("%w: %d coordinate columns for %d dimensions", ErrShape, len(cols), c.dims)
	}
	for d, col := range cols {
		if len(col) != rows {
			return fmt.Errorf("%w: coordinate column %d has %d rows, output has %d", ErrShape, d, len(col), rows)
		}
	}
	var buf [MaxDims][loopChunk]uint32
	t := make([][]uint32, c.dims)
	limit := uint64(1) << uint(c.bits)
	var x [MaxDims]uint64
	for lo := 0; lo < rows; lo += loopChunk {
		hi := min(lo+loopChunk, rows)
		for i := lo; i < hi; i++ {
			for d := 0; d < c.dims; d++ {
				v := cols[d][i]
				if uint64(v) >= limit {
					return fmt.Errorf("%w: dimension %d row %d coordinate %d needs more than %d bits", ErrCoordRange, d, i, v, c.bits)
				}
				x[d] = uint64(v)
			}
			transposeBranchFree(&x, c.dims, c.bits)
			for d := 0; d < c.dims; d++ {
				buf[d][i-lo] = uint32(x[d])
			}
		}
		for d := range t {
			t[d] = buf[d][:hi-lo]
		}
		if err := emit(lo, hi, t); err != nil {
			return wrapZ(err)
		}
	}
	return nil
}

// transposeRow is axesToTranspose for one in-range point via the branch-free loop.
func (c *Curve) transposeRow(coords, out []uint32) {
	var x [MaxDims]uint64
	for i, v := range coords {
		x[i] = uint64(v)
	}
	transposeBranchFree(&x, c.dims, c.bits)
	for i := range out {
		out[i] = uint32(x[i])
	}
}

// transposeBranchFree is axesToTranspose with the per-coordinate branch
// replaced by masks, for the dimension counts without a table. x[0] is kept
// in a register: every step depends on it, and a round trip through memory
// per step (the first version) cost 2.3x as much (BenchmarkHilbert/dims=8:
// 574 -> 246 cpu-ns/key on the loaded dev VM).
func transposeBranchFree(x *[MaxDims]uint64, n, bits int) {
	xs := x[:n]
	x0 := xs[0]
	for l := bits - 1; l >= 1; l-- {
		sh := uint(l)
		p := uint64(1)<<sh - 1
		x0 ^= p & -(x0 >> sh & 1) // i = 0: invert when bit l of x[0] is set
		for i := 1; i < len(xs); i++ {
			xi := xs[i]
			m := -(xi >> sh & 1) // all ones when bit l of x[i] is set
			x0 ^= p & m
			t := (x0 ^ xi) & p &^ m // exchange the low bits otherwise
			x0 ^= t
			xs[i] = xi ^ t
		}
	}
	xs[0] = x0
	for i := 1; i < n; i++ {
		xs[i] ^= xs[i-1]
	}
	// t has bit k set when the parity of x[n-1]'s bits above k is odd.
	var t uint64
	last := xs[n-1]
	for l := bits - 1; l >= 1; l-- {
		t ^= -(last >> uint(l) & 1) & (uint64(1)<<uint(l) - 1)
	}
	for i := range xs {
		xs[i] ^= t
	}
}

// chunk returns the n bits of (hi, lo) starting at bit pos.
func chunk(hi, lo uint64, pos, n uint) uint32 {
	mask := uint64(1)<<n - 1
	switch {
	case pos+n <= 64:
		return uint32(lo >> pos & mask)
	case pos >= 64:
		return uint32(hi >> (pos - 64) & mask)
	default:
		return uint32((lo>>pos | hi<<(64-pos)) & mask)
	}
}

// mortonToHilbert runs the state machine over a Morton key.
func (c *Curve) mortonToHilbert(k Key) Key {
	if c.m == nil {
		return k // dims == 1: the identity (H5)
	}
	n := uint(c.dims)
	enc := c.m.enc
	var out Key
	st := uint32(0)
	for l := c.bits - 1; l >= 0; l-- {
		pos := uint(l) * n
		e := enc[st|chunk(k[0], k[1], pos, n)]
		out = orAt(out, uint64(e&0xFF), pos)
		st = e >> 8
	}
	return out
}

// hilbertToMorton runs the inverse machine over an in-range index.
func (c *Curve) hilbertToMorton(k Key) Key {
	if c.m == nil {
		return k
	}
	n := uint(c.dims)
	dec := c.m.dec
	var out Key
	st := uint32(0)
	for l := c.bits - 1; l >= 0; l-- {
		pos := uint(l) * n
		e := dec[st|chunk(k[0], k[1], pos, n)]
		out = orAt(out, uint64(e&0xFF), pos)
		st = e >> 8
	}
	return out
}

// orAt ors v (fewer than 64 bits) into k at bit pos.
func orAt(k Key, v uint64, pos uint) Key {
	switch {
	case pos >= 64:
		k[0] |= v << (pos - 64)
	case pos == 0:
		k[1] |= v
	default:
		k[1] |= v << pos
		k[0] |= v >> (64 - pos)
	}
	return k
}

// wrapZ maps an error of the Morton encoder onto this package's sentinels.
func wrapZ(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zorder.ErrRankRange):
		return fmt.Errorf("%w: %v", ErrCoordRange, err)
	case errors.Is(err, zorder.ErrShape):
		return fmt.Errorf("%w: %v", ErrShape, err)
	}
	return fmt.Errorf("hilbert: %w", err)
}
