package expr

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// AssignmentError reports an assignment of an UPDATE SET list that cannot be bound,
// naming the column and the assignment's position in the SET text, e.g.
// `expr: SET at 14: column "qty" (integer): cannot assign decimal(13,1) without CAST`.
type AssignmentError struct {
	// Column is the target as written.
	Column string
	// Pos is the assignment's 1-based byte offset in the SET text (0 if built in Go).
	Pos int
	// Err is the cause: wraps ErrType, ErrUnknownColumn, ErrNotNullable, ...
	Err error
}

// Error renders the message.
func (e *AssignmentError) Error() string {
	where := "SET"
	if e.Pos > 0 {
		where = fmt.Sprintf("SET at %d", e.Pos)
	}
	return fmt.Sprintf("expr: %s: column %q: %v", where, e.Column, strings.TrimPrefix(e.Err.Error(), "expr: "))
}

// Unwrap returns the cause.
func (e *AssignmentError) Unwrap() error { return e.Err }

// BoundAssignments is an UPDATE SET list bound to a table schema: each assignment's
// value typed and converted to its column's type. It is immutable and safe for
// concurrent use.
type BoundAssignments struct {
	schema *arrow.Schema
	list   []boundAssignment
}

type boundAssignment struct {
	field int // top-level field index in the schema
	name  string
	value *BoundScalar // of exactly the field's type
	src   Assignment
}

// Schema returns the schema the assignments were bound to.
func (b *BoundAssignments) Schema() *arrow.Schema { return b.schema }

// Fields returns the schema indices of the assigned columns, in SET-list order.
func (b *BoundAssignments) Fields() []int {
	out := make([]int, len(b.list))
	for i, a := range b.list {
		out[i] = a.field
	}
	return out
}

// Value returns the bound value of the k-th assignment (of the column's type).
func (b *BoundAssignments) Value(k int) *BoundScalar { return b.list[k].value }

// String renders the SET list with column names as in the schema and the values'
// implicit conversions as CASTs.
func (b *BoundAssignments) String() string {
	parts := make([]string, len(b.list))
	for i, a := range b.list {
		parts[i] = QuoteName(a.name) + " = " + a.value.String()
	}
	return strings.Join(parts, ", ")
}

// BindAssignments binds an UPDATE SET list to schema (the table's logical schema).
// Targets are top-level columns, resolved like column references (case-insensitively,
// exact match first), each assigned at most once. Each value is bound with BindScalar
// and converted to its column's type:
//
//   - a literal must convert exactly (`byte_col = 300` and `int_col = 1.5` are errors;
//     '2024-01-01' is a date for a date column, 0.1 the nearest double for a double
//     column); NULL needs a nullable column;
//   - any other value converts implicitly only when the conversion keeps the value
//     (see assignAllowed: integers to wider or narrower integers, to decimals and
//     floats; decimals with scale 0 to integers; float to double; date to timestamp),
//     and Apply fails with ErrOverflow or ErrInexact for a row whose value does not fit,
//     naming the row; the one rounding conversion is decimal to decimal, which rounds
//     HALF_UP to the column's scale (`price = price * 0.9`), as Spark and PostgreSQL do.
//     Everything else (double to integer or decimal, string to number, timestamp to
//     date, ...) needs an explicit CAST, which rounds or truncates as Spark's CAST does.
//     This is stricter than Spark's default ANSI store assignment, which also converts
//     double to integer by truncation.
//
// Errors are *AssignmentError values naming the column and the position, wrapping
// ErrType, ErrUnknownColumn, ErrNotNullable or ErrInvalidExpr; nothing is bound.
func BindAssignments(as []Assignment, schema *arrow.Schema) (*BoundAssignments, error) {
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrInvalidExpr)
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("%w: empty SET list", ErrInvalidExpr)
	}
	out := &BoundAssignments{schema: schema}
	seen := map[int]Assignment{}
	for _, a := range as {
		name := "<nil>"
		if a.Column != nil {
			name = a.Column.String()
		}
		fail := func(err error) (*BoundAssignments, error) {
			return nil, &AssignmentError{Column: name, Pos: a.Pos, Err: err}
		}
		if a.Column == nil || len(a.Column.Path) == 0 {
			return fail(fmt.Errorf("%w: missing target column", ErrInvalidExpr))
		}
		if len(a.Column.Path) > 1 {
			return fail(fmt.Errorf("%w: only top-level columns can be assigned, not the nested field %s", ErrInvalidExpr, name))
		}
		fi, err := pickField(schema.Fields(), a.Column.Path[0], a.Column)
		if err != nil {
			return fail(err)
		}
		if prev, dup := seen[fi]; dup {
			return fail(fmt.Errorf("%w: column assigned twice (also at %d)", ErrInvalidExpr, prev.Pos))
		}
		seen[fi] = a
		field := schema.Field(fi)
		if kindOf(field.Type) == tkOther || kindOf(field.Type) == tkNull {
			return fail(fmt.Errorf("%w: column has type %s", ErrUnsupportedType, value.DisplayType(field.Type)))
		}
		bs, err := bindAssignedValue(a.Value, field, schema)
		if err != nil {
			return fail(err)
		}
		out.list = append(out.list, boundAssignment{field: fi, name: field.Name, value: bs, src: a})
	}
	return out, nil
}

// bindAssignedValue binds v and converts it to field's type.
func bindAssignedValue(v Expr, field arrow.Field, schema *arrow.Schema) (*BoundScalar, error) {
	bs, err := BindScalar(v, schema)
	if err != nil {
		return nil, err
	}
	to := field.Type
	if lit, ok := v.(*Literal); ok {
		if lit.Value.IsNull() {
			if !field.Nullable {
				return nil, fmt.Errorf("%w: NULL assigned", ErrNotNullable)
			}
			bs.root = &litNode{v: value.Null(), t: to}
			return bs, nil
		}
		c := &BoundColumn{Path: []string{field.Name}, Type: to}
		if err := describeType(c); err != nil {
			return nil, fmt.Errorf("%w: column has type %s", ErrUnsupportedType, value.DisplayType(to))
		}
		co, err := coerce(c, lit.Value, &ColumnRef{Path: []string{field.Name}})
		if err != nil {
			return nil, fmt.Errorf("%w: cannot assign %s to a column of type %s", ErrType, FormatValue(lit.Value), TypeName(to))
		}
		if !co.exact {
			return nil, fmt.Errorf("%w: %s does not fit %s (use CAST to round)", ErrType, FormatValue(lit.Value), TypeName(to))
		}
		val := co.v
		if kindOf(to) == tkFloat && !isDouble(to) {
			f := val.AsFloat64()
			if f32 := float32(f); math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
				return nil, fmt.Errorf("%w: %s does not fit float", ErrType, FormatValue(lit.Value))
			}
			val = value.Float64(float64(float32(f)))
		}
		bs.root = &litNode{v: val, t: to}
		return bs, nil
	}
	from := bs.Type()
	if !assignAllowed(from, to) {
		return nil, fmt.Errorf("%w: cannot assign %s to a column of type %s without CAST (write CAST(%s AS %s))",
			ErrType, TypeName(from), TypeName(to), exprString(v), TypeName(to))
	}
	// Exact conversions, except into decimals, which round HALF_UP to the column's scale.
	bs.root = convert(bs.root, to, kindOf(to) != tkDecimal)
	return bs, nil
}

// Apply returns rec with the assigned columns replaced: in the rows selected by sel
// (nil: every row) each assigned column holds its new value, computed from the row's old
// values (every assignment sees the row before the update, as in SQL); other rows and
// other columns are unchanged. Values are computed and checked only for selected rows.
// A selected row whose value is NULL for a non-nullable column fails with
// ErrNotNullable, a value that does not fit with ErrOverflow or ErrInexact, all as an
// *EvalError naming the row and column.
//
// For copy-on-write UPDATE pass the WHERE selection and write the whole result; for
// UPDATE with deletion vectors keep only the selected rows of the result (e.g. with
// compute.FilterRecordBatch) as the new rows. rec must have the bound schema (same field
// names and types); it is neither retained nor released; the caller releases the result,
// which shares the unassigned columns with rec. Memory comes from mem (nil: the
// default allocator).
func (b *BoundAssignments) Apply(rec arrow.RecordBatch, sel *Selection, mem memory.Allocator) (arrow.RecordBatch, error) {
	if rec == nil {
		return nil, fmt.Errorf("%w: nil record", ErrInvalidExpr)
	}
	if err := sameShape(rec.Schema(), b.schema); err != nil {
		return nil, err
	}
	n := int(rec.NumRows())
	var mask []uint64
	if sel != nil {
		if sel.Len() != n {
			return nil, fmt.Errorf("%w: selection of %d rows for a batch of %d", ErrSchemaMismatch, sel.Len(), n)
		}
		mask = sel.words
	}
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	var built []arrow.Array
	defer func() {
		for _, a := range built {
			a.Release()
		}
	}()
	for _, a := range b.list {
		v, err := a.value.evaluate(rec, sel)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", QuoteName(a.name), err)
		}
		field := b.schema.Field(a.field)
		if !field.Nullable {
			for i := range n {
				if bitAt(mask, i) && !bitAt(v.valid, i) {
					return nil, &EvalError{Row: i, Expr: QuoteName(a.name) + " = " + exprString(a.src.Value), Err: ErrNotNullable}
				}
			}
		}
		if mask != nil {
			// Keep the old value outside the selection.
			old := rec.Column(a.field)
			ov := arrayToVec(old, field.Type)
			valid := validityWords(old, n)
			if v.valid == nil {
				v.valid = make([]uint64, (n+63)/64)
				fillWords(v.valid, n, true)
			} else {
				v.valid = append([]uint64(nil), v.valid...)
			}
			for i := range n {
				if bitAt(mask, i) {
					continue
				}
				copyRow(v, ov, i)
				if bitAt(valid, i) {
					setBit(v.valid, i)
				} else {
					clearBit(v.valid, i)
				}
			}
		}
		arr, err := vecToArray(v, field.Type, nil, mem)
		if err != nil {
			return nil, err
		}
		built = append(built, arr)
		cols[a.field] = arr
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(n)), nil
}

// sameShape checks that got has want's field names and types.
func sameShape(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("%w: %d fields, bound to %d", ErrSchemaMismatch, got.NumFields(), want.NumFields())
	}
	for i := range want.NumFields() {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) {
			gt, wt := value.DisplayTypes(g.Type, w.Type)
			return fmt.Errorf("%w: field %d is %s %s, bound to %s %s", ErrSchemaMismatch, i, g.Name, gt, w.Name, wt)
		}
	}
	return nil
}
