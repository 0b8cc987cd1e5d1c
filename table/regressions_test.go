package table

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/goldentest"
	"github.com/skiplake/skiplake/log"
)

// TestRegressionTablesEveryOperation calls every operation of the facade on each
// regression table (a copy): their checkpoint Parquet is damaged and the commits
// before it are gone, which made every operation panic inside arrow-go. Each must now
// return an error that wraps log.ErrCorruptLog and names the checkpoint file, and
// change nothing on disk.
func TestRegressionTablesEveryOperation(t *testing.T) {
	ctx := context.Background()
	for name, src := range goldentest.RegressionTables(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			goldentest.CopyTree(t, src, dir)
			before := goldentest.TreeState(t, dir)
			tbl, err := OpenURL(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			kv := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
			batch := func() arrow.RecordBatch {
				b := array.NewRecordBuilder(memory.DefaultAllocator, kv)
				defer b.Release()
				b.Field(0).(*array.Int64Builder).Append(40)
				b.Field(1).(*array.Int64Builder).Append(1)
				return b.NewRecordBatch()
			}
			ops := map[string]func() error{
				"Snapshot":  func() error { _, err := tbl.Snapshot(ctx, Latest()); return err },
				"Describe":  func() error { _, err := tbl.Describe(ctx, Latest()); return err },
				"Count":     func() error { _, _, err := tbl.Count(ctx); return err },
				"ReadAll":   func() error { _, err := tbl.ReadAll(ctx, WithFilter("k > 1")); return err },
				"Layout":    func() error { _, err := tbl.Layout(ctx, LayoutOptions{}); return err },
				"Optimize":  func() error { _, err := tbl.Optimize(ctx, OptimizeOptions{}); return err },
				"Vacuum":    func() error { _, err := tbl.Vacuum(ctx, VacuumOptions{}); return err },
				"VacuumDry": func() error { _, err := tbl.Vacuum(ctx, VacuumOptions{DryRun: true}); return err },
				"Maintain":  func() error { _, err := tbl.Maintain(ctx, MaintainOptions{}); return err },
				"Checkpoint": func() error {
					_, err := tbl.Checkpoint(ctx)
					return err
				},
				"Delete": func() error { _, err := tbl.Delete(ctx, "k = 40", DMLOptions{}); return err },
				"Update": func() error { _, err := tbl.Update(ctx, "k = 40", UpdateOptions{Set: "v = 1"}); return err },
				"Alter": func() error {
					_, err := tbl.Alter(ctx, AlterOptions{SetProperties: map[string]string{"delta.appendOnly": "false"}})
					return err
				},
				"Restore": func() error { _, err := tbl.Restore(ctx, AtVersion(2), RestoreOptions{}); return err },
				"Write": func() error {
					rec := batch()
					defer rec.Release()
					_, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{rec}, WriteOptions{})
					return err
				},
				"Merge": func() error {
					rec := batch()
					defer rec.Release()
					rdr, err := array.NewRecordReader(kv, []arrow.RecordBatch{rec})
					if err != nil {
						return err
					}
					defer rdr.Release()
					_, err = tbl.Merge(ctx, rdr, Upsert("k"))
					return err
				},
			}
			for op, call := range ops {
				err := call()
				if !errors.Is(err, log.ErrCorruptLog) || !strings.Contains(err.Error(), "_delta_log/00000000000000000002.checkpoint.parquet") {
					t.Errorf("%s: %v, want a corrupt-log error naming the checkpoint", op, err)
				}
			}
			if after := goldentest.TreeState(t, dir); len(after) != len(before) {
				t.Fatalf("files changed: %d before, %d after", len(before), len(after))
			} else {
				for p, d := range before {
					if after[p] != d {
						t.Fatalf("%s changed: %s -> %s", p, d, after[p])
					}
				}
			}
		})
	}
}
