package optimize

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestLeafArray: a nested clustering column's values are its leaf's, NULL wherever
// the leaf or any struct around it is NULL, even when the leaf itself holds a value
// there (as arrays built in memory may), on whole and sliced arrays; a path that
// leaves the structs is an error.
func TestLeafArray(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	// y: 10..15, NULL at row 5; in: NULL at row 2; st: NULL at rows 1 and 4.
	yb := array.NewInt32Builder(mem)
	yb.AppendValues([]int32{10, 11, 12, 13, 14, 15}, []bool{true, true, true, true, true, false})
	y := yb.NewArray()
	yb.Release()
	bitmap := func(valid ...bool) *memory.Buffer {
		buf := memory.NewResizableBuffer(mem)
		buf.Resize(int(bitutil.BytesForBits(int64(len(valid)))))
		clear(buf.Bytes())
		for i, v := range valid {
			if v {
				bitutil.SetBit(buf.Bytes(), i)
			}
		}
		return buf
	}
	inBits := bitmap(true, true, false, true, true, true)
	in, err := array.NewStructArrayWithNulls([]arrow.Array{y}, []string{"y"}, inBits, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	stBits := bitmap(true, false, true, true, false, true)
	st, err := array.NewStructArrayWithNulls([]arrow.Array{y, in}, []string{"x", "in"}, stBits, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	inBits.Release()
	stBits.Release()
	y.Release()
	defer in.Release()
	defer st.Release()

	check := func(name string, a arrow.Array, path []int, want []any) {
		t.Helper()
		got, err := leafArray(a, path, mem)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer got.Release()
		vals := got.(*array.Int32)
		if vals.Len() != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, vals.Len(), len(want))
		}
		nulls := 0
		for i, w := range want {
			if w == nil {
				nulls++
				if vals.IsValid(i) {
					t.Errorf("%s: row %d = %d, want NULL", name, i, vals.Value(i))
				}
			} else if !vals.IsValid(i) || vals.Value(i) != w.(int32) {
				t.Errorf("%s: row %d = %v (valid %v), want %d", name, i, vals.Value(i), vals.IsValid(i), w)
			}
		}
		if vals.NullN() != nulls {
			t.Errorf("%s: NullN %d, want %d", name, vals.NullN(), nulls)
		}
	}
	check("st.x", st, []int{0}, []any{int32(10), nil, int32(12), int32(13), nil, nil})
	check("st.in.y", st, []int{1, 0}, []any{int32(10), nil, nil, int32(13), nil, nil})
	check("in.y", in, []int{0}, []any{int32(10), int32(11), nil, int32(13), int32(14), nil})
	sl := array.NewSlice(st, 1, 5)
	defer sl.Release()
	check("st[1:5].in.y", sl, []int{1, 0}, []any{nil, nil, int32(13), nil})
	check("st[1:5].x", sl, []int{0}, []any{nil, int32(12), int32(13), nil})

	if _, err := leafArray(st, []int{0, 0}, mem); err == nil {
		t.Error("st.x.? : want an error, x is no struct")
	}
	if _, err := leafArray(st, []int{2}, mem); err == nil {
		t.Error("st field 2: want an error, st has 2 fields")
	}
}
