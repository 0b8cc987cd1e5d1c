package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "files", usage: "TABLE [--filter EXPR] [--version N | --timestamp TS] [--format table|jsonl]",
		summary: "list the files a scan would read after skipping, with their stats and why", examples: []string{`skiplake files /tmp/t --filter "id = 42"`, `skiplake files /tmp/t --format jsonl`},
		run: runFiles})
	register(&command{name: "explain", usage: "TABLE --filter EXPR [--version N | --timestamp TS] [--format table|json]",
		summary: "show per skipping level how many units and bytes a filter skips", examples: []string{`skiplake explain /tmp/t --filter "id = 42"`, `skiplake explain /tmp/t --filter "amount > 500" --format json`},
		run: runExplain})
}

func planScan(ctx context.Context, path, filter string, r table.Ref) (*table.Table, *table.Scan, error) {
	if err := checkFilter("filter", filter); err != nil {
		return nil, nil, err
	}
	t, err := table.OpenURL(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	snap, err := t.Snapshot(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	var opts []table.ScanOption
	if filter != "" {
		opts = append(opts, table.WithFilter(filter))
	}
	sc, err := snap.Scan(ctx, opts...)
	return t, sc, err
}

func runFiles(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("files", flag.ContinueOnError)
	filter := fs.String("filter", "", "predicate; files it cannot match are left out")
	ref := addRefFlags(fs)
	format := fs.String("format", "table", "table or jsonl")
	path, err := tableArgs(fs, args, format, "table", "jsonl")
	if err != nil {
		return err
	}
	r, err := ref.ref()
	if err != nil {
		return err
	}
	_, sc, err := planScan(ctx, path, *filter, r)
	if err != nil {
		return err
	}
	files := sc.Files()
	if *format == "jsonl" {
		return writeJSONL(e.stdout, files)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tVERDICT\tREASON\tSTATS")
	for _, f := range files {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", f.Path, f.Size, f.Verdict, f.Reason, f.Stats)
	}
	rep := sc.Report()
	fmt.Fprintf(tw, "(%d of %d files kept, %d skipped)\n", rep.Files.Kept, rep.Files.Total, rep.Files.Skipped)
	return tw.Flush()
}

func runExplain(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	filter := fs.String("filter", "", "predicate to explain (required)")
	ref := addRefFlags(fs)
	format := fs.String("format", "table", "table or json")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	path, err := oneTable(pos)
	if err != nil {
		return err
	}
	if *filter == "" {
		return usagef("--filter is required")
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	r, err := ref.ref()
	if err != nil {
		return err
	}
	t, sc, err := planScan(ctx, path, *filter, r)
	if err != nil {
		return err
	}
	rep, err := sc.Explain(ctx)
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, rep)
	}
	fmt.Fprintf(e.stdout, "version %d, filter: %s\n", rep.Version, rep.Filter)
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LEVEL\tUNITS\tSKIPPED\tKEPT\tMUST-MATCH\tBYTES\tBYTES SKIPPED\t")
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", "files (all levels)", rep.Files.Total, rep.Files.Skipped, rep.Files.Kept, rep.Files.MustMatch, rep.Files.BytesTotal, rep.Files.BytesSkipped)
	for _, l := range rep.Levels {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", l.Level, l.Total, l.Skipped, l.Kept, l.MustMatch, l.BytesTotal, l.BytesSkipped)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(e.stdout, "warning:", w)
	}
	if rc, ok := storage.Requests(t.Storage()); ok {
		// Object stores count their requests: what opening the table, planning and
		// reading the footers of the kept files cost.
		fmt.Fprintf(e.stdout, "requests: GET %d, HEAD %d, LIST %d, %d bytes read\n", rc.GET, rc.HEAD, rc.LIST, rc.BytesRead)
	}
	return nil
}
