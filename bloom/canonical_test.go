package bloom

import (
	"bytes"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/value"
)

func le8(x uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(x >> (8 * i))
	}
	return b
}

func TestAppendCanonical(t *testing.T) {
	otherNaN := math.Float64frombits(0x7ff0000000000001)
	negNaN := math.Float64frombits(0xfff8000000000000)
	tests := []struct {
		name string
		v    value.Value
		want []byte
	}{
		{"int64 is 8 bytes little-endian", value.Int64(0x0102), le8(0x0102)},
		{"negative int64 is two's complement", value.Int64(-1), le8(math.MaxUint64)},
		{"date is days as int64", value.Date(19000), le8(19000)},
		{"timestamp is micros as int64", value.Timestamp(1_700_000_000_000_000), le8(1_700_000_000_000_000)},
		{"timestamp_ntz is micros as int64", value.TimestampNTZ(-5), le8(uint64(0xfffffffffffffffb))},
		{"float is float64 bits", value.Float64(1.5), le8(math.Float64bits(1.5))},
		{"negative zero folds to positive zero", value.Float64(math.Copysign(0, -1)), le8(0)},
		{"quiet NaN is canonical", value.Float64(math.NaN()), le8(canonicalNaNBits)},
		{"signalling NaN payload folds to canonical", value.Float64(otherNaN), le8(canonicalNaNBits)},
		{"negative NaN folds to canonical", value.Float64(negNaN), le8(canonicalNaNBits)},
		{"decimal is 16 bytes LE unscaled", value.Decimal(decimal128.FromI64(12345), 10, 2),
			append(le8(12345), le8(0)...)},
		{"negative decimal sign-extends", value.Decimal(decimal128.FromI64(-2), 10, 2),
			append(le8(math.MaxUint64-1), le8(math.MaxUint64)...)},
		{"string is raw UTF-8", value.String("héllo"), []byte("héllo")},
		{"empty string is empty", value.String(""), []byte{}},
		{"binary is raw", value.Binary([]byte{0, 0xff}), []byte{0, 0xff}},
		{"true is one byte 1", value.Bool(true), []byte{1}},
		{"false is one byte 0", value.Bool(false), []byte{0}},
		{"null encodes nothing", value.Null(), []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendCanonical([]byte("pre"), tc.v)
			if !bytes.Equal(got[:3], []byte("pre")) {
				t.Fatalf("prefix clobbered: %x", got)
			}
			if !bytes.Equal(got[3:], tc.want) {
				t.Fatalf("AppendCanonical(%v) = %x, want %x", tc.v, got[3:], tc.want)
			}
		})
	}
}

func TestRescaleExact(t *testing.T) {
	big38 := decimal128.GetMaxValue(38)
	tests := []struct {
		name     string
		n        int64
		from, to int32
		want     int64
		ok       bool
	}{
		{"same scale is identity", 123, 2, 2, 123, true},
		{"scale up multiplies", 123, 1, 3, 12300, true},
		{"scale down drops zeros", 12300, 3, 1, 123, true},
		{"scale down with digits fails", 12345, 3, 1, 0, false},
		{"negative scale down", -500, 2, 0, -5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := rescaleExact(decimal128.FromI64(tc.n), tc.from, tc.to)
			if ok != tc.ok || (ok && got != decimal128.FromI64(tc.want)) {
				t.Fatalf("rescaleExact(%d, %d→%d) = %v,%v want %d,%v", tc.n, tc.from, tc.to, got.BigInt(), ok, tc.want, tc.ok)
			}
		})
	}
	t.Run("overflow beyond 128 bits fails", func(t *testing.T) {
		if _, ok := rescaleExact(big38, 0, 10); ok {
			t.Fatal("rescaling 10^38-1 by 10^10 should not fit in 128 bits")
		}
	})
}
