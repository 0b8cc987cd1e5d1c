package main

import (
	"context"

	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/progress"
	"github.com/skiplake/skiplake/internal/render"
	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "create", usage: "TABLE --schema-from FILE.parquet [--partition-by c1,c2] [--property k=v]...",
		summary: "create an empty table with the schema of a Parquet file", run: runCreate})
	register(&command{name: "append", usage: "TABLE FILE... [--partition-by c1,c2] [--property k=v]...",
		summary: "append Parquet, CSV or JSONL files (creates TABLE if absent)", run: runAppend})
	register(&command{name: "scan", usage: "TABLE [--filter EXPR] [--columns a,b] [--version N | --timestamp TS] [--format table|jsonl|csv|parquet] [--output PATH] [--limit N]",
		summary: "print rows of a table version", run: runScan})
	register(&command{name: "describe", usage: "TABLE [--version N] [--format table|json]",
		summary: "show schema, partitioning, properties, protocol and size", run: runDescribe})
	register(&command{name: "history", usage: "TABLE [--limit N] [--format table|jsonl]",
		summary: "list commits, newest first", run: runHistory})
	register(&command{name: "checkpoint", usage: "TABLE",
		summary: "write a checkpoint of the latest version", run: runCheckpoint})
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
	var parts listFlag
	fs.Var(&parts, "partition-by", "partition columns (comma-separated)")
	props := kvFlag{}
	fs.Var(props, "property", "table property key=value (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	path, err := oneTable(pos)
	if err != nil {
		return err
	}
	if *schemaFrom == "" {
		return usagef("--schema-from is required")
	}
	schema, err := parquetSchema(*schemaFrom)
	if err != nil {
		return err
	}
	t, err := table.CreateURL(ctx, path, schema, table.CreateOptions{PartitionColumns: parts, Properties: props})
	if err != nil {
		return err
	}
	_ = t
	fmt.Fprintf(e.stdout, "created %s (version 0, %d columns)\n", path, schema.NumFields())
	return nil
}

func parquetSchema(path string) (*arrow.Schema, error) {
	pr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1024}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return stripFieldMeta(s), nil
}

// stripFieldMeta removes reader-added metadata (PARQUET:field_id) from top-level fields.
func stripFieldMeta(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// tableExists reports whether the location (a path or an object-store URL) holds a
// Delta table that opens.
func tableExists(path string) bool {
	_, err := table.OpenURL(context.Background(), path)
	return err == nil
}

func runAppend(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("append", flag.ContinueOnError)
	var parts listFlag
	fs.Var(&parts, "partition-by", "partition columns when the table is created")
	props := kvFlag{}
	fs.Var(props, "property", "table property key=value when the table is created (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want TABLE and at least one FILE")
	}
	path, inputs := pos[0], pos[1:]
	for _, in := range inputs {
		if _, err := inputFormat(in); err != nil {
			return err
		}
		if _, err := os.Stat(in); err != nil {
			return err
		}
	}
	var t *table.Table
	var schema *arrow.Schema
	if tableExists(path) {
		if len(parts) > 0 {
			return usagef("--partition-by applies only when the table is created; %s exists", path)
		}
		if t, err = table.OpenURL(ctx, path); err != nil {
			return err
		}
		snap, err := t.Snapshot(ctx, table.Latest())
		if err != nil {
			return err
		}
		schema = snap.Schema()
	}
	bar := newBar(e, "append")
	defer bar.Done()
	var total int64
	for _, in := range inputs {
		f, err := openInput(ctx, in, schema)
		if err != nil {
			return err
		}
		if t == nil {
			schema = stripFieldMeta(f.rdr.Schema())
			if t, err = table.CreateURL(ctx, path, schema, table.CreateOptions{PartitionColumns: parts, Properties: props}); err != nil {
				f.Close()
				return err
			}
		}
		res, err := t.Write(ctx, f.rdr, table.WriteOptions{Progress: func(p table.Progress) {
			if p.Phase == "write" {
				bar.Update(total+p.Done, 0, "rows")
			}
		}})
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		total += res.RowsWritten
		bar.Done()
		fmt.Fprintf(e.stdout, "appended %s: version %d, %d rows, %d files, %d bytes\n", in, res.Version, res.RowsWritten, res.FilesAdded, res.BytesWritten)
	}
	return nil
}

func newBar(e *env, label string) *progress.Bar {
	if e.terminal {
		return progress.NewWriter(e.stderr, label)
	}
	return nil
}

// refFlags adds --version and --timestamp and turns them into a table.Ref.
type refFlags struct {
	version   *int64
	timestamp *string
}

func addRefFlags(fs *flag.FlagSet) refFlags {
	return refFlags{
		version:   fs.Int64("version", -1, "table version to read (time travel)"),
		timestamp: fs.String("timestamp", "", "read the version current at this time (RFC 3339 or 'YYYY-MM-DD[ HH:MM:SS]', UTC)"),
	}
}

func (r refFlags) ref() (table.Ref, error) {
	if *r.version >= 0 && *r.timestamp != "" {
		return table.Ref{}, usagef("--version and --timestamp are mutually exclusive")
	}
	if *r.version >= 0 {
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

func runScan(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	filter := fs.String("filter", "", "predicate, e.g. \"a >= 10 AND s LIKE 'ab%'\"")
	var cols listFlag
	fs.Var(&cols, "columns", "columns to return, in order (comma-separated)")
	ref := addRefFlags(fs)
	format := fs.String("format", "table", "output format: table, jsonl, csv or parquet")
	output := fs.String("output", "", "write to this file instead of stdout")
	limit := fs.Int64("limit", 0, "stop after N rows")
	path, err := tableArgs(fs, args, format, render.Formats...)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit must be >= 0")
	}
	r, err := ref.ref()
	if err != nil {
		return err
	}
	if *format == "parquet" && *output == "" {
		return usagef("--format parquet needs --output PATH")
	}
	t, err := table.OpenURL(ctx, path)
	if err != nil {
		return err
	}
	opts := []table.ScanOption{table.WithRef(r), table.WithColumns(cols...), table.WithLimit(*limit)}
	if *filter != "" {
		opts = append(opts, table.WithFilter(*filter))
	}
	sc, err := t.Scan(ctx, opts...)
	if err != nil {
		return err
	}
	defer sc.Release()
	var out io.Writer = e.stdout
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	w, err := render.New(*format, out, sc.Schema())
	if err != nil {
		return err
	}
	for sc.Next() {
		if err := w.Write(sc.RecordBatch()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return w.Close()
}

func runDescribe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	ref := addRefFlags(fs)
	format := fs.String("format", "table", "table or json")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	r, err := ref.ref()
	if err != nil {
		return err
	}
	t, err := table.OpenURL(ctx, path)
	if err != nil {
		return err
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
	keys := make([]string, 0, len(d.Properties))
	for k := range d.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
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
	fmt.Fprintln(tw, "schema\t")
	for _, f := range d.Schema.Fields() {
		null := ""
		if !f.Nullable {
			null = " NOT NULL"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", f.Name, f.Type, null)
	}
	return tw.Flush()
}

func runHistory(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	limit := fs.Int("limit", 0, "show at most N commits")
	format := fs.String("format", "table", "table or jsonl")
	path, err := tableArgs(fs, args, format, "table", "jsonl")
	if err != nil {
		return err
	}
	t, err := table.OpenURL(ctx, path)
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
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
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
	t, err := table.OpenURL(ctx, path)
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
