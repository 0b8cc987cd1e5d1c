package zstdx

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"
)

// A decoding step looks up the next lookupBits (11 or 12, chosen per table) bits
// of a stream in a double-symbol table and gets the one or two symbols whose
// codes those bits hold entirely. Zstandard's codes are at most 11 bits
// (maxHuffBits). An 11-bit window holds two codes of up to 5 bits (text over an
// alphabet of about 32 symbols or fewer), a 12-bit one two of up to 6 bits (about
// 64 symbols); the narrower lookup fits five steps in one refill of a 64-bit
// window, the wider four (stepsNarrow, stepsWide).
const (
	maxHuffBits = 11
	lookupMax   = 1 << 12
	stepsNarrow = 5 // 7 + 4·11 bits consumed before the fifth 11-bit lookup: 51, the marker below its 53-63
	stepsWide   = 4 // 7 + 3·12 = 43 consumed before the fourth 12-bit lookup, marker below 52-63
)

// HuffTable is a Huffman decoding table for zstd literals (RFC 8878 §4.2.1) in
// double-symbol form: each entry of a lookupBits-bit lookup yields the symbols
// whose codes those bits hold entirely, one or two.
//
// An entry holds the bits it consumes (nbits), the number of symbols (n, 1 or 2)
// and the symbols as a little-endian uint16 (syms, the first in the low byte),
// stored to the output as they are, two bytes at once. The fields are kept in
// separate arrays so that the decoding loop loads each with one instruction
// indexed from the table's base (loads are cheaper there than shifts and masks).
// symLen holds each symbol's code length, for the one-symbol steps at a stream's
// end.
//
// The zero value holds no table; Read loads one. A HuffTable is not safe for
// concurrent Read, but once loaded it may decode in several goroutines at once.
type HuffTable struct {
	lk         lookup
	symLen     [256]uint8
	maxBits    uint8 // Max_Number_of_Bits of the loaded tree, 0 when none is loaded
	lookupBits uint8 // 11 or 12
}

// lookup is the double-symbol table, split by field.
type lookup struct {
	nbits [lookupMax]uint8
	n     [lookupMax]uint8
	syms  [lookupMax]uint16
}

// Loaded reports whether t holds a table.
func (t *HuffTable) Loaded() bool { return t.maxBits != 0 }

// readHuffWeights decodes a Huffman tree description's weights (RFC 8878
// §4.2.1.1-2) from the start of in into w and returns how many it read and the
// bytes the description used. The last symbol's weight is not among them.
func readHuffWeights(in []byte, w *[256]uint8) (n, used int, err error) {
	if len(in) == 0 {
		return 0, 0, fmt.Errorf("%w: Huffman tree description: no bytes", ErrCorrupt)
	}
	h := int(in[0])
	if h >= 128 {
		n = h - 127
		nb := (n + 1) / 2
		if len(in) < 1+nb {
			return 0, 0, fmt.Errorf("%w: Huffman tree description: %d direct weights need %d bytes, %d left", ErrCorrupt, n, nb, len(in)-1)
		}
		for i := 0; i < n; i++ {
			b := in[1+i/2]
			if i&1 == 0 {
				w[i] = b >> 4
			} else {
				w[i] = b & 15
			}
		}
		return n, 1 + nb, nil
	}
	if len(in) < 1+h {
		return 0, 0, fmt.Errorf("%w: Huffman tree description: FSE weights of %d bytes, %d left", ErrCorrupt, h, len(in)-1)
	}
	data := in[1 : 1+h]
	var counts [16]int16
	ns, log, tu, err := readFSECounts(data, 15, 6, counts[:])
	if err != nil {
		return 0, 0, fmt.Errorf("huffman weights: %w", err)
	}
	var ft fseTable
	var cells [64]fseEntry
	ft.cells = cells[:0]
	if err := ft.build(counts[:], ns, log); err != nil {
		return 0, 0, fmt.Errorf("huffman weights: %w", err)
	}
	var r backward
	if err := r.init(data[tu:], "Huffman weights"); err != nil {
		return 0, 0, err
	}
	s1 := r.read(uint(log))
	s2 := r.read(uint(log))
	const max = 255
	for {
		if n >= max {
			return 0, 0, fmt.Errorf("%w: Huffman tree description: more than %d weights", ErrCorrupt, max)
		}
		e := ft.cells[s1]
		w[n] = e.symbol
		n++
		s1 = uint64(e.base) + r.read(uint(e.nbBits))
		if r.overflowed() {
			if n >= max {
				return 0, 0, fmt.Errorf("%w: Huffman tree description: more than %d weights", ErrCorrupt, max)
			}
			w[n] = ft.cells[s2].symbol
			n++
			break
		}
		if n >= max {
			return 0, 0, fmt.Errorf("%w: Huffman tree description: more than %d weights", ErrCorrupt, max)
		}
		e = ft.cells[s2]
		w[n] = e.symbol
		n++
		s2 = uint64(e.base) + r.read(uint(e.nbBits))
		if r.overflowed() {
			if n >= max {
				return 0, 0, fmt.Errorf("%w: Huffman tree description: more than %d weights", ErrCorrupt, max)
			}
			w[n] = ft.cells[s1].symbol
			n++
			break
		}
	}
	return n, 1 + h, nil
}

// Read loads the Huffman tree description at the start of in (RFC 8878 §4.2.1)
// into t and returns the number of bytes it used. On error t holds no table.
func (t *HuffTable) Read(in []byte) (int, error) {
	t.maxBits = 0
	var w [256]uint8
	n, used, err := readHuffWeights(in, &w)
	if err != nil {
		return 0, err
	}
	var rank [maxHuffBits + 2]int
	sum := 0
	for i := 0; i < n; i++ {
		if w[i] > maxHuffBits {
			return 0, fmt.Errorf("%w: Huffman tree description: weight %d of symbol %d above %d", ErrCorrupt, w[i], i, maxHuffBits)
		}
		if w[i] > 0 {
			sum += 1 << (w[i] - 1)
		}
	}
	if sum == 0 {
		return 0, fmt.Errorf("%w: Huffman tree description: no symbol has a weight", ErrCorrupt)
	}
	tl := bits.Len(uint(sum))
	if tl > maxHuffBits {
		return 0, fmt.Errorf("%w: Huffman tree description: codes of %d bits, more than %d", ErrCorrupt, tl, maxHuffBits)
	}
	rest := 1<<tl - sum
	if rest&(rest-1) != 0 {
		return 0, fmt.Errorf("%w: Huffman tree description: weights do not complete to a power of 2", ErrCorrupt)
	}
	w[n] = uint8(bits.Len(uint(rest)))
	n++
	for i := 0; i < n; i++ {
		rank[w[i]]++
	}
	if rank[1] < 2 || rank[1]&1 != 0 {
		return 0, fmt.Errorf("%w: Huffman tree description: %d codes of the longest length (an even number ≥ 2 needed)", ErrCorrupt, rank[1])
	}
	// Single-symbol table over tl bits: symbols in order of weight (then value),
	// codes counted up from 0, each covering 2^(w-1) entries.
	var start [maxHuffBits + 2]int
	for k, acc := 1, 0; k <= maxHuffBits; k++ {
		start[k] = acc
		acc += rank[k] << (k - 1)
	}
	var single [1 << maxHuffBits]uint16 // symbol | code length<<8
	for s := 0; s < n; s++ {
		k := w[s]
		if k == 0 {
			continue
		}
		v := uint16(s) | uint16(tl+1-int(k))<<8
		t.symLen[s] = uint8(tl + 1 - int(k))
		lo := start[k]
		hi := lo + 1<<(k-1)
		for i := lo; i < hi; i++ {
			single[i] = v
		}
		start[k] = hi
	}
	// The lookup width: the one that decodes more symbols per instruction,
	// estimated from the code lengths. A code of length l has probability 2^-l;
	// a step decodes 1 + P(the next two codes fit in the width) symbols; a
	// refill costs about as much as one step, so symbols per cost are
	// (1+P11)·5/6 and (1+P12)·4/5.
	var pl [maxHuffBits + 2]float64 // probability of a code of each length
	for k := 1; k <= tl; k++ {
		pl[tl+1-k] = float64(rank[k]) / float64(uint(1)<<(tl+1-k))
	}
	var p11, p12 float64
	for l1 := 1; l1 <= tl; l1++ {
		for l2 := 1; l2 <= tl; l2++ {
			if l1+l2 <= 11 {
				p11 += pl[l1] * pl[l2]
			}
			if l1+l2 <= 12 {
				p12 += pl[l1] * pl[l2]
			}
		}
	}
	lb := 12
	if (1+p11)*5/6 >= (1+p12)*4/5 {
		lb = 11
	}
	size := 1 << lb
	shift := uint(lb - tl)
	for i := 0; i < size; i++ {
		a := single[i>>shift]
		l1 := uint(a >> 8)
		j := (i << l1) & (size - 1)
		b := single[j>>shift]
		l2 := uint(b >> 8)
		if l1+l2 <= uint(lb) {
			t.lk.nbits[i], t.lk.n[i], t.lk.syms[i] = uint8(l1+l2), 2, a&0xff|b<<8
		} else {
			t.lk.nbits[i], t.lk.n[i], t.lk.syms[i] = uint8(l1), 1, a&0xff
		}
	}
	t.lookupBits = uint8(lb)
	t.maxBits = uint8(tl)
	return used, nil
}

// decodeTail decodes symbols one at a time from the reversed stream s (whose
// unread bits end at bit pos) into dst until dst is full, and checks the stream is
// then consumed exactly. what names the stream in errors.
func (t *HuffTable) decodeTail(dst []byte, s []byte, pos int, what string) error {
	for i := range dst {
		if pos <= 0 {
			return fmt.Errorf("%w: %s: stream ends %d symbols early", ErrCorrupt, what, len(dst)-i)
		}
		sym := uint8(t.lk.syms[peekBits(s, pos, uint(t.lookupBits))])
		dst[i] = sym
		pos -= int(t.symLen[sym])
	}
	if pos != 0 {
		if pos < 0 {
			return fmt.Errorf("%w: %s: last code runs %d bits past the stream's start", ErrCorrupt, what, -pos)
		}
		return fmt.Errorf("%w: %s: %d bits left after the last symbol", ErrCorrupt, what, pos)
	}
	return nil
}

// startPos returns the bit position of the first code of the reversed stream s:
// just below its end marker.
func startPos(s []byte, what string) (int, error) {
	if len(s) == 0 {
		return 0, fmt.Errorf("%w: %s: empty stream", ErrCorrupt, what)
	}
	last := s[len(s)-1]
	if last == 0 {
		return 0, fmt.Errorf("%w: %s: last byte is zero (no end marker)", ErrCorrupt, what)
	}
	return 8*len(s) - 1 - bits.LeadingZeros8(last), nil
}

// Decode1X decodes the single Huffman stream src into dst, which must have the
// regenerated size as its length. src must be consumed exactly.
func (t *HuffTable) Decode1X(dst, src []byte) error {
	if t.maxBits == 0 {
		return fmt.Errorf("%w: Huffman stream: no table loaded", ErrCorrupt)
	}
	pos, err := startPos(src, "Huffman stream")
	if err != nil {
		return err
	}
	p := 0
	tbl := &t.lk
	lb := uint(t.lookupBits)
	steps := stepsWide
	if lb == 11 {
		steps = stepsNarrow
	}
	for {
		// Each round consumes at most steps·lb bits and writes at most 2·steps
		// bytes; the 8-byte load ends no lower than src[8].
		if pos < 64+steps*int(lb) || p+2*steps > len(dst) {
			break
		}
		off := (pos + 7) >> 3
		v := le64(src[off-8:off])<<(uint(8*off-pos)&63) | 1
		for k := 0; k < steps; k++ {
			x := v >> ((64 - lb) & 63) & (lookupMax - 1)
			binary.LittleEndian.PutUint16(dst[p:], tbl.syms[x])
			v <<= tbl.nbits[x] & 63
			p += int(tbl.n[x])
		}
		pos -= bits.TrailingZeros64(v)
	}
	return t.decodeTail(dst[p:], src, pos, "Huffman stream")
}

// streamNames name the streams of a four-stream section in errors.
var streamNames = [4]string{"Huffman stream 1", "Huffman stream 2", "Huffman stream 3", "Huffman stream 4"}

// Decode4X decodes four Huffman streams behind their 6-byte jump table (RFC 8878
// §3.1.1.3.1.6) into dst, which must have the regenerated size as its length:
// streams 1-3 decode (len(dst)+3)/4 bytes each, stream 4 the rest.
func (t *HuffTable) Decode4X(dst, src []byte) error {
	if t.maxBits == 0 {
		return fmt.Errorf("%w: Huffman streams: no table loaded", ErrCorrupt)
	}
	if len(src) < 10 {
		return fmt.Errorf("%w: Huffman streams: %d bytes, fewer than a jump table and four streams", ErrCorrupt, len(src))
	}
	n := len(dst)
	seg := (n + 3) / 4
	if 3*seg > n {
		return fmt.Errorf("%w: Huffman streams: %d bytes cannot be split in four streams", ErrCorrupt, n)
	}
	var lo, hi [4]int // each stream's bytes within src
	var pos [4]int    // bit positions, absolute within src
	var po, pe [4]int // output range of each stream
	at := 6
	for i := 0; i < 4; i++ {
		var l int
		if i < 3 {
			l = int(binary.LittleEndian.Uint16(src[2*i:]))
		} else {
			l = len(src) - at
		}
		if l <= 0 || at+l > len(src) {
			return fmt.Errorf("%w: Huffman streams: stream %d of %d bytes at %d overruns the %d-byte section", ErrCorrupt, i+1, l, at, len(src))
		}
		lo[i], hi[i] = at, at+l
		p, err := startPos(src[at:at+l], streamNames[i])
		if err != nil {
			return err
		}
		pos[i] = 8*at + p
		at += l
		po[i] = i * seg
		pe[i] = (i + 1) * seg
	}
	pe[3] = n
	if t.lookupBits == 11 {
		t.decodeFour11(dst, src, &po, &pe, &pos, &lo)
	} else {
		t.decodeFour12(dst, src, &po, &pe, &pos, &lo)
	}
	for i := 0; i < 4; i++ {
		s := src[lo[i]:hi[i]]
		if err := t.decodeTail(dst[po[i]:pe[i]], s, pos[i]-8*lo[i], streamNames[i]); err != nil {
			return err
		}
	}
	return nil
}

// decodeFour11 decodes the four streams of a section side by side with a
// 11-bit lookup, as far as all can go without a bounds check on a stream or an
// output (the rest is decodeTail's): each round refills the four 64-bit windows
// and takes 5 steps of each. po and pos advance. decodeFour11 and
// decodeFour12 differ in the width and the number of steps only.
//
// A window is the 8 bytes that end at its stream's next unread bit, shifted so that
// bit is the window's top bit, with its lowest bit set as a marker: steps shift the
// window left by the bits they consume, so at the end of a round the marker's
// position (trailing zeros) is the bits consumed. The marker never reaches the
// bits a step looks at (see stepsNarrow, stepsWide).
//
// Why every unsafe load and store is in bounds (decodeFour12 alike, with 12 for
// 11, 4 steps for 5, 48 bits and 8 bytes a round for 55 and 10). The facts it
// rests on, all established before the loop by Read and Decode4X, none by the
// data the loop reads:
//   - F1: every entry of the lookup below 2^lookupBits was written by the last
//     successful Read (it fills all of them), with nbits ≤ lookupBits (two codes
//     whose lengths add up to at most the width, or one code of at most
//     maxBits ≤ 11 bits) and n ∈ {1, 2}; Decode4X refuses a table Read failed on.
//   - F2: for stream j, 8·lo[j] ≤ pos[j] < 8·hi[j] ≤ 8·len(src) (startPos puts
//     the first bit below the end marker inside the stream's bytes), and 0 ≤ po[j]
//     ≤ pe[j] ≤ len(dst), the streams' output ranges disjoint.
//   - F3: a round consumes at most 5·11 = 55 bits of each stream (5 steps of ≤ 11
//     bits, F1) and advances each output by at most 5·2 = 10 bytes (F1); the
//     marker's trailing zeros count exactly the bits consumed.
//
// rounds is the smallest over the streams of (pos−8·lo−64)/55 and (pe−po)/10
// (0 when pos−8·lo < 64).
//   - The window load *(*uint64)(sp + (q+7)/8 − 8) reads src[(q+7)/8−8 : (q+7)/8].
//     By F3 and rounds, q ≥ 8·lo+64 at the start of every round, so the first
//     byte read is at least lo ≥ 6 (q stays positive, the uint arithmetic cannot
//     wrap); q only decreases from pos < 8·hi, so the last byte read is below hi ≤
//     len(src) (F2). The load never leaves the stream's own bytes.
//   - The store *(*uint16)(d + p) writes dst[p] and dst[p+1]. Over the rounds of
//     one pass p starts at po and advances at most 2 a step and 10 a round (F3),
//     so the last step of the last round stores at p ≤ po + 10·rounds − 2 and
//     writes no byte above po + 10·rounds − 1 < pe ≤ len(dst) (rounds ≤
//     (pe−po)/10, F2). A one-symbol entry's store writes a byte past the symbol,
//     inside the stream's own output range, which the next step or decodeTail
//     overwrites; no store reaches another stream's output. The outer loop
//     recomputes rounds from the advanced po and pos before every pass.
//   - The table reads tbl.nbits[x], tbl.syms[x], tbl.n[x] are ordinary indexed
//     loads of fixed-size arrays with x < 2^11 (a 64-bit value shifted right by
//     53), bounds-checked by Go where the compiler cannot prove them.
//
// TestHuffmanGuarded and FuzzHuffmanGuarded decode with the section and the output
// placed against inaccessible pages, so a load or store one byte out of bounds
// faults.
func (t *HuffTable) decodeFour11(dst, src []byte, po, pe, pos, lo *[4]int) {
	tbl := &t.lk
	for {
		rounds := 1 << 30
		for j := 0; j < 4; j++ {
			r := 0
			if pos[j]-8*lo[j] >= 64 {
				r = (pos[j] - 8*lo[j] - 64) / (5 * 11)
			}
			if o := (pe[j] - po[j]) / (2 * 5); o < r {
				r = o
			}
			if r < rounds {
				rounds = r
			}
		}
		if rounds <= 0 {
			return
		}
		// The bounds were checked for the worst case of every round above: a
		// round consumes at most 5·11 bits of each stream (its 8-byte loads
		// stay within the stream) and writes at most 10 bytes of each
		// output (within the stream's output), so the loop reads and writes
		// through pointers without further checks.
		d := unsafe.Pointer(unsafe.SliceData(dst))
		sp := unsafe.Pointer(unsafe.SliceData(src))
		p0, p1, p2, p3 := uintptr(po[0]), uintptr(po[1]), uintptr(po[2]), uintptr(po[3])
		q0, q1, q2, q3 := uint(pos[0]), uint(pos[1]), uint(pos[2]), uint(pos[3])
		for ; rounds > 0; rounds-- {
			v0 := *(*uint64)(unsafe.Add(sp, (q0+7)>>3-8))<<(-q0&7) | 1
			v1 := *(*uint64)(unsafe.Add(sp, (q1+7)>>3-8))<<(-q1&7) | 1
			v2 := *(*uint64)(unsafe.Add(sp, (q2+7)>>3-8))<<(-q2&7) | 1
			v3 := *(*uint64)(unsafe.Add(sp, (q3+7)>>3-8))<<(-q3&7) | 1
			// 5 steps of each stream, unrolled, one stream after the other
			// in the code (the four chains of loads still overlap in the CPU;
			// written so, they need few registers).
			var x uint64
			x = v0 >> (64 - 11)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 11)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 11)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 11)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 11)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 11)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 11)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 11)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 11)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 11)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 11)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 11)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 11)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 11)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 11)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 11)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 11)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 11)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 11)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 11)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			q0 -= uint(bits.TrailingZeros64(v0))
			q1 -= uint(bits.TrailingZeros64(v1))
			q2 -= uint(bits.TrailingZeros64(v2))
			q3 -= uint(bits.TrailingZeros64(v3))
		}
		po[0], po[1], po[2], po[3] = int(p0), int(p1), int(p2), int(p3)
		pos[0], pos[1], pos[2], pos[3] = int(q0), int(q1), int(q2), int(q3)
	}
}

// decodeFour12 decodes the four streams of a section side by side with a
// 12-bit lookup, as far as all can go without a bounds check on a stream or an
// output (the rest is decodeTail's): each round refills the four 64-bit windows
// and takes 4 steps of each. po and pos advance. decodeFour11 and
// decodeFour12 differ in the width and the number of steps only.
//
// A window is the 8 bytes that end at its stream's next unread bit, shifted so that
// bit is the window's top bit, with its lowest bit set as a marker: steps shift the
// window left by the bits they consume, so at the end of a round the marker's
// position (trailing zeros) is the bits consumed. The marker never reaches the
// bits a step looks at (see stepsNarrow, stepsWide).
func (t *HuffTable) decodeFour12(dst, src []byte, po, pe, pos, lo *[4]int) {
	tbl := &t.lk
	for {
		rounds := 1 << 30
		for j := 0; j < 4; j++ {
			r := 0
			if pos[j]-8*lo[j] >= 64 {
				r = (pos[j] - 8*lo[j] - 64) / (4 * 12)
			}
			if o := (pe[j] - po[j]) / (2 * 4); o < r {
				r = o
			}
			if r < rounds {
				rounds = r
			}
		}
		if rounds <= 0 {
			return
		}
		// The bounds were checked for the worst case of every round above: a
		// round consumes at most 4·12 bits of each stream (its 8-byte loads
		// stay within the stream) and writes at most 8 bytes of each
		// output (within the stream's output), so the loop reads and writes
		// through pointers without further checks.
		d := unsafe.Pointer(unsafe.SliceData(dst))
		sp := unsafe.Pointer(unsafe.SliceData(src))
		p0, p1, p2, p3 := uintptr(po[0]), uintptr(po[1]), uintptr(po[2]), uintptr(po[3])
		q0, q1, q2, q3 := uint(pos[0]), uint(pos[1]), uint(pos[2]), uint(pos[3])
		for ; rounds > 0; rounds-- {
			v0 := *(*uint64)(unsafe.Add(sp, (q0+7)>>3-8))<<(-q0&7) | 1
			v1 := *(*uint64)(unsafe.Add(sp, (q1+7)>>3-8))<<(-q1&7) | 1
			v2 := *(*uint64)(unsafe.Add(sp, (q2+7)>>3-8))<<(-q2&7) | 1
			v3 := *(*uint64)(unsafe.Add(sp, (q3+7)>>3-8))<<(-q3&7) | 1
			// 4 steps of each stream, unrolled, one stream after the other
			// in the code (the four chains of loads still overlap in the CPU;
			// written so, they need few registers).
			var x uint64
			x = v0 >> (64 - 12)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 12)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 12)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 12)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 12)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 12)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 12)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 12)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 12)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 12)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 12)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 12)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			x = v0 >> (64 - 12)
			v0 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p0)) = tbl.syms[x]
			p0 += uintptr(tbl.n[x])
			x = v1 >> (64 - 12)
			v1 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p1)) = tbl.syms[x]
			p1 += uintptr(tbl.n[x])
			x = v2 >> (64 - 12)
			v2 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p2)) = tbl.syms[x]
			p2 += uintptr(tbl.n[x])
			x = v3 >> (64 - 12)
			v3 <<= tbl.nbits[x] & 63
			*(*uint16)(unsafe.Add(d, p3)) = tbl.syms[x]
			p3 += uintptr(tbl.n[x])
			q0 -= uint(bits.TrailingZeros64(v0))
			q1 -= uint(bits.TrailingZeros64(v1))
			q2 -= uint(bits.TrailingZeros64(v2))
			q3 -= uint(bits.TrailingZeros64(v3))
		}
		po[0], po[1], po[2], po[3] = int(p0), int(p1), int(p2), int(p3)
		pos[0], pos[1], pos[2], pos[3] = int(q0), int(q1), int(q2), int(q3)
	}
}
