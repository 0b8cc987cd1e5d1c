package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"

	"github.com/skiplake/skiplake/table"
)

func init() {
	register(&command{name: "files", usage: "TABLE [--filter EXPR] [--version N | --timestamp TS] [--format table|jsonl] [--absolute]",
		summary: "list the files a scan would read after skipping, with their rows, size, the filter columns' min/max and why", examples: []string{`skiplake files /tmp/t --filter "id = 42"`, `skiplake files /tmp/t --format jsonl`},
		run: runFiles})
	register(&command{name: "explain", usage: "TABLE --filter EXPR [--version N | --timestamp TS] [--format table|json]",
		summary: "show per skipping level how many units and bytes a filter skips", examples: []string{`skiplake explain /tmp/t --filter "id = 42"`, `skiplake explain /tmp/t --filter "amount > 500" --format json`},
		run: runExplain})
}

// planArgs are the flags of the commands that plan a scan without reading it
// (files, explain, count): --filter, --version/--timestamp and --format.
type planArgs struct {
	fs            *flag.FlagSet
	filter        *string
	ref           refFlags
	format        *string
	formats       []string
	requireFilter bool
}

func addPlanFlags(fs *flag.FlagSet, filterUsage, defaultFormat string, formats ...string) *planArgs {
	return &planArgs{fs: fs, filter: fs.String("filter", "", filterUsage), ref: addRefFlags(fs),
		format: fs.String("format", defaultFormat, strings.Join(formats, " or ")), formats: formats}
}

// plan parses args (one TABLE), checks the flags and plans the scan.
func (p *planArgs) plan(ctx context.Context, e *env, args []string) (string, *table.Table, *table.Scan, error) {
	pos, err := parseArgs(p.fs, args)
	if err != nil {
		return "", nil, nil, err
	}
	path, err := oneTable(pos)
	if err != nil {
		return "", nil, nil, err
	}
	if p.requireFilter && *p.filter == "" {
		return "", nil, nil, usagef("--filter is required")
	}
	if err := checkFormat(*p.format, p.formats...); err != nil {
		return "", nil, nil, err
	}
	r, err := p.ref.ref()
	if err != nil {
		return "", nil, nil, err
	}
	if err := checkFilter("filter", *p.filter); err != nil {
		return "", nil, nil, err
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return "", nil, nil, err
	}
	snap, err := t.Snapshot(ctx, r)
	if err != nil {
		return "", nil, nil, err
	}
	var opts []table.ScanOption
	if *p.filter != "" {
		opts = append(opts, table.WithFilter(*p.filter))
	}
	sc, err := snap.Scan(ctx, opts...)
	return path, t, sc, err
}

func runFiles(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("files", flag.ContinueOnError)
	pa := addPlanFlags(fs, "predicate; files it cannot match are left out, and the table shows the min/max of its columns", "table", "table", "jsonl")
	absolute := fs.Bool("absolute", false, "print each file as an absolute path (local tables) or a full URL (object stores), for other tools")
	path, _, sc, err := pa.plan(ctx, e, args)
	if err != nil {
		return err
	}
	format := pa.format
	files := sc.Files()
	if *absolute {
		for i := range files {
			if files[i].Path, err = storage.FileLocation(path, files[i].Path); err != nil {
				return err
			}
		}
	}
	if *format == "jsonl" {
		recs := make([]fileRecord, len(files))
		for i, f := range files {
			recs[i] = newFileRecord(f)
		}
		return writeJSONL(e.stdout, recs)
	}
	// tabwriter writes each cell with its own Write: buffered, a million files take
	// a few hundred writes instead of ten million.
	out := bufio.NewWriterSize(e.stdout, 64<<10)
	tw := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	header := "PATH\tROWS\tBYTES\tVERDICT\tREASON"
	if len(files) > 0 {
		for _, c := range files[0].FilterColumns {
			header += "\tMIN(" + c.Column + ")\tMAX(" + c.Column + ")"
		}
	}
	fmt.Fprintln(tw, header)
	for _, f := range files {
		rows := "?"
		if f.NumRecords >= 0 {
			rows = strconv.FormatInt(f.NumRecords-f.DeletedRows, 10)
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%s\t%s", f.Path, rows, f.Size, f.Verdict, f.Reason)
		for _, c := range f.FilterColumns {
			line += "\t" + boundText(c, c.Min, f.NumRecords) + "\t" + boundText(c, c.Max, f.NumRecords)
		}
		fmt.Fprintln(tw, line)
	}
	rep := sc.Report()
	fmt.Fprintf(tw, "(%d of %d files kept, %d skipped)\n", rep.Files.Kept, rep.Files.Total, rep.Files.Skipped)
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

// fileRecord is one line of files --format jsonl.
type fileRecord struct {
	Path            string             `json:"path"`
	Size            int64              `json:"size"`
	NumRecords      int64              `json:"numRecords"` // -1 when the statistics do not say
	DeletedRows     int64              `json:"deletedRows,omitempty"`
	PartitionValues map[string]*string `json:"partitionValues,omitempty"`
	// Stats is the statistics object the log stores for the file (omitted when it
	// has none or it is not valid JSON).
	Stats   json.RawMessage `json:"stats,omitempty"`
	Verdict string          `json:"verdict"`
	Reason  string          `json:"reason"`
}

func newFileRecord(f table.PlannedFile) fileRecord {
	r := fileRecord{Path: f.Path, Size: f.Size, NumRecords: f.NumRecords, DeletedRows: f.DeletedRows,
		PartitionValues: f.PartitionValues, Verdict: f.Verdict, Reason: f.Reason}
	if f.Stats != "" && json.Valid([]byte(f.Stats)) {
		r.Stats = json.RawMessage(f.Stats)
	}
	return r
}

// boundText renders a file's min or max statistic of a filter column for the table
// format: "?" when the statistics do not say, NULL when every row is null.
func boundText(c table.ColumnStats, v value.Value, rows int64) string {
	if !v.IsNull() {
		switch v.Kind() {
		case value.KindString:
			return v.AsString()
		case value.KindDate, value.KindTimestamp, value.KindTimestampNTZ:
			// DATE '2026-01-01' -> 2026-01-01
			s := v.String()
			if i := strings.IndexByte(s, '\''); i >= 0 {
				return strings.TrimSuffix(s[i+1:], "'")
			}
			return s
		}
		return v.String()
	}
	if rows > 0 && c.NullCount == rows {
		return "NULL"
	}
	return "?"
}

func runExplain(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	pa := addPlanFlags(fs, "predicate to explain (required)", "table", "table", "json")
	pa.requireFilter = true
	_, t, sc, err := pa.plan(ctx, e, args)
	if err != nil {
		return err
	}
	format := pa.format
	rep, err := sc.Explain(ctx)
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSON(e.stdout, rep)
	}
	fmt.Fprintf(e.stdout, "version %d, filter: %s\n", rep.Version, rep.Filter)
	if err := writeLevels(e.stdout, rep); err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(e.stdout, "warning:", w)
	}
	if total, ok := t.RequestCounts(); ok {
		// Object stores count their requests: what opening the table, loading the
		// snapshot, planning and reading the footers of the kept files cost, then
		// each part (the report's figures, as --format json prints them).
		fmt.Fprintf(e.stdout, "requests: %s\n", requestText(total))
		var snap, scan storage.RequestCounts
		if rep.SnapshotRequests != nil {
			snap = *rep.SnapshotRequests
		}
		if rep.Requests != nil {
			scan = *rep.Requests
		}
		fmt.Fprintf(e.stdout, "  opening the table: %s\n", requestText(total.Sub(snap).Sub(scan)))
		fmt.Fprintf(e.stdout, "  loading version %d: %s\n", rep.Version, requestText(snap))
		fmt.Fprintf(e.stdout, "  planning and footers: %s\n", requestText(scan))
	}
	return nil
}

// requestText formats the read requests of c as explain prints them.
func requestText(c storage.RequestCounts) string {
	return fmt.Sprintf("GET %d, HEAD %d, LIST %d, %d bytes read", c.GET, c.HEAD, c.LIST, c.BytesRead)
}

// writeLevels prints the explain table: one row per level with the unit it counts,
// and a legend for the byte columns.
func writeLevels(w io.Writer, rep *table.ScanReport) error {
	header := []string{"LEVEL", "UNIT", "TOTAL", "SKIPPED", "KEPT", "MUST-MATCH", "BYTES", "BYTES SKIPPED"}
	rows := [][]string{header, levelRow("files (all levels)", rep.Files)}
	for _, l := range rep.Levels {
		rows = append(rows, levelRow(l.Level, l))
	}
	width := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				bw.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len(c))
			switch {
			case i < 2 && i < len(r)-1: // names: left-aligned
				bw.WriteString(c + pad)
			case i < 2:
				bw.WriteString(c)
			default: // figures: right-aligned
				bw.WriteString(pad + c)
			}
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("(BYTES are stored, compressed bytes; the page level counts rows, not bytes)\n")
	return bw.Flush()
}

// levelRow formats one level; figures a level does not measure print as "-".
func levelRow(name string, l skipping.LevelStats) []string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	row := []string{name, l.Unit, n(l.Total), n(l.Skipped), n(l.Kept), n(l.MustMatch), n(l.BytesTotal), n(l.BytesSkipped)}
	if l.Unit == skipping.UnitRows {
		row[5], row[6], row[7] = "-", "-", "-"
	}
	return row
}
