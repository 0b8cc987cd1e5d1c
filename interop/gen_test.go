package interop

import (
	"fmt"
	"math"
	"math/big"
	mrand "math/rand"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Timestamp extremes Delta allows: 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999 UTC.
const (
	minMicros int64 = -62135596800000000
	maxMicros int64 = 253402300799999999
	minDays   int32 = -719162 // 0001-01-01
	maxDays   int32 = 2932896 // 9999-12-31
)

// mixedSchema has a column of every type DuckDB can compare, plus three partition
// candidates (p_str, p_int, p_date) drawn from small pools.
func mixedSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d5", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}, Nullable: true},
		{Name: "d18", Type: &arrow.Decimal128Type{Precision: 18, Scale: 6}, Nullable: true},
		{Name: "d38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tsn", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
		), Nullable: true},
		{Name: "ls", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "mp", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "p_str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "p_int", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "p_date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
}

// gen draws random values with many edge cases. It is deterministic for a seed.
type gen struct {
	rng  *rand.Rand
	next int64   // next id
	edge float64 // probability of an extreme value (type minimum/maximum, NaN, ...)
}

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), edge: 0.01}
}

// pick reports true with probability g.edge.
func (g *gen) pick() bool { return g.rng.Float64() < g.edge }

var (
	longPrefix = strings.Repeat("p", 31)
	stringPool = []string{
		"", "a", "b", "A", "zz", "~", "\x7f", "ü", "日本語", "🙂 emoji", "a b", "quote's",
		longPrefix + "ab", longPrefix + "ü" + strings.Repeat("x", 40), strings.Repeat("é", 40),
		strings.Repeat("z", 50) + "\x7f", strings.Repeat("\U0010FFFF", 33), strings.Repeat("m", 100),
	}
	// partStrings are partition values that need percent-encoding or escaping.
	partStrings = []string{"plain", "a b", "x/y", "100%", "ü日", "k=v", "a:b", "#hash", "q?&", "dot.", "[br]", "tab\tc"}
	floatEdges  = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1.5, -2.25,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1e300, -1e-300}
)

func (g *gen) null(frac float64) bool { return g.rng.Float64() < frac }

func (g *gen) str() string {
	if g.rng.IntN(3) == 0 && (g.pick() || g.rng.IntN(4) == 0) {
		return stringPool[g.rng.IntN(len(stringPool))]
	}
	n := g.rng.IntN(40)
	var b strings.Builder
	for range n {
		switch g.rng.IntN(10) {
		case 0:
			b.WriteRune(rune(0xe0 + g.rng.IntN(30)))
		case 1:
			b.WriteRune(rune(0x4e00 + g.rng.IntN(100)))
		default:
			b.WriteByte(byte('a' + g.rng.IntN(26)))
		}
	}
	return b.String()
}

func (g *gen) float() float64 {
	if g.pick() {
		return floatEdges[g.rng.IntN(len(floatEdges))]
	}
	return (g.rng.Float64() - 0.5) * math.Pow(10, float64(g.rng.IntN(12)-4))
}

// decimal returns a random unscaled value fitting precision digits (often the extremes).
func (g *gen) decimal(precision int32) decimal128.Num {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	limit.Sub(limit, big.NewInt(1)) // 10^p - 1
	var v *big.Int
	switch {
	case g.pick():
		v = new(big.Int).Set(limit)
	case g.pick():
		v = new(big.Int).Neg(limit)
	case g.rng.IntN(3) == 0:
		v = big.NewInt(int64(g.rng.IntN(2001) - 1000))
	default:
		v = new(big.Int).Rand(mrand.New(randSource{g.rng}), limit)
		if g.rng.IntN(2) == 0 {
			v.Neg(v)
		}
	}
	return decimal128.FromBigInt(v)
}

// randSource adapts math/rand/v2 to the math/rand.Source big.Int.Rand needs.
type randSource struct{ r *rand.Rand }

func (s randSource) Int63() int64 { return s.r.Int64() }
func (s randSource) Seed(int64)   {}

func (g *gen) micros() int64 {
	switch {
	case g.pick():
		return minMicros
	case g.pick():
		return maxMicros
	case g.pick():
		return 0
	}
	// 1990..2040 with random microseconds.
	return 631152000000000 + g.rng.Int64N(1577836800000000)
}

func (g *gen) days() int32 {
	switch {
	case g.pick():
		return minDays
	case g.pick():
		return maxDays
	}
	return int32(7000 + g.rng.IntN(20000))
}

// fill appends one random value of dt to b (NULL with probability nullFrac).
func (g *gen) fill(b array.Builder, f arrow.Field, nullFrac float64) {
	if f.Nullable && g.null(nullFrac) {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int8Builder:
		bb.Append(int8(g.rng.IntN(256) - 128))
	case *array.Int16Builder:
		bb.Append(int16(g.rng.IntN(65536) - 32768))
	case *array.Int32Builder:
		switch {
		case g.pick():
			bb.Append(math.MinInt32)
		case g.pick():
			bb.Append(math.MaxInt32)
		default:
			bb.Append(int32(g.rng.IntN(2000) - 1000))
		}
	case *array.Int64Builder:
		switch {
		case g.pick():
			bb.Append(math.MinInt64)
		case g.pick():
			bb.Append(math.MaxInt64)
		default:
			bb.Append(g.rng.Int64N(2_000_000) - 1_000_000)
		}
	case *array.Float32Builder:
		bb.Append(float32(g.float()))
	case *array.Float64Builder:
		bb.Append(g.float())
	case *array.Decimal128Builder:
		bb.Append(g.decimal(f.Type.(*arrow.Decimal128Type).Precision))
	case *array.StringBuilder:
		bb.Append(g.str())
	case *array.BinaryBuilder:
		v := make([]byte, g.rng.IntN(20))
		for i := range v {
			v[i] = byte(g.rng.IntN(256))
		}
		bb.Append(v)
	case *array.BooleanBuilder:
		bb.Append(g.rng.IntN(2) == 0)
	case *array.Date32Builder:
		bb.Append(arrow.Date32(g.days()))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(g.micros()))
	case *array.StructBuilder:
		bb.Append(true)
		st := f.Type.(*arrow.StructType)
		for i, cf := range st.Fields() {
			g.fill(bb.FieldBuilder(i), cf, nullFrac)
		}
	case *array.MapBuilder:
		bb.Append(true)
		mt := f.Type.(*arrow.MapType)
		seen := map[string]bool{}
		for range g.rng.IntN(4) {
			k := g.str()
			if seen[k] {
				continue
			}
			seen[k] = true
			bb.KeyBuilder().(*array.StringBuilder).Append(k)
			g.fill(bb.ItemBuilder(), mt.ItemField(), nullFrac)
		}
	case *array.ListBuilder:
		bb.Append(true)
		lt := f.Type.(*arrow.ListType)
		for range g.rng.IntN(5) {
			g.fill(bb.ValueBuilder(), lt.ElemField(), nullFrac)
		}
	default:
		panic(fmt.Sprintf("interop: gen: no generator for %s", f.Type))
	}
}

// mixedBatch builds n random rows of mixedSchema. Partition candidates come from
// small pools (with NULLs and special characters) so files group by them.
func (g *gen) mixedBatch(t testing.TB, mem memory.Allocator, n int) arrow.RecordBatch {
	t.Helper()
	schema := mixedSchema()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for range n {
		for i, f := range schema.Fields() {
			fb := b.Field(i)
			switch f.Name {
			case "id":
				fb.(*array.Int64Builder).Append(g.next)
				g.next++
			case "p_str":
				if g.null(0.1) {
					fb.AppendNull()
				} else {
					fb.(*array.StringBuilder).Append(partStrings[g.rng.IntN(len(partStrings))])
				}
			case "p_int":
				if g.null(0.1) {
					fb.AppendNull()
				} else {
					fb.(*array.Int32Builder).Append(int32(g.rng.IntN(4) - 1))
				}
			case "p_date":
				if g.null(0.1) {
					fb.AppendNull()
				} else {
					fb.(*array.Date32Builder).Append(arrow.Date32(18000 + g.rng.IntN(3)))
				}
			default:
				g.fill(fb, f, 0.1)
			}
		}
	}
	return b.NewRecordBatch()
}
