package benchskip

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"text/tabwriter"
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
	fmt.Fprintln(tw, "workload\tlayout\tfiles read %\tbytes read %\tratio gmean\tratio p90\trow groups %\tlower bound\tplan µs\t")
	for _, wl := range r.Workloads {
		for _, l := range r.Layouts {
			c := r.Cell(l.Name, wl)
			if c == nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t\n", wl, l.Name,
				c.FilesReadPct, c.BytesReadPct, c.RatioGeoMean, c.RatioP90, c.RowGroupsReadPct, c.LowerBound, c.PlanMicros)
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
	var s svg
	switch chart {
	case ChartFiles:
		r.filesChart(&s)
	case ChartBoxes:
		if len(r.Config.Columns) < 2 || len(r.Layouts) == 0 || len(r.Layouts[0].FileBoxes) == 0 {
			return errorf(ErrUnknownChart, "chart %q needs two clustering columns", chart)
		}
		r.boxesChart(&s)
	default:
		return errorf(ErrUnknownChart, "chart %q; want %q or %q", chart, ChartFiles, ChartBoxes)
	}
	_, err := io.WriteString(w, s.String())
	return err
}

// palette colours layouts in AllLayouts order (colour-blind friendly).
var palette = []string{"#999999", "#e69f00", "#cc79a7", "#56b4e9", "#009e73", "#0072b2", "#d55e00", "#f0e442"}

// layoutColor gives each layout a fixed colour, whatever subset is drawn. A
// name with a column list ("hilbert(a,b)", as the layout advisor names its
// candidates) takes the colour of its kind; "linear" and "sort" share one.
func layoutColor(name string) string {
	if i := strings.IndexByte(name, '('); i > 0 {
		name = name[:i]
	}
	switch name {
	case "linear":
		name = LayoutSort
	case "current":
		name = LayoutInsertion
	}
	for i, l := range AllLayouts {
		if l == name {
			return palette[i%len(palette)]
		}
	}
	return palette[len(palette)-1]
}

// svg accumulates an SVG document.
type svg struct {
	b    strings.Builder
	w, h float64
	body strings.Builder
}

func (s *svg) printf(format string, args ...any) { fmt.Fprintf(&s.body, format, args...) }

func (s *svg) text(x, y float64, anchor, size, txt string, extra string) {
	s.printf(`<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%s"%s>%s</text>`+"\n", x, y, anchor, size, extra, html.EscapeString(txt))
}

func (s *svg) String() string {
	s.b.Reset()
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", s.w, s.h, s.w, s.h)
	fmt.Fprintf(&s.b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="white"/>`+"\n", s.w, s.h)
	s.b.WriteString(s.body.String())
	s.b.WriteString("</svg>\n")
	return s.b.String()
}

// filesChart draws % files read per workload (groups) and layout (bars).
func (r *Result) filesChart(s *svg) {
	const (
		left, top, bottom, right = 60.0, 50.0, 110.0, 20.0
		plotH                    = 300.0
		barW, gap                = 9.0, 14.0
	)
	nl := float64(len(r.Layouts))
	groupW := nl*barW + gap
	s.w = left + right + math.Max(1, float64(len(r.Workloads)))*groupW + 150
	// Room for the title (about 7.5 px per character at 15 px bold).
	title := fmt.Sprintf("Files read per query (%% of %d files), %s, clustered on %s",
		r.Config.Files, r.Config.Dataset, strings.Join(r.Config.Columns, ", "))
	s.w = math.Max(s.w, left+float64(len(title))*8.5)
	groupW = math.Max(groupW, (s.w-left-right-150)/math.Max(1, float64(len(r.Workloads))))
	s.h = top + plotH + bottom
	s.text(left, 24, "start", "15", title, ` font-weight="bold"`)
	y := func(pct float64) float64 { return top + plotH*(1-pct/100) }
	for _, t := range []float64{0, 25, 50, 75, 100} {
		s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y(t), s.w-right-150, y(t))
		s.text(left-6, y(t)+4, "end", "11", fmt.Sprintf("%g%%", t), "")
	}
	for wi, wl := range r.Workloads {
		x0 := left + gap/2 + float64(wi)*groupW
		for li, l := range r.Layouts {
			c := r.Cell(l.Name, wl)
			if c == nil {
				continue
			}
			x := x0 + float64(li)*barW
			s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %.2f%% files (ratio %.2f)</title></rect>`+"\n",
				x, y(c.FilesReadPct), barW-1, plotH*c.FilesReadPct/100, layoutColor(l.Name), html.EscapeString(l.Name), html.EscapeString(wl), c.FilesReadPct, c.RatioGeoMean)
		}
		cx := x0 + nl*barW/2
		s.text(cx, top+plotH+12, "end", "11", wl, fmt.Sprintf(` transform="rotate(-45 %.1f %.1f)"`, cx, top+plotH+12))
	}
	s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+plotH, s.w-right-150, top+plotH)
	lx := s.w - right - 140
	for li, l := range r.Layouts {
		ly := top + 10 + float64(li)*18
		s.printf(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, ly, layoutColor(l.Name))
		s.text(lx+18, ly+10, "start", "12", l.Name, "")
	}
}

// boxesChart draws one panel per layout with every file's bounding box.
func (r *Result) boxesChart(s *svg) {
	const (
		panel, pad, top = 260.0, 40.0, 50.0
		perRow          = 3
	)
	n := len(r.Layouts)
	cols := min(n, perRow)
	rows := (n + perRow - 1) / perRow
	s.w = pad + float64(cols)*(panel+pad)
	s.h = top + float64(rows)*(panel+pad+20)
	s.text(pad, 24, "start", "15", fmt.Sprintf("File bounding boxes in rank space: x = %s, y = %s (%d files)",
		r.Config.Columns[0], r.Config.Columns[1], r.Config.Files), ` font-weight="bold"`)
	for li, l := range r.Layouts {
		px := pad + float64(li%perRow)*(panel+pad)
		py := top + 20 + float64(li/perRow)*(panel+pad+20)
		s.text(px+panel/2, py-6, "middle", "13", l.Name, "")
		s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", px, py, panel, panel)
		for _, b := range l.FileBoxes {
			s.printf(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" fill-opacity="0.08" stroke="%s" stroke-width="0.5"/>`+"\n",
				px+b.X0*panel, py+(1-b.Y1)*panel, math.Max(0.3, (b.X1-b.X0)*panel), math.Max(0.3, (b.Y1-b.Y0)*panel), layoutColor(l.Name), layoutColor(l.Name))
		}
	}
}
