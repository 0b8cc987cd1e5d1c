package workload_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/workload"
)

func ExampleParse() {
	file := `# monthly dashboard (20 runs a day) and an ad-hoc lookup
20: l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'
l_orderkey = 42
`
	w, err := workload.Parse(strings.NewReader(file), "dashboards.sql")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range w.Queries {
		fmt.Printf("line %d weight %g: %s\n", q.Line, q.Weight, q.Filter)
	}
	for _, c := range w.Columns() {
		fmt.Printf("%s: weight %g\n", c.Column, c.Weight)
	}
	// Output:
	// line 2 weight 20: l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'
	// line 3 weight 1: l_orderkey = 42
	// l_shipdate: weight 20
	// l_orderkey: weight 1
}

func ExampleRecorder() {
	rec := workload.NewRecorder(workload.RecorderOptions{})
	// table.Table.ObserveFilters(rec.Observe) calls this for every filtered scan.
	for _, f := range []string{"id = 7", "id = 7", "day >= DATE '2026-01-01'"} {
		e, _ := expr.Parse(f)
		rec.Observe(e)
	}
	_ = rec.Workload().Format(os.Stdout)
	// Output:
	// 2: id = 7
	// day >= DATE '2026-01-01'
}
