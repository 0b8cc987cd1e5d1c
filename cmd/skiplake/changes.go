package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/skiplake/skiplake/internal/render"
	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "changes", usage: "TABLE --from V|TS [--to V|TS] [--filter EXPR] [--columns a,b] [--format table|jsonl|csv|parquet] [--null STRING] [--output PATH]",
		summary: "print the rows inserted, deleted and updated in a range of versions (the change data feed)",
		details: "The table must have delta.enableChangeDataFeed=true over the whole range. Each row has the table's\n" +
			"columns plus _change_type (insert, delete, update_preimage, update_postimage), _commit_version\n" +
			"and _commit_timestamp. When the rows are written, stderr gets the line\n" +
			"  changes: versions F to T, N rows; resume with --from T+1\n" +
			"(or \"changes: no version after L yet; resume with --from L+1\"): a job that stores the --from it\n" +
			"prints and passes it next time reads every change once. A --from one past the latest version\n" +
			"reads nothing and succeeds. Exit status 1: a version in the range without the change data feed,\n" +
			"or whose log or change files were removed (the message names the version); a version after the\n" +
			"latest. Exit status 2: --from after --to, a bad flag or filter.",
		examples: []string{`skiplake changes /tmp/t --from 3 --to 7 --format jsonl`,
			`skiplake changes /tmp/t --from "2026-03-01 00:00:00" --filter "_change_type = 'delete'" --columns id,_commit_version`,
			`skiplake changes /tmp/t --from "$(cat next-version)" --format parquet --output /tmp/batch.parquet`},
		run: runChanges})
}

// changeRef parses --from or --to: a version (digits) or a timestamp (the formats of
// --timestamp, except epoch milliseconds, which would read as a version). version is
// the version given, -1 for a timestamp.
func changeRef(name, s string) (ref table.Ref, version int64, err error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return table.Ref{}, 0, usagef("--%s %s: %v", name, s, err)
		}
		return table.AtVersion(v), v, nil
	}
	if strings.HasPrefix(s, "-") && strings.Trim(s[1:], "0123456789") == "" {
		return table.Ref{}, 0, usagef("--%s must be a version >= 0 or a timestamp, got %s", name, s)
	}
	ts, err := parseTimestamp(s)
	if err != nil {
		return table.Ref{}, 0, usagef("--%s: want a version or a timestamp (RFC 3339 or 'YYYY-MM-DD[ HH:MM:SS]', UTC): %v", name, err)
	}
	return table.AtTimestamp(ts), -1, nil
}

func runChanges(ctx context.Context, e *env, args []string) (err error) {
	fs := flag.NewFlagSet("changes", flag.ContinueOnError)
	from := fs.String("from", "", "first version to read (a version, or a timestamp: the first version committed at or after it); required. To resume, the --from the previous run printed")
	to := fs.String("to", "", "last version to read (a version, or a timestamp: the last version committed at or before it; default the latest)")
	filter := fs.String("filter", "", "predicate over the table's columns and _change_type, _commit_version, _commit_timestamp, e.g. \"_change_type = 'insert'\"")
	var cols listFlag
	fs.Var(&cols, "columns", "columns to return, in order (comma-separated; default the table's and the three change columns)")
	format := fs.String("format", "table", "output format: table, jsonl, csv or parquet")
	output := fs.String("output", "", "write to this file instead of stdout")
	null := fs.String("null", "", "how csv and table write NULL (default: csv an empty unquoted field, the empty string being \"\"; table NULL)")
	path, err := tableArgs(fs, args, format, render.Formats...)
	if err != nil {
		return err
	}
	if !flagSet(fs, "from") {
		return usagef("--from is required (the first version to read; 0 for everything the log still holds)")
	}
	fromRef, fromV, err := changeRef("from", *from)
	if err != nil {
		return err
	}
	toRef := table.Latest()
	if flagSet(fs, "to") {
		var toV int64
		if toRef, toV, err = changeRef("to", *to); err != nil {
			return err
		}
		if fromV >= 0 && toV >= 0 && fromV > toV {
			return usagef("--from %d is after --to %d", fromV, toV)
		}
	}
	if err := checkFilter("filter", *filter); err != nil {
		return err
	}
	if flagSet(fs, "null") && *format != "csv" && *format != "table" {
		return usagef("--null applies to --format csv and table")
	}
	if *format == "parquet" && *output == "" {
		return usagef("--format parquet needs --output PATH")
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	opts := []table.ScanOption{table.WithColumns(cols...)}
	if *filter != "" {
		opts = append(opts, table.WithFilter(*filter))
	}
	out, err := e.openRowsOutput(*output, path)
	if err != nil {
		return err
	}
	defer out.abort()
	rd, err := t.Changes(ctx, fromRef, toRef, opts...)
	if err != nil {
		return err
	}
	defer rd.Release()
	ropts := render.Options{}
	if flagSet(fs, "null") {
		ropts.Null = null
	}
	rows, err := out.writeRows(*format, rd.Schema(), ropts, rd)
	if err != nil {
		return err
	}
	// The resume point goes to stderr only once the rows are written (with --output,
	// once the file is in place): a job that stores the printed --from only on exit
	// status 0 reads nothing twice and misses nothing.
	if rd.ToVersion < rd.FromVersion {
		fmt.Fprintf(e.stderr, "changes: no version after %d yet; resume with --from %d\n", rd.ToVersion, rd.FromVersion)
	} else {
		fmt.Fprintf(e.stderr, "changes: versions %d to %d, %d rows; resume with --from %d\n", rd.FromVersion, rd.ToVersion, rows, rd.ToVersion+1)
	}
	return nil
}
