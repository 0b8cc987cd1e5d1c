package advise

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/skiplake/skiplake/benchskip"
)

// Chart names accepted by WriteSVG (the skipping benchmark's charts).
const (
	// ChartFiles is a bar chart of the predicted % of files read per candidate.
	ChartFiles = benchskip.ChartFiles
	// ChartBoxes draws the simulated files' bounding boxes on the first two
	// candidate columns, one panel per candidate.
	ChartBoxes = benchskip.ChartBoxes
)

// ChartCandidates is how many candidates (best first, plus the current layout)
// the charts draw.
const ChartCandidates = 9

// WriteText writes the report as a readable table, best first, with the
// recommendation and the command that applies it.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "table: %d rows; sample: %d rows; layouts of %d files", r.Rows, r.SampleRows, r.Files)
	if r.SimulatedFiles != r.Files {
		fmt.Fprintf(bw, " (simulated with %d)", r.SimulatedFiles)
	}
	fmt.Fprintf(bw, "\nworkload: %d queries, weight %g, fingerprint %s; columns %s\n", r.Queries, r.Weight, r.Fingerprint, strings.Join(r.Columns, ", "))
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "candidate\tfiles\tfiles read %\trows read %\tratio to bound (gmean)\tp90\t")
	for _, c := range r.Candidates {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", c.Name, c.Files, c.FilesReadPct, c.RowsReadPct, c.RatioGeoMean, c.RatioP90)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Best != nil {
		fmt.Fprintf(bw, "best: %s (%.2f%% of files, %.2f× the lower bound)\n", r.Best.Name, r.Best.FilesReadPct, r.Best.RatioGeoMean)
		if r.Best.Command != "" {
			fmt.Fprintf(bw, "apply: %s\n", r.Best.Command)
		} else {
			fmt.Fprintln(bw, "apply: nothing to do (the current layout is within 2% of the best)")
		}
	}
	if r.Drift != nil {
		fmt.Fprintf(bw, "drift: %s\n", r.Drift)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "note: %s\n", n)
	}
	return bw.Flush()
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteSVG draws chart (ChartFiles or ChartBoxes) for the best
// ChartCandidates candidates and the current layout, with the skipping
// benchmark's chart code.
func (r *Report) WriteSVG(w io.Writer, chart string) error {
	res := &benchskip.Result{
		Config:    benchskip.Config{Dataset: "sample", Files: r.SimulatedFiles, Columns: r.Columns},
		Workloads: []string{"workload"},
	}
	var shown []Candidate
	for i, c := range r.Candidates {
		if i < ChartCandidates || c.Kind == KindCurrent {
			shown = append(shown, c)
		}
	}
	for _, c := range shown {
		info := benchskip.LayoutInfo{Name: c.Name}
		for _, b := range c.boxes {
			info.FileBoxes = append(info.FileBoxes, benchskip.Rect{X0: b[0], X1: b[1], Y0: b[2], Y1: b[3]})
		}
		if chart == ChartBoxes && len(info.FileBoxes) == 0 {
			continue // the current layout has no simulated files
		}
		res.Layouts = append(res.Layouts, info)
		res.Cells = append(res.Cells, benchskip.Cell{Layout: c.Name, Workload: "workload", Queries: r.Queries,
			FilesReadPct: c.FilesReadPct, RatioGeoMean: c.RatioGeoMean, FilesRead: c.FilesRead, LowerBound: c.LowerBound})
	}
	if err := res.WriteSVG(w, chart); err != nil {
		return fmt.Errorf("advise: %w", err)
	}
	return nil
}
