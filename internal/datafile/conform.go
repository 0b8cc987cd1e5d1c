package datafile

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// conform converts arr (as read from the file) into an array of exactly want.Type
// (invariants D1, D2). The result is a new reference the caller releases.
func conform(mem memory.Allocator, arr arrow.Array, want arrow.Field, path string) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), want.Type, arrow.CheckMetadata()) {
		arr.Retain()
		return arr, nil
	}
	var out arrow.Array
	var err error
	switch wt := want.Type.(type) {
	case *arrow.StructType:
		out, err = conformStruct(mem, arr, wt, path)
	case *arrow.MapType:
		out, err = conformMap(mem, arr, wt, path)
	case *arrow.ListType:
		out, err = conformList(mem, arr, wt, path)
	default:
		out, err = conformPrimitive(mem, arr, want.Type)
	}
	if err != nil {
		var ce *ColumnError
		if asColumnError(err, &ce) {
			return nil, err
		}
		return nil, &ColumnError{Column: path, Err: err}
	}
	return out, nil
}

func asColumnError(err error, target **ColumnError) bool {
	ce, ok := err.(*ColumnError)
	if ok {
		*target = ce
	}
	return ok
}

func mismatch(from, to arrow.DataType) error {
	f, t := value.DisplayTypes(from, to)
	return fmt.Errorf("%w: cannot read %s as %s", ErrSchemaMismatch, f, t)
}

// validityAt0 returns arr's validity bitmap starting at bit 0 (nil when there are no
// nulls). The caller releases it.
func validityAt0(mem memory.Allocator, arr arrow.Array) *memory.Buffer {
	if arr.NullN() == 0 {
		return nil
	}
	d := arr.Data()
	src := d.Buffers()[0]
	if src == nil {
		return nil
	}
	if d.Offset() == 0 {
		src.Retain()
		return src
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	bitutil.CopyBitmap(src.Bytes(), d.Offset(), d.Len(), buf.Bytes(), 0)
	return buf
}

func conformStruct(mem memory.Allocator, arr arrow.Array, wt *arrow.StructType, path string) (arrow.Array, error) {
	src, ok := arr.(*array.Struct)
	if !ok {
		return nil, mismatch(arr.DataType(), wt)
	}
	fileFields := src.DataType().(*arrow.StructType).Fields()
	children := make([]arrow.ArrayData, 0, wt.NumFields())
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	for _, wf := range wt.Fields() {
		var c arrow.Array
		if idx := matchField(fileFields, wf); idx >= 0 {
			var err error
			if c, err = conform(mem, src.Field(idx), wf, path+"."+wf.Name); err != nil {
				return nil, err
			}
		} else {
			c = array.MakeArrayOfNull(mem, wf.Type, src.Len())
		}
		c.Data().Retain()
		children = append(children, c.Data())
		c.Release()
	}
	valid := validityAt0(mem, arr)
	if valid != nil {
		defer valid.Release()
	}
	d := array.NewData(wt, src.Len(), []*memory.Buffer{valid}, children, src.NullN(), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// listParts returns the validity and int32 offsets buffers and the values of a list-like
// array, converting 64-bit offsets. The caller releases the buffers.
func listParts(mem memory.Allocator, arr arrow.Array) (valid, offsets *memory.Buffer, values arrow.Array, err error) {
	d := arr.Data()
	switch a := arr.(type) {
	case *array.List:
		values = a.ListValues()
	case *array.Map:
		values = a.ListValues()
	case *array.LargeList:
		values = a.ListValues()
		offs := a.Offsets()
		if offs[len(offs)-1] > math.MaxInt32 {
			return nil, nil, nil, fmt.Errorf("%w: large list with more than 2^31 values", ErrSchemaMismatch)
		}
		buf := memory.NewResizableBuffer(mem)
		buf.Resize(arrow.Int32Traits.BytesRequired(len(offs)))
		o32 := arrow.Int32Traits.CastFromBytes(buf.Bytes())
		for i, o := range offs {
			o32[i] = int32(o)
		}
		return validityAt0(mem, arr), buf, values, nil
	default:
		return nil, nil, nil, mismatch(arr.DataType(), arrow.ListOf(arrow.Null))
	}
	if d.Offset() == 0 {
		valid = validityAt0(mem, arr)
		offsets = d.Buffers()[1]
		offsets.Retain()
		return valid, offsets, values, nil
	}
	// Sliced: copy the window of offsets so the result can start at 0.
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(arrow.Int32Traits.BytesRequired(d.Len() + 1))
	src := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+d.Len()+1]
	copy(arrow.Int32Traits.CastFromBytes(buf.Bytes()), src)
	return validityAt0(mem, arr), buf, values, nil
}

func conformList(mem memory.Allocator, arr arrow.Array, wt *arrow.ListType, path string) (arrow.Array, error) {
	if _, isMap := arr.(*array.Map); isMap {
		return nil, mismatch(arr.DataType(), wt)
	}
	valid, offsets, values, err := listParts(mem, arr)
	if err != nil {
		return nil, err
	}
	defer release(valid, offsets)
	elem, err := conform(mem, values, wt.ElemField(), path+".element")
	if err != nil {
		return nil, err
	}
	defer elem.Release()
	d := array.NewData(wt, arr.Len(), []*memory.Buffer{valid, offsets}, []arrow.ArrayData{elem.Data()}, arr.NullN(), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

func conformMap(mem memory.Allocator, arr arrow.Array, wt *arrow.MapType, path string) (arrow.Array, error) {
	src, ok := arr.(*array.Map)
	if !ok {
		return nil, mismatch(arr.DataType(), wt)
	}
	valid, offsets, _, err := listParts(mem, arr)
	if err != nil {
		return nil, err
	}
	defer release(valid, offsets)
	// Map entries match by position: key then value, whatever the writer named them.
	keys, err := conform(mem, src.Keys(), wt.KeyField(), path+".key")
	if err != nil {
		return nil, err
	}
	defer keys.Release()
	items, err := conform(mem, src.Items(), wt.ItemField(), path+".value")
	if err != nil {
		return nil, err
	}
	defer items.Release()
	entries := array.NewData(wt.Elem(), keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
	defer entries.Release()
	d := array.NewData(wt, arr.Len(), []*memory.Buffer{valid, offsets}, []arrow.ArrayData{entries}, arr.NullN(), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

func release(bufs ...*memory.Buffer) {
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
}

// relabel returns arr's data under another type of the same physical layout.
func relabel(arr arrow.Array, t arrow.DataType) arrow.Array {
	d := arr.Data()
	nd := array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// intGetter returns a reader of a signed (or narrower unsigned) integer array widened to
// int64, or nil when arr is not such an array.
func intGetter(arr arrow.Array) func(int) int64 {
	switch a := arr.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int16:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int32:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		return func(i int) int64 { return a.Value(i) }
	case *array.Uint8:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint16:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint32:
		return func(i int) int64 { return int64(a.Value(i)) }
	}
	return nil
}

// intWidth is the bit width of an integer type's value range (unsigned types count one
// bit more, as they need it in a signed target); 0 for non-integers.
func intWidth(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8:
		return 8
	case arrow.INT16, arrow.UINT8:
		return 16
	case arrow.INT32, arrow.UINT16:
		return 32
	case arrow.INT64, arrow.UINT32:
		return 64
	}
	return 0
}

// decimalDigits is how many decimal digits an integer type needs.
func decimalDigits(t arrow.DataType) int32 {
	switch intWidth(t) {
	case 8:
		return 3
	case 16:
		return 5
	case 32:
		return 10
	case 64:
		return 20
	}
	return 0
}

func unitFactor(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1_000_000_000
	case arrow.Millisecond:
		return 1_000_000
	case arrow.Microsecond:
		return 1_000
	}
	return 1
}

// convertTimestamp rescales v from unit `from` to unit `to` (floor when coarsening).
func convertTimestamp(v int64, from, to arrow.TimeUnit) (int64, error) {
	f, t := unitFactor(from), unitFactor(to)
	if f == t {
		return v, nil
	}
	if f > t {
		m := f / t
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return 0, fmt.Errorf("timestamp %d %s overflows %s", v, from, to)
		}
		return v * m, nil
	}
	return value.FloorDiv(v, t/f), nil
}

// each builds an array of type t by calling set for every non-null element of src.
func each(mem memory.Allocator, src arrow.Array, t arrow.DataType, set func(b array.Builder, i int) error) (arrow.Array, error) {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	b.Reserve(src.Len())
	for i := 0; i < src.Len(); i++ {
		if src.IsNull(i) {
			b.AppendNull()
			continue
		}
		if err := set(b, i); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}

func conformPrimitive(mem memory.Allocator, arr arrow.Array, want arrow.DataType) (arrow.Array, error) {
	from := arr.DataType()
	switch wt := want.(type) {
	case *arrow.TimestampType:
		switch ft := from.(type) {
		case *arrow.TimestampType:
			if ft.Unit == wt.Unit {
				return relabel(arr, wt), nil
			}
			a := arr.(*array.Timestamp)
			return each(mem, arr, wt, func(b array.Builder, i int) error {
				v, err := convertTimestamp(int64(a.Value(i)), ft.Unit, wt.Unit)
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
				return err
			})
		case *arrow.Date32Type:
			a := arr.(*array.Date32)
			return each(mem, arr, wt, func(b array.Builder, i int) error {
				v, err := convertTimestamp(int64(a.Value(i))*86400, arrow.Second, wt.Unit)
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
				return err
			})
		}
	case *arrow.Int64Type, *arrow.Int32Type, *arrow.Int16Type:
		if get := intGetter(arr); get != nil && intWidth(from) <= intWidth(want) {
			return each(mem, arr, want, func(b array.Builder, i int) error {
				switch bb := b.(type) {
				case *array.Int64Builder:
					bb.Append(get(i))
				case *array.Int32Builder:
					bb.Append(int32(get(i)))
				case *array.Int16Builder:
					bb.Append(int16(get(i)))
				}
				return nil
			})
		}
	case *arrow.Float64Type:
		if get := intGetter(arr); get != nil {
			return each(mem, arr, want, func(b array.Builder, i int) error {
				b.(*array.Float64Builder).Append(float64(get(i)))
				return nil
			})
		}
		if a, ok := arr.(*array.Float32); ok {
			return each(mem, arr, want, func(b array.Builder, i int) error {
				b.(*array.Float64Builder).Append(float64(a.Value(i)))
				return nil
			})
		}
	case *arrow.Decimal128Type:
		return toDecimal(mem, arr, wt)
	case *arrow.StringType:
		switch a := arr.(type) {
		case *array.LargeString:
			return each(mem, arr, want, func(b array.Builder, i int) error {
				b.(*array.StringBuilder).Append(a.Value(i))
				return nil
			})
		case *array.StringView:
			return each(mem, arr, want, func(b array.Builder, i int) error {
				b.(*array.StringBuilder).Append(a.Value(i))
				return nil
			})
		}
	case *arrow.BinaryType:
		switch a := arr.(type) {
		case *array.LargeBinary:
			return each(mem, arr, want, func(b array.Builder, i int) error {
				b.(*array.BinaryBuilder).Append(a.Value(i))
				return nil
			})
		case *array.String:
			return relabel(arr, want), nil
		}
	case *arrow.Date32Type:
		if a, ok := arr.(*array.Date64); ok {
			return each(mem, arr, want, func(b array.Builder, i int) error {
				b.(*array.Date32Builder).Append(arrow.Date32(value.FloorDiv(int64(a.Value(i)), 86400_000)))
				return nil
			})
		}
	}
	if from.ID() == want.ID() && arrow.TypeEqual(from, want) {
		return relabel(arr, want), nil
	}
	return nil, mismatch(from, want)
}

// toDecimal widens integers and decimals to a decimal of larger or equal precision and
// scale, refusing anything that could lose digits.
func toDecimal(mem memory.Allocator, arr arrow.Array, wt *arrow.Decimal128Type) (arrow.Array, error) {
	switch ft := arr.DataType().(type) {
	case *arrow.Decimal128Type:
		if ft.Scale > wt.Scale || ft.Precision-ft.Scale > wt.Precision-wt.Scale {
			return nil, mismatch(ft, wt)
		}
		if ft.Scale == wt.Scale {
			return relabel(arr, wt), nil
		}
		a := arr.(*array.Decimal128)
		up := wt.Scale - ft.Scale
		return each(mem, arr, wt, func(b array.Builder, i int) error {
			b.(*array.Decimal128Builder).Append(a.Value(i).IncreaseScaleBy(up))
			return nil
		})
	default:
		get := intGetter(arr)
		if get == nil || decimalDigits(ft) > wt.Precision-wt.Scale {
			return nil, mismatch(ft, wt)
		}
		return each(mem, arr, wt, func(b array.Builder, i int) error {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(get(i)).IncreaseScaleBy(wt.Scale))
			return nil
		})
	}
}
