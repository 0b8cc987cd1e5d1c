package skipping

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

const microsPerDay = 86400 * 1000000

// propSchema holds every skippable type; "part" is used as a partition column.
func propSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "dbl", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 6, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
		{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
}

type leaf struct {
	path []string
	dt   arrow.DataType
}

func leaves(sc *arrow.Schema) []leaf {
	var out []leaf
	for _, f := range sc.Fields() {
		if st, ok := f.Type.(*arrow.StructType); ok {
			for _, k := range st.Fields() {
				out = append(out, leaf{[]string{f.Name, k.Name}, k.Type})
			}
			continue
		}
		out = append(out, leaf{[]string{f.Name}, f.Type})
	}
	return out
}

var longPrefix = strings.Repeat("p", 40)

// genValue draws a value of a leaf type; nullPct is the percentage of NULLs. The
// domains are small so that equal values, shared prefixes and extremes are common.
func genValue(r *rand.Rand, dt arrow.DataType, nullPct int) value.Value {
	if r.IntN(100) < nullPct {
		return value.Null()
	}
	switch t := dt.(type) {
	case *arrow.Int64Type:
		if r.IntN(30) == 0 {
			return value.Int64([]int64{math.MinInt64, math.MaxInt64}[r.IntN(2)])
		}
		return value.Int64(int64(r.IntN(41) - 20))
	case *arrow.Int32Type:
		return value.Int64(int64(r.IntN(21) - 10))
	case *arrow.Int8Type:
		return value.Int64([]int64{-128, -3, 0, 1, 2, 5, 127}[r.IntN(7)])
	case *arrow.Float32Type:
		return value.Float64(float64(float32([]float64{math.NaN(), math.Inf(-1), -1.5, math.Copysign(0, -1), 0, 0.1, 2, 3.25, math.Inf(1)}[r.IntN(9)])))
	case *arrow.Float64Type:
		if r.IntN(3) == 0 {
			return value.Float64(float64(r.IntN(20)) / 4)
		}
		return value.Float64([]float64{math.NaN(), math.Inf(-1), -1.5, math.Copysign(0, -1), 0, 0.1, 2, math.Inf(1), 1e300}[r.IntN(9)])
	case *arrow.Decimal128Type:
		return value.Decimal(decimal128.FromI64(int64(r.IntN(4001)-2000)), t.Precision, t.Scale)
	case *arrow.StringType:
		words := []string{"", "a", "ab", "abc", "abd", "b", "é", "éa", "a_c", "zz", "日本",
			longPrefix, longPrefix + "a", longPrefix + "b", longPrefix + "\u00ff", "pp", "ppq"}
		return value.String(words[r.IntN(len(words))])
	case *arrow.BooleanType:
		return value.Bool(r.IntN(2) == 0)
	case *arrow.Date32Type:
		return value.Date(int64(19000 + r.IntN(6) - 3))
	case *arrow.TimestampType:
		var us int64
		switch r.IntN(8) {
		case 0:
			us = []int64{-62135596800000000, 253402300799999999, 0, -1}[r.IntN(4)] // years 1 and 9999, epoch
		default:
			us = int64(19000+r.IntN(3))*microsPerDay + int64(r.IntN(4))*1000 + int64(r.IntN(3))
		}
		if t.TimeZone != "" {
			return value.Timestamp(us)
		}
		return value.TimestampNTZ(us)
	}
	panic(fmt.Sprintf("no generator for %s", dt))
}

// genLiteral draws a literal for predicates on dt, including out-of-range values,
// literals with more scale than the column and other literal flavours.
func genLiteral(r *rand.Rand, dt arrow.DataType) value.Value {
	if r.IntN(30) == 0 {
		return value.Null()
	}
	switch dt.(type) {
	case *arrow.Int64Type, *arrow.Int32Type, *arrow.Int8Type, *arrow.Decimal128Type:
		switch r.IntN(6) {
		case 0:
			return value.Int64([]int64{300, -300, 127, -128, math.MaxInt64, math.MinInt64}[r.IntN(6)])
		case 1:
			return value.Decimal(decimal128.FromI64(int64(r.IntN(40001)-20000)), 7, 3)
		case 2:
			return value.Float64([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 2.5, -0.5}[r.IntN(5)])
		}
	case *arrow.Float32Type, *arrow.Float64Type:
		if r.IntN(4) == 0 {
			return value.Decimal(decimal128.FromI64(int64(r.IntN(41)-20)), 3, 1)
		}
	case *arrow.Date32Type:
		if r.IntN(3) == 0 {
			return value.Timestamp(int64(19000+r.IntN(6)-3)*microsPerDay + int64(r.IntN(2))*3600000000)
		}
	case *arrow.TimestampType:
		if r.IntN(4) == 0 {
			return value.Date(int64(19000 + r.IntN(4) - 1))
		}
	}
	if v := genValue(r, dt, 0); !v.IsNull() {
		return v
	}
	return genLiteral(r, dt)
}

var likePatterns = []string{"a%", "%", "ab%", "a_c", "%c", "%b%", `a\_c`, "é%", "_", "p%", "pp%", longPrefix + "%", longPrefix + "a%", longPrefix[:35] + "_%", "zz", "abc", "ab%c"}

func genPredicate(r *rand.Rand, ls []leaf, depth int) expr.Expr {
	if depth > 0 && r.IntN(3) > 0 {
		terms := make([]expr.Expr, 2+r.IntN(2))
		for i := range terms {
			terms[i] = genPredicate(r, ls, depth-1)
		}
		switch r.IntN(3) {
		case 0:
			return expr.And(terms...)
		case 1:
			return expr.Or(terms...)
		}
		return expr.Not(expr.Or(terms...))
	}
	l := ls[r.IntN(len(ls))]
	c := expr.Col(l.path...)
	lit := func() expr.Expr { return expr.Lit(genLiteral(r, l.dt)) }
	switch r.IntN(10) {
	case 0:
		return expr.IsNull(c)
	case 1:
		return expr.IsNotNull(c)
	case 2, 3:
		list := make([]expr.Expr, 1+r.IntN(4))
		for i := range list {
			list[i] = lit()
		}
		if r.IntN(2) == 0 {
			return expr.NotIn(c, list...)
		}
		return expr.In(c, list...)
	case 4:
		if _, ok := l.dt.(*arrow.StringType); ok {
			p := likePatterns[r.IntN(len(likePatterns))]
			if r.IntN(3) == 0 {
				return expr.NotLike(c, p)
			}
			return expr.Like(c, p)
		}
	case 5:
		return expr.Between(c, lit(), lit())
	}
	return expr.Compare(expr.Op(1+r.IntN(7)), c, lit())
}

// row is one generated row: leaf values by stats key.
type row map[string]value.Value

func appendValue(b array.Builder, v value.Value) {
	if v.IsNull() {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v.AsInt64())
	case *array.Int32Builder:
		b.Append(int32(v.AsInt64()))
	case *array.Int8Builder:
		b.Append(int8(v.AsInt64()))
	case *array.Float32Builder:
		b.Append(float32(v.AsFloat64()))
	case *array.Float64Builder:
		b.Append(v.AsFloat64())
	case *array.Decimal128Builder:
		d, _, _ := v.AsDecimal()
		b.Append(d)
	case *array.StringBuilder:
		b.Append(v.AsString())
	case *array.BooleanBuilder:
		b.Append(v.AsBool())
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.AsInt64()))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.AsInt64()))
	default:
		panic(fmt.Sprintf("no appender for %T", b))
	}
}

// buildRecord builds a batch of rows; a struct is NULL when all its leaves are
// NULL and the row says so with the "st" marker.
func buildRecord(mem memory.Allocator, sc *arrow.Schema, rows []row) arrow.RecordBatch {
	rb := array.NewRecordBuilder(mem, sc)
	defer rb.Release()
	for fi, f := range sc.Fields() {
		fb := rb.Field(fi)
		for _, rw := range rows {
			if sb, ok := fb.(*array.StructBuilder); ok {
				if rw[f.Name].Kind() == value.KindBool && !rw[f.Name].AsBool() {
					sb.AppendNull()
					continue
				}
				sb.Append(true)
				st := f.Type.(*arrow.StructType)
				for k, kf := range st.Fields() {
					appendValue(sb.FieldBuilder(k), rw[f.Name+"\x00"+kf.Name])
				}
				continue
			}
			appendValue(fb, rw[f.Name])
		}
	}
	return rb.NewRecordBatch()
}

// genRows draws n rows; the struct "st" is NULL in some rows (its leaf then NULL).
func genRows(r *rand.Rand, sc *arrow.Schema, n int, nullPct map[string]int) []row {
	out := make([]row, n)
	for i := range out {
		rw := row{}
		for _, l := range leaves(sc) {
			rw[strings.Join(l.path, "\x00")] = genValue(r, l.dt, nullPct[l.path[len(l.path)-1]])
		}
		rw["st"] = value.Bool(true)
		if r.IntN(10) == 0 {
			rw["st"] = value.Bool(false)
			rw["st\x00x"] = value.Null()
		}
		out[i] = rw
	}
	return out
}
