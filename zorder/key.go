package zorder

import (
	"encoding/binary"
	"fmt"
)

// Limits of a layout.
const (
	// MaxColumns is the largest number of interleaved columns.
	MaxColumns = 8
	// MaxBitsPerColumn is the largest number of bits taken from one rank.
	MaxBitsPerColumn = 32
	// MaxKeyBits is the width of a Key.
	MaxKeyBits = 128
)

// Key is a 128-bit Morton (or Hilbert) key: Key[0] holds the high 64 bits and
// Key[1] the low 64 bits. Keys narrower than 128 bits are right-aligned, so the
// unused high bits are zero. The zero Key is the smallest key.
type Key [2]uint64

// Compare returns -1, 0 or +1 as k is less than, equal to or greater than o.
func (k Key) Compare(o Key) int {
	switch {
	case k[0] < o[0]:
		return -1
	case k[0] > o[0]:
		return 1
	case k[1] < o[1]:
		return -1
	case k[1] > o[1]:
		return 1
	}
	return 0
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool {
	return k[0] < o[0] || (k[0] == o[0] && k[1] < o[1])
}

// Bytes returns the key as 16 big-endian bytes; bytes.Compare on two results
// agrees with Compare.
func (k Key) Bytes() [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k[0])
	binary.BigEndian.PutUint64(b[8:], k[1])
	return b
}

// KeyFromBytes is the inverse of Key.Bytes.
func KeyFromBytes(b [16]byte) Key {
	return Key{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// Bit reports bit i of the key (0 = least significant). It returns 0 for i
// outside [0, 128).
func (k Key) Bit(i int) uint64 {
	switch {
	case i < 0 || i >= 128:
		return 0
	case i < 64:
		return k[1] >> uint(i) & 1
	default:
		return k[0] >> uint(i-64) & 1
	}
}

// String formats the key as 32 hexadecimal digits.
func (k Key) String() string { return fmt.Sprintf("%016x%016x", k[0], k[1]) }

// shl shifts a 128-bit value (hi, lo) left by s < 64.
func shl(hi, lo uint64, s uint) (uint64, uint64) {
	if s == 0 {
		return hi, lo
	}
	return hi<<s | lo>>(64-s), lo << s
}

// shr shifts a 128-bit value (hi, lo) right by s < 128.
func shr(hi, lo uint64, s uint) (uint64, uint64) {
	switch {
	case s == 0:
		return hi, lo
	case s < 64:
		return hi >> s, lo>>s | hi<<(64-s)
	default:
		return 0, hi >> (s - 64)
	}
}

// validLayout checks a column count and bits per column.
func validLayout(cols int, bits []int) error {
	if cols < 1 || cols > MaxColumns {
		return fmt.Errorf("%w: %d columns, want 1..%d", ErrLayout, cols, MaxColumns)
	}
	total := 0
	for c, b := range bits {
		if b < 1 || b > MaxBitsPerColumn {
			return fmt.Errorf("%w: column %d has %d bits, want 1..%d", ErrLayout, c, b, MaxBitsPerColumn)
		}
		total += b
	}
	if total > MaxKeyBits {
		return fmt.Errorf("%w: %d key bits, at most %d", ErrLayout, total, MaxKeyBits)
	}
	return nil
}
