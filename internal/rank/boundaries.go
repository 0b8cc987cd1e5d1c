package rank

import (
	"cmp"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// chunk is the number of keys converted at a time on the word paths.
const chunk = 512

// Boundaries maps values of one column to ranks: 0 for NULL, 1..NumBuckets()
// for values, by equal-frequency cut points taken from a sample. It is
// immutable and safe for concurrent use.
//
// A value v that lies strictly between cut points gets 1 + (number of cuts <
// v). A value equal to a cut gets 1 + (number of cuts ≤ v), except a heavy
// hitter (one value filling more than one bucket's worth of the sample), whose
// rows are spread over the whole span [1 + #cuts < v, 1 + #cuts ≤ v] by a hash
// of the row position, so that range partitioning on the key can cut it.
type Boundaries struct {
	typ     arrow.DataType // nil when built from values only
	enc     encoding
	scale   int32
	buckets int
	bits    int
	words   []uint64 // distinct cut points, word encodings
	strs    []string // distinct cut points minus prefix, bytes encodings
	prefix  string   // longest common prefix of all string cut points
	heads   []uint64 // heads[i] = headWord(strs[i])
	cum     []uint32 // cum[i] = number of cut points ≤ cut i
	spread  []bool   // cut i is a heavy hitter
}

// NumBuckets returns B, the number of non-null buckets: ranks are 0 (NULL)
// and 1..B, and B < 2^Bits().
func (b *Boundaries) NumBuckets() int { return b.buckets }

// Bits returns the rank width the boundaries were built for.
func (b *Boundaries) Bits() int { return b.bits }

// NumCuts returns the number of distinct cut points.
func (b *Boundaries) NumCuts() int { return len(b.cum) }

// lowerBound returns the number of elements of the sorted slice d that are
// less than key. The loop has a fixed trip count for a given len(d).
func lowerBound[K cmp.Ordered](d []K, key K) int {
	n := len(d)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		if d[base+half-1] < key {
			base += half
		}
		n -= half
	}
	if d[base] < key {
		base++
	}
	return base
}

// lowerBoundWord is lowerBound for word keys without a branch on the
// comparison: the borrow of d[i] - key is 1 exactly when d[i] < key, and
// becomes an all-ones mask. (The Go compiler emits a conditional jump for the
// if-form, which mispredicts half the time on random keys.)
func lowerBoundWord(d []uint64, key uint64) int {
	n := len(d)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		_, lt := bits.Sub64(d[base+half-1], key, 0)
		base += half & -int(lt)
		n -= half
	}
	_, lt := bits.Sub64(d[base], key, 0)
	return base + int(lt)
}

// lowerBound4 is lowerBoundWord for four keys in lockstep.
func lowerBound4(d []uint64, keys *[4]uint64, out *[4]int) {
	n := len(d)
	if n == 0 {
		*out = [4]int{}
		return
	}
	var b0, b1, b2, b3 int
	k0, k1, k2, k3 := keys[0], keys[1], keys[2], keys[3]
	for n > 1 {
		half := n >> 1
		_, l0 := bits.Sub64(d[b0+half-1], k0, 0)
		_, l1 := bits.Sub64(d[b1+half-1], k1, 0)
		_, l2 := bits.Sub64(d[b2+half-1], k2, 0)
		_, l3 := bits.Sub64(d[b3+half-1], k3, 0)
		b0 += half & -int(l0)
		b1 += half & -int(l1)
		b2 += half & -int(l2)
		b3 += half & -int(l3)
		n -= half
	}
	_, l0 := bits.Sub64(d[b0], k0, 0)
	_, l1 := bits.Sub64(d[b1], k1, 0)
	_, l2 := bits.Sub64(d[b2], k2, 0)
	_, l3 := bits.Sub64(d[b3], k3, 0)
	*out = [4]int{b0 + int(l0), b1 + int(l1), b2 + int(l2), b3 + int(l3)}
}

// searchString locates key among the string cut points. The cut points'
// common prefix is compared once: a key without it sorts before or after all
// of them, and a key with it is searched by its suffix only, which keeps
// columns whose values share a long prefix (URLs, padded ids) as cheap as
// short strings.
func (b *Boundaries) searchString(key string) (j int, eq bool) {
	p := b.prefix
	if len(key) < len(p) || key[:len(p)] != p {
		if key < p {
			return 0, false
		}
		return len(b.strs), false
	}
	suf := key[len(p):]
	// Search the first 8 bytes as integers (branch-free), then settle ties
	// among cut points with the same head by comparing whole strings.
	h := headWord(suf)
	j = lowerBoundWord(b.heads, h)
	if j < len(b.heads) && b.heads[j] == h {
		end := len(b.heads)
		if h != ^uint64(0) {
			end = lowerBoundWord(b.heads, h+1)
		}
		j += lowerBound(b.strs[j:end], suf)
	}
	return j, j < len(b.strs) && b.strs[j] == suf
}

// headWord returns the first 8 bytes of s as a big-endian integer, zero
// padded. headWord(a) < headWord(b) implies a < b; equal heads say nothing.
func headWord(s string) uint64 {
	if len(s) >= 8 {
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	var w uint64
	for i := 0; i < 8; i++ {
		w <<= 8
		if i < len(s) {
			w |= uint64(s[i])
		}
	}
	return w
}

// mix is the SplitMix64 finaliser, the row-position hash of the tie-breaker.
func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// rankAt turns a search result into a rank: j = number of distinct cuts below
// the value, eq = the value equals cut j.
func (b *Boundaries) rankAt(j int, eq bool, row int64) uint32 {
	var below uint32
	if j > 0 {
		below = b.cum[j-1]
	}
	if !eq {
		return 1 + below
	}
	c := b.cum[j]
	if !b.spread[j] {
		return 1 + c
	}
	width := uint64(c-below) + 1
	hi, _ := bits.Mul64(mix(uint64(row)), width)
	return 1 + below + uint32(hi)
}

// spanAt is rankAt's range: the smallest and largest rank a value can get.
func (b *Boundaries) spanAt(j int, eq bool) (lo, hi uint32) {
	var below uint32
	if j > 0 {
		below = b.cum[j-1]
	}
	switch {
	case !eq:
		return 1 + below, 1 + below
	case !b.spread[j]:
		return 1 + b.cum[j], 1 + b.cum[j]
	}
	return 1 + below, 1 + b.cum[j]
}

// checkArray verifies that arr has the column's type.
func (b *Boundaries) checkArray(arr arrow.Array) error {
	if b.typ != nil {
		if !arrow.TypeEqual(b.typ, arr.DataType()) {
			return fmt.Errorf("%w: array of type %s, boundaries built for %s", ErrTypeMismatch, arr.DataType(), b.typ)
		}
		return nil
	}
	enc, scale, err := encodingOf(arr.DataType())
	if err != nil {
		return err
	}
	if b.enc != encNone && (enc != b.enc || (enc == encDec128 && scale != b.scale)) {
		return fmt.Errorf("%w: array of type %s, boundaries built for a %s column", ErrTypeMismatch, arr.DataType(), b.enc)
	}
	return nil
}

// Ranks writes the rank of every element of arr into out (len(out) ==
// arr.Len()). rowOffset is the position of arr's first row in the data set;
// it only feeds the heavy-hitter tie-breaker, so that the same row always
// gets the same rank (R3).
func (b *Boundaries) Ranks(arr arrow.Array, rowOffset int64, out []uint32) error {
	if err := b.checkArray(arr); err != nil {
		return err
	}
	n := arr.Len()
	if len(out) != n {
		return fmt.Errorf("%w: %d outputs for %d values", ErrShape, len(out), n)
	}
	hasNulls := arr.NullN() > 0
	enc, _, _ := encodingOf(arr.DataType())
	if enc.wordKeys() {
		var buf [chunk]uint64
		for off := 0; off < n; off += chunk {
			keys := buf[:min(chunk, n-off)]
			wordKeysOf(arr, off, keys)
			o := out[off : off+len(keys)]
			i := 0
			// Four searches in lockstep: the trip count depends only on
			// len(b.words), and four independent chains of loads overlap
			// instead of waiting on each other's cache misses.
			for ; i+3 < len(keys); i += 4 {
				var j [4]int
				lowerBound4(b.words, (*[4]uint64)(keys[i:i+4]), &j)
				for q := 0; q < 4; q++ {
					k := keys[i+q]
					jq := j[q]
					o[i+q] = b.rankAt(jq, jq < len(b.words) && b.words[jq] == k, rowOffset+int64(off+i+q))
				}
			}
			for ; i < len(keys); i++ {
				k := keys[i]
				j := lowerBoundWord(b.words, k)
				o[i] = b.rankAt(j, j < len(b.words) && b.words[j] == k, rowOffset+int64(off+i))
			}
		}
	} else {
		key := bytesKeyer(arr)
		for i := range out {
			k := key(i)
			j, eq := b.searchString(k)
			out[i] = b.rankAt(j, eq, rowOffset+int64(i))
		}
	}
	if hasNulls {
		for i := range out {
			if arr.IsNull(i) {
				out[i] = 0
			}
		}
	}
	return nil
}

// search locates a value among the cut points.
func (b *Boundaries) search(v value.Value) (j int, eq bool, err error) {
	enc := b.enc
	if enc == encNone {
		// Built from an empty sample: every non-null value is in bucket 1.
		if _, err := encodingOfValue(v); err != nil {
			return 0, false, err
		}
		return 0, false, nil
	}
	w, s, err := valueKey(v, enc, b.scale)
	if err != nil {
		return 0, false, err
	}
	if enc.wordKeys() {
		j = lowerBoundWord(b.words, w)
		return j, j < len(b.words) && b.words[j] == w, nil
	}
	j, eq = b.searchString(s)
	return j, eq, nil
}

// Rank returns the rank of one value at row position row: the value-based
// path for tests and small inputs. NULL ranks 0.
func (b *Boundaries) Rank(v value.Value, row int64) (uint32, error) {
	if v.IsNull() {
		return 0, nil
	}
	j, eq, err := b.search(v)
	if err != nil {
		return 0, err
	}
	return b.rankAt(j, eq, row), nil
}

// Span returns the smallest and largest rank v can get over all row
// positions; lo == hi except for heavy hitters. Spans of different values
// are ordered: if a < b then hi(a) ≤ lo(b) (R2). NULL spans [0, 0].
func (b *Boundaries) Span(v value.Value) (lo, hi uint32, err error) {
	if v.IsNull() {
		return 0, 0, nil
	}
	j, eq, err := b.search(v)
	if err != nil {
		return 0, 0, err
	}
	lo, hi = b.spanAt(j, eq)
	return lo, hi, nil
}
