package benchskip

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/skiplake/skiplake/internal/svgchart"
)

// Chart names accepted by WriteSVG.
const (
	// ChartFiles is a grouped bar chart: % of files read, one group per
	// workload, one bar per layout.
	ChartFiles = "files"
	// ChartBoxes draws each file's bounding box on the first two clustering
	// columns in rank space, one panel per layout.
	ChartBoxes = "boxes"
)

// WriteText writes a readable table: one block per workload, one row per
// layout, with % files read, % bytes read, the ratio to the lower bound
// (geometric mean and p90), % row groups read and planning time.
func (r *Result) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "dataset %s", r.Config.Dataset)
	if r.Config.Dataset == DatasetLineitem {
		fmt.Fprintf(bw, " sf=%g", r.Config.ScaleFactor)
	}
	fmt.Fprintf(bw, ": %d rows in %d files × %d row groups (≤ %d rows/file), %.1f MB est.; clustered on %s; %d queries/workload; seed %d\n",
		r.Rows, r.Config.Files, r.Config.RowGroups, r.MaxRowsPerFile, float64(r.TotalBytes)/1e6,
		strings.Join(r.Config.Columns, ", "), r.Config.Queries, r.Config.Seed)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tlayout\tfiles read %\tbytes read %\tratio gmean\tratio p90\teq-files ratio\trow groups %\tlower bound\tplan µs\t")
	for _, wl := range r.Workloads {
		for _, l := range r.Layouts {
			c := r.Cell(l.Name, wl)
			if c == nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t\n", wl, l.Name,
				c.FilesReadPct, c.BytesReadPct, c.RatioGeoMean, c.RatioP90, c.RatioEqualFiles, c.RowGroupsReadPct, c.LowerBound, c.PlanMicros)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	mism := 0
	for _, c := range r.Cells {
		mism += c.CrossCheckMismatches
	}
	fmt.Fprintf(bw, "cross-check (skipping vs direct min/max box test): %d mismatches\n", mism)
	writeAdvice(bw, r.Advice)
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "note: %s\n", n)
	}
	return bw.Flush()
}

// WriteJSON writes the result as indented JSON (the Result struct's fields).
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteSVG draws chart (ChartFiles or ChartBoxes) as a self-contained SVG
// document. ChartBoxes needs at least two clustering columns. Errors wrap
// ErrUnknownChart, or come from w.
func (r *Result) WriteSVG(w io.Writer, chart string) error {
	var names []string
	for _, l := range r.Layouts {
		names = append(names, l.Name)
	}
	switch chart {
	case ChartFiles:
		return svgchart.FilesChart{
			Title: fmt.Sprintf("Files read per query (%% of %d files), %s, clustered on %s",
				r.Config.Files, r.Config.Dataset, strings.Join(r.Config.Columns, ", ")),
			Groups: r.Workloads, Series: names, Color: layoutColor,
			Value: func(wl, layout string) (float64, float64, bool) {
				c := r.Cell(layout, wl)
				if c == nil {
					return 0, 0, false
				}
				return c.FilesReadPct, c.RatioGeoMean, true
			},
		}.Write(w)
	case ChartBoxes:
		if len(r.Config.Columns) < 2 || len(r.Layouts) == 0 || len(r.Layouts[0].FileBoxes) == 0 {
			return errorf(ErrUnknownChart, "chart %q needs two clustering columns", chart)
		}
		c := svgchart.BoxesChart{
			Title: fmt.Sprintf("File bounding boxes in rank space: x = %s, y = %s (%d files)",
				r.Config.Columns[0], r.Config.Columns[1], r.Config.Files),
			Color: layoutColor,
		}
		for _, l := range r.Layouts {
			p := svgchart.Panel{Name: l.Name}
			for _, b := range l.FileBoxes {
				p.Boxes = append(p.Boxes, svgchart.Rect(b))
			}
			c.Panels = append(c.Panels, p)
		}
		return c.Write(w)
	}
	return errorf(ErrUnknownChart, "chart %q; want %q or %q", chart, ChartFiles, ChartBoxes)
}

// layoutColor gives each layout a fixed colour, whatever subset is drawn. A
// name with a column list ("hilbert(a,b)", as the layout advisor names its
// candidates) takes the colour of its kind; "linear" and "sort" share one.
var layoutColor = svgchart.Colors(AllLayouts, map[string]string{"linear": LayoutSort, "current": LayoutInsertion})
