package main

import (
	"context"
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
