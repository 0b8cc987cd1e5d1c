package bloom

import (
	"encoding/binary"
	"math"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/skiplake/skiplake/value"
)

// Filter is the Bloom filter of one column of one data file. It answers
// "might this file hold a row whose column equals v?": false is definite (the file
// can be skipped for `col = v`), true may be a false positive.
//
// The filter's key for a value is the 8-byte little-endian XXH64 digest of the
// value's canonical bytes (AppendCanonical); that key goes through bloom/v3's
// Murmur3 double hashing into m bits with k probes.
//
// A Filter is immutable once built or read and safe for concurrent use.
type Filter struct {
	column   string
	kind     value.Kind // KindNull for a filter that holds no value
	scale    int32      // decimal scale when kind is KindDecimal
	distinct uint64
	bf       *bloom.BloomFilter
}

// Column returns the column the filter indexes.
func (f *Filter) Column() string { return f.column }

// Kind returns the kind of the indexed values; KindNull when the filter holds none
// (an empty or all-NULL column).
func (f *Filter) Kind() value.Kind { return f.kind }

// Scale returns the decimal scale of the indexed values (0 unless Kind is KindDecimal).
func (f *Filter) Scale() int32 { return f.scale }

// Distinct returns the number of distinct values the filter was built from.
func (f *Filter) Distinct() uint64 { return f.distinct }

// Bits returns m, the size of the filter in bits.
func (f *Filter) Bits() uint { return f.bf.Cap() }

// K returns the number of hash probes per value.
func (f *Filter) K() uint { return f.bf.K() }

// EstimatedFPP returns the theoretical false-positive probability of this filter for
// its actual m, k and distinct count: (1 - e^(-k·n/m))^k.
func (f *Filter) EstimatedFPP() float64 {
	m, k, n := float64(f.bf.Cap()), float64(f.bf.K()), float64(f.distinct)
	return math.Pow(1-math.Exp(-k*n/m), k)
}

// MightContain reports whether the file might hold a row whose column equals v.
// It is false only when no such row exists. v should be coerced to the column's
// type first; a literal of another kind gets the conservative answer true, and a
// decimal literal is rescaled to the column's scale (a literal with no exact
// representation at that scale cannot be present). A NULL literal answers true:
// NULLs are not indexed. A nil Filter (file not covered) answers true.
func (f *Filter) MightContain(v value.Value) bool {
	if f == nil || v.IsNull() {
		return true
	}
	v, verdict, decided := f.coerce(v)
	if decided {
		return verdict
	}
	var scratch [32]byte
	h, _ := hashValue(scratch[:0], v)
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], h)
	return f.bf.Test(key[:])
}

// coerce applies the kind rules of MightContain to a non-null literal: decided is
// true when they settle the answer (verdict) without testing bits; otherwise the
// returned value (rescaled to the filter's decimal scale if need be) is to be tested.
func (f *Filter) coerce(v value.Value) (out value.Value, verdict, decided bool) {
	switch {
	case f.kind == value.KindNull:
		return v, false, true // the file holds no non-null value in this column
	case f.kind != v.Kind():
		return v, true, true // not coerced to the column type: cannot judge, never skip
	case f.kind == value.KindDecimal:
		n, prec, scale := v.AsDecimal()
		if scale != f.scale {
			r, ok := rescaleExact(n, scale, f.scale)
			if !ok {
				return v, false, true // no value of the column's scale equals the literal
			}
			return value.Decimal(r, prec, f.scale), false, false
		}
	}
	return v, false, false
}

// MightContainProbe is MightContain for a precomputed Probe: it only tests bits, so
// one literal can be tested against many filters cheaply.
func (f *Filter) MightContainProbe(p *Probe) bool {
	if f == nil || p.v.IsNull() {
		return true
	}
	if f.kind != p.v.Kind() || (f.kind == value.KindDecimal && p.v.Kind() == value.KindDecimal && !p.sameScale(f.scale)) {
		return f.MightContain(p.v) // slow path: kind rules or decimal rescaling
	}
	return f.bf.TestLocations(p.locs[:f.bf.K()])
}

// MightContainAny reports whether the file might hold a row equal to any of the
// probes (an IN list). An empty list answers false, except that a nil Filter
// (file not covered) always answers true.
func (f *Filter) MightContainAny(probes []Probe) bool {
	if f == nil {
		return true
	}
	for i := range probes {
		if f.MightContainProbe(&probes[i]) {
			return true
		}
	}
	return false
}

// ProbeAny reports whether filter might contain any of values (`col IN (...)`).
// For many filters, build the probes once with NewProbes and use MightContainAny.
func ProbeAny(filter *Filter, values []value.Value) bool {
	if filter == nil {
		return true
	}
	for _, v := range values {
		if filter.MightContain(v) {
			return true
		}
	}
	return false
}

// Probe is a literal with its filter locations precomputed (for every k up to MaxK;
// a filter with k probes uses the first k). Building a Probe hashes the literal
// once; testing it against a filter only reads k bits. A Probe is immutable and
// safe for concurrent use.
type Probe struct {
	v    value.Value
	locs [MaxK]uint64
}

// NewProbe precomputes the locations of v.
func NewProbe(v value.Value) Probe {
	p := Probe{v: v}
	if v.IsNull() {
		return p
	}
	h, _ := hashValue(make([]byte, 0, 16), v)
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], h)
	copy(p.locs[:], bloom.Locations(key[:], MaxK))
	return p
}

func (p *Probe) sameScale(scale int32) bool {
	_, _, s := p.v.AsDecimal()
	return s == scale
}

// Value returns the literal the probe was built from.
func (p *Probe) Value() value.Value { return p.v }

// NewProbes precomputes one Probe per value (for IN lists).
func NewProbes(values []value.Value) []Probe {
	ps := make([]Probe, len(values))
	for i, v := range values {
		ps[i] = NewProbe(v)
	}
	return ps
}
