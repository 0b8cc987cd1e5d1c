package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/skiplake/skiplake/internal/render"
	"github.com/skiplake/skiplake/log"

	"github.com/skiplake/skiplake/storage"

	"github.com/skiplake/skiplake/table"
)

// Exit statuses of maintain beyond 0 (healthy), 1 (error), 2 (usage) and 75 (temporary
// failure, status.go).
const (
	exitWorkRemains = 3 // something due was left undone (budget, dry run)
	exitTaskFailed  = 4 // a task failed; the report says which
)

func init() {
	register(&command{name: "maintain", usage: "TABLE [--max-bytes SIZE] [--max-duration D] [--version V | --timestamp TS] [--shard K/N] [--force] [--dry-run] [--quiet] [--format table|json]",
		summary: "do the maintenance that is due: checkpoint, compact, cluster, purge deleted rows, Bloom backfill, VACUUM, log cleanup",
		details: `Tasks run in this order, each only when due: a checkpoint when delta.checkpointInterval
commits came after the last one; one OPTIMIZE that compacts small files, clusters
unclustered data incrementally (a clustered table by its clustering columns, another
table by the columns of its last clustering run), purges the deleted rows of files
whose deletion vectors mark more than skiplake.optimize.maxDeletedRowsRatio of their
rows (default 0.05) and backfills missing Bloom filters; VACUUM past
delta.deletedFileRetentionDuration (refused, the task failing, when that is below the
7-day safety floor, unless --force);
a checkpoint again if the run made one due; cleanup of log files past
delta.logRetentionDuration that a checkpoint covers. Safe beside writers; a second
run right after a complete one does nothing.

The rewrite commits bin by bin within --max-bytes and --max-duration, oldest data
first: a run that stops keeps every bin it committed, and a bin larger than what is
left of the budget waits for the next run, or is cut into pieces that fit when no
run could do it whole; so a fixed nightly budget always makes progress. The report
lists each commit. --shard K/N (with --version or --timestamp, the same for every
shard) runs shard K of N of the rewrite: N processes share one run (docs/distributed.md);
only shard 0 does the other tasks.

Exit status: 0 the table is healthy (everything due was done, or nothing was due);
1 the table could not be read or was refused; 2 usage error; 3 work remains (a budget
ran out, or --dry-run found work to do); 4 a task failed (see the report; later tasks
still ran); 75 a temporary failure before the report (storage, network, a commit
conflict, a timeout): run it again later.`,
		examples: []string{`skiplake maintain /tmp/t`, `skiplake maintain s3://bucket/events --max-bytes 10g --max-duration 30m --format json`, `skiplake maintain /tmp/t --dry-run`},
		run:      runMaintain})
}

func runMaintain(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("maintain", flag.ContinueOnError)
	maxBytes := fs.String("max-bytes", "", "rewrite at most SIZE bytes (compaction, clustering, Bloom backfill) in this run, e.g. 10g; default no bound")
	maxDuration := fs.String("max-duration", "", "start no task after D (e.g. 30m, 2h, \"interval 1 hour\") and cancel a rewrite still running then; default no bound")
	dryRun := fs.Bool("dry-run", false, "report what is due without changing anything (exit status 3 when anything is)")
	force := fs.Bool("force", false, "vacuum even when the table's delta.deletedFileRetentionDuration is below the 7-day safety floor (without it the vacuum task fails; files younger than 1 hour are always kept)")
	format := fs.String("format", "table", "table or json")
	quiet := quietFlag(fs)
	ref := addRefFlags(fs)
	shard := fs.String("shard", "", "K/N: run shard K (0..N-1) of N of the rewrite, planned on --version or --timestamp (docs/distributed.md)")
	path, err := tableArgs(fs, args, format, "table", "json")
	if err != nil {
		return err
	}
	opts := table.MaintainOptions{DryRun: *dryRun, Force: *force}
	if opts.PlanAt, opts.Shard, opts.Shards, err = shardFlags(fs, ref, *shard); err != nil {
		return err
	}
	if *maxBytes != "" {
		if opts.MaxBytes, err = table.ParseSize(*maxBytes); err != nil {
			return usagef("--max-bytes %q: %v", *maxBytes, err)
		}
	}
	if *maxDuration != "" {
		if opts.MaxDuration, err = table.ParseInterval(*maxDuration); err != nil || opts.MaxDuration <= 0 {
			return usagef("--max-duration %q: want a positive duration such as 30m or \"interval 1 hour\"", *maxDuration)
		}
	}
	t, err := e.openTable(ctx, path)
	if err != nil {
		return err
	}
	prog := newProgress(e, "maintain", *quiet)
	defer prog.Done()
	opts.Progress = updateFrom(prog)
	rep, err := t.Maintain(ctx, opts)
	prog.Done()
	if err != nil {
		return err
	}
	if *format == "json" {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else if err := printMaintain(e, path, rep); err != nil {
		return err
	}
	switch {
	case rep.Failed:
		return &exitStatus{code: exitTaskFailed, msg: "a maintenance task failed (see the report)"}
	case rep.WorkRemains:
		return &exitStatus{code: exitWorkRemains}
	}
	return nil
}

func printMaintain(e *env, path string, rep *table.MaintainReport) error {
	f := rep.Found
	dry := ""
	if rep.DryRun {
		dry = " (dry run)"
	}
	fmt.Fprintf(e.stdout, "maintain %s: version %d -> %d%s\n", storage.RedactLocation(path), rep.Version, rep.FinalVersion, dry)
	fmt.Fprintf(e.stdout, "found: %d files (%s), %d small; ", f.Files, render.FormatBytes(f.Bytes), f.SmallFiles)
	if len(f.ClusteringColumns) > 0 {
		fmt.Fprintf(e.stdout, "%d unclustered by %s; ", f.UnclusteredFiles, strings.Join(f.ClusteringColumns, ","))
	}
	cp := fmt.Sprintf("%d commits since checkpoint %d", f.CommitsSinceCheckpoint, f.CheckpointVersion)
	if f.CheckpointVersion < 0 {
		cp = fmt.Sprintf("%d commits, no checkpoint", f.CommitsSinceCheckpoint)
	}
	fmt.Fprintf(e.stdout, "%s (interval %d); %d files lack Bloom filters; %d tombstones (%d expired); %d vacuumable files (%s); %d expired log files\n",
		cp, f.CheckpointInterval, f.FilesLackingBloom, f.Tombstones, f.ExpiredTombstones,
		f.VacuumableFiles, render.FormatBytes(f.VacuumableBytes), f.ExpiredLogFiles)
	fmt.Fprintf(e.stdout, "deleted rows: %d of %d (%s) in %d files; %d files above %s = %g\n",
		f.DeletedRows, f.Rows, percent(f.DeletedRowsRatio), f.FilesWithDeletedRows, f.PurgeFiles, log.PropMaxDeletedRowsRatio, f.MaxDeletedRowsRatio)
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tFILES\tBYTES\tLEFT FILES\tLEFT BYTES\tVERSIONS\tDETAIL")
	for _, task := range rep.Tasks {
		versions := make([]string, len(task.Versions))
		for i, v := range task.Versions {
			versions[i] = fmt.Sprint(v)
		}
		detail := task.Reason
		if task.Error != "" {
			detail = strings.TrimSpace(detail + " " + task.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", task.Task, task.Status, task.Files, task.Bytes, task.LeftFiles, task.LeftBytes, strings.Join(versions, ","), detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range rep.Commits {
		piece := ""
		if c.Piece {
			piece = " (a piece cut to fit the budget)"
		}
		fmt.Fprintf(e.stdout, "committed version %d: %s bin %d%s: rewrote %d files (%d bytes) into %d files (%d bytes)\n",
			c.Version, c.Task, c.Bin, piece, c.Files, c.Bytes, c.AddedFiles, c.AddedBytes)
	}
	state := "healthy"
	switch {
	case rep.Failed:
		state = "a task failed"
	case rep.WorkRemains:
		state = "work remains"
	}
	fmt.Fprintln(e.stdout, state)
	return nil
}

// printLayout renders a layout report (describe --layout).
func printLayout(e *env, rep *table.LayoutReport) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "version\t%d\n", rep.Version)
	fmt.Fprintf(tw, "files\t%d (%s) in %d partition(s)\n", rep.Files, render.FormatBytes(rep.Bytes), rep.Partitions)
	fmt.Fprintf(tw, "small files\t%d (%s) below %s (target %s)\n", rep.SmallFiles, render.FormatBytes(rep.SmallBytes),
		render.FormatBytes(rep.SmallFileSize), render.FormatBytes(rep.TargetFileSize))
	if len(rep.ClusteringColumns) > 0 {
		fmt.Fprintf(tw, "clustering columns\t%s\n", strings.Join(rep.ClusteringColumns, ", "))
	}
	fmt.Fprintf(tw, "clustered\t%.1f%% of bytes (%.1f%% by the analysed columns)\n", 100*rep.ClusteredFraction, 100*rep.ClusteredByCurrentFraction)
	if w := rep.WriteAmplification; w != nil {
		fmt.Fprintf(tw, "write amplification\t%.2f (versions %d-%d: %s of data, %s rewritten)\n", w.Ratio, w.FromVersion, w.ToVersion,
			render.FormatBytes(w.DataBytes), render.FormatBytes(w.RearrangedBytes))
	}
	d := rep.DeletionVectors
	fmt.Fprintf(tw, "deleted rows\t%d of %d (%s) in %d files (%s), not purged; %d files (%d deleted rows) above %s = %g\n",
		d.DeletedRows, d.Rows, percent(d.Ratio), d.Files, render.FormatBytes(d.Bytes), d.PurgeFiles, d.PurgeDeletedRows, log.PropMaxDeletedRowsRatio, d.Threshold)
	fmt.Fprintln(tw, "size histogram\t")
	for _, b := range rep.Histogram {
		if b.Files > 0 {
			fmt.Fprintf(tw, "  %s\t%d files, %s\n", b.Label(), b.Files, render.FormatBytes(b.Bytes))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	const listed = 10 // files with deleted rows listed, the highest share first
	for i, f := range d.PerFile {
		if i == listed {
			fmt.Fprintf(e.stdout, "  ... %d more files with deleted rows (--format json lists all)\n", len(d.PerFile)-listed)
			break
		}
		purge := ""
		if f.Purge {
			purge = "; the next optimize or maintain purges it"
		}
		fmt.Fprintf(e.stdout, "  %d of %d rows deleted (%s) in %s%s\n", f.DeletedRows, f.Rows, percent(f.Ratio), f.Path, purge)
	}
	if len(rep.Columns) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(e.stdout, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "COLUMN\tNO-BOUNDS\tAVG-DEPTH\tMAX-DEPTH\tPOINT-READ%%\tRANGE-READ%%\t\n")
	for _, c := range rep.Columns {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%d\t%.2f\t%.2f\t\n", c.Column, c.FilesWithoutBounds, c.AverageDepth, c.MaxDepth, c.PointReadPercent, c.RangeReadPercent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "(range queries select %g%% of the rows; figures from the files' min/max in the log)\n", 100*rep.Columns[0].RangeFraction)
	return nil
}
