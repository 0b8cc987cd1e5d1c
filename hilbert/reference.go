package hilbert

import (
	"fmt"

	"github.com/skiplake/skiplake/zorder"
)

// validate checks a layout.
func validate(dims, bits int) error {
	if dims < 1 || dims > MaxDims {
		return fmt.Errorf("%w: %d dimensions, want 1..%d", ErrLayout, dims, MaxDims)
	}
	if bits < 1 || bits > MaxBits {
		return fmt.Errorf("%w: %d bits per dimension, want 1..%d", ErrLayout, bits, MaxBits)
	}
	if dims*bits > MaxKeyBits {
		return fmt.Errorf("%w: %d dimensions of %d bits exceed %d key bits", ErrLayout, dims, bits, MaxKeyBits)
	}
	return nil
}

func checkCoords(bits int, coords []uint32, dims int) error {
	if len(coords) != dims {
		return fmt.Errorf("%w: %d coordinates for %d dimensions", ErrShape, len(coords), dims)
	}
	for i, c := range coords {
		if uint64(c)>>uint(bits) != 0 {
			return fmt.Errorf("%w: dimension %d coordinate %d needs more than %d bits", ErrCoordRange, i, c, bits)
		}
	}
	return nil
}

// checkIndex rejects an index with bits set at or above bit total.
func checkIndex(k Key, total int) error {
	var over bool
	switch {
	case total >= 128:
	case total >= 64:
		over = k[0]>>uint(total-64) != 0
	default:
		over = k[0] != 0 || k[1]>>uint(total) != 0
	}
	if over {
		return fmt.Errorf("%w: index %s has bits above bit %d", ErrIndexRange, k, total)
	}
	return nil
}

func equalBits(dims, bits int) []int {
	bs := make([]int, dims)
	for i := range bs {
		bs[i] = bits
	}
	return bs
}

// axesToTranspose is Skilling's forward transform ("Programming the Hilbert
// curve", AIP Conf. Proc. 707, 2004), written plainly: it turns coordinates
// into the "transposed" Hilbert index, whose bits interleaved MSB-first (x[0]
// first) are the index.
func axesToTranspose(x []uint64, bits int) {
	n := len(x)
	m := uint64(1) << uint(bits-1)
	// Inverse undo: walk the levels from the top, reflecting or exchanging
	// the lower bits so that each sub-cube is entered in canonical position.
	for q := m; q > 1; q >>= 1 {
		p := q - 1
		for i := 0; i < n; i++ {
			if x[i]&q != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	// Gray encode.
	for i := 1; i < n; i++ {
		x[i] ^= x[i-1]
	}
	var t uint64
	for q := m; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := range x {
		x[i] ^= t
	}
}

// transposeToAxes is the inverse of axesToTranspose.
func transposeToAxes(x []uint64, bits int) {
	n := len(x)
	top := uint64(2) << uint(bits-1)
	// Gray decode.
	t := x[n-1] >> 1
	for i := n - 1; i > 0; i-- {
		x[i] ^= x[i-1]
	}
	x[0] ^= t
	// Undo the excess work, from the bottom level up.
	for q := uint64(2); q != top; q <<= 1 {
		p := q - 1
		for i := n - 1; i >= 0; i-- {
			if x[i]&q != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
}

// ReferenceEncode returns the Hilbert index of coords (one per dimension, each
// < 2^bits) computed with Skilling's transform and a bit-by-bit interleave.
// It is the oracle the fast Curve is tested against. dims = 1 is the identity.
func ReferenceEncode(dims, bits int, coords []uint32) (Key, error) {
	if err := validate(dims, bits); err != nil {
		return Key{}, err
	}
	if err := checkCoords(bits, coords, dims); err != nil {
		return Key{}, err
	}
	if dims == 1 {
		return Key{0, uint64(coords[0])}, nil
	}
	x := make([]uint64, dims)
	for i, c := range coords {
		x[i] = uint64(c)
	}
	axesToTranspose(x, bits)
	t := make([]uint32, dims)
	for i := range x {
		t[i] = uint32(x[i])
	}
	k, err := zorder.ReferenceEncode(equalBits(dims, bits), t)
	if err != nil {
		return Key{}, fmt.Errorf("hilbert: interleave: %w", err)
	}
	return k, nil
}

// ReferenceDecode inverts ReferenceEncode, writing one coordinate per
// dimension into out.
func ReferenceDecode(dims, bits int, k Key, out []uint32) error {
	if err := validate(dims, bits); err != nil {
		return err
	}
	if len(out) != dims {
		return fmt.Errorf("%w: %d outputs for %d dimensions", ErrShape, len(out), dims)
	}
	if err := checkIndex(k, dims*bits); err != nil {
		return err
	}
	if err := zorder.ReferenceDecode(equalBits(dims, bits), k, out); err != nil {
		return fmt.Errorf("hilbert: interleave: %w", err)
	}
	if dims == 1 {
		return nil
	}
	x := make([]uint64, dims)
	for i, c := range out {
		x[i] = uint64(c)
	}
	transposeToAxes(x, bits)
	for i := range x {
		out[i] = uint32(x[i])
	}
	return nil
}
