package benchskip

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/hilbert"
	"github.com/skiplake/skiplake/internal/rank"
	"github.com/skiplake/skiplake/zorder"
)

// cut returns the start of part i of n items split into k parts whose sizes
// differ by at most one: part i is [cut(n,k,i), cut(n,k,i+1)).
func cut(n, k, i int) int { return int(int64(n) * int64(i) / int64(k)) }

// layoutPerm returns the row order of the named layout: rows perm[cut(N,F,f) :
// cut(N,F,f+1)] form file f, already in the file's internal order.
func layoutPerm(name string, d *dataset, cl []*column, files, rowGroups int, seed uint64) ([]int32, error) {
	n := d.rows
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	switch name {
	case LayoutInsertion:
		return perm, nil
	case LayoutSort:
		slices.SortFunc(perm, func(a, b int32) int {
			for _, c := range cl {
				if r := cmp.Compare(c.codes[a], c.codes[b]); r != 0 {
					return r
				}
			}
			return cmp.Compare(a, b)
		})
		return perm, nil
	case LayoutZOrderRaw:
		return rawZOrder(perm, cl), nil
	case LayoutZOrder, LayoutHilbert:
		return rankCurve(name, perm, cl, seed)
	case LayoutKDTree:
		kdSplit(perm, cl, files, rowGroups)
		return perm, nil
	}
	return nil, errorf(ErrInvalidConfig, "unknown layout %q", name)
}

// rawBytes returns the first 16 bytes of the order-preserving byte encoding
// of value code k of c, as two big-endian words. Integers and dates are
// big-endian at their Arrow width with the sign bit flipped, decimals 16 bytes
// big-endian two's complement with the sign bit flipped, floats their IEEE
// bits with the usual total-order transform, strings their bytes; shorter
// encodings are padded with zeros. This is the arrow-row encoding delta-rs
// interleaves, minus its constant validity byte.
func rawBytes(c *column, k uint32) [2]uint64 {
	row := int(c.codeRow[k])
	switch a := c.arr.(type) {
	case *array.Int64:
		return [2]uint64{uint64(a.Value(row)) ^ 1<<63, 0}
	case *array.Int32:
		return [2]uint64{uint64(uint32(a.Value(row))^1<<31) << 32, 0}
	case *array.Date32:
		return [2]uint64{uint64(uint32(a.Value(row))^1<<31) << 32, 0}
	case *array.Decimal128:
		v := a.Value(row)
		return [2]uint64{uint64(v.HighBits()) ^ 1<<63, v.LowBits()}
	case *array.Float64:
		b := math.Float64bits(a.Value(row))
		if b>>63 == 1 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		return [2]uint64{b, 0}
	case *array.String:
		var buf [16]byte
		copy(buf[:], a.Value(row))
		return [2]uint64{binary.BigEndian.Uint64(buf[:8]), binary.BigEndian.Uint64(buf[8:])}
	}
	return [2]uint64{}
}

// lessMSB reports whether the most significant set bit of x is below that of
// y (x = 0 counts as lowest).
func lessMSB(x, y uint64) bool { return x < y && x < x^y }

// lessMSB128 is lessMSB for 128-bit words (hi first).
func lessMSB128(x, y [2]uint64) bool {
	if x[0] != 0 || y[0] != 0 {
		return lessMSB(x[0], y[0])
	}
	return lessMSB(x[1], y[1])
}

// rawZOrder sorts rows by the Morton order of their 16-byte raw encodings,
// compared without materialising the interleaved keys: the column whose XOR
// has the highest set bit (the earlier column on ties, as interleaving puts
// column 0 first at each bit level) decides.
func rawZOrder(perm []int32, cl []*column) []int32 {
	enc := make([][][2]uint64, len(cl))
	for ci, c := range cl {
		enc[ci] = make([][2]uint64, c.distinct())
		for k := range enc[ci] {
			enc[ci][k] = rawBytes(c, uint32(k))
		}
	}
	slices.SortFunc(perm, func(a, b int32) int {
		best, bestX := -1, [2]uint64{}
		for ci, c := range cl {
			ea, eb := enc[ci][c.codes[a]], enc[ci][c.codes[b]]
			x := [2]uint64{ea[0] ^ eb[0], ea[1] ^ eb[1]}
			if best < 0 || lessMSB128(bestX, x) {
				best, bestX = ci, x
			}
		}
		if bestX != [2]uint64{} {
			ea, eb := enc[best][cl[best].codes[a]], enc[best][cl[best].codes[b]]
			if ea[0] != eb[0] {
				return cmp.Compare(ea[0], eb[0])
			}
			return cmp.Compare(ea[1], eb[1])
		}
		return cmp.Compare(a, b)
	})
	return perm
}

// rankBits is the rank width per column so that a key fits 64 bits.
func rankBits(dims int) int { return min(32, 64/dims) }

// rankCurve sorts rows by the Z-order or Hilbert key of their ranks.
func rankCurve(name string, perm []int32, cl []*column, seed uint64) ([]int32, error) {
	n := len(perm)
	bitsPer := rankBits(len(cl))
	ranks := make([][]uint32, len(cl))
	for ci, c := range cl {
		s := rank.NewSampler(0, seed+uint64(ci)+1)
		if err := s.Add(c.arr); err != nil {
			return nil, errorf(ErrInternal, "layout %s: sample %q: %v", name, c.field.Name, err)
		}
		b, err := s.Boundaries(bitsPer)
		if err != nil {
			return nil, errorf(ErrInternal, "layout %s: boundaries %q: %v", name, c.field.Name, err)
		}
		ranks[ci] = make([]uint32, n)
		if err := b.Ranks(c.arr, 0, ranks[ci]); err != nil {
			return nil, errorf(ErrInternal, "layout %s: ranks %q: %v", name, c.field.Name, err)
		}
	}
	keys := make([]uint64, n)
	var err error
	if name == LayoutZOrder {
		var enc *zorder.Encoder
		if enc, err = zorder.NewEncoder(len(cl), bitsPer); err == nil {
			err = enc.EncodeBatch64(ranks, keys)
		}
	} else {
		var curve *hilbert.Curve
		if curve, err = hilbert.New(len(cl), bitsPer); err == nil {
			err = curve.EncodeBatch64(ranks, keys)
		}
	}
	if err != nil {
		return nil, errorf(ErrInternal, "layout %s: keys: %v", name, err)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if keys[a] != keys[b] {
			return cmp.Compare(keys[a], keys[b])
		}
		return cmp.Compare(a, b)
	})
	return perm, nil
}

// kdSplit arranges perm as a median-split k-d tree: the rows are split at the
// file boundaries by recursive splits that cycle over the clustering columns
// (split depth d uses column d mod len(cl)), then each file is split the same
// way at its row-group boundaries, continuing the cycle. Each split puts rows
// whose (code, row) is below the split position's on the left, so part sizes
// are exactly those of cut and ties on a value are broken by row number.
func kdSplit(perm []int32, cl []*column, files, rowGroups int) {
	var rec func(rows []int32, parts, depth int, leaf func(rows []int32, depth int))
	rec = func(rows []int32, parts, depth int, leaf func([]int32, int)) {
		if parts <= 1 {
			leaf(rows, depth)
			return
		}
		left := parts / 2
		at := cut(len(rows), parts, left)
		nthElement(rows, at, cl[depth%len(cl)].codes)
		rec(rows[:at], left, depth+1, leaf)
		rec(rows[at:], parts-left, depth+1, leaf)
	}
	rec(perm, files, 0, func(file []int32, depth int) {
		rec(file, rowGroups, depth, func([]int32, int) {})
	})
}

// nthElement reorders a so that a[:k] hold the k smallest rows by (key[row],
// row) and a[k:] the rest (quickselect with a median-of-three pivot). The
// (key, row) order is total, so there are no equal elements to degrade on.
func nthElement(a []int32, k int, key []uint32) {
	if k <= 0 || k >= len(a) {
		return
	}
	less := func(x, y int32) bool {
		if key[x] != key[y] {
			return key[x] < key[y]
		}
		return x < y
	}
	lo, hi := 0, len(a)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if less(a[mid], a[lo]) {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if less(a[hi], a[lo]) {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if less(a[hi], a[mid]) {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for less(a[i], pivot) {
				i++
			}
			for less(pivot, a[j]) {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// fileRanges returns [start, end) of every file and row group of a layout:
// files of equal rows (±1), or those starting at starts (files+1 entries, the
// last n) when given; row groups cut each file into equal parts.
func fileRanges(n, files, rowGroups int, starts []int) (fileStart []int, rgStart []int) {
	fileStart = starts
	if fileStart == nil {
		fileStart = make([]int, files+1)
		for f := 0; f <= files; f++ {
			fileStart[f] = cut(n, files, f)
		}
	}
	rgStart = make([]int, 0, files*rowGroups+1)
	for f := range files {
		a, b := fileStart[f], fileStart[f+1]
		for g := range rowGroups {
			rgStart = append(rgStart, a+cut(b-a, rowGroups, g))
		}
	}
	rgStart = append(rgStart, n)
	return fileStart, rgStart
}
