package zstdx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

const (
	frameMagic       = 0xFD2FB528
	skippableMagic   = 0x184D2A50 // to 0x184D2A5F
	maxBlockSize     = 128 << 10
	maxWindowDefault = 1 << 27 // windows above 128 MiB are refused unless MaxWindow allows them
)

// ErrUnsupported is wrapped when a frame needs what this package does not do: a
// dictionary.
var ErrUnsupported = errors.New("zstdx: unsupported frame")

// Decoder decodes zstd frames (RFC 8878) whole, from memory into memory. Its
// buffers and tables are reused from one call to the next; a Decoder is not safe
// for concurrent use.
type Decoder struct {
	// MaxWindow is the largest window size a frame may declare (0:
	// maxWindowDefault). Offsets never reach beyond the frame's own output.
	MaxWindow uint64
	// MaxSize caps the bytes one DecodeAll call appends (0: no cap beyond what
	// frame headers declare and memory holds).
	MaxSize int

	huf    HuffTable
	hufSet bool // huf was loaded in the current frame (for treeless literals)
	lits   []byte
	seq    seqTables
	rep    [3]uint64
}

// DecodeAll decodes every frame of src (skippable frames are skipped) and appends
// the decoded bytes to dst. On error the returned slice is dst as given.
func (d *Decoder) DecodeAll(src, dst []byte) ([]byte, error) {
	out := dst
	at := 0
	for at < len(src) {
		if len(src)-at < 4 {
			return dst, fmt.Errorf("%w: %d stray bytes at %d after the last frame", ErrCorrupt, len(src)-at, at)
		}
		magic := binary.LittleEndian.Uint32(src[at:])
		if magic&0xFFFFFFF0 == skippableMagic {
			if len(src)-at < 8 {
				return dst, fmt.Errorf("%w: skippable frame at %d: truncated header", ErrCorrupt, at)
			}
			n := uint64(binary.LittleEndian.Uint32(src[at+4:]))
			if n > uint64(len(src)-at-8) {
				return dst, fmt.Errorf("%w: skippable frame at %d: %d bytes, %d left", ErrCorrupt, at, n, len(src)-at-8)
			}
			at += 8 + int(n)
			continue
		}
		if magic != frameMagic {
			return dst, fmt.Errorf("%w: bad magic number %#x at %d", ErrCorrupt, magic, at)
		}
		var err error
		var used int
		out, used, err = d.frame(src[at:], out, len(dst))
		if err != nil {
			return dst, fmt.Errorf("frame at %d: %w", at, err)
		}
		at += used
	}
	return out, nil
}

// frame decodes the frame at the start of src, appending to out; base is where
// the caller's output began (for MaxSize). It returns the bytes of src used.
func (d *Decoder) frame(src, out []byte, base int) ([]byte, int, error) {
	if len(src) < 6 {
		return out, 0, fmt.Errorf("%w: truncated frame header", ErrCorrupt)
	}
	fhd := src[4]
	if fhd&0x08 != 0 {
		return out, 0, fmt.Errorf("%w: reserved bit of the frame header descriptor set", ErrCorrupt)
	}
	single := fhd&0x20 != 0
	hasSum := fhd&0x04 != 0
	p := 5
	var window uint64
	if !single {
		wd := src[p]
		p++
		log := 10 + uint(wd>>3)
		window = 1<<log + (1<<log)/8*uint64(wd&7)
	}
	switch idLen := [4]int{0, 1, 2, 4}[fhd&3]; {
	case p+idLen > len(src):
		return out, 0, fmt.Errorf("%w: truncated frame header", ErrCorrupt)
	case idLen > 0:
		var id uint32
		for k := 0; k < idLen; k++ {
			id |= uint32(src[p+k]) << (8 * k)
		}
		if id != 0 {
			return out, 0, fmt.Errorf("%w: frame needs dictionary %d", ErrUnsupported, id)
		}
		p += idLen
	}
	fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if fcsLen == 0 && single {
		fcsLen = 1
	}
	if p+fcsLen > len(src) {
		return out, 0, fmt.Errorf("%w: truncated frame header", ErrCorrupt)
	}
	var fcs uint64
	hasFCS := fcsLen > 0
	for k := 0; k < fcsLen; k++ {
		fcs |= uint64(src[p+k]) << (8 * k)
	}
	if fcsLen == 2 {
		fcs += 256
	}
	p += fcsLen
	if single {
		window = fcs
	}
	maxWindow := d.MaxWindow
	if maxWindow == 0 {
		maxWindow = maxWindowDefault
	}
	if window > maxWindow {
		return out, 0, fmt.Errorf("%w: window of %d bytes, more than %d", ErrTooLarge, window, maxWindow)
	}
	if hasFCS {
		if d.MaxSize > 0 && fcs > uint64(d.MaxSize-(len(out)-base)) {
			return out, 0, fmt.Errorf("%w: frame content of %d bytes, more than the %d allowed", ErrTooLarge, fcs, d.MaxSize)
		}
		// Grown to the declared size up front, but only as far as a header alone
		// may make this allocate (larger frames grow as they decode).
		if fcs <= maxPrealloc && uint64(cap(out)-len(out)) < fcs {
			grown := make([]byte, len(out), len(out)+int(fcs)+zstdSlackOut)
			copy(grown, out)
			out = grown
		}
	}
	blockMax := uint64(maxBlockSize)
	if window < blockMax {
		blockMax = window
	}
	start := len(out)
	d.hufSet = false
	d.seq.llPrev, d.seq.mlPrev, d.seq.ofPrev = nil, nil, nil
	d.rep = [3]uint64{1, 4, 8}
	for {
		if p+3 > len(src) {
			return out, 0, fmt.Errorf("%w: truncated block header at %d", ErrCorrupt, p)
		}
		h := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
		p += 3
		last, typ, size := h&1 == 1, h>>1&3, int(h>>3)
		if uint64(size) > blockMax && typ != 1 {
			return out, 0, fmt.Errorf("%w: block at %d of %d bytes, above the maximum %d", ErrCorrupt, p-3, size, blockMax)
		}
		var err error
		switch typ {
		case 0:
			if p+size > len(src) {
				return out, 0, fmt.Errorf("%w: raw block at %d: %d bytes, %d left", ErrCorrupt, p-3, size, len(src)-p)
			}
			out = append(out, src[p:p+size]...)
			p += size
		case 1:
			if uint64(size) > blockMax {
				return out, 0, fmt.Errorf("%w: RLE block at %d of %d bytes, above the maximum %d", ErrCorrupt, p-3, size, blockMax)
			}
			if p+1 > len(src) {
				return out, 0, fmt.Errorf("%w: RLE block at %d: no byte", ErrCorrupt, p-3)
			}
			b := src[p]
			for k := 0; k < size; k++ {
				out = append(out, b)
			}
			p++
		case 2:
			if p+size > len(src) {
				return out, 0, fmt.Errorf("%w: compressed block at %d: %d bytes, %d left", ErrCorrupt, p-3, size, len(src)-p)
			}
			limit := maxBlockSize
			if hasFCS {
				// A block cannot decode past the frame's declared size.
				limit = int(min(uint64(maxBlockSize), fcs-min(fcs, uint64(len(out)-start))))
			}
			out, err = d.block(src[p:p+size], out, start, window, limit)
			if err != nil {
				return out, 0, fmt.Errorf("block at %d: %w", p-3, err)
			}
			p += size
		default:
			return out, 0, fmt.Errorf("%w: reserved block type at %d", ErrCorrupt, p-3)
		}
		if d.MaxSize > 0 && len(out)-base > d.MaxSize {
			return out, 0, fmt.Errorf("%w: more than the %d bytes allowed", ErrTooLarge, d.MaxSize)
		}
		if last {
			break
		}
	}
	if hasFCS && uint64(len(out)-start) != fcs {
		return out, 0, fmt.Errorf("%w: frame decodes to %d bytes, its header says %d", ErrCorrupt, len(out)-start, fcs)
	}
	if hasSum {
		if p+4 > len(src) {
			return out, 0, fmt.Errorf("%w: truncated content checksum", ErrCorrupt)
		}
		want := binary.LittleEndian.Uint32(src[p:])
		if got := uint32(xxhash.Sum64(out[start:])); got != want {
			return out, 0, fmt.Errorf("%w: content checksum %#08x, the frame says %#08x", ErrCorrupt, got, want)
		}
		p += 4
	}
	return out, p, nil
}

// copySlack is the spare capacity past a block's output the sequence copies need.
const copySlack = 16

// maxPrealloc is the most output a frame header's content size makes DecodeAll
// allocate before any block is decoded.
const maxPrealloc = 8 << 20

// zstdSlackOut is spare capacity given to an output grown for a frame: what the
// sequence copies need (copySlack).
const zstdSlackOut = copySlack

// block decodes the compressed block b, appending to out; the frame's output
// begins at out[start], window bounds the offsets, limit the block's output.
func (d *Decoder) block(b, out []byte, start int, window uint64, limit int) ([]byte, error) {
	lits, used, err := d.literals(b)
	if err != nil {
		return out, err
	}
	b = b[used:]
	if len(b) == 0 {
		return out, fmt.Errorf("%w: no sequences section header", ErrCorrupt)
	}
	nseq := int(b[0])
	switch {
	case nseq < 128:
		b = b[1:]
	case nseq < 255:
		if len(b) < 2 {
			return out, fmt.Errorf("%w: truncated sequences section header", ErrCorrupt)
		}
		nseq = (nseq-128)<<8 + int(b[1])
		b = b[2:]
	default:
		if len(b) < 3 {
			return out, fmt.Errorf("%w: truncated sequences section header", ErrCorrupt)
		}
		nseq = int(b[1]) + int(b[2])<<8 + 0x7F00
		b = b[3:]
	}
	if nseq == 0 {
		if len(b) != 0 {
			return out, fmt.Errorf("%w: %d bytes after a block without sequences", ErrCorrupt, len(b))
		}
		if len(lits) > limit {
			return out, fmt.Errorf("%w: block decodes to %d bytes, more than %d", ErrCorrupt, len(lits), limit)
		}
		return append(out, lits...), nil
	}
	if len(b) < 1 {
		return out, fmt.Errorf("%w: no symbol compression modes", ErrCorrupt)
	}
	modes := b[0]
	if modes&3 != 0 {
		return out, fmt.Errorf("%w: reserved bits of the symbol compression modes set", ErrCorrupt)
	}
	b = b[1:]
	s := &d.seq
	n, err := readMode(b, modes>>6, &s.ll, &s.llPrev, llPredef, maxLLCode, maxLLLog, "literal lengths")
	if err != nil {
		return out, err
	}
	b = b[n:]
	n, err = readMode(b, modes>>4&3, &s.of, &s.ofPrev, ofPredef, maxOFCode, maxOFLog, "offsets")
	if err != nil {
		return out, err
	}
	b = b[n:]
	n, err = readMode(b, modes>>2&3, &s.ml, &s.mlPrev, mlPredef, maxMLCode, maxMLLog, "match lengths")
	if err != nil {
		return out, err
	}
	b = b[n:]
	return d.execute(b, nseq, lits, out, start, window, limit)
}

// execute decodes nseq sequences from the bitstream b and carries them out:
// literals from lits, matches from the frame's output so far.
//
// The bitstream is read as backward reads it (see backward), with the window
// kept in local variables: v holds the 8 bytes of b ending at byte off, the top
// used bits consumed. A refill (when more than 32 bits are used) leaves at most
// 7 used, unless the window is at b's start, so each group of reads that follows
// one (offset bits ≤ 31; match and literal length bits ≤ 16+16; state bits ≤
// 9+9+8) stays within the 64 bits. Reads past b's start yield zeros (Go's
// shifts); the count 8·off − used going negative is the overrun, checked per
// sequence.
func (d *Decoder) execute(b []byte, nseq int, lits, out []byte, start int, window uint64, limit int) ([]byte, error) {
	if len(b) == 0 || b[len(b)-1] == 0 {
		return out, fmt.Errorf("%w: sequences: bitstream empty or without its end marker", ErrCorrupt)
	}
	off := len(b)
	v := loadEnd(b, off)
	used := uint(bits.LeadingZeros8(b[len(b)-1])) + 1
	llt, oft, mlt := d.seq.llPrev, d.seq.ofPrev, d.seq.mlPrev
	llc, ofc, mlc := llt.cells, oft.cells, mlt.cells
	ll := (v << used) >> (64 - uint(llt.log))
	used += uint(llt.log)
	of := (v << used) >> (64 - uint(oft.log))
	used += uint(oft.log)
	ml := (v << used) >> (64 - uint(mlt.log))
	used += uint(mlt.log)
	// The block's output goes to o, out's spare capacity, which is made to hold
	// limit bytes plus copySlack: literal and match copies write whole 16-byte
	// chunks and may run up to 15 bytes past what they copy.
	if cap(out)-len(out) < limit+copySlack {
		grown := make([]byte, len(out), len(out)+max(limit+copySlack, cap(out)))
		copy(grown, out)
		out = grown
	}
	blockStart := len(out)
	o := out[:cap(out)]
	w := blockStart // bytes of o written
	lp := 0         // literals used
	rep := d.rep
	for i := 0; i < nseq; i++ {
		if ll >= uint64(len(llc)) || of >= uint64(len(ofc)) || ml >= uint64(len(mlc)) {
			return out, fmt.Errorf("%w: sequence %d: state out of range", ErrCorrupt, i)
		}
		le, oe, me := llc[ll], ofc[of], mlc[ml]
		if oe.symbol > maxOFCode || le.symbol > maxLLCode || me.symbol > maxMLCode {
			return out, fmt.Errorf("%w: sequence %d: code out of range", ErrCorrupt, i)
		}
		if used > 32 && off > 8 {
			k := min(int(used>>3), off-8)
			off -= k
			v = le64(b[off-8 : off])
			used -= uint(8 * k)
		}
		n := uint(oe.symbol)
		ofv := uint64(1)<<n + (v<<used)>>(64-n)
		used += n
		if used > 32 && off > 8 {
			k := min(int(used>>3), off-8)
			off -= k
			v = le64(b[off-8 : off])
			used -= uint(8 * k)
		}
		n = uint(mlBits[me.symbol])
		mlen := uint64(mlBase[me.symbol]) + (v<<used)>>(64-n)
		used += n
		n = uint(llBits[le.symbol])
		llen := uint64(llBase[le.symbol]) + (v<<used)>>(64-n)
		used += n
		var mo uint64
		if ofv > 3 {
			mo = ofv - 3
			rep[2], rep[1], rep[0] = rep[1], rep[0], mo
		} else {
			idx := ofv - 1
			if llen == 0 {
				idx++
			}
			switch idx {
			case 0:
				mo = rep[0]
			case 1:
				mo = rep[1]
				rep[1], rep[0] = rep[0], mo
			case 2:
				mo = rep[2]
				rep[2], rep[1], rep[0] = rep[1], rep[0], mo
			default: // 3: repeat offset 1 minus one
				mo = rep[0] - 1
				if mo == 0 {
					return out, fmt.Errorf("%w: sequence %d: offset 0", ErrCorrupt, i)
				}
				rep[2], rep[1], rep[0] = rep[1], rep[0], mo
			}
		}
		if i < nseq-1 {
			if used > 32 && off > 8 {
				k := min(int(used>>3), off-8)
				off -= k
				v = le64(b[off-8 : off])
				used -= uint(8 * k)
			}
			n = uint(le.nbBits)
			ll = uint64(le.base) + (v<<used)>>(64-n)
			used += n
			n = uint(me.nbBits)
			ml = uint64(me.base) + (v<<used)>>(64-n)
			used += n
			n = uint(oe.nbBits)
			of = uint64(oe.base) + (v<<used)>>(64-n)
			used += n
		}
		if 8*off < int(used) {
			return out, fmt.Errorf("%w: sequence %d: bitstream overrun", ErrCorrupt, i)
		}
		if llen > uint64(len(lits)-lp) {
			return out, fmt.Errorf("%w: sequence %d: %d literals, %d left", ErrCorrupt, i, llen, len(lits)-lp)
		}
		if uint64(w-blockStart)+llen+mlen > uint64(limit) {
			return out, fmt.Errorf("%w: sequence %d: block decodes to more than %d bytes", ErrCorrupt, i, limit)
		}
		nl := int(llen)
		if nl <= 16 && lp+16 <= len(lits) {
			copy(o[w:w+16], lits[lp:lp+16])
		} else {
			copy(o[w:w+nl], lits[lp:lp+nl])
		}
		w += nl
		lp += nl
		have := uint64(w - start)
		if mo > have || mo > window && window > 0 {
			return out, fmt.Errorf("%w: sequence %d: offset %d beyond the %d bytes decoded (window %d)", ErrCorrupt, i, mo, have, window)
		}
		nm, from := int(mlen), w-int(mo)
		if mo >= 16 {
			// Chunks of 16 never overlap their source; the last may run past.
			for k := 0; k < nm; k += 16 {
				copy(o[w+k:w+k+16], o[from+k:from+k+16])
			}
		} else {
			for k := 0; k < nm; k++ { // overlapping: the bytes repeat
				o[w+k] = o[from+k]
			}
		}
		w += nm
	}
	if rem := 8*off - int(used); rem != 0 {
		return out, fmt.Errorf("%w: sequences bitstream: %d bits left after the last sequence", ErrCorrupt, rem)
	}
	rest := len(lits) - lp
	if w-blockStart+rest > limit {
		return out, fmt.Errorf("%w: block decodes to more than %d bytes", ErrCorrupt, limit)
	}
	w += copy(o[w:w+rest], lits[lp:])
	d.rep = rep
	return o[:w], nil
}

// literals decodes the literals section at the start of b and returns the
// literals and the section's size.
func (d *Decoder) literals(b []byte) ([]byte, int, error) {
	if len(b) == 0 {
		return nil, 0, fmt.Errorf("%w: no literals section", ErrCorrupt)
	}
	typ, sf := b[0]&3, b[0]>>2&3
	if typ < 2 {
		var size, hl int
		switch sf {
		case 0, 2:
			size, hl = int(b[0]>>3), 1
		case 1:
			if len(b) < 2 {
				return nil, 0, fmt.Errorf("%w: truncated literals header", ErrCorrupt)
			}
			size, hl = int(b[0]>>4)+int(b[1])<<4, 2
		default:
			if len(b) < 3 {
				return nil, 0, fmt.Errorf("%w: truncated literals header", ErrCorrupt)
			}
			size, hl = int(b[0]>>4)+int(b[1])<<4+int(b[2])<<12, 3
		}
		if size > maxBlockSize {
			return nil, 0, fmt.Errorf("%w: %d literals, above %d", ErrCorrupt, size, maxBlockSize)
		}
		if typ == 0 {
			if hl+size > len(b) {
				return nil, 0, fmt.Errorf("%w: raw literals: %d bytes, %d left", ErrCorrupt, size, len(b)-hl)
			}
			return b[hl : hl+size], hl + size, nil
		}
		if hl+1 > len(b) {
			return nil, 0, fmt.Errorf("%w: RLE literals without their byte", ErrCorrupt)
		}
		lits := d.litBuf(size)
		for k := range lits {
			lits[k] = b[hl]
		}
		return lits, hl + 1, nil
	}
	var regen, comp, hl int
	if len(b) < 5 {
		return nil, 0, fmt.Errorf("%w: truncated literals header", ErrCorrupt)
	}
	switch sf {
	case 0, 1:
		x := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		regen, comp, hl = x>>4&0x3FF, x>>14&0x3FF, 3
	case 2:
		x := int(binary.LittleEndian.Uint32(b))
		regen, comp, hl = x>>4&0x3FFF, x>>18&0x3FFF, 4
	default:
		x := int(binary.LittleEndian.Uint32(b)) | int(b[4])<<32
		regen, comp, hl = x>>4&0x3FFFF, x>>22&0x3FFFF, 5
	}
	if regen > maxBlockSize {
		return nil, 0, fmt.Errorf("%w: %d literals, above %d", ErrCorrupt, regen, maxBlockSize)
	}
	if hl+comp > len(b) {
		return nil, 0, fmt.Errorf("%w: compressed literals: %d bytes, %d left", ErrCorrupt, comp, len(b)-hl)
	}
	data := b[hl : hl+comp]
	if typ == 2 {
		n, err := d.huf.Read(data)
		if err != nil {
			d.hufSet = false
			return nil, 0, err
		}
		d.hufSet = true
		data = data[n:]
	} else if !d.hufSet {
		return nil, 0, fmt.Errorf("%w: treeless literals with no earlier Huffman table in the frame", ErrCorrupt)
	}
	lits := d.litBuf(regen)
	var err error
	if sf == 0 {
		err = d.huf.Decode1X(lits, data)
	} else {
		err = d.huf.Decode4X(lits, data)
	}
	if err != nil {
		return nil, 0, err
	}
	return lits, hl + comp, nil
}

// litBuf returns d's literal buffer with length n.
func (d *Decoder) litBuf(n int) []byte {
	if cap(d.lits) < n {
		d.lits = make([]byte, n, max(n, maxBlockSize))
	}
	return d.lits[:n]
}
