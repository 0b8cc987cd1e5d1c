package optimize

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/hilbert"
	"github.com/skiplake/skiplake/internal/rank"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/zorder"
)

// sampleSeed seeds the rank samplers: runs over the same data give the same layout.
const sampleSeed = 0x5b1e_1a4e

// keyBits is the rank width per column for n clustering columns: the key is one
// uint64, so n columns get 64/n bits each (at most 32).
func keyBits(n int) int {
	b := 64 / n
	if b > 32 {
		b = 32
	}
	return b
}

// samplers draws one rank sample per clustering column.
type samplers []*rank.Sampler

func newSamplers(n int) samplers {
	s := make(samplers, n)
	for i := range s {
		s[i] = rank.NewSampler(0, sampleSeed+uint64(i))
	}
	return s
}

// add samples the clustering columns (cols[i] for sampler i).
func (s samplers) add(cols []arrow.Array) error {
	for i, c := range cols {
		if err := s[i].Add(c); err != nil {
			return fmt.Errorf("optimize: sampling clustering column %d: %w", i, err)
		}
	}
	return nil
}

// keyer turns the clustering columns of a batch into one uint64 sort key per row.
// Ranks (0 for NULL, 1..B by equal-frequency buckets) are stretched to the full
// rank width before they are combined, so that a low-cardinality column still
// takes part in the top bits of a Morton or Hilbert key instead of sinking to its
// least significant interleave levels. A keyer is safe for concurrent use.
type keyer struct {
	curve  Curve
	bits   int
	bounds []*rank.Boundaries
	z      *zorder.Encoder
	h      *hilbert.Curve
}

func newKeyer(curve Curve, s samplers) (*keyer, error) {
	n := len(s)
	k := &keyer{curve: curve, bits: keyBits(n)}
	for i, sm := range s {
		b, err := sm.Boundaries(k.bits)
		if err != nil {
			return nil, fmt.Errorf("optimize: rank boundaries of clustering column %d: %w", i, err)
		}
		k.bounds = append(k.bounds, b)
	}
	var err error
	if n > 1 {
		switch curve {
		case CurveZOrder:
			k.z, err = zorder.NewEncoder(n, k.bits)
		case CurveHilbert:
			k.h, err = hilbert.New(n, k.bits)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	return k, nil
}

// keys writes the key of every row of the batch whose clustering columns are cols
// into out. rowOffset is the position of the batch's first row in the bin (it feeds
// the heavy-hitter tie-breaker of the ranks). scratch is reused between calls.
func (k *keyer) keys(cols []arrow.Array, rowOffset int64, out []uint64, scratch [][]uint32) ([][]uint32, error) {
	n := len(out)
	if len(scratch) != len(cols) {
		scratch = make([][]uint32, len(cols))
	}
	maxRank := uint64(1)<<k.bits - 1
	for c, arr := range cols {
		if cap(scratch[c]) < n {
			scratch[c] = make([]uint32, n)
		}
		r := scratch[c][:n]
		scratch[c] = r
		if err := k.bounds[c].Ranks(arr, rowOffset, r); err != nil {
			return scratch, fmt.Errorf("optimize: ranking clustering column %d: %w", c, err)
		}
		if b := uint64(k.bounds[c].NumBuckets()); b > 0 && b < maxRank {
			for i, v := range r {
				r[i] = uint32(uint64(v) * maxRank / b)
			}
		}
	}
	switch {
	case len(cols) == 1:
		for i, v := range scratch[0] {
			out[i] = uint64(v)
		}
	case k.curve == CurveZOrder:
		if err := k.z.EncodeBatch64(scratch, out); err != nil {
			return scratch, fmt.Errorf("optimize: %w", err)
		}
	case k.curve == CurveHilbert:
		if err := k.h.EncodeBatch64(scratch, out); err != nil {
			return scratch, fmt.Errorf("optimize: %w", err)
		}
	default: // CurveLinear: ranks concatenated, first column most significant
		for i := range out {
			var key uint64
			for c := range scratch {
				key = key<<k.bits | uint64(scratch[c][i])
			}
			out[i] = key
		}
	}
	return scratch, nil
}

// tieBreak orders rows whose keys are equal by their clustering values (NULL first,
// then each column in order, floats in Spark order), so that files come out sorted
// by value and not only by rank: a rank bucket may hold several values, and
// heavy-hitter spreading can give two neighbouring values the same rank.
type tieBreak struct {
	cols []arrow.Array
}

func (t tieBreak) compare(i, j int) int {
	for _, a := range t.cols {
		if c := compareAt(a, i, j); c != 0 {
			return c
		}
	}
	return 0
}

// compareAt compares rows i and j of one array; NULL sorts first.
func compareAt(a arrow.Array, i, j int) int {
	ni, nj := a.IsNull(i), a.IsNull(j)
	switch {
	case ni && nj:
		return 0
	case ni:
		return -1
	case nj:
		return 1
	}
	switch x := a.(type) {
	case *array.Int8:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Int16:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Int32:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Int64:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Uint8:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Uint16:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Uint32:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Uint64:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Float32:
		return value.CompareFloat(float64(x.Value(i)), float64(x.Value(j)))
	case *array.Float64:
		return value.CompareFloat(x.Value(i), x.Value(j))
	case *array.Date32:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Date64:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Timestamp:
		return cmp.Compare(x.Value(i), x.Value(j))
	case *array.Boolean:
		return cmp.Compare(b2i(x.Value(i)), b2i(x.Value(j)))
	case *array.Decimal128:
		return x.Value(i).Cmp(x.Value(j))
	case *array.String:
		return strings.Compare(x.Value(i), x.Value(j))
	case *array.LargeString:
		return strings.Compare(x.Value(i), x.Value(j))
	case *array.Binary:
		return bytes.Compare(x.Value(i), x.Value(j))
	case *array.LargeBinary:
		return bytes.Compare(x.Value(i), x.Value(j))
	case *array.FixedSizeBinary:
		return bytes.Compare(x.Value(i), x.Value(j))
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortKeyed sorts pairs by key, then by the clustering values of src (whose row
// positions the pairs hold), then by position: a total order, so the result is the
// same however it is computed. With par > 1 it sorts par parts of the slice
// concurrently and merges them (the merge is sequential: a fifth of the sort).
func sortKeyed(ctx context.Context, pairs []keyed, tb tieBreak, par int) {
	less := func(a, b keyed) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := tb.compare(int(a.pos), int(b.pos)); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	}
	parts := min(max(par, 1), 8)
	if parts == 1 || len(pairs) < 1<<16 {
		slices.SortFunc(pairs, less)
		return
	}
	bounds := make([]int, parts+1)
	for i := range bounds {
		bounds[i] = len(pairs) * i / parts
	}
	_ = parallel(ctx, parts, parts, func(_ context.Context, i int) error {
		slices.SortFunc(pairs[bounds[i]:bounds[i+1]], less)
		return nil
	})
	// Merge the sorted parts pairwise until one is left.
	buf := make([]keyed, len(pairs))
	src, dst := pairs, buf
	for len(bounds) > 2 {
		var next []int
		for i := 0; i+1 < len(bounds); i += 2 {
			lo := bounds[i]
			if i+2 >= len(bounds) {
				copy(dst[lo:], src[lo:bounds[i+1]])
				next = append(next, lo)
				continue
			}
			mergeKeyed(dst[lo:bounds[i+2]], src[lo:bounds[i+1]], src[bounds[i+1]:bounds[i+2]], less)
			next = append(next, lo)
		}
		bounds = append(next, len(pairs))
		src, dst = dst, src
	}
	if &src[0] != &pairs[0] {
		copy(pairs, src)
	}
}

// mergeKeyed merges the sorted a and b into dst (len(a)+len(b)).
func mergeKeyed(dst, a, b []keyed, less func(x, y keyed) int) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if less(b[j], a[i]) < 0 {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}
