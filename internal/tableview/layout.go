package tableview

import (
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/log"
)

// DiffKind says what a layout Difference is about.
type DiffKind uint8

// Kinds of layout differences.
const (
	// DiffMapping: the column mapping mode differs.
	DiffMapping DiffKind = iota + 1
	// DiffLogical: a column was added or dropped, or changed type or nullability.
	DiffLogical
	// DiffPhysical: a column has another physical name or field id.
	DiffPhysical
	// DiffPartitioning: the partition columns differ (their physical names are
	// compared as every column's are: DiffPhysical).
	DiffPartitioning
)

// String names the kind.
func (k DiffKind) String() string {
	switch k {
	case DiffMapping:
		return "column mapping"
	case DiffLogical:
		return "schema"
	case DiffPhysical:
		return "physical names"
	case DiffPartitioning:
		return "partitioning"
	}
	return fmt.Sprintf("DiffKind(%d)", uint8(k))
}

// Difference is one way two versions' layouts differ.
type Difference struct {
	// Kind is what differs.
	Kind DiffKind
	// Column is the logical column path ("st.x"; "" for the whole table).
	Column string
	// Detail says how, from the first version to the second.
	Detail string
}

// String renders the difference for messages.
func (d Difference) String() string {
	if d.Column == "" {
		return d.Detail
	}
	return fmt.Sprintf("column %q: %s", d.Column, d.Detail)
}

// Diff lists how two versions' layouts differ (Compare); empty when they are the same.
type Diff []Difference

// String renders up to eight differences, "; "-separated.
func (d Diff) String() string {
	const shown = 8
	parts := make([]string, 0, min(len(d), shown)+1)
	for i, x := range d {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(d)-shown))
			break
		}
		parts = append(parts, x.String())
	}
	return strings.Join(parts, "; ")
}

// Has reports whether d holds a difference of kind k.
func (d Diff) Has(k DiffKind) bool {
	for _, x := range d {
		if x.Kind == k {
			return true
		}
	}
	return false
}

// Compare says precisely how the layout of version b differs from that of version a
// in what a data file written for one depends on: the column mapping mode, the
// logical schema (columns, types, nullability, nested fields included), every
// column's physical name and field id, and the partition columns with their physical
// names. Properties that only tune writers (codec, sizes, statistics) are not part of
// the layout. Columns are matched by logical name, case-insensitively.
func Compare(a, b *View) Diff {
	if a == b {
		return nil
	}
	var d Diff
	if a.mode != b.mode {
		d = append(d, Difference{Kind: DiffMapping, Detail: fmt.Sprintf("column mapping mode %s, now %s", a.mode, b.mode)})
	}
	compareFields(&d, "", a.delta.Fields, b.delta.Fields, modes{a.mode, b.mode})
	if !samePartitioning(a, b) {
		d = append(d, Difference{Kind: DiffPartitioning, Detail: fmt.Sprintf("partitioned by %s, now by %s", partitionNames(a), partitionNames(b))})
	}
	return d
}

func samePartitioning(a, b *View) bool {
	if len(a.parts) != len(b.parts) {
		return false
	}
	for i := range a.parts {
		if !strings.EqualFold(a.parts[i].Name, b.parts[i].Name) {
			return false
		}
	}
	return true
}

func partitionNames(v *View) string {
	if len(v.parts) == 0 {
		return "nothing"
	}
	names := make([]string, len(v.parts))
	for i, p := range v.parts {
		names[i] = p.Name
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// modes are the column mapping modes of the two sides of a comparison.
type modes [2]log.ColumnMapping

// fileName is the name data files of a table with column mapping mode give f: its
// physical name under column mapping, else its name.
func fileName(mode log.ColumnMapping, f *log.StructField) string {
	if mode == log.ColumnMappingNone {
		return f.Name
	}
	return f.PhysicalName()
}

// ids reports whether field ids matter: column mapping on either side.
func (m modes) ids() bool { return m[0] != log.ColumnMappingNone || m[1] != log.ColumnMappingNone }

// compareFields compares the fields of two structs at path.
func compareFields(d *Diff, path string, a, b []log.StructField, m modes) {
	matched := make([]bool, len(b))
	for i := range a {
		fa := &a[i]
		p := joinPath(path, fa.Name)
		j := findField(b, fa.Name)
		if j < 0 {
			*d = append(*d, Difference{Kind: DiffLogical, Column: p, Detail: "dropped"})
			continue
		}
		matched[j] = true
		fb := &b[j]
		if na, nb := fileName(m[0], fa), fileName(m[1], fb); na != nb {
			*d = append(*d, Difference{Kind: DiffPhysical, Column: p, Detail: fmt.Sprintf("physical name %q, now %q", na, nb)})
		}
		if m.ids() {
			ia, oka := fa.FieldID()
			ib, okb := fb.FieldID()
			if oka != okb || ia != ib {
				*d = append(*d, Difference{Kind: DiffPhysical, Column: p, Detail: fmt.Sprintf("field id %s, now %s", idString(ia, oka), idString(ib, okb))})
			}
		}
		if fa.Nullable != fb.Nullable {
			*d = append(*d, Difference{Kind: DiffLogical, Column: p, Detail: fmt.Sprintf("nullable %v, now %v", fa.Nullable, fb.Nullable)})
		}
		compareTypes(d, p, fa.Type, fb.Type, m)
	}
	for j := range b {
		if !matched[j] {
			*d = append(*d, Difference{Kind: DiffLogical, Column: joinPath(path, b[j].Name), Detail: "added"})
		}
	}
}

func compareTypes(d *Diff, path string, a, b log.DataType, m modes) {
	switch ta := a.(type) {
	case *log.StructType:
		if tb, ok := b.(*log.StructType); ok {
			compareFields(d, path, ta.Fields, tb.Fields, m)
			return
		}
	case *log.ArrayType:
		if tb, ok := b.(*log.ArrayType); ok {
			if ta.ContainsNull != tb.ContainsNull {
				*d = append(*d, Difference{Kind: DiffLogical, Column: path, Detail: fmt.Sprintf("containsNull %v, now %v", ta.ContainsNull, tb.ContainsNull)})
			}
			compareTypes(d, path+".element", ta.ElementType, tb.ElementType, m)
			return
		}
	case *log.MapType:
		if tb, ok := b.(*log.MapType); ok {
			if ta.ValueContainsNull != tb.ValueContainsNull {
				*d = append(*d, Difference{Kind: DiffLogical, Column: path, Detail: fmt.Sprintf("valueContainsNull %v, now %v", ta.ValueContainsNull, tb.ValueContainsNull)})
			}
			compareTypes(d, path+".key", ta.KeyType, tb.KeyType, m)
			compareTypes(d, path+".value", ta.ValueType, tb.ValueType, m)
			return
		}
	default:
		if a.TypeName() == b.TypeName() {
			return
		}
	}
	*d = append(*d, Difference{Kind: DiffLogical, Column: path, Detail: fmt.Sprintf("type %s, now %s", a.TypeName(), b.TypeName())})
}

func findField(fields []log.StructField, name string) int {
	for i := range fields {
		if fields[i].Name == name {
			return i
		}
	}
	for i := range fields {
		if strings.EqualFold(fields[i].Name, name) {
			return i
		}
	}
	return -1
}

func idString(id int64, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(id)
}

// LayoutError is a violation of invariant T1: data files written for the layout of
// one version were about to be committed to a version whose layout differs. Nothing
// is committed when it is returned.
type LayoutError struct {
	// Written is the version the files were written for (-1: a table not yet created).
	Written int64
	// Target is the version the commit would have landed on.
	Target int64
	// Diff says how the layouts differ.
	Diff Diff
}

// Error names both versions and the differences.
func (e *LayoutError) Error() string {
	return fmt.Sprintf("tableview: data files written for the layout of %s do not fit version %d (%s)", versionName(e.Written), e.Target, e.Diff)
}

// Unwrap returns ErrLayoutChanged.
func (e *LayoutError) Unwrap() error { return ErrLayoutChanged }

func versionName(v int64) string {
	if v < 0 {
		return "the table being created"
	}
	return fmt.Sprintf("version %d", v)
}

// CheckLayout checks invariant T1 for files written for the layout of written that
// are about to be committed to target: nil when the layouts are the same, else a
// *LayoutError (matching ErrLayoutChanged) listing the differences.
func CheckLayout(written, target *View) error {
	if d := Compare(written, target); len(d) > 0 {
		return &LayoutError{Written: written.Version(), Target: target.Version(), Diff: d}
	}
	return nil
}
