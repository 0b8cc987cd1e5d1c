package datafile

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// ConstantColumn returns an array of n copies of v with type t, for partition columns
// (which Delta keeps out of the data files). v must be NULL or of the kind t holds
// (value.KindInt64 for integer types, range-checked; KindDecimal is rescaled exactly to
// t's scale). The caller releases the array.
func ConstantColumn(v value.Value, t arrow.DataType, n int, mem memory.Allocator) (arrow.Array, error) {
	if n < 0 || t == nil {
		return nil, fmt.Errorf("%w: constant column of %d rows of type %v", ErrInvalidArgument, n, value.DisplayType(t))
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if v.IsNull() {
		return array.MakeArrayOfNull(mem, t, n), nil
	}
	bad := func() error {
		return fmt.Errorf("%w: value %s (%s) does not fit type %s", ErrInvalidArgument, v, v.Kind(), value.DisplayType(t))
	}
	b := array.NewBuilder(mem, t)
	defer b.Release()
	b.Reserve(n)
	var appendOne func()
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		if v.Kind() != value.KindBool {
			return nil, bad()
		}
		appendOne = func() { bb.Append(v.AsBool()) }
	case *array.Int8Builder:
		if v.Kind() != value.KindInt64 || v.AsInt64() < math.MinInt8 || v.AsInt64() > math.MaxInt8 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(int8(v.AsInt64())) }
	case *array.Int16Builder:
		if v.Kind() != value.KindInt64 || v.AsInt64() < math.MinInt16 || v.AsInt64() > math.MaxInt16 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(int16(v.AsInt64())) }
	case *array.Int32Builder:
		if v.Kind() != value.KindInt64 || v.AsInt64() < math.MinInt32 || v.AsInt64() > math.MaxInt32 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(int32(v.AsInt64())) }
	case *array.Int64Builder:
		if v.Kind() != value.KindInt64 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(v.AsInt64()) }
	case *array.Float32Builder:
		if v.Kind() != value.KindFloat64 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(float32(v.AsFloat64())) }
	case *array.Float64Builder:
		if v.Kind() != value.KindFloat64 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(v.AsFloat64()) }
	case *array.StringBuilder:
		if v.Kind() != value.KindString {
			return nil, bad()
		}
		appendOne = func() { bb.Append(v.AsString()) }
	case *array.LargeStringBuilder:
		if v.Kind() != value.KindString {
			return nil, bad()
		}
		appendOne = func() { bb.Append(v.AsString()) }
	case *array.BinaryBuilder:
		if v.Kind() != value.KindBinary && v.Kind() != value.KindString {
			return nil, bad()
		}
		raw := v.AsBytes()
		appendOne = func() { bb.Append(raw) }
	case *array.Date32Builder:
		if v.Kind() != value.KindDate || v.AsInt64() < math.MinInt32 || v.AsInt64() > math.MaxInt32 {
			return nil, bad()
		}
		appendOne = func() { bb.Append(arrow.Date32(v.AsInt64())) }
	case *array.TimestampBuilder:
		tt := t.(*arrow.TimestampType)
		want := value.KindTimestamp
		if tt.TimeZone == "" {
			want = value.KindTimestampNTZ
		}
		if v.Kind() != want {
			return nil, bad()
		}
		ts, err := convertTimestamp(v.AsInt64(), arrow.Microsecond, tt.Unit)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		appendOne = func() { bb.Append(arrow.Timestamp(ts)) }
	case *array.Decimal128Builder:
		dt := t.(*arrow.Decimal128Type)
		if v.Kind() != value.KindDecimal {
			return nil, bad()
		}
		num, _, scale := v.AsDecimal()
		resc, err := num.Rescale(scale, dt.Scale)
		if err != nil || !resc.FitsInPrecision(dt.Precision) {
			return nil, bad()
		}
		appendOne = func() { bb.Append(resc) }
	default:
		return nil, fmt.Errorf("%w: constant columns of type %s are not supported", ErrInvalidArgument, value.DisplayType(t))
	}
	for range n {
		appendOne()
	}
	return b.NewArray(), nil
}

// ApplyDeletionVector returns rec without the rows whose file position is deleted.
// firstRow is the file position of rec's first row (the value [Reader.Read] passes with
// it); deleted reports whether a file position is deleted. When no row is deleted, rec
// itself is returned with an extra reference; when the kept rows are one run, a slice of
// rec. Otherwise the kept rows are copied into buffers from mem (nil means
// memory.DefaultAllocator). The caller releases the result.
func ApplyDeletionVector(rec arrow.RecordBatch, firstRow int64, deleted func(row uint64) bool, mem memory.Allocator) (arrow.RecordBatch, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if firstRow < 0 {
		return nil, fmt.Errorf("%w: negative first row %d", ErrInvalidArgument, firstRow)
	}
	n := rec.NumRows()
	// Collect the runs of kept rows; deletions are usually sparse, so runs are few.
	type run struct{ from, to int64 }
	var runs []run
	kept := int64(0)
	start := int64(-1)
	for i := int64(0); i < n; i++ {
		if deleted(uint64(firstRow + i)) {
			if start >= 0 {
				runs = append(runs, run{start, i})
				start = -1
			}
			continue
		}
		kept++
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		runs = append(runs, run{start, n})
	}
	if kept == n {
		rec.Retain()
		return rec, nil
	}
	if len(runs) == 1 {
		return rec.NewSlice(runs[0].from, runs[0].to), nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() { releaseAll(cols) }()
	parts := make([]arrow.Array, len(runs))
	for c := range cols {
		col := rec.Column(c)
		for i, r := range runs {
			parts[i] = array.NewSlice(col, r.from, r.to)
		}
		var err error
		if len(parts) == 0 {
			cols[c] = array.MakeArrayOfNull(mem, col.DataType(), 0)
		} else {
			cols[c], err = array.Concatenate(parts, mem)
		}
		releaseAll(parts)
		if err != nil {
			return nil, fmt.Errorf("datafile: apply deletion vector to column %q: %w", rec.Schema().Field(c).Name, err)
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, kept), nil
}
