package rank

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// checkSlots verifies R6 against value.Compare for every (value, point) pair:
// v < p_j exactly when 1 ≤ slot ≤ 2j+1, v = p_j exactly when slot = 2j+2, and
// NULL has slot 0. It also checks that the array path agrees with Slot.
func checkSlots(t *testing.T, p *Points, arr arrow.Array, vals []value.Value) {
	t.Helper()
	out := make([]uint32, arr.Len())
	if err := p.Slots(arr, out); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		one, err := p.Slot(v)
		if err != nil {
			t.Fatal(err)
		}
		if one != out[i] {
			t.Fatalf("row %d (%v): Slots %d, Slot %d", i, v, out[i], one)
		}
		if v.IsNull() {
			if out[i] != 0 {
				t.Fatalf("NULL has slot %d", out[i])
			}
			continue
		}
		s := out[i]
		if s < 1 || s > p.MaxSlot() {
			t.Fatalf("%v: slot %d outside 1..%d", v, s, p.MaxSlot())
		}
		for j := 0; j < p.Len(); j++ {
			c, ok := value.Compare(v, p.Value(j))
			if !ok {
				t.Fatalf("cannot compare %v with %v", v, p.Value(j))
			}
			less := s <= uint32(2*j+1)
			equal := s == uint32(2*j+2)
			if less != (c < 0) || equal != (c == 0) {
				t.Fatalf("%v vs point %d (%v): slot %d says less=%v equal=%v, compare says %d", v, j, p.Value(j), s, less, equal, c)
			}
		}
	}
}

func TestPointsIntegers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var pts []value.Value
		for range r.IntN(12) {
			pts = append(pts, value.Int64(r.Int64N(50)-25))
		}
		p, err := NewPoints(arrow.PrimitiveTypes.Int64, pts)
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		var vals []value.Value
		for range 200 {
			if r.IntN(10) == 0 {
				b.AppendNull()
				vals = append(vals, value.Null())
				continue
			}
			v := r.Int64N(60) - 30
			b.Append(v)
			vals = append(vals, value.Int64(v))
		}
		arr := b.NewArray()
		checkSlots(t, p, arr, vals)
		arr.Release()
		b.Release()
		_ = round
	}
}

func TestPointsStringsWithSharedPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		s := "s3://bucket/warehouse/"
		for range r.IntN(4) {
			s += string(rune('a' + r.IntN(3)))
		}
		return s
	}
	var pts []value.Value
	for range 9 {
		pts = append(pts, value.String(word()))
	}
	pts = append(pts, value.String("a"), value.String("zzz"), value.String(""))
	p, err := NewPoints(arrow.BinaryTypes.String, pts)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	var vals []value.Value
	for range 300 {
		s := word()
		switch r.IntN(10) {
		case 0:
			s = ""
		case 1:
			s = "s3://bucket/"
		case 2:
			s = "t"
		}
		b.Append(s)
		vals = append(vals, value.String(s))
	}
	arr := b.NewArray()
	defer arr.Release()
	checkSlots(t, p, arr, vals)
}

func TestPointsFloatsAndDecimalsAndDates(t *testing.T) {
	t.Run("float Spark order", func(t *testing.T) {
		pts := []value.Value{value.Float64(0), value.Float64(math.Inf(1)), value.Float64(-1.5), value.Float64(math.NaN())}
		p, err := NewPoints(arrow.PrimitiveTypes.Float64, pts)
		if err != nil {
			t.Fatal(err)
		}
		in := []float64{math.Copysign(0, -1), 0, -1.5, -2, 3, math.Inf(1), math.NaN(), math.Inf(-1)}
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		defer b.Release()
		var vals []value.Value
		for _, f := range in {
			b.Append(f)
			vals = append(vals, value.Float64(f))
		}
		arr := b.NewArray()
		defer arr.Release()
		checkSlots(t, p, arr, vals)
	})
	t.Run("decimal", func(t *testing.T) {
		typ := &arrow.Decimal128Type{Precision: 10, Scale: 2}
		dec := func(n int64) value.Value { return value.Decimal(decimal128.FromI64(n), 10, 2) }
		p, err := NewPoints(typ, []value.Value{dec(-100), dec(0), dec(250), dec(250)})
		if err != nil {
			t.Fatal(err)
		}
		if p.Len() != 3 {
			t.Fatalf("duplicates not merged: %d points", p.Len())
		}
		b := array.NewDecimal128Builder(memory.DefaultAllocator, typ)
		defer b.Release()
		var vals []value.Value
		for _, n := range []int64{-101, -100, -99, 0, 1, 249, 250, 251, 1 << 40, -(1 << 40)} {
			b.Append(decimal128.FromI64(n))
			vals = append(vals, dec(n))
		}
		arr := b.NewArray()
		defer arr.Release()
		checkSlots(t, p, arr, vals)
	})
	t.Run("date", func(t *testing.T) {
		p, err := NewPoints(arrow.FixedWidthTypes.Date32, []value.Value{value.Date(100), value.Date(10)})
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewDate32Builder(memory.DefaultAllocator)
		defer b.Release()
		var vals []value.Value
		for _, d := range []int32{5, 10, 11, 100, 101} {
			b.Append(arrow.Date32(d))
			vals = append(vals, value.Date(int64(d)))
		}
		arr := b.NewArray()
		defer arr.Release()
		checkSlots(t, p, arr, vals)
	})
}

func TestPointsErrors(t *testing.T) {
	if _, err := NewPoints(arrow.PrimitiveTypes.Int64, []value.Value{value.String("x")}); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("string point for an int column: %v", err)
	}
	if _, err := NewPoints(arrow.ListOf(arrow.PrimitiveTypes.Int64), nil); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("list column: %v", err)
	}
	p, err := NewPoints(arrow.PrimitiveTypes.Int64, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append("x")
	arr := b.NewArray()
	defer arr.Release()
	if err := p.Slots(arr, make([]uint32, 1)); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("string array for int points: %v", err)
	}
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	ib.Append(1)
	ia := ib.NewArray()
	defer ia.Release()
	if err := p.Slots(ia, make([]uint32, 2)); !errors.Is(err, ErrShape) {
		t.Fatalf("short output: %v", err)
	}
	if s, _ := p.Slot(value.Int64(7)); s != 1 {
		t.Fatalf("no points: slot %d, want 1", s)
	}
}
