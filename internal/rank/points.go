package rank

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// Points is an exact discretisation of one column by explicit cut values (the
// literals of a workload, say), where Boundaries is a statistical one: every
// value maps to a slot that says exactly where it lies among the points, so a
// comparison with any point can be decided on slots alone.
//
// With the distinct points p_0 < p_1 < ... < p_{k-1}:
//
//	slot(NULL)          = 0
//	slot(v), v < p_0    = 1
//	slot(p_j)           = 2j + 2
//	slot(v), p_j<v<p_j+1 = 2j + 3   (v > p_{k-1}: 2k + 1)
//
// so slot(a) < slot(b) implies a < b, equal slots of even number mean equal
// values, and `v < p_j` holds exactly when 1 ≤ slot(v) ≤ 2j+1, `v ≤ p_j`
// exactly when 1 ≤ slot(v) ≤ 2j+2 (invariant R6). Points are immutable and
// safe for concurrent use.
type Points struct {
	b    *Boundaries // search structure only: cum and spread are unused
	vals []value.Value
}

// NewPoints builds the points of a column of Arrow type typ from vals (NULLs
// are ignored, duplicates merged). Every value must fit the column's key
// encoding: integer-like kinds for integer, date, time and timestamp columns,
// floats for floating point, strings or binary for string and binary columns,
// decimals of the column's scale for decimal columns; ErrTypeMismatch
// otherwise, ErrUnsupportedType for a type without an order.
func NewPoints(typ arrow.DataType, vals []value.Value) (*Points, error) {
	enc, scale, err := encodingOf(typ)
	if err != nil {
		return nil, err
	}
	type kv struct {
		w uint64
		s string
		v value.Value
	}
	keys := make([]kv, 0, len(vals))
	for _, v := range vals {
		if v.IsNull() {
			continue
		}
		w, s, err := valueKey(v, enc, scale)
		if err != nil {
			return nil, err
		}
		keys = append(keys, kv{w, s, v})
	}
	slices.SortFunc(keys, func(a, b kv) int {
		if enc.wordKeys() {
			switch {
			case a.w < b.w:
				return -1
			case a.w > b.w:
				return 1
			}
			return 0
		}
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return 0
	})
	keys = slices.CompactFunc(keys, func(a, b kv) bool { return a.w == b.w && a.s == b.s })
	p := &Points{b: &Boundaries{typ: typ, enc: enc, scale: scale}}
	for _, k := range keys {
		p.vals = append(p.vals, k.v)
		if enc.wordKeys() {
			p.b.words = append(p.b.words, k.w)
		} else {
			p.b.strs = append(p.b.strs, k.s)
		}
	}
	if !enc.wordKeys() {
		if len(p.b.strs) > 1 {
			first, last := p.b.strs[0], p.b.strs[len(p.b.strs)-1]
			n := 0
			for n < len(first) && n < len(last) && first[n] == last[n] {
				n++
			}
			p.b.prefix = first[:n]
			for i, c := range p.b.strs {
				p.b.strs[i] = c[n:]
			}
		}
		p.b.heads = make([]uint64, len(p.b.strs))
		for i, c := range p.b.strs {
			p.b.heads[i] = headWord(c)
		}
	}
	return p, nil
}

// Len returns the number of distinct points k; slots lie in 0..2k+1.
func (p *Points) Len() int { return len(p.vals) }

// Value returns point j (0 ≤ j < Len()), in the kind it was given.
func (p *Points) Value(j int) value.Value { return p.vals[j] }

// MaxSlot returns 2·Len()+1, the largest slot a value can have.
func (p *Points) MaxSlot() uint32 { return uint32(2*len(p.vals) + 1) }

func slotOf(j int, eq bool) uint32 {
	if eq {
		return uint32(2*j + 2)
	}
	return uint32(2*j + 1)
}

// Slots writes the slot of every element of arr into out (len(out) ==
// arr.Len()). arr must have the type the points were built for.
func (p *Points) Slots(arr arrow.Array, out []uint32) error {
	b := p.b
	if !arrow.TypeEqual(b.typ, arr.DataType()) {
		return fmt.Errorf("%w: array of type %s, points built for %s", ErrTypeMismatch, arr.DataType(), b.typ)
	}
	n := arr.Len()
	if len(out) != n {
		return fmt.Errorf("%w: %d outputs for %d values", ErrShape, len(out), n)
	}
	if b.enc.wordKeys() {
		var buf [chunk]uint64
		for off := 0; off < n; off += chunk {
			keys := buf[:min(chunk, n-off)]
			wordKeysOf(arr, off, keys)
			o := out[off : off+len(keys)]
			i := 0
			for ; i+3 < len(keys); i += 4 {
				var j [4]int
				lowerBound4(b.words, (*[4]uint64)(keys[i:i+4]), &j)
				for q := 0; q < 4; q++ {
					jq := j[q]
					o[i+q] = slotOf(jq, jq < len(b.words) && b.words[jq] == keys[i+q])
				}
			}
			for ; i < len(keys); i++ {
				j := lowerBoundWord(b.words, keys[i])
				o[i] = slotOf(j, j < len(b.words) && b.words[j] == keys[i])
			}
		}
	} else {
		key := bytesKeyer(arr)
		for i := range out {
			j, eq := b.searchString(key(i))
			out[i] = slotOf(j, eq)
		}
	}
	if arr.NullN() > 0 {
		for i := range out {
			if arr.IsNull(i) {
				out[i] = 0
			}
		}
	}
	return nil
}

// Slot returns the slot of one value (0 for NULL): the value path for tests
// and for literals.
func (p *Points) Slot(v value.Value) (uint32, error) {
	if v.IsNull() {
		return 0, nil
	}
	b := p.b
	w, s, err := valueKey(v, b.enc, b.scale)
	if err != nil {
		return 0, err
	}
	if b.enc.wordKeys() {
		j := lowerBoundWord(b.words, w)
		return slotOf(j, j < len(b.words) && b.words[j] == w), nil
	}
	j, eq := b.searchString(s)
	return slotOf(j, eq), nil
}
