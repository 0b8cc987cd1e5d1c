package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"

	"github.com/skiplake/skiplake/value"
)

const (
	// DefaultFPP is the false-positive probability used when NewBuilder is given 0.
	DefaultFPP = 0.01
	// MinFPP and MaxFPP bound the false-positive probability a Builder accepts.
	// Below MinFPP a filter needs more than MaxK hash functions; above MaxFPP a
	// filter skips too little to be worth a read.
	MinFPP = 1e-9
	// MaxFPP is the largest accepted false-positive probability.
	MaxFPP = 0.5
	// MaxK is the largest number of hash functions a filter may use (and that
	// ReadIndex accepts). A Probe precomputes this many locations.
	MaxK = 32
	// compactMin is the hash-buffer length below which a Builder never compacts.
	compactMin = 4096
)

// Builder collects the values of one column of one data file and builds its Filter.
//
// Sizing: the writer does not know a file's number of distinct values (NDV) in
// advance, so a Builder keeps the 64-bit XXH64 digest of every value's canonical
// bytes and sizes the filter at Finish from the exact distinct digest count. The
// digest buffer is sorted and deduplicated whenever it fills, so memory stays near
// 8-16 bytes per distinct value, bounded by the rows of one file.
//
// NULLs are skipped. All values must have one kind (and, for decimals, one scale);
// the first value fixes it.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	column  string
	fpp     float64
	kind    value.Kind // KindNull until the first non-null value
	scale   int32      // decimal scale, fixed by the first decimal
	hashes  []uint64
	sortBuf []uint64 // radix-sort scratch, reused across compactions
	scratch []byte
}

// NewBuilder returns a Builder for column. expectedNDV is only a capacity hint
// (0 = unknown); the filter is sized from the exact distinct count at Finish. fpp is
// the target false-positive probability; 0 means DefaultFPP, and anything else must
// lie in [MinFPP, MaxFPP].
func NewBuilder(column string, expectedNDV uint, fpp float64) (*Builder, error) {
	if column == "" {
		return nil, fmt.Errorf("%w: empty column name", ErrInvalidArgument)
	}
	if fpp == 0 {
		fpp = DefaultFPP
	}
	if !(fpp >= MinFPP && fpp <= MaxFPP) {
		return nil, fmt.Errorf("%w: column %q: false-positive probability %v outside [%v, %v]",
			ErrInvalidArgument, column, fpp, MinFPP, MaxFPP)
	}
	return &Builder{
		column: column,
		fpp:    fpp,
		hashes: make([]uint64, 0, min(expectedNDV, 1<<20)),
	}, nil
}

// Column returns the column name the Builder was created for.
func (b *Builder) Column() string { return b.column }

// Add adds one value. NULL is ignored. A value of a different kind (or decimal
// scale) than the earlier ones is rejected with ErrKindMismatch.
func (b *Builder) Add(v value.Value) error {
	if v.IsNull() {
		return nil
	}
	scale := int32(0)
	if v.Kind() == value.KindDecimal {
		_, _, scale = v.AsDecimal()
	}
	if err := b.setKind(v.Kind(), scale); err != nil {
		return err
	}
	var h uint64
	h, b.scratch = hashValue(b.scratch, v)
	b.push(h)
	return nil
}

func (b *Builder) setKind(k value.Kind, scale int32) error {
	switch {
	case b.kind == value.KindNull:
		b.kind, b.scale = k, scale
	case b.kind != k:
		return fmt.Errorf("%w: column %q holds %s values, got %s", ErrKindMismatch, b.column, b.kind, k)
	case k == value.KindDecimal && b.scale != scale:
		return fmt.Errorf("%w: column %q holds decimals of scale %d, got scale %d", ErrKindMismatch, b.column, b.scale, scale)
	}
	return nil
}

// push appends one digest, compacting (sort + dedupe) when the buffer is full.
func (b *Builder) push(h uint64) {
	if len(b.hashes) == cap(b.hashes) && len(b.hashes) >= compactMin {
		b.compact()
		if len(b.hashes) > cap(b.hashes)/2 {
			grown := make([]uint64, len(b.hashes), 2*cap(b.hashes))
			copy(grown, b.hashes)
			b.hashes = grown
		}
	}
	b.hashes = append(b.hashes, h)
}

func (b *Builder) compact() {
	b.sortBuf = sortDigests(b.hashes, b.sortBuf)
	b.hashes = slices.Compact(b.hashes)
}

// Distinct returns the number of distinct values added so far (exact up to 64-bit
// digest collisions).
func (b *Builder) Distinct() int {
	b.compact()
	return len(b.hashes)
}

// Finish builds the Filter for the values added so far. It sizes the filter for the
// exact distinct count n at the Builder's fpp (bloom.EstimateParameters; an empty
// Builder yields a 64-bit filter that contains nothing). The Builder stays usable:
// more values may be added and Finish called again.
func (b *Builder) Finish() (*Filter, error) {
	b.compact()
	n := uint(len(b.hashes))
	m, k := uint(64), uint(1)
	if n > 0 {
		m, k = bloom.EstimateParameters(n, b.fpp)
		// The bitset is allocated in 64-bit words anyway: using the whole last word
		// lowers the false-positive rate of small filters (a file with 16 keys gets
		// 192 bits instead of 154) at no cost in size.
		m = max((m+63)/64*64, 64)
		k = min(max(k, 1), MaxK)
	}
	bf := bloom.New(m, k)
	var key [8]byte
	for _, h := range b.hashes {
		binary.LittleEndian.PutUint64(key[:], h)
		bf.Add(key[:])
	}
	kind, scale := b.kind, b.scale
	if n == 0 {
		kind, scale = value.KindNull, 0
	}
	return &Filter{column: b.column, kind: kind, scale: scale, distinct: uint64(n), bf: bf}, nil
}

type intLike interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32
}

func addInts[T intLike](b *Builder, arr arrow.Array, vals []T) {
	var buf [8]byte
	nulls := arr.NullN() > 0
	for i, x := range vals {
		if nulls && arr.IsNull(i) {
			continue
		}
		binary.LittleEndian.PutUint64(buf[:], uint64(int64(x)))
		b.push(xxhash.Sum64(buf[:]))
	}
}

func addFloats[T float32 | float64](b *Builder, arr arrow.Array, vals []T) {
	var buf [8]byte
	nulls := arr.NullN() > 0
	for i, x := range vals {
		if nulls && arr.IsNull(i) {
			continue
		}
		binary.LittleEndian.PutUint64(buf[:], canonicalFloatBits(float64(x)))
		b.push(xxhash.Sum64(buf[:]))
	}
}

type strValuer interface {
	arrow.Array
	Value(i int) string
}

func addStrings(b *Builder, arr strValuer) {
	nulls := arr.NullN() > 0
	for i := 0; i < arr.Len(); i++ {
		if nulls && arr.IsNull(i) {
			continue
		}
		b.push(xxhash.Sum64String(arr.Value(i)))
	}
}

type binValuer interface {
	arrow.Array
	Value(i int) []byte
}

func addBinary(b *Builder, arr binValuer) {
	nulls := arr.NullN() > 0
	for i := 0; i < arr.Len(); i++ {
		if nulls && arr.IsNull(i) {
			continue
		}
		b.push(xxhash.Sum64(arr.Value(i)))
	}
}

// AddArray adds every non-null element of arr: the typed fast path of Add, producing
// exactly the digests Add would for the equivalent value.Value of each element.
//
// Supported types and the kind they index as: int8..int64 and uint8..uint32 →
// int64; float32, float64 → float64; decimal128(p,s) → decimal at scale s; utf8,
// large_utf8, utf8_view → string; binary, large_binary, binary_view,
// fixed_size_binary → binary; bool → boolean; date32, date64 → date (days);
// timestamp of any unit → micros (seconds and millis multiplied, nanos floored;
// with a time zone → timestamp, without → timestamp_ntz). Anything else (uint64,
// dictionaries, nested types, ...) is rejected with ErrUnsupportedType.
func (b *Builder) AddArray(arr arrow.Array) error {
	kind, scale, err := arrowKind(arr.DataType())
	if err != nil {
		return fmt.Errorf("column %q: %w", b.column, err)
	}
	if arr.Len() == arr.NullN() {
		return nil
	}
	if err := b.setKind(kind, scale); err != nil {
		return err
	}
	switch a := arr.(type) {
	case *array.Int8:
		addInts(b, a, a.Int8Values())
	case *array.Int16:
		addInts(b, a, a.Int16Values())
	case *array.Int32:
		addInts(b, a, a.Int32Values())
	case *array.Int64:
		addInts(b, a, a.Int64Values())
	case *array.Uint8:
		addInts(b, a, a.Uint8Values())
	case *array.Uint16:
		addInts(b, a, a.Uint16Values())
	case *array.Uint32:
		addInts(b, a, a.Uint32Values())
	case *array.Date32:
		addInts(b, a, a.Date32Values())
	case *array.Float32:
		addFloats(b, a, a.Float32Values())
	case *array.Float64:
		addFloats(b, a, a.Float64Values())
	case *array.String:
		addStrings(b, a)
	case *array.LargeString:
		addStrings(b, a)
	case *array.StringView:
		addStrings(b, a)
	case *array.Binary:
		addBinary(b, a)
	case *array.LargeBinary:
		addBinary(b, a)
	case *array.BinaryView:
		addBinary(b, a)
	case *array.FixedSizeBinary:
		addBinary(b, a)
	case *array.Boolean:
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				var one [1]byte
				if a.Value(i) {
					one[0] = 1
				}
				b.push(xxhash.Sum64(one[:]))
			}
		}
	case *array.Decimal128:
		var buf [16]byte
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				n := a.Value(i)
				binary.LittleEndian.PutUint64(buf[:8], n.LowBits())
				binary.LittleEndian.PutUint64(buf[8:], uint64(n.HighBits()))
				b.push(xxhash.Sum64(buf[:]))
			}
		}
	case *array.Date64:
		var buf [8]byte
		for i, ms := range a.Date64Values() {
			if a.IsValid(i) {
				binary.LittleEndian.PutUint64(buf[:], uint64(value.FloorDiv(int64(ms), 86_400_000)))
				b.push(xxhash.Sum64(buf[:]))
			}
		}
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		var buf [8]byte
		for i, t := range a.TimestampValues() {
			if !a.IsValid(i) {
				continue
			}
			us, ok := toMicros(int64(t), unit)
			if !ok {
				return fmt.Errorf("%w: column %q: row %d: timestamp %d %s overflows int64 microseconds",
					ErrInvalidArgument, b.column, i, int64(t), unit)
			}
			binary.LittleEndian.PutUint64(buf[:], uint64(us))
			b.push(xxhash.Sum64(buf[:]))
		}
	default:
		return fmt.Errorf("%w: column %q: arrow array %T", ErrUnsupportedType, b.column, arr)
	}
	return nil
}

// arrowKind maps an Arrow type to the value kind its elements are indexed as.
func arrowKind(dt arrow.DataType) (value.Kind, int32, error) {
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type:
		return value.KindInt64, 0, nil
	case *arrow.Float32Type, *arrow.Float64Type:
		return value.KindFloat64, 0, nil
	case *arrow.Decimal128Type:
		return value.KindDecimal, t.Scale, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return value.KindString, 0, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return value.KindBinary, 0, nil
	case *arrow.BooleanType:
		return value.KindBool, 0, nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return value.KindDate, 0, nil
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return value.KindTimestamp, 0, nil
		}
		return value.KindTimestampNTZ, 0, nil
	}
	return value.KindNull, 0, fmt.Errorf("%w: type %s", ErrUnsupportedType, value.DisplayType(dt))
}

// toMicros converts a timestamp in unit to microseconds; nanoseconds are floored
// (an equality literal in micros can only equal a nanosecond value divisible by
// 1000, and flooring maps such a value exactly). ok is false on overflow.
func toMicros(t int64, unit arrow.TimeUnit) (int64, bool) {
	switch unit {
	case arrow.Second:
		return mulChecked(t, 1_000_000)
	case arrow.Millisecond:
		return mulChecked(t, 1_000)
	case arrow.Nanosecond:
		return value.FloorDiv(t, 1_000), true
	}
	return t, true
}

func mulChecked(a, b int64) (int64, bool) {
	if a > math.MaxInt64/b || a < math.MinInt64/b {
		return 0, false
	}
	return a * b, true
}
