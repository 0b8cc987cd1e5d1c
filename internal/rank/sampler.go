package rank

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

// DefaultSampleSize is the reservoir size NewSampler uses when k ≤ 0.
const DefaultSampleSize = 1 << 16

// Sampler keeps a uniform random sample of at most k non-null values of one
// column (reservoir sampling, Vitter's algorithm R) and counts the rows it was
// shown. It is deterministic (R3): the sample depends only on the seed and the
// sequence of values, not on how they are split into arrays. A Sampler is not
// safe for concurrent use; it retains no Arrow memory (values are copied into
// keys), so callers may release arrays right after Add.
type Sampler struct {
	k       int
	rng     *rand.Rand
	enc     encoding
	scale   int32
	typ     arrow.DataType // nil until an array was added
	rows    int64          // rows seen, nulls included
	nonNull int64          // non-null values seen
	words   []uint64       // sample keys, word encodings
	strs    []string       // sample keys, bytes encodings
	buf     []uint64
}

// NewSampler returns a Sampler that keeps up to k values (DefaultSampleSize
// when k ≤ 0), drawing from a PCG generator seeded with seed.
func NewSampler(k int, seed uint64) *Sampler {
	if k <= 0 {
		k = DefaultSampleSize
	}
	return &Sampler{k: k, rng: rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))}
}

// Rows returns the number of rows added, nulls included.
func (s *Sampler) Rows() int64 { return s.rows }

// NonNull returns the number of non-null values added.
func (s *Sampler) NonNull() int64 { return s.nonNull }

// SampleSize returns the number of values currently in the sample.
func (s *Sampler) SampleSize() int {
	if s.enc.wordKeys() {
		return len(s.words)
	}
	return len(s.strs)
}

// lock fixes the column's encoding on first use and checks it afterwards.
func (s *Sampler) lock(enc encoding, scale int32, what string) error {
	if s.enc == encNone {
		s.enc, s.scale = enc, scale
		return nil
	}
	if s.enc != enc || (enc == encDec128 && s.scale != scale) {
		return fmt.Errorf("%w: %s does not match the sampled %s column", ErrTypeMismatch, what, s.enc)
	}
	return nil
}

// slot returns where the next non-null value goes in the reservoir, or -1
// when it is not sampled.
func (s *Sampler) slot() int {
	t := s.nonNull
	s.nonNull++
	if t < int64(s.k) {
		return int(t)
	}
	j := s.rng.Int64N(t + 1)
	if j < int64(s.k) {
		return int(j)
	}
	return -1
}

// Add samples the values of arr. Every array added to one Sampler must have
// the same Arrow type (timestamps of different units or zones differ).
func (s *Sampler) Add(arr arrow.Array) error {
	if s.typ != nil && !arrow.TypeEqual(s.typ, arr.DataType()) {
		return fmt.Errorf("%w: array of type %s, sampler holds %s", ErrTypeMismatch, arr.DataType(), s.typ)
	}
	enc, scale, err := encodingOf(arr.DataType())
	if err != nil {
		return err
	}
	if err := s.lock(enc, scale, "array of type "+arr.DataType().String()); err != nil {
		return err
	}
	s.typ = arr.DataType()
	n := arr.Len()
	s.rows += int64(n)
	hasNulls := arr.NullN() > 0
	if enc.wordKeys() {
		if cap(s.buf) < chunk {
			s.buf = make([]uint64, chunk)
		}
		for off := 0; off < n; off += chunk {
			keys := s.buf[:min(chunk, n-off)]
			wordKeysOf(arr, off, keys)
			for i, key := range keys {
				if hasNulls && arr.IsNull(off+i) {
					continue
				}
				switch j := s.slot(); {
				case j == len(s.words):
					s.words = append(s.words, key)
				case j >= 0:
					s.words[j] = key
				}
			}
		}
		return nil
	}
	key := bytesKeyer(arr)
	for i := 0; i < n; i++ {
		if hasNulls && arr.IsNull(i) {
			continue
		}
		switch j := s.slot(); {
		case j == len(s.strs):
			s.strs = append(s.strs, strings.Clone(key(i)))
		case j >= 0:
			s.strs[j] = strings.Clone(key(i))
		}
	}
	return nil
}

// AddValue samples one value: the simple path for tests and for callers
// without Arrow arrays. A NULL counts as a row. The value's kind must match
// the column (integers, dates, timestamps and booleans share one encoding;
// decimals must keep one scale).
func (s *Sampler) AddValue(v value.Value) error {
	if v.IsNull() {
		s.rows++
		return nil
	}
	if s.enc == encNone {
		e, err := encodingOfValue(v)
		if err != nil {
			return err
		}
		_, _, sc := v.AsDecimal() // scale 0 for other kinds
		s.enc, s.scale = e, sc
	}
	enc := s.enc
	w, str, err := valueKey(v, enc, s.scale)
	if err != nil {
		return err
	}
	s.rows++
	switch j := s.slot(); {
	case j < 0:
	case enc.wordKeys() && j == len(s.words):
		s.words = append(s.words, w)
	case enc.wordKeys():
		s.words[j] = w
	case j == len(s.strs):
		s.strs = append(s.strs, str)
	default:
		s.strs[j] = str
	}
	return nil
}

// Boundaries builds equal-frequency bucket boundaries from the sample for
// ranks of the given width (1..32 bits). The sample is not consumed; more
// values may be added and Boundaries called again.
//
// The number of non-null buckets B is
//
//	B = max(1, min(2^bits − 1, n / per))
//
// where n is the sample size and per = 1 when the sample holds every non-null
// value seen (the quantiles are exact, so every sample value may get its own
// rank) and per = MinSamplesPerBucket otherwise. Resolution therefore grows
// with the data up to what the bits allow. Per-bucket frequencies estimated
// from MinSamplesPerBucket points are noisy (±1/√4 relative), but consumers
// range-partition keys into files spanning many buckets, whose sizes average
// the noise out; fewer, larger buckets would instead make whole files
// indistinguishable on that column.
func (s *Sampler) Boundaries(bits int) (*Boundaries, error) {
	if bits < 1 || bits > 32 {
		return nil, fmt.Errorf("%w: %d, want 1..32", ErrBits, bits)
	}
	n := s.SampleSize()
	per := MinSamplesPerBucket
	if s.nonNull <= int64(s.k) {
		per = 1
	}
	b := int64(n / per)
	b = min(b, int64(1)<<uint(bits)-1)
	b = max(b, 1)
	bd := &Boundaries{typ: s.typ, enc: s.enc, scale: s.scale, buckets: int(b), bits: bits}
	if s.enc.wordKeys() {
		sorted := slices.Clone(s.words)
		slices.Sort(sorted)
		bd.words, bd.cum, bd.spread = cuts(sorted, int(b))
	} else {
		sorted := slices.Clone(s.strs)
		slices.Sort(sorted)
		bd.strs, bd.cum, bd.spread = cuts(sorted, int(b))
		if len(bd.strs) > 1 {
			// Sorted, so the first and last cut share the common prefix of all.
			first, last := bd.strs[0], bd.strs[len(bd.strs)-1]
			n := 0
			for n < len(first) && n < len(last) && first[n] == last[n] {
				n++
			}
			bd.prefix = first[:n]
			for i, c := range bd.strs {
				bd.strs[i] = c[n:]
			}
		}
		bd.heads = make([]uint64, len(bd.strs))
		for i, c := range bd.strs {
			bd.heads[i] = headWord(c)
		}
	}
	return bd, nil
}

// MinSamplesPerBucket is the number of sample values behind each bucket when
// the sample is a strict subset of the data (see Sampler.Boundaries).
const MinSamplesPerBucket = 4

// cuts picks the b-1 equal-frequency cut points of a sorted sample,
// sorted[⌊j·n/b⌋] for j = 1..b-1, and returns them as distinct values with
// cum[i] = number of cut points ≤ distinct[i] and spread[i] set when
// distinct[i] alone fills more than one bucket's worth of the sample (a heavy
// hitter, R4).
func cuts[K cmp.Ordered](sorted []K, b int) (distinct []K, cum []uint32, spread []bool) {
	n := len(sorted)
	if n == 0 {
		return nil, nil, nil
	}
	for j := 1; j < b; j++ {
		c := sorted[int(int64(j)*int64(n)/int64(b))]
		if len(distinct) > 0 && distinct[len(distinct)-1] == c {
			cum[len(cum)-1]++
			continue
		}
		distinct = append(distinct, c)
		cum = append(cum, uint32(j))
	}
	spread = make([]bool, len(distinct))
	for i, c := range distinct {
		lo, _ := slices.BinarySearch(sorted, c)
		hi := lo + sort.Search(n-lo, func(k int) bool { return sorted[lo+k] > c })
		// count > n/b, in integers.
		spread[i] = int64(hi-lo)*int64(b) > int64(n)
	}
	return distinct, cum, spread
}
