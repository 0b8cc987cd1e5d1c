package benchskip

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
)

// Synthetic dataset columns (indexes into syntheticSchema).
const (
	synUniform = iota
	synZipf
	synLognormal
	synX
	synY
	synPrefixed
	synUUID
)

// Parameters of the synthetic columns.
const (
	// SyntheticUniformMax bounds the uniform column: values in [0, max).
	SyntheticUniformMax = 1_000_000_000
	// SyntheticZipfS is the Zipf exponent of the zipf column (P(k) ∝ (1+k)^-s).
	SyntheticZipfS = 1.2
	// SyntheticZipfMax is the largest value of the zipf column.
	SyntheticZipfMax = 1_000_000
	// SyntheticLognormalSigma is σ of the lognormal column (μ = 0).
	SyntheticLognormalSigma = 1.5
	// SyntheticXMax bounds x: uniform in [0, max).
	SyntheticXMax = 1_000_000
	// SyntheticNoiseSigma is σ of the normal noise in y = x + noise (1% of x's
	// range).
	SyntheticNoiseSigma = 10_000
	// SyntheticPrefix is the 40-byte prefix every value of the prefixed column
	// starts with; a 12-character random suffix follows. Delta keeps 32
	// characters of string bounds, so the statistics of this column cannot tell
	// files apart.
	SyntheticPrefix = "s3://skiplake-bench/warehouse/events/v1/"
)

var syntheticSchema = arrow.NewSchema([]arrow.Field{
	{Name: "uniform", Type: arrow.PrimitiveTypes.Int64},
	{Name: "zipf", Type: arrow.PrimitiveTypes.Int64},
	{Name: "lognormal", Type: arrow.PrimitiveTypes.Float64},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64},
	{Name: "y", Type: arrow.PrimitiveTypes.Int64},
	{Name: "prefixed", Type: arrow.BinaryTypes.String},
	{Name: "uuid", Type: arrow.BinaryTypes.String},
}, nil)

var syntheticColumns = fieldNames(syntheticSchema)

// SyntheticSchema returns the Arrow schema GenerateSynthetic produces.
func SyntheticSchema() *arrow.Schema { return syntheticSchema }

// randReader adapts a PCG generator to io.Reader for uuid.NewRandomFromReader.
type randReader struct{ r *rand.Rand }

func (rr randReader) Read(p []byte) (int, error) {
	var buf [8]byte
	for i := 0; i < len(p); i += 8 {
		binary.LittleEndian.PutUint64(buf[:], rr.r.Uint64())
		copy(p[i:], buf[:])
	}
	return len(p), nil
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// genSynthetic generates the synthetic table:
//
//   - uniform: int64 uniform in [0, SyntheticUniformMax);
//   - zipf: int64 Zipf with s = SyntheticZipfS over [0, SyntheticZipfMax]
//     (value 0 holds about a fifth of the rows);
//   - lognormal: float64 exp(N(0, SyntheticLognormalSigma²));
//   - x: int64 uniform in [0, SyntheticXMax); y: x + round(N(0,
//     SyntheticNoiseSigma²)), i.e. strongly correlated with x;
//   - prefixed: SyntheticPrefix + 12 random base-32 characters;
//   - uuid: a random (version 4) UUID in canonical text form.
func genSynthetic(mem memory.Allocator, rows int, seed uint64, keep func(string) bool) (*dataset, error) {
	if err := checkRows(rows); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x73796e7468)) // "synth"
	zipf := rand.NewZipf(r, SyntheticZipfS, 1, SyntheticZipfMax)
	ids := randReader{r}
	tb := newTableBuilder(mem, syntheticSchema, keep, rows)
	suffix := make([]byte, len(SyntheticPrefix)+12)
	copy(suffix, SyntheticPrefix)
	for range rows {
		x := r.Int64N(SyntheticXMax)
		tb.i64(synUniform, r.Int64N(SyntheticUniformMax))
		tb.i64(synZipf, int64(zipf.Uint64()))
		tb.f64(synLognormal, math.Exp(r.NormFloat64()*SyntheticLognormalSigma))
		tb.i64(synX, x)
		tb.i64(synY, x+int64(math.Round(r.NormFloat64()*SyntheticNoiseSigma)))
		for i := len(SyntheticPrefix); i < len(suffix); i++ {
			suffix[i] = suffixAlphabet[r.IntN(len(suffixAlphabet))]
		}
		tb.str(synPrefixed, string(suffix))
		id, err := uuid.NewRandomFromReader(ids)
		if err != nil {
			return nil, errorf(ErrInternal, "uuid: %v", err)
		}
		tb.str(synUUID, id.String())
		tb.endRow()
	}
	return tb.finish(DatasetSynthetic), nil
}

// GenerateSynthetic generates rows (> 0) rows of the synthetic table (uniform,
// zipf, lognormal, x, y = x + noise, prefixed, uuid; see SyntheticSchema and
// the Synthetic* constants), seeded by seed. The caller releases the batch.
func GenerateSynthetic(mem memory.Allocator, rows int, seed uint64) (arrow.RecordBatch, error) {
	d, err := genSynthetic(mem, rows, seed, keepSet(nil))
	if err != nil {
		return nil, err
	}
	defer d.release()
	return d.record(), nil
}
