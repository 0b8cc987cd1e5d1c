package input

// Typing CSV cells and JSON values into Arrow columns: one set of rules for both input
// formats, strict where a lenient guess would change data. A value that does not fit
// its column exactly (31.5 or "31" into a bigint, 1e400 into a double, 1.234 into
// decimal(10,2), a zone on a timestamp_ntz) is an error, never a null or a rounded
// value. Readers add the file, line and column to the errors returned here.

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

// maxJSONDepth bounds the nesting of JSON values (arrays and objects).
const maxJSONDepth = 512

// jsonObject is a decoded JSON object with its keys in document order.
type jsonObject struct {
	keys []string
	vals []any
}

// checkConvertible reports whether CSV and JSONL values can be read into a column of
// type t (every type a Delta table maps to Arrow).
func checkConvertible(t arrow.DataType) error {
	switch tt := t.(type) {
	case *arrow.BooleanType, *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Float32Type, *arrow.Float64Type, *arrow.Decimal128Type, *arrow.StringType, *arrow.BinaryType,
		*arrow.Date32Type, *arrow.TimestampType:
		return nil
	case *arrow.StructType:
		for _, f := range tt.Fields() {
			if err := checkConvertible(f.Type); err != nil {
				return err
			}
		}
		return nil
	case *arrow.ListType:
		return checkConvertible(tt.Elem())
	case *arrow.MapType:
		if err := checkConvertible(tt.KeyType()); err != nil {
			return err
		}
		return checkConvertible(tt.ItemType())
	}
	return fmt.Errorf("type %s cannot be read from CSV or JSON input", typeName(t))
}

// typeName names t for messages as Delta does (value.DisplayType).
func typeName(t arrow.DataType) string { return value.DisplayType(t) }

// appendText appends the CSV cell s (not null) to b, converted to b's type. Nested
// columns take the cell as JSON text (what scan --format csv writes for them).
func appendText(b array.Builder, s string) error {
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		switch {
		case strings.EqualFold(strings.TrimSpace(s), "true"):
			bb.Append(true)
		case strings.EqualFold(strings.TrimSpace(s), "false"):
			bb.Append(false)
		default:
			return fmt.Errorf("cannot read %q as boolean (want true or false)", s)
		}
		return nil
	case *array.Int8Builder, *array.Int16Builder, *array.Int32Builder, *array.Int64Builder:
		return appendInt(b, strings.TrimSpace(s))
	case *array.Float32Builder, *array.Float64Builder:
		return appendFloat(b, strings.TrimSpace(s))
	case *array.Decimal128Builder:
		n, err := parseDecimal(strings.TrimSpace(s), bb.Type().(*arrow.Decimal128Type))
		if err != nil {
			return err
		}
		bb.Append(n)
		return nil
	case *array.StringBuilder:
		bb.Append(s)
		return nil
	case *array.BinaryBuilder:
		if h, ok := strings.CutPrefix(s, "0x"); ok {
			raw, err := hex.DecodeString(h)
			if err != nil {
				return fmt.Errorf("cannot read %q as binary: bad hex after 0x", s)
			}
			bb.Append(raw)
			return nil
		}
		bb.Append([]byte(s))
		return nil
	case *array.Date32Builder:
		return appendDate(bb, s)
	case *array.TimestampBuilder:
		return appendTimestamp(bb, s)
	case *array.StructBuilder, *array.ListBuilder, *array.MapBuilder:
		v, err := parseJSON([]byte(s), nil)
		if err != nil {
			return fmt.Errorf("cannot read %q as %s: invalid JSON: %v", abbreviate(s), typeName(b.Type()), err)
		}
		return appendJSON(b, v)
	}
	return fmt.Errorf("type %s cannot be read from CSV", typeName(b.Type()))
}

// appendJSON appends the decoded JSON value v to b, converted to b's type.
func appendJSON(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	wrong := func() error {
		return fmt.Errorf("cannot read %s as %s", describeJSON(v), typeName(b.Type()))
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return wrong()
		}
		bb.Append(x)
		return nil
	case *array.Int8Builder, *array.Int16Builder, *array.Int32Builder, *array.Int64Builder:
		n, ok := v.(json.Number)
		if !ok {
			return wrong()
		}
		return appendInt(b, string(n))
	case *array.Float32Builder, *array.Float64Builder:
		switch x := v.(type) {
		case json.Number:
			return appendFloat(b, string(x))
		case string: // JSON has no NaN or infinities; scan --format jsonl writes them as strings
			if isSpecialFloat(x) {
				return appendFloat(b, x)
			}
		}
		return wrong()
	case *array.Decimal128Builder:
		var s string
		switch x := v.(type) {
		case json.Number:
			s = string(x)
		case string:
			s = x
		default:
			return wrong()
		}
		n, err := parseDecimal(s, bb.Type().(*arrow.Decimal128Type))
		if err != nil {
			return err
		}
		bb.Append(n)
		return nil
	case *array.StringBuilder:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		bb.Append(s)
		return nil
	case *array.BinaryBuilder:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("cannot read %q as binary: want base64", abbreviate(s))
		}
		bb.Append(raw)
		return nil
	case *array.Date32Builder:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		return appendDate(bb, s)
	case *array.TimestampBuilder:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		return appendTimestamp(bb, s)
	case *array.StructBuilder:
		obj, ok := v.(*jsonObject)
		if !ok {
			return wrong()
		}
		st := bb.Type().(*arrow.StructType)
		idx, err := matchKeys(obj.keys, st.Fields(), "field")
		if err != nil {
			return err
		}
		bb.Append(true)
		for f := 0; f < st.NumFields(); f++ {
			fv := any(nil)
			if idx[f] >= 0 {
				fv = obj.vals[idx[f]]
			}
			if fv == nil && !st.Field(f).Nullable {
				return fmt.Errorf("struct field %q is NOT NULL but the value is missing or null", st.Field(f).Name)
			}
			if err := appendJSON(bb.FieldBuilder(f), fv); err != nil {
				return fmt.Errorf("field %q: %w", st.Field(f).Name, err)
			}
		}
		return nil
	case *array.ListBuilder:
		items, ok := v.([]any)
		if !ok {
			return wrong()
		}
		bb.Append(true)
		for i, it := range items {
			if err := appendJSON(bb.ValueBuilder(), it); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case *array.MapBuilder:
		return appendMap(bb, v, wrong)
	}
	return fmt.Errorf("type %s cannot be read from JSON", typeName(b.Type()))
}

// appendMap appends a map given as a JSON object (string keys) or as a list of
// {"key": k, "value": v} objects (what scan --format jsonl writes).
func appendMap(bb *array.MapBuilder, v any, wrong func() error) error {
	mt := bb.Type().(*arrow.MapType)
	type entry struct{ k, v any }
	var entries []entry
	switch x := v.(type) {
	case *jsonObject:
		for i, k := range x.keys {
			entries = append(entries, entry{k, x.vals[i]})
		}
	case []any:
		for i, e := range x {
			obj, ok := e.(*jsonObject)
			if !ok || len(obj.keys) != 2 {
				return fmt.Errorf("map entry %d: want {\"key\": ..., \"value\": ...}", i)
			}
			var en entry
			for j, k := range obj.keys {
				switch k {
				case "key":
					en.k = obj.vals[j]
				case "value":
					en.v = obj.vals[j]
				default:
					return fmt.Errorf("map entry %d: unexpected key %q", i, k)
				}
			}
			entries = append(entries, en)
		}
	default:
		return wrong()
	}
	bb.Append(true)
	seen := map[string]bool{}
	for _, e := range entries {
		if e.k == nil {
			return errors.New("map key is null")
		}
		ks := fmt.Sprint(e.k)
		if seen[ks] {
			return fmt.Errorf("duplicate map key %s", abbreviate(ks))
		}
		seen[ks] = true
		var err error
		if s, ok := e.k.(string); ok && mt.KeyType().ID() != arrow.STRING && mt.KeyType().ID() != arrow.BINARY {
			err = appendText(bb.KeyBuilder(), s) // object keys are strings: "1" for an int key
		} else {
			err = appendJSON(bb.KeyBuilder(), e.k)
		}
		if err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		if e.v == nil && !mt.ItemField().Nullable {
			return fmt.Errorf("map value of key %s is null but values are NOT NULL", abbreviate(ks))
		}
		if err := appendJSON(bb.ItemBuilder(), e.v); err != nil {
			return fmt.Errorf("map value of key %s: %w", abbreviate(ks), err)
		}
	}
	return nil
}

// matchKeys maps each field to the index of its key (-1 when absent): an exact match,
// else the one key equal ignoring case (Delta column names are case-insensitive). A
// key that matches no field, or two keys for one field, is an error.
func matchKeys(keys []string, fields []arrow.Field, what string) ([]int, error) {
	idx := make([]int, len(fields))
	for i := range idx {
		idx[i] = -1
	}
	used := make([]bool, len(keys))
	for f, fd := range fields {
		for k, key := range keys {
			if key == fd.Name {
				idx[f], used[k] = k, true
				break
			}
		}
	}
	for f, fd := range fields {
		if idx[f] >= 0 {
			continue
		}
		for k, key := range keys {
			if used[k] || !strings.EqualFold(key, fd.Name) {
				continue
			}
			if idx[f] >= 0 {
				return nil, fmt.Errorf("%ss %q and %q both name %s %q", what, keys[idx[f]], key, what, fd.Name)
			}
			idx[f], used[k] = k, true
		}
	}
	for k, u := range used {
		if u {
			continue
		}
		for _, fd := range fields {
			if strings.EqualFold(keys[k], fd.Name) {
				return nil, fmt.Errorf("%ss %q and %q both name %s %q", what, keys[k], fd.Name, what, fd.Name)
			}
		}
		names := make([]string, len(fields))
		for i, fd := range fields {
			names[i] = fd.Name
		}
		return nil, fmt.Errorf("%s %q is not in the table schema (%ss: %s); to keep it, add the column first (skiplake alter TABLE --add-column \"NAME TYPE\") or write with --merge-schema", what, keys[k], what, strings.Join(names, ", "))
	}
	return idx, nil
}

func appendInt(b array.Builder, s string) error {
	n, err := strconv.ParseInt(s, 10, value.IntBits(b.Type()))
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("%s is out of range for %s", abbreviate(s), typeName(b.Type()))
		}
		return fmt.Errorf("cannot read %q as %s", abbreviate(s), typeName(b.Type()))
	}
	value.AppendInt64(b, n)
	return nil
}

// isSpecialFloat reports the spellings of NaN and the infinities that are accepted.
func isSpecialFloat(s string) bool {
	switch strings.ToLower(s) {
	case "nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf":
		return true
	}
	return false
}

// isFloatText reports a decimal floating-point literal: [+-]digits[.digits][e[+-]digits]
// (no hex floats, no underscores), or a special value.
func isFloatText(s string) bool {
	if isSpecialFloat(s) {
		return true
	}
	ok, _ := value.ScanDecimalLiteral(s)
	return ok
}

func appendFloat(b array.Builder, s string) error {
	bits := 64
	if b.Type().ID() == arrow.FLOAT32 {
		bits = 32
	}
	if !isFloatText(s) {
		return fmt.Errorf("cannot read %q as %s", abbreviate(s), typeName(b.Type()))
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil {
		// ErrRange: the value is beyond the type's range (it would become ±Inf).
		return fmt.Errorf("%s is out of range for %s", abbreviate(s), typeName(b.Type()))
	}
	switch bb := b.(type) {
	case *array.Float32Builder:
		bb.Append(float32(f))
	case *array.Float64Builder:
		bb.Append(f)
	}
	return nil
}

// parseDecimal reads s as a decimal of type t, exactly: more fraction digits than the
// scale (unless they are zeros) or more integer digits than precision-scale are errors.
func parseDecimal(s string, t *arrow.Decimal128Type) (decimal128.Num, error) {
	bad := func(why string) (decimal128.Num, error) {
		return decimal128.Num{}, fmt.Errorf("cannot read %q as %s: %s", abbreviate(s), typeName(t), why)
	}
	if !isFloatText(s) || isSpecialFloat(s) {
		return bad("not a decimal number")
	}
	if len(s) > 400 {
		return bad("too long")
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return bad("not a decimal number")
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
	if !scaled.IsInt() {
		return bad(fmt.Sprintf("more than %d digits after the point", t.Scale))
	}
	n := scaled.Num()
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
	if new(big.Int).Abs(n).Cmp(limit) >= 0 {
		return bad(fmt.Sprintf("more than %d digits before the point", t.Precision-t.Scale))
	}
	return decimal128.FromBigInt(n), nil
}

func appendDate(b *array.Date32Builder, s string) error {
	d, err := expr.ParseDate(s)
	if err != nil || d < math.MinInt32 || d > math.MaxInt32 {
		return fmt.Errorf("cannot read %q as date (want YYYY-MM-DD)", abbreviate(s))
	}
	b.Append(arrow.Date32(d))
	return nil
}

// appendTimestamp reads s (a date, or a date and time with an optional zone; without
// a zone the wall clock is taken as UTC) into a timestamp column. A zone on a
// timestamp_ntz value is an error: the value would change meaning.
func appendTimestamp(b *array.TimestampBuilder, s string) error {
	tt := b.Type().(*arrow.TimestampType)
	micros, hasZone, err := expr.ParseTimestamp(s)
	if err != nil {
		return fmt.Errorf("cannot read %q as %s (want YYYY-MM-DD[ HH:MM:SS[.ffffff]][Z|+HH:MM])", abbreviate(s), typeName(tt))
	}
	if hasZone && tt.TimeZone == "" {
		return fmt.Errorf("%q has a time zone, but the column is timestamp_ntz (a wall clock without zone)", abbreviate(s))
	}
	var v int64
	switch tt.Unit {
	case arrow.Second:
		if micros%1_000_000 != 0 {
			return fmt.Errorf("%q has fractional seconds, the column is in seconds", abbreviate(s))
		}
		v = micros / 1_000_000
	case arrow.Millisecond:
		if micros%1000 != 0 {
			return fmt.Errorf("%q has sub-millisecond digits, the column is in milliseconds", abbreviate(s))
		}
		v = micros / 1000
	case arrow.Microsecond:
		v = micros
	case arrow.Nanosecond:
		if micros > math.MaxInt64/1000 || micros < math.MinInt64/1000 {
			return fmt.Errorf("%q is out of range for nanosecond timestamps", abbreviate(s))
		}
		v = micros * 1000
	}
	b.Append(arrow.Timestamp(v))
	return nil
}

// describeJSON names a decoded JSON value for messages.
func describeJSON(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return string(x)
	case string:
		return strconv.Quote(abbreviate(x))
	case []any:
		return "an array"
	case *jsonObject:
		return "an object"
	}
	return fmt.Sprint(v)
}

// abbreviate shortens long values in messages.
func abbreviate(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
