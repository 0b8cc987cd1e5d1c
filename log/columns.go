package log

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/stats"
)

// Column changes of ALTER TABLE beyond ADD COLUMNS: RENAME COLUMN, DROP COLUMNS,
// ALTER COLUMN ... TYPE and ... COMMENT. Each returns the protocol and metadata of
// the table after the change (nothing is written); every check is made before
// anything is returned, so an invalid change leaves nothing to commit.
//
// A column is named by its path: the names of the struct fields from the top level
// down ("address.zip"), matched exactly, else case-insensitively; "element", "key"
// and "value" step into arrays and maps where a type change or a nested field
// needs it ("tags.element", "attrs.value.score").

// TypeChangesKey is the field metadata key holding a column's type-change history
// (PROTOCOL.md "Type Change Metadata").
const TypeChangesKey = "delta.typeChanges"

// ErrInvalidColumnChange reports a column change the table cannot take (an unknown
// column, a rename to an existing name, dropping a partition or clustering column,
// a type change that is not a supported widening, ...).
var ErrInvalidColumnChange = errors.New("log: invalid column change")

func columnErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidColumnChange}, args...)...)
}

// columnSlot is a resolved column: the struct field holding it (the field itself,
// or for element/key/value paths its nearest ancestor struct field), the struct
// that holds that field, and — for a path into an array or map — the steps from the
// field to the type (fieldPath of delta.typeChanges).
type columnSlot struct {
	parent *StructType
	index  int      // of the field in parent
	steps  []string // "element", "key", "value" below the field
	path   []string // as the schema spells it
}

func (c columnSlot) field() *StructField { return &c.parent.Fields[c.index] }

// typeRef returns a pointer to the type the slot names.
func (c columnSlot) typeRef() *DataType {
	t := &c.field().Type
	for _, s := range c.steps {
		switch v := (*t).(type) {
		case *ArrayType:
			t = &v.ElementType
		case *MapType:
			if s == "key" {
				t = &v.KeyType
			} else {
				t = &v.ValueType
			}
		}
	}
	return t
}

// resolveColumn finds path in schema.
func resolveColumn(schema *StructType, path []string) (columnSlot, error) {
	name := strings.Join(path, ".")
	if len(path) == 0 {
		return columnSlot{}, columnErr("no column named")
	}
	st := schema
	var slot columnSlot
	var t DataType
	for i, part := range path {
		if st != nil {
			f := st.FieldFold(part)
			if f == nil {
				return columnSlot{}, columnErr("column %q does not exist (columns%s: %s)", name, at(path[:i]), strings.Join(fieldNames(st), ", "))
			}
			slot = columnSlot{parent: st, index: fieldIndex(st, f), path: append(append([]string(nil), slot.path...), f.Name)}
			t = f.Type
		} else {
			switch v := t.(type) {
			case *ArrayType:
				if !strings.EqualFold(part, "element") {
					return columnSlot{}, columnErr("column %q: %q is an array; name its elements %q", name, strings.Join(path[:i], "."), "element")
				}
				t = v.ElementType
				part = "element"
			case *MapType:
				switch strings.ToLower(part) {
				case "key":
					t = v.KeyType
				case "value":
					t = v.ValueType
				default:
					return columnSlot{}, columnErr("column %q: %q is a map; name its keys %q and values %q", name, strings.Join(path[:i], "."), "key", "value")
				}
				part = strings.ToLower(part)
			default:
				return columnSlot{}, columnErr("column %q: %q is a %s, which has no fields", name, strings.Join(path[:i], "."), DisplayType(t))
			}
			slot.steps = append(slot.steps, part)
			slot.path = append(slot.path, part)
		}
		// A struct (also one inside an array or map): the next part names a field.
		st, _ = t.(*StructType)
	}
	return slot, nil
}

func at(path []string) string {
	if len(path) == 0 {
		return ""
	}
	return " of " + strings.Join(path, ".")
}

func fieldIndex(st *StructType, f *StructField) int {
	for i := range st.Fields {
		if &st.Fields[i] == f {
			return i
		}
	}
	return -1
}

// ParseColumnPath splits a column path written with dots, backticks quoting names
// that hold dots or other special characters ("address.zip", "`a.b`.c").
func ParseColumnPath(s string) ([]string, error) {
	parts, err := stats.ParseColumnPath(s)
	if err != nil {
		return nil, columnErr("column %q: %v", s, err)
	}
	return parts, nil
}

// quotePath renders a path for a column-list property: parts with characters other
// than letters, digits and underscores in backticks.
func quotePath(path []string) string {
	out := make([]string, len(path))
	for i, p := range path {
		plain := p != ""
		for _, r := range p {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				plain = false
			}
		}
		if plain {
			out[i] = p
		} else {
			out[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		}
	}
	return strings.Join(out, ".")
}

// withMapping returns p and md with column mapping enabled in name mode when the
// table has none (as Delta Spark requires for RENAME COLUMN and DROP COLUMNS):
// every column gets its current name as physical name — the data files already
// written use those names, so they stay readable — and an id, and the protocol
// gains the columnMapping feature.
func withMapping(p Protocol, md Metadata) (Protocol, Metadata, error) {
	props := ParseTableProperties(md.Configuration)
	if err := props.Err(PropColumnMappingMode); err != nil {
		return p, md, err
	}
	if props.ColumnMappingMode != ColumnMappingNone {
		return p, md, nil
	}
	return ApplyPropertyChange(p, md, PropertyChange{Set: map[string]string{PropColumnMappingMode: string(ColumnMappingName)}})
}

// finishChange stores schema in md (and conf when not nil) and returns the protocol
// the result needs.
func finishChange(p Protocol, md Metadata, schema *StructType, conf map[string]string) (Protocol, Metadata, error) {
	if _, err := ToArrow(schema, ArrowOptions{}); err != nil {
		return p, md, err
	}
	if conf != nil {
		md.Configuration = conf
	}
	md.SchemaString = schema.JSON()
	np, err := protocolAfter(p, md, schema, &NormalizedProperties{}, false)
	if err != nil {
		return p, md, err
	}
	return np, md, nil
}

func copyConf(c map[string]string) map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// RenameColumn renames the column at path to newName (ALTER TABLE RENAME COLUMN).
// The table needs column mapping, which is enabled (name mode) in the same change
// when it has none: the column keeps its physical name, so no data file is
// rewritten. newName must not be a name its struct has already (case-insensitively;
// changing only the letter case of the name is allowed). A renamed partition column
// stays the partition column; delta.dataSkippingStatsColumns and
// skiplake.bloomFilter.columns follow the rename. It returns the path as the schema
// spelled it.
func RenameColumn(p Protocol, md Metadata, path []string, newName string) (Protocol, Metadata, []string, error) {
	newName = strings.TrimSpace(newName)
	if newName == "" {
		return p, md, nil, columnErr("rename column %q: the new name is empty", strings.Join(path, "."))
	}
	p, md, err := withMapping(p, md)
	if err != nil {
		return p, md, nil, err
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, nil, err
	}
	slot, err := resolveColumn(schema, path)
	if err != nil {
		return p, md, nil, err
	}
	if len(slot.steps) > 0 {
		return p, md, nil, columnErr("rename column %q: array elements and map keys and values have no names", strings.Join(slot.path, "."))
	}
	f := slot.field()
	oldPath := slot.path
	if newName == f.Name {
		return p, md, nil, columnErr("rename column %q: the column already has that name", strings.Join(oldPath, "."))
	}
	if other := slot.parent.FieldFold(newName); other != nil && other != f {
		return p, md, nil, columnErr("rename column %q to %q: a column %q exists already (names are case-insensitive)", strings.Join(oldPath, "."), newName, other.Name)
	}
	f.Name = newName
	newPath := append(append([]string(nil), oldPath[:len(oldPath)-1]...), newName)
	conf := copyConf(md.Configuration)
	if len(oldPath) == 1 {
		parts := append([]string(nil), md.PartitionColumns...)
		for i, c := range parts {
			if c == oldPath[0] {
				parts[i] = newName
			}
		}
		md.PartitionColumns = parts
	}
	editColumnLists(conf, oldPath, func(ref []string) []string {
		return append(append([]string(nil), newPath...), ref[len(oldPath):]...)
	})
	np, nmd, err := finishChange(p, md, schema, conf)
	return np, nmd, oldPath, err
}

// editColumnLists applies edit to the references in delta.dataSkippingStatsColumns
// and skiplake.bloomFilter.columns that name path or a field inside it (edit
// returns the new reference, or nil to drop it); a list left empty is removed.
func editColumnLists(conf map[string]string, path []string, edit func(ref []string) []string) {
	for _, key := range []string{PropDataSkippingStatsColumns, PropBloomFilterColumns} {
		raw, ok := conf[key]
		if !ok {
			continue
		}
		var refs []string
		var err error
		if key == PropDataSkippingStatsColumns {
			refs, err = stats.SplitColumnList(raw)
		} else {
			refs = ParseTableProperties(map[string]string{key: raw}).BloomFilterColumns
		}
		if err != nil {
			continue // an unparseable list is left as it is (P1: never re-validated)
		}
		changed := false
		var out []string
		for _, r := range refs {
			ref, err := stats.ParseColumnPath(r)
			if err != nil || !hasPrefixFold(ref, path) {
				out = append(out, r)
				continue
			}
			changed = true
			if n := edit(ref); n != nil {
				if key == PropBloomFilterColumns {
					out = append(out, strings.Join(n, "."))
				} else {
					out = append(out, quotePath(n))
				}
			}
		}
		switch {
		case !changed:
		case len(out) == 0:
			delete(conf, key)
		default:
			conf[key] = strings.Join(out, ",")
		}
	}
}

func hasPrefixFold(ref, prefix []string) bool {
	if len(ref) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if !strings.EqualFold(ref[i], p) {
			return false
		}
	}
	return true
}

// DropColumns drops the columns at paths (ALTER TABLE DROP COLUMNS). The table
// needs column mapping, which is enabled (name mode) in the same change when it has
// none: data files keep the dropped columns' data, which readers no longer see, and
// the physical names are never reused. Refused: a partition column, a clustering
// column (clustering, as logical paths) or a struct holding one, the last data
// column of the table, the last field of a struct. The dropped columns leave
// delta.dataSkippingStatsColumns and skiplake.bloomFilter.columns. It returns the
// paths as the schema spelled them.
func DropColumns(p Protocol, md Metadata, paths [][]string, clustering [][]string) (Protocol, Metadata, [][]string, error) {
	if len(paths) == 0 {
		return p, md, nil, columnErr("drop columns: no columns")
	}
	p, md, err := withMapping(p, md)
	if err != nil {
		return p, md, nil, err
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, nil, err
	}
	conf := copyConf(md.Configuration)
	var dropped [][]string
	for _, path := range paths {
		slot, err := resolveColumn(schema, path)
		if err != nil {
			return p, md, nil, err
		}
		name := strings.Join(slot.path, ".")
		if len(slot.steps) > 0 {
			return p, md, nil, columnErr("drop column %q: array elements and map keys and values cannot be dropped", name)
		}
		if len(slot.path) == 1 {
			for _, pc := range md.PartitionColumns {
				if strings.EqualFold(pc, slot.path[0]) {
					return p, md, nil, columnErr("drop column %q: it is a partition column (a table's partitioning cannot change)", name)
				}
			}
		}
		for _, c := range clustering {
			if hasPrefixFold(c, slot.path) {
				return p, md, nil, columnErr("drop column %q: clustering column %q would go with it (change the clustering columns first: alter --cluster-by)", name, strings.Join(c, "."))
			}
		}
		if len(slot.parent.Fields) == 1 {
			if slot.parent == schema {
				return p, md, nil, columnErr("drop column %q: it is the table's last column", name)
			}
			return p, md, nil, columnErr("drop column %q: it is the last field of its struct (drop the struct instead)", name)
		}
		if slot.parent == schema {
			data := 0
			for _, f := range schema.Fields {
				part := false
				for _, pc := range md.PartitionColumns {
					part = part || strings.EqualFold(pc, f.Name)
				}
				if !part {
					data++
				}
			}
			if data == 1 {
				return p, md, nil, columnErr("drop column %q: it is the table's last data column (every other column is a partition column)", name)
			}
		}
		slot.parent.Fields = append(slot.parent.Fields[:slot.index:slot.index], slot.parent.Fields[slot.index+1:]...)
		editColumnLists(conf, slot.path, func([]string) []string { return nil })
		dropped = append(dropped, slot.path)
	}
	np, nmd, err := finishChange(p, md, schema, conf)
	return np, nmd, dropped, err
}

// CanWiden reports whether Delta's type widening supports changing a column of
// type from to type to (PROTOCOL.md "Type Widening", as Delta Spark checks it):
// byte → short → int → long; float → double; byte, short or int → double; date →
// timestamp_ntz; decimal(p, s) → decimal(p+k1, s+k2) with k1 ≥ k2 ≥ 0; byte, short
// or int → decimal(10+k1, k2) and long → decimal(20+k1, k2) with k1 ≥ k2 ≥ 0.
func CanWiden(from, to DataType) bool {
	intRank := map[string]int{TypeByte: 1, TypeShort: 2, TypeInteger: 3, TypeLong: 4}
	fp, _ := from.(*PrimitiveType)
	tp, _ := to.(*PrimitiveType)
	td, toDec := to.(*DecimalType)
	if fd, ok := from.(*DecimalType); ok {
		return toDec && td.Scale >= fd.Scale && td.Precision-td.Scale >= fd.Precision-fd.Scale
	}
	if fp == nil {
		return false
	}
	if toDec {
		switch fp.Name {
		case TypeByte, TypeShort, TypeInteger:
			return td.Precision-td.Scale >= 10
		case TypeLong:
			return td.Precision-td.Scale >= 20
		}
		return false
	}
	if tp == nil {
		return false
	}
	if fr, tr := intRank[fp.Name], intRank[tp.Name]; fr > 0 && tr > 0 {
		return fr < tr
	}
	switch {
	case fp.Name == TypeFloat && tp.Name == TypeDouble:
		return true
	case fp.Name == TypeDate && tp.Name == TypeTimestampNTZ:
		return true
	case tp.Name == TypeDouble:
		return fp.Name == TypeByte || fp.Name == TypeShort || fp.Name == TypeInteger
	}
	return false
}

// ChangeColumnType widens the type of the column at path to t (ALTER TABLE ALTER
// COLUMN ... TYPE), under the typeWidening table feature: when the table lacks it
// (and delta.enableTypeWidening is not set), the same change sets
// delta.enableTypeWidening=true and adds the feature (reader 3 / writer 7); a table
// with delta.enableTypeWidening=false refuses. Only the widenings CanWiden lists are
// accepted, on primitive columns, struct fields, array elements and map keys and
// values. The change is recorded in the delta.typeChanges metadata of the column's
// nearest struct field ({"fromType", "toType"[, "fieldPath"]}), and data files
// written before it are read as the wider type. It returns the path as the schema
// spelled it and the old type.
func ChangeColumnType(p Protocol, md Metadata, path []string, t DataType) (Protocol, Metadata, []string, DataType, error) {
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, nil, nil, err
	}
	slot, err := resolveColumn(schema, path)
	if err != nil {
		return p, md, nil, nil, err
	}
	name := strings.Join(slot.path, ".")
	ref := slot.typeRef()
	from := *ref
	switch from.(type) {
	case *StructType, *ArrayType, *MapType:
		return p, md, nil, nil, columnErr("change the type of column %q: it is a %s; change the type of a field, element, key or value inside it", name, DisplayType(from))
	}
	if _, ok := t.(*PrimitiveType); !ok {
		if _, ok := t.(*DecimalType); !ok {
			return p, md, nil, nil, columnErr("change the type of column %q from %s to %s: not a widening Delta supports", name, DisplayType(from), DisplayType(t))
		}
	}
	if from.TypeName() == t.TypeName() {
		return p, md, nil, nil, columnErr("change the type of column %q: it already has type %s", name, DisplayType(t))
	}
	if !CanWiden(from, t) {
		return p, md, nil, nil, columnErr("change the type of column %q from %s to %s: not a widening Delta supports "+
			"(byte→short→int→long, float→double, byte/short/int→double, date→timestamp_ntz, decimal to a decimal with as many more integer digits, "+
			"byte/short/int→decimal(10+,s), long→decimal(20+,s))", name, DisplayType(from), DisplayType(t))
	}
	props := ParseTableProperties(md.Configuration)
	if err := props.Err(PropEnableTypeWidening); err != nil {
		return p, md, nil, nil, err
	}
	if !props.EnableTypeWidening {
		if _, set := md.Configuration[PropEnableTypeWidening]; set {
			return p, md, nil, nil, columnErr("change the type of column %q: %s is false (set it to true to allow type changes)", name, PropEnableTypeWidening)
		}
		conf := copyConf(md.Configuration)
		conf[PropEnableTypeWidening] = "true"
		md.Configuration = conf
	}
	*ref = t
	f := slot.field()
	change := map[string]any{"fromType": from.TypeName(), "toType": t.TypeName()}
	if len(slot.steps) > 0 {
		change["fieldPath"] = strings.Join(slot.steps, ".")
	}
	md2 := make(map[string]any, len(f.Metadata)+1)
	for k, v := range f.Metadata {
		md2[k] = v
	}
	var history []any
	if prev, ok := md2[TypeChangesKey].([]any); ok {
		history = append(history, prev...)
	}
	md2[TypeChangesKey] = append(history, change)
	f.Metadata = md2
	np, nmd, err := finishChange(p, md, schema, nil)
	return np, nmd, slot.path, from, err
}

// SetColumnComment sets the comment of the column at path (its "comment" field
// metadata, as Spark stores column comments); an empty comment removes it. Array
// elements and map keys and values have no comments.
func SetColumnComment(p Protocol, md Metadata, path []string, comment string) (Protocol, Metadata, []string, error) {
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, nil, err
	}
	slot, err := resolveColumn(schema, path)
	if err != nil {
		return p, md, nil, err
	}
	if len(slot.steps) > 0 {
		return p, md, nil, columnErr("comment on column %q: array elements and map keys and values have no comments", strings.Join(slot.path, "."))
	}
	f := slot.field()
	md2 := make(map[string]any, len(f.Metadata)+1)
	for k, v := range f.Metadata {
		md2[k] = v
	}
	if comment == "" {
		delete(md2, "comment")
	} else {
		md2["comment"] = comment
	}
	f.Metadata = md2
	np, nmd, err := finishChange(p, md, schema, nil)
	return np, nmd, slot.path, err
}

// FieldJSON renders the field at path of md's schema as Delta Spark records a
// changed column in commitInfo (CHANGE COLUMN's "column" parameter): {"name": the
// dotted path, "type", "nullable", "metadata"}.
func FieldJSON(md Metadata, path []string) (string, error) {
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return "", err
	}
	slot, err := resolveColumn(schema, path)
	if err != nil {
		return "", err
	}
	f := slot.field()
	name := append(append([]string(nil), slot.path[:len(slot.path)-len(slot.steps)-1]...), f.Name)
	st := &StructType{Fields: []StructField{{Name: strings.Join(name, "."), Type: f.Type, Nullable: f.Nullable, Metadata: f.Metadata}}}
	var doc struct {
		Fields []json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal([]byte(st.JSON()), &doc); err != nil || len(doc.Fields) != 1 {
		return "", fmt.Errorf("log: rendering column %q: %v", strings.Join(path, "."), err)
	}
	return string(doc.Fields[0]), nil
}
