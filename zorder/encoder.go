package zorder

import "fmt"

// Encoder is the fast Morton encoder for a fixed layout: Columns() columns of
// Bits() bits each. It is immutable and safe for concurrent use.
type Encoder struct {
	cols  int
	bits  int
	total int
	limit uint64 // 1 << bits; ranks must be below it
	wide  bool   // total > 64
}

// NewEncoder returns an Encoder for cols columns (1..8) of bits bits each
// (1..32, cols*bits ≤ 128).
func NewEncoder(cols, bits int) (*Encoder, error) {
	bs := make([]int, max(cols, 0))
	for i := range bs {
		bs[i] = bits
	}
	if err := validLayout(cols, bs); err != nil {
		return nil, err
	}
	return &Encoder{cols: cols, bits: bits, total: cols * bits, limit: 1 << uint(bits), wide: cols*bits > 64}, nil
}

// Columns returns the number of interleaved columns.
func (e *Encoder) Columns() int { return e.cols }

// Bits returns the number of bits per column.
func (e *Encoder) Bits() int { return e.bits }

// KeyBits returns the number of significant key bits, Columns()*Bits().
func (e *Encoder) KeyBits() int { return e.total }

// Encode returns the Morton key of one point; len(ranks) must equal Columns().
func (e *Encoder) Encode(ranks []uint32) (Key, error) {
	if err := e.checkPoint(ranks); err != nil {
		return Key{}, err
	}
	hi, lo := e.encodeWide(ranks)
	return Key{hi, lo}, nil
}

// Encode64 is Encode for layouts of at most 64 key bits.
func (e *Encoder) Encode64(ranks []uint32) (uint64, error) {
	if e.wide {
		return 0, fmt.Errorf("%w: layout has %d bits", ErrKeyTooWide, e.total)
	}
	if err := e.checkPoint(ranks); err != nil {
		return 0, err
	}
	return e.encodeNarrow(ranks), nil
}

func (e *Encoder) checkPoint(ranks []uint32) error {
	if len(ranks) != e.cols {
		return fmt.Errorf("%w: %d ranks for %d columns", ErrShape, len(ranks), e.cols)
	}
	for c, r := range ranks {
		if uint64(r) >= e.limit {
			return fmt.Errorf("%w: column %d rank %d needs more than %d bits", ErrRankRange, c, r, e.bits)
		}
	}
	return nil
}

// encodeNarrow interleaves in-range ranks into one word (total ≤ 64).
func (e *Encoder) encodeNarrow(ranks []uint32) uint64 {
	n := e.cols
	var k uint64
	for c, r := range ranks {
		k |= spreadWord(n, uint64(r)) << uint(n-1-c)
	}
	return k
}

// encodeWide interleaves in-range ranks into 128 bits.
func (e *Encoder) encodeWide(ranks []uint32) (hi, lo uint64) {
	n := e.cols
	if !e.wide {
		return 0, e.encodeNarrow(ranks)
	}
	for c, r := range ranks {
		h, l := spreadWide(n, r)
		h, l = shl(h, l, uint(n-1-c))
		hi |= h
		lo |= l
	}
	return hi, lo
}

// Decode writes the ranks of key k into out (len(out) must equal Columns()).
// Bits of k above KeyBits() are an error (invariant Z2: Decode(Encode(p)) = p).
func (e *Encoder) Decode(k Key, out []uint32) error {
	if len(out) != e.cols {
		return fmt.Errorf("%w: %d outputs for %d columns", ErrShape, len(out), e.cols)
	}
	if h, l := shr(k[0], k[1], uint(e.total)); e.total < 128 && (h|l) != 0 {
		return fmt.Errorf("%w: key %s has bits above bit %d", ErrRankRange, k, e.total)
	}
	n := e.cols
	for c := range out {
		h, l := shr(k[0], k[1], uint(n-1-c))
		if e.wide {
			out[c] = compactWide(n, h, l)
		} else {
			out[c] = uint32(compactWord(n, l))
		}
	}
	return nil
}

// Decode64 is Decode for a key from the 64-bit API.
func (e *Encoder) Decode64(k uint64, out []uint32) error {
	return e.Decode(Key{0, k}, out)
}

// checkBatch validates the shape of a column-major batch.
func (e *Encoder) checkBatch(cols [][]uint32, n int) error {
	if len(cols) != e.cols {
		return fmt.Errorf("%w: %d rank columns for %d columns", ErrShape, len(cols), e.cols)
	}
	for c, col := range cols {
		if len(col) != n {
			return fmt.Errorf("%w: rank column %d has %d rows, output has %d", ErrShape, c, len(col), n)
		}
	}
	return nil
}

// rangeError finds the first out-of-range rank of a batch whose OR exceeded
// the limit.
func (e *Encoder) rangeError(cols [][]uint32) error {
	for c, col := range cols {
		for i, r := range col {
			if uint64(r) >= e.limit {
				return fmt.Errorf("%w: column %d row %d rank %d needs more than %d bits", ErrRankRange, c, i, r, e.bits)
			}
		}
	}
	return nil
}

// EncodeBatch64 fills out[i] with the key of row i, where cols[c][i] is the
// rank of column c in row i (column-major, len(cols) == Columns(), every
// column as long as out). It is the hot path: no per-row allocation or call
// overhead. The layout must fit 64 bits. On error the contents of out are
// unspecified.
func (e *Encoder) EncodeBatch64(cols [][]uint32, out []uint64) error {
	if e.wide {
		return fmt.Errorf("%w: layout has %d bits", ErrKeyTooWide, e.total)
	}
	if err := e.checkBatch(cols, len(out)); err != nil {
		return err
	}
	var acc uint32
	switch e.cols {
	case 1:
		c0 := cols[0][:len(out)]
		for i := range out {
			acc |= c0[i]
			out[i] = uint64(c0[i])
		}
	case 2:
		c0, c1 := cols[0][:len(out)], cols[1][:len(out)]
		for i := range out {
			a, b := c0[i], c1[i]
			acc |= a | b
			out[i] = spread2(uint64(a))<<1 | spread2(uint64(b))
		}
	case 3:
		c0, c1, c2 := cols[0][:len(out)], cols[1][:len(out)], cols[2][:len(out)]
		for i := range out {
			a, b, c := c0[i], c1[i], c2[i]
			acc |= a | b | c
			out[i] = spread3(uint64(a))<<2 | spread3(uint64(b))<<1 | spread3(uint64(c))
		}
	case 4:
		c0, c1, c2, c3 := cols[0][:len(out)], cols[1][:len(out)], cols[2][:len(out)], cols[3][:len(out)]
		for i := range out {
			a, b, c, d := c0[i], c1[i], c2[i], c3[i]
			acc |= a | b | c | d
			out[i] = spread4(uint64(a))<<3 | spread4(uint64(b))<<2 | spread4(uint64(c))<<1 | spread4(uint64(d))
		}
	default:
		n := e.cols
		clear(out)
		for c, col := range cols {
			col = col[:len(out)]
			s := uint(n - 1 - c)
			for i, r := range col {
				acc |= r
				out[i] |= spreadWord(n, uint64(r)) << s
			}
		}
	}
	if uint64(acc) >= e.limit {
		return e.rangeError(cols)
	}
	return nil
}

// EncodeBatch is EncodeBatch64 for keys of any width (up to 128 bits).
func (e *Encoder) EncodeBatch(cols [][]uint32, out []Key) error {
	if err := e.checkBatch(cols, len(out)); err != nil {
		return err
	}
	var acc uint32
	n := e.cols
	switch {
	case !e.wide:
		clear(out)
		for c, col := range cols {
			col = col[:len(out)]
			s := uint(n - 1 - c)
			for i, r := range col {
				acc |= r
				out[i][1] |= spreadWord(n, uint64(r)) << s
			}
		}
	case n == 8:
		// Row-major: keep the key in registers instead of eight passes over out.
		var c8 [8][]uint32
		for c := range c8 {
			c8[c] = cols[c][:len(out)]
		}
		t := &spreadLUT[8]
		for i := range out {
			var hi, lo uint64
			for c := 0; c < 8; c++ {
				r := c8[c][i]
				acc |= r
				hi |= t[r>>8&0xFF] << uint(7-c)
				lo |= t[r&0xFF] << uint(7-c)
			}
			out[i] = Key{hi, lo}
		}
	case 64%n == 0:
		// Each word holds the low (resp. high) per bits of every column.
		per := uint(64 / n)
		mask := uint64(1)<<per - 1
		clear(out)
		for c, col := range cols {
			col = col[:len(out)]
			s := uint(n - 1 - c)
			switch n {
			case 4:
				for i, r := range col {
					acc |= r
					out[i][0] |= spread4(uint64(r)>>per) << s
					out[i][1] |= spread4(uint64(r)&mask) << s
				}
			case 8:
				for i, r := range col {
					acc |= r
					out[i][0] |= spread8(uint64(r)>>per) << s
					out[i][1] |= spread8(uint64(r)&mask) << s
				}
			default:
				for i, r := range col {
					acc |= r
					out[i][0] |= spreadWord(n, uint64(r)>>per) << s
					out[i][1] |= spreadWord(n, uint64(r)&mask) << s
				}
			}
		}
	default:
		clear(out)
		for c, col := range cols {
			col = col[:len(out)]
			s := uint(n - 1 - c)
			for i, r := range col {
				acc |= r
				h, l := spreadWide(n, r)
				h, l = shl(h, l, s)
				out[i][0] |= h
				out[i][1] |= l
			}
		}
	}
	if uint64(acc) >= e.limit {
		return e.rangeError(cols)
	}
	return nil
}
