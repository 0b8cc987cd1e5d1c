// Package svgchart draws the charts of the skipping benchmark (package
// internal/benchskip) and the layout advisor (package advise) as self-contained SVG
// documents: a grouped bar chart of the share of files read, and panels of file
// bounding boxes in rank space. It has no state and writes nothing but the
// documents it is asked for.
package svgchart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Palette holds the layout colours (colour-blind friendly), assigned in the
// order a chart's caller lists its layout kinds.
var Palette = []string{"#999999", "#e69f00", "#cc79a7", "#56b4e9", "#009e73", "#0072b2", "#d55e00", "#f0e442"}

// Colors returns a colour function for layout names: a name takes the colour
// of its position in kinds, after dropping a column list ("hilbert(a,b)" is
// "hilbert") and applying aliases (alias name -> kind). Unknown names get the
// last colour.
func Colors(kinds []string, aliases map[string]string) func(string) string {
	return func(name string) string {
		if i := strings.IndexByte(name, '('); i > 0 {
			name = name[:i]
		}
		if a, ok := aliases[name]; ok {
			name = a
		}
		for i, k := range kinds {
			if k == name {
				return Palette[i%len(Palette)]
			}
		}
		return Palette[len(Palette)-1]
	}
}

// FilesChart is a grouped bar chart: one group per workload, one bar per
// layout, bar height the % of files read.
type FilesChart struct {
	// Title heads the chart.
	Title string
	// Groups are the workloads and Series the layouts, in drawing order.
	Groups, Series []string
	// Value returns the % of files read and the ratio to the lower bound of a
	// layout on a workload (ok false: no bar).
	Value func(group, series string) (pct, ratio float64, ok bool)
	// Color colours a layout.
	Color func(series string) string
}

// Rect is an axis-aligned box in rank space ([0, 1] on both axes).
type Rect struct{ X0, X1, Y0, Y1 float64 }

// Panel is one layout's file boxes.
type Panel struct {
	Name  string
	Boxes []Rect
}

// BoxesChart draws one panel per layout with every file's bounding box.
type BoxesChart struct {
	Title  string
	Panels []Panel
	Color  func(string) string
}

// svg accumulates an SVG document.
type svg struct {
	w, h float64
	body strings.Builder
}

func (s *svg) printf(format string, args ...any) { fmt.Fprintf(&s.body, format, args...) }

func (s *svg) text(x, y float64, anchor, size, txt string, extra string) {
	s.printf(`<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%s"%s>%s</text>`+"\n", x, y, anchor, size, extra, html.EscapeString(txt))
}

func (s *svg) write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", s.w, s.h, s.w, s.h)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="white"/>`+"\n", s.w, s.h)
	b.WriteString(s.body.String())
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Write draws the bar chart.
func (c FilesChart) Write(w io.Writer) error {
	const (
		left, top, bottom, right = 60.0, 50.0, 110.0, 20.0
		plotH                    = 300.0
		barW, gap                = 9.0, 14.0
		legendRow                = 18.0
	)
	var s svg
	nl := float64(len(c.Series))
	groupW := nl*barW + gap
	s.w = left + right + math.Max(1, float64(len(c.Groups)))*groupW + 150
	// Room for the title (about 7.5 px per character at 15 px bold).
	s.w = math.Max(s.w, left+float64(len(c.Title))*8.5)
	groupW = math.Max(groupW, (s.w-left-right-150)/math.Max(1, float64(len(c.Groups))))
	s.h = math.Max(top+plotH+bottom, top+10+nl*legendRow+20)
	s.text(left, 24, "start", "15", c.Title, ` font-weight="bold"`)
	y := func(pct float64) float64 { return top + plotH*(1-pct/100) }
	for _, t := range []float64{0, 25, 50, 75, 100} {
		s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y(t), s.w-right-150, y(t))
		s.text(left-6, y(t)+4, "end", "11", fmt.Sprintf("%g%%", t), "")
	}
	for gi, g := range c.Groups {
		x0 := left + gap/2 + float64(gi)*groupW
		for si, name := range c.Series {
			pct, ratio, ok := c.Value(g, name)
			if !ok {
				continue
			}
			x := x0 + float64(si)*barW
			s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %.2f%% files (ratio %.2f)</title></rect>`+"\n",
				x, y(pct), barW-1, plotH*pct/100, c.Color(name), html.EscapeString(name), html.EscapeString(g), pct, ratio)
		}
		cx := x0 + nl*barW/2
		s.text(cx, top+plotH+12, "end", "11", g, fmt.Sprintf(` transform="rotate(-45 %.1f %.1f)"`, cx, top+plotH+12))
	}
	s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top+plotH, s.w-right-150, top+plotH)
	lx := s.w - right - 140
	for si, name := range c.Series {
		ly := top + 10 + float64(si)*legendRow
		s.printf(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, ly, c.Color(name))
		s.text(lx+18, ly+10, "start", "12", name, "")
	}
	return s.write(w)
}

// Write draws the box panels.
func (c BoxesChart) Write(w io.Writer) error {
	const (
		panel, pad, top = 260.0, 40.0, 50.0
		perRow          = 3
	)
	var s svg
	n := len(c.Panels)
	cols := max(1, min(n, perRow))
	rows := (n + perRow - 1) / perRow
	s.w = pad + float64(cols)*(panel+pad)
	s.h = top + float64(rows)*(panel+pad+20)
	s.text(pad, 24, "start", "15", c.Title, ` font-weight="bold"`)
	for pi, p := range c.Panels {
		px := pad + float64(pi%perRow)*(panel+pad)
		py := top + 20 + float64(pi/perRow)*(panel+pad+20)
		s.text(px+panel/2, py-6, "middle", "13", p.Name, "")
		s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", px, py, panel, panel)
		col := c.Color(p.Name)
		for _, b := range p.Boxes {
			s.printf(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" fill-opacity="0.08" stroke="%s" stroke-width="0.5"/>`+"\n",
				px+b.X0*panel, py+(1-b.Y1)*panel, math.Max(0.3, (b.X1-b.X0)*panel), math.Max(0.3, (b.Y1-b.Y0)*panel), col, col)
		}
	}
	return s.write(w)
}
