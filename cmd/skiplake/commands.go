package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/input"
	"github.com/skiplake/skiplake/internal/progress"
	"github.com/skiplake/skiplake/internal/render"
	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "create", usage: "TABLE (--schema-from FILE.parquet | --schema \"id bigint, ts timestamp\") [--partition-by c1,c2 | --cluster-by c1,c2] [--property k=v]... [--constraint name=expr]... [--allow-non-empty]",
		summary: "create an empty table", examples: []string{`skiplake create /tmp/t --schema "id bigint NOT NULL, country string, amount double" --partition-by country`, `skiplake create /tmp/t --schema-from sample.parquet --property delta.enableDeletionVectors=true`, `skiplake create /tmp/t --schema "id bigint, ts timestamp, v double" --cluster-by id,ts`,
			`skiplake create /tmp/t --schema "id bigint GENERATED ALWAYS AS IDENTITY, ts timestamp, day date GENERATED ALWAYS AS (CAST(ts AS DATE))" --partition-by day`},
		run: runCreate})
	register(&command{name: "append", usage: "TABLE FILE... [--input-format parquet|csv|jsonl] [--schema SCHEMA | --schema-from FILE.parquet] [--partition-by c1,c2] [--property k=v]... [--merge-schema] [--mode append|overwrite [--replace-where PRED] [--overwrite-schema]] [--txn-app-id ID --txn-version N] [--allow-non-empty] [--quiet]",
		summary: "append (or overwrite with) Parquet, CSV or JSONL files in one commit (creates TABLE if absent)", examples: []string{`skiplake append /tmp/t orders.parquet --partition-by country`, `skiplake append /tmp/t day1.csv day2.jsonl --txn-app-id nightly --txn-version 20260301`, `cat rows.jsonl | skiplake append /tmp/t - --input-format jsonl`,
			`skiplake append /tmp/t with-new-columns.parquet --merge-schema`, `skiplake append /tmp/t march.parquet --mode overwrite --replace-where "day >= DATE '2024-03-01' AND day < DATE '2024-04-01'"`, `skiplake append /tmp/t fresh.parquet --mode overwrite --overwrite-schema --partition-by day`},
		run: runAppend})
	register(&command{name: "scan", usage: "TABLE [--filter EXPR] [--columns a,b] [--version N | --timestamp TS] [--format table|jsonl|csv|parquet] [--null STRING] [--output PATH] [--limit N]",
		summary: "print rows of a table version", examples: []string{`skiplake scan /tmp/t --filter "amount > 100 AND country = 'JP'" --columns id,amount --format jsonl`, `skiplake scan /tmp/t --version 3 --format parquet --output /tmp/v3.parquet`},
		run: runScan})
	register(&command{name: "describe", usage: "TABLE [--version N | --timestamp TS] [--layout [--columns c1,c2]] [--format table|json]",
		summary: "show schema, partitioning, properties, protocol and size (or, with --layout, layout health)", examples: []string{`skiplake describe /tmp/t`, `skiplake describe /tmp/t --version 0 --format json`, `skiplake describe /tmp/t --layout --columns id,ts`},
		run: runDescribe})
	register(&command{name: "history", usage: "TABLE [--limit N] [--format table|jsonl]",
		summary: "list commits, newest first", examples: []string{`skiplake history /tmp/t --limit 5`, `skiplake history /tmp/t --format jsonl`},
		run: runHistory})
	register(&command{name: "checkpoint", usage: "TABLE",
		summary: "write a checkpoint of the latest version", examples: []string{`skiplake checkpoint /tmp/t`},
		run: runCheckpoint})
}

func oneTable(pos []string) (string, error) {
	if len(pos) != 1 {
		return "", usagef("want exactly one TABLE argument, got %d", len(pos))
	}
	return pos[0], nil
}

func runCreate(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	schemaFrom := fs.String("schema-from", "", "Parquet file whose schema the table takes")
	schemaText := fs.String("schema", "", "the schema: SQL columns (\"id bigint NOT NULL, ts timestamp\"; a column may end with GENERATED ALWAYS AS (expr) or GENERATED ALWAYS|BY DEFAULT AS IDENTITY [(START WITH n INCREMENT BY m)], as describe prints them), a Delta JSON schema, or @FILE holding either")
	var parts listFlag
	fs.Var(&parts, "partition-by", "partition columns (comma-separated)")
	var cluster listFlag
	fs.Var(&cluster, "cluster-by", "clustering columns (comma-separated, at most 4; st.x is field x of struct st): a Delta clustered table (liquid clustering) that OPTIMIZE clusters by them; exclusive with --partition-by")
	props := kvFlag{}
	fs.Var(props, "property", "table property key=value (repeatable)")
	allowNonEmpty := fs.Bool("allow-non-empty", false, "create the table even if the directory holds other files (VACUUM never deletes files older than the table)")
	var constraints repeatFlag
	fs.Var(&constraints, "constraint", "CHECK constraint name=expr, a Spark SQL boolean expression every written row must make TRUE (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	path, err := oneTable(pos)
	if err != nil {
		return err
	}
	var schema *arrow.Schema
	var rules []table.ColumnRule
	switch {
	case *schemaFrom != "" && *schemaText != "":
		return usagef("--schema-from and --schema are mutually exclusive")
	case *schemaFrom != "":
		if schema, err = parquetSchema(*schemaFrom); err != nil {
			return err
		}
	case *schemaText != "":
		if schema, rules, err = parseCreateSchemaFlag(*schemaText); err != nil {
			return err
		}
	default:
		return usagef("--schema-from or --schema is required")
	}
	if len(parts) > 0 && len(cluster) > 0 {
		return usagef("--partition-by and --cluster-by are mutually exclusive (clustering and partitioning are, in Delta)")
	}
	opts := table.CreateOptions{PartitionColumns: parts, ClusterBy: cluster, Properties: props, AllowNonEmpty: *allowNonEmpty, ColumnRules: rules}
	for _, c := range constraints {
		cc, err := parseConstraintFlag("constraint", c)
		if err != nil {
			return err
		}
		opts.Constraints = append(opts.Constraints, cc)
	}
	_, err = table.CreateURL(ctx, path, schema, opts)
	if errors.Is(err, table.ErrTableExists) {
		return fmt.Errorf("%w; add data with skiplake append, change the table with skiplake alter", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "created %s (version 0, %d columns)\n", storage.RedactLocation(path), schema.NumFields())
	return nil
}

func parquetSchema(path string) (*arrow.Schema, error) {
	r, err := input.OpenParquet(context.Background(), path, input.Options{})
	if errors.Is(err, input.ErrNotAFile) {
		return nil, fmt.Errorf("%s is a directory, not a Parquet file", path)
	}
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return stripFieldMeta(r.Schema()), nil
}

// stripFieldMeta removes reader-added metadata (PARQUET:field_id) from top-level fields.
func stripFieldMeta(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

func runAppend(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("append", flag.ContinueOnError)
	var parts listFlag
	fs.Var(&parts, "partition-by", "partition columns when the table is created, or with --overwrite-schema its new ones (an existing table must be partitioned the same way)")
	props := kvFlag{}
	fs.Var(props, "property", "table property key=value when the table is created (repeatable; for an existing table it must match, see skiplake alter)")
	schemaText := fs.String("schema", "", "schema of a new table (or of the input with --merge-schema or --overwrite-schema): SQL columns (\"id bigint, ts timestamp\"), a Delta JSON schema, or @FILE; default inferred from all CSV/JSONL input, or the first Parquet file's")
	schemaFrom := fs.String("schema-from", "", "Parquet file whose schema a new table takes")
	inFormat := fs.String("input-format", "", "parquet, csv or jsonl (default: by file extension; required for - (standard input))")
	allowNonEmpty := fs.Bool("allow-non-empty", false, "create the table even if the directory holds other files (VACUUM never deletes files older than the table)")
	quiet := quietFlag(fs)
	appID := fs.String("txn-app-id", "", "idempotent write: application id (with --txn-version)")
	appVersion := fs.Int64("txn-version", 0, "idempotent write: the run's version, increasing from run to run; skipped when the table records a version >= this for --txn-app-id")
	mode := fs.String("mode", "append", "append (add the rows) or overwrite (replace the table's rows, or with --replace-where those the predicate selects, in the same commit)")
	replaceWhere := fs.String("replace-where", "", "with --mode overwrite: replace only the rows this predicate selects; every new row must satisfy it")
	overwriteSchema := fs.Bool("overwrite-schema", false, "with --mode overwrite: replace the table's schema (and partitioning: --partition-by, none when absent) with the input's")
	mergeSchema := fs.Bool("merge-schema", false, "add the input's columns (and struct fields) the table lacks to its schema in the same commit")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want TABLE and at least one FILE (or - for standard input)")
	}
	versionSet := flagSet(fs, "txn-version")
	switch {
	case *appID != "" && !versionSet:
		return usagef("--txn-app-id needs --txn-version")
	case *appID == "" && versionSet:
		return usagef("--txn-version needs --txn-app-id")
	case versionSet && *appVersion < 0:
		return usagef("--txn-version must be >= 0, got %d", *appVersion)
	case *schemaText != "" && *schemaFrom != "":
		return usagef("--schema and --schema-from are mutually exclusive")
	case *mode != "append" && *mode != "overwrite":
		return usagef("--mode %q: want append or overwrite", *mode)
	case *replaceWhere != "" && *mode != "overwrite":
		return usagef("--replace-where needs --mode overwrite")
	case *overwriteSchema && *mode != "overwrite":
		return usagef("--overwrite-schema needs --mode overwrite")
	case *overwriteSchema && *replaceWhere != "":
		return usagef("--overwrite-schema replaces the whole table; it cannot be combined with --replace-where")
	}
	if err := checkFilter("replace-where", *replaceWhere); err != nil {
		return err
	}
	path := pos[0]
	inputs, err := parseInputs(pos[1:], *inFormat)
	if err != nil {
		return err
	}
	var explicit *arrow.Schema
	if *schemaText != "" {
		if explicit, err = parseSchemaFlag(*schemaText); err != nil {
			return err
		}
	} else if *schemaFrom != "" {
		if explicit, err = parquetSchema(*schemaFrom); err != nil {
			return err
		}
	}
	t, err := e.openTable(ctx, path)
	if err != nil && !errors.Is(err, table.ErrNotATable) {
		return err
	}
	wopts := table.WriteOptions{AppID: *appID, AppVersion: *appVersion, MergeSchema: *mergeSchema,
		ReplaceWhere: *replaceWhere, OverwriteSchema: *overwriteSchema}
	if *mode == "overwrite" {
		wopts.Overwrite = true
	}
	if *overwriteSchema {
		wopts.PartitionBy = parts
	}
	// types types the CSV and JSONL values; source is the schema the input declares
	// (with --merge-schema the union of the inputs', which the table evolves to).
	var snap *table.Snapshot
	var types, source *arrow.Schema
	var computed map[string]bool // generated and identity columns, which inputs may lack
	switch {
	case t == nil || *overwriteSchema:
		if t != nil {
			if snap, err = t.Snapshot(ctx, table.Latest()); err != nil {
				return err
			}
			if err := sameAsTable(snap, nil, nil, props); err != nil {
				return err
			}
		}
		if types, err = newTableSchema(e, inputs, explicit); err != nil {
			return err
		}
		source = types
	default:
		if snap, err = t.Snapshot(ctx, table.Latest()); err != nil {
			return err
		}
		// With --merge-schema, --schema describes the input; else it must be the table's.
		given := explicit
		if *mergeSchema {
			given = nil
		}
		if err := sameAsTable(snap, given, parts, props); err != nil {
			return err
		}
		if types, source, err = inputSchemas(e, inputs, snap.Schema(), explicit, *mergeSchema); err != nil {
			return err
		}
		computed = computedColumns(snap)
	}
	// Refuse an input the write would refuse before anything is written.
	target := source
	if snap != nil {
		if target, err = snap.WriteSchema(source, wopts); err != nil {
			return err
		}
	}
	for _, in := range inputs {
		if in.format == input.Parquet {
			have, err := parquetSchema(in.path)
			if err != nil {
				return err
			}
			if err := table.CheckConform(withoutColumns(target, absentFrom(have, computed)), have); err != nil {
				return fmt.Errorf("%s: %w", in.path, err)
			}
		}
	}
	rdr := newInputReader(ctx, e, types, source, inputs, computed)
	defer rdr.Release()
	prog := newProgress(e, "append", *quiet)
	defer prog.Done()
	wopts.Progress = func(p table.Progress) {
		if p.Phase == "write" {
			prog.Update(p.Done, 0, "rows", p.Phase)
		}
	}
	var res *table.WriteResult
	if t != nil {
		res, err = t.Write(ctx, rdr, wopts)
	} else {
		copts := table.CreateOptions{PartitionColumns: parts, Properties: props, AllowNonEmpty: *allowNonEmpty}
		_, res, err = table.CreateWriteURL(ctx, path, source, copts, rdr, wopts)
	}
	prog.Done()
	if err != nil {
		return explainInputError(rdr, err)
	}
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = in.name()
	}
	if res.Skipped {
		fmt.Fprintf(e.stdout, "skipped %s: the table already records version >= %d of --txn-app-id %q; nothing written\n",
			strings.Join(names, ", "), *appVersion, *appID)
		return nil
	}
	verb := "appended"
	if *mode == "overwrite" {
		verb = "overwrote with"
	}
	fmt.Fprintf(e.stdout, "%s %s: version %d, %d rows, %d files, %d bytes", verb, strings.Join(names, ", "), res.Version, res.RowsWritten, res.FilesAdded, res.BytesWritten)
	if *mode == "overwrite" {
		fmt.Fprintf(e.stdout, "; removed %d files", res.FilesRemoved)
		if *replaceWhere != "" {
			fmt.Fprintf(e.stdout, ", deleted %d rows", res.RowsDeleted)
		}
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// inputSchemas returns the types of the CSV and JSONL values and the schema the
// inputs declare, for a write to a table of schema tbl. Without mergeSchema both are
// tbl. With it, columns the table lacks are typed by explicit (--schema) when given,
// else as a new table's are inferred from every CSV and JSONL input; the declared
// schema is the union of the table's, the explicit or inferred columns and every
// Parquet input's (input.UnionSchema), which the write evolves the table to.
func inputSchemas(e *env, inputs []inputArg, tbl, explicit *arrow.Schema, mergeSchema bool) (types, declared *arrow.Schema, err error) {
	if !mergeSchema {
		return tbl, tbl, nil
	}
	types = input.UnionSchema(explicit, tbl)
	var text []inputArg
	for _, in := range inputs {
		if in.format != input.Parquet {
			text = append(text, in)
		}
	}
	if explicit == nil && len(text) > 0 {
		inferred, err := inferSchema(e, text)
		if err != nil {
			return nil, nil, fmt.Errorf("--merge-schema: typing the input's new columns: %w (give --schema to type them)", err)
		}
		types = input.UnionSchema(types, inferred)
	}
	declared = types
	for _, in := range inputs {
		if in.format == input.Parquet {
			s, err := parquetSchema(in.path)
			if err != nil {
				return nil, nil, err
			}
			declared = input.UnionSchema(declared, s)
		}
	}
	return stripFieldMeta(types), declared, nil
}

// newTableSchema decides the schema of a table that does not exist yet: --schema or
// --schema-from when given, else the first Parquet input's, else inferred from all
// CSV and JSONL inputs.
func newTableSchema(e *env, inputs []inputArg, explicit *arrow.Schema) (*arrow.Schema, error) {
	if explicit != nil {
		return explicit, nil
	}
	var text []inputArg
	for _, in := range inputs {
		if in.format == input.Parquet {
			return parquetSchema(in.path)
		}
		text = append(text, in)
	}
	return inferSchema(e, text)
}

// sameAsTable checks --schema/--schema-from, --partition-by and --property, given for
// an existing table, against it: a scheduled job may pass the flags that created the
// table every time (as Spark accepts a matching partitionBy), but they must agree
// with the table; a different value is refused, never ignored.
func sameAsTable(snap *table.Snapshot, explicit *arrow.Schema, parts []string, props map[string]string) error {
	if explicit != nil && !stripFieldMeta(explicit).Equal(stripFieldMeta(snap.Schema())) {
		return fmt.Errorf("the table exists with schema %s; the given schema is %s", snap.Schema(), explicit)
	}
	if len(parts) > 0 {
		have := snap.PartitionColumns()
		same := len(have) == len(parts)
		for i := 0; same && i < len(have); i++ {
			same = strings.EqualFold(have[i], parts[i])
		}
		if !same {
			is := "is not partitioned"
			if len(have) > 0 {
				is = "is partitioned by " + strings.Join(have, ",")
			}
			return usagef("--partition-by %s: the table exists and %s; a table's partitioning cannot change, so give the same columns or leave --partition-by out",
				strings.Join(parts, ","), is)
		}
	}
	if len(props) == 0 {
		return nil
	}
	differ, err := snap.PropertyDifferences(props)
	if err != nil {
		return usagef("--property: %v", err)
	}
	if len(differ) > 0 {
		return usagef("--property applies when the table is created; the table exists and differs: %s; change an existing table with skiplake alter --set-property",
			strings.Join(differ, "; "))
	}
	return nil
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func newBar(e *env, label string) *progress.Bar {
	if e.terminal {
		return progress.NewWriter(e.stderr, label)
	}
	return nil
}

// reporter is a long command's progress on stderr.
type reporter interface {
	Update(done, total int64, unit, phase string, counts ...progress.Count)
	Done()
}

// barReporter shows the phase and unit on a terminal's bar.
type barReporter struct{ *progress.Bar }

func (b barReporter) Update(done, total int64, unit, phase string, counts ...progress.Count) {
	b.Bar.Update(done, total, phase+" "+unit, counts...)
}

// rewriteCounts returns the bins and input files an OPTIMIZE rewrite has done, for
// progress output (none when the report carries no bins).
func rewriteCounts(p table.Progress) []progress.Count {
	if p.BinsTotal == 0 {
		return nil
	}
	return []progress.Count{{Unit: "bins", Done: p.BinsDone, Total: p.BinsTotal}, {Unit: "files", Done: p.FilesDone, Total: p.FilesTotal}}
}

// quietFlag adds --quiet, which turns a long command's progress on stderr off.
func quietFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("quiet", false, "no progress on stderr (by default a bar on a terminal, else a line every 10s with the work done, rate and ETA)")
}

// updateFrom passes library progress reports on to r: the amount of work done
// (rows, files or bytes) with its phase, and the bins and files of a rewrite. A
// commit's reports only name the phase: the amount stays the work's, as in
// optimize's lines.
func updateFrom(r reporter) func(table.Progress) {
	var mu sync.Mutex
	var done, total int64
	unit := ""
	return func(p table.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Phase != "commit" || unit == "" || unit == p.Unit {
			done, total, unit = p.Done, p.Total, p.Unit
		}
		r.Update(done, total, unit, p.Phase, rewriteCounts(p)...)
	}
}

// newProgress returns the progress of a long command: a bar on a terminal, plain
// lines (every progress.DefaultLineInterval, with rate and ETA) for logs otherwise,
// nothing when quiet.
func newProgress(e *env, label string, quiet bool) reporter {
	switch {
	case quiet:
		return (*progress.Lines)(nil)
	case e.terminal:
		return barReporter{progress.NewWriter(e.stderr, label)}
	}
	return progress.NewLines(e.stderr, label, e.progressInterval)
}

// refFlags adds --version and --timestamp and turns them into a table.Ref.
type refFlags struct {
	fs        *flag.FlagSet
	version   *int64
	timestamp *string
}

func addRefFlags(fs *flag.FlagSet) refFlags {
	return refFlags{
		fs:        fs,
		version:   fs.Int64("version", 0, "table version to read (time travel; default the latest)"),
		timestamp: fs.String("timestamp", "", "read the version current at this time (RFC 3339 or 'YYYY-MM-DD[ HH:MM:SS]', UTC)"),
	}
}

func (r refFlags) ref() (table.Ref, error) {
	hasVersion := flagSet(r.fs, "version")
	if hasVersion && *r.version < 0 {
		return table.Ref{}, usagef("--version must be >= 0, got %d", *r.version)
	}
	if hasVersion && *r.timestamp != "" {
		return table.Ref{}, usagef("--version and --timestamp are mutually exclusive")
	}
	if hasVersion {
		return table.AtVersion(*r.version), nil
	}
	if *r.timestamp != "" {
		ts, err := parseTimestamp(*r.timestamp)
		if err != nil {
			return table.Ref{}, usagef("--timestamp: %v", err)
		}
		return table.AtTimestamp(ts), nil
	}
	return table.Latest(), nil
}

func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q as a timestamp", s)
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return usagef("--format %q: want one of %s", format, strings.Join(allowed, ", "))
}

func runScan(ctx context.Context, e *env, args []string) (err error) {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	filter := fs.String("filter", "", "predicate, e.g. \"a >= 10 AND s LIKE 'ab%'\"")
	var cols listFlag
	fs.Var(&cols, "columns", "columns to return, in order (comma-separated)")
	ref := addRefFlags(fs)
	format := fs.String("format", "table", "output format: table, jsonl, csv or parquet")
	output := fs.String("output", "", "write to this file instead of stdout")
	limit := fs.Int64("limit", 0, "stop after N rows (N >= 1; default all rows)")
	null := fs.String("null", "", "how csv and table write NULL (default: csv an empty unquoted field, the empty string being \"\"; table NULL)")
	path, err := tableArgs(fs, args, format, render.Formats...)
	if err != nil {
		return err
	}
	if err := requirePositive(fs, "limit"); err != nil {
		return err
	}
	if err := checkFilter("filter", *filter); err != nil {
		return err
	}
	r, err := ref.ref()
	if err != nil {
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
	snap, err := t.Snapshot(ctx, r)
	if err != nil {
		return err
	}
	opts := []table.ScanOption{table.WithColumns(cols...), table.WithLimit(*limit)}
	if *filter != "" {
		opts = append(opts, table.WithFilter(*filter))
	}
	// A target inside the table is refused before anything is read; the file replaces
	// the target only when the whole scan succeeded.
	out, err := e.openRowsOutput(*output, path)
	if err != nil {
		return err
	}
	defer out.abort()
	sc, err := snap.Scan(ctx, opts...)
	if err != nil {
		return err
	}
	if *format == "parquet" {
		// The whole version of a table whose files skiplake wrote is exported by
		// copying their row groups (Scan.CopyParquet); anything else is re-encoded.
		reason, err := sc.CopyParquet(ctx, out.w)
		if err != nil {
			return err
		}
		if reason == "" {
			return out.file.Commit()
		}
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		return err
	}
	defer rd.Release()
	ropts := render.Options{}
	if flagSet(fs, "null") {
		ropts.Null = null
	}
	_, err = out.writeRows(*format, sc.Schema(), ropts, rd)
	return err
}

// checkFilter parses a predicate flag: one that does not parse is a usage error
// (exit status 2) saying where; binding it to the table (unknown columns, types)
// happens later.
func checkFilter(name, s string) error {
	if s == "" {
		return nil
	}
	if _, err := expr.Parse(s); err != nil {
		return usagef("--%s: %v", name, err)
	}
	return nil
}

func runDescribe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	ref := addRefFlags(fs)
	layout := fs.Bool("layout", false, "show layout health from the log (no data file is read): file sizes, small files, clustered share, write amplification, and per column the overlap depth and the expected share of files a point or 1% range query reads")
	var layoutCols listFlag
	fs.Var(&layoutCols, "columns", "with --layout: the columns to analyse (default the clustering columns, else those of the last clustering run)")
	format := fs.String("format", "table", "table or json")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	if len(layoutCols) > 0 && !*layout {
		return usagef("--columns needs --layout")
	}
	r, err := ref.ref()
	if err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	if *layout {
		snap, err := t.Snapshot(ctx, r)
		if err != nil {
			return err
		}
		rep, err := snap.Layout(ctx, table.LayoutOptions{Columns: layoutCols})
		if err != nil {
			return err
		}
		if *format == "json" {
			return writeJSON(e.stdout, rep)
		}
		return printLayout(e, rep)
	}
	d, err := t.Describe(ctx, r)
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, d)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "version\t%d\n", d.Version)
	fmt.Fprintf(tw, "timestamp\t%s\n", d.Timestamp.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(tw, "id\t%s\n", d.ID)
	if d.Name != "" {
		fmt.Fprintf(tw, "name\t%s\n", d.Name)
	}
	fmt.Fprintf(tw, "protocol\treader %d, writer %d\n", d.MinReaderVersion, d.MinWriterVersion)
	if len(d.ReaderFeatures)+len(d.WriterFeatures) > 0 {
		fmt.Fprintf(tw, "features\treader [%s], writer [%s]\n", strings.Join(d.ReaderFeatures, ", "), strings.Join(d.WriterFeatures, ", "))
	}
	fmt.Fprintf(tw, "partitioned by\t%s\n", strings.Join(d.PartitionColumns, ", "))
	if d.ClusteringColumns != nil {
		fmt.Fprintf(tw, "clustered by\t%s\n", strings.Join(d.ClusteringColumns, ", "))
	}
	fmt.Fprintf(tw, "files\t%d\n", d.NumFiles)
	fmt.Fprintf(tw, "size\t%d bytes\n", d.SizeBytes)
	fmt.Fprintf(tw, "records\t%d", d.NumRecords)
	if d.FilesWithoutStats > 0 {
		fmt.Fprintf(tw, " (+ %d files without stats)", d.FilesWithoutStats)
	}
	if d.NumDeletedRows > 0 {
		fmt.Fprintf(tw, " (%d deleted by deletion vectors)", d.NumDeletedRows)
	}
	fmt.Fprintln(tw)
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		fmt.Fprintf(tw, "property\t%s=%s\n", k, d.Properties[k])
	}
	for _, st := range d.Settings {
		note := ""
		if st.Default {
			note = " (default)"
		}
		fmt.Fprintf(tw, "setting\t%s = %s%s\n", st.Key, st.Value, note)
	}
	for _, n := range d.PropertyNotes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	for _, c := range d.Constraints {
		fmt.Fprintf(tw, "constraint\t%s CHECK (%s)\n", c.Name, c.Expr)
	}
	for _, r := range d.ColumnRules {
		if r.Invariant != "" {
			fmt.Fprintf(tw, "invariant\t%s: %s\n", r.Column, r.Invariant)
		}
	}
	if d.WriteRulesError != "" {
		fmt.Fprintf(tw, "note\twrites that add rows are refused: %s\n", d.WriteRulesError)
	}
	fmt.Fprintln(tw, "schema\t")
	for _, f := range d.Schema.Fields() {
		null := ""
		if !f.Nullable {
			null = " NOT NULL"
		}
		fmt.Fprintf(tw, "  %s\t%s%s%s\n", f.Name, value.DisplayType(f.Type), null, columnRuleText(d.ColumnRules, f.Name))
	}
	return tw.Flush()
}

func runHistory(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	limit := fs.Int("limit", 0, "show at most N commits (N >= 1; default all)")
	format := fs.String("format", "table", "table or jsonl")
	path, err := tableArgs(fs, args, format, "table", "jsonl")
	if err != nil {
		return err
	}
	if err := requirePositive(fs, "limit"); err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	h, err := t.History(ctx, *limit)
	if err != nil {
		return err
	}
	if *format == "jsonl" {
		return writeJSONL(e.stdout, h)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIMESTAMP\tOPERATION\tPARAMETERS\tMETRICS")
	for _, c := range h {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Version, c.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), c.Operation, kvString(c.OperationParameters), kvString(c.OperationMetrics))
	}
	return tw.Flush()
}

func kvString(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

func runCheckpoint(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("checkpoint", flag.ContinueOnError)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	path, err := oneTable(pos)
	if err != nil {
		return err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	v, err := t.Checkpoint(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "checkpoint written at version %d\n", v)
	return nil
}

// columnRuleText renders a top-level column's generation expression or identity
// definition as Spark's DDL writes them (empty for a plain column).
func columnRuleText(rules []table.ColumnRule, col string) string {
	for _, r := range rules {
		if r.Column != col {
			continue
		}
		switch {
		case r.Generated != "":
			return " GENERATED ALWAYS AS (" + r.Generated + ")"
		case r.Identity != nil:
			kind := "BY DEFAULT"
			if r.Identity.Always {
				kind = "ALWAYS"
			}
			s := fmt.Sprintf(" GENERATED %s AS IDENTITY (START WITH %d INCREMENT BY %d)", kind, r.Identity.Start, r.Identity.Step)
			if r.Identity.HighWaterMark != nil {
				s += fmt.Sprintf(", high-water mark %d", *r.Identity.HighWaterMark)
			}
			return s
		}
	}
	return ""
}

// parseConstraintFlag parses a --constraint or --add-constraint value, name=expr.
func parseConstraintFlag(flagName, s string) (table.CheckConstraint, error) {
	name, text, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(text) == "" {
		return table.CheckConstraint{}, usagef("--%s %q: want name=expr (e.g. positive=\"amount > 0\")", flagName, s)
	}
	return table.CheckConstraint{Name: strings.TrimSpace(name), Expr: strings.TrimSpace(text)}, nil
}

// computedColumns names (lower case) the generated and identity columns of the
// table, which inputs may leave out.
func computedColumns(snap *table.Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, name := range snap.ComputedColumns() {
		out[strings.ToLower(name)] = true
	}
	return out
}

// absentFrom returns the columns of cols (lower case) that schema s lacks.
func absentFrom(s *arrow.Schema, cols map[string]bool) map[string]bool {
	out := map[string]bool{}
	for c := range cols {
		if !slices.ContainsFunc(s.Fields(), func(f arrow.Field) bool { return strings.EqualFold(f.Name, c) }) {
			out[c] = true
		}
	}
	return out
}
