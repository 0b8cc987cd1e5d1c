package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/skiplake/skiplake/advise"
	"github.com/skiplake/skiplake/internal/progress"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
	"github.com/skiplake/skiplake/workload"
)

func init() {
	register(&command{name: "optimize", usage: "TABLE [--where PARTITION_EXPR] [--zorder-by c1,c2 | --hilbert-by c1,c2 | --sort-by c1,c2 | --layout workload [--queries FILE] [--robustness F] [--workload-columns c1,c2]] [--full] [--bloom c1,c2] [--target-size SIZE] [--memory SIZE] [--version V | --timestamp TS] [--shard K/N] [--dry-run [--queries FILE] [--predict-where EXPR]... | --plan] [--quiet] [--format table|json]",
		summary: "compact small files and cluster on Z-order or Hilbert keys, or lay files out by a tree learned from a workload", examples: []string{`skiplake optimize /tmp/t --hilbert-by id,amount --bloom id`, `skiplake optimize /tmp/t --where "country = 'JP'" --target-size 256MiB --format json`,
			`skiplake optimize /tmp/t --layout workload --queries dashboards.sql`,
			`skiplake optimize /tmp/t --hilbert-by day,user_id --full --dry-run --queries dashboards.sql`,
			`skiplake optimize s3://bucket/events --plan --version 812 --format json > plan.json`,
			`skiplake optimize s3://bucket/events --version 812 --shard 2/4`},
		run: runOptimize})
	register(&command{name: "vacuum", usage: "TABLE [--retain DURATION] [--force] [--dry-run] [--quiet] [--format table|json]",
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
	full := fs.Bool("full", false, "re-cluster every file, including finished clusters (needed for a new --target-size to reach them; with --layout workload: build a new tree)")
	layout := fs.String("layout", "", "workload: lay files out by a tree of cuts learned from --queries; later runs route new rows through the stored tree")
	queries := fs.String("queries", "", "workload file for --layout workload, or for --dry-run's prediction (one filter per line, optional \"WEIGHT:\" prefix)")
	var predictWhere repeatFlag
	fs.Var(&predictWhere, "predict-where", "with --dry-run: a filter to predict files and bytes read for, now and after the rewrite (repeatable; default the --queries workload)")
	robustness := fs.Float64("robustness", 0, "share of generic queries blended into a new workload tree (0..0.9)")
	var treeCols listFlag
	fs.Var(&treeCols, "workload-columns", "columns the workload tree may cut besides the workload's own")
	var bloomCols listFlag
	fs.Var(&bloomCols, "bloom", "add Bloom filters on these columns (backfills files that lack them)")
	target := fs.String("target-size", "", "target file size, e.g. 128MiB (default: the table's delta.targetFileSize or 128 MiB)")
	memory := fs.String("memory", "", "memory budget before spilling, e.g. 1GiB (default 1 GiB)")
	dry := fs.Bool("dry-run", false, "print the plan without writing anything")
	planOnly := fs.Bool("plan", false, "print only the plan, its bins numbered and their files (with --format json, for workers or review), without writing anything")
	ref := addRefFlags(fs)
	shard := fs.String("shard", "", "K/N: run shard K (0..N-1) of N of the plan made on --version or --timestamp; N processes share one OPTIMIZE (docs/distributed.md)")
	quiet := fs.Bool("quiet", false, "no progress on stderr (by default a bar on a terminal, else a line every 10s with bytes, bins and files done, rate and ETA)")
	format := fs.String("format", "table", "table or json (the plan and the result; progress goes to stderr)")
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
	opts := table.OptimizeOptions{Where: *where, ZOrderBy: zorder, HilbertBy: hilbert, LinearBy: linear, Full: *full, DryRun: *dry || *planOnly, BloomColumns: bloomCols,
		Layout: *layout, Robustness: *robustness, WorkloadColumns: treeCols}
	if opts.PlanAt, opts.Shard, opts.Shards, err = shardFlags(fs, ref, *shard); err != nil {
		return err
	}
	if *layout != "" && *layout != "workload" {
		return usagef("--layout %q: want workload", *layout)
	}
	if *layout == "" && (*robustness != 0 || len(treeCols) > 0) {
		return usagef("--robustness and --workload-columns need --layout workload")
	}
	if *layout == "" && *queries != "" && !*dry {
		return usagef("--queries needs --layout workload or --dry-run")
	}
	if len(predictWhere) > 0 && !*dry {
		return usagef("--predict-where needs --dry-run")
	}
	// The workload a dry run predicts for: --predict-where's filters, else --queries.
	var predictW *workload.Workload
	if len(predictWhere) > 0 {
		if predictW, err = advise.FilterWorkload(predictWhere); err != nil {
			return usagef("--predict-where: %v", err)
		}
	}
	if *layout != "" && n > 0 {
		return usagef("--layout workload does not combine with --zorder-by, --hilbert-by or --sort-by")
	}
	if *queries != "" {
		w, err := workload.ParseFile(*queries)
		if err != nil {
			return err
		}
		if *layout != "" {
			opts.Workload = w
		}
		if predictW == nil && *dry {
			predictW = w
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
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	prog := newProgress(e, "optimize", *quiet)
	var bytesDone, bytesTotal int64
	opts.Progress = func(p table.Progress) {
		// Bytes of input rewritten drive the figures (rate and ETA); other units
		// (the commit) only name the phase. Every report carries the bins and
		// input files done.
		if p.Unit == "bytes" {
			bytesDone, bytesTotal = p.Done, p.Total
		} else if bytesTotal == 0 {
			return
		}
		prog.Update(bytesDone, bytesTotal, "bytes", p.Phase, rewriteCounts(p)...)
	}
	if *format == "table" {
		// The plan is printed before any work starts, so a long run shows what it does.
		opts.OnPlan = func(p *optimize.Plan) { writePlan(e.stdout, p) }
	}
	res, err := t.Optimize(ctx, opts)
	prog.Done()
	if err != nil {
		return err
	}
	if *planOnly {
		if *format == "json" {
			return writeJSON(e.stdout, res.Plan)
		}
		return nil // printed by OnPlan
	}
	idle := ""
	if res.Plan.NumBins == 0 {
		idle = nothingToDo(res.Plan, flagSet(fs, "target-size"), append([]string{"skiplake", "optimize"}, args...))
	}
	var pred *advise.Prediction
	predNote := ""
	if predictW != nil {
		if pred, predNote, err = predictGain(ctx, t, res.Plan, predictW, opts); err != nil {
			return err
		}
	}
	if *format == "json" {
		return writeJSON(e.stdout, struct {
			*table.OptimizeResult
			NothingToDo    string             `json:"nothingToDo,omitempty"`
			Prediction     *advise.Prediction `json:"prediction,omitempty"`
			PredictionNote string             `json:"predictionNote,omitempty"`
		}{res, idle, pred, predNote})
	}
	if predictW != nil {
		writePrediction(e.stdout, pred, predNote)
	}
	switch m := res.Metrics; {
	case m == nil:
		fmt.Fprintf(e.stdout, "%-9s nothing written\n", "dry run")
	case idle != "" && len(m.Versions) == 0:
		fmt.Fprintf(e.stdout, "%-9s nothing to do: %s\n", "done", idle)
	default:
		fmt.Fprintf(e.stdout, "%-9s committed versions %v in %s: removed %d files (%d bytes), added %d files (%d bytes), %d rows\n",
			"done", m.Versions, m.Elapsed.Round(time.Millisecond), m.NumRemovedFiles, m.NumRemovedBytes, m.NumAddedFiles, m.NumAddedBytes, m.NumRows)
		if idle != "" {
			fmt.Fprintf(e.stdout, "%-9s no file was rewritten: %s\n", "note", idle)
		}
	}
	return nil
}

// predictGain predicts, for a dry run, the files and bytes w reads now and after
// the planned rewrite (advise.Predict, the advisor's model). A plan the model
// does not cover (compaction alone, nested clustering columns) gives no
// prediction and a note saying why.
func predictGain(ctx context.Context, t *table.Table, p *optimize.Plan, w *workload.Workload, opts table.OptimizeOptions) (*advise.Prediction, string, error) {
	pl := advise.Planned{Curve: p.Curve, Columns: p.ClusterBy, TargetFileSize: p.TargetFileSize, Robustness: opts.Robustness, TreeWorkload: opts.Workload}
	if p.Curve == optimize.CurveWorkload {
		pl.Columns = opts.WorkloadColumns
	}
	if p.Curve == optimize.CurveNone {
		return nil, "compaction alone keeps rows in their order; its gain is not modelled", nil
	}
	pred, err := advise.Predict(ctx, t, w, pl)
	if errors.Is(err, advise.ErrInvalidOptions) || errors.Is(err, advise.ErrUnsupportedTable) {
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	if p.Version != pred.Version {
		pred.Notes = append(pred.Notes, fmt.Sprintf("predicted on version %d, the plan is of version %d", pred.Version, p.Version))
	}
	if p.NumFiles < pred.Current.Files {
		pred.Notes = append(pred.Notes, fmt.Sprintf("the plan rewrites %d of %d files; the prediction is for every file rewritten (--full)", p.NumFiles, pred.Current.Files))
	}
	return pred, "", nil
}

// writePrediction prints a dry run's predicted gain: per query, files and bytes
// read by the current and the planned layout.
func writePrediction(w io.Writer, p *advise.Prediction, note string) {
	if p == nil {
		fmt.Fprintf(w, "%-9s not modelled: %s\n", "predict", note)
		return
	}
	fmt.Fprintf(w, "%-9s %d queries (weight %g), sample of %d rows, mean per query:\n", "predict", p.Queries, p.Weight, p.SampleRows)
	for _, l := range []struct {
		name string
		l    advise.PredictedLayout
	}{{"now", p.Current}, {p.Layout, p.Planned}} {
		fmt.Fprintf(w, "%-9s %s: %d files, reads %.2f files (%.1f%%), %s (%.1f%%)\n", "", l.name, l.l.Files, l.l.FilesRead, l.l.FilesReadPct,
			progress.FormatBytes(int64(math.Round(l.l.BytesRead))), l.l.BytesReadPct)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "%-9s %s\n", "  note", n)
	}
}

// writePlan prints OPTIMIZE's plan: one line for the run, one per bin.
func writePlan(w io.Writer, p *optimize.Plan) {
	curve := "compaction"
	if p.Curve != optimize.CurveNone {
		curve = p.Curve.String()
	}
	if len(p.ClusterBy) > 0 {
		curve += " on " + strings.Join(p.ClusterBy, ", ")
	}
	fmt.Fprintf(w, "%-9s %s\n", "plan", fmt.Sprintf("version %d, %s, target file size %s, %d bins, %d files, %d bytes",
		p.Version, curve, progress.FormatBytes(p.TargetFileSize), p.NumBins, p.NumFiles, p.NumBytes))
	for _, part := range p.Partitions {
		for _, b := range part.Bins {
			reason := ""
			if b.Reason != "" {
				reason = " (" + b.Reason + ")"
			}
			fmt.Fprintf(w, "%-9s %s %s%s: %d files, %d bytes, %d rows\n", fmt.Sprintf("  bin %d", b.Index), partLabel(part.Values), b.Kind, reason, len(b.Files), b.Bytes, b.Rows)
			switch l := b.Layout; {
			case l == nil:
			case l.Action == "build":
				fmt.Fprintf(w, "%-9s build a new tree from the workload over %d files\n", "  tree", l.NewFiles)
			default:
				// New files wait where they were appended until the subtree they
				// are at home in has about doubled; then it is re-split.
				fmt.Fprintf(w, "%-9s route through %s: re-split %d subtrees, rewriting %d new, %d waiting and %d laid-out files; %d new and %d waiting files stay where they were appended\n",
					"  tree", l.Tree, l.Resplit, l.NewFiles, l.PendingFiles, l.ResplitFiles, l.NewWaiting, l.WaitingFiles)
			}
		}
		if part.Drift != nil {
			fmt.Fprintf(w, "%-9s %s: %s\n", "  drift", partLabel(part.Values), part.Drift)
		}
	}
}

// shardFlags turns --shard K/N and --version/--timestamp into the plan version and
// the shard to run (0, 0: no sharding). A shard needs the plan version: every shard
// must make the same plan.
func shardFlags(fs *flag.FlagSet, ref refFlags, shard string) (table.Ref, int, int, error) {
	at, err := ref.ref()
	if err != nil {
		return table.Ref{}, 0, 0, err
	}
	if shard == "" {
		return at, 0, 0, nil
	}
	var k, n int
	if _, err := fmt.Sscanf(shard, "%d/%d", &k, &n); err != nil || fmt.Sprintf("%d/%d", k, n) != shard || n < 1 || k < 0 || k >= n {
		return at, 0, 0, usagef("--shard %q: want K/N with 0 <= K < N, e.g. 0/4", shard)
	}
	if !flagSet(fs, "version") && !flagSet(fs, "timestamp") {
		return at, 0, 0, usagef("--shard needs --version or --timestamp: every shard must plan on the same table version")
	}
	return at, k, n, nil
}

// percent prints a share as a percentage.
func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// nothingToDo says why a plan has no bins and what would do the work, naming the
// command line to run (the given one with --full when that is what is missing).
func nothingToDo(p *optimize.Plan, targetGiven bool, cmdline []string) string {
	quoted := make([]string, len(cmdline))
	for i, a := range cmdline {
		quoted[i] = shellQuote(a)
	}
	withFull := strings.Join(quoted, " ") + " --full"
	if p.Curve == optimize.CurveNone {
		why := fmt.Sprintf("no partition has two or more files smaller than %s (three quarters of the target file size, %s), and OPTIMIZE compacts small files: it does not split or resize larger ones",
			progress.FormatBytes(p.MinFileSize), progress.FormatBytes(p.TargetFileSize))
		if targetGiven {
			why += "; to rewrite every file at the new --target-size, cluster with --full (e.g. add --zorder-by COLUMNS --full)"
		}
		return why
	}
	if p.Curve == optimize.CurveWorkload {
		return "every file is laid out by the partition's workload tree, or is new and waits where it was appended until the part of the tree it falls in has about doubled (a later run then re-splits that part with it); to build a new tree now run: " + withFull + " --queries FILE"
	}
	on := p.Curve.String() + " on " + strings.Join(p.ClusterBy, ", ")
	if p.FinishedCubeFiles > 0 {
		why := fmt.Sprintf("%d files are already clustered by %s in finished clusters (of at least %s), which OPTIMIZE leaves alone", p.FinishedCubeFiles, on, progress.FormatBytes(p.MinCubeSize))
		if targetGiven {
			why += " (a new --target-size applies only to files it rewrites)"
		}
		return why + "; to re-cluster them run: " + withFull
	}
	return "every partition is already one cluster by " + on + "; to re-cluster it run: " + withFull
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
	retain := fs.String("retain", "", "retention: keep unreferenced files younger than this, e.g. 168h or '7 days' (default: the table's delta.deletedFileRetentionDuration, else 7 days; shorter than the table's or than 7 days needs --force; 0h keeps none older than 1 hour)")
	force := fs.Bool("force", false, "allow a retention shorter than the table's retention period or than the 7-day safety floor, including a table retention below it (readers of older versions may lose files; files younger than 1 hour, which writes still committing may own, are always kept)")
	dry := fs.Bool("dry-run", false, "list what would be deleted without deleting")
	format := fs.String("format", "table", "table or json")
	quiet := quietFlag(fs)
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	opts := table.VacuumOptions{Force: *force, DryRun: *dry}
	if *retain != "" {
		d, err := parseRetention(*retain)
		if err != nil {
			return err
		}
		opts.Retention, opts.RetentionSet = d, true
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	prog := newProgress(e, "vacuum", *quiet)
	opts.Progress = updateFrom(prog)
	res, err := t.Vacuum(ctx, opts)
	prog.Done()
	var short *vacuum.RetentionTooShortError
	switch {
	case errors.As(err, &short) && short.BelowFloor && *retain == "":
		return fmt.Errorf("the table's retention period, %s (%s), is below the safety floor of %s: files that readers of older versions still need could be deleted; add --force to vacuum anyway",
			formatDuration(short.TableRetention), log.PropDeletedFileRetentionDuration, formatDuration(vacuum.SafetyFloor))
	case errors.As(err, &short) && short.BelowFloor:
		return fmt.Errorf("--retain %s is below the safety floor of %s: files that readers of older versions still need could be deleted; add --force to vacuum anyway",
			*retain, formatDuration(vacuum.SafetyFloor))
	case errors.As(err, &short):
		return fmt.Errorf("--retain %s is shorter than the table's retention period, %s (%s): files that readers of older versions still need could be deleted; add --force to vacuum anyway",
			*retain, formatDuration(short.TableRetention), log.PropDeletedFileRetentionDuration)
	}
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
	ret := formatDuration(res.Retention)
	if *retain != "" {
		ret = *retain
	}
	fmt.Fprintf(e.stdout, "%s %d files (%d bytes); retention %s\n", verb, len(res.Files), res.Bytes, ret)
	if len(res.Temporaries) > 0 {
		fmt.Fprintf(e.stdout, "%s %d abandoned temporary files (%d bytes)\n", verb, len(res.Temporaries), res.TemporaryBytes)
	}
	if res.KeptRecent > 0 {
		fmt.Fprintf(e.stdout, "kept %d file(s) younger than %s (writes may still be committing them)\n", res.KeptRecent, formatDuration(vacuum.MinUnreferencedAge))
	}
	if res.KeptOlderThanTable > 0 {
		fmt.Fprintf(e.stdout, "kept %d file(s) older than the table (they were in the directory before it was created)\n", res.KeptOlderThanTable)
	}
	return nil
}

// parseRetention reads --retain: a Go duration (168h, 90m, 0h) or a Delta interval
// ('7 days', 'interval 2 weeks').
func parseRetention(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if d, err = table.ParseInterval(s); err != nil {
			return 0, usagef("--retain %q: want a duration (168h, 90m, 0h) or an interval ('7 days', '2 weeks')", s)
		}
	}
	if d < 0 {
		return 0, usagef("--retain %q: must not be negative", s)
	}
	return d, nil
}

// formatDuration prints a retention the way people write one: whole days as
// "7 days", else Go's form without trailing zero units ("36h", "90m", "0s").
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
