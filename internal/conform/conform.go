package conform

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

// Conformer maps incoming batches onto the table's logical schema: the one place a
// write (append, overwrite, the rows MERGE inserts and updates, the source columns it
// converts) turns source data into table rows. Columns and struct fields are matched
// by name (exactly, else case-insensitively) and put in table order; a table column
// or struct field the source lacks is NULL when it is nullable and an error when it
// is NOT NULL (ErrNullInNonNullable); a source column the table lacks is an error
// (ErrSchemaMismatch; a write with MergeSchema adds it to the table first). Types
// follow store assignment (see CastError): equal types are kept as they are, the
// conversions Spark's ANSI store assignment allows are applied value by value
// (a value that does not fit is a *CastError naming the column, the value and its
// row), anything else is ErrSchemaMismatch naming the column and both types, before
// any row is converted. NULLs in NOT NULL columns and fields are refused.
//
// A Conformer plans once per input schema and counts the rows it has converted, so
// that errors name a row's position in the whole input.
type Conformer struct {
	table    *arrow.Schema
	mem      memory.Allocator
	inSchema *arrow.Schema // the last input schema planned for
	cols     []*colPlan    // per table column
	rows     int64         // rows conformed so far
	// Optional marks the table columns the input may lack even when NOT NULL
	// (generated and identity columns of rows being inserted): a missing one becomes
	// a placeholder of nulls, listed by Missing, for the caller to fill. Set it
	// before the first Check or Conform.
	Optional []bool
	missing  []int
}

// New returns a Conformer onto the table schema table, allocating from mem (nil: the
// default allocator).
func New(table *arrow.Schema, mem memory.Allocator) *Conformer {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Conformer{table: table, mem: mem}
}

// Missing lists the Optional table columns the last planned input schema lacks: the
// placeholders of NULLs in the batches Conform returns, in table column order.
func (c *Conformer) Missing() []int { return c.missing }

// colPlan says how one table column (or struct field) is made from the source.
type colPlan struct {
	field arrow.Field // the table's field
	path  string      // for messages
	src   int         // the source field's index among its siblings; -1: missing (NULLs)
	conv  Func        // nil: the source array is kept as it is
}

// Check plans for batches of schema in without converting any row: the columns the
// table lacks, the NOT NULL columns the data lacks and the types store assignment
// refuses are errors here.
func (c *Conformer) Check(in *arrow.Schema) error { return c.planFor(in) }

func (c *Conformer) planFor(in *arrow.Schema) error {
	if c.inSchema != nil && c.inSchema.Equal(in) {
		return nil
	}
	want := c.table.Fields()
	if c.Optional != nil {
		want = append([]arrow.Field(nil), want...)
		for i := range want {
			if c.Optional[i] {
				want[i].Nullable = true // may be missing: computed later
			}
		}
	}
	cols, err := planFields(want, in.Fields(), "", true)
	if err != nil {
		return err
	}
	var missing []int
	for i, p := range cols {
		p.field = c.table.Field(i) // NOT NULL of a column the input has is checked
		if c.Optional != nil && c.Optional[i] && p.src < 0 {
			missing = append(missing, i)
		}
	}
	c.inSchema, c.cols, c.missing = in, cols, missing
	return nil
}

// planFields plans the fields of a struct (top: the table's columns) from the source
// struct's fields.
func planFields(want, have []arrow.Field, path string, top bool) ([]*colPlan, error) {
	what := "field"
	if top {
		what = "column"
	}
	used := make([]bool, len(have))
	plans := make([]*colPlan, len(want))
	for i, tf := range want {
		p := &colPlan{field: tf, path: joinColumn(path, tf.Name), src: -1}
		plans[i] = p
		j := value.MatchField(have, tf.Name)
		if j < 0 {
			if !tf.Nullable {
				return nil, fmt.Errorf("%w: %s %q (%s) is NOT NULL and missing from the data (data %ss: %s)",
					ErrNullInNonNullable, what, p.path, value.DisplayType(tf.Type), what, namesOf(have))
			}
			continue
		}
		used[j] = true
		p.src = j
		conv, err := Converter(have[j].Type, tf.Type, p.path)
		if err != nil {
			return nil, err
		}
		p.conv = conv
	}
	for j, u := range used {
		if !u {
			return nil, fmt.Errorf("%w: %s %q (%s) is not in the table schema (table %ss: %s)",
				ErrSchemaMismatch, what, joinColumn(path, have[j].Name), value.DisplayType(have[j].Type), what, namesOf(want))
		}
	}
	return plans, nil
}

func namesOf(fields []arrow.Field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func joinColumn(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Converter returns how values of type from become values of the table type to (nil:
// they are kept as they are), or ErrSchemaMismatch naming the column and both types
// when store assignment refuses the conversion.
func Converter(from, to arrow.DataType, path string) (Func, error) {
	if arrow.TypeEqual(from, to) {
		return nil, nil
	}
	refuse := func() error {
		want, got := value.DisplayTypes(to, from)
		return fmt.Errorf("%w: column %q: table has %s, data has %s", ErrSchemaMismatch, path, want, got)
	}
	if d, ok := from.(*arrow.DictionaryType); ok {
		switch to.(type) {
		case *arrow.StructType, *arrow.ListType, *arrow.MapType:
			inner, err := Converter(d.ValueType, to, path)
			if err != nil {
				return nil, err
			}
			return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
				dense, err := decodeDictionary(mem, src.(*array.Dictionary))
				if err != nil {
					return nil, err
				}
				defer dense.Release()
				return Apply(inner, mem, dense, rows)
			}, nil
		}
	}
	if from.ID() == arrow.NULL {
		return func(mem memory.Allocator, src arrow.Array, _ RowMap) (arrow.Array, error) {
			return array.MakeArrayOfNull(mem, to, src.Len()), nil
		}, nil
	}
	switch tt := to.(type) {
	case *arrow.StructType:
		ft, ok := from.(*arrow.StructType)
		if !ok {
			return nil, refuse()
		}
		return structConverter(ft, tt, path)
	case *arrow.ListType:
		elem, ok := listElem(from)
		if !ok {
			return nil, refuse()
		}
		return listConverter(elem, tt, path)
	case *arrow.MapType:
		ft, ok := from.(*arrow.MapType)
		if !ok {
			return nil, refuse()
		}
		return mapConverter(ft, tt, path)
	}
	conv := storeCast(from, to, path)
	if conv == nil {
		return nil, refuse()
	}
	return conv, nil
}

// Apply runs conv (nil: keep src), returning a new reference.
func Apply(conv Func, mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
	if conv == nil {
		src.Retain()
		return src, nil
	}
	return conv(mem, src, rows)
}

func structConverter(from, to *arrow.StructType, path string) (Func, error) {
	plans, err := planFields(to.Fields(), from.Fields(), path, false)
	if err != nil {
		return nil, err
	}
	return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
		st := src.(*array.Struct)
		n := st.Len()
		children := make([]arrow.Array, len(plans))
		defer release(children)
		for i, p := range plans {
			if p.src < 0 {
				children[i] = array.MakeArrayOfNull(mem, p.field.Type, n)
				continue
			}
			child := st.Field(p.src)
			out, err := Apply(p.conv, mem, child, rows)
			if err != nil {
				return nil, err
			}
			children[i] = out
			if !p.field.Nullable {
				if i, ok := FirstNullWhereValid(out, st); ok {
					return nil, NullError(p.path, rows(i))
				}
			}
		}
		return newStruct(mem, to, st, children)
	}, nil
}

// newStruct assembles a struct array of type t with src's validity and children.
func newStruct(mem memory.Allocator, t *arrow.StructType, src arrow.Array, children []arrow.Array) (arrow.Array, error) {
	valid := validityFrom(mem, src)
	if valid != nil {
		defer valid.Release()
	}
	data := make([]arrow.ArrayData, len(children))
	for i, c := range children {
		data[i] = c.Data()
	}
	d := array.NewData(t, src.Len(), []*memory.Buffer{valid}, data, src.NullN(), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// FirstNullWhereValid returns the first index where child is null and parent is not.
func FirstNullWhereValid(child, parent arrow.Array) (int, bool) {
	if child.NullN() == 0 {
		return 0, false
	}
	for i := 0; i < child.Len(); i++ {
		if child.IsNull(i) && (parent == nil || parent.IsValid(i)) {
			return i, true
		}
	}
	return 0, false
}

// NullError reports the NULL at row (counting from 0) of the NOT NULL column path.
func NullError(path string, row int64) error {
	return fmt.Errorf("%w: column %q is NOT NULL but the value at row %d is null", ErrNullInNonNullable, path, row+1)
}

// listElem returns the element field of the list-like types a list column takes.
func listElem(t arrow.DataType) (arrow.Field, bool) {
	switch lt := t.(type) {
	case *arrow.ListType:
		return lt.ElemField(), true
	case *arrow.LargeListType:
		return lt.ElemField(), true
	case *arrow.FixedSizeListType:
		return lt.ElemField(), true
	}
	return arrow.Field{}, false
}

func listConverter(from arrow.Field, to *arrow.ListType, path string) (Func, error) {
	epath := path + ".element"
	conv, err := Converter(from.Type, to.Elem(), epath)
	if err != nil {
		return nil, err
	}
	notNull := !to.ElemField().Nullable
	return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
		offsets, values, err := listOffsets(src)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", ErrSchemaMismatch, path, err)
		}
		defer values.Release()
		elemRows := elementRows(offsets, rows)
		out, err := Apply(conv, mem, values, elemRows)
		if err != nil {
			return nil, err
		}
		defer out.Release()
		if notNull {
			if i, ok := FirstNullWhereValid(out, nil); ok {
				return nil, NullError(epath, elemRows(i))
			}
		}
		return assembleList(mem, to, src, offsets, out)
	}, nil
}

// listOffsets returns the int32 offsets (len+1, starting wherever the values start)
// and the values array of a list-like array, sliced to the offsets' range.
func listOffsets(src arrow.Array) ([]int32, arrow.Array, error) {
	n := src.Len()
	offs := make([]int32, n+1)
	switch a := src.(type) {
	case *array.List:
		raw := a.Offsets()
		base := raw[0]
		for i := range offs {
			offs[i] = raw[i] - base
		}
		return offs, array.NewSlice(a.ListValues(), int64(base), int64(raw[n])), nil
	case *array.LargeList:
		raw := a.Offsets()
		base := raw[0]
		if raw[n]-base > int64(^uint32(0)>>1) {
			return nil, nil, fmt.Errorf("a list of %d elements is too long for one batch", raw[n]-base)
		}
		for i := range offs {
			offs[i] = int32(raw[i] - base)
		}
		return offs, array.NewSlice(a.ListValues(), base, raw[n]), nil
	case *array.FixedSizeList:
		size := int32(a.DataType().(*arrow.FixedSizeListType).Len())
		for i := range offs {
			offs[i] = int32(i) * size
		}
		start := int64(a.Data().Offset()) * int64(size)
		return offs, array.NewSlice(a.ListValues(), start, start+int64(n)*int64(size)), nil
	}
	return nil, nil, fmt.Errorf("unexpected list array %s", src.DataType())
}

// elementRows maps an element index to the input row of its list.
func elementRows(offsets []int32, rows RowMap) RowMap {
	return func(i int) int64 {
		k := sort.Search(len(offsets)-1, func(k int) bool { return offsets[k+1] > int32(i) })
		return rows(k)
	}
}

func assembleList(mem memory.Allocator, t arrow.DataType, src arrow.Array, offsets []int32, values arrow.Array) (arrow.Array, error) {
	valid := validityFrom(mem, src)
	if valid != nil {
		defer valid.Release()
	}
	ob := memory.NewResizableBuffer(mem)
	defer ob.Release()
	ob.Resize(len(offsets) * 4)
	copy(arrow.Int32Traits.CastFromBytes(ob.Bytes()), offsets)
	d := array.NewData(t, src.Len(), []*memory.Buffer{valid, ob}, []arrow.ArrayData{values.Data()}, src.NullN(), 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

func mapConverter(from, to *arrow.MapType, path string) (Func, error) {
	kconv, err := Converter(from.KeyType(), to.KeyType(), path+".key")
	if err != nil {
		return nil, err
	}
	vconv, err := Converter(from.ItemType(), to.ItemType(), path+".value")
	if err != nil {
		return nil, err
	}
	notNull := !to.ItemField().Nullable
	return func(mem memory.Allocator, src arrow.Array, rows RowMap) (arrow.Array, error) {
		m := src.(*array.Map)
		raw := m.Offsets()
		base := raw[0]
		offs := make([]int32, len(raw))
		for i := range raw {
			offs[i] = raw[i] - base
		}
		keys := array.NewSlice(m.Keys(), int64(base), int64(raw[len(raw)-1]))
		defer keys.Release()
		items := array.NewSlice(m.Items(), int64(base), int64(raw[len(raw)-1]))
		defer items.Release()
		elemRows := elementRows(offs, rows)
		k, err := Apply(kconv, mem, keys, elemRows)
		if err != nil {
			return nil, err
		}
		defer k.Release()
		v, err := Apply(vconv, mem, items, elemRows)
		if err != nil {
			return nil, err
		}
		defer v.Release()
		if i, ok := FirstNullWhereValid(k, nil); ok {
			return nil, NullError(path+".key", elemRows(i))
		}
		if notNull {
			if i, ok := FirstNullWhereValid(v, nil); ok {
				return nil, NullError(path+".value", elemRows(i))
			}
		}
		entryType := to.Elem().(*arrow.StructType)
		ed := array.NewData(entryType, k.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{k.Data(), v.Data()}, 0, 0)
		defer ed.Release()
		entries := array.MakeFromData(ed)
		defer entries.Release()
		return assembleList(mem, to, src, offs, entries)
	}, nil
}

// validityFrom returns src's validity bitmap starting at bit 0 (nil without nulls).
// The caller releases it.
func validityFrom(mem memory.Allocator, src arrow.Array) *memory.Buffer {
	if src.NullN() == 0 {
		return nil
	}
	b := memory.NewResizableBuffer(mem)
	b.Resize(int((src.Len() + 7) / 8))
	bytes := b.Bytes()
	for i := range bytes {
		bytes[i] = 0
	}
	for i := 0; i < src.Len(); i++ {
		if src.IsValid(i) {
			bytes[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// Conform returns rec as a batch of the table schema. The caller releases the result.
func (c *Conformer) Conform(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if err := c.planFor(rec.Schema()); err != nil {
		return nil, err
	}
	base := c.rows
	rows := func(i int) int64 { return base + int64(i) }
	n := int(rec.NumRows())
	cols := make([]arrow.Array, len(c.cols))
	defer release(cols)
	for i, p := range c.cols {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.src < 0 {
			cols[i] = array.MakeArrayOfNull(c.mem, p.field.Type, n)
			continue
		}
		out, err := Apply(p.conv, c.mem, rec.Column(p.src), rows)
		if err != nil {
			return nil, err
		}
		cols[i] = out
		if !p.field.Nullable {
			if r, ok := FirstNullWhereValid(out, nil); ok {
				return nil, NullError(p.path, rows(r))
			}
		}
	}
	c.rows += int64(n)
	return array.NewRecordBatch(c.table, cols, rec.NumRows()), nil
}

// release releases the non-nil arrays of as.
func release(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}
