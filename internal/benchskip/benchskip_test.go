package benchskip_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/benchskip"
)

// testRows is the size knob of the property tests.
func testRows() int {
	if testing.Short() {
		return 12_000
	}
	return 30_000
}

func run(t *testing.T, cfg benchskip.Config) *benchskip.Result {
	t.Helper()
	res, err := benchskip.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  benchskip.Config
		want []string // substrings of the error; none means valid
	}{
		{"zero value is valid", benchskip.Config{}, nil},
		{"synthetic defaults are valid", benchskip.Config{Dataset: "synthetic"}, nil},
		{"rejects unknown dataset", benchskip.Config{Dataset: "tpcds"}, []string{`Dataset "tpcds"`}},
		{"rejects negative sizes, all reported at once", benchskip.Config{Files: -1, RowGroups: -2, Queries: -3},
			[]string{"Files -1", "RowGroups -2", "Queries -3"}},
		{"rejects unknown and repeated columns", benchskip.Config{Columns: []string{"l_partkey", "nope", "l_partkey"}},
			[]string{`Columns[1] "nope"`, `Columns[2] "l_partkey" is repeated`}},
		{"rejects more than four clustering columns", benchskip.Config{Columns: []string{"l_partkey", "l_suppkey", "l_tax", "l_discount", "l_quantity"}},
			[]string{"5 clustering columns"}},
		{"rejects unclustered column that is clustered", benchskip.Config{Columns: []string{"l_partkey"}, Unclustered: "l_partkey"},
			[]string{"is a clustering column"}},
		{"rejects unknown layout", benchskip.Config{Layouts: []string{"hilbert", "peano"}}, []string{`Layouts[1] "peano"`}},
		{"rejects box wider than the clustering", benchskip.Config{Columns: []string{"l_partkey"}, Workloads: []string{"box2-1%"}},
			[]string{"needs 2 clustering columns"}},
		{"rejects malformed workload", benchskip.Config{Workloads: []string{"box2-1"}}, []string{"Workloads[0]"}},
		{"rejects more files than rows", benchskip.Config{Dataset: "synthetic", Rows: 100, Files: 50, RowGroups: 8}, []string{"exceeds the 100 rows"}},
		{"rejects bad scale factor", benchskip.Config{ScaleFactor: -1}, []string{"ScaleFactor -1"}},
		{"rejects bad Bloom FPP", benchskip.Config{BloomFPP: 1.5}, []string{"BloomFPP 1.5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, benchskip.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "benchskip: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		name string
		want benchskip.Workload
		ok   bool
	}{
		{"box2-1%", benchskip.Workload{Kind: benchskip.WorkloadBox, Dims: 2, Selectivity: 0.01}, true},
		{"box4-0.1%", benchskip.Workload{Kind: benchskip.WorkloadBox, Dims: 4, Selectivity: 0.001}, true},
		{"unclustered-10%", benchskip.Workload{Kind: benchskip.WorkloadUnclustered, Selectivity: 0.1}, true},
		{"point-present", benchskip.Workload{Kind: benchskip.WorkloadPoint}, true},
		{"point-absent+bloom", benchskip.Workload{Kind: benchskip.WorkloadAbsent, Bloom: true}, true},
		{"box2-0.7%", benchskip.Workload{Kind: benchskip.WorkloadBox, Dims: 2, Selectivity: 0.007}, true},
		{"unclustered-33.3%", benchskip.Workload{Kind: benchskip.WorkloadUnclustered, Selectivity: 0.333}, true},
		{"box5-1%", benchskip.Workload{}, false},
		{"box0-1%", benchskip.Workload{}, false},
		{"box02-1%", benchskip.Workload{}, false},
		{"box2-0%", benchskip.Workload{}, false},
		{"box2-101%", benchskip.Workload{}, false},
		{"box2-1.0%", benchskip.Workload{}, false},
		{"box2-NaN%", benchskip.Workload{}, false},
		{"unclustered+bloom", benchskip.Workload{}, false},
		{"", benchskip.Workload{}, false},
	}
	for _, tc := range tests {
		got, err := benchskip.ParseWorkload(tc.name)
		if tc.ok != (err == nil) {
			t.Errorf("ParseWorkload(%q) error = %v, want ok=%v", tc.name, err, tc.ok)
			continue
		}
		if !tc.ok {
			if !errors.Is(err, benchskip.ErrUnknownWorkload) {
				t.Errorf("ParseWorkload(%q) error %v does not wrap ErrUnknownWorkload", tc.name, err)
			}
			continue
		}
		same := got.Kind == tc.want.Kind && got.Dims == tc.want.Dims && got.Bloom == tc.want.Bloom &&
			math.Abs(got.Selectivity-tc.want.Selectivity) < 1e-15
		if !same || got.String() != tc.name {
			t.Errorf("ParseWorkload(%q) = %+v (%s), want %+v", tc.name, got, got, tc.want)
		}
	}
}

func FuzzParseWorkload(f *testing.F) {
	for _, s := range append(benchskip.DefaultWorkloads, "box2-", "box-1%", "unclustered-1e2%", "box1-0.0001%", "point") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := benchskip.ParseWorkload(s)
		if err != nil {
			if !errors.Is(err, benchskip.ErrUnknownWorkload) {
				t.Fatalf("error %v does not wrap ErrUnknownWorkload", err)
			}
			return
		}
		if w.String() != s {
			t.Fatalf("ParseWorkload(%q).String() = %q", s, w.String())
		}
		if w.Selectivity < 0 || w.Selectivity > 1 || w.Dims < 0 || w.Dims > benchskip.MaxClusteringColumns {
			t.Fatalf("ParseWorkload(%q) = %+v out of range", s, w)
		}
	})
}

// TestRunProperties checks the benchmark's promises on synthetic data
// clustered on skewed and correlated columns.
func TestRunProperties(t *testing.T) {
	res := run(t, benchskip.Config{
		Dataset: "synthetic", Rows: testRows(), Files: 30, Queries: 40, Seed: 11, PerQuery: true,
	})
	if len(res.Cells) != len(res.Layouts)*len(res.Workloads) || len(res.Layouts) != len(benchskip.DefaultLayouts) {
		t.Fatalf("%d cells for %d layouts × %d workloads", len(res.Cells), len(res.Layouts), len(res.Workloads))
	}
	for _, c := range res.Cells {
		if c.CrossCheckMismatches != 0 {
			t.Errorf("%s/%s: %d cross-check mismatches between skipping and the min/max box test", c.Layout, c.Workload, c.CrossCheckMismatches)
		}
		for _, q := range c.PerQuery {
			if q.FilesRead < q.LowerBound {
				t.Errorf("%s/%s: %q read %d files, below the lower bound %d", c.Layout, c.Workload, q.Predicate, q.FilesRead, q.LowerBound)
			}
			if q.RowGroupsRead > q.FilesRead*res.Config.RowGroups {
				t.Errorf("%s/%s: %d row groups read from %d files", c.Layout, c.Workload, q.RowGroupsRead, q.FilesRead)
			}
		}
		if c.FilesReadPct < 0 || c.FilesReadPct > 100 || c.BytesReadPct < 0 || c.BytesReadPct > 100.0001 {
			t.Errorf("%s/%s: percentages out of range: %+v", c.Layout, c.Workload, c)
		}
	}
	for _, wl := range res.Workloads {
		kd, ins := res.Cell(benchskip.LayoutKDTree, wl), res.Cell(benchskip.LayoutInsertion, wl)
		if strings.HasPrefix(wl, "box") && kd.FilesRead > ins.FilesRead {
			t.Errorf("%s: k-d tree reads %.1f files, insertion order %.1f", wl, kd.FilesRead, ins.FilesRead)
		}
	}
	// Skewed (zipf, lognormal) and correlated (x, y) columns: rank
	// normalisation must beat interleaving raw bytes.
	for _, wl := range []string{"box1-1%", "box2-1%", "box2-10%"} {
		z, raw := res.Cell(benchskip.LayoutZOrder, wl), res.Cell(benchskip.LayoutZOrderRaw, wl)
		if z.FilesRead >= raw.FilesRead {
			t.Errorf("%s: Z-order on ranks reads %.1f files, raw Z-order %.1f", wl, z.FilesRead, raw.FilesRead)
		}
	}
	// Hilbert is at least as good as Z-order on ranks for 2-column boxes, on
	// average over selectivities, with 10% tolerance.
	var h, z float64
	for _, wl := range []string{"box2-0.1%", "box2-1%", "box2-10%"} {
		h += res.Cell(benchskip.LayoutHilbert, wl).FilesRead
		z += res.Cell(benchskip.LayoutZOrder, wl).FilesRead
	}
	if h > 1.1*z {
		t.Errorf("2-column boxes: Hilbert reads %.1f files in total, Z-order on ranks %.1f", h, z)
	}
	// Bloom filters must cut point lookups of a UUID column (stats cannot).
	for _, l := range benchskip.DefaultLayouts {
		with, without := res.Cell(l, "point-absent+bloom"), res.Cell(l, "point-absent")
		if with.FilesRead >= without.FilesRead/4 {
			t.Errorf("%s: absent-key lookups read %.1f files with Bloom filters, %.1f without", l, with.FilesRead, without.FilesRead)
		}
	}
}

func TestRunLineitemSkewedDatesBeatRawZOrder(t *testing.T) {
	// Dates (4-byte encodings) dominate raw interleaving over 8-byte keys, so
	// raw Z-order degenerates into a sort on the dates; ranks do not.
	res := run(t, benchskip.Config{Rows: testRows(), Files: 100, Queries: 30, Seed: 2,
		Columns:   []string{"l_shipdate", "l_partkey"},
		Workloads: []string{"box2-1%"}, Layouts: []string{benchskip.LayoutZOrderRaw, benchskip.LayoutZOrder, benchskip.LayoutKDTree}})
	z, raw := res.Cell(benchskip.LayoutZOrder, "box2-1%"), res.Cell(benchskip.LayoutZOrderRaw, "box2-1%")
	t.Logf("files read: zorder %.1f, zorder-raw %.1f, kdtree %.1f", z.FilesRead, raw.FilesRead, res.Cell(benchskip.LayoutKDTree, "box2-1%").FilesRead)
	if z.FilesRead >= raw.FilesRead {
		t.Errorf("Z-order on ranks reads %.1f files, raw %.1f", z.FilesRead, raw.FilesRead)
	}
}

func TestRunIsDeterministic(t *testing.T) {
	cfg := benchskip.Config{Dataset: "synthetic", Rows: 5000, Files: 10, Queries: 5, Seed: 3}
	a, b := run(t, cfg), run(t, cfg)
	for i := range a.Cells {
		ca, cb := a.Cells[i], b.Cells[i]
		ca.PlanMicros, cb.PlanMicros = 0, 0
		if ca.Layout != cb.Layout || ca.FilesRead != cb.FilesRead || ca.RowGroupsRead != cb.RowGroupsRead || ca.RatioP90 != cb.RatioP90 || ca.MatchingRows != cb.MatchingRows {
			t.Fatalf("cell %d differs between equal runs: %+v vs %+v", i, ca, cb)
		}
	}
	c := run(t, benchskip.Config{Dataset: "synthetic", Rows: 5000, Files: 10, Queries: 5, Seed: 4})
	if c.Cells[0].MatchingRows == a.Cells[0].MatchingRows && c.Cells[1].MatchingRows == a.Cells[1].MatchingRows {
		t.Errorf("a different seed gave the same queries")
	}
}

func TestRunHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := benchskip.Run(ctx, benchskip.Config{Dataset: "synthetic", Rows: 2000, Files: 4}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestRunReportsProgress(t *testing.T) {
	stages := map[string]int{}
	_, err := benchskip.Run(context.Background(), benchskip.Config{Dataset: "synthetic", Rows: 2000, Files: 4, Queries: 2, Layouts: []string{"sort"}},
		func(stage string, done, total int) {
			if done > total {
				t.Errorf("%s: done %d > total %d", stage, done, total)
			}
			stages[stage] = done
		})
	if err != nil {
		t.Fatal(err)
	}
	if stages["generate"] != 1 || stages["layout sort"] != 4 {
		t.Errorf("progress stages %v lack generate=1 and layout sort=4", stages)
	}
}

func TestOutputs(t *testing.T) {
	res := run(t, benchskip.Config{Dataset: "synthetic", Rows: 4000, Files: 8, Queries: 3, Workloads: []string{"box2-1%", "point-present"}})
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"files read %", "ratio gmean", "box2-1%", "point-present", "0 mismatches"}, benchskip.DefaultLayouts...) {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back benchskip.Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Cells) != len(res.Cells) || back.Cells[3].FilesRead != res.Cells[3].FilesRead || back.Config.Files != 8 {
		t.Errorf("JSON round trip lost data")
	}
	for _, chart := range []string{benchskip.ChartFiles, benchskip.ChartBoxes} {
		var svg bytes.Buffer
		if err := res.WriteSVG(&svg, chart); err != nil {
			t.Fatal(err)
		}
		rects := wellFormedRects(t, svg.Bytes())
		min := len(res.Cells) // files chart: one bar per cell
		if chart == benchskip.ChartBoxes {
			min = len(res.Layouts) * res.Config.Files
		}
		if rects < min {
			t.Errorf("%s chart has %d rects, want ≥ %d", chart, rects, min)
		}
	}
	if err := res.WriteSVG(io.Discard, "pie"); !errors.Is(err, benchskip.ErrUnknownChart) {
		t.Errorf("unknown chart: err = %v", err)
	}
	one := run(t, benchskip.Config{Dataset: "synthetic", Rows: 2000, Files: 4, Queries: 1, Columns: []string{"x"}, Layouts: []string{"sort"}})
	if err := one.WriteSVG(io.Discard, benchskip.ChartBoxes); !errors.Is(err, benchskip.ErrUnknownChart) {
		t.Errorf("boxes chart with one clustering column: err = %v", err)
	}
}

// wellFormedRects parses an SVG document and counts its rect elements.
func wellFormedRects(t *testing.T, doc []byte) int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	n := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			n++
		}
	}
}

func TestGeneratorsReleaseMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	li, err := benchskip.GenerateLineitem(mem, 0.001, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if li.NumRows() != 6001 || !li.Schema().Equal(benchskip.LineitemSchema()) {
		t.Errorf("lineitem: %d rows, schema %v", li.NumRows(), li.Schema())
	}
	li.Release()
	syn, err := benchskip.GenerateSynthetic(mem, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if syn.NumRows() != 1000 || !syn.Schema().Equal(benchskip.SyntheticSchema()) {
		t.Errorf("synthetic: %d rows, schema %v", syn.NumRows(), syn.Schema())
	}
	syn.Release()
	if _, err := benchskip.GenerateLineitem(mem, 0, 0, 1); !errors.Is(err, benchskip.ErrInvalidConfig) {
		t.Errorf("scale factor 0: err = %v", err)
	}
	if _, err := benchskip.GenerateSynthetic(mem, 0, 1); !errors.Is(err, benchskip.ErrInvalidConfig) {
		t.Errorf("0 rows: err = %v", err)
	}
}

func TestRunParquetBytes(t *testing.T) {
	cfg := benchskip.Config{Rows: 6000, Files: 6, RowGroups: 2, Queries: 5, ParquetBytes: true,
		Workloads: []string{"box2-10%", "unclustered-1%"}, Layouts: []string{benchskip.LayoutInsertion, benchskip.LayoutHilbert}}
	res := run(t, cfg)
	cfg.ParquetBytes = false
	est := run(t, cfg)
	if res.TotalBytes <= 0 || res.TotalBytes >= est.TotalBytes {
		t.Errorf("Parquet total %d bytes, Arrow estimate %d: zstd Parquet should be smaller", res.TotalBytes, est.TotalBytes)
	}
	for _, c := range res.Cells {
		e := est.Cell(c.Layout, c.Workload)
		if c.FilesRead != e.FilesRead {
			t.Errorf("%s/%s: files read %.1f with Parquet sizes, %.1f without", c.Layout, c.Workload, c.FilesRead, e.FilesRead)
		}
		if c.BytesReadPct <= 0 || c.BytesReadPct > 100.0001 || (c.FilesReadPct == 100 && c.BytesReadPct < 99.999) {
			t.Errorf("%s/%s: %.2f%% bytes for %.2f%% files", c.Layout, c.Workload, c.BytesReadPct, c.FilesReadPct)
		}
	}
}
