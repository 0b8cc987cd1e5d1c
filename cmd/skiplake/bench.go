package main

import (
	"context"
	"flag"
	"os"

	"github.com/skiplake/skiplake/internal/benchskip"
	"github.com/skiplake/skiplake/internal/progress"
)

func init() {
	register(&command{name: "bench", usage: "skipping [--dataset lineitem|synthetic] [--sf F] [--rows N] [--files N] [--row-groups N] [--columns c1,c2] [--layouts l1,l2] [--workloads w1,w2] [--queries N] [--train WORKLOAD] [--train-queries N] [--train-sample N] [--robustness F] [--tolerance F] [--advise] [--seed N] [--format table|json] [--svg DIR]",
		summary: "the skipping-ratio benchmark: files a layout makes queries read vs the lower bound", examples: []string{`skiplake bench skipping --dataset lineitem --sf 0.1 --files 200 --svg out/`, `skiplake bench skipping --dataset synthetic --rows 100000 --layouts insertion,hilbert --format json`,
			`skiplake bench skipping --dataset lineitem --sf 0.1 --files 100 --layouts hilbert,workload,workload-robust --train template --workloads template,box2-1%`},
		run: runBench})
}

func runBench(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	dataset := fs.String("dataset", benchskip.DatasetLineitem, "lineitem or synthetic")
	sf := fs.Float64("sf", 0, "TPC-H scale factor for lineitem (default 0.01)")
	rows := fs.Int("rows", 0, "rows (synthetic; overrides --sf for lineitem)")
	files := fs.Int("files", 0, "files per layout (default 100)")
	rowGroups := fs.Int("row-groups", 0, "row groups per file (default 8)")
	var cols, layouts, workloads listFlag
	fs.Var(&cols, "columns", "clustering columns (default per dataset)")
	fs.Var(&layouts, "layouts", "layouts to compare (default: insertion,sort,zorder-raw,zorder,hilbert,kdtree; also workload,workload-robust with --train)")
	fs.Var(&workloads, "workloads", "workloads, e.g. box2-1%,box4-0.1%,point-present,point-absent+bloom,unclustered-1%")
	queries := fs.Int("queries", 0, "queries per workload (default 50)")
	train := fs.String("train", "", "workload the workload layouts are trained on (e.g. template or box2-1%; their queries are held out from the evaluated ones)")
	trainQueries := fs.Int("train-queries", 0, "training queries of the workload layouts (default 100)")
	robustness := fs.Float64("robustness", 0, "generic-query blend of the workload-robust layout (default 0.2)")
	tolerance := fs.Float64("tolerance", 0, "leaf-size tolerance of the workload trees (default 0.2)")
	adv := fs.Bool("advise", false, "also check the layout advisor: its pick from a sample and training queries vs the best layout on all rows with the held-out queries (slow)")
	trainSample := fs.Int("train-sample", 0, "rows the workload trees are built on (default 1000 per file, at least 100,000)")
	seed := fs.Uint64("seed", 0, "random seed")
	format := fs.String("format", "table", "table or json")
	svgDir := fs.String("svg", "", "also write files.svg and boxes.svg into this directory")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "skipping" {
		return usagef("want the benchmark name: skipping")
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	if err := requirePositive(fs, "sf", "rows", "files", "row-groups", "queries"); err != nil {
		return err
	}
	cfg := benchskip.Config{Dataset: *dataset, ScaleFactor: *sf, Rows: *rows, Files: *files, RowGroups: *rowGroups,
		Columns: cols, Layouts: layouts, Workloads: workloads, Queries: *queries, Seed: *seed,
		Train: *train, TrainQueries: *trainQueries, Robustness: *robustness, Tolerance: *tolerance, TrainSample: *trainSample, Advise: *adv}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	var bar *progress.Bar
	if e.terminal {
		bar = progress.NewWriter(e.stderr, "bench")
	}
	res, err := benchskip.Run(ctx, cfg, func(stage string, done, total int) {
		bar.Update(int64(done), int64(total), stage)
	})
	bar.Done()
	if err != nil {
		return err
	}
	if *svgDir != "" {
		if err := os.MkdirAll(*svgDir, 0o755); err != nil {
			return err
		}
		if err := writeCharts(*svgDir, []string{benchskip.ChartFiles, benchskip.ChartBoxes}, res.WriteSVG); err != nil {
			return err
		}
	}
	if *format == "json" {
		return res.WriteJSON(e.stdout)
	}
	return res.WriteText(e.stdout)
}
