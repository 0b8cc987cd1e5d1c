package dv

import (
	"fmt"
)

// z85Alphabet is the ZeroMQ Z85 alphabet (RFC 32/Z85).
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Decode = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i)
	}
	return t
}()

// EncodeZ85 encodes src as Z85. Like Delta's encoder it pads src with zero bytes to a
// multiple of 4, so decoding yields len(src) rounded up to 4 bytes; keep the true length
// (the descriptor's sizeInBytes does).
func EncodeZ85(src []byte) string {
	padded := src
	if r := len(src) % 4; r != 0 {
		padded = make([]byte, len(src)+4-r)
		copy(padded, src)
	}
	out := make([]byte, 0, len(padded)/4*5)
	for i := 0; i < len(padded); i += 4 {
		v := uint32(padded[i])<<24 | uint32(padded[i+1])<<16 | uint32(padded[i+2])<<8 | uint32(padded[i+3])
		var chunk [5]byte
		for j := 4; j >= 0; j-- {
			chunk[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, chunk[:]...)
	}
	return string(out)
}

// DecodeZ85 decodes Z85 text whose length is a multiple of 5.
func DecodeZ85(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("%w: length %d is not a multiple of 5", ErrZ85, len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Decode[s[i+j]]
			if d == 0xff {
				return nil, fmt.Errorf("%w: byte %q at position %d", ErrZ85, s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("%w: group at position %d overflows 32 bits", ErrZ85, i)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
