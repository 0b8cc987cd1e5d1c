package benchskip_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/skiplake/skiplake/internal/benchskip"
)

// Example runs a small benchmark on the synthetic table and compares the
// k-d tree reference with insertion order on 2-column boxes.
func Example() {
	res, err := benchskip.Run(context.Background(), benchskip.Config{
		Dataset:   benchskip.DatasetSynthetic,
		Rows:      20_000,
		Files:     20,
		Columns:   []string{"zipf", "lognormal"},
		Layouts:   []string{benchskip.LayoutInsertion, benchskip.LayoutKDTree},
		Workloads: []string{"box2-1%"},
		Queries:   20,
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ins := res.Cell(benchskip.LayoutInsertion, "box2-1%")
	kd := res.Cell(benchskip.LayoutKDTree, "box2-1%")
	fmt.Printf("%d rows in %d files\n", res.Rows, res.Config.Files)
	fmt.Printf("insertion order reads %.0f%% of the files\n", ins.FilesReadPct)
	fmt.Println("k-d tree reads fewer:", kd.FilesRead < ins.FilesRead)
	// Output:
	// 20000 rows in 20 files
	// insertion order reads 100% of the files
	// k-d tree reads fewer: true
}

// ExampleResult_WriteText prints the text table (timings vary, so only its
// header line is shown here).
func ExampleResult_WriteText() {
	res, err := benchskip.Run(context.Background(), benchskip.Config{
		Dataset: benchskip.DatasetLineitem, ScaleFactor: 0.001, Files: 10, Queries: 5,
		Workloads: []string{"box2-1%"}, Layouts: []string{benchskip.LayoutHilbert},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var sb strings.Builder
	if err := res.WriteText(&sb); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.SplitN(sb.String(), "\n", 2)[0])
	// Output:
	// dataset lineitem sf=0.001: 6001 rows in 10 files × 8 row groups (≤ 601 rows/file), 1.0 MB est.; clustered on l_shipdate, l_receiptdate, l_partkey, l_orderkey; 5 queries/workload; seed 0
}

// ExampleResult_WriteSVG draws the grouped bar chart of files read.
func ExampleResult_WriteSVG() {
	res, err := benchskip.Run(context.Background(), benchskip.Config{
		Dataset: benchskip.DatasetSynthetic, Rows: 5000, Files: 10, Queries: 5,
		Workloads: []string{"box1-10%", "box2-10%"},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var sb strings.Builder
	if err := res.WriteSVG(&sb, benchskip.ChartFiles); err != nil {
		fmt.Println(err)
		return
	}
	// One background, one bar per layout × workload, one legend swatch per
	// layout.
	fmt.Println(strings.HasPrefix(sb.String(), "<svg"), strings.Count(sb.String(), "<rect"))
	// Output: true 19
}

// ExampleParseWorkload reads workload names as Config.Workloads takes them.
func ExampleParseWorkload() {
	for _, name := range []string{"box3-0.1%", "point-absent+bloom", "unclustered-5%"} {
		w, err := benchskip.ParseWorkload(name)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: kind %d, dims %d, selectivity %g, bloom %v\n", w, w.Kind, w.Dims, w.Selectivity, w.Bloom)
	}
	// Output:
	// box3-0.1%: kind 1, dims 3, selectivity 0.001, bloom false
	// point-absent+bloom: kind 3, dims 0, selectivity 0, bloom true
	// unclustered-5%: kind 4, dims 0, selectivity 0.05, bloom false
}
