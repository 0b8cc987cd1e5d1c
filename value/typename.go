package value

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
)

// DisplayType names an Arrow type by the Delta type it holds, spelled as Spark SQL
// spells types for people (DataType.catalogString, what DESCRIBE shows and what SQL
// DDL and CAST accept): boolean, tinyint, smallint, int, bigint, float, double,
// decimal(p,s), string, binary, date, timestamp (an instant: a timestamp with a time
// zone), timestamp_ntz (no zone), void (null), array<T>, map<K,V> and
// struct<name:T,...> (a name that is not a plain identifier in backticks, ` doubled).
// Arrow spellings of the same Delta type share its name (large_utf8 and utf8 are
// both string, timestamp[ns, tz=UTC] is timestamp); a type with no Delta counterpart
// (unsigned integers, float16, times, durations, intervals, ...) keeps its Arrow
// name. It is the one place a type is named for a person (describe, error messages):
// log.DisplayType names Delta schema types through it.
func DisplayType(t arrow.DataType) string {
	var b strings.Builder
	writeDisplayType(&b, t)
	return b.String()
}

func writeDisplayType(b *strings.Builder, t arrow.DataType) {
	switch tt := t.(type) {
	case nil:
		b.WriteString("<nil>")
	case *arrow.BooleanType:
		b.WriteString("boolean")
	case *arrow.Int8Type:
		b.WriteString("tinyint")
	case *arrow.Int16Type:
		b.WriteString("smallint")
	case *arrow.Int32Type:
		b.WriteString("int")
	case *arrow.Int64Type:
		b.WriteString("bigint")
	case *arrow.Float32Type:
		b.WriteString("float")
	case *arrow.Float64Type:
		b.WriteString("double")
	case arrow.DecimalType:
		b.WriteString("decimal(" + strconv.Itoa(int(tt.GetPrecision())) + "," + strconv.Itoa(int(tt.GetScale())) + ")")
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		b.WriteString("string")
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		b.WriteString("binary")
	case *arrow.Date32Type, *arrow.Date64Type:
		b.WriteString("date")
	case *arrow.TimestampType:
		if tt.TimeZone == "" {
			b.WriteString("timestamp_ntz")
		} else {
			b.WriteString("timestamp")
		}
	case *arrow.NullType:
		b.WriteString("void")
	case *arrow.DictionaryType:
		writeDisplayType(b, tt.ValueType)
	case *arrow.StructType:
		b.WriteString("struct<")
		for i, f := range tt.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quoteFieldName(f.Name))
			b.WriteByte(':')
			writeDisplayType(b, f.Type)
		}
		b.WriteByte('>')
	case *arrow.MapType:
		b.WriteString("map<")
		writeDisplayType(b, tt.KeyType())
		b.WriteByte(',')
		writeDisplayType(b, tt.ItemType())
		b.WriteByte('>')
	case arrow.ListLikeType:
		b.WriteString("array<")
		writeDisplayType(b, tt.Elem())
		b.WriteByte('>')
	default:
		b.WriteString(t.String())
	}
}

// quoteFieldName returns name as is when it is a plain identifier (letters, digits,
// underscores), else in backticks with each backtick doubled.
func quoteFieldName(name string) string {
	plain := name != ""
	for _, r := range name {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// DisplayTypes names two types that differ (for a "table has X, data has Y" message)
// as DisplayType does, adding each one's Arrow spelling when both would read the same
// ("string (Arrow large_utf8)" against "string (Arrow utf8)"), so the message always
// shows the difference.
func DisplayTypes(a, b arrow.DataType) (string, string) {
	da, db := DisplayType(a), DisplayType(b)
	if da == db && a != nil && b != nil && !arrow.TypeEqual(a, b) {
		return da + " (Arrow " + a.String() + ")", db + " (Arrow " + b.String() + ")"
	}
	return da, db
}
