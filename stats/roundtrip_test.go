package stats

import (
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

var rtSchema = arrow.NewSchema([]arrow.Field{
	f("i8", arrow.PrimitiveTypes.Int8), f("i32", arrow.PrimitiveTypes.Int32), f("i64", arrow.PrimitiveTypes.Int64),
	f("f32", arrow.PrimitiveTypes.Float32), f("f64", arrow.PrimitiveTypes.Float64),
	f("d9", &arrow.Decimal128Type{Precision: 9, Scale: 2}), f("d38", &arrow.Decimal128Type{Precision: 38, Scale: 6}),
	f("s", arrow.BinaryTypes.String), f("dt", arrow.FixedWidthTypes.Date32),
	f("ts", tsUTC), f("ntz", tsNTZ), f("b", arrow.FixedWidthTypes.Boolean),
	f("st", arrow.StructOf(f("x", arrow.PrimitiveTypes.Int64), f("y", arrow.BinaryTypes.String))),
	f("l", arrow.ListOf(arrow.PrimitiveTypes.Int32)),
}, nil)

var strPieces = []string{"a", "b", "z", "~", "\x7f", "é", "日", "\U0010FFFF", "\U0001F600", " "}

func randString(r *rand.Rand) string {
	var sb strings.Builder
	n := r.Intn(45)
	if r.Intn(3) == 0 {
		n = r.Intn(4)
	}
	for ; n > 0; n-- {
		sb.WriteString(strPieces[r.Intn(len(strPieces))])
	}
	return sb.String()
}

func randFloat(r *rand.Rand) float64 {
	switch r.Intn(12) {
	case 0:
		return math.NaN()
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return math.Inf(1 - 2*r.Intn(2))
	case 3:
		return math.MaxFloat32 * float64(1-2*r.Intn(2))
	}
	return (r.Float64() - 0.5) * math.Pow(10, float64(r.Intn(20)-10))
}

func randI64(r *rand.Rand) int64 {
	switch r.Intn(6) {
	case 0:
		return math.MaxInt64
	case 1:
		return math.MinInt64
	}
	return r.Int63n(1<<40) - 1<<39
}

func randTS(r *rand.Rand) int64 {
	// ±300 years around 1970, arbitrary microseconds (incl. negative).
	return r.Int63n(2*9_467_280_000_000_000) - 9_467_280_000_000_000
}

// randDecimal returns an unscaled value with at most digits digits.
func randDecimal(r *rand.Rand, digits int) decimal128.Num {
	s := strconv.Itoa(1 + r.Intn(9))
	n := r.Intn(digits)
	for k := 0; k < n; k++ {
		s += strconv.Itoa(r.Intn(10))
	}
	if r.Intn(2) == 0 {
		s = "-" + s
	}
	v, _ := decimal128.FromString(s, 38, 0)
	return v
}

// rtBatch builds one random batch and returns it with, per leaf key, the oracle
// values (value.Null for nulls) row by row.
func rtBatch(r *rand.Rand, mem memory.Allocator, n int) (arrow.RecordBatch, map[string][]value.Value) {
	b := array.NewRecordBuilder(mem, rtSchema)
	defer b.Release()
	oracle := map[string][]value.Value{}
	add := func(k string, v value.Value) { oracle[k] = append(oracle[k], v) }
	nullP := r.Intn(4) // 0: no nulls
	// The struct column is built by hand so that a null struct can hold non-null
	// child values (a StructBuilder would null the children).
	xb, yb := array.NewInt64Builder(mem), array.NewStringBuilder(mem)
	defer xb.Release()
	defer yb.Release()
	var parentValid []bool
	isNull := func() bool { return nullP > 0 && r.Intn(8) < nullP }
	for i := 0; i < n; i++ {
		if isNull() {
			b.Field(0).AppendNull()
			add("i8", value.Null())
		} else {
			v := int8(r.Intn(256) - 128)
			b.Field(0).(*array.Int8Builder).Append(v)
			add("i8", value.Int64(int64(v)))
		}
		if isNull() {
			b.Field(1).AppendNull()
			add("i32", value.Null())
		} else {
			v := int32(r.Uint32())
			b.Field(1).(*array.Int32Builder).Append(v)
			add("i32", value.Int64(int64(v)))
		}
		if isNull() {
			b.Field(2).AppendNull()
			add("i64", value.Null())
		} else {
			v := randI64(r)
			b.Field(2).(*array.Int64Builder).Append(v)
			add("i64", value.Int64(v))
		}
		if isNull() {
			b.Field(3).AppendNull()
			add("f32", value.Null())
		} else {
			v := float32(randFloat(r))
			b.Field(3).(*array.Float32Builder).Append(v)
			add("f32", value.Float64(float64(v)))
		}
		if isNull() {
			b.Field(4).AppendNull()
			add("f64", value.Null())
		} else {
			v := randFloat(r)
			b.Field(4).(*array.Float64Builder).Append(v)
			add("f64", value.Float64(v))
		}
		if isNull() {
			b.Field(5).AppendNull()
			add("d9", value.Null())
		} else {
			v := randDecimal(r, 9)
			b.Field(5).(*array.Decimal128Builder).Append(v)
			add("d9", value.Decimal(v, 9, 2))
		}
		if isNull() {
			b.Field(6).AppendNull()
			add("d38", value.Null())
		} else {
			v := randDecimal(r, 38)
			b.Field(6).(*array.Decimal128Builder).Append(v)
			add("d38", value.Decimal(v, 38, 6))
		}
		if isNull() {
			b.Field(7).AppendNull()
			add("s", value.Null())
		} else {
			v := randString(r)
			b.Field(7).(*array.StringBuilder).Append(v)
			add("s", value.String(v))
		}
		if isNull() {
			b.Field(8).AppendNull()
			add("dt", value.Null())
		} else {
			v := int32(r.Intn(200000) - 100000)
			b.Field(8).(*array.Date32Builder).Append(arrow.Date32(v))
			add("dt", value.Date(int64(v)))
		}
		if isNull() {
			b.Field(9).AppendNull()
			add("ts", value.Null())
		} else {
			v := randTS(r)
			b.Field(9).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
			add("ts", value.Timestamp(v))
		}
		if isNull() {
			b.Field(10).AppendNull()
			add("ntz", value.Null())
		} else {
			v := randTS(r)
			b.Field(10).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
			add("ntz", value.TimestampNTZ(v))
		}
		if isNull() {
			b.Field(11).AppendNull()
		} else {
			b.Field(11).(*array.BooleanBuilder).Append(r.Intn(2) == 0)
		}
		add("b", value.Null())   // no bounds expected; nulls counted separately below
		b.Field(12).AppendNull() // replaced below by a hand-built struct
		parentNull := isNull()
		parentValid = append(parentValid, !parentNull)
		xk, yk := Key("st", "x"), Key("st", "y")
		if isNull() {
			xb.AppendNull()
			add(xk, value.Null())
		} else {
			v := randI64(r)
			xb.Append(v)
			add(xk, map[bool]value.Value{true: value.Null(), false: value.Int64(v)}[parentNull])
		}
		if isNull() {
			yb.AppendNull()
			add(yk, value.Null())
		} else {
			v := randString(r)
			yb.Append(v)
			add(yk, map[bool]value.Value{true: value.Null(), false: value.String(v)}[parentNull])
		}
		lb := b.Field(13).(*array.ListBuilder)
		if isNull() {
			lb.AppendNull()
			add("l", value.Null())
		} else {
			lb.Append(true)
			for k := r.Intn(3); k > 0; k-- {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(r.Intn(10)))
			}
			add("l", value.Int64(0)) // non-null marker
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	xa, ya := xb.NewArray(), yb.NewArray()
	defer xa.Release()
	defer ya.Release()
	bm := memory.NewResizableBuffer(mem)
	defer bm.Release()
	bm.Resize(int(bitutil.BytesForBits(int64(n))))
	nulls := 0
	for i, ok := range parentValid {
		if ok {
			bitutil.SetBit(bm.Bytes(), i)
		} else {
			bitutil.ClearBit(bm.Bytes(), i)
			nulls++
		}
	}
	st, err := array.NewStructArrayWithNulls([]arrow.Array{xa, ya}, []string{"x", "y"}, bm, nulls, 0)
	if err != nil {
		panic(err)
	}
	defer st.Release()
	cols := append([]arrow.Array(nil), rec.Columns()...)
	cols[12] = st
	return array.NewRecordBatch(rtSchema, cols, int64(n)), oracle
}

// TestRoundTripProperty: random data → Collector → JSON → Parse; every value must
// lie within the parsed [Min, Max] (value.Compare, NaN greatest), null counts must be
// exact, and numRecords must match. Size: 300 files (30 with -short); override with
// SKIPLAKE_STATS_RT_FILES. The seed is fixed; SKIPLAKE_STATS_RT_SEED picks another.
func TestRoundTripProperty(t *testing.T) {
	files := 300
	if testing.Short() {
		files = 30
	}
	if s := os.Getenv("SKIPLAKE_STATS_RT_FILES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			files = n
		}
	}
	seed := int64(20261129)
	if s := os.Getenv("SKIPLAKE_STATS_RT_SEED"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			seed = n
		}
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	for fi := 0; fi < files; fi++ {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		prefix := []int{1, 2, 3, 5, 32}[r.Intn(5)]
		c, err := NewCollector(rtSchema, nil, Config{NumIndexedCols: IndexAllColumns, StringPrefixLength: prefix})
		if err != nil {
			t.Fatal(err)
		}
		all := map[string][]value.Value{}
		var rows int64
		var boolNulls int64
		for nb := 1 + r.Intn(3); nb > 0; nb-- {
			rec, oracle := rtBatch(r, mem, r.Intn(60))
			if err := c.Update(rec); err != nil {
				t.Fatal(err)
			}
			boolNulls += int64(rec.Column(11).NullN())
			rows += rec.NumRows()
			rec.Release()
			for k, v := range oracle {
				all[k] = append(all[k], v...)
			}
		}
		mem.AssertSize(t, 0)
		js, err := c.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		pf, err := NewParser(rtSchema, ParseOptions{StringPrefixLength: prefix}).Parse(js)
		if err != nil {
			t.Fatalf("file %d: Parse(%s): %v", fi, js, err)
		}
		if pf.NumRecords != rows {
			t.Fatalf("file %d: numRecords %d, want %d", fi, pf.NumRecords, rows)
		}
		typed := c.Result()
		for key, vals := range all {
			for _, res := range []*File{pf, typed} {
				col := res.Columns[key]
				if col == nil {
					t.Fatalf("file %d: no stats for %q in %s", fi, key, js)
				}
				var nulls int64
				for _, v := range vals {
					if v.IsNull() {
						nulls++
						continue
					}
					if key == "l" {
						continue
					}
					if !col.Min.IsNull() {
						if cmp, ok := value.Compare(col.Min, v); !ok || cmp > 0 {
							t.Fatalf("file %d %q: min %v above value %v\n%s", fi, key, col.Min, v, js)
						}
					}
					if !col.Max.IsNull() {
						if cmp, ok := value.Compare(v, col.Max); !ok || cmp > 0 {
							t.Fatalf("file %d %q: value %v above max %v\n%s", fi, key, v, col.Max, js)
						}
					}
				}
				want := nulls
				if key == "b" {
					want = boolNulls
				}
				if !col.HasNullCount || col.NullCount != want {
					t.Fatalf("file %d %q: nullCount %d, want %d", fi, key, col.NullCount, want)
				}
			}
		}
	}
}
