package log

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// statsLeafTypes are the leaf types the random stats_parsed arrays use.
var statsLeafTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
	arrow.FixedWidthTypes.Boolean, arrow.FixedWidthTypes.Date32,
	&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, &arrow.TimestampType{Unit: arrow.Microsecond},
	&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
	&arrow.Decimal128Type{Precision: 38, Scale: 4}, &arrow.Decimal128Type{Precision: 10, Scale: 0},
}

var statsStrings = []string{"", "a", "abc", "n0000012", "<&>", `q"uote`, `back\slash`, "tab\there", "\x01\x1f",
	"é", "\u2028\u2029", "\xff\xfe", "😀", "\U0010ffff", "a\x7f", "ok ok", "zz/zz"}

var statsFloats = []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300,
	math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 123456789.125, float64(float32(0.1))}

// randomStatsType builds a stats_parsed-like struct: numRecords, tightBounds and
// sections of random leaves and nested structs (names chosen so that sorting matters).
func randomStatsType(r *rand.Rand, depth int) *arrow.StructType {
	names := []string{"b", "a", "Z", "_x", "é", "k<", "numRecords", "c", "a b"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	n := 1 + r.IntN(5)
	var fields []arrow.Field
	for _, name := range names[:n] {
		var t arrow.DataType = statsLeafTypes[r.IntN(len(statsLeafTypes))]
		if depth > 0 && r.IntN(4) == 0 {
			t = randomStatsType(r, depth-1)
		}
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: true})
	}
	return arrow.StructOf(fields...)
}

func appendRandom(r *rand.Rand, b array.Builder) {
	if r.IntN(6) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StructBuilder:
		b.Append(true)
		for j := range b.NumField() {
			appendRandom(r, b.FieldBuilder(j))
		}
	case *array.Int8Builder:
		b.Append(int8(r.Uint32()))
	case *array.Int16Builder:
		b.Append(int16(r.Uint32()))
	case *array.Int32Builder:
		b.Append(int32(r.Uint32()))
	case *array.Int64Builder:
		b.Append(int64(r.Uint64()))
	case *array.Float32Builder:
		b.Append(float32(statsFloats[r.IntN(len(statsFloats))]))
	case *array.Float64Builder:
		f := statsFloats[r.IntN(len(statsFloats))]
		if r.IntN(3) == 0 {
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		}
		b.Append(f)
	case *array.StringBuilder:
		b.Append(statsStrings[r.IntN(len(statsStrings))])
	case *array.BinaryBuilder:
		b.Append([]byte(statsStrings[r.IntN(len(statsStrings))]))
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.Date32Builder:
		b.Append(arrow.Date32(r.Int32N(1<<22) - 1<<21))
	case *array.TimestampBuilder:
		v := r.Int64N(1<<50) - 1<<49
		if r.IntN(4) == 0 {
			v = r.Int64()
		}
		b.Append(arrow.Timestamp(v))
	case *array.Decimal128Builder:
		b.Append(decimal128.New(int64(r.Uint64()), r.Uint64()))
	default:
		b.AppendNull()
	}
}

// TestStatsRendererMatchesGeneric checks that add.stats_parsed cells render to
// exactly the bytes of the generic path (json.Marshal of arrowToAny) on random
// struct types, values (escapes, invalid UTF-8, extreme floats and years) and nulls,
// and that types the renderer does not handle (lists, duplicate names) fall back.
func TestStatsRendererMatchesGeneric(t *testing.T) {
	mem := memory.NewGoAllocator()
	types := []*arrow.StructType{
		arrow.StructOf(arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}),
	}
	for seed := range uint64(60) {
		types = append(types, randomStatsType(rand.New(rand.NewPCG(seed, 7)), 2))
	}
	rendered := 0
	for ti, st := range types {
		r := rand.New(rand.NewPCG(uint64(ti), 11))
		b := array.NewStructBuilder(mem, st)
		for range 300 {
			appendRandom(r, b)
		}
		arr := b.NewStructArray()
		b.Release()
		rd := newStatsRenderer(arr)
		if ti < 2 && rd != nil {
			t.Fatalf("type %v: renderer built, want the generic path", st)
		}
		for i := range arr.Len() {
			if arr.IsNull(i) {
				continue
			}
			want, werr := json.Marshal(arrowToAny(arr, i, true))
			got, err := renderStats(rd, arr, i)
			if (err == nil) != (werr == nil) || got != string(want) {
				t.Fatalf("type %v row %d: rendered %q (%v), generic path %q (%v)", st, i, got, err, want, werr)
			}
			if rd != nil {
				if _, ok := rd.root.appendJSON(nil, i); ok {
					rendered++
				}
			}
		}
		arr.Release()
	}
	if rendered < 1000 {
		t.Fatalf("only %d cells took the fast path", rendered)
	}
}

// TestAppendJSONFloat checks the float format against encoding/json on finite values.
func TestAppendJSONFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := append([]float64(nil), statsFloats...)
	for range 20000 {
		vals = append(vals, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(700)-350)))
	}
	for _, f := range vals {
		want, err := json.Marshal(floatAny(f))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Fatalf("appendJSONFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	}
}
