package bloom

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/cespare/xxhash/v2"

	"github.com/skiplake/skiplake/value"
)

// canonicalNaNBits is the one bit pattern every NaN is encoded as (the quiet NaN
// with an all-zero payload, Java's Double.NaN).
const canonicalNaNBits = 0x7ff8000000000000

// AppendCanonical appends the canonical byte encoding of v to dst and returns the
// extended slice. The encoding is the one hashed into filters when a file is
// written and when a literal is probed (see the table in the package doc):
//
//   - KindInt64, KindDate: int64, 8 bytes little-endian
//   - KindTimestamp, KindTimestampNTZ: microseconds as int64, 8 bytes little-endian
//   - KindFloat64: float64 bits, 8 bytes little-endian, -0 written as +0 and every NaN
//     as 0x7ff8000000000000
//   - KindDecimal: the unscaled integer at the value's own scale, 16 bytes
//     little-endian two's complement (low word first)
//   - KindString, KindBinary: the raw bytes
//   - KindBool: one byte, 0 or 1
//   - KindNull: nothing (NULL is never indexed)
//
// No type tag is written: literals are coerced to the column's type before probing
// (and Filter refuses to answer "absent" for a literal of another kind), so two
// kinds never meet in one filter.
func AppendCanonical(dst []byte, v value.Value) []byte {
	switch v.Kind() {
	case value.KindInt64, value.KindDate, value.KindTimestamp, value.KindTimestampNTZ:
		return binary.LittleEndian.AppendUint64(dst, uint64(v.AsInt64()))
	case value.KindFloat64:
		return binary.LittleEndian.AppendUint64(dst, canonicalFloatBits(v.AsFloat64()))
	case value.KindDecimal:
		n, _, _ := v.AsDecimal()
		return appendDecimal(dst, n)
	case value.KindString, value.KindBinary:
		return append(dst, v.AsString()...)
	case value.KindBool:
		if v.AsBool() {
			return append(dst, 1)
		}
		return append(dst, 0)
	}
	return dst
}

// canonicalFloatBits returns the bits of f with -0 folded into +0 and all NaNs
// folded into one pattern.
func canonicalFloatBits(f float64) uint64 {
	switch {
	case f != f:
		return canonicalNaNBits
	case f == 0:
		return 0
	}
	return math.Float64bits(f)
}

func appendDecimal(dst []byte, n decimal128.Num) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, n.LowBits())
	return binary.LittleEndian.AppendUint64(dst, uint64(n.HighBits()))
}

// keyHash is the 64-bit XXH64 digest of canonical bytes. Filters store this digest
// (as 8 little-endian bytes) rather than the canonical bytes themselves, which is
// what lets a Builder size its filter from the exact distinct count at Finish.
func keyHash(canonical []byte) uint64 { return xxhash.Sum64(canonical) }

// hashValue returns keyHash(AppendCanonical(scratch[:0], v)) and the grown scratch.
func hashValue(scratch []byte, v value.Value) (uint64, []byte) {
	scratch = AppendCanonical(scratch[:0], v)
	return keyHash(scratch), scratch
}

var maxDecimal128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
var minDecimal128 = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))

// rescaleExact converts the unscaled decimal n from scale `from` to scale `to`.
// ok is false when the value has no exact representation at the new scale
// (non-zero digits would be dropped) or does not fit in 128 bits.
func rescaleExact(n decimal128.Num, from, to int32) (decimal128.Num, bool) {
	if from == to {
		return n, true
	}
	b := n.BigInt()
	if to > from {
		b.Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(to-from)), nil))
	} else {
		q, r := new(big.Int).QuoRem(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(from-to)), nil), new(big.Int))
		if r.Sign() != 0 {
			return decimal128.Num{}, false
		}
		b = q
	}
	if b.Cmp(maxDecimal128) > 0 || b.Cmp(minDecimal128) < 0 {
		return decimal128.Num{}, false
	}
	return decimal128.FromBigInt(b), true
}
