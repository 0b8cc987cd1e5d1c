package zorder

// Bit spreading ("dilation") and its inverse. spreadN places bit j of x at bit
// j*N; compactN undoes it. N = 2, 3, 4 and 8 use the classic mask-and-shift
// sequences (each step halves the block size); other strides use a 256-entry
// table per stride, built at init. The shift sequences need no memory loads,
// which keeps the 2..4-column batch loops in registers; the 8-column batch
// uses the table directly (two loads per rank), which measured faster there
// than the shift sequence on the dev VM.

// spreadLUT[n][b] is byte b with its bit j moved to bit j*n (n = 1..8; 8 bits
// of stride 8 still fit in 64 bits).
var spreadLUT [MaxColumns + 1][256]uint64

func init() {
	for n := 1; n <= MaxColumns; n++ {
		for b := 0; b < 256; b++ {
			var v uint64
			for j := 0; j < 8; j++ {
				v |= uint64(b>>j&1) << uint(j*n)
			}
			spreadLUT[n][b] = v
		}
	}
}

// spread2 dilates the low 32 bits of x to stride 2.
func spread2(x uint64) uint64 {
	x &= 0xFFFFFFFF
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// compact2 is the inverse of spread2.
func compact2(x uint64) uint64 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return x
}

// spread3 dilates the low 21 bits of x to stride 3.
func spread3(x uint64) uint64 {
	x &= 0x1FFFFF
	x = (x | x<<32) & 0x001F00000000FFFF
	x = (x | x<<16) & 0x001F0000FF0000FF
	x = (x | x<<8) & 0x100F00F00F00F00F
	x = (x | x<<4) & 0x10C30C30C30C30C3
	x = (x | x<<2) & 0x1249249249249249
	return x
}

// compact3 is the inverse of spread3.
func compact3(x uint64) uint64 {
	x &= 0x1249249249249249
	x = (x | x>>2) & 0x10C30C30C30C30C3
	x = (x | x>>4) & 0x100F00F00F00F00F
	x = (x | x>>8) & 0x001F0000FF0000FF
	x = (x | x>>16) & 0x001F00000000FFFF
	x = (x | x>>32) & 0x1FFFFF
	return x
}

// spread4 dilates the low 16 bits of x to stride 4.
func spread4(x uint64) uint64 {
	x &= 0xFFFF
	x = (x | x<<24) & 0x000000FF000000FF
	x = (x | x<<12) & 0x000F000F000F000F
	x = (x | x<<6) & 0x0303030303030303
	x = (x | x<<3) & 0x1111111111111111
	return x
}

// compact4 is the inverse of spread4.
func compact4(x uint64) uint64 {
	x &= 0x1111111111111111
	x = (x | x>>3) & 0x0303030303030303
	x = (x | x>>6) & 0x000F000F000F000F
	x = (x | x>>12) & 0x000000FF000000FF
	x = (x | x>>24) & 0xFFFF
	return x
}

// spread8 dilates the low 8 bits of x to stride 8.
func spread8(x uint64) uint64 {
	x &= 0xFF
	x = (x | x<<28) & 0x0000000F0000000F
	x = (x | x<<14) & 0x0003000300030003
	x = (x | x<<7) & 0x0101010101010101
	return x
}

// compact8 is the inverse of spread8.
func compact8(x uint64) uint64 {
	x &= 0x0101010101010101
	x = (x | x>>7) & 0x0003000300030003
	x = (x | x>>14) & 0x0000000F0000000F
	x = (x | x>>28) & 0xFF
	return x
}

// spreadWord dilates x to stride n; x must have at most 64/n significant bits
// (rounded down), so the result fits one word.
func spreadWord(n int, x uint64) uint64 {
	switch n {
	case 1:
		return x
	case 2:
		return spread2(x)
	case 3:
		return spread3(x)
	case 4:
		return spread4(x)
	case 8:
		return spread8(x)
	}
	t := &spreadLUT[n]
	s := uint(8 * n)
	return t[x&0xFF] | t[x>>8&0xFF]<<s | t[x>>16&0xFF]<<(2*s) | t[x>>24&0xFF]<<(3*s)
}

// compactWord is the inverse of spreadWord.
func compactWord(n int, x uint64) uint64 {
	switch n {
	case 1:
		return x
	case 2:
		return compact2(x)
	case 3:
		return compact3(x)
	case 4:
		return compact4(x)
	case 8:
		return compact8(x)
	}
	var r uint64
	for j := 0; j*n < 64; j++ {
		r |= (x >> uint(j*n) & 1) << uint(j)
	}
	return r
}

// spreadWide dilates all 32 bits of x to stride n into a 128-bit (hi, lo).
func spreadWide(n int, x uint32) (hi, lo uint64) {
	if 64%n == 0 {
		per := uint(64 / n)
		if per >= 32 {
			return 0, spreadWord(n, uint64(x))
		}
		return spreadWord(n, uint64(x)>>per), spreadWord(n, uint64(x)&(1<<per-1))
	}
	t := &spreadLUT[n]
	for k := 0; k < 4; k++ {
		v := t[x>>uint(8*k)&0xFF]
		s := uint(8 * n * k)
		switch {
		case s == 0:
			lo |= v
		case s < 64:
			lo |= v << s
			hi |= v >> (64 - s)
		default:
			hi |= v << (s - 64)
		}
	}
	return hi, lo
}

// compactWide is the inverse of spreadWide: it gathers bits j*n of (hi, lo).
func compactWide(n int, hi, lo uint64) uint32 {
	if 64%n == 0 {
		per := uint(64 / n)
		if per >= 32 {
			return uint32(compactWord(n, lo))
		}
		return uint32(compactWord(n, hi)<<per | compactWord(n, lo))
	}
	var r uint32
	for j := 0; j < 32; j++ {
		p := j * n
		var b uint64
		switch {
		case p < 64:
			b = lo >> uint(p) & 1
		case p < 128:
			b = hi >> uint(p-64) & 1
		}
		r |= uint32(b) << uint(j)
	}
	return r
}
