package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/value"
)

// conformer maps incoming batches onto the table's logical schema: columns matched by
// name (case-insensitively), reordered to table order, and the few representation
// differences that carry the same values (string/large_string, binary/large_binary,
// timestamp units and UTC spellings, dictionary-encoded strings) cast away. Anything
// else is a schema mismatch naming the column and both types. Nulls in NOT NULL columns
// are refused, and so are nulls in non-nullable nested fields, elements and values (see
// nonnull.go). A type that differs only in nested names, nullability or the spelling
// of UTC is retyped (the same buffers under the table's type).
type conformer struct {
	table    *arrow.Schema
	delta    *log.StructType
	mem      memory.Allocator
	inSchema *arrow.Schema // the last input schema planned for
	plan     []int         // table field i <- input column plan[i] (-1: missing, optional)
	casts    []bool
	retypes  []bool // same layout, another spelling of the type (nested names, nullability, UTC)
	required []bool // the column has a non-nullable field, element or value nested in it
	// optional marks the table columns the input may lack (generated and identity
	// columns of rows being inserted, see rules.go): a missing one becomes a
	// placeholder of nulls, listed in missing, for completeInsert to fill.
	optional []bool
	missing  []int
}

func newConformer(table *arrow.Schema, delta *log.StructType, mem memory.Allocator) *conformer {
	return &conformer{table: table, delta: delta, mem: mem}
}

func (c *conformer) planFor(in *arrow.Schema) error {
	if c.inSchema != nil && c.inSchema.Equal(in) {
		return nil
	}
	plan := make([]int, c.table.NumFields())
	casts := make([]bool, c.table.NumFields())
	retypes := make([]bool, c.table.NumFields())
	required := make([]bool, c.table.NumFields())
	used := make([]bool, in.NumFields())
	var missing []int
	for i, tf := range c.table.Fields() {
		j := fieldIndexFold(in, tf.Name)
		if j < 0 && i < len(c.optional) && c.optional[i] {
			plan[i] = -1
			missing = append(missing, i)
			continue
		}
		if j < 0 {
			return fmt.Errorf("%w: column %q (%s) is missing from the data (data columns: %s)", ErrSchemaMismatch, tf.Name, value.DisplayType(tf.Type), fieldNames(in))
		}
		used[j] = true
		plan[i] = j
		inT := in.Field(j).Type
		if df := c.delta.Field(tf.Name); df != nil {
			required[i] = hasRequired(df.Type)
		}
		if sameType(tf.Type, inT) {
			retypes[i] = !arrow.TypeEqual(tf.Type, inT)
			continue
		}
		if !castable(tf.Type, inT) {
			want, got := value.DisplayTypes(tf.Type, inT)
			return fmt.Errorf("%w: column %q: table has %s, data has %s", ErrSchemaMismatch, tf.Name, want, got)
		}
		casts[i] = true
	}
	for j, u := range used {
		if !u {
			return fmt.Errorf("%w: column %q (%s) is not in the table schema (table columns: %s)", ErrSchemaMismatch, in.Field(j).Name, value.DisplayType(in.Field(j).Type), fieldNames(c.table))
		}
	}
	c.inSchema, c.plan, c.casts, c.retypes, c.required, c.missing = in, plan, casts, retypes, required, missing
	return nil
}

// conform returns rec as a batch of the table schema. The caller releases the result.
func (c *conformer) conform(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if err := c.planFor(rec.Schema()); err != nil {
		return nil, err
	}
	cols := make([]arrow.Array, len(c.plan))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, j := range c.plan {
		tf := c.table.Field(i)
		if j < 0 {
			cols[i] = array.MakeArrayOfNull(c.mem, tf.Type, int(rec.NumRows()))
			continue
		}
		src := rec.Column(j)
		switch {
		case c.retypes[i]:
			cols[i] = retype(src, tf.Type)
		case !c.casts[i]:
			src.Retain()
			cols[i] = src
		default:
			out, err := castTo(ctx, src, tf.Type, c.mem)
			if err != nil {
				from, to := value.DisplayTypes(src.DataType(), tf.Type)
				return nil, fmt.Errorf("%w: column %q: cannot convert %s to %s: %v", ErrSchemaMismatch, tf.Name, from, to, err)
			}
			cols[i] = out
		}
		df := c.delta.Field(tf.Name)
		if df != nil && !df.Nullable && cols[i].NullN() > 0 {
			return nil, fmt.Errorf("%w: column %q has %d null value(s) but is declared NOT NULL", ErrNullInNonNullable, tf.Name, cols[i].NullN())
		}
		if df != nil && c.required[i] {
			if p := nestedNull(cols[i], df.Type, nil); p != "" {
				return nil, fmt.Errorf("%w: column %q: %s.%s holds a null but is declared NOT NULL", ErrNullInNonNullable, tf.Name, tf.Name, p)
			}
		}
	}
	return array.NewRecordBatch(c.table, cols, rec.NumRows()), nil
}

// sameType compares types ignoring field names' metadata and nullability of nested
// fields, which Arrow producers spell differently for the same data.
func sameType(a, b arrow.DataType) bool {
	if arrow.TypeEqual(a, b) {
		return true
	}
	switch at := a.(type) {
	case *arrow.TimestampType:
		bt, ok := b.(*arrow.TimestampType)
		return ok && at.Unit == bt.Unit && (at.TimeZone == "") == (bt.TimeZone == "") && isUTC(bt.TimeZone) == isUTC(at.TimeZone)
	case *arrow.StructType:
		bt, ok := b.(*arrow.StructType)
		if !ok || at.NumFields() != bt.NumFields() {
			return false
		}
		for i := 0; i < at.NumFields(); i++ {
			if !strings.EqualFold(at.Field(i).Name, bt.Field(i).Name) || !sameType(at.Field(i).Type, bt.Field(i).Type) {
				return false
			}
		}
		return true
	case *arrow.ListType:
		bt, ok := b.(*arrow.ListType)
		return ok && sameType(at.Elem(), bt.Elem())
	case *arrow.MapType:
		bt, ok := b.(*arrow.MapType)
		return ok && sameType(at.KeyType(), bt.KeyType()) && sameType(at.ItemType(), bt.ItemType())
	}
	return false
}

func isUTC(tz string) bool {
	switch strings.ToUpper(tz) {
	case "UTC", "Z", "+00:00", "ETC/UTC", "GMT", "+0000", "00:00":
		return true
	}
	return false
}

// castable lists the representation changes Write accepts silently.
func castable(want, have arrow.DataType) bool {
	switch w := want.(type) {
	case *arrow.StringType:
		switch h := have.(type) {
		case *arrow.LargeStringType, *arrow.StringViewType:
			return true
		case *arrow.DictionaryType:
			return h.ValueType.ID() == arrow.STRING || h.ValueType.ID() == arrow.LARGE_STRING
		}
	case *arrow.BinaryType:
		switch have.(type) {
		case *arrow.LargeBinaryType, *arrow.BinaryViewType:
			return true
		}
	case *arrow.TimestampType:
		h, ok := have.(*arrow.TimestampType)
		// An instant with any zone is the same instant in UTC; a zone-less value stays zone-less.
		return ok && (w.TimeZone == "") == (h.TimeZone == "")
	}
	return false
}

func castTo(ctx context.Context, arr arrow.Array, to arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	if d, ok := arr.(*array.Dictionary); ok {
		dense, err := compute.TakeArray(compute.WithAllocator(ctx, mem), d.Dictionary(), d.Indices())
		if err != nil {
			return nil, err
		}
		defer dense.Release()
		return castTo(ctx, dense, to, mem)
	}
	if w, ok := to.(*arrow.TimestampType); ok {
		h := arr.DataType().(*arrow.TimestampType)
		if h.Unit == w.Unit {
			// Only the zone spelling differs: reinterpret the same buffers.
			data := array.NewData(w, arr.Len(), arr.Data().Buffers(), nil, arr.NullN(), arr.Data().Offset())
			defer data.Release()
			return array.MakeFromData(data), nil
		}
		tmp := &arrow.TimestampType{Unit: h.Unit, TimeZone: w.TimeZone}
		data := array.NewData(tmp, arr.Len(), arr.Data().Buffers(), nil, arr.NullN(), arr.Data().Offset())
		defer data.Release()
		src := array.MakeFromData(data)
		defer src.Release()
		return compute.CastArray(compute.WithAllocator(ctx, mem), src, compute.UnsafeCastOptions(w))
	}
	return compute.CastArray(compute.WithAllocator(ctx, mem), arr, compute.SafeCastOptions(to))
}
