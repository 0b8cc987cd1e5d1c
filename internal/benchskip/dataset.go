package benchskip

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

// column is one retained column of a generated dataset: the Arrow array of all
// rows plus, for columns that layouts or queries order by, dense order codes.
type column struct {
	field arrow.Field
	arr   arrow.Array

	// Order codes (set by buildOrder): codes[row] is the rank of the row's value
	// among the column's distinct values (0-based, equal values equal codes),
	// codeRow[c] is a row holding code c, and cum[c] is the number of rows with
	// a code below c (len(cum) = distinct+1, cum[distinct] = rows).
	codes   []uint32
	codeRow []int32
	cum     []int64
}

// dataset is a generated table held in memory. Only the columns a run needs are
// retained; rowBytes still counts every column of the full schema.
type dataset struct {
	name     string
	full     *arrow.Schema // every generated column
	schema   *arrow.Schema // retained columns, in full-schema order
	rows     int
	cols     []*column
	byName   map[string]*column
	rowBytes []uint32 // estimated Arrow bytes of each row over the full schema
}

// release frees the Arrow memory of the dataset.
func (d *dataset) release() {
	for _, c := range d.cols {
		c.arr.Release()
	}
	d.cols = nil
}

// col returns the retained column name (nil if not retained).
func (d *dataset) col(name string) *column { return d.byName[name] }

// valueAt returns the typed value of row i of arr (NULL for a null slot).
func valueAt(arr arrow.Array, i int) value.Value {
	if arr.IsNull(i) {
		return value.Null()
	}
	switch a := arr.(type) {
	case *array.Int64:
		return value.Int64(a.Value(i))
	case *array.Int32:
		return value.Int64(int64(a.Value(i)))
	case *array.Float64:
		return value.Float64(a.Value(i))
	case *array.Date32:
		return value.Date(int64(a.Value(i)))
	case *array.Decimal128:
		t := a.DataType().(*arrow.Decimal128Type)
		return value.Decimal(a.Value(i), t.Precision, t.Scale)
	case *array.String:
		return value.String(a.Value(i))
	}
	return value.Null()
}

// int64Keys returns an order-preserving int64 per row for integer-like
// columns (and decimals whose unscaled values fit int64), or nil.
func int64Keys(arr arrow.Array) []int64 {
	n := arr.Len()
	out := make([]int64, n)
	switch a := arr.(type) {
	case *array.Int64:
		copy(out, a.Int64Values())
	case *array.Int32:
		for i, v := range a.Int32Values() {
			out[i] = int64(v)
		}
	case *array.Date32:
		for i, v := range a.Date32Values() {
			out[i] = int64(v)
		}
	case *array.Decimal128:
		for i, v := range a.Values() {
			if !v.FitsInPrecision(18) {
				return nil
			}
			out[i] = int64(v.LowBits())
		}
	default:
		return nil
	}
	return out
}

// buildOrder computes the order codes of c. The data sets have no nulls.
func (c *column) buildOrder() {
	n := c.arr.Len()
	rows := make([]int32, n)
	for i := range rows {
		rows[i] = int32(i)
	}
	var same func(a, b int32) bool
	if keys := int64Keys(c.arr); keys != nil {
		type kr struct {
			k int64
			r int32
		}
		pairs := make([]kr, n)
		for i, k := range keys {
			pairs[i] = kr{k, int32(i)}
		}
		slices.SortFunc(pairs, func(a, b kr) int {
			if a.k != b.k {
				return cmp.Compare(a.k, b.k)
			}
			return cmp.Compare(a.r, b.r)
		})
		for i, p := range pairs {
			rows[i] = p.r
		}
		same = func(a, b int32) bool { return keys[a] == keys[b] }
	} else {
		var compare func(a, b int32) int
		switch a := c.arr.(type) {
		case *array.Float64:
			v := a.Float64Values()
			compare = func(x, y int32) int { return value.CompareFloat(v[x], v[y]) }
		case *array.String:
			compare = func(x, y int32) int { return strings.Compare(a.Value(int(x)), a.Value(int(y))) }
		default:
			compare = func(x, y int32) int {
				r, _ := value.Compare(valueAt(c.arr, int(x)), valueAt(c.arr, int(y)))
				return r
			}
		}
		slices.SortFunc(rows, func(x, y int32) int {
			if r := compare(x, y); r != 0 {
				return r
			}
			return cmp.Compare(x, y)
		})
		same = func(a, b int32) bool { return compare(a, b) == 0 }
	}
	c.codes = make([]uint32, n)
	c.codeRow = c.codeRow[:0]
	c.cum = c.cum[:0]
	for i, r := range rows {
		if i == 0 || !same(rows[i-1], r) {
			c.codeRow = append(c.codeRow, r)
			c.cum = append(c.cum, int64(i))
		}
		c.codes[r] = uint32(len(c.codeRow) - 1)
	}
	c.cum = append(c.cum, int64(n))
	c.codeRow = slices.Clip(c.codeRow)
}

// distinct returns the number of distinct values (order codes).
func (c *column) distinct() int { return len(c.codeRow) }

// codeValue returns the typed value of order code k.
func (c *column) codeValue(k uint32) value.Value { return valueAt(c.arr, int(c.codeRow[k])) }

// codeAtPos returns the code of the value at position pos of the sorted column
// (0 ≤ pos < rows): the quantile function on codes.
func (c *column) codeAtPos(pos int64) uint32 {
	// Largest k with cum[k] <= pos.
	k := sort.Search(len(c.cum), func(k int) bool { return c.cum[k] > pos }) - 1
	return uint32(k)
}

// findCode returns the code of v and whether v occurs in the column.
func (c *column) findCode(v value.Value) (uint32, bool) {
	k := sort.Search(c.distinct(), func(k int) bool {
		r, _ := value.Compare(c.codeValue(uint32(k)), v)
		return r >= 0
	})
	if k < c.distinct() {
		if r, ok := value.Compare(c.codeValue(uint32(k)), v); ok && r == 0 {
			return uint32(k), true
		}
	}
	return 0, false
}

// gather builds a record batch of the retained columns holding rows idx, in
// that order. The caller releases it.
func (d *dataset) gather(mem memory.Allocator, idx []int32) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, len(d.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for ci, c := range d.cols {
		a, err := gatherArray(mem, c.arr, idx)
		if err != nil {
			return nil, fmt.Errorf("%w: gather column %q: %v", ErrInternal, c.field.Name, err)
		}
		arrs[ci] = a
	}
	return array.NewRecordBatch(d.schema, arrs, int64(len(idx))), nil
}

// gatherArray copies the rows idx of arr into a new array (no nulls expected).
func gatherArray(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	switch a := arr.(type) {
	case *array.Int64:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		v := a.Int64Values()
		for _, i := range idx {
			b.UnsafeAppend(v[i])
		}
		return b.NewArray(), nil
	case *array.Int32:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		v := a.Int32Values()
		for _, i := range idx {
			b.UnsafeAppend(v[i])
		}
		return b.NewArray(), nil
	case *array.Float64:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		v := a.Float64Values()
		for _, i := range idx {
			b.UnsafeAppend(v[i])
		}
		return b.NewArray(), nil
	case *array.Date32:
		b := array.NewDate32Builder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		v := a.Date32Values()
		for _, i := range idx {
			b.UnsafeAppend(v[i])
		}
		return b.NewArray(), nil
	case *array.Decimal128:
		b := array.NewDecimal128Builder(mem, a.DataType().(*arrow.Decimal128Type))
		defer b.Release()
		b.Reserve(len(idx))
		v := a.Values()
		for _, i := range idx {
			b.UnsafeAppend(v[i])
		}
		return b.NewArray(), nil
	case *array.String:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Reserve(len(idx))
		size := 0
		for _, i := range idx {
			size += a.ValueLen(int(i))
		}
		b.ReserveData(size)
		for _, i := range idx {
			b.Append(a.Value(int(i)))
		}
		return b.NewArray(), nil
	}
	return nil, fmt.Errorf("unsupported type %s", arr.DataType())
}

// tableBuilder accumulates generated rows into Arrow builders for the retained
// columns and counts every column's bytes.
type tableBuilder struct {
	full     *arrow.Schema
	keep     []bool
	builders []array.Builder
	rowBytes []uint32
	cur      uint32
}

func newTableBuilder(mem memory.Allocator, full *arrow.Schema, keep func(string) bool, rows int) *tableBuilder {
	tb := &tableBuilder{full: full, keep: make([]bool, full.NumFields()), builders: make([]array.Builder, full.NumFields())}
	for i, f := range full.Fields() {
		if keep(f.Name) {
			tb.keep[i] = true
			tb.builders[i] = array.NewBuilder(mem, f.Type)
			tb.builders[i].Reserve(rows)
		}
	}
	tb.rowBytes = make([]uint32, 0, rows)
	return tb
}

// The append helpers take the column's index in the full schema. Sizes follow
// Arrow's in-memory layout: fixed width, or 4 offset bytes plus the data.
func (tb *tableBuilder) i64(i int, v int64) {
	tb.cur += 8
	if tb.keep[i] {
		tb.builders[i].(*array.Int64Builder).UnsafeAppend(v)
	}
}

func (tb *tableBuilder) i32(i int, v int32) {
	tb.cur += 4
	if tb.keep[i] {
		tb.builders[i].(*array.Int32Builder).UnsafeAppend(v)
	}
}

func (tb *tableBuilder) f64(i int, v float64) {
	tb.cur += 8
	if tb.keep[i] {
		tb.builders[i].(*array.Float64Builder).UnsafeAppend(v)
	}
}

func (tb *tableBuilder) date(i int, days int32) {
	tb.cur += 4
	if tb.keep[i] {
		tb.builders[i].(*array.Date32Builder).UnsafeAppend(arrow.Date32(days))
	}
}

func (tb *tableBuilder) dec(i int, unscaled int64) {
	tb.cur += 16
	if tb.keep[i] {
		tb.builders[i].(*array.Decimal128Builder).UnsafeAppend(decimal128.FromI64(unscaled))
	}
}

func (tb *tableBuilder) str(i int, s string) {
	tb.cur += 4 + uint32(len(s))
	if tb.keep[i] {
		tb.builders[i].(*array.StringBuilder).Append(s)
	}
}

// endRow closes the current row.
func (tb *tableBuilder) endRow() {
	tb.rowBytes = append(tb.rowBytes, tb.cur)
	tb.cur = 0
}

// finish turns the builders into a dataset.
func (tb *tableBuilder) finish(name string) *dataset {
	d := &dataset{name: name, full: tb.full, rows: len(tb.rowBytes), byName: map[string]*column{}, rowBytes: tb.rowBytes}
	var fields []arrow.Field
	for i, f := range tb.full.Fields() {
		if !tb.keep[i] {
			continue
		}
		c := &column{field: f, arr: tb.builders[i].NewArray()}
		tb.builders[i].Release()
		fields = append(fields, f)
		d.cols = append(d.cols, c)
		d.byName[f.Name] = c
	}
	d.schema = arrow.NewSchema(fields, nil)
	return d
}

// record returns all retained columns as one record batch (the caller releases
// it; the dataset keeps its own references).
func (d *dataset) record() arrow.RecordBatch {
	arrs := make([]arrow.Array, len(d.cols))
	for i, c := range d.cols {
		arrs[i] = c.arr
	}
	return array.NewRecordBatch(d.schema, arrs, int64(d.rows))
}

// keepSet returns a predicate selecting the given names (all when names is nil).
func keepSet(names []string) func(string) bool {
	if names == nil {
		return func(string) bool { return true }
	}
	return func(s string) bool { return slices.Contains(names, s) }
}

// checkRows validates a requested row count.
func checkRows(rows int) error {
	if rows <= 0 || rows > math.MaxInt32 {
		return fmt.Errorf("%w: %d rows; want 1..%d", ErrInvalidConfig, rows, math.MaxInt32)
	}
	return nil
}
