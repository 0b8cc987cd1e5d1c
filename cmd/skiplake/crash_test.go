package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
)

// childArgsEnv, when set in the environment of this test binary, makes it run the CLI
// with these arguments (a JSON array) instead of the tests: the tests start it as a
// child process to race real processes or to kill -9 one mid-command.
const childArgsEnv = "SKIPLAKE_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(childArgsEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, "bad", childArgsEnv, err)
			os.Exit(3)
		}
		os.Exit(run(context.Background(), &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, args))
	}
	os.Exit(m.Run())
}

// childCLI returns a command running "skiplake args..." in a child process.
func childCLI(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	js, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(js))
	return cmd
}

// runConcurrently runs one CLI child process per argument list, all at once, and
// requires every one to succeed.
func runConcurrently(t *testing.T, args [][]string) {
	t.Helper()
	cmds := make([]*exec.Cmd, len(args))
	outs := make([]*bytes.Buffer, len(args))
	for i, a := range args {
		cmds[i] = childCLI(t, a...)
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
	}
	var wg sync.WaitGroup
	for i := range cmds {
		wg.Add(1)
		go func() { defer wg.Done(); _ = cmds[i].Run() }()
	}
	wg.Wait()
	for i := range cmds {
		require.Equal(t, 0, cmds[i].ProcessState.ExitCode(), "process %d: %s", i, outs[i])
	}
}

// Item 11 with processes: first appends racing to create the same table, each its
// own process, all succeed and every row lands once.
func TestConcurrentFirstAppendsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	const n = 6
	args := make([][]string, n)
	for i := range n {
		in := writeText(t, filepath.Join(dir, "in", fmt.Sprintf("%d.jsonl", i)), fmt.Sprintf(`{"id":%d}`+"\n"+`{"id":%d}`+"\n", 2*i, 2*i+1))
		args[i] = []string{"append", tbl, in}
	}
	runConcurrently(t, args)
	require.Len(t, scanCSV(t, tbl), 2*n+1)
	require.EqualValues(t, n-1, latestVersion(t, tbl))
}

// crashTrials is the number of kill -9 trials: SKIPLAKE_CRASH_TRIALS, default 16 (6
// with -short).
func crashTrials(t *testing.T) int {
	if s := os.Getenv("SKIPLAKE_CRASH_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "SKIPLAKE_CRASH_TRIALS")
		return n
	}
	if testing.Short() {
		return 6
	}
	return 16
}

// TestCrashConsistency kills child processes (kill -9) at random moments of append,
// optimize, checkpoint and vacuum. After every trial the table opens and its rows are
// exactly the batches committed (a batch is all there or absent; a killed append may
// land or not, but once seen it stays, and a batch never seen never appears later).
// At the end one VACUUM leaves no orphan: every file outside the log is referenced by
// the table and no temporary file is left anywhere.
func TestCrashConsistency(t *testing.T) {
	trials := crashTrials(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SKIPLAKE_CRASH_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (SKIPLAKE_CRASH_SEED to replay), %d trials", seed, trials)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	const rowsPerBatch = 10000
	batchFile := func(k int) string {
		var b strings.Builder
		b.WriteString("id,batch,v\n")
		for i := range rowsPerBatch {
			fmt.Fprintf(&b, "%d,%d,%d\n", k*rowsPerBatch+i, k, rng.IntN(1000))
		}
		return writeText(t, filepath.Join(dir, "in", fmt.Sprintf("b%d.csv", k)), b.String())
	}
	committed := map[int]bool{} // batches known to be in the table
	gone := map[int]bool{}      // killed batches found absent: must never appear
	next := 0
	// Typical durations of each operation, measured on uninterrupted runs, bound the
	// random kill delays.
	took := map[string]time.Duration{}
	kills := map[string]int{}
	ops := []string{"append", "append", "append", "optimize", "checkpoint", "vacuum"}
	for trial := 0; trial < trials; trial++ {
		op := ops[rng.IntN(len(ops))]
		if latestOrNone(tbl) < 0 {
			op = "append"
		}
		var args []string
		batch := -1
		switch op {
		case "append":
			batch = next
			next++
			args = []string{"append", tbl, batchFile(batch), "--property", "delta.targetFileSize=96KiB", "--property", "delta.checkpointInterval=4"}
		case "optimize":
			if rng.IntN(2) == 0 {
				args = []string{"optimize", tbl, "--zorder-by", "v,id", "--target-size", "256KiB"}
			} else {
				args = []string{"optimize", tbl, "--target-size", "1MiB"}
			}
		case "checkpoint":
			args = []string{"checkpoint", tbl}
		case "vacuum":
			args = []string{"vacuum", tbl, "--retain", "0s", "--force"}
		}
		cmd := childCLI(t, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		killed := false
		if d, ok := took[op]; ok && rng.IntN(4) != 0 {
			delay := time.Duration(rng.Int64N(int64(d) + 1))
			timer := time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
			err := cmd.Wait()
			killed = !timer.Stop() && err != nil
			if !killed {
				require.NoError(t, err, "trial %d %v: %s", trial, args, out.String())
			}
		} else {
			start := time.Now()
			require.NoError(t, cmd.Wait(), "trial %d %v: %s", trial, args, out.String())
			took[op] = max(took[op], time.Since(start))
		}
		if killed {
			kills[op]++
		}
		present := checkBatches(t, tbl, rowsPerBatch)
		for k := range committed {
			require.True(t, present[k], "trial %d (%s): committed batch %d lost", trial, op, k)
		}
		for k := range present {
			require.False(t, gone[k], "trial %d: batch %d appeared after it was found absent", trial, k)
			require.Less(t, k, next, "trial %d: unknown batch %d", trial, k)
		}
		if batch >= 0 {
			switch {
			case present[batch]:
				committed[batch] = true
			case killed:
				gone[batch] = true
			default:
				t.Fatalf("trial %d: append of batch %d exited 0 but its rows are not there", trial, batch)
			}
		}
		for k := range present {
			committed[k] = true
		}
	}
	t.Logf("kills %v; %d batches committed, %d killed appends did not land", kills, len(committed), len(gone))
	if latestOrNone(tbl) < 0 {
		return // every trial killed the first append before it committed
	}
	ageFiles(t, tbl, vacuum.MinUnreferencedAge+time.Minute) // no write is in flight now
	out := mustCLI(t, "vacuum", tbl, "--retain", "0s", "--force")
	t.Log(strings.TrimSpace(out))
	checkNoOrphans(t, tbl)
	require.Len(t, checkBatches(t, tbl, rowsPerBatch), len(committed))
}

// latestOrNone returns the table's latest version, or -1 when there is no table.
func latestOrNone(tbl string) int64 {
	tb, err := table.OpenURL(context.Background(), tbl)
	if err != nil {
		return -1
	}
	v, err := tb.Log().LatestVersion(context.Background())
	if err != nil {
		return -1
	}
	return v
}

// checkBatches opens the table (when there is one), reads every row and checks that
// each batch present is complete and not duplicated; it returns the batches present.
func checkBatches(t *testing.T, tbl string, rowsPerBatch int) map[int]bool {
	t.Helper()
	present := map[int]bool{}
	if latestOrNone(tbl) < 0 {
		if _, err := os.Stat(filepath.Join(tbl, "_delta_log")); err == nil {
			entries, _ := os.ReadDir(filepath.Join(tbl, "_delta_log"))
			for _, e := range entries {
				require.False(t, strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), "."), "a commit %s without a readable table", e.Name())
			}
		}
		return present
	}
	out := mustCLI(t, "scan", tbl, "--format", "csv", "--columns", "id,batch")
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	seen := map[int]map[int]bool{}
	for _, l := range lines {
		if l == "" {
			continue
		}
		idS, bS, _ := strings.Cut(l, ",")
		id, err1 := strconv.Atoi(idS)
		b, err2 := strconv.Atoi(bS)
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.Equal(t, b, id/rowsPerBatch, "row %d in batch %d", id, b)
		if seen[b] == nil {
			seen[b] = map[int]bool{}
		}
		require.False(t, seen[b][id], "row %d duplicated", id)
		seen[b][id] = true
	}
	for b, ids := range seen {
		require.Len(t, ids, rowsPerBatch, "batch %d is partial", b)
		present[b] = true
	}
	return present
}

// checkNoOrphans checks that after VACUUM every file outside _delta_log/ is referenced
// by the latest snapshot (data files and their Bloom indexes), that _delta_log/ holds
// only log files, and that no temporary file is left anywhere.
func checkNoOrphans(t *testing.T, tbl string) {
	t.Helper()
	tb, err := table.OpenURL(context.Background(), tbl)
	require.NoError(t, err)
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	live := map[string]bool{}
	for _, a := range snap.Log().Files() {
		p, err := a.DecodedPath()
		require.NoError(t, err)
		live[p] = true
	}
	err = filepath.WalkDir(tbl, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tbl, p)
		rel = filepath.ToSlash(rel)
		require.False(t, strings.HasSuffix(rel, ".skiplake-tmp"), "temporary file left: %s", rel)
		if strings.HasPrefix(rel, "_delta_log/") {
			return nil
		}
		require.True(t, live[rel], "orphan VACUUM did not reclaim: %s", rel)
		return nil
	})
	require.NoError(t, err)
}
