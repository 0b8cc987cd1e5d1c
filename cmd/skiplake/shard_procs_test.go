package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/table"
)

// TestShardProcessesLocal: shardProcesses on the local file system.
func TestShardProcessesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	shardProcesses(t, filepath.Join(t.TempDir(), "t"))
}

// TestS3ShardProcesses: shardProcesses against S3 (versitygw in CI; skipped when
// no endpoint is configured, failed when CI says it must run).
func TestS3ShardProcesses(t *testing.T) {
	shardProcesses(t, cloudtest.S3.Location(t))
}

// shardProcesses: 4 OS processes (this test binary re-executed as the CLI) each
// run `optimize --version V --shard K/4` of one plan at once, while a fifth
// process appends to the table three times: every process succeeds, every
// shard commits its bins, no file is removed twice, every planned file is
// removed once, the rows are the table's rows at V plus the appended ones, and
// the log's versions are gap-free.
func shardProcesses(t *testing.T, loc string) {
	dir := t.TempDir()
	const parts, appends, rows = 4, 4, 25
	csv := func(name string, from int) string {
		var b strings.Builder
		b.WriteString("id,part,v\n")
		for i := from; i < from+rows; i++ {
			fmt.Fprintf(&b, "%d,p%d,%d\n", i, i%parts, i*7)
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		return p
	}
	var want []int64
	for k := range appends {
		from := k * 1000
		code, _, errs := cli(t, "append", loc, csv(fmt.Sprintf("seed%d.csv", k), from), "--partition-by", "part", "--quiet")
		require.Equal(t, 0, code, errs)
		for i := from; i < from+rows; i++ {
			want = append(want, int64(i))
		}
	}
	const version = appends - 1
	planArgs := []string{"--version", strconv.Itoa(version), "--target-size", "1MiB", "--quiet"}
	code, out, errs := cli(t, append([]string{"optimize", loc, "--plan", "--format", "json"}, planArgs...)...)
	require.Equal(t, 0, code, errs)
	var plan struct {
		NumBins    int
		NumFiles   int
		Partitions []struct {
			Bins []struct{ Files []struct{ Path string } }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Equal(t, parts, plan.NumBins, "one bin per partition")
	planned := map[string]bool{}
	for _, p := range plan.Partitions {
		for _, b := range p.Bins {
			for _, f := range b.Files {
				planned[f.Path] = true
			}
		}
	}
	require.Len(t, planned, parts*appends)

	type proc struct {
		name string
		cmds [][]string
		outs []string
	}
	var procs []*proc
	for k := range 4 {
		procs = append(procs, &proc{name: fmt.Sprintf("shard %d/4", k),
			cmds: [][]string{append([]string{"optimize", loc, "--shard", fmt.Sprintf("%d/4", k), "--format", "json"}, planArgs...)}})
	}
	appender := &proc{name: "appender"}
	for k := range 3 {
		from := 100_000 + k*1000
		appender.cmds = append(appender.cmds, []string{"append", loc, csv(fmt.Sprintf("new%d.csv", k), from), "--quiet"})
		for i := from; i < from+rows; i++ {
			want = append(want, int64(i))
		}
	}
	procs = append(procs, appender)
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() {
			for _, args := range p.cmds {
				cmd := childCLI(t, args...)
				var so, se bytes.Buffer
				cmd.Stdout, cmd.Stderr = &so, &se
				err := cmd.Run()
				if err != nil {
					t.Errorf("%s: %v: %v\n%s%s", p.name, args, err, so.String(), se.String())
					return
				}
				p.outs = append(p.outs, so.String())
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Every shard committed its bin (one each: 4 bins, 4 shards), at distinct
	// versions.
	var shardVersions []int64
	removedByShards := 0
	for _, p := range procs[:4] {
		var res struct {
			Metrics struct {
				Versions        []int64
				NumRemovedFiles int
			}
		}
		require.NoError(t, json.Unmarshal([]byte(p.outs[0]), &res), "%s: %s", p.name, p.outs[0])
		require.NotEmpty(t, res.Metrics.Versions, "%s committed nothing: %s", p.name, p.outs[0])
		shardVersions = append(shardVersions, res.Metrics.Versions...)
		removedByShards += res.Metrics.NumRemovedFiles
	}
	slices.Sort(shardVersions)
	require.Len(t, slices.Compact(slices.Clone(shardVersions)), len(shardVersions), "shards report the same version twice: %v", shardVersions)
	require.Equal(t, len(planned), removedByShards, "the shards removed every planned file once")

	ctx := context.Background()
	tb, err := table.OpenURL(ctx, loc)
	require.NoError(t, err)
	res, err := tb.ReadAll(ctx, table.WithColumns("id"))
	require.NoError(t, err)
	defer res.Release()
	var got []int64
	for _, c := range res.Column(0).Data().Chunks() {
		for i := range c.Len() {
			v, err := strconv.ParseInt(c.ValueStr(i), 10, 64)
			require.NoError(t, err)
			got = append(got, v)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got, "rows lost or duplicated")

	// The log: versions 0..latest without a gap; no file removed twice; every
	// planned file removed once, by the shards' commits.
	objs, err := tb.Storage().List(ctx, "_delta_log/", "")
	require.NoError(t, err)
	var commits []int64
	for _, o := range objs {
		name := strings.TrimPrefix(o.Path, "_delta_log/")
		if strings.HasSuffix(name, ".json") && len(name) == 25 {
			if v, err := strconv.ParseInt(name[:20], 10, 64); err == nil {
				commits = append(commits, v)
			}
		}
	}
	slices.Sort(commits)
	for i, v := range commits {
		require.Equal(t, int64(i), v, "log versions are not gap-free: %v", commits)
	}
	require.Equal(t, int64(version+1+4+3), int64(len(commits)), "commits: seed appends, one per shard, three appends")
	removedBy := map[string]int64{}
	for _, v := range commits {
		data, err := tb.Storage().Get(ctx, fmt.Sprintf("_delta_log/%020d.json", v))
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var a struct {
				Remove *struct{ Path string }
			}
			require.NoError(t, json.Unmarshal([]byte(line), &a))
			if a.Remove == nil {
				continue
			}
			if prev, ok := removedBy[a.Remove.Path]; ok {
				t.Fatalf("file %s removed twice, at versions %d and %d", a.Remove.Path, prev, v)
			}
			removedBy[a.Remove.Path] = v
			if !planned[a.Remove.Path] {
				t.Errorf("version %d removes %s, which the plan does not name", v, a.Remove.Path)
			}
			if !slices.Contains(shardVersions, v) {
				t.Errorf("version %d, not a shard's, removes %s", v, a.Remove.Path)
			}
		}
	}
	require.Len(t, removedBy, len(planned), "every planned file removed once")
}
