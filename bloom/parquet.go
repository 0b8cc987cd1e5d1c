package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/skiplake/skiplake/value"
)

const (
	// ParquetMaxFilterBytes caps one native Parquet Bloom filter (per column chunk,
	// per row group). The split-block filter rounds its size up to a power of two, so
	// 1 MiB serves about 870,000 distinct values per row group at fpp 0.01.
	ParquetMaxFilterBytes = 1 << 20
	// ParquetAdaptiveMaxBytes is the largest filter the adaptive writer may choose for
	// a column whose NDV is unknown (instead of arrow-go's 1 MiB fixed default).
	ParquetAdaptiveMaxBytes = 128 << 10
	parquetMinFilterBytes   = 32
)

// parquetFilterBytes mirrors arrow-go's sizing of a split-block filter (Parquet
// spec formula, rounded up to a power of two, clamped to [32 B, cap]).
func parquetFilterBytes(ndv int64, fpp float64) int64 {
	bits := -8 * float64(ndv) / math.Log(1-math.Pow(fpp, 1.0/8))
	n := int64(parquetMinFilterBytes)
	for float64(n*8) < bits && n < ParquetMaxFilterBytes {
		n <<= 1
	}
	return n
}

// ParquetWriterOptions returns arrow-go writer properties that enable native Parquet
// split-block Bloom filters (XXH64, readable by every Parquet engine) on columns.
// ndv gives each column's expected distinct values per row group; a column with a
// positive NDV gets a filter sized for it, a column without one gets arrow-go's
// adaptive filter limited to ParquetAdaptiveMaxBytes. No filter ever exceeds
// ParquetMaxFilterBytes (the writer-wide maximum is set to the largest size
// needed, so arrow-go's 1 MiB-per-chunk default never applies). fpp outside (0, 0.5]
// means DefaultFPP (arrow-go panics on values outside (0, 1), so none reach it).
// Column names are Parquet dot paths ("a.b" for a nested field). The returned
// options set the writer-wide maximum filter size, so do not combine them with
// another parquet.WithMaxBloomFilterBytes.
func ParquetWriterOptions(columns []string, ndv map[string]int64, fpp float64) []parquet.WriterProperty {
	if !(fpp > 0 && fpp <= MaxFPP) {
		fpp = DefaultFPP
	}
	if len(columns) == 0 {
		return nil
	}
	maxBytes := int64(parquetMinFilterBytes)
	opts := make([]parquet.WriterProperty, 0, 3*len(columns)+1)
	for _, c := range columns {
		opts = append(opts, parquet.WithBloomFilterEnabledFor(c, true), parquet.WithBloomFilterFPPFor(c, fpp))
		if n := ndv[c]; n > 0 {
			opts = append(opts, parquet.WithBloomFilterNDVFor(c, n))
			maxBytes = max(maxBytes, parquetFilterBytes(n, fpp))
		} else {
			opts = append(opts, parquet.WithAdaptiveBloomFilterEnabledFor(c, true))
			maxBytes = max(maxBytes, ParquetAdaptiveMaxBytes)
		}
	}
	return append(opts, parquet.WithMaxBloomFilterBytes(maxBytes))
}

// RowGroupMightContain probes the native Parquet Bloom filter of column colIdx
// (a leaf index) in row group rowGroup for v. v is encoded the way the column stores
// it (Parquet PLAIN bytes of physicalType, per the column's logical type: decimal at
// its scale, timestamps in its unit, dates as int32 days) and hashed with XXH64, as
// the Parquet specification prescribes.
//
// It returns false only when no row of the row group can equal v: the filter says
// absent, or v has no exact representation in the column (an int out of the
// column's range, a decimal with more fractional digits than the scale, a timestamp
// finer than the column's unit). It returns true when the chunk has no filter, v is
// NULL or NaN (not probeable), or v cannot be interpreted for the column; in the
// last case the error (wrapping ErrUnsupportedType or ErrKindMismatch) says why.
// physicalType must match the column's; rdr is only read.
func RowGroupMightContain(rdr *file.Reader, rowGroup, colIdx int, v value.Value, physicalType parquet.Type) (bool, error) {
	if rdr == nil {
		return true, fmt.Errorf("%w: nil parquet reader", ErrInvalidArgument)
	}
	md := rdr.MetaData()
	if rowGroup < 0 || rowGroup >= md.NumRowGroups() {
		return true, fmt.Errorf("%w: row group %d outside [0, %d)", ErrInvalidArgument, rowGroup, md.NumRowGroups())
	}
	if colIdx < 0 || colIdx >= md.Schema.NumColumns() {
		return true, fmt.Errorf("%w: column index %d outside [0, %d)", ErrInvalidArgument, colIdx, md.Schema.NumColumns())
	}
	descr := md.Schema.Column(colIdx)
	if descr.PhysicalType() != physicalType {
		return true, fmt.Errorf("%w: column %q is %s, caller said %s", ErrKindMismatch, descr.Path(), descr.PhysicalType(), physicalType)
	}
	if v.IsNull() {
		return true, nil
	}
	cands, present, err := parquetPlain(v, descr)
	if err != nil {
		return true, fmt.Errorf("column %q: %w", descr.Path(), err)
	}
	if !present {
		return false, nil
	}
	if cands == nil {
		return true, nil
	}
	found, hasFilter, err := probeParquetFilter(rdr, rowGroup, colIdx, cands)
	if err != nil {
		return true, fmt.Errorf("bloom: parquet row group %d column %q: reading bloom filter: %w", rowGroup, descr.Path(), err)
	}
	return found || !hasFilter, nil
}

// probeParquetFilter reports whether the Bloom filter of column colIdx in row group
// rowGroup has one of the hashed candidates (hasFilter false: the chunk has none).
// arrow-go's reader panics on some damaged filters; the panic is contained here, at
// the call into it, as an error.
func probeParquetFilter(rdr *file.Reader, rowGroup, colIdx int, cands [][]byte) (found, hasFilter bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			found, hasFilter, err = false, false, fmt.Errorf("the Parquet decoder failed: %v", v)
		}
	}()
	rg, err := rdr.GetBloomFilterReader().RowGroup(rowGroup)
	if err != nil {
		return false, false, err
	}
	err = rg.VisitColumnBloomFilter(colIdx, func(bf metadata.BloomFilter) error {
		hasFilter = true
		h := bf.Hasher()
		for _, c := range cands {
			if bf.CheckHash(h.Sum64(c)) {
				found = true
				break
			}
		}
		return nil
	})
	return found, hasFilter, err
}

// parquetPlain encodes v as the PLAIN bytes the column would store. It returns the
// candidate encodings (more than one when several stored bit patterns mean v, as
// +0/-0), present=false when no stored value can equal v, and cands=nil with
// present=true when v cannot be probed (NaN).
func parquetPlain(v value.Value, descr *schema.Column) (cands [][]byte, present bool, err error) {
	lt := descr.LogicalType()
	pt := descr.PhysicalType()
	mismatch := func() ([][]byte, bool, error) {
		return nil, true, fmt.Errorf("%w: %s literal for %s column (logical type %s)", ErrKindMismatch, v.Kind(), pt, lt)
	}
	le32 := func(x uint32) [][]byte { return [][]byte{binary.LittleEndian.AppendUint32(nil, x)} }
	le64 := func(x uint64) [][]byte { return [][]byte{binary.LittleEndian.AppendUint64(nil, x)} }

	switch pt {
	case parquet.Types.Boolean:
		if v.Kind() != value.KindBool {
			return mismatch()
		}
		if v.AsBool() {
			return [][]byte{{1}}, true, nil
		}
		return [][]byte{{0}}, true, nil

	case parquet.Types.Int32, parquet.Types.Int64:
		width := 32
		if pt == parquet.Types.Int64 {
			width = 64
		}
		x, ok, err := integerForColumn(v, lt, width)
		if err != nil || !ok {
			return nil, ok || err != nil, err
		}
		if width == 32 {
			return le32(uint32(x)), true, nil
		}
		return le64(uint64(x)), true, nil

	case parquet.Types.Float, parquet.Types.Double:
		if v.Kind() != value.KindFloat64 {
			return mismatch()
		}
		f := v.AsFloat64()
		if math.IsNaN(f) {
			return nil, true, nil // NaN has many bit patterns: cannot rule out
		}
		if pt == parquet.Types.Float {
			f32 := float32(f)
			if float64(f32) != f {
				return nil, false, nil // not representable as float32: never stored
			}
			if f == 0 {
				return [][]byte{le32(0)[0], le32(math.Float32bits(float32(math.Copysign(0, -1))))[0]}, true, nil
			}
			return le32(math.Float32bits(f32)), true, nil
		}
		if f == 0 {
			return [][]byte{le64(0)[0], le64(math.Float64bits(math.Copysign(0, -1)))[0]}, true, nil
		}
		return le64(math.Float64bits(f)), true, nil

	case parquet.Types.ByteArray:
		switch v.Kind() {
		case value.KindString, value.KindBinary:
			return [][]byte{v.AsBytes()}, true, nil
		}
		return mismatch()

	case parquet.Types.FixedLenByteArray:
		n := descr.TypeLength()
		switch v.Kind() {
		case value.KindString, value.KindBinary:
			if len(v.AsString()) != n {
				return nil, false, nil
			}
			return [][]byte{v.AsBytes()}, true, nil
		case value.KindDecimal, value.KindInt64:
			dl, ok := lt.(interface{ Scale() int32 })
			if !ok {
				return mismatch()
			}
			u, ok := decimalAtScale(v, dl.Scale())
			if !ok {
				return nil, false, nil
			}
			b, ok := bigEndianTwos(u, n)
			if !ok {
				return nil, false, nil
			}
			return [][]byte{b}, true, nil
		}
		return mismatch()
	}
	return nil, true, fmt.Errorf("%w: parquet physical type %s", ErrUnsupportedType, pt)
}

// integerForColumn maps v to the integer an INT32/INT64 column of logical type lt
// would store. ok=false (with nil error) means no stored value can equal v.
func integerForColumn(v value.Value, lt schema.LogicalType, width int) (x int64, ok bool, err error) {
	mismatch := fmt.Errorf("%w: %s literal for INT%d column (logical type %s)", ErrKindMismatch, v.Kind(), width, lt)
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if width == 64 {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	switch t := lt.(type) {
	case schema.DecimalLogicalType, *schema.DecimalLogicalType:
		if v.Kind() != value.KindDecimal && v.Kind() != value.KindInt64 {
			return 0, true, mismatch
		}
		u, ok := decimalAtScale(v, t.(interface{ Scale() int32 }).Scale())
		if !ok || !u.IsInt64() {
			return 0, false, nil
		}
		x = u.Int64()
	case schema.DateLogicalType, *schema.DateLogicalType:
		if v.Kind() != value.KindDate {
			return 0, true, mismatch
		}
		x = v.AsInt64()
	case schema.TimestampLogicalType, *schema.TimestampLogicalType:
		if v.Kind() != value.KindTimestamp && v.Kind() != value.KindTimestampNTZ {
			return 0, true, mismatch
		}
		us := v.AsInt64()
		switch t.(interface{ TimeUnit() schema.TimeUnitType }).TimeUnit() {
		case schema.TimeUnitMillis:
			if us%1000 != 0 {
				return 0, false, nil
			}
			x = us / 1000
		case schema.TimeUnitMicros:
			x = us
		case schema.TimeUnitNanos:
			if x, ok = mulChecked(us, 1000); !ok {
				return 0, false, nil
			}
		default:
			return 0, true, fmt.Errorf("%w: timestamp unit of logical type %s", ErrUnsupportedType, lt)
		}
	case schema.IntLogicalType, *schema.IntLogicalType:
		if v.Kind() != value.KindInt64 {
			return 0, true, mismatch
		}
		it := t.(interface {
			BitWidth() int8
			IsSigned() bool
		})
		x = v.AsInt64()
		bits := uint(it.BitWidth())
		if it.IsSigned() {
			if bits < 64 && (x < -(1<<(bits-1)) || x >= 1<<(bits-1)) {
				return 0, false, nil
			}
		} else {
			if x < 0 || (bits < 64 && x >= 1<<bits) {
				return 0, false, nil
			}
			// unsigned values are stored with the same bits, reinterpreted as signed
			if width == 32 {
				return int64(int32(uint32(x))), true, nil
			}
		}
		return x, true, nil
	case nil, schema.NoLogicalType, *schema.NoLogicalType:
		if v.Kind() != value.KindInt64 {
			return 0, true, mismatch
		}
		x = v.AsInt64()
	default:
		return 0, true, fmt.Errorf("%w: INT%d column with logical type %s", ErrUnsupportedType, width, lt)
	}
	if x < lo || x > hi {
		return 0, false, nil
	}
	return x, true, nil
}

// decimalAtScale returns v (a decimal or an integer) as an unscaled integer at
// scale; ok is false when v has more fractional digits than scale allows.
func decimalAtScale(v value.Value, scale int32) (*big.Int, bool) {
	var b *big.Int
	from := int32(0)
	switch v.Kind() {
	case value.KindDecimal:
		n, _, s := v.AsDecimal()
		b, from = n.BigInt(), s
	case value.KindInt64:
		b = big.NewInt(v.AsInt64())
	default:
		return nil, false
	}
	if scale >= from {
		return b.Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-from)), nil)), true
	}
	q, r := new(big.Int).QuoRem(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(from-scale)), nil), new(big.Int))
	if r.Sign() != 0 {
		return nil, false
	}
	return q, true
}

// bigEndianTwos renders b as n-byte big-endian two's complement (Parquet's
// FIXED_LEN_BYTE_ARRAY decimal); ok is false when b does not fit in n bytes.
func bigEndianTwos(b *big.Int, n int) ([]byte, bool) {
	if n <= 0 {
		return nil, false
	}
	mag := b
	if b.Sign() < 0 {
		mag = new(big.Int).Neg(b)
		mag.Sub(mag, big.NewInt(1)) // -2^(8n-1) is the most negative fit
	}
	if mag.BitLen() > 8*n-1 {
		return nil, false
	}
	out := make([]byte, n)
	if b.Sign() >= 0 {
		b.FillBytes(out)
		return out, true
	}
	mod := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	mod.Add(mod, b).FillBytes(out)
	return out, true
}
