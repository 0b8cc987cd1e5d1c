package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/skiplake/skiplake/advise"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

func init() {
	register(&command{name: "advise", usage: "TABLE --queries FILE [--files N | --target-size SIZE] [--sample N] [--columns c1,c2] [--robustness F] [--seed N] [--format table|json] [--svg DIR]",
		summary:  "predict, from a sample, how many files each candidate layout makes the workload read, and say which to apply",
		examples: []string{`skiplake advise /tmp/t --queries dashboards.sql`, `skiplake advise /tmp/t --queries dashboards.sql --files 1000 --format json --svg out/`},
		run:      runAdvise})
}

func runAdvise(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("advise", flag.ContinueOnError)
	queries := fs.String("queries", "", "workload file: one filter per line, optionally prefixed with a weight (\"20: day >= DATE '2026-01-01'\")")
	files := fs.Int("files", 0, "files the candidate layouts have (default: the current layout's, to compare at equal counts)")
	target := fs.String("target-size", "", "target file size OPTIMIZE writes, e.g. 128MiB: candidates are checked with it and, when given, have the table's bytes over it as files (default: the table's delta.targetFileSize)")
	sample := fs.Int("sample", 0, "sample rows (default 200 per file, 100,000 to 2,000,000)")
	var cols listFlag
	fs.Var(&cols, "columns", "columns the candidates may cluster on (default: every column the workload filters on; the 4 heaviest are also combined)")
	robust := fs.Float64("robustness", 0, "generic-query blend of the robust workload tree (default 0.2; negative: none)")
	seed := fs.Uint64("seed", 0, "random seed of the sample and the trees")
	format := fs.String("format", "table", "table or json")
	svgDir := fs.String("svg", "", "also write files.svg and boxes.svg into this directory")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	if *queries == "" {
		return usagef("--queries FILE is required")
	}
	if *files < 0 || *sample < 0 {
		return usagef("--files and --sample must not be negative")
	}
	opts := advise.Options{Files: *files, SampleRows: *sample, Columns: cols, Robustness: *robust, Seed: *seed, Table: path, Queries: *queries}
	if *target != "" {
		if opts.TargetFileSize, err = table.ParseSize(*target); err != nil {
			return usagef("--target-size: %v", err)
		}
	}
	w, err := workload.ParseFile(*queries)
	if err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	bar := newBar(e, "advise")
	opts.Progress = func(stage string, done, total int) { bar.Update(int64(done), int64(total), stage) }
	rep, err := advise.Table(ctx, t, w, opts)
	bar.Done()
	if err != nil {
		return err
	}
	if *svgDir != "" {
		charts := []string{advise.ChartFiles}
		if len(rep.Columns) >= 2 {
			charts = append(charts, advise.ChartBoxes)
		}
		if err := writeCharts(*svgDir, charts, rep.WriteSVG, path); err != nil {
			return err
		}
	}
	if *format == "json" {
		return rep.WriteJSON(e.stdout)
	}
	return rep.WriteText(e.stdout)
}

// writeCharts writes each chart as DIR/NAME.svg with draw, replacing a file only
// when the chart was drawn in full, and never inside one of tableRoots.
func writeCharts(dir string, charts []string, draw func(io.Writer, string) error, tableRoots ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, chart := range charts {
		o, err := createOutput(filepath.Join(dir, chart+".svg"), tableRoots...)
		if err != nil {
			return err
		}
		err = draw(o, chart)
		if err == nil {
			err = o.Commit()
		}
		o.Abort()
		if err != nil {
			return fmt.Errorf("writing %s chart: %w", chart, err)
		}
	}
	return nil
}
