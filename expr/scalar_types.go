package expr

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Type rules of scalar expressions. They follow Spark SQL with ANSI mode on (the Spark
// 4 default): see BindScalar for the summary.

// tkind is the family of a scalar type.
type tkind uint8

const (
	tkOther tkind = iota
	tkNull
	tkBool
	tkInt
	tkFloat
	tkDecimal
	tkString
	tkBinary
	tkDate
	tkTimestamp
	tkTimestampNTZ
)

var (
	dtNull         arrow.DataType = arrow.Null
	dtBool         arrow.DataType = arrow.FixedWidthTypes.Boolean
	dtInt8         arrow.DataType = arrow.PrimitiveTypes.Int8
	dtInt16        arrow.DataType = arrow.PrimitiveTypes.Int16
	dtInt32        arrow.DataType = arrow.PrimitiveTypes.Int32
	dtInt64        arrow.DataType = arrow.PrimitiveTypes.Int64
	dtFloat32      arrow.DataType = arrow.PrimitiveTypes.Float32
	dtFloat64      arrow.DataType = arrow.PrimitiveTypes.Float64
	dtString       arrow.DataType = arrow.BinaryTypes.String
	dtBinary       arrow.DataType = arrow.BinaryTypes.Binary
	dtDate         arrow.DataType = arrow.FixedWidthTypes.Date32
	dtTimestamp    arrow.DataType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	dtTimestampNTZ arrow.DataType = &arrow.TimestampType{Unit: arrow.Microsecond}
)

func kindOf(t arrow.DataType) tkind {
	switch t := t.(type) {
	case *arrow.NullType:
		return tkNull
	case *arrow.BooleanType:
		return tkBool
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return tkInt
	case *arrow.Float32Type, *arrow.Float64Type:
		return tkFloat
	case *arrow.Decimal128Type:
		return tkDecimal
	case *arrow.StringType, *arrow.LargeStringType:
		return tkString
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return tkBinary
	case *arrow.Date32Type:
		return tkDate
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return tkOther
		}
		if t.TimeZone == "" {
			return tkTimestampNTZ
		}
		return tkTimestamp
	}
	return tkOther
}

func isNumeric(k tkind) bool { return k == tkInt || k == tkFloat || k == tkDecimal }

// intWidth returns 8, 16, 32 or 64 for integer types.
func intWidth(t arrow.DataType) int {
	switch t.(type) {
	case *arrow.Int8Type:
		return 8
	case *arrow.Int16Type:
		return 16
	case *arrow.Int32Type:
		return 32
	}
	return 64
}

func intTypeOfWidth(w int) arrow.DataType {
	switch w {
	case 8:
		return dtInt8
	case 16:
		return dtInt16
	case 32:
		return dtInt32
	}
	return dtInt64
}

// intBounds returns the range of an integer type.
func intBounds(t arrow.DataType) (int64, int64) {
	switch intWidth(t) {
	case 8:
		return math.MinInt8, math.MaxInt8
	case 16:
		return math.MinInt16, math.MaxInt16
	case 32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// decimalOfInt is the decimal type holding every value of an integer type (Spark's
// DecimalType.forType: byte (3,0), short (5,0), int (10,0), long (20,0)).
func decimalOfInt(t arrow.DataType) *arrow.Decimal128Type {
	p := map[int]int32{8: 3, 16: 5, 32: 10, 64: 20}[intWidth(t)]
	return &arrow.Decimal128Type{Precision: p, Scale: 0}
}

func asDecimal(t arrow.DataType) *arrow.Decimal128Type {
	if d, ok := t.(*arrow.Decimal128Type); ok {
		return d
	}
	return decimalOfInt(t)
}

// adjustDecimal bounds a decimal result type to precision 38 the way Spark does with
// spark.sql.decimalOperations.allowPrecisionLoss (default true): integer digits are kept
// and the scale gives way, down to min(scale, 6).
func adjustDecimal(p, s int32) *arrow.Decimal128Type {
	if p <= 38 {
		return &arrow.Decimal128Type{Precision: p, Scale: s}
	}
	intDigits := p - s
	minScale := min(s, 6)
	return &arrow.Decimal128Type{Precision: 38, Scale: max(38-intDigits, minScale)}
}

// decimalArithType is Spark's DecimalPrecision result type of l op r.
func decimalArithType(op ArithOp, l, r *arrow.Decimal128Type) *arrow.Decimal128Type {
	p1, s1, p2, s2 := l.Precision, l.Scale, r.Precision, r.Scale
	switch op {
	case OpAdd, OpSub:
		s := max(s1, s2)
		return adjustDecimal(max(p1-s1, p2-s2)+s+1, s)
	case OpMul:
		return adjustDecimal(p1+p2+1, s1+s2)
	case OpDiv:
		s := max(6, s1+p2+1)
		return adjustDecimal(p1-s1+s2+s, s)
	default: // OpMod
		s := max(s1, s2)
		return adjustDecimal(min(p1-s1, p2-s2)+s, s)
	}
}

// arithTypes returns the types both operands are converted to and the result type of
// l op r, or a reason why the operation is not defined.
func arithTypes(op ArithOp, l, r arrow.DataType) (lt, rt, res arrow.DataType, reason string) {
	lk, rk := kindOf(l), kindOf(r)
	if lk == tkNull && rk == tkNull {
		return dtNull, dtNull, dtNull, ""
	}
	if lk == tkNull {
		l, lk = r, rk
	}
	if rk == tkNull {
		r, rk = l, lk
	}
	for _, x := range []struct {
		k tkind
		t arrow.DataType
	}{{lk, l}, {rk, r}} {
		if !isNumeric(x.k) {
			return nil, nil, nil, fmt.Sprintf("%s is not a number (use CAST)", TypeName(x.t))
		}
	}
	switch {
	case op == OpDiv && lk != tkDecimal && rk != tkDecimal: // integers and floats divide as double
		return dtFloat64, dtFloat64, dtFloat64, ""
	case lk == tkFloat || rk == tkFloat:
		if isDouble(l) || isDouble(r) || lk == tkDecimal || rk == tkDecimal {
			return dtFloat64, dtFloat64, dtFloat64, ""
		}
		return dtFloat32, dtFloat32, dtFloat32, ""
	case lk == tkDecimal || rk == tkDecimal:
		ld, rd := asDecimal(l), asDecimal(r)
		return ld, rd, decimalArithType(op, ld, rd), ""
	}
	w := intTypeOfWidth(max(intWidth(l), intWidth(r)))
	return w, w, w, ""
}

func isDouble(t arrow.DataType) bool { _, ok := t.(*arrow.Float64Type); return ok }

// widerDecimal is the narrowest decimal holding both (Spark's widerDecimalType), bounded
// to precision 38.
func widerDecimal(a, b *arrow.Decimal128Type) *arrow.Decimal128Type {
	s := max(a.Scale, b.Scale)
	p := max(a.Precision-a.Scale, b.Precision-b.Scale) + s
	if p > 38 {
		p = 38
	}
	return &arrow.Decimal128Type{Precision: p, Scale: min(s, p)}
}

// commonType is the type the branches of a CASE are converted to (Spark's
// findWiderTypeForTwo without string promotion), or false.
func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	ak, bk := kindOf(a), kindOf(b)
	switch {
	case ak == tkNull:
		return b, true
	case bk == tkNull:
		return a, true
	case ak == bk && ak != tkInt && ak != tkFloat && ak != tkDecimal:
		if ak == tkString {
			return dtString, true
		}
		if ak == tkBinary {
			return dtBinary, true
		}
		return a, true
	case isNumeric(ak) && isNumeric(bk):
		switch {
		case isDouble(a) || isDouble(b) || (ak == tkFloat && bk == tkDecimal) || (ak == tkDecimal && bk == tkFloat):
			return dtFloat64, true
		case ak == tkFloat || bk == tkFloat:
			return dtFloat32, true
		case ak == tkDecimal || bk == tkDecimal:
			return widerDecimal(asDecimal(a), asDecimal(b)), true
		}
		return intTypeOfWidth(max(intWidth(a), intWidth(b))), true
	case ak == tkDate && (bk == tkTimestamp || bk == tkTimestampNTZ):
		return b, true
	case bk == tkDate && (ak == tkTimestamp || ak == tkTimestampNTZ):
		return a, true
	}
	return nil, false
}

// castAllowed reports whether CAST(x AS to) is defined for x of type from (ANSI).
func castAllowed(from, to arrow.DataType) bool {
	fk, tk := kindOf(from), kindOf(to)
	if fk == tkOther || tk == tkOther || tk == tkNull {
		return fk == tkNull && tk != tkOther
	}
	switch fk {
	case tkNull, tkString:
		return true
	case tkBool, tkInt, tkFloat, tkDecimal:
		return tk == tkBool || isNumeric(tk) || tk == tkString
	case tkBinary:
		return tk == tkBinary || tk == tkString
	case tkDate, tkTimestamp, tkTimestampNTZ:
		return tk == tkDate || tk == tkTimestamp || tk == tkTimestampNTZ || tk == tkString
	}
	return false
}

// assignAllowed reports whether a value of type from may be assigned to a column of
// type to without CAST: conversions that keep the value (they convert exactly or fail
// at run time naming the row): integers to any integer, decimal, float or double
// (checked for range and exactness); decimals with scale 0 to integers; float to
// double; date to timestamp; NULL to anything; each type to itself. The one rounding
// conversion is decimal to decimal: a value with more scale than the column is rounded
// HALF_UP to the column's scale, as every SQL engine (Spark, PostgreSQL) does on
// assignment, and fails if it does not fit the precision.
func assignAllowed(from, to arrow.DataType) bool {
	fk, tk := kindOf(from), kindOf(to)
	if tk == tkOther || fk == tkOther {
		return false
	}
	switch fk {
	case tkNull:
		return true
	case tkInt:
		return tk == tkInt || tk == tkFloat || tk == tkDecimal
	case tkDecimal:
		fd := from.(*arrow.Decimal128Type)
		if tk == tkDecimal {
			return true
		}
		return tk == tkInt && fd.Scale == 0
	case tkFloat:
		return tk == tkFloat && (isDouble(to) || !isDouble(from))
	case tkDate:
		return tk == tkDate || tk == tkTimestamp || tk == tkTimestampNTZ
	}
	return fk == tk
}
