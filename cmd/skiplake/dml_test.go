package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDMLProcessesRace races real processes on one table with deletion vectors:
// appenders (blind appends of new keys), deleters (each its own key range of the
// initial rows), an updater and OPTIMIZE. A DML process that loses a conflict exits 1
// naming it and is re-run; appends never fail. At the end every row is there exactly
// once: the initial rows outside the deleted ranges (updated where the updater ran)
// and every appended row.
func TestDMLProcessesRace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	var b strings.Builder
	b.WriteString("id,grp,v\n")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "%d,g%d,0\n", i, i%4)
	}
	mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, "init.csv"), b.String()), "--property", "delta.enableDeletionVectors=true")
	// Split the initial rows into several files so deleters touch different ones.
	for k := 0; k < 3; k++ {
		var c strings.Builder
		c.WriteString("id,grp,v\n")
		for i := 0; i < 100; i++ {
			fmt.Fprintf(&c, "%d,g%d,0\n", 1000+k*100+i, i%4)
		}
		mustCLI(t, "append", tbl, writeText(t, filepath.Join(dir, fmt.Sprintf("more%d.csv", k)), c.String()))
	}
	type job struct {
		args  []string
		blind bool
	}
	var jobs []job
	for k := 0; k < 3; k++ {
		var c strings.Builder
		c.WriteString("id,grp,v\n")
		for i := 0; i < 50; i++ {
			fmt.Fprintf(&c, "%d,new,%d\n", 5000+k*100+i, k)
		}
		jobs = append(jobs, job{args: []string{"append", tbl, writeText(t, filepath.Join(dir, fmt.Sprintf("app%d.csv", k)), c.String())}, blind: true})
	}
	deleted := [][2]int{{0, 50}, {100, 150}, {1000, 1050}, {1200, 1250}}
	for _, r := range deleted {
		jobs = append(jobs, job{args: []string{"delete", tbl, "--where", fmt.Sprintf("id >= %d AND id < %d", r[0], r[1])}})
	}
	jobs = append(jobs, job{args: []string{"update", tbl, "--set", "v = 7", "--where", "id >= 300 AND id < 320"}})
	jobs = append(jobs, job{args: []string{"optimize", tbl}})

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for _, j := range jobs {
		wg.Add(1)
		go func(j job) {
			defer wg.Done()
			for attempt := 0; attempt < 20; attempt++ {
				cmd := childCLI(t, j.args...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				if err == nil {
					return
				}
				var ee *exec.ExitError
				msg := out.String()
				if j.blind || !errors.As(err, &ee) || !strings.Contains(msg, "log: concurrent") {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v: %s", strings.Join(j.args, " "), err, msg))
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			failures = append(failures, fmt.Sprintf("%s: still conflicting after 20 attempts", strings.Join(j.args, " ")))
			mu.Unlock()
		}(j)
	}
	wg.Wait()
	require.Empty(t, failures)

	var want []string
	isDeleted := func(id int) bool {
		for _, r := range deleted {
			if id >= r[0] && id < r[1] {
				return true
			}
		}
		return false
	}
	add := func(id int, grp string, v int) {
		if !isDeleted(id) {
			want = append(want, fmt.Sprintf("%d,%s,%d", id, grp, v))
		}
	}
	for i := 0; i < 400; i++ {
		v := 0
		if i >= 300 && i < 320 {
			v = 7
		}
		add(i, fmt.Sprintf("g%d", i%4), v)
	}
	for k := 0; k < 3; k++ {
		for i := 0; i < 100; i++ {
			add(1000+k*100+i, fmt.Sprintf("g%d", i%4), 0)
		}
		for i := 0; i < 50; i++ {
			add(5000+k*100+i, "new", k)
		}
	}
	sort.Strings(want)
	got := scanCSV(t, tbl)
	require.Equal(t, "id,grp,v", got[0])
	rows := got[1:]
	sort.Strings(rows)
	require.Equal(t, want, rows)
}
