package optimize

import (
	"context"
	"errors"
	"github.com/skiplake/skiplake/internal/goldentest"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t *testing.T) string { return goldentest.Dir(t) }

// copyTable copies a golden table root into a temporary directory (the golden
// directory is read-only).
func copyTable(t *testing.T, src string) string {
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// liveRows reads every live row of the latest snapshot (deletion vectors applied)
// as sorted strings, with the partition values.
func liveRows(t *testing.T, store storage.Storage) []string {
	ctx := context.Background()
	snap, err := log.New(store).Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	logical, err := log.ToArrow(st, log.ArrowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts := snap.PartitionColumns()
	var fields []arrow.Field
	for _, f := range logical.Fields() {
		if !slices.ContainsFunc(parts, func(c string) bool { return strings.EqualFold(c, f.Name) }) {
			fields = append(fields, f)
		}
	}
	want := arrow.NewSchema(fields, nil)
	var out []string
	for _, a := range snap.Files() {
		var pv []string
		for _, c := range parts {
			v, isNull := a.PartitionValue(c)
			if isNull {
				v = "<null>"
			}
			pv = append(pv, c+"="+v)
		}
		sort.Strings(pv)
		err := readFile(ctx, store, a, want, memory.DefaultAllocator, func(rec arrow.RecordBatch, _ int64) error {
			for i := 0; i < int(rec.NumRows()); i++ {
				var sb strings.Builder
				for c := 0; c < int(rec.NumCols()); c++ {
					sb.WriteString(rec.Column(c).ValueStr(i))
					sb.WriteByte('|')
				}
				out = append(out, sb.String()+strings.Join(pv, ","))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", a.Path, err)
		}
	}
	sort.Strings(out)
	return out
}

// TestGoldenTablesKeepRows compacts copies of tables written by Spark and friends
// (partitions with nulls and escaped characters, deletion vectors, checkpoints) and
// checks O1 on each.
func TestGoldenTablesKeepRows(t *testing.T) {
	root := goldenDir(t)
	tables := []struct {
		name    string
		cluster []string // then clustered with Hilbert on these (none: compaction only)
	}{
		{"dat/basic_append", nil},
		{"dat/basic_partitioned", []string{"number", "a_float"}},
		{"delta-golden/data-reader-escaped-chars", []string{"_1"}},
		{"delta-golden/dv-partitioned-with-checkpoint", []string{"col1", "col2"}},
		{"delta-kernel-rs/table-with-dv-small", nil},
		{"delta-golden/basic-decimal-table", nil},
	}
	for _, tc := range tables {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(root, name, "delta")
			if _, err := os.Stat(src); err != nil {
				t.Skipf("golden table %s absent: %v", name, err)
			}
			store, err := storage.NewLocal(copyTable(t, src))
			if err != nil {
				t.Fatal(err)
			}
			before := liveRows(t, store)
			plan, err := PlanLatest(context.Background(), store, Options{})
			if errors.Is(err, log.ErrUnsupportedFeature) {
				t.Skipf("table not writable by this engine: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := Execute(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			after := liveRows(t, store)
			if !slices.Equal(before, after) {
				t.Fatalf("O1 violated:\nbefore %q\nafter  %q", before, after)
			}
			t.Logf("compaction: %d bins, %d files → %d, %d rows", plan.NumBins, m.NumRemovedFiles, m.NumAddedFiles, len(after))
			if tc.cluster == nil {
				return
			}
			plan, err = PlanLatest(context.Background(), store, Options{Curve: CurveHilbert, ClusterBy: tc.cluster})
			if err != nil {
				t.Fatal(err)
			}
			if m, err = Execute(context.Background(), plan); err != nil {
				t.Fatal(err)
			}
			if clustered := liveRows(t, store); !slices.Equal(before, clustered) {
				t.Fatalf("O1 violated by clustering:\nbefore %q\nafter  %q", before, clustered)
			}
			t.Logf("hilbert on %v: %d bins, %d files → %d", tc.cluster, plan.NumBins, m.NumRemovedFiles, m.NumAddedFiles)
		})
	}
}
