package scanexec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
)

// Column is a column a scan can return, and where its values come from.
type Column struct {
	// Field is the column's logical field (no metadata).
	Field arrow.Field
	// Partition: the value is the file's (Task.PartVals[Physical]), never read from
	// the file.
	Partition bool
	// Physical is the key of the column's value in Task.PartVals: a partition
	// column's physical name; for an Override column, the key of the value that
	// replaces the file's column when a task has one.
	Physical string
	// Read is what files are asked for (with mapping metadata), for file columns.
	Read arrow.Field
	// Override: a file column whose value a task may give instead (a change read's
	// _change_type: read from change data files, constant for the inserts and
	// deletes derived from add and remove actions).
	Override bool
}

// TableColumns are the columns of v's table, as scans return them.
func TableColumns(v *tableview.View) []Column {
	logical := v.Logical()
	out := make([]Column, logical.NumFields())
	for i, f := range logical.Fields() {
		c := Column{Field: f, Read: v.ReadSchema().Field(i)}
		if v.IsPartition(f.Name) {
			c.Partition = true
			c.Physical = v.Physical().Field(i).Name
		}
		out[i] = c
	}
	return out
}

// ColumnSchema is the logical schema of cols (what filters bind to).
func ColumnSchema(cols []Column) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.Field
	}
	return arrow.NewSchema(fields, nil)
}

type outColumn struct {
	field     arrow.Field
	partition bool
	physical  string // partition or override: the key in Task.PartVals
	override  bool   // a file column a task's PartVals[physical] replaces when present
}

// Projection is what a read returns and reads: the output schema, the columns read
// (output plus filter columns), and the file columns among them. It is immutable.
type Projection struct {
	// Schema is every returned batch's schema.
	Schema *arrow.Schema
	// ReadSchema is the columns read (projection plus filter columns), in table
	// order: the schema of WithPartitions' batches.
	ReadSchema *arrow.Schema
	// Want is the data columns to read from files (with mapping metadata).
	Want *arrow.Schema
	// Recheck is the filter bound to ReadSchema, or nil without a filter.
	Recheck *expr.Bound

	outCols []outColumn // columns of ReadSchema, in its order
	outIdx  []int       // output column i is read column outIdx[i]
}

// Project resolves the requested columns of cols (none: every column, unless
// countOnly, which returns no column) and the filter (pred as given, and bound to
// cols' schema; both nil without a filter) into a projection. An unknown column is
// ErrUnknownColumn, a column named twice tableview.ErrInvalidArgument.
func Project(cols []Column, columns []string, countOnly bool, pred expr.Expr, bound *expr.Bound) (*Projection, error) {
	logical := ColumnSchema(cols)
	p := &Projection{}
	var outTable []int // output column -> table field index
	switch {
	case countOnly:
		// No output columns: only the filter's columns are read.
	case len(columns) == 0:
		for i := 0; i < logical.NumFields(); i++ {
			outTable = append(outTable, i)
		}
	default:
		seen := map[int]bool{}
		for _, c := range columns {
			i := FieldIndexFold(logical, strings.TrimSpace(c))
			if i < 0 {
				return nil, fmt.Errorf("%w: %q (columns: %s)", ErrUnknownColumn, c, FieldNames(logical))
			}
			if seen[i] {
				return nil, fmt.Errorf("%w: column %q selected twice", tableview.ErrInvalidArgument, c)
			}
			seen[i] = true
			outTable = append(outTable, i)
		}
	}
	needed := map[int]bool{}
	for _, i := range outTable {
		needed[i] = true
	}
	if bound != nil {
		for _, c := range bound.Columns() {
			needed[c.FieldIndices[0]] = true
		}
	}
	// Read schema: needed columns in table order.
	var readFields, wantFields []arrow.Field
	pos := map[int]int{}
	for i := 0; i < logical.NumFields(); i++ {
		if !needed[i] {
			continue
		}
		c := cols[i]
		oc := outColumn{field: c.Field, partition: c.Partition, physical: c.Physical, override: c.Override}
		if !c.Partition {
			wantFields = append(wantFields, c.Read)
		}
		pos[i] = len(readFields)
		p.outCols = append(p.outCols, oc)
		readFields = append(readFields, c.Field)
	}
	p.ReadSchema = arrow.NewSchema(readFields, nil)
	p.Want = arrow.NewSchema(wantFields, nil)
	outFields := make([]arrow.Field, len(outTable))
	for k, i := range outTable {
		outFields[k] = logical.Field(i)
		p.outIdx = append(p.outIdx, pos[i])
	}
	p.Schema = arrow.NewSchema(outFields, nil)
	if bound != nil {
		b, err := expr.Bind(pred, p.ReadSchema)
		if err != nil {
			return nil, err
		}
		p.Recheck = b
	}
	return p, nil
}

// WithPartitions builds a batch of the read schema from a batch of the file's data
// columns (Want) plus the task's constant columns. The caller releases it.
func (p *Projection) WithPartitions(task *Task, data arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	n := int(data.NumRows())
	cols := make([]arrow.Array, len(p.outCols))
	di := 0
	for i, oc := range p.outCols {
		v, given := task.PartVals[oc.physical]
		if oc.partition || (oc.override && given) {
			c, err := datafile.ConstantColumn(v, oc.field.Type, n, mem)
			if err != nil {
				ReleaseArrays(cols[:i])
				return nil, fmt.Errorf("table: partition column %q: %w", oc.field.Name, err)
			}
			cols[i] = c
			if oc.override {
				di++ // the file's column (read: nulls in a data file) is replaced
			}
			continue
		}
		c := data.Column(di)
		c.Retain()
		cols[i] = c
		di++
	}
	rec := array.NewRecordBatch(p.ReadSchema, cols, int64(n))
	ReleaseArrays(cols)
	return rec, nil
}

// output builds a batch of the output schema from a batch of the read schema; it
// consumes rec.
func (p *Projection) output(rec arrow.RecordBatch) arrow.RecordBatch {
	out := make([]arrow.Array, len(p.outIdx))
	for i, j := range p.outIdx {
		out[i] = rec.Column(j)
	}
	res := array.NewRecordBatch(p.Schema, out, rec.NumRows())
	rec.Release()
	return res
}

// ReleaseArrays releases every non-nil array of as.
func ReleaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// FieldIndexFold is the index of the field of schema named name: exactly, else
// case-insensitively; -1 when there is none.
func FieldIndexFold(schema *arrow.Schema, name string) int {
	if idx := schema.FieldIndices(name); len(idx) > 0 {
		return idx[0]
	}
	for i, f := range schema.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// FieldNames lists schema's field names, comma-separated (for error messages).
func FieldNames(schema *arrow.Schema) string {
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
