package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// TestS3ConcurrentProcesses: 8 skiplake processes append to one table in S3 at once
// (4 appends each) while another process runs OPTIMIZE over and over beside them. The
// commits are coordinated only by conditional creates of the log's version files: no
// row is lost or duplicated, every append reports its own version, OPTIMIZE never
// fails, and the log's versions are gap-free.
func TestS3ConcurrentProcesses(t *testing.T) {
	loc := cloudtest.S3.Location(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "skiplake")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const procs, appends, rows = 8, 4, 50
	csv := func(name string, from int) string {
		var b strings.Builder
		b.WriteString("id,part,v\n")
		for i := from; i < from+rows; i++ {
			fmt.Fprintf(&b, "%d,p%d,%d.5\n", i, i%4, i)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := []int64{}
	seed := csv("seed.csv", 1_000_000)
	for i := 1_000_000; i < 1_000_000+rows; i++ {
		want = append(want, int64(i))
	}
	if code, _, errs := cli(t, "append", loc, seed, "--partition-by", "part"); code != 0 {
		t.Fatalf("creating the table: %s", errs)
	}
	files := make([][]string, procs)
	for p := range procs {
		for k := range appends {
			from := p*10_000 + k*100
			files[p] = append(files[p], csv(fmt.Sprintf("p%d-%d.csv", p, k), from))
			for i := from; i < from+rows; i++ {
				want = append(want, int64(i))
			}
		}
	}
	versionRE := regexp.MustCompile(`version (\d+),`)
	var (
		mu       sync.Mutex
		versions []int64
		wg       sync.WaitGroup
		done     = make(chan struct{})
	)
	fail := func(format string, args ...any) { t.Errorf(format, args...) }
	for p := range procs {
		wg.Go(func() {
			for _, f := range files[p] {
				out, err := exec.Command(bin, "append", loc, f).CombinedOutput()
				if err != nil {
					fail("process %d: append %s: %v\n%s", p, f, err, out)
					return
				}
				m := versionRE.FindSubmatch(out)
				if m == nil {
					fail("process %d: no version in %q", p, out)
					return
				}
				v, _ := strconv.ParseInt(string(m[1]), 10, 64)
				mu.Lock()
				versions = append(versions, v)
				mu.Unlock()
			}
		})
	}
	optimizeRuns := 0
	var ow sync.WaitGroup
	ow.Go(func() {
		for {
			out, err := exec.Command(bin, "optimize", loc, "--target-size", "1MiB").CombinedOutput()
			if err != nil {
				fail("optimize beside the appenders: %v\n%s", err, out)
				return
			}
			optimizeRuns++
			select {
			case <-done:
				return
			default:
			}
		}
	})
	wg.Wait()
	close(done)
	ow.Wait()
	if t.Failed() {
		return
	}
	slices.Sort(versions)
	if len(slices.Compact(slices.Clone(versions))) != procs*appends {
		t.Fatalf("appends reported versions %v: not %d distinct", versions, procs*appends)
	}
	ctx := context.Background()
	tb, err := table.OpenURL(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tb.ReadAll(ctx, table.WithColumns("id"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var got []int64
	for _, c := range res.Column(0).Data().Chunks() {
		for i := 0; i < c.Len(); i++ {
			v, _ := strconv.ParseInt(c.ValueStr(i), 10, 64)
			got = append(got, v)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("table holds %d ids, want %d (lost or duplicated rows)", len(got), len(want))
	}
	objs, err := tb.Storage().List(ctx, "_delta_log/", "")
	if err != nil {
		t.Fatal(err)
	}
	var commits []int64
	for _, o := range objs {
		name := strings.TrimPrefix(o.Path, "_delta_log/")
		if strings.HasSuffix(name, ".json") && len(name) == 25 {
			v, err := strconv.ParseInt(name[:20], 10, 64)
			if err == nil {
				commits = append(commits, v)
			}
		}
	}
	for i, v := range commits {
		if v != int64(i) {
			t.Fatalf("log versions are not gap-free: position %d holds %s", i, log.CommitPath(v))
		}
	}
	if int64(len(commits)) < 1+procs*appends {
		t.Fatalf("log has %d commits, want at least %d", len(commits), 1+procs*appends)
	}
	t.Logf("%d appends by %d processes and %d OPTIMIZE runs: %d commits, %d rows", procs*appends, procs, optimizeRuns, len(commits), len(got))

	// explain on an object store reports the requests it made.
	code, out, errs := cli(t, "explain", loc, "--filter", "id = 10042")
	if code != 0 || !regexp.MustCompile(`(?m)^requests: GET [1-9]\d*, HEAD \d+, LIST [1-9]\d*, \d+ bytes read$`).MatchString(out) {
		t.Fatalf("explain on S3: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
}

// TestS3ReportsRequests: on S3, explain --format json and count --format json carry
// the requests of loading the snapshot and of the scan (the ScanReport's figures); the
// table format prints the same figures, and with the requests of opening the table
// they add up to the total; a filter that keeps one file reads one footer, one that
// keeps none reads no data file.
func TestS3ReportsRequests(t *testing.T) {
	loc := cloudtest.S3.Location(t)
	dir := t.TempDir()
	const nfiles = 4
	for f := range nfiles {
		var b strings.Builder
		b.WriteString("id,v\n")
		for i := f * 1000; i < f*1000+1000; i++ {
			fmt.Fprintf(&b, "%d,%d.5\n", i, i)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.csv", f))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := cli(t, "append", loc, p); code != 0 {
			t.Fatalf("append %d: %s", f, errs)
		}
	}

	type report struct {
		Files struct {
			Total, Kept int64
		} `json:"files"`
		Requests         *storage.RequestCounts `json:"requests"`
		SnapshotRequests *storage.RequestCounts `json:"snapshotRequests"`
	}
	explainJSON := func(filter string) report {
		t.Helper()
		code, out, errs := cli(t, "explain", loc, "--filter", filter, "--format", "json")
		if code != 0 {
			t.Fatalf("explain --format json: %s", errs)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if r.Requests == nil || r.SnapshotRequests == nil {
			t.Fatalf("explain --format json on S3 has no requests:\n%s", out)
		}
		return r
	}
	one := explainJSON("id = 2005")
	if one.Files.Total != nfiles || one.Files.Kept != 1 {
		t.Fatalf("files: %+v, want %d total, 1 kept", one.Files, nfiles)
	}
	if s := one.SnapshotRequests; s.LIST < 1 || s.GET < nfiles {
		t.Fatalf("loading the snapshot: %+v, want a LIST and a GET per commit at least", *s)
	}
	if r := one.Requests; r.GET != 1 || r.HEAD != 0 || r.LIST != 0 || r.PUT != 0 || r.BytesRead <= 0 {
		t.Fatalf("planning and footers: %+v, want the one kept file's footer in one GET", *r)
	}
	none := explainJSON("id = -1")
	if none.Files.Kept != 0 || none.Requests.Total() != 0 {
		t.Fatalf("a filter that keeps no file: files %+v, requests %+v, want none", none.Files, *none.Requests)
	}
	if *none.SnapshotRequests != *one.SnapshotRequests {
		t.Fatalf("loading the same version cost %+v, then %+v", *one.SnapshotRequests, *none.SnapshotRequests)
	}

	// The table format: the total, then its parts, the report's parts as in the JSON.
	code, out, errs := cli(t, "explain", loc, "--filter", "id = 2005")
	if code != 0 {
		t.Fatalf("explain: %s", errs)
	}
	line := regexp.MustCompile(`(?m)^(requests|  opening the table|  loading version \d+|  planning and footers): GET (\d+), HEAD (\d+), LIST (\d+), (\d+) bytes read$`)
	parts := map[string]storage.RequestCounts{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
		name := strings.TrimSpace(m[1])
		if strings.HasPrefix(name, "loading version") {
			name = "loading"
		}
		parts[name] = storage.RequestCounts{GET: n(2), HEAD: n(3), LIST: n(4), BytesRead: n(5)}
	}
	if len(parts) != 4 {
		t.Fatalf("explain prints %d request lines, want 4:\n%s", len(parts), out)
	}
	readOnly := func(c storage.RequestCounts) storage.RequestCounts {
		return storage.RequestCounts{GET: c.GET, HEAD: c.HEAD, LIST: c.LIST, BytesRead: c.BytesRead}
	}
	if got := parts["opening the table"].Add(parts["loading"]).Add(parts["planning and footers"]); got != parts["requests"] {
		t.Fatalf("the parts add up to %+v, the total is %+v:\n%s", got, parts["requests"], out)
	}
	if parts["loading"] != readOnly(*one.SnapshotRequests) || parts["planning and footers"] != readOnly(*one.Requests) {
		t.Fatalf("table format %+v differs from the JSON (%+v, %+v):\n%s", parts, *one.SnapshotRequests, *one.Requests, out)
	}

	// count --format json: the rows of one file are read; a filter every file matches is
	// answered from the log with no request.
	var cnt struct {
		Count    int64                  `json:"count"`
		Requests *storage.RequestCounts `json:"requests"`
	}
	for _, tc := range []struct {
		filter string
		rows   int64
		read   bool
	}{{"id = 2005", 1, true}, {"id >= 0", nfiles * 1000, false}} {
		code, out, errs := cli(t, "count", loc, "--filter", tc.filter, "--format", "json")
		if code != 0 {
			t.Fatalf("count: %s", errs)
		}
		if err := json.Unmarshal([]byte(out), &cnt); err != nil || cnt.Requests == nil {
			t.Fatalf("count --format json: %v:\n%s", err, out)
		}
		if cnt.Count != tc.rows || (cnt.Requests.GET > 0) != tc.read {
			t.Fatalf("count %q = %d with requests %+v; want %d rows, data read %v", tc.filter, cnt.Count, *cnt.Requests, tc.rows, tc.read)
		}
	}
}
