package bloom

import (
	"bytes"
	"context"
	"errors"
	"github.com/skiplake/skiplake/internal/goldentest"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/value"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t *testing.T) string { return goldentest.Dir(t) }

// scalarAt converts element i of arr to a value.Value independently of AddArray's
// typed loops (the slow, obvious path) so the two can be compared on real files.
func scalarAt(arr arrow.Array, i int) (value.Value, bool) {
	if arr.IsNull(i) {
		return value.Null(), true
	}
	switch a := arr.(type) {
	case *array.Int8:
		return value.Int64(int64(a.Value(i))), true
	case *array.Int16:
		return value.Int64(int64(a.Value(i))), true
	case *array.Int32:
		return value.Int64(int64(a.Value(i))), true
	case *array.Int64:
		return value.Int64(a.Value(i)), true
	case *array.Float32:
		return value.Float64(float64(a.Value(i))), true
	case *array.Float64:
		return value.Float64(a.Value(i)), true
	case *array.String:
		return value.String(a.Value(i)), true
	case *array.LargeString:
		return value.String(a.Value(i)), true
	case *array.Binary:
		return value.Binary(a.Value(i)), true
	case *array.Boolean:
		return value.Bool(a.Value(i)), true
	case *array.Date32:
		return value.Date(int64(a.Value(i))), true
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return value.Decimal(a.Value(i), dt.Precision, dt.Scale), true
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(dt.Unit)
		us := t.Unix()*1_000_000 + int64(t.Nanosecond()/1000)
		if dt.TimeZone != "" {
			return value.Timestamp(us), true
		}
		return value.TimestampNTZ(us), true
	}
	return value.Value{}, false
}

// TestGoldenNoFalseNegatives builds filters through AddArray for every supported
// column of every data file of the golden tables (written by Spark, delta-rs, ...),
// round-trips them through one index file, and checks that every stored value,
// converted independently, tests positive.
func TestGoldenNoFalseNegatives(t *testing.T) {
	root := goldenDir(t)
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (d.Name() == "_delta_log" || d.Name() == "expected") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			paths = append(paths, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() && len(paths) > 40 {
		paths = paths[:40]
	}
	mem := memory.NewGoAllocator()
	var entries []Entry
	type check struct {
		path, col string
		vals      []value.Value
	}
	var checks []check
	columns, skipped := 0, 0
	for _, rel := range paths {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Logf("%s: not readable as Parquet (%v); skipped", rel, err)
			continue
		}
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{BatchSize: 4096}, mem)
		_ = rdr.Close()
		if err != nil {
			t.Logf("%s: %v; skipped", rel, err)
			continue
		}
		for ci := 0; ci < int(tbl.NumCols()); ci++ {
			col := tbl.Column(ci)
			b := mustBuilder(t, col.Name())
			var vals []value.Value
			ok := true
			for _, chunk := range col.Data().Chunks() {
				if err := b.AddArray(chunk); err != nil {
					if errors.Is(err, ErrUnsupportedType) {
						ok = false
						break
					}
					t.Fatalf("%s column %s: %v", rel, col.Name(), err)
				}
				for i := 0; i < chunk.Len(); i++ {
					v, conv := scalarAt(chunk, i)
					if !conv {
						t.Fatalf("%s column %s: AddArray accepted %s but the test cannot convert it", rel, col.Name(), chunk.DataType())
					}
					vals = append(vals, v)
				}
			}
			if !ok {
				skipped++
				continue
			}
			columns++
			entries = append(entries, Entry{DataPath: rel, Filter: mustFinish(t, b)})
			checks = append(checks, check{rel, col.Name(), vals})
		}
		tbl.Release()
	}
	if columns == 0 {
		t.Skip("no golden column of a supported type")
	}
	data, err := MarshalIndex(entries...)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ReadIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	values := 0
	for _, c := range checks {
		f, ok := ix.Filter(c.path, c.col)
		if !ok {
			t.Fatalf("%s column %s missing from index", c.path, c.col)
		}
		for _, v := range c.vals {
			values++
			if !f.MightContain(v) {
				t.Fatalf("%s column %s: false negative for %v", c.path, c.col, v)
			}
		}
	}
	t.Logf("%d files, %d columns indexed (%d of unsupported types skipped), %d values checked, index %d bytes",
		len(paths), columns, skipped, values, len(data))
}
