package optimize_test

import (
	"context"
	"fmt"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
)

// Compact a table of small files: plan, inspect the plan, execute.
func ExampleNewPlan() {
	ctx := context.Background()
	store := optimize.NewExampleTable(8) // 8 small files of 1000 rows
	plan, err := optimize.PlanLatest(ctx, store, optimize.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("plan: %d bins, %d files\n", plan.NumBins, plan.NumFiles)
	m, err := optimize.Execute(ctx, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("removed %d files, added %d, rewrote %d rows\n", m.NumRemovedFiles, m.NumAddedFiles, m.NumRows)
	// Output:
	// plan: 1 bins, 8 files
	// removed 8 files, added 1, rewrote 8000 rows
}

// Cluster a table on two columns with a Hilbert curve into files of about 80 KiB.
func ExampleExecute() {
	ctx := context.Background()
	store := optimize.NewExampleTable(8)
	plan, err := optimize.PlanLatest(ctx, store, optimize.Options{
		Curve: optimize.CurveHilbert, ClusterBy: []string{"x", "y"}, TargetFileSize: 80 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := optimize.Execute(ctx, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	snap, _ := log.New(store).Snapshot(ctx, -1)
	fmt.Printf("rows %d, files %d → %d, curve tag %s\n", m.NumRows, m.NumRemovedFiles, snap.NumFiles(),
		snap.Files()[0].Tags[optimize.TagCubeCurve])
	// Output:
	// rows 8000, files 8 → 3, curve tag hilbert
}

// Compact a table and Bloom-index its id column (the CLI's --bloom id): the output
// file is tagged with its index file, and the column is added to the table property
// so that later writes index it too.
func ExampleOptions_bloomColumns() {
	ctx := context.Background()
	store := optimize.NewExampleTable(4)
	plan, err := optimize.PlanLatest(ctx, store, optimize.Options{BloomColumns: []string{"id"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("plan: %d bins, %d files lack filters, new columns %v\n", plan.NumBins, plan.BackfillFiles, plan.NewBloomColumns)
	m, err := optimize.Execute(ctx, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	snap, _ := log.New(store).Snapshot(ctx, -1)
	tag, err := bloom.DecodeTag(snap.Files()[0].Tags[bloom.TagKey])
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("index files %d, tag columns %v, property %s=%s\n", m.NumBloomIndexFiles, tag.Columns,
		bloom.PropColumns, snap.Metadata().Configuration[bloom.PropColumns])
	// Output:
	// plan: 1 bins, 4 files lack filters, new columns [id]
	// index files 1, tag columns [id], property skiplake.bloomFilter.columns=id
}
