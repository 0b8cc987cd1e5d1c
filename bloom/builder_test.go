package bloom

import (
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

func mustBuilder(t testing.TB, col string) *Builder {
	t.Helper()
	b, err := NewBuilder(col, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustFinish(t testing.TB, b *Builder) *Filter {
	t.Helper()
	f, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sameFilter(a, b *Filter) bool {
	return a.kind == b.kind && a.scale == b.scale && a.distinct == b.distinct && a.bf.Equal(b.bf)
}

// TestAddArrayMatchesAdd checks that the Arrow fast path produces exactly the filter
// that Add produces for the equivalent values (nulls skipped).
func TestAddArrayMatchesAdd(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	valid := []bool{true, false, true, true}
	dec := func(n int64) decimal128.Num { return decimal128.FromI64(n) }
	tests := []struct {
		name   string
		build  func() arrow.Array
		values []value.Value // for valid rows
	}{
		{"int8 widens to int64", func() arrow.Array {
			b := array.NewInt8Builder(mem)
			defer b.Release()
			b.AppendValues([]int8{-128, 0, 5, 127}, valid)
			return b.NewArray()
		}, []value.Value{value.Int64(-128), value.Int64(5), value.Int64(127)}},
		{"int16 widens", func() arrow.Array {
			b := array.NewInt16Builder(mem)
			defer b.Release()
			b.AppendValues([]int16{-300, 0, 1, 300}, valid)
			return b.NewArray()
		}, []value.Value{value.Int64(-300), value.Int64(1), value.Int64(300)}},
		{"int32 widens", func() arrow.Array {
			b := array.NewInt32Builder(mem)
			defer b.Release()
			b.AppendValues([]int32{math.MinInt32, 0, 7, math.MaxInt32}, valid)
			return b.NewArray()
		}, []value.Value{value.Int64(math.MinInt32), value.Int64(7), value.Int64(math.MaxInt32)}},
		{"int64 as is", func() arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{math.MinInt64, 0, 9, math.MaxInt64}, valid)
			return b.NewArray()
		}, []value.Value{value.Int64(math.MinInt64), value.Int64(9), value.Int64(math.MaxInt64)}},
		{"uint32 widens without sign", func() arrow.Array {
			b := array.NewUint32Builder(mem)
			defer b.Release()
			b.AppendValues([]uint32{math.MaxUint32, 0, 1, 2}, valid)
			return b.NewArray()
		}, []value.Value{value.Int64(math.MaxUint32), value.Int64(1), value.Int64(2)}},
		{"float32 widens exactly, -0 and NaN canonical", func() arrow.Array {
			b := array.NewFloat32Builder(mem)
			defer b.Release()
			b.AppendValues([]float32{float32(math.Copysign(0, -1)), 1, 0.1, float32(math.NaN())}, valid)
			return b.NewArray()
		}, []value.Value{value.Float64(0), value.Float64(float64(float32(0.1))), value.Float64(math.NaN())}},
		{"float64 with -0 and NaN", func() arrow.Array {
			b := array.NewFloat64Builder(mem)
			defer b.Release()
			b.AppendValues([]float64{math.Copysign(0, -1), 1, math.Inf(-1), math.Float64frombits(0x7ff0000000000001)}, valid)
			return b.NewArray()
		}, []value.Value{value.Float64(0), value.Float64(math.Inf(-1)), value.Float64(math.NaN())}},
		{"decimal128 keeps the declared scale", func() arrow.Array {
			b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 20, Scale: 3})
			defer b.Release()
			b.AppendValues([]decimal128.Num{dec(-1500), dec(0), dec(1), decimal128.GetMaxValue(20)}, valid)
			return b.NewArray()
		}, []value.Value{value.Decimal(dec(-1500), 20, 3), value.Decimal(dec(1), 20, 3), value.Decimal(decimal128.GetMaxValue(20), 20, 3)}},
		{"utf8 raw bytes", func() arrow.Array {
			b := array.NewStringBuilder(mem)
			defer b.Release()
			b.AppendValues([]string{"a", "x", "", "日本"}, valid)
			return b.NewArray()
		}, []value.Value{value.String("a"), value.String(""), value.String("日本")}},
		{"large_utf8 equals utf8", func() arrow.Array {
			b := array.NewLargeStringBuilder(mem)
			defer b.Release()
			b.AppendValues([]string{"a", "x", "", "日本"}, valid)
			return b.NewArray()
		}, []value.Value{value.String("a"), value.String(""), value.String("日本")}},
		{"binary raw bytes", func() arrow.Array {
			b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			defer b.Release()
			b.AppendValues([][]byte{{0}, {1}, {}, {0xff, 0}}, valid)
			return b.NewArray()
		}, []value.Value{value.Binary([]byte{0}), value.Binary(nil), value.Binary([]byte{0xff, 0})}},
		{"bool one byte", func() arrow.Array {
			b := array.NewBooleanBuilder(mem)
			defer b.Release()
			b.AppendValues([]bool{true, false, false, true}, valid)
			return b.NewArray()
		}, []value.Value{value.Bool(true), value.Bool(false), value.Bool(true)}},
		{"date32 days", func() arrow.Array {
			b := array.NewDate32Builder(mem)
			defer b.Release()
			b.AppendValues([]arrow.Date32{-1, 0, 19000, 1}, valid)
			return b.NewArray()
		}, []value.Value{value.Date(-1), value.Date(19000), value.Date(1)}},
		{"date64 millis floor to days", func() arrow.Array {
			b := array.NewDate64Builder(mem)
			defer b.Release()
			b.AppendValues([]arrow.Date64{-86_400_000, 0, 86_400_000 * 3, 0}, valid)
			return b.NewArray()
		}, []value.Value{value.Date(-1), value.Date(3), value.Date(0)}},
		{"timestamp us with zone is timestamp", func() arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
			defer b.Release()
			b.AppendValues([]arrow.Timestamp{-1, 0, 1_700_000_000_000_001, 5}, valid)
			return b.NewArray()
		}, []value.Value{value.Timestamp(-1), value.Timestamp(1_700_000_000_000_001), value.Timestamp(5)}},
		{"timestamp s without zone is ntz micros", func() arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Second})
			defer b.Release()
			b.AppendValues([]arrow.Timestamp{-2, 0, 3, 1_700_000_000}, valid)
			return b.NewArray()
		}, []value.Value{value.TimestampNTZ(-2_000_000), value.TimestampNTZ(3_000_000), value.TimestampNTZ(1_700_000_000_000_000)}},
		{"timestamp ms multiplies", func() arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "+01:00"})
			defer b.Release()
			b.AppendValues([]arrow.Timestamp{-1, 0, 1, 2}, valid)
			return b.NewArray()
		}, []value.Value{value.Timestamp(-1000), value.Timestamp(1000), value.Timestamp(2000)}},
		{"timestamp ns floors to micros", func() arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"})
			defer b.Release()
			b.AppendValues([]arrow.Timestamp{-1500, 0, 2000, 2999}, valid)
			return b.NewArray()
		}, []value.Value{value.Timestamp(-2), value.Timestamp(2), value.Timestamp(2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arr := tc.build()
			defer arr.Release()
			fast := mustBuilder(t, "c")
			if err := fast.AddArray(arr); err != nil {
				t.Fatal(err)
			}
			slow := mustBuilder(t, "c")
			for _, v := range tc.values {
				if err := slow.Add(v); err != nil {
					t.Fatal(err)
				}
			}
			ff, sf := mustFinish(t, fast), mustFinish(t, slow)
			if !sameFilter(ff, sf) {
				t.Fatalf("AddArray filter (kind %s scale %d n %d) differs from Add filter (kind %s scale %d n %d)",
					ff.kind, ff.scale, ff.distinct, sf.kind, sf.scale, sf.distinct)
			}
			for _, v := range tc.values {
				if !ff.MightContain(v) {
					t.Errorf("false negative for %v", v)
				}
			}
		})
	}
}

func TestBuilderErrors(t *testing.T) {
	mem := memory.NewGoAllocator()
	u64 := array.NewUint64Builder(mem)
	u64.Append(1)
	u64Arr := u64.NewArray()
	defer u64Arr.Release()
	tsb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Second})
	tsb.Append(math.MaxInt64 / 10)
	tsArr := tsb.NewArray()
	defer tsArr.Release()
	i64 := array.NewInt64Builder(mem)
	i64.Append(1)
	i64Arr := i64.NewArray()
	defer i64Arr.Release()
	decb := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 10, Scale: 3})
	decb.Append(decimal128.FromI64(1))
	decArr := decb.NewArray()
	defer decArr.Release()

	tests := []struct {
		name string
		run  func(b *Builder) error
		want error
	}{
		{"uint64 is unsupported", func(b *Builder) error { return b.AddArray(u64Arr) }, ErrUnsupportedType},
		{"timestamp seconds overflow is rejected", func(b *Builder) error { return b.AddArray(tsArr) }, ErrInvalidArgument},
		{"int after string is a kind mismatch", func(b *Builder) error {
			if err := b.Add(value.String("a")); err != nil {
				return err
			}
			return b.AddArray(i64Arr)
		}, ErrKindMismatch},
		{"decimal of another scale is a mismatch", func(b *Builder) error {
			if err := b.Add(value.Decimal(decimal128.FromI64(1), 10, 2)); err != nil {
				return err
			}
			return b.AddArray(decArr)
		}, ErrKindMismatch},
		{"date after int is a mismatch", func(b *Builder) error {
			if err := b.Add(value.Int64(1)); err != nil {
				return err
			}
			return b.Add(value.Date(1))
		}, ErrKindMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(mustBuilder(t, "col"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewBuilderValidates(t *testing.T) {
	tests := []struct {
		name string
		col  string
		fpp  float64
		ok   bool
	}{
		{"zero fpp means default", "c", 0, true},
		{"fpp 0.5 is the maximum", "c", 0.5, true},
		{"fpp above 0.5 is rejected", "c", 0.6, false},
		{"negative fpp is rejected", "c", -0.1, false},
		{"NaN fpp is rejected", "c", math.NaN(), false},
		{"tiny fpp is rejected", "c", 1e-12, false},
		{"empty column is rejected", "", 0.01, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewBuilder(tc.col, 10, tc.fpp)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("err %v does not wrap ErrInvalidArgument", err)
			}
		})
	}
}

func TestEmptyFilterContainsNothing(t *testing.T) {
	b := mustBuilder(t, "c")
	if err := b.Add(value.Null()); err != nil {
		t.Fatal(err)
	}
	f := mustFinish(t, b)
	if f.Kind() != value.KindNull || f.Distinct() != 0 {
		t.Fatalf("empty filter kind %s distinct %d", f.Kind(), f.Distinct())
	}
	for _, v := range []value.Value{value.Int64(0), value.String(""), value.Bool(false)} {
		if f.MightContain(v) {
			t.Errorf("empty filter says it might contain %v", v)
		}
	}
	if !f.MightContain(value.Null()) {
		t.Error("NULL probe must answer might-contain (NULLs are not indexed)")
	}
}

func TestDistinctCountsThroughCompaction(t *testing.T) {
	b := mustBuilder(t, "c")
	const distinct = 3000
	for round := 0; round < 10; round++ {
		for i := 0; i < distinct; i++ {
			if err := b.Add(value.Int64(int64(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := b.Distinct(); got != distinct {
		t.Fatalf("Distinct = %d, want %d", got, distinct)
	}
	if cap(b.hashes) > 4*distinct+compactMin {
		t.Errorf("digest buffer grew to %d for %d distinct values", cap(b.hashes), distinct)
	}
	f := mustFinish(t, b)
	if f.Distinct() != distinct {
		t.Fatalf("filter distinct %d", f.Distinct())
	}
	m, k := f.Bits(), f.K()
	if k != 7 || m < 28000 || m > 29000 {
		t.Errorf("m=%d k=%d not sized for n=%d at 1%%", m, k, distinct)
	}
}

func TestFinishTwiceKeepsBuilderUsable(t *testing.T) {
	b := mustBuilder(t, "c")
	_ = b.Add(value.Int64(1))
	f1 := mustFinish(t, b)
	_ = b.Add(value.Int64(2))
	f2 := mustFinish(t, b)
	if f1.Distinct() != 1 || f2.Distinct() != 2 || !f2.MightContain(value.Int64(1)) || !f2.MightContain(value.Int64(2)) {
		t.Fatalf("distinct %d then %d", f1.Distinct(), f2.Distinct())
	}
}
