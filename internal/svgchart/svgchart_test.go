package svgchart

import (
	"strings"
	"testing"
)

func TestColors(t *testing.T) {
	c := Colors([]string{"a", "b", "sort"}, map[string]string{"linear": "sort"})
	cases := map[string]string{"a": Palette[0], "b(x,y)": Palette[1], "linear(x)": Palette[2], "sort": Palette[2], "zzz": Palette[len(Palette)-1]}
	for name, want := range cases {
		if got := c(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

func TestCharts(t *testing.T) {
	var sb strings.Builder
	err := FilesChart{Title: "t <1>", Groups: []string{"g1", "g2"}, Series: []string{"a", "b"}, Color: func(string) string { return "#000" },
		Value: func(g, s string) (float64, float64, bool) { return 50, 2, !(g == "g2" && s == "b") }}.Write(&sb)
	if err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if !strings.HasPrefix(out, "<svg") || !strings.HasSuffix(out, "</svg>\n") || strings.Count(out, "<title>") != 3 || !strings.Contains(out, "t &lt;1&gt;") {
		t.Fatalf("bars chart:\n%s", out)
	}
	sb.Reset()
	err = BoxesChart{Title: "b", Panels: []Panel{{Name: "p", Boxes: []Rect{{0, 0.5, 0, 1}, {0.5, 1, 0, 1}}}}, Color: func(string) string { return "#111" }}.Write(&sb)
	if err != nil || strings.Count(sb.String(), `fill-opacity="0.08"`) != 2 {
		t.Fatalf("boxes chart (%v):\n%s", err, sb.String())
	}
}
