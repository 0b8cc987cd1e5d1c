package value_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/value"
)

func TestCompare(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name string
		a, b value.Value
		want int
		ok   bool
	}{
		{"ints order", value.Int64(-5), value.Int64(3), -1, true},
		{"ints equal", value.Int64(7), value.Int64(7), 0, true},
		{"null is unordered", value.Null(), value.Int64(1), 0, false},
		{"kinds differ is unordered", value.Int64(1), value.Float64(1), 0, false},
		{"date vs timestamp is unordered", value.Date(1), value.Timestamp(1), 0, false},
		{"nan equals nan", value.Float64(nan), value.Float64(nan), 0, true},
		{"nan above +inf", value.Float64(nan), value.Float64(math.Inf(1)), 1, true},
		{"-inf below nan", value.Float64(math.Inf(-1)), value.Float64(nan), -1, true},
		{"-0 equals +0", value.Float64(math.Copysign(0, -1)), value.Float64(0), 0, true},
		{"strings byte order (code points)", value.String("Z"), value.String("a"), -1, true},
		{"multibyte after ascii", value.String("\u007f"), value.String("é"), -1, true},
		{"binary unsigned", value.Binary([]byte{0x01}), value.Binary([]byte{0xff}), -1, true},
		{"decimal same scale", value.Decimal(decimal128.FromI64(150), 5, 2), value.Decimal(decimal128.FromI64(149), 5, 2), 1, true},
		{"decimal scales differ: 1.50 = 1.5", value.Decimal(decimal128.FromI64(150), 5, 2), value.Decimal(decimal128.FromI64(15), 5, 1), 0, true},
		{"decimal scales differ: -1.005 < -1.00", value.Decimal(decimal128.FromI64(-1005), 6, 3), value.Decimal(decimal128.FromI64(-100), 5, 2), -1, true},
		{"timestamps", value.Timestamp(-1), value.Timestamp(0), -1, true},
		{"bools", value.Bool(false), value.Bool(true), -1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := value.Compare(c.a, c.b)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("Compare(%v, %v) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
			}
			if ok {
				back, _ := value.Compare(c.b, c.a)
				if back != -got {
					t.Fatalf("not antisymmetric: %d vs %d", got, back)
				}
			}
		})
	}
}

func TestEqualAndString(t *testing.T) {
	if !value.Equal(value.Null(), value.Null()) || value.Equal(value.Null(), value.Int64(0)) {
		t.Fatal("Equal on NULL is identity")
	}
	for _, c := range []struct {
		v    value.Value
		want string
	}{
		{value.Null(), "NULL"},
		{value.String("it's"), "'it''s'"},
		{value.Date(0), "DATE '1970-01-01'"},
		{value.Timestamp(1_500_000), "TIMESTAMP '1970-01-01 00:00:01.5+00:00'"},
		{value.Decimal(decimal128.FromI64(-12345), 7, 3), "-12.345"},
		{value.Binary([]byte{0xAB}), "X'AB'"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func ExampleCompare() {
	c, ok := value.Compare(value.Float64(math.NaN()), value.Float64(math.Inf(1)))
	fmt.Println(c, ok)
	_, ok = value.Compare(value.Int64(1), value.Null())
	fmt.Println(ok)
	// Output:
	// 1 true
	// false
}
