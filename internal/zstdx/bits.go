package zstdx

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// le64 is the little-endian uint64 at b[0:8].
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// loadEnd returns the (up to) 8 bytes of s that end at byte e as a little-endian
// uint64 whose top byte is s[e-1]; bytes before s[0] read as zero.
func loadEnd(s []byte, e int) uint64 {
	if e >= 8 {
		return le64(s[e-8 : e])
	}
	var v uint64
	for i := 0; i < e; i++ {
		v |= uint64(s[i]) << (8 * uint(8-e+i))
	}
	return v
}

// peekBits returns the n bits (1 ≤ n ≤ 56) of the little-endian bitstream s that
// lie just below bit position pos (bits pos-n to pos-1, the latter the most
// significant), as a backward reader consumes them. Bits before the start of s read
// as zero.
func peekBits(s []byte, pos int, n uint) uint64 {
	if pos <= 0 {
		return 0
	}
	e := (pos + 7) >> 3
	v := loadEnd(s, e)
	return (v << uint(8*e-pos)) >> (64 - n)
}

// backward is a reader of a reversed bitstream (RFC 8878 §4.1: FSE and Huffman
// streams are written forward and read from their last bit back). v holds the 8
// bytes of s that end at byte off (zero-padded before s[0] when s is shorter),
// of which the top used bits are consumed; the bits still unread are
// 8·off − used. Reads past the start yield zeros and drive that count
// negative, which overflowed reports.
type backward struct {
	s    []byte
	off  int
	v    uint64
	used uint
}

// init positions r after the end-of-stream marker of s (the highest set bit of
// its last byte). what names the stream in errors.
func (r *backward) init(s []byte, what string) error {
	if len(s) == 0 {
		return fmt.Errorf("%w: %s: empty bitstream", ErrCorrupt, what)
	}
	last := s[len(s)-1]
	if last == 0 {
		return fmt.Errorf("%w: %s: last byte of bitstream is zero (no end marker)", ErrCorrupt, what)
	}
	r.s = s
	r.off = len(s)
	r.v = loadEnd(s, len(s))
	r.used = uint(bits.LeadingZeros8(last)) + 1
	return nil
}

// refill moves the window down over the whole bytes consumed, as far as the
// stream's start allows.
func (r *backward) refill() {
	if r.off <= 8 {
		return
	}
	k := min(int(r.used>>3), r.off-8)
	r.off -= k
	r.v = le64(r.s[r.off-8 : r.off])
	r.used -= uint(8 * k)
}

// read consumes n bits (0 ≤ n ≤ 31).
func (r *backward) read(n uint) uint64 {
	if r.used > 32 {
		r.refill()
	}
	v := (r.v << r.used) >> (64 - n) // 0 for n = 0 (and past 64 bits used): Go's shifts
	r.used += n
	return v
}

// remaining is the number of bits not yet read (negative after an overrun).
func (r *backward) remaining() int { return 8*r.off - int(r.used) }

// overflowed reports whether more bits were read than the stream holds.
func (r *backward) overflowed() bool { return r.remaining() < 0 }
