package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "delete", usage: "TABLE --where EXPR [--rewrite] [--isolation LEVEL] [--dry-run] [--quiet] [--format table|json]",
		summary:  "delete the rows matching a predicate (deletion vectors or rewritten files)",
		examples: []string{`skiplake delete /tmp/t --where "day < DATE '2024-01-01'"`, `skiplake delete /tmp/t --where "user_id = 42" --dry-run --format json`},
		run:      runDelete})
	register(&command{name: "update", usage: "TABLE --set LIST [--where EXPR] [--rewrite] [--isolation LEVEL] [--dry-run] [--quiet] [--format table|json]",
		summary:  "set columns of the rows matching a predicate",
		examples: []string{`skiplake update /tmp/t --set "qty = qty + 1, note = 'fixed'" --where "id = 7"`},
		run:      runUpdate})
	register(&command{name: "merge", usage: "TABLE SOURCE... --on k1,k2 [--when-matched update|delete|ignore] [--matched-condition EXPR] [--set LIST] " +
		"[--when-not-matched insert|ignore] [--when-not-matched-by-source delete|ignore] [--not-matched-by-source-condition EXPR] " +
		"[--input-format parquet|csv|jsonl] [--schema SCHEMA] [--merge-schema] [--memory SIZE] [--rewrite] [--isolation LEVEL] [--dry-run] [--quiet] [--format table|json]",
		summary: "upsert a Parquet, CSV or JSONL source into a table by key columns",
		examples: []string{`skiplake merge /tmp/t changes.parquet --on id`, `skiplake merge /tmp/t changes-with-new-columns.parquet --on id --merge-schema`,
			`skiplake merge /tmp/t deletes.csv --on id --when-matched delete --when-not-matched ignore`,
			`skiplake merge /tmp/t snapshot.jsonl --on id,day --when-not-matched-by-source delete --dry-run`},
		run: runMerge})
	register(&command{name: "restore", usage: "TABLE (--version N | --timestamp TS) [--dry-run] [--quiet] [--format table|json]",
		summary:  "make the table hold what an older version held (one commit)",
		examples: []string{`skiplake restore /tmp/t --version 12`, `skiplake restore /tmp/t --timestamp "2026-01-31 23:00:00" --dry-run`},
		run:      runRestore})
}

// dmlFlags are the flags DELETE, UPDATE and MERGE share.
type dmlFlags struct {
	dry       *bool
	rewrite   *bool
	isolation *string
	format    *string
	quiet     *bool
}

func addDMLFlags(fs *flag.FlagSet) dmlFlags {
	return dmlFlags{
		dry:       fs.Bool("dry-run", false, "find the rows and files the command would change, write nothing"),
		rewrite:   fs.Bool("rewrite", false, "rewrite touched files even when the table has deletion vectors enabled (copy-on-write)"),
		isolation: fs.String("isolation", "", "serializable or write-serializable (default: write-serializable, or serializable when the table sets delta.isolationLevel)"),
		format:    fs.String("format", "table", "table or json"),
		quiet:     quietFlag(fs),
	}
}

func (f dmlFlags) options(e *env, label string) (table.DMLOptions, func(), error) {
	opts := table.DMLOptions{DryRun: *f.dry, RewriteFiles: *f.rewrite}
	switch strings.ToLower(strings.ReplaceAll(*f.isolation, "-", "")) {
	case "":
	case "serializable":
		opts.IsolationLevel = log.Serializable
	case "writeserializable":
		opts.IsolationLevel = log.WriteSerializable
	default:
		return opts, nil, usagef("--isolation %q: want serializable or write-serializable", *f.isolation)
	}
	prog := newProgress(e, label, *f.quiet)
	opts.Progress = updateFrom(prog)
	return opts, prog.Done, nil
}

func runDelete(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	where := fs.String("where", "", "the rows to delete (required; TRUE deletes every row)")
	df := addDMLFlags(fs)
	path, err := tableArgs(fs, args, df.format, "table", "json")
	if err != nil {
		return err
	}
	if strings.TrimSpace(*where) == "" {
		return usagef("--where is required (use --where TRUE to delete every row)")
	}
	if err := checkFilter("where", *where); err != nil {
		return err
	}
	opts, done, err := df.options(e, "delete")
	if err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	res, err := t.Delete(ctx, *where, opts)
	done()
	if err != nil {
		return err
	}
	return printDML(e.stdout, *df.format, res)
}

func runUpdate(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("update", flag.ContinueOnError)
	set := fs.String("set", "", "the SET list, e.g. \"qty = qty + 1, note = 'fixed'\" (required)")
	where := fs.String("where", "", "the rows to update (default: every row)")
	df := addDMLFlags(fs)
	path, err := tableArgs(fs, args, df.format, "table", "json")
	if err != nil {
		return err
	}
	if strings.TrimSpace(*set) == "" {
		return usagef("--set is required")
	}
	if err := checkFilter("where", *where); err != nil {
		return err
	}
	opts, done, err := df.options(e, "update")
	if err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	res, err := t.Update(ctx, *where, table.UpdateOptions{Set: *set, DMLOptions: opts})
	done()
	if err != nil {
		return err
	}
	return printDML(e.stdout, *df.format, res)
}

func runMerge(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	var on listFlag
	fs.Var(&on, "on", "key columns, comma-separated (required): rows match when every key is equal")
	matched := fs.String("when-matched", "update", "update, delete or ignore: what happens to target rows a source row matches")
	matchedCond := fs.String("matched-condition", "", "only matched rows for which this holds (columns: the target's; source.col: the source's)")
	set := fs.String("set", "", "with --when-matched update: a SET list instead of every column from the source, e.g. \"qty = qty + source.qty\"")
	notMatched := fs.String("when-not-matched", "insert", "insert or ignore: what happens to source rows no target row matches")
	bySource := fs.String("when-not-matched-by-source", "ignore", "delete or ignore: what happens to target rows no source row matches (reads the whole table)")
	bySourceCond := fs.String("not-matched-by-source-condition", "", "only unmatched target rows for which this holds")
	inFormat := fs.String("input-format", "", "parquet, csv or jsonl (default: by file extension; required for - (standard input))")
	schemaText := fs.String("schema", "", "schema of CSV/JSONL source rows (default: the table's)")
	memory := fs.String("memory", "", "memory for source rows before spilling them to disk by key hash, e.g. 1GiB (default 256 MiB)")
	mergeSchema := fs.Bool("merge-schema", false, "add the source's columns (and struct fields) the table lacks to its schema in the same commit (UPDATE SET * and INSERT * then take them)")
	df := addDMLFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want TABLE and at least one SOURCE file (or - for standard input)")
	}
	if err := checkFormat(*df.format, "table", "json"); err != nil {
		return err
	}
	if len(on) == 0 {
		return usagef("--on is required")
	}
	opts := table.MergeOptions{On: on}
	switch *matched {
	case "update":
		opts.WhenMatched = []table.MergeClause{{Action: table.MergeUpdate, Condition: *matchedCond, Set: *set}}
	case "delete":
		opts.WhenMatched = []table.MergeClause{{Action: table.MergeDelete, Condition: *matchedCond}}
	case "ignore":
		if *matchedCond != "" || *set != "" {
			return usagef("--matched-condition and --set need --when-matched update or delete")
		}
	default:
		return usagef("--when-matched %q: want update, delete or ignore", *matched)
	}
	if *set != "" && *matched != "update" {
		return usagef("--set needs --when-matched update")
	}
	switch *notMatched {
	case "insert":
		opts.WhenNotMatched = []table.MergeClause{{Action: table.MergeInsert}}
	case "ignore":
	default:
		return usagef("--when-not-matched %q: want insert or ignore", *notMatched)
	}
	switch *bySource {
	case "delete":
		opts.WhenNotMatchedBySource = []table.MergeClause{{Action: table.MergeDelete, Condition: *bySourceCond}}
	case "ignore":
		if *bySourceCond != "" {
			return usagef("--not-matched-by-source-condition needs --when-not-matched-by-source delete")
		}
	default:
		return usagef("--when-not-matched-by-source %q: want delete or ignore", *bySource)
	}
	if len(opts.WhenMatched)+len(opts.WhenNotMatched)+len(opts.WhenNotMatchedBySource) == 0 {
		return usagef("every clause is ignore: the merge would do nothing")
	}
	for name, c := range map[string]string{"matched-condition": *matchedCond, "not-matched-by-source-condition": *bySourceCond} {
		if err := checkFilter(name, c); err != nil {
			return err
		}
	}
	if *memory != "" {
		if opts.MemoryBudget, err = table.ParseSize(*memory); err != nil {
			return usagef("--memory: %v", err)
		}
	}
	inputs, err := parseInputs(pos[1:], *inFormat)
	if err != nil {
		return err
	}
	dopts, done, err := df.options(e, "merge")
	if err != nil {
		return err
	}
	defer done()
	opts.DMLOptions = dopts
	opts.MergeSchema = *mergeSchema
	t, err := e.openTable(ctx, pos[0])
	if err != nil {
		return err
	}
	snap, err := t.Snapshot(ctx, table.Latest())
	if err != nil {
		return err
	}
	schema := snap.Schema()
	switch {
	case *schemaText != "":
		if schema, err = parseSchemaFlag(*schemaText); err != nil {
			return err
		}
	case *mergeSchema:
		if schema, _, err = inputSchemas(e, inputs, schema, nil, true); err != nil {
			return err
		}
	}
	var computed map[string]bool
	if *schemaText == "" {
		computed = computedColumns(snap)
	}
	rdr := newInputReader(ctx, e, schema, nil, inputs, computed)
	defer rdr.Release()
	res, err := t.Merge(ctx, rdr, opts)
	done()
	if err != nil {
		return explainInputError(rdr, err)
	}
	return printDML(e.stdout, *df.format, res)
}

// printDML prints a DML result: a summary line, the touched files, and what skipping
// decided while finding the rows.
func printDML(w io.Writer, format string, res *table.DMLResult) error {
	if format == "json" {
		return writeJSON(w, res)
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	switch {
	case res.DryRun:
		fmt.Fprintf(tw, "%s\tdry run: %s (%s); nothing written\n", res.Operation, dmlRows(res), res.Mode)
	case res.Version < 0:
		fmt.Fprintf(tw, "%s\tno row changed; nothing committed\n", res.Operation)
	default:
		fmt.Fprintf(tw, "%s\t%s: version %d (%s)\n", res.Operation, dmlRows(res), res.Version, res.Mode)
	}
	if res.Operation == "MERGE" {
		fmt.Fprintf(tw, "source\t%d rows, %d pass(es)\n", res.SourceRows, res.Passes)
	}
	fmt.Fprintf(tw, "files\t%d read of %d; %d removed (%d rewritten), %d added, deletion vectors %d new, %d grown\n",
		res.FilesRead, res.FilesConsidered, res.FilesRemoved, res.FilesRewritten, res.FilesAdded, res.DeletionVectorsAdded, res.DeletionVectorsUpdated)
	fmt.Fprintf(tw, "bytes\t%d added, %d removed, %d in deletion vectors\n", res.BytesAdded, res.BytesRemoved, res.DeletionVectorBytes)
	if rep := res.Report; rep != nil {
		for _, l := range rep.Levels {
			unit := "files"
			switch l.Level {
			case "rowgroup":
				unit = "row groups"
			case "page":
				unit = "rows (page index)"
			}
			fmt.Fprintf(tw, "skipping\t%s: %d of %d %s skipped\n", l.Level, l.Skipped, l.Total, unit)
		}
	}
	if res.Attempts > 1 {
		fmt.Fprintf(tw, "retries\tre-planned %d time(s) after concurrent OPTIMIZE\n", res.Attempts-1)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Files) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tACTION\tLIVE ROWS\tROWS CHANGED\tREAD")
	for _, f := range res.Files {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\n", f.Path, f.Action, f.LiveRows, f.RowsDeleted, f.Read)
	}
	return tw.Flush()
}

func dmlRows(res *table.DMLResult) string {
	switch res.Operation {
	case "DELETE":
		return fmt.Sprintf("%d rows deleted", res.RowsDeleted)
	case "UPDATE":
		return fmt.Sprintf("%d rows updated", res.RowsUpdated)
	}
	return fmt.Sprintf("%d rows updated, %d inserted, %d deleted", res.RowsUpdated, res.RowsInserted, res.RowsDeleted)
}

func runRestore(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	ref := addRefFlags(fs)
	dry := fs.Bool("dry-run", false, "show what would be restored (and check the files exist) without committing")
	format := fs.String("format", "table", "table or json")
	quiet := quietFlag(fs)
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	if !flagSet(fs, "version") && !flagSet(fs, "timestamp") {
		return usagef("--version or --timestamp is required")
	}
	r, err := ref.ref()
	if err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	prog := newProgress(e, "restore", *quiet)
	res, err := t.Restore(ctx, r, table.RestoreOptions{DryRun: *dry, Progress: updateFrom(prog)})
	prog.Done()
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, res)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	if res.DryRun {
		fmt.Fprintf(tw, "dry run\twould restore version %d; nothing written\n", res.RestoredVersion)
	} else {
		fmt.Fprintf(tw, "restored\tversion %d as version %d\n", res.RestoredVersion, res.Version)
	}
	fmt.Fprintf(tw, "files\t%d re-added (%d bytes), %d removed (%d bytes); %d files, %d bytes after\n",
		res.FilesRestored, res.BytesRestored, res.FilesRemoved, res.BytesRemoved, res.FilesAfter, res.BytesAfter)
	if res.MetadataRestored {
		fmt.Fprintln(tw, "metadata\tschema and properties of the restored version")
	}
	return tw.Flush()
}
