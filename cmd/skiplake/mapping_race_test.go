package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 24, bug 1 with processes: four appends of 5,000 rows each race to create a
// table with column mapping (each process picks its own physical names). Every row
// reads back once and none as NULL: the losers rewrite their files for the winner's
// physical names instead of committing files the table cannot read.
func TestConcurrentFirstAppendsColumnMappingProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, rows = 4, 5000
	for trial := range 2 {
		dir := t.TempDir()
		tbl := filepath.Join(dir, "t")
		args := make([][]string, procs)
		for i := range procs {
			var b strings.Builder
			b.WriteString("id,name,p\n")
			for r := range rows {
				id := i*rows + r
				fmt.Fprintf(&b, "%d,n%d,p%d\n", id, id, id%(trial+1))
			}
			in := writeText(t, filepath.Join(dir, "in", fmt.Sprintf("%d.csv", i)), b.String())
			args[i] = []string{"append", tbl, in, "--property", "delta.columnMapping.mode=name"}
			if trial == 1 {
				args[i] = append(args[i], "--partition-by", "p")
			}
		}
		runConcurrently(t, args)
		lines := scanCSV(t, tbl)
		require.Len(t, lines, procs*rows+1, "header and every row once")
		seen := make([]bool, procs*rows)
		for _, l := range lines[1:] {
			cells := strings.Split(l, ",")
			require.Len(t, cells, 3, "row %q", l)
			id, err := strconv.Atoi(cells[0])
			require.NoError(t, err, "row %q has a NULL or bad id", l)
			require.Equal(t, fmt.Sprint("n", id), cells[1], "row %q", l)
			require.Equal(t, fmt.Sprint("p", id%(trial+1)), cells[2], "row %q", l)
			require.False(t, seen[id], "id %d twice", id)
			seen[id] = true
		}
		require.EqualValues(t, procs-1, latestVersion(t, tbl))
	}
}
