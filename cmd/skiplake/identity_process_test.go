package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// Identity values under concurrent appends by processes (issue 30): N processes
// (this test binary re-executed as the CLI) append to one table with a GENERATED
// ALWAYS AS IDENTITY column, several appends each. An append that loses a race to
// another writer's identity values exits 75 (temporary: a conflict) and commits
// nothing; its writer retries, as a script does. In the end every append has
// landed, identity values are unique across all rows, increase with each writer's
// own order (within an append and from one append to its next), and the high-water
// mark is the largest value.
func TestIdentityConcurrentAppendProcesses(t *testing.T) {
	writers, appends, rows := 4, 3, 5
	if testing.Short() {
		writers, appends = 3, 2
	}
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustCLI(t, "create", tbl, "--schema", "rid bigint GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 1), w int NOT NULL, seq int NOT NULL")

	conflicts := make([]int, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range appends {
				var b strings.Builder
				b.WriteString("w,seq\n")
				for i := range rows {
					fmt.Fprintf(&b, "%d,%d\n", w, a*rows+i)
				}
				in := writeText(t, filepath.Join(dir, "in", fmt.Sprintf("w%d-a%d.csv", w, a)), b.String())
				for attempt := 0; ; attempt++ {
					if attempt == 100 {
						errs[w] = fmt.Errorf("writer %d append %d: still conflicting after %d attempts", w, a, attempt)
						return
					}
					cmd := childCLI(t, "append", tbl, in, "--quiet")
					var out bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, &out
					_ = cmd.Run()
					code := cmd.ProcessState.ExitCode()
					if code == 0 {
						break
					}
					if code != 75 {
						errs[w] = fmt.Errorf("writer %d append %d: exit %d: %s", w, a, code, out.String())
						return
					}
					conflicts[w]++
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Logf("conflicts (retried) per writer: %v", conflicts)

	lines := scanCSV(t, tbl)
	require.Equal(t, "rid,w,seq", lines[0])
	require.Len(t, lines[1:], writers*appends*rows, "every append landed once")
	type row struct{ rid, seq int64 }
	byWriter := map[int64][]row{}
	seen := map[int64]bool{}
	var maxRID int64
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		require.Len(t, f, 3)
		rid, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		seq, err3 := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.NoError(t, err3)
		require.False(t, seen[rid], "identity value %d given twice", rid)
		seen[rid] = true
		maxRID = max(maxRID, rid)
		byWriter[w] = append(byWriter[w], row{rid, seq})
	}
	require.Len(t, byWriter, writers)
	for w, rs := range byWriter {
		sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
		for i := 1; i < len(rs); i++ {
			require.Greater(t, rs[i].rid, rs[i-1].rid, "writer %d: identity values follow its order", w)
		}
	}

	tb, err := table.OpenURL(context.Background(), tbl)
	require.NoError(t, err)
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	s, err := log.ParseSchema(snap.Log().Metadata().SchemaString)
	require.NoError(t, err)
	id, ok, err := log.FieldIdentity(s.Field("rid"))
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, id.HasHighWaterMark)
	require.Equal(t, maxRID, id.HighWaterMark, "the high-water mark is the largest value")
}
