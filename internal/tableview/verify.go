package tableview

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/invariants"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// CheckCommit is the commit-time gate of invariant T1 for the data files a
// transaction wrote (adds) for the layout of written and is about to commit to
// target: CheckLayout, and in test and race builds (package invariants) also
// VerifyFiles on target. Every committer of newly written data files calls it right
// before log.Transaction.Commit; a commit can land on a later version than target
// only when no winner changed metadata or protocol (the log makes any such winner a
// conflict), so the layout target describes is the one the files land on.
func CheckCommit(ctx context.Context, store storage.Storage, written, target *View, adds []*log.Add) error {
	if err := CheckLayout(written, target); err != nil {
		return err
	}
	if invariants.Enabled {
		return VerifyFiles(ctx, store, target, adds)
	}
	return nil
}

// VerifyFiles reads the Parquet footers of the data files adds name and checks each
// against v's physical layout (T1): its partition values are keyed by exactly v's
// physical partition column names, and its columns — at every level of nesting — are
// v's data columns under their physical names, each present once, with v's field ids
// in id mode (and, in name mode, with v's field ids where the file carries any), plus
// at most the hidden row tracking columns. It returns an error naming the file and
// the column for the first file that does not fit.
func VerifyFiles(ctx context.Context, store storage.Storage, v *View, adds []*log.Add) error {
	for _, a := range adds {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := v.verifyFile(ctx, store, a); err != nil {
			return fmt.Errorf("tableview: version %d: data file %s does not fit the table's layout: %v: %w", v.Version(), a.Path, err, ErrLayoutChanged)
		}
	}
	return nil
}

func (v *View) verifyFile(ctx context.Context, store storage.Storage, a *log.Add) error {
	keys := make([]string, 0, len(a.PartitionValues))
	for k := range a.PartitionValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := append([]string(nil), v.partPhys...)
	sort.Strings(want)
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		return fmt.Errorf("partition values keyed by %v, the table's partition columns are %v", keys, want)
	}
	p, err := a.DecodedPath()
	if err != nil {
		return err
	}
	// A file that cannot be read back now (a storage failure, not corrupt data) is
	// not judged: the check is about layout, and reading is not what failed the write.
	f, err := store.Open(ctx, p)
	if err != nil {
		return nil
	}
	defer f.Close()
	r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{Name: p})
	if err != nil {
		if !errors.Is(err, datafile.ErrCorruptData) {
			return nil
		}
		return err
	}
	defer r.Close()
	root := r.Metadata().Schema.Root()
	hidden := map[string]bool{}
	for _, h := range v.RowTrackingFields() {
		hidden[h.Name] = true
	}
	data := make([]*log.StructField, 0, len(v.dataIdx))
	for _, i := range v.dataIdx {
		data = append(data, &v.delta.Fields[i])
	}
	return v.verifyGroup(root, data, "", hidden)
}

// verifyGroup checks the children of a Parquet group against struct fields.
func (v *View) verifyGroup(g *schema.GroupNode, fields []*log.StructField, path string, hidden map[string]bool) error {
	byName := make(map[string]*log.StructField, len(fields))
	for _, f := range fields {
		byName[fileName(v.mode, f)] = f
	}
	seen := map[string]bool{}
	for i := 0; i < g.NumFields(); i++ {
		n := g.Field(i)
		f := byName[n.Name()]
		if f == nil {
			if hidden[n.Name()] {
				continue
			}
			return fmt.Errorf("column %q is not a column of the table's layout%s", joinPath(path, n.Name()), alongside(path))
		}
		if seen[n.Name()] {
			return fmt.Errorf("column %q appears twice", joinPath(path, n.Name()))
		}
		seen[n.Name()] = true
		p := joinPath(path, f.Name)
		if err := v.verifyID(n, f, p); err != nil {
			return err
		}
		if err := v.verifyType(n, f.Type, p); err != nil {
			return err
		}
	}
	for _, f := range fields {
		if !seen[fileName(v.mode, f)] {
			return fmt.Errorf("column %q (stored as %q) is missing", joinPath(path, f.Name), fileName(v.mode, f))
		}
	}
	return nil
}

func alongside(path string) string {
	if path == "" {
		return ""
	}
	return " (in " + path + ")"
}

// verifyID checks a column's Parquet field id: v's in id mode; in name mode any id
// the file carries must be v's; without column mapping ids are not checked.
func (v *View) verifyID(n schema.Node, f *log.StructField, path string) error {
	want, has := f.FieldID()
	got := n.FieldID()
	switch v.mode {
	case log.ColumnMappingID:
		if !has || int64(got) != want {
			return fmt.Errorf("column %q has field id %d, the table's is %s", path, got, idString(want, has))
		}
	case log.ColumnMappingName:
		if got >= 0 && (!has || int64(got) != want) {
			return fmt.Errorf("column %q has field id %d, the table's is %s", path, got, idString(want, has))
		}
	}
	return nil
}

// verifyType descends into nested types: struct fields by name, the element of a
// list, the key and value of a map (their Parquet wrapper groups are not named by
// the table).
func (v *View) verifyType(n schema.Node, t log.DataType, path string) error {
	switch dt := t.(type) {
	case *log.StructType:
		g, ok := n.(*schema.GroupNode)
		if !ok {
			return fmt.Errorf("column %q is not a group in the file", path)
		}
		fields := make([]*log.StructField, len(dt.Fields))
		for i := range dt.Fields {
			fields[i] = &dt.Fields[i]
		}
		return v.verifyGroup(g, fields, path, nil)
	case *log.ArrayType:
		inner, err := repeatedChildren(n, path, 1)
		if err != nil {
			return err
		}
		return v.verifyType(inner[0], dt.ElementType, path+".element")
	case *log.MapType:
		inner, err := repeatedChildren(n, path, 2)
		if err != nil {
			return err
		}
		if err := v.verifyType(inner[0], dt.KeyType, path+".key"); err != nil {
			return err
		}
		return v.verifyType(inner[1], dt.ValueType, path+".value")
	}
	if _, ok := n.(*schema.GroupNode); ok {
		return fmt.Errorf("column %q is a group in the file, a primitive in the table", path)
	}
	return nil
}

// repeatedChildren returns the children of the repeated group inside the three-level
// list or map group n, requiring want of them.
func repeatedChildren(n schema.Node, path string, want int) ([]schema.Node, error) {
	g, ok := n.(*schema.GroupNode)
	if !ok || g.NumFields() != 1 {
		return nil, fmt.Errorf("column %q is not a list or map group in the file", path)
	}
	rep, ok := g.Field(0).(*schema.GroupNode)
	if !ok || rep.NumFields() != want {
		if want == 1 && !ok {
			return []schema.Node{g.Field(0)}, nil // two-level list: the repeated field is the element
		}
		return nil, fmt.Errorf("column %q has an unexpected list or map structure in the file", path)
	}
	out := make([]schema.Node, want)
	for i := range out {
		out[i] = rep.Field(i)
	}
	return out, nil
}
