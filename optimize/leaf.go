package optimize

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// clusterCol locates a clustering column in a batch: the index of its top-level
// field, then, for a column nested in structs (st.x), the index of the field at
// each level below.
type clusterCol []int

// leafColumns returns the arrays of the clustering columns cols in rec, one new
// reference each (release them with releaseAll). A nested column's array is its
// leaf's values, NULL wherever the leaf or a struct around it is NULL (as its
// statistics count it).
func leafColumns(rec arrow.RecordBatch, cols []clusterCol, mem memory.Allocator) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		a, err := leafArray(rec.Column(c[0]), c[1:], mem)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// releaseAll releases every array of arrs.
func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// leafArray descends from a through the struct fields path and returns a new
// reference to the leaf, with the validity of the structs above it folded in.
func leafArray(a arrow.Array, path []int, mem memory.Allocator) (arrow.Array, error) {
	if len(path) == 0 {
		a.Retain()
		return a, nil
	}
	n := a.Len()
	var valid []bool // nil: every struct above is valid on every row
	cur := a
	for _, i := range path {
		st, ok := cur.(*array.Struct)
		if !ok || i < 0 || i >= st.NumField() {
			return nil, fmt.Errorf("optimize: clustering column path %v: %s has no struct field %d", path, value.DisplayType(cur.DataType()), i)
		}
		if st.NullN() > 0 {
			if valid == nil {
				valid = make([]bool, n)
				for r := range valid {
					valid[r] = true
				}
			}
			for r := range valid {
				valid[r] = valid[r] && st.IsValid(r)
			}
		}
		cur = st.Field(i)
	}
	// Rows NULL above but not in the leaf need a new validity bitmap; data read
	// from Parquet never has them, so the leaf is usually taken as it is.
	fix := false
	for r := range valid {
		if !valid[r] && cur.IsValid(r) {
			fix = true
			break
		}
	}
	if !fix {
		cur.Retain()
		return cur, nil
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	d := cur.Data()
	off := d.Offset()
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := buf.Bytes()
	clear(bits)
	for r := 0; r < n; r++ {
		if valid[r] && cur.IsValid(r) {
			bitutil.SetBit(bits, off+r)
		}
	}
	bufs := append([]*memory.Buffer{buf}, d.Buffers()[1:]...)
	nd := array.NewData(d.DataType(), n, bufs, d.Children(), array.UnknownNullCount, off)
	buf.Release()
	defer nd.Release()
	return array.MakeFromData(nd), nil
}
