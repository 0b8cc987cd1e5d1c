package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// TestFaultyStore runs the CLI against S3 (versitygw) through a proxy that injects
// 503 answers, connection resets, response bodies cut mid-way and responses lost after
// the request was applied (issue 31 item 6). First each kind of fault on the path it
// used to break (a lost answer to a data file's or a commit's conditional PUT, a log
// file or data file cut in transit, a store that keeps failing); then appends, DELETEs
// and OPTIMIZE at once with faults on a share of all requests, every command retried on
// exit status 75 as a scheduler would. Every command either succeeds or exits 75
// (never 1: no storage failure is reported as corrupt data), and the table then holds
// exactly the rows the operations' effects say: none lost, none duplicated.
func TestFaultyStore(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	base := cloudtest.S3.Location(t) // the bucket, a fresh prefix
	prefix := strings.TrimPrefix(base[:strings.IndexByte(base, '?')], "s3://"+cloudtest.Bucket+"/")
	p := cloudtest.NewProxy(t, ep, cloudtest.ProxyOptions{})
	loc := cloudtest.S3URL(p.URL, cloudtest.Bucket, prefix)
	t.Setenv("AWS_MAX_ATTEMPTS", "3") // the SDK gives up sooner: more failures reach the CLI
	dir := t.TempDir()

	csv := func(name string, ids []int64) string {
		var b strings.Builder
		b.WriteString("id,grp,v\n")
		for _, id := range ids {
			fmt.Fprintf(&b, "%d,g%d,%d\n", id, id%4, id*10)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	span := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	// cmd runs one command with a bound on its time (a hung request is a failure too).
	cmd := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args)
		return code, out.String(), errb.String()
	}
	must := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := cmd(args...)
		if code != want {
			t.Fatalf("skiplake %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), code, want, errs)
		}
		if strings.Contains(errs, "corrupt") {
			t.Fatalf("skiplake %s reports a storage failure as corrupt data: %s", strings.Join(args, " "), errs)
		}
		return out
	}
	ids := func() []int64 {
		t.Helper()
		out := must(0, "scan", loc, "--columns", "id", "--format", "jsonl")
		var got []int64
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var r struct{ ID int64 }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			got = append(got, r.ID)
		}
		slices.Sort(got)
		return got
	}
	once := func(kind cloudtest.Fault, match func(r *http.Request) bool) {
		var done bool
		var mu sync.Mutex
		p.SetFault(func(r *http.Request) cloudtest.Fault {
			mu.Lock()
			defer mu.Unlock()
			if !done && match(r) {
				done = true
				return kind
			}
			return cloudtest.NoFault
		})
	}
	conditionalPut := func(log bool) func(r *http.Request) bool {
		return func(r *http.Request) bool {
			return r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" && strings.Contains(r.URL.Path, "/_delta_log/") == log &&
				!strings.Contains(r.URL.Path, "conditional-probe")
		}
	}
	getOf := func(suffix string) func(r *http.Request) bool {
		return func(r *http.Request) bool {
			return cloudtest.Kind(r) == "GET" && strings.HasSuffix(r.URL.Path, suffix)
		}
	}

	want := span(0, 300) // the seed
	must(0, "append", loc, csv("seed.csv", want), "--partition-by", "grp")

	// Phase 1: each fault where it used to break a command.
	once(cloudtest.FaultLoseResponse, conditionalPut(false))
	must(0, "append", loc, csv("d1.csv", span(1000, 20)), "--txn-app-id", "det", "--txn-version", "1")
	want = append(want, span(1000, 20)...)
	once(cloudtest.FaultLoseResponse, conditionalPut(true))
	must(0, "append", loc, csv("d2.csv", span(2000, 20)), "--txn-app-id", "det", "--txn-version", "2")
	want = append(want, span(2000, 20)...)
	once(cloudtest.FaultCutBody, getOf(".json"))
	if out := must(0, "count", loc); !strings.Contains(out, strconv.Itoa(len(want))) {
		t.Fatalf("count after a log file was cut in transit: %s, want %d", out, len(want))
	}
	once(cloudtest.FaultCutBody, getOf(".parquet"))
	if got := ids(); !slices.Equal(got, sorted(want)) {
		t.Fatalf("scan after a data file was cut in transit: %d ids, want %d", len(got), len(want))
	}
	p.SetFault(func(*http.Request) cloudtest.Fault { return cloudtest.Fault503 })
	must(exitTempFail, "append", loc, csv("d3.csv", span(3000, 20)), "--txn-app-id", "det", "--txn-version", "3")
	must(exitTempFail, "scan", loc)
	p.SetFault(func(r *http.Request) cloudtest.Fault {
		if getOf(".parquet")(r) {
			return cloudtest.FaultCutBody
		}
		return cloudtest.NoFault
	})
	must(exitTempFail, "scan", loc)
	p.SetFault(nil)
	if out := must(0, "append", loc, csv("d3.csv", span(3000, 20)), "--txn-app-id", "det", "--txn-version", "3"); !strings.HasPrefix(out, "appended") {
		t.Fatalf("the retry of an append that exited 75 without landing: %s", out)
	}
	want = append(want, span(3000, 20)...)
	if got := ids(); !slices.Equal(got, sorted(want)) {
		t.Fatalf("after the deterministic faults: %d ids, want %d", len(got), len(want))
	}

	// Phase 2: concurrent appends, DELETE and OPTIMIZE with faults on 10% of requests,
	// and two attempts per request in the SDK: many failures reach the commands, which
	// exit 75 and are run again.
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	var (
		mu    sync.Mutex
		rng   = rand.New(rand.NewPCG(31, 6))
		exits = map[string]map[int]int{}
	)
	p.SetFault(func(r *http.Request) cloudtest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() >= 0.10 {
			return cloudtest.NoFault
		}
		k := []cloudtest.Fault{cloudtest.Fault503, cloudtest.FaultReset}
		if r.Method == http.MethodGet {
			k = append(k, cloudtest.FaultCutBody, cloudtest.FaultCutBody)
		} else {
			k = append(k, cloudtest.FaultLoseResponse, cloudtest.FaultLoseResponse)
		}
		return k[rng.IntN(len(k))]
	})
	// retry runs a command until it succeeds, retrying on 75 only; any other status
	// fails the test.
	retry := func(args ...string) string {
		for attempt := 1; ; attempt++ {
			code, out, errs := cmd(args...)
			mu.Lock()
			if exits[args[0]] == nil {
				exits[args[0]] = map[int]int{}
			}
			exits[args[0]][code]++
			mu.Unlock()
			switch {
			case code == 0:
				return out
			case code != exitTempFail:
				t.Errorf("skiplake %s: exit %d (want 0 or 75)\nstderr: %s", strings.Join(args, " "), code, errs)
				return ""
			case strings.Contains(errs, "corrupt"):
				t.Errorf("skiplake %s reports a storage failure as corrupt data: %s", strings.Join(args, " "), errs)
			case attempt == 12:
				t.Errorf("skiplake %s: still 75 after %d attempts: %s", strings.Join(args, " "), attempt, errs)
				return ""
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	const appenders, appends = 3, 4
	type batch struct {
		app     string
		version int
		file    string
	}
	var batches []batch
	for w := range appenders {
		for k := 1; k <= appends; k++ {
			b := span(int64(10_000*(w+1)+100*k), 30)
			batches = append(batches, batch{fmt.Sprintf("w%d", w), k, csv(fmt.Sprintf("w%d-%d.csv", w, k), b)})
			want = append(want, b...)
		}
	}
	deletes := []string{"id >= 0 AND id < 40", "id >= 100 AND id < 140", "id >= 200 AND id < 240"}
	var wg sync.WaitGroup
	appendsDone := make(chan struct{})
	var appendWG sync.WaitGroup
	for w := range appenders {
		appendWG.Go(func() {
			for _, b := range batches[w*appends : (w+1)*appends] {
				retry("append", loc, b.file, "--txn-app-id", b.app, "--txn-version", strconv.Itoa(b.version))
			}
		})
	}
	wg.Go(func() {
		appendWG.Wait()
		close(appendsDone)
	})
	wg.Go(func() {
		for _, where := range deletes {
			retry("delete", loc, "--where", where)
		}
	})
	wg.Go(func() {
		for runs := 0; runs < 6; runs++ {
			select {
			case <-appendsDone:
				return
			default:
			}
			retry("optimize", loc, "--quiet")
		}
	})
	wg.Wait()
	p.SetFault(nil)
	faults := p.Faults()
	t.Logf("faults injected: %v; exit statuses per command: %v", faults, exits)
	for _, f := range []cloudtest.Fault{cloudtest.Fault503, cloudtest.FaultReset, cloudtest.FaultCutBody, cloudtest.FaultLoseResponse} {
		if faults[f] == 0 {
			t.Errorf("no %s fault was injected: the run tested less than it claims", f)
		}
	}

	// Reconcile without faults: every append again (a retry of one that landed is
	// skipped, by its txn version), every DELETE again (deletes nothing more).
	for _, b := range batches {
		out := must(0, "append", loc, b.file, "--txn-app-id", b.app, "--txn-version", strconv.Itoa(b.version))
		if !strings.HasPrefix(out, "skipped") {
			t.Errorf("append %s/%d had not landed although it exited 0: %s", b.app, b.version, out)
		}
	}
	for _, where := range deletes {
		must(0, "delete", loc, "--where", where)
	}
	var kept []int64
	for _, id := range want {
		if id < 300 && id%100 < 40 {
			continue
		}
		kept = append(kept, id)
	}
	got := ids()
	if !slices.Equal(got, sorted(kept)) {
		lost, dup := diffIDs(got, sorted(kept))
		t.Fatalf("the table holds %d ids, want %d: %d lost (first %v), %d extra or duplicated (first %v)", len(got), len(kept), len(lost), first(lost), len(dup), first(dup))
	}
	// The log is gap-free and every version reads.
	tb, err := table.OpenURL(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := tb.Storage().List(context.Background(), "_delta_log/", "")
	if err != nil {
		t.Fatal(err)
	}
	var versions []int64
	for _, o := range objs {
		name := strings.TrimPrefix(o.Path, "_delta_log/")
		if strings.HasSuffix(name, ".json") && len(name) == 25 {
			v, _ := strconv.ParseInt(name[:20], 10, 64)
			versions = append(versions, v)
		}
	}
	for i, v := range versions {
		if v != int64(i) {
			t.Fatalf("log versions are not gap-free: position %d holds %s", i, log.CommitPath(v))
		}
	}
}

func sorted(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// diffIDs returns the ids of want missing from got and the ids of got beyond want
// (extra or duplicated); both sorted.
func diffIDs(got, want []int64) (lost, extra []int64) {
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			lost = append(lost, want[j])
			j++
		default:
			i++
			j++
		}
	}
	return lost, extra
}

func first(ids []int64) []int64 { return ids[:min(len(ids), 5)] }
