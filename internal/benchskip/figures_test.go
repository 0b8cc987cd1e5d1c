package benchskip_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/internal/benchskip"
)

// TestRecordFigures runs the issue-7 target configuration and writes
// figures.txt, figures.json, files.svg and boxes.svg into the directory named
// by BENCHSKIP_FIGURES. It is skipped unless that variable is set:
//
//	BENCHSKIP_FIGURES=/tmp/fig go test ./benchskip -run TestRecordFigures -v -timeout 60m
//
// BENCHSKIP_SF (default 1), BENCHSKIP_FILES (default 1000), BENCHSKIP_QUERIES
// (default 100), BENCHSKIP_DATASET (default lineitem) and BENCHSKIP_WORKLOADS
// (comma list) adjust it.
func TestRecordFigures(t *testing.T) {
	dir := os.Getenv("BENCHSKIP_FIGURES")
	if dir == "" {
		t.Skip("set BENCHSKIP_FIGURES=<dir> to record the benchmark figures")
	}
	num := func(name string, def float64) float64 {
		if s := os.Getenv(name); s != "" {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, s, err)
			}
			return v
		}
		return def
	}
	cfg := benchskip.Config{
		Dataset:     os.Getenv("BENCHSKIP_DATASET"),
		ScaleFactor: num("BENCHSKIP_SF", 1),
		Rows:        int(num("BENCHSKIP_ROWS", 0)),
		Files:       int(num("BENCHSKIP_FILES", 1000)),
		Queries:     int(num("BENCHSKIP_QUERIES", 100)),
		Workloads:   []string{"box2-1%", "box2-0.1%", "box2-10%", "box4-1%", "unclustered-1%", "point-present", "point-absent+bloom"},
	}
	if w := os.Getenv("BENCHSKIP_WORKLOADS"); w != "" {
		cfg.Workloads = strings.Split(w, ",")
	}
	start := time.Now()
	res, err := benchskip.Run(context.Background(), cfg, func(stage string, done, total int) {
		if done == total {
			t.Logf("%7.1fs %s done", time.Since(start).Seconds(), stage)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, fn func(f *os.File) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("figures.txt", func(f *os.File) error { return res.WriteText(f) })
	write("figures.json", func(f *os.File) error { return res.WriteJSON(f) })
	write("files.svg", func(f *os.File) error { return res.WriteSVG(f, benchskip.ChartFiles) })
	write("boxes.svg", func(f *os.File) error { return res.WriteSVG(f, benchskip.ChartBoxes) })
	var sb strings.Builder
	if err := res.WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + sb.String())
	for _, l := range res.Layouts {
		t.Logf("layout %-10s build %.1fs, stats %.1fs", l.Name, l.BuildSeconds, l.StatsSeconds)
	}
	fmt.Fprintf(os.Stderr, "total %.1fs\n", time.Since(start).Seconds())
}
