package benchskip

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/table"
)

// TestWriteLineitemTable writes lineitem as a Delta table into
// $BENCHSKIP_TABLE/lineitem (appended in insertion order, BENCHSKIP_SF, default
// 1) and the training and held-out queries of BENCHSKIP_WORKLOADS (default
// template,box2-1%) as workload files beside it (NAME.train.sql,
// NAME.test.sql), for timing `skiplake advise` and `optimize --layout workload`
// on a real table. Skipped unless BENCHSKIP_TABLE is set.
func TestWriteLineitemTable(t *testing.T) {
	dir := os.Getenv("BENCHSKIP_TABLE")
	if dir == "" {
		t.Skip("set BENCHSKIP_TABLE=<dir> to write the lineitem table and workload files")
	}
	sf := 1.0
	if s := os.Getenv("BENCHSKIP_SF"); s != "" {
		sf, _ = strconv.ParseFloat(s, 64)
	}
	workloads := []string{"template", "box2-1%"}
	cfg := Config{Dataset: DatasetLineitem, ScaleFactor: sf, Files: 1000, Queries: 100, Workloads: workloads,
		Layouts: []string{LayoutHilbert}, Train: "template", ParquetBytes: true}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = cfg.withDefaults()
	ctx := context.Background()
	p, err := prepare(ctx, cfg, func(string, int, int) {})
	if err != nil {
		t.Fatal(err)
	}
	defer p.d.release()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := p.d.record()
	defer rec.Release()
	tbl, err := table.CreateURL(ctx, filepath.Join(dir, "lineitem"), rec.Schema(), table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for wi, name := range p.workloads {
		w, _ := ParseWorkload(name)
		train, _, err := p.genQueriesStream(w, name, cfg.TrainQueries, cfg.Seed, hashName("train:"+name))
		if err != nil {
			t.Fatal(err)
		}
		for suffix, qs := range map[string][]*query{"train": train, "test": p.queries[wi]} {
			wl, err := toWorkload(qs)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(filepath.Join(dir, name+"."+suffix+".sql"))
			if err != nil {
				t.Fatal(err)
			}
			if err := wl.Format(f); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
