package zstdx

import (
	"fmt"
	"math/bits"
)

// fseEntry is one state of an FSE decoding table (RFC 8878 §4.1.1): the symbol the
// state decodes, and how the next state is found: nbBits read from the stream,
// added to base.
type fseEntry struct {
	symbol uint8
	nbBits uint8
	base   uint16
}

// fseTable is an FSE decoding table of 1<<log states.
type fseTable struct {
	log   uint8
	cells []fseEntry
}

// readFSECounts reads an FSE table description (RFC 8878 §4.1.1) from the start of
// in: the accuracy log (at most maxLog) and the normalized count of each symbol up
// to maxSymbol (-1 for "less than 1"). It returns the counts, the log, and the
// bytes the description used.
func readFSECounts(in []byte, maxSymbol int, maxLog uint8, counts []int16) (n int, log uint8, used int, err error) {
	if len(in) == 0 {
		return 0, 0, 0, fmt.Errorf("%w: FSE table description: no bytes", ErrCorrupt)
	}
	log = in[0]&15 + 5
	if log > maxLog {
		return 0, 0, 0, fmt.Errorf("%w: FSE table description: accuracy log %d above %d", ErrCorrupt, log, maxLog)
	}
	bitPos := 4 // bits consumed so far
	get := func() uint32 {
		// 32 bits of in starting at bitPos, zero past the end.
		i := bitPos >> 3
		var v uint64
		for k := 0; k < 5 && i+k < len(in); k++ {
			v |= uint64(in[i+k]) << (8 * uint(k))
		}
		return uint32(v >> uint(bitPos&7))
	}
	remaining := int32(1<<log) + 1
	threshold := int32(1 << log)
	nbBits := uint(log) + 1
	sym := 0
	for remaining > 1 {
		if sym > maxSymbol {
			return 0, 0, 0, fmt.Errorf("%w: FSE table description: counts past symbol %d", ErrCorrupt, maxSymbol)
		}
		v := int32(get())
		max := 2*threshold - 1 - remaining
		var count int32
		if v&(threshold-1) < max {
			count = v & (threshold - 1)
			bitPos += int(nbBits) - 1
		} else {
			count = v & (2*threshold - 1)
			if count >= threshold {
				count -= max
			}
			bitPos += int(nbBits)
		}
		count-- // -1: "less than 1"
		if count < 0 {
			remaining--
		} else {
			remaining -= count
		}
		if remaining < 1 {
			return 0, 0, 0, fmt.Errorf("%w: FSE table description: counts exceed %d at symbol %d", ErrCorrupt, 1<<log, sym)
		}
		counts[sym] = int16(count)
		sym++
		if count == 0 {
			// 2-bit repeat flags: that many further zero counts; 3 means another flag follows.
			for {
				r := int(get() & 3)
				bitPos += 2
				for k := 0; k < r; k++ {
					if sym > maxSymbol {
						return 0, 0, 0, fmt.Errorf("%w: FSE table description: zero run past symbol %d", ErrCorrupt, maxSymbol)
					}
					counts[sym] = 0
					sym++
				}
				if r != 3 {
					break
				}
			}
		}
		for remaining < threshold && threshold > 1 {
			nbBits--
			threshold >>= 1
		}
		if (bitPos+7)>>3 > len(in) {
			return 0, 0, 0, fmt.Errorf("%w: FSE table description: truncated (%d bytes)", ErrCorrupt, len(in))
		}
	}
	if remaining != 1 {
		return 0, 0, 0, fmt.Errorf("%w: FSE table description: counts do not sum to %d", ErrCorrupt, 1<<log)
	}
	return sym, log, (bitPos + 7) >> 3, nil
}

// build fills t from the normalized counts of symbols 0..n-1 at accuracy log
// (RFC 8878 §4.1.1, "From normalized distribution to decoding tables").
func (t *fseTable) build(counts []int16, n int, log uint8) error {
	size := 1 << log
	if cap(t.cells) < size {
		t.cells = make([]fseEntry, size)
	}
	t.cells = t.cells[:size]
	t.log = log
	var next [256]uint16
	high := size - 1
	for s := 0; s < n; s++ {
		if counts[s] == -1 {
			t.cells[high].symbol = uint8(s)
			high--
			next[s] = 1
		} else {
			next[s] = uint16(counts[s])
		}
	}
	mask := size - 1
	step := size>>1 + size>>3 + 3
	pos := 0
	for s := 0; s < n; s++ {
		for i := 0; i < int(counts[s]); i++ {
			t.cells[pos].symbol = uint8(s)
			pos = (pos + step) & mask
			for pos > high {
				pos = (pos + step) & mask
			}
		}
	}
	if pos != 0 {
		return fmt.Errorf("%w: FSE table: symbols do not fill the table", ErrCorrupt)
	}
	for i := range t.cells {
		c := &t.cells[i]
		x := next[c.symbol]
		next[c.symbol]++
		nb := log - uint8(bits.Len16(x)-1)
		c.nbBits = nb
		c.base = uint16(int(x)<<nb - size)
	}
	return nil
}
