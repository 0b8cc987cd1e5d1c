package zorder

import "fmt"

// ReferenceEncode is the plain bit-by-bit Morton encoder, kept as the oracle
// for the fast Encoder (invariant Z3). bits[c] is the number of bits of
// column c (1..32, total ≤ 128) and ranks[c] must be < 2^bits[c]. Columns with
// fewer bits are aligned at their most significant bit (see the package doc).
func ReferenceEncode(bits []int, ranks []uint32) (Key, error) {
	if err := validLayout(len(bits), bits); err != nil {
		return Key{}, err
	}
	if len(ranks) != len(bits) {
		return Key{}, fmt.Errorf("%w: %d ranks for %d columns", ErrShape, len(ranks), len(bits))
	}
	maxBits := 0
	for c, b := range bits {
		if uint64(ranks[c])>>uint(b) != 0 {
			return Key{}, fmt.Errorf("%w: column %d rank %d needs more than %d bits", ErrRankRange, c, ranks[c], b)
		}
		maxBits = max(maxBits, b)
	}
	var hi, lo uint64
	for l := 0; l < maxBits; l++ {
		for c, b := range bits {
			if l >= b {
				continue
			}
			bit := uint64(ranks[c]) >> uint(b-1-l) & 1
			hi, lo = shl(hi, lo, 1)
			lo |= bit
		}
	}
	return Key{hi, lo}, nil
}

// ReferenceDecode inverts ReferenceEncode, writing one rank per column into
// out (len(out) must equal len(bits)). Key bits above the layout's total are
// an error.
func ReferenceDecode(bits []int, k Key, out []uint32) error {
	if err := validLayout(len(bits), bits); err != nil {
		return err
	}
	if len(out) != len(bits) {
		return fmt.Errorf("%w: %d outputs for %d columns", ErrShape, len(out), len(bits))
	}
	total, maxBits := 0, 0
	for _, b := range bits {
		total += b
		maxBits = max(maxBits, b)
	}
	if h, l := shr(k[0], k[1], uint(total)); total < 128 && (h|l) != 0 {
		return fmt.Errorf("%w: key %s has bits above bit %d", ErrRankRange, k, total)
	}
	clear(out)
	pos := total
	for l := 0; l < maxBits; l++ {
		for c, b := range bits {
			if l >= b {
				continue
			}
			pos--
			out[c] |= uint32(k.Bit(pos)) << uint(b-1-l)
		}
	}
	return nil
}
