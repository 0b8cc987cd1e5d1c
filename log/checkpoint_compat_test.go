package log

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

type leafInfo struct {
	physical string
	logical  string
}

func parquetLeaves(t *testing.T, data []byte) map[string]leafInfo {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	sch := rdr.MetaData().Schema
	out := map[string]leafInfo{}
	for i := 0; i < sch.NumColumns(); i++ {
		c := sch.Column(i)
		li := leafInfo{physical: c.PhysicalType().String(), logical: logicalName(c.LogicalType())}
		// A signed Int annotation of the physical width is the plain type.
		if (li.physical == "INT32" && li.logical == "Int(bitWidth=32, isSigned=true)") ||
			(li.physical == "INT64" && li.logical == "Int(bitWidth=64, isSigned=true)") {
			li.logical = ""
		}
		out[c.Path()] = li
	}
	return out
}

func logicalName(l schema.LogicalType) string {
	if l == nil {
		return ""
	}
	s := l.String()
	if s == "None" || s == "Null" {
		return ""
	}
	return s
}

// TestCheckpointSchemaMatchesSpark compares every column this package
// writes with the same column of checkpoints written by Spark (golden
// tables): physical and logical types must agree so that Spark, DuckDB and
// other readers accept our checkpoints.
func TestCheckpointSchemaMatchesSpark(t *testing.T) {
	root := goldenDir(t)
	ctx := context.Background()
	l := New(memStore())
	buildHistory(t, l, 8)
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	ours, _, err := l.encodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	mine := parquetLeaves(t, ours)
	compared := 0
	for _, rel := range []string{
		"delta-golden/basic-with-inserts-overwrite-restore/delta/_delta_log/00000000000000000003.checkpoint.parquet",
		"delta-golden/dv-partitioned-with-checkpoint/delta/_delta_log/00000000000000000010.checkpoint.parquet",
	} {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		spark := parquetLeaves(t, data)
		for path, theirs := range spark {
			got, ok := mine[path]
			if !ok {
				if strings.HasPrefix(path, "commitInfo") || strings.Contains(path, "_parsed") {
					continue
				}
				t.Errorf("%s: column %s written by Spark is missing from ours", rel, path)
				continue
			}
			compared++
			if got != theirs {
				t.Errorf("%s: column %s: ours %+v, Spark %+v", rel, path, got, theirs)
			}
		}
	}
	if compared < 20 {
		t.Fatalf("compared only %d columns", compared)
	}
}
