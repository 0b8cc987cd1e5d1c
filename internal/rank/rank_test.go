package rank

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

func int64Array(t testing.TB, mem memory.Allocator, vals []int64, nulls []bool) arrow.Array {
	t.Helper()
	b := array.NewInt64Builder(mem)
	defer b.Release()
	var valid []bool
	if nulls != nil {
		valid = make([]bool, len(nulls))
		for i, n := range nulls {
			valid[i] = !n
		}
	}
	b.AppendValues(vals, valid)
	return b.NewArray()
}

func stringArray(t testing.TB, mem memory.Allocator, vals []string) arrow.Array {
	t.Helper()
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}

func float64Array(t testing.TB, mem memory.Allocator, vals []float64) arrow.Array {
	t.Helper()
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}

// rankAll samples arr with a sampler of size k and returns the ranks.
func rankAll(t testing.TB, arr arrow.Array, k, bits int) (*Boundaries, []uint32) {
	t.Helper()
	s := NewSampler(k, 42)
	if err := s.Add(arr); err != nil {
		t.Fatal(err)
	}
	b, err := s.Boundaries(bits)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, arr.Len())
	if err := b.Ranks(arr, 0, out); err != nil {
		t.Fatal(err)
	}
	return b, out
}

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// TestExhaustiveSampleIsExact: when the sample holds every value and values
// are distinct, every value gets its own rank, in value order (R2, R5).
func TestExhaustiveSampleIsExact(t *testing.T) {
	mem := checkedMem(t)
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]int64, 1000)
	for i := range vals {
		vals[i] = int64(i)*7 - 3000
	}
	rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	arr := int64Array(t, mem, vals, nil)
	defer arr.Release()
	b, ranks := rankAll(t, arr, 2000, 16)
	if b.NumBuckets() != 1000 {
		t.Fatalf("NumBuckets = %d, want 1000 (one per value)", b.NumBuckets())
	}
	for i, v := range vals {
		if want := uint32((v+3000)/7 + 1); ranks[i] != want {
			t.Fatalf("value %d: rank %d, want %d", v, ranks[i], want)
		}
	}
}

// TestBucketCountFollowsData checks the documented choice of B.
func TestBucketCountFollowsData(t *testing.T) {
	tests := []struct {
		name       string
		rows, k    int
		bits, want int
	}{
		{"exhaustive sample: one bucket per value", 100, 1000, 16, 100},
		{"exhaustive sample capped by bits", 100, 1000, 4, 15},
		{"subsample: four samples per bucket", 10000, 1000, 16, 250},
		{"subsample capped by bits", 10000, 1000, 6, 63},
		{"one bit: a single value bucket", 10000, 1000, 1, 1},
		{"empty column still has one bucket", 0, 1000, 8, 1},
	}
	mem := checkedMem(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := make([]int64, tt.rows)
			for i := range vals {
				vals[i] = int64(i)
			}
			arr := int64Array(t, mem, vals, nil)
			defer arr.Release()
			b, _ := rankAll(t, arr, tt.k, tt.bits)
			if b.NumBuckets() != tt.want {
				t.Fatalf("NumBuckets = %d, want %d", b.NumBuckets(), tt.want)
			}
		})
	}
}

// groupShares checks that ranks 1..B, cut into groups consecutive groups,
// each receive about 1/groups of the rows.
func groupShares(t *testing.T, name string, ranks []uint32, buckets, groups int, tol float64) {
	t.Helper()
	counts := make([]int, groups)
	for _, r := range ranks {
		if r == 0 || int(r) > buckets {
			t.Fatalf("%s: rank %d outside 1..%d", name, r, buckets)
		}
		counts[(int(r)-1)*groups/buckets]++
	}
	want := float64(len(ranks)) / float64(groups)
	for g, c := range counts {
		if math.Abs(float64(c)-want) > tol*want {
			t.Fatalf("%s: group %d holds %d rows, want %.0f ± %.0f%% (all groups %v)", name, g, c, want, tol*100, counts)
		}
	}
}

// TestEqualFrequency checks R5 on uniform and skewed data with a subsample:
// 200k rows, 8192 samples, 2048 buckets, checked in 16 groups of 128 buckets.
func TestEqualFrequency(t *testing.T) {
	rows := 200000
	if testing.Short() {
		rows = 50000
	}
	rng := rand.New(rand.NewPCG(9, 9))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 3)), 1.2, 1, 1<<20)
	gens := []struct {
		name string
		gen  func() int64
	}{
		{"uniform", func() int64 { return rng.Int64N(1 << 40) }},
		{"lognormal", func() int64 { return int64(math.Exp(rng.NormFloat64()*3) * 1000) }},
		{"zipf s=1.2", func() int64 { return int64(zipf.Uint64()) }},
	}
	mem := checkedMem(t)
	for _, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			vals := make([]int64, rows)
			for i := range vals {
				vals[i] = g.gen()
			}
			arr := int64Array(t, mem, vals, nil)
			defer arr.Release()
			b, ranks := rankAll(t, arr, 8192, 11)
			if b.NumBuckets() != 2047 {
				t.Fatalf("NumBuckets = %d, want 2047", b.NumBuckets())
			}
			groupShares(t, g.name, ranks, b.NumBuckets(), 16, 0.2)
		})
	}
}

// TestMonotoneSpans checks R2 on random data with many duplicates: spans of
// sorted distinct values never overlap except at an endpoint, and every rank
// lies inside its value's span.
func TestMonotoneSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	mem := checkedMem(t)
	vals := make([]int64, 20000)
	for i := range vals {
		if rng.IntN(3) == 0 {
			vals[i] = 7 // heavy hitter: a third of the rows
		} else {
			vals[i] = rng.Int64N(500) - 250
		}
	}
	arr := int64Array(t, mem, vals, nil)
	defer arr.Release()
	b, ranks := rankAll(t, arr, 2048, 8)
	for i, v := range vals {
		lo, hi, err := b.Span(value.Int64(v))
		if err != nil {
			t.Fatal(err)
		}
		if ranks[i] < lo || ranks[i] > hi {
			t.Fatalf("value %d row %d: rank %d outside span [%d,%d]", v, i, ranks[i], lo, hi)
		}
		r, err := b.Rank(value.Int64(v), int64(i))
		if err != nil || r != ranks[i] {
			t.Fatalf("value %d row %d: Rank = %d, %v; Ranks gave %d", v, i, r, err, ranks[i])
		}
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(vals)))
	var prevHi uint32
	for _, v := range distinct {
		lo, hi, _ := b.Span(value.Int64(v))
		if lo < prevHi || hi < lo {
			t.Fatalf("value %d: span [%d,%d] starts before the previous value's end %d", v, lo, hi, prevHi)
		}
		prevHi = hi
	}
	if lo, hi, _ := b.Span(value.Int64(7)); hi-lo < 40 {
		t.Fatalf("heavy hitter 7 spans only [%d,%d]", lo, hi)
	}
}

// TestHeavyHitterSpreads: a value holding half the rows spreads over about
// half the ranks, evenly (R4).
func TestHeavyHitterSpreads(t *testing.T) {
	mem := checkedMem(t)
	rng := rand.New(rand.NewPCG(6, 6))
	const rows = 100000
	vals := make([]int64, rows)
	for i := range vals {
		if i%2 == 0 {
			vals[i] = 1000
		} else {
			vals[i] = rng.Int64N(1 << 30)
		}
	}
	arr := int64Array(t, mem, vals, nil)
	defer arr.Release()
	b, ranks := rankAll(t, arr, 4096, 10)
	per := map[uint32]int{}
	for i, v := range vals {
		if v == 1000 {
			per[ranks[i]]++
		}
	}
	share := float64(len(per)) / float64(b.NumBuckets())
	if share < 0.4 || share > 0.6 {
		t.Fatalf("heavy hitter uses %d of %d ranks (%.2f), want about half", len(per), b.NumBuckets(), share)
	}
	want := float64(rows/2) / float64(len(per))
	for r, c := range per {
		if math.Abs(float64(c)-want) > 0.35*want {
			t.Fatalf("rank %d holds %d heavy rows, want about %.0f", r, c, want)
		}
	}
	groupShares(t, "half heavy", ranks, b.NumBuckets(), 8, 0.2)
}

func TestNullsRankZero(t *testing.T) {
	mem := checkedMem(t)
	vals := []int64{5, 0, 3, 0, 9, 1}
	nulls := []bool{false, true, false, true, false, false}
	arr := int64Array(t, mem, vals, nulls)
	defer arr.Release()
	b, ranks := rankAll(t, arr, 100, 8)
	want := []uint32{3, 0, 2, 0, 4, 1}
	if !slices.Equal(ranks, want) {
		t.Fatalf("ranks %v, want %v", ranks, want)
	}
	if r, _ := b.Rank(value.Null(), 3); r != 0 {
		t.Fatalf("Rank(NULL) = %d", r)
	}
}

func TestFloatOrder(t *testing.T) {
	mem := checkedMem(t)
	vals := []float64{math.NaN(), math.Inf(1), 1.5, math.Copysign(0, -1), -2, math.Inf(-1)}
	arr := float64Array(t, mem, vals)
	defer arr.Release()
	b, ranks := rankAll(t, arr, 100, 8)
	// Spark order: -Inf, -2, -0 (= 0), 1.5, +Inf, NaN.
	want := []uint32{6, 5, 4, 3, 2, 1}
	if !slices.Equal(ranks, want) {
		t.Fatalf("ranks %v, want %v", ranks, want)
	}
	same := [][2]float64{{0, math.Copysign(0, -1)}, {math.NaN(), -math.NaN()}, {math.NaN(), math.Float64frombits(0x7FF0000000000001)}}
	for _, p := range same {
		lo1, hi1, _ := b.Span(value.Float64(p[0]))
		lo2, hi2, _ := b.Span(value.Float64(p[1]))
		if lo1 != lo2 || hi1 != hi2 {
			t.Fatalf("%v and %v rank differently: [%d,%d] vs [%d,%d]", p[0], p[1], lo1, hi1, lo2, hi2)
		}
	}
	if r, _ := b.Rank(value.Float64(math.MaxFloat64), 0); r != 4 {
		t.Fatalf("MaxFloat64 ranks %d, want 4 (the bucket [1.5, +Inf))", r)
	}
}

// TestLongSharedPrefix: strings equal in their first 40 bytes still spread
// over many ranks (no prefix truncation).
func TestLongSharedPrefix(t *testing.T) {
	mem := checkedMem(t)
	rng := rand.New(rand.NewPCG(8, 8))
	prefix := strings.Repeat("p", 40)
	vals := make([]string, 20000)
	for i := range vals {
		vals[i] = fmt.Sprintf("%s%012d", prefix, rng.Int64N(1e12))
	}
	arr := stringArray(t, mem, vals)
	defer arr.Release()
	b, ranks := rankAll(t, arr, 4096, 10)
	distinct := len(slices.Compact(slices.Sorted(slices.Values(ranks))))
	if distinct < b.NumBuckets()*9/10 {
		t.Fatalf("%d distinct ranks of %d buckets", distinct, b.NumBuckets())
	}
	groupShares(t, "prefixed strings", ranks, b.NumBuckets(), 8, 0.2)
}

// TestDeterministic checks R3: same seed and values give the same ranks,
// however the values are split into arrays.
func TestDeterministic(t *testing.T) {
	mem := checkedMem(t)
	rng := rand.New(rand.NewPCG(2, 2))
	vals := make([]int64, 30000)
	for i := range vals {
		vals[i] = rng.Int64N(1000)
	}
	whole := int64Array(t, mem, vals, nil)
	defer whole.Release()
	s1 := NewSampler(1000, 7)
	if err := s1.Add(whole); err != nil {
		t.Fatal(err)
	}
	s2 := NewSampler(1000, 7)
	for off := 0; off < len(vals); off += 777 {
		part := array.NewSlice(whole, int64(off), int64(min(off+777, len(vals))))
		if err := s2.Add(part); err != nil {
			t.Fatal(err)
		}
		part.Release()
	}
	b1, _ := s1.Boundaries(8)
	b2, _ := s2.Boundaries(8)
	r1 := make([]uint32, len(vals))
	r2 := make([]uint32, len(vals))
	if err := b1.Ranks(whole, 0, r1); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(vals); off += 500 {
		end := min(off+500, len(vals))
		part := array.NewSlice(whole, int64(off), int64(end))
		if err := b2.Ranks(part, int64(off), r2[off:end]); err != nil {
			t.Fatal(err)
		}
		part.Release()
	}
	if !slices.Equal(r1, r2) {
		t.Fatal("ranks differ between one array and many slices")
	}
	s3 := NewSampler(1000, 8)
	_ = s3.Add(whole)
	b3, _ := s3.Boundaries(8)
	if slices.Equal(b1.words, b3.words) {
		t.Fatal("a different seed drew the same sample; the seed is ignored")
	}
}

// TestTypes ranks every supported type on a small exhaustive sample: ranks
// must follow the value order given by the builder order (ascending values).
func TestTypes(t *testing.T) {
	mem := checkedMem(t)
	build := func(dt arrow.DataType, n int) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for i := 0; i < n; i++ {
			v := i - n/2 // ascending, negative first where the type allows
			switch bb := b.(type) {
			case *array.Int8Builder:
				bb.Append(int8(v))
			case *array.Int16Builder:
				bb.Append(int16(v * 300))
			case *array.Int32Builder:
				bb.Append(int32(v * 70000))
			case *array.Int64Builder:
				bb.Append(int64(v) << 40)
			case *array.Uint8Builder:
				bb.Append(uint8(i))
			case *array.Uint16Builder:
				bb.Append(uint16(i * 300))
			case *array.Uint32Builder:
				bb.Append(uint32(i) << 24)
			case *array.Uint64Builder:
				bb.Append(uint64(i) << 56)
			case *array.Float32Builder:
				bb.Append(float32(v) * 1.5)
			case *array.Float64Builder:
				bb.Append(float64(v) * 1e300)
			case *array.BooleanBuilder:
				bb.Append(i > 0)
			case *array.Date32Builder:
				bb.Append(arrow.Date32(v * 1000))
			case *array.Date64Builder:
				bb.Append(arrow.Date64(int64(v) * 86400000))
			case *array.TimestampBuilder:
				bb.Append(arrow.Timestamp(int64(v) * 1e12))
			case *array.Time64Builder:
				bb.Append(arrow.Time64(i * 1000))
			case *array.DurationBuilder:
				bb.Append(arrow.Duration(v))
			case *array.Decimal128Builder:
				bb.Append(decimal128.FromI64(int64(v) * 1e15).Mul(decimal128.FromI64(1e15)))
			case *array.StringBuilder:
				bb.Append(fmt.Sprintf("%s%03d", strings.Repeat("z", 50), i))
			case *array.LargeStringBuilder:
				bb.Append(fmt.Sprintf("k%03d", i))
			case *array.BinaryBuilder:
				bb.Append([]byte{byte(i >> 8), byte(i), 0xFF})
			case *array.FixedSizeBinaryBuilder:
				bb.Append([]byte{byte(i >> 8), byte(i)})
			case *array.BinaryViewBuilder:
				bb.Append([]byte(fmt.Sprintf("%s%03d", strings.Repeat("v", 20), i)))
			default:
				t.Fatalf("no builder case for %s", dt)
			}
		}
		return b.NewArray()
	}
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean,
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Timestamp_us,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, arrow.FixedWidthTypes.Time64us,
		arrow.FixedWidthTypes.Duration_ms, &arrow.Decimal128Type{Precision: 38, Scale: 2},
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
		&arrow.FixedSizeBinaryType{ByteWidth: 2}, arrow.BinaryTypes.BinaryView,
	}
	for _, dt := range types {
		t.Run(dt.String(), func(t *testing.T) {
			n := 200
			if dt.ID() == arrow.BOOL {
				n = 2
			}
			arr := build(dt, n)
			defer arr.Release()
			b, ranks := rankAll(t, arr, 1000, 12)
			if b.NumBuckets() != n {
				t.Fatalf("NumBuckets = %d, want %d", b.NumBuckets(), n)
			}
			for i, r := range ranks {
				if r != uint32(i+1) {
					t.Fatalf("element %d: rank %d, want %d (ranks %v)", i, r, i+1, ranks[:min(len(ranks), 10)])
				}
			}
		})
	}
}

// TestValuePathMatchesArrays builds boundaries from values and ranks arrays
// with them, and the other way round.
func TestValuePathMatchesArrays(t *testing.T) {
	mem := checkedMem(t)
	strs := []string{"delta", "alpha", "echo", "bravo", "charlie", "alpha"}
	s := NewSampler(100, 1)
	for _, v := range strs {
		if err := s.AddValue(value.String(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddValue(value.Null()); err != nil {
		t.Fatal(err)
	}
	if s.Rows() != 7 || s.NonNull() != 6 {
		t.Fatalf("Rows=%d NonNull=%d, want 7 and 6", s.Rows(), s.NonNull())
	}
	b, err := s.Boundaries(8)
	if err != nil {
		t.Fatal(err)
	}
	arr := stringArray(t, mem, strs)
	defer arr.Release()
	out := make([]uint32, len(strs))
	if err := b.Ranks(arr, 0, out); err != nil {
		t.Fatal(err)
	}
	for i, v := range strs {
		r, err := b.Rank(value.String(v), int64(i))
		if err != nil || r != out[i] {
			t.Fatalf("%q: Rank %d (%v), Ranks %d", v, r, err, out[i])
		}
	}
	if out[1] >= out[3] || out[3] >= out[4] || out[4] >= out[0] || out[0] >= out[2] {
		t.Fatalf("ranks %v not in string order", out)
	}
	dec := NewSampler(10, 1)
	if err := dec.AddValue(value.Decimal(decimal128.FromI64(-5), 10, 2)); err != nil {
		t.Fatal(err)
	}
	if err := dec.AddValue(value.Decimal(decimal128.FromI64(5), 10, 3)); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("decimal of another scale: %v, want ErrTypeMismatch", err)
	}
}

func TestErrors(t *testing.T) {
	mem := checkedMem(t)
	ints := int64Array(t, mem, []int64{1, 2, 3}, nil)
	defer ints.Release()
	strs := stringArray(t, mem, []string{"a"})
	defer strs.Release()
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	lb.Append(true)
	list := lb.NewArray()
	lb.Release()
	defer list.Release()
	s := NewSampler(10, 1)
	if err := s.Add(ints); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Boundaries(4)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"list columns are not orderable", NewSampler(10, 1).Add(list), ErrUnsupportedType},
		{"a string array after int64 arrays", s.Add(strs), ErrTypeMismatch},
		{"a string value after int64 arrays", s.AddValue(value.String("x")), ErrTypeMismatch},
		{"zero bits", func() error { _, err := s.Boundaries(0); return err }(), ErrBits},
		{"33 bits", func() error { _, err := s.Boundaries(33); return err }(), ErrBits},
		{"ranks of a string array with int64 boundaries", b.Ranks(strs, 0, make([]uint32, 1)), ErrTypeMismatch},
		{"output shorter than the array", b.Ranks(ints, 0, make([]uint32, 2)), ErrShape},
		{"rank of a float value with int64 boundaries", func() error { _, err := b.Rank(value.Float64(1), 0); return err }(), ErrTypeMismatch},
		{"unsupported value kind", NewSampler(10, 1).AddValue(value.Value{}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) || (tt.want == nil) != (tt.err == nil) {
				t.Fatalf("error %v, want %v", tt.err, tt.want)
			}
			if tt.err != nil && !strings.HasPrefix(tt.err.Error(), "rank: ") {
				t.Fatalf("error %q lacks the package prefix", tt.err)
			}
		})
	}
}

// FuzzRanksMonotone feeds arbitrary byte strings through the sampler and
// checks R1/R2: ranks follow byte order and stay within 1..B.
func FuzzRanksMonotone(f *testing.F) {
	f.Add([]byte("a\x00b\x00b\x00b\x00c\x00\xff\x00"), uint8(3))
	f.Add([]byte(strings.Repeat("same\x00", 50)+"x"), uint8(2))
	f.Add([]byte{}, uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, bits uint8) {
		parts := strings.Split(string(data), "\x00")
		bw := int(bits)%32 + 1
		s := NewSampler(16, 3)
		for _, p := range parts {
			if err := s.AddValue(value.Binary([]byte(p))); err != nil {
				t.Fatal(err)
			}
		}
		b, err := s.Boundaries(bw)
		if err != nil {
			t.Fatal(err)
		}
		sorted := slices.Compact(slices.Sorted(slices.Values(parts)))
		var prevHi uint32
		for i, p := range sorted {
			lo, hi, err := b.Span(value.Binary([]byte(p)))
			if err != nil {
				t.Fatal(err)
			}
			if lo < 1 || int(hi) > b.NumBuckets() || lo > hi || lo < prevHi {
				t.Fatalf("value %d %q: span [%d,%d], previous end %d, buckets %d", i, p, lo, hi, prevHi, b.NumBuckets())
			}
			r, _ := b.Rank(value.Binary([]byte(p)), int64(i))
			if r < lo || r > hi {
				t.Fatalf("value %q: rank %d outside [%d,%d]", p, r, lo, hi)
			}
			prevHi = hi
		}
	})
}

// TestLowerBoundWord compares the branch-free searches with sort.Search.
func TestLowerBoundWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for n := 0; n < 70; n++ {
		d := make([]uint64, n)
		for i := range d {
			d[i] = rng.Uint64N(50) << 58 // duplicates and values near the top bit
		}
		slices.Sort(d)
		for q := 0; q < 200; q++ {
			var keys [4]uint64
			for i := range keys {
				keys[i] = rng.Uint64N(52) << 58
			}
			var got4 [4]int
			lowerBound4(d, &keys, &got4)
			for i, k := range keys {
				want := sort.Search(n, func(j int) bool { return d[j] >= k })
				if got := lowerBoundWord(d, k); got != want || got4[i] != want {
					t.Fatalf("n=%d key %x: lowerBoundWord %d, lowerBound4 %d, want %d", n, k, got, got4[i], want)
				}
				if got := lowerBound(d, k); got != want {
					t.Fatalf("n=%d key %x: lowerBound %d, want %d", n, k, got, want)
				}
			}
		}
	}
}

// TestConcurrentRanks shares one Boundaries between goroutines (-race).
func TestConcurrentRanks(t *testing.T) {
	mem := checkedMem(t)
	vals := make([]int64, 5000)
	for i := range vals {
		vals[i] = int64(i % 300)
	}
	arr := int64Array(t, mem, vals, nil)
	defer arr.Release()
	b, want := rankAll(t, arr, 1000, 8)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]uint32, arr.Len())
			if err := b.Ranks(arr, 0, out); err != nil {
				errs <- err
				return
			}
			if !slices.Equal(out, want) {
				errs <- errors.New("concurrent Ranks disagree")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSearchStringMatchesPlainSearch checks the prefix-stripping, head-word
// search against a plain binary search over the full cut strings, on keys
// that share the common prefix, share 8-byte heads, are shorter than the
// prefix, or diverge inside it.
func TestSearchStringMatchesPlainSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	alpha := "ab\x00\xff"
	randStr := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	for round := 0; round < 30; round++ {
		prefix := randStr(rng.IntN(12))
		s := NewSampler(64, uint64(round))
		for i := 0; i < 300; i++ {
			v := prefix + randStr(rng.IntN(14))
			if err := s.AddValue(value.String(v)); err != nil {
				t.Fatal(err)
			}
		}
		b, err := s.Boundaries(5)
		if err != nil {
			t.Fatal(err)
		}
		full := make([]string, len(b.strs))
		for i, c := range b.strs {
			full[i] = b.prefix + c
		}
		for q := 0; q < 300; q++ {
			var key string
			switch q % 3 {
			case 0:
				key = prefix + randStr(rng.IntN(14))
			case 1:
				key = randStr(rng.IntN(len(prefix) + 2))
			default:
				key = b.prefix + randStr(rng.IntN(10))
			}
			wantJ := sort.SearchStrings(full, key)
			wantEq := wantJ < len(full) && full[wantJ] == key
			j, eq := b.searchString(key)
			if j != wantJ || eq != wantEq {
				t.Fatalf("prefix %q key %q: searchString = %d,%v, want %d,%v", b.prefix, key, j, eq, wantJ, wantEq)
			}
		}
	}
}
