package advise

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/skiplake/skiplake/internal/svgchart"
)

// Chart names accepted by WriteSVG (the skipping benchmark's charts).
const (
	// ChartFiles is a bar chart of the predicted % of files read per candidate.
	ChartFiles = "files"
	// ChartBoxes draws the simulated files' bounding boxes on the first two
	// candidate columns, one panel per candidate.
	ChartBoxes = "boxes"
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
	if r.Best == nil {
		fmt.Fprintln(bw, "best: none (OPTIMIZE accepts no candidate on this table; see the notes)")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(bw, "warning: %s\n", w)
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

// candidateColor colours candidates by kind, as the skipping benchmark colours
// its layouts.
var candidateColor = svgchart.Colors(
	[]string{KindCurrent, "sort", "zorder-raw", KindZOrder, KindHilbert, "kdtree", "workload", "workload-robust"},
	map[string]string{KindLinear: "sort"})

// WriteSVG draws chart (ChartFiles or ChartBoxes) for the best
// ChartCandidates candidates and the current layout, with the skipping
// benchmark's chart code (internal/svgchart). Errors wrap ErrInvalidOptions for
// an unknown chart, or come from w.
func (r *Report) WriteSVG(w io.Writer, chart string) error {
	var shown []Candidate
	for i, c := range r.Candidates {
		if i < ChartCandidates || c.Kind == KindCurrent {
			shown = append(shown, c)
		}
	}
	switch chart {
	case ChartFiles:
		var names []string
		byName := map[string]Candidate{}
		for _, c := range shown {
			names = append(names, c.Name)
			byName[c.Name] = c
		}
		return svgchart.FilesChart{
			Title:  fmt.Sprintf("Predicted files read per query (%% of %d files), %d queries, sample of %d rows", r.SimulatedFiles, r.Queries, r.SampleRows),
			Groups: []string{"workload"}, Series: names, Color: candidateColor,
			Value: func(_, name string) (float64, float64, bool) {
				c, ok := byName[name]
				return c.FilesReadPct, c.RatioGeoMean, ok
			},
		}.Write(w)
	case ChartBoxes:
		if len(r.Columns) < 2 {
			return fmt.Errorf("%w: the boxes chart needs two candidate columns", ErrInvalidOptions)
		}
		c := svgchart.BoxesChart{
			Title: fmt.Sprintf("Simulated file bounding boxes in rank space: x = %s, y = %s (%d files)", r.Columns[0], r.Columns[1], r.SimulatedFiles),
			Color: candidateColor,
		}
		for _, cand := range shown {
			if len(cand.boxes) == 0 {
				continue // the current layout has no simulated files
			}
			p := svgchart.Panel{Name: cand.Name}
			for _, b := range cand.boxes {
				p.Boxes = append(p.Boxes, svgchart.Rect{X0: b[0], X1: b[1], Y0: b[2], Y1: b[3]})
			}
			c.Panels = append(c.Panels, p)
		}
		return c.Write(w)
	}
	return fmt.Errorf("%w: chart %q; want %q or %q", ErrInvalidOptions, chart, ChartFiles, ChartBoxes)
}
