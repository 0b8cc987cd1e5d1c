package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

func init() {
	register(&command{name: "optimize", usage: "TABLE [--where PARTITION_EXPR] [--zorder-by c1,c2 | --hilbert-by c1,c2 | --sort-by c1,c2 | --layout workload [--queries FILE] [--robustness F] [--workload-columns c1,c2]] [--full] [--bloom c1,c2] [--target-size SIZE] [--memory SIZE] [--dry-run] [--format table|json]",
		summary: "compact small files and cluster on Z-order or Hilbert keys, or lay files out by a tree learned from a workload", examples: []string{`skiplake optimize /tmp/t --hilbert-by id,amount --bloom id`, `skiplake optimize /tmp/t --where "country = 'JP'" --target-size 256MiB --format json`,
			`skiplake optimize /tmp/t --layout workload --queries dashboards.sql`},
		run: runOptimize})
	register(&command{name: "vacuum", usage: "TABLE [--retain DURATION] [--force] [--dry-run] [--format table|json]",
		summary: "delete files no version inside the retention window references", examples: []string{`skiplake vacuum /tmp/t --dry-run`, `skiplake vacuum /tmp/t --retain 24h --force`},
		run: runVacuum})
}

func runOptimize(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("optimize", flag.ContinueOnError)
	where := fs.String("where", "", "only partitions matching this predicate over partition columns")
	var zorder, hilbert, linear listFlag
	fs.Var(&zorder, "zorder-by", "cluster on a Z-order curve over these columns' ranks")
	fs.Var(&hilbert, "hilbert-by", "cluster on a Hilbert curve over these columns' ranks")
	fs.Var(&linear, "sort-by", "cluster by a plain sort on these columns (baseline)")
	full := fs.Bool("full", false, "re-cluster every file, including finished cubes (with --layout workload: build a new tree)")
	layout := fs.String("layout", "", "workload: lay files out by a tree of cuts learned from --queries; later runs route new rows through the stored tree")
	queries := fs.String("queries", "", "workload file for --layout workload (one filter per line, optional \"WEIGHT:\" prefix)")
	robustness := fs.Float64("robustness", 0, "share of generic queries blended into a new workload tree (0..0.9)")
	var treeCols listFlag
	fs.Var(&treeCols, "workload-columns", "columns the workload tree may cut besides the workload's own")
	var bloomCols listFlag
	fs.Var(&bloomCols, "bloom", "add Bloom filters on these columns (backfills files that lack them)")
	target := fs.String("target-size", "", "target file size, e.g. 128MiB (default: the table's delta.targetFileSize or 128 MiB)")
	memory := fs.String("memory", "", "memory budget before spilling, e.g. 1GiB (default 1 GiB)")
	dry := fs.Bool("dry-run", false, "print the plan without writing anything")
	format := fs.String("format", "table", "table or json")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	n := 0
	for _, l := range [][]string{zorder, hilbert, linear} {
		if len(l) > 0 {
			n++
		}
	}
	if n > 1 {
		return usagef("--zorder-by, --hilbert-by and --sort-by are mutually exclusive")
	}
	if err := checkFilter("where", *where); err != nil {
		return err
	}
	opts := table.OptimizeOptions{Where: *where, ZOrderBy: zorder, HilbertBy: hilbert, LinearBy: linear, Full: *full, DryRun: *dry, BloomColumns: bloomCols,
		Layout: *layout, Robustness: *robustness, WorkloadColumns: treeCols}
	if *layout != "" && *layout != "workload" {
		return usagef("--layout %q: want workload", *layout)
	}
	if *layout == "" && (*queries != "" || *robustness != 0 || len(treeCols) > 0) {
		return usagef("--queries, --robustness and --workload-columns need --layout workload")
	}
	if *layout != "" && n > 0 {
		return usagef("--layout workload does not combine with --zorder-by, --hilbert-by or --sort-by")
	}
	if *queries != "" {
		if opts.Workload, err = workload.ParseFile(*queries); err != nil {
			return err
		}
	}
	if *target != "" {
		if opts.TargetFileSize, err = table.ParseSize(*target); err != nil {
			return usagef("--target-size: %v", err)
		}
	}
	if *memory != "" {
		if opts.MemoryBudget, err = table.ParseSize(*memory); err != nil {
			return usagef("--memory: %v", err)
		}
	}
	t, err := table.OpenURL(ctx, path)
	if err != nil {
		return err
	}
	bar := newBar(e, "optimize")
	opts.Progress = func(p table.Progress) { bar.Update(p.Done, p.Total, p.Phase+" "+p.Unit) }
	res, err := t.Optimize(ctx, opts)
	bar.Done()
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, res)
	}
	p := res.Plan
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	curve := p.Curve.String()
	if len(p.ClusterBy) > 0 {
		curve += " on " + strings.Join(p.ClusterBy, ", ")
	}
	fmt.Fprintf(tw, "plan\tversion %d, %s, %d bins, %d files, %d bytes\n", p.Version, curve, p.NumBins, p.NumFiles, p.NumBytes)
	for _, part := range p.Partitions {
		for i, b := range part.Bins {
			fmt.Fprintf(tw, "  bin %d\t%s %s: %d files, %d bytes, %d rows\n", i, partLabel(part.Values), b.Kind, len(b.Files), b.Bytes, b.Rows)
			if l := b.Layout; l != nil {
				fmt.Fprintf(tw, "  tree\t%s %s: %d new files, %d waiting files moved down, %d left waiting\n", l.Action, l.Tree, l.NewFiles, l.PendingFiles, l.WaitingFiles)
			}
		}
		if part.Drift != nil {
			fmt.Fprintf(tw, "  drift\t%s: %s\n", partLabel(part.Values), part.Drift)
		}
	}
	if m := res.Metrics; m != nil {
		fmt.Fprintf(tw, "done\tcommitted versions %v in %s: removed %d files (%d bytes), added %d files (%d bytes), %d rows\n",
			m.Versions, m.Elapsed.Round(time.Millisecond), m.NumRemovedFiles, m.NumRemovedBytes, m.NumAddedFiles, m.NumAddedBytes, m.NumRows)
	} else {
		fmt.Fprintln(tw, "dry run\tnothing written")
	}
	return tw.Flush()
}

func partLabel(values map[string]*string) string {
	if len(values) == 0 {
		return "(table)"
	}
	var parts []string
	for k, v := range values {
		s := "NULL"
		if v != nil {
			s = *v
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, ",")
}

func runVacuum(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("vacuum", flag.ContinueOnError)
	retain := fs.String("retain", "", "retention, e.g. 168h or '7 days' (default: the table's delta.deletedFileRetentionDuration or 7 days)")
	force := fs.Bool("force", false, "allow a retention shorter than the table's")
	dry := fs.Bool("dry-run", false, "list what would be deleted without deleting")
	format := fs.String("format", "table", "table or json")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	opts := table.VacuumOptions{Force: *force, DryRun: *dry}
	if *retain != "" {
		d, err := time.ParseDuration(*retain)
		if err != nil {
			if d, err = table.ParseInterval(*retain); err != nil {
				return usagef("--retain %q: want a Go duration (168h) or an interval ('7 days')", *retain)
			}
		}
		if d < 0 {
			return usagef("--retain %q: must not be negative", *retain)
		}
		if d == 0 {
			// The library reads a zero Retention as "the table's default"; an explicit
			// zero from the command line means "keep nothing older than now".
			d = time.Nanosecond
		}
		opts.Retention = d
	}
	t, err := table.OpenURL(ctx, path)
	if err != nil {
		return err
	}
	res, err := t.Vacuum(ctx, opts)
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, res)
	}
	verb := "deleted"
	if res.DryRun {
		verb = "would delete"
	}
	for _, f := range res.Files {
		fmt.Fprintf(e.stdout, "%s %s\n", verb, f)
	}
	fmt.Fprintf(e.stdout, "%s %d files (%d bytes); retention %s\n", verb, len(res.Files), res.Bytes, res.Retention)
	if len(res.Temporaries) > 0 {
		fmt.Fprintf(e.stdout, "%s %d abandoned temporary files (%d bytes)\n", verb, len(res.Temporaries), res.TemporaryBytes)
	}
	if res.KeptOlderThanTable > 0 {
		fmt.Fprintf(e.stdout, "kept %d file(s) older than the table (they were in the directory before it was created)\n", res.KeptOlderThanTable)
	}
	return nil
}
