package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/skiplake/skiplake/storage"
)

func init() {
	register(&command{name: "count", usage: "TABLE [--filter EXPR] [--version N | --timestamp TS] [--format text|json]",
		summary: "count the rows of a table version that match a filter (files proven to match are answered from the log)",
		examples: []string{`skiplake count /tmp/t --filter "country = 'JP'"`,
			`skiplake count /tmp/t --filter "amount > 500" --version 3 --format json`},
		run: runCount})
}

// countResult is count's JSON output.
type countResult struct {
	Version int64  `json:"version"`
	Filter  string `json:"filter,omitempty"`
	Count   int64  `json:"count"`
	// Files counts the snapshot's files by how the count was obtained.
	Files countFiles `json:"files"`
	// Requests and SnapshotRequests are the object-store requests of the count and of
	// loading the snapshot (the ScanReport's; absent for local tables).
	Requests         *storage.RequestCounts `json:"requests,omitempty"`
	SnapshotRequests *storage.RequestCounts `json:"snapshotRequests,omitempty"`
}

type countFiles struct {
	Total int64 `json:"total"`
	// Skipped files cannot hold a matching row (partition values, statistics, Bloom).
	Skipped int64 `json:"skipped"`
	// FromMetadata files were proven to match in every row: their record counts in
	// the log (less deletion vectors) were added without reading them.
	FromMetadata int64 `json:"fromMetadata"`
	// Read files were opened and their rows counted (only the filter's columns).
	Read int64 `json:"read"`
}

func runCount(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("count", flag.ContinueOnError)
	pa := addPlanFlags(fs, "predicate; only rows matching it are counted (default: every row)", "text", "text", "json")
	fs.Lookup("format").Usage = "text (the count alone) or json (with how many files were answered from the log)"
	_, _, sc, err := pa.plan(ctx, e, args)
	if err != nil {
		return err
	}
	n, rep, err := sc.Count(ctx)
	if err != nil {
		return err
	}
	if *pa.format == "text" {
		fmt.Fprintln(e.stdout, n)
		return nil
	}
	md := rep.Level("metadata")
	res := countResult{Version: rep.Version, Filter: rep.Filter, Count: n, Files: countFiles{
		Total: rep.Files.Total, Skipped: rep.Files.Skipped,
		FromMetadata: md.MustMatch, Read: md.Kept - md.MustMatch,
	}, Requests: rep.Requests, SnapshotRequests: rep.SnapshotRequests}
	return writeJSON(e.stdout, res)
}
