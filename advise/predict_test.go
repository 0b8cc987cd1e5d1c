package advise

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// predictTable writes the same 12,000 rows in 6 appends each call.
func predictTable(t *testing.T, create table.CreateOptions) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.Create(ctx, storage.NewMemory(), testSchema, create)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		rec := testRows(2_000, uint64(40+i))
		_, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

// TestPredictMatchesRewrite: the planned layout's predicted files and bytes read
// per query are what the real OPTIMIZE rewrite then gives, measured by planning
// the same queries against the rewritten table, within the model's precision
// (files cut at equal rows, not bytes: a few points of the files), and the
// current layout's figures are the table's own before the rewrite.
func TestPredictMatchesRewrite(t *testing.T) {
	ctx := context.Background()
	w := gridWorkload(30, 11)
	for _, tc := range []struct {
		name string
		opts table.OptimizeOptions
		pl   Planned
	}{
		{"hilbert", table.OptimizeOptions{HilbertBy: []string{"a", "b"}}, Planned{Curve: optimize.CurveHilbert, Columns: []string{"a", "b"}}},
		{"zorder", table.OptimizeOptions{ZOrderBy: []string{"a", "b"}}, Planned{Curve: optimize.CurveZOrder, Columns: []string{"a", "b"}}},
		{"sort", table.OptimizeOptions{LinearBy: []string{"a"}}, Planned{Curve: optimize.CurveLinear, Columns: []string{"a"}}},
		{"workload", table.OptimizeOptions{Layout: "workload", Workload: w}, Planned{Curve: optimize.CurveWorkload}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rewritten := predictTable(t, table.CreateOptions{})
			snap, err := rewritten.Snapshot(ctx, table.Latest())
			if err != nil {
				t.Fatal(err)
			}
			_, size, err := tableSize(snap)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.opts
			o.Full, o.TargetFileSize = true, size/8+1
			res, err := rewritten.Optimize(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Metrics == nil || res.Metrics.NumAddedFiles < 4 {
				t.Fatalf("the rewrite wrote %+v, want several files", res.Metrics)
			}
			// Measured on the rewritten table: its current layout.
			after, err := Predict(ctx, rewritten, w, tc.pl)
			if err != nil {
				t.Fatal(err)
			}
			// Predicted on an identical table before the rewrite, at the file
			// count the rewrite wrote.
			pl := tc.pl
			pl.Files = after.Current.Files
			pred, err := Predict(ctx, predictTable(t, table.CreateOptions{}), w, pl)
			if err != nil {
				t.Fatal(err)
			}
			if pred.Current.Files != 6 || pred.Current.FilesReadPct < 90 {
				t.Errorf("current layout of 6 unclustered appends: %+v", pred.Current)
			}
			got, want := pred.Planned, after.Current
			t.Logf("%s: predicted %.2f files (%.1f%%), %.0f bytes (%.1f%%); rewrite %.2f files (%.1f%%), %.0f bytes (%.1f%%)",
				pred.Layout, got.FilesRead, got.FilesReadPct, got.BytesRead, got.BytesReadPct, want.FilesRead, want.FilesReadPct, want.BytesRead, want.BytesReadPct)
			if math.Abs(got.FilesReadPct-want.FilesReadPct) > 12 {
				t.Errorf("predicted %.1f%% of files read, the rewrite reads %.1f%%", got.FilesReadPct, want.FilesReadPct)
			}
			if math.Abs(got.BytesReadPct-want.BytesReadPct) > 12 {
				t.Errorf("predicted %.1f%% of bytes read, the rewrite reads %.1f%%", got.BytesReadPct, want.BytesReadPct)
			}
			if got.FilesReadPct >= pred.Current.FilesReadPct {
				t.Errorf("clustering predicted to read %.1f%% of files, the unclustered table %.1f%%", got.FilesReadPct, pred.Current.FilesReadPct)
			}
		})
	}
}

// TestPredictRefuses: compaction alone and a curve without columns are not
// modelled, and say so.
func TestPredictRefuses(t *testing.T) {
	ctx := context.Background()
	tbl := predictTable(t, table.CreateOptions{})
	w := gridWorkload(5, 1)
	for _, pl := range []Planned{{Curve: optimize.CurveNone}, {Curve: optimize.CurveHilbert}, {Curve: optimize.CurveLinear, Columns: []string{"nope"}}} {
		if _, err := Predict(ctx, tbl, w, pl); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", pl, err)
		}
	}
}
