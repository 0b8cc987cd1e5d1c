package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dmlCLITable creates a table with deletion vectors from rows "id,grp,qty" for id in
// [0, n): grp cycles a, b, c, qty is id mod 5. It is appended in two commits (two
// files), so DML touches some files and not others.
func dmlCLITable(t *testing.T, dir string, n int) string {
	t.Helper()
	tbl := filepath.Join(dir, "t")
	for part := 0; part < 2; part++ {
		var b strings.Builder
		b.WriteString("id,grp,qty\n")
		for i := part * n / 2; i < (part+1)*n/2; i++ {
			fmt.Fprintf(&b, "%d,%s,%d\n", i, []string{"a", "b", "c"}[i%3], i%5)
		}
		args := []string{"append", tbl, writeText(t, filepath.Join(dir, fmt.Sprintf("init%d.csv", part)), b.String())}
		if part == 0 {
			args = append(args, "--property", "delta.enableDeletionVectors=true")
		}
		mustCLI(t, args...)
	}
	return tbl
}

// cliRow is one "id,grp,qty" row of dmlCLITable.
type cliRow struct {
	id, qty int
	grp     string
}

func (r cliRow) String() string { return fmt.Sprintf("%d,%s,%d", r.id, r.grp, r.qty) }

func cliRows(n int) []cliRow {
	rows := make([]cliRow, n)
	for i := range rows {
		rows[i] = cliRow{id: i, grp: []string{"a", "b", "c"}[i%3], qty: i % 5}
	}
	return rows
}

// cliRowLines renders rows as sorted CSV lines under the header, as scanCSV returns.
func cliRowLines(rows []cliRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	sort.Strings(out)
	return append([]string{"id,grp,qty"}, out...)
}

// cliHistoryEntry is the part of a `history --format jsonl` line the tests read.
type cliHistoryEntry struct {
	Version             int64             `json:"version"`
	Timestamp           time.Time         `json:"timestamp"`
	Operation           string            `json:"operation"`
	OperationParameters map[string]string `json:"operationParameters"`
	OperationMetrics    map[string]string `json:"operationMetrics"`
}

// cliHistory returns the table's history, newest first.
func cliHistory(t *testing.T, tbl string) []cliHistoryEntry {
	t.Helper()
	out := mustCLI(t, "history", tbl, "--format", "jsonl")
	var h []cliHistoryEntry
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e cliHistoryEntry
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		h = append(h, e)
	}
	require.NotEmpty(t, h)
	return h
}

// dirState lists every file under dir (data, deletion vectors, log) with its size and
// modification time: two equal states mean nothing was written.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		state[rel] = fmt.Sprintf("%d %d", info.Size(), info.ModTime().UnixNano())
		return nil
	}))
	return state
}

// dmlJSON is the part of a DML command's --format json output the tests read.
type dmlJSON struct {
	Operation    string            `json:"operation"`
	Version      int64             `json:"version"`
	ReadVersion  int64             `json:"readVersion"`
	DryRun       bool              `json:"dryRun"`
	Mode         string            `json:"mode"`
	RowsDeleted  int64             `json:"rowsDeleted"`
	RowsUpdated  int64             `json:"rowsUpdated"`
	RowsInserted int64             `json:"rowsInserted"`
	SourceRows   int64             `json:"sourceRows"`
	Passes       int               `json:"passes"`
	FilesRead    int               `json:"filesRead"`
	FilesAdded   int               `json:"filesAdded"`
	FilesRemoved int               `json:"filesRemoved"`
	DVsAdded     int               `json:"deletionVectorsAdded"`
	Files        []json.RawMessage `json:"files"`
	Metrics      map[string]string `json:"metrics"`
}

func parseDMLJSON(t *testing.T, out string) dmlJSON {
	t.Helper()
	var r dmlJSON
	dec := json.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&r), out)
	require.False(t, dec.More(), "one JSON document: %s", out)
	return r
}

// requireMetrics checks that metrics has every name and that the counting ones are
// decimal integers.
func requireMetrics(t *testing.T, metrics map[string]string, names ...string) {
	t.Helper()
	for _, n := range names {
		v, ok := metrics[n]
		require.True(t, ok, "metric %s missing from %v", n, metrics)
		_, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "metric %s = %q", n, v)
	}
}

// TestDMLFormatJSON: delete, update and merge with --format json print one JSON
// document carrying the result and Spark's operationMetrics names, whose values are
// the counts of the result and exactly what the commit recorded in the log.
func TestDMLFormatJSON(t *testing.T) {
	dir := t.TempDir()
	tbl := dmlCLITable(t, dir, 60)
	rows := cliRows(60)

	out := mustCLI(t, "delete", tbl, "--where", "qty = 0 AND grp = 'a'", "--format", "json")
	del := parseDMLJSON(t, out)
	require.Equal(t, "DELETE", del.Operation)
	require.EqualValues(t, 2, del.Version)
	require.Equal(t, "deletion-vectors", del.Mode)
	requireMetrics(t, del.Metrics, "numDeletedRows", "numRemovedFiles", "numAddedFiles", "numCopiedRows", "numAddedChangeFiles",
		"numRemovedBytes", "numAddedBytes", "numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated",
		"executionTimeMs", "scanTimeMs", "rewriteTimeMs")
	var keep []cliRow
	deleted := 0
	for _, r := range rows {
		if r.qty == 0 && r.grp == "a" {
			deleted++
			continue
		}
		keep = append(keep, r)
	}
	rows = keep
	require.EqualValues(t, deleted, del.RowsDeleted)
	require.Equal(t, strconv.Itoa(deleted), del.Metrics["numDeletedRows"])
	require.Equal(t, strconv.Itoa(del.DVsAdded), del.Metrics["numDeletionVectorsAdded"])
	require.Equal(t, "2", del.Metrics["numDeletionVectorsAdded"], "one deletion vector per file")
	require.Equal(t, strconv.Itoa(del.FilesRemoved), del.Metrics["numRemovedFiles"])
	require.NotEmpty(t, del.Files)

	out = mustCLI(t, "update", tbl, "--set", "qty = qty + 100", "--where", "grp = 'b'", "--format", "json")
	upd := parseDMLJSON(t, out)
	require.Equal(t, "UPDATE", upd.Operation)
	requireMetrics(t, upd.Metrics, "numUpdatedRows", "numRemovedFiles", "numAddedFiles", "numCopiedRows", "numDeletionVectorsAdded", "numAddedBytes")
	updated := 0
	for i, r := range rows {
		if r.grp == "b" {
			rows[i].qty += 100
			updated++
		}
	}
	require.EqualValues(t, updated, upd.RowsUpdated)
	require.Equal(t, strconv.Itoa(updated), upd.Metrics["numUpdatedRows"])
	require.Equal(t, strconv.Itoa(upd.FilesAdded), upd.Metrics["numAddedFiles"])

	src := writeText(t, filepath.Join(dir, "src.csv"), "id,grp,qty\n1,z,-1\n2,z,-2\n1000,z,7\n")
	out = mustCLI(t, "merge", tbl, src, "--on", "id", "--format", "json")
	mrg := parseDMLJSON(t, out)
	require.Equal(t, "MERGE", mrg.Operation)
	requireMetrics(t, mrg.Metrics, "numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted",
		"numTargetRowsMatchedUpdated", "numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numOutputRows",
		"numTargetFilesAdded", "numTargetFilesRemoved", "numTargetBytesAdded", "numTargetDeletionVectorsAdded", "executionTimeMs")
	require.EqualValues(t, 3, mrg.SourceRows)
	require.Equal(t, "3", mrg.Metrics["numSourceRows"])
	require.Equal(t, [3]string{"2", "1", "0"}, [3]string{mrg.Metrics["numTargetRowsUpdated"], mrg.Metrics["numTargetRowsInserted"], mrg.Metrics["numTargetRowsDeleted"]})
	require.Equal(t, [3]int64{2, 1, 0}, [3]int64{mrg.RowsUpdated, mrg.RowsInserted, mrg.RowsDeleted})
	for i, r := range rows {
		if r.id == 1 || r.id == 2 {
			rows[i] = cliRow{id: r.id, grp: "z", qty: -r.id}
		}
	}
	rows = append(rows, cliRow{id: 1000, grp: "z", qty: 7})
	require.Equal(t, cliRowLines(rows), scanCSV(t, tbl))

	// Each command's JSON metrics are what its commit recorded.
	hist := cliHistory(t, tbl)
	byVersion := map[int64]cliHistoryEntry{}
	for _, h := range hist {
		byVersion[h.Version] = h
	}
	for _, r := range []dmlJSON{del, upd, mrg} {
		h, ok := byVersion[r.Version]
		require.True(t, ok, "version %d of %s not in the history", r.Version, r.Operation)
		require.Equal(t, r.Operation, h.Operation)
		require.Equal(t, r.Metrics, h.OperationMetrics, "%s: metrics printed and committed differ", r.Operation)
	}

	// A command that changes nothing prints JSON too: version -1, nothing committed.
	before := latestVersion(t, tbl)
	none := parseDMLJSON(t, mustCLI(t, "delete", tbl, "--where", "id < 0", "--format", "json"))
	require.EqualValues(t, -1, none.Version)
	require.EqualValues(t, 0, none.RowsDeleted)
	require.Equal(t, before, latestVersion(t, tbl))
}

// TestMergeDryRunCLI: merge --dry-run reports the rows and files the merge would
// change (the same counts the real merge then reports) and writes nothing: the table
// directory — log, data files, deletion vectors — is byte for byte as before, in both
// output formats and when the source spills to disk.
func TestMergeDryRunCLI(t *testing.T) {
	dir := t.TempDir()
	tbl := dmlCLITable(t, dir, 60)
	var b strings.Builder
	b.WriteString("id,grp,qty\n")
	for _, id := range []int{3, 4, 5, 33, 200, 201} {
		fmt.Fprintf(&b, "%d,m,%d\n", id, id*10)
	}
	src := writeText(t, filepath.Join(dir, "src.csv"), b.String())
	args := []string{"merge", tbl, src, "--on", "id", "--when-not-matched-by-source", "delete", "--not-matched-by-source-condition", "qty = 4"}
	state := dirState(t, tbl)
	version := latestVersion(t, tbl)
	rowsBefore := scanCSV(t, tbl)

	out := mustCLI(t, append(args, "--dry-run")...)
	require.Contains(t, out, "MERGE")
	require.Contains(t, out, "dry run: 4 rows updated, 2 inserted")
	require.Contains(t, out, "nothing written")
	require.Equal(t, state, dirState(t, tbl), "a dry run wrote to the table")

	dry := parseDMLJSON(t, mustCLI(t, append(args, "--dry-run", "--format", "json")...))
	require.True(t, dry.DryRun)
	require.EqualValues(t, -1, dry.Version)
	require.EqualValues(t, version, dry.ReadVersion)
	require.Equal(t, state, dirState(t, tbl), "a dry run (json) wrote to the table")

	spilled := parseDMLJSON(t, mustCLI(t, append(args, "--dry-run", "--format", "json", "--memory", "200B")...))
	require.Equal(t, state, dirState(t, tbl), "a dry run with a spilled source wrote to the table")
	require.Greater(t, spilled.Passes, 1, "--memory 200B: the source is merged in several passes")
	require.Equal(t, [3]int64{dry.RowsUpdated, dry.RowsInserted, dry.RowsDeleted}, [3]int64{spilled.RowsUpdated, spilled.RowsInserted, spilled.RowsDeleted})
	require.Equal(t, version, latestVersion(t, tbl))
	require.Equal(t, rowsBefore, scanCSV(t, tbl))

	// The real merge changes what the dry run said it would.
	real := parseDMLJSON(t, mustCLI(t, append(args, "--format", "json")...))
	require.Equal(t, version+1, real.Version)
	require.Equal(t, [3]int64{dry.RowsUpdated, dry.RowsInserted, dry.RowsDeleted}, [3]int64{real.RowsUpdated, real.RowsInserted, real.RowsDeleted})
	require.Equal(t, dry.FilesRead, real.FilesRead)
	require.Equal(t, dry.FilesRemoved, real.FilesRemoved)
	require.Equal(t, dry.FilesAdded, real.FilesAdded)
	require.Equal(t, len(dry.Files), len(real.Files))
	require.Equal(t, dry.Metrics["numTargetRowsNotMatchedBySourceDeleted"], real.Metrics["numTargetRowsNotMatchedBySourceDeleted"])
	// 4 updated (3, 4, 5, 33), 2 inserted, and the unmatched rows with qty = 4 deleted.
	var want []cliRow
	for _, r := range cliRows(60) {
		switch {
		case r.id == 3 || r.id == 4 || r.id == 5 || r.id == 33:
			want = append(want, cliRow{id: r.id, grp: "m", qty: r.id * 10})
		case r.qty == 4:
		default:
			want = append(want, r)
		}
	}
	want = append(want, cliRow{id: 200, grp: "m", qty: 2000}, cliRow{id: 201, grp: "m", qty: 2010})
	require.Equal(t, cliRowLines(want), scanCSV(t, tbl))
	require.EqualValues(t, 60-4-len(want)+6, real.RowsDeleted)
}

// TestMergeWhenNotMatchedBySourceCLI: --when-not-matched-by-source delete (with and
// without --not-matched-by-source-condition, alone or with the other clauses) deletes
// exactly the target rows no source row matches (that satisfy the condition), and the
// commit records the clauses as Spark's notMatchedBySourcePredicates.
func TestMergeWhenNotMatchedBySourceCLI(t *testing.T) {
	cases := []struct {
		name  string
		flags []string
		// apply is the oracle: the new row for a target row (matched: its source row
		// s, else nil) and whether it stays.
		apply  func(r cliRow, s *cliRow) (cliRow, bool)
		insert bool
		pred   string // notMatchedBySourcePredicates recorded
	}{
		{"sync: upsert and delete the rest", []string{"--when-not-matched-by-source", "delete"},
			func(r cliRow, s *cliRow) (cliRow, bool) {
				if s == nil {
					return r, false
				}
				return *s, true
			}, true, `[{"actionType":"delete"}]`},
		{"conditional by-source delete", []string{"--when-not-matched-by-source", "delete", "--not-matched-by-source-condition", "grp = 'a' OR qty > 3"},
			func(r cliRow, s *cliRow) (cliRow, bool) {
				if s == nil {
					return r, !(r.grp == "a" || r.qty > 3)
				}
				return *s, true
			}, true, `[{"predicate":"grp = 'a' OR qty > 3","actionType":"delete"}]`},
		{"by-source delete only", []string{"--when-matched", "ignore", "--when-not-matched", "ignore", "--when-not-matched-by-source", "delete", "--not-matched-by-source-condition", "qty = 2"},
			func(r cliRow, s *cliRow) (cliRow, bool) { return r, s != nil || r.qty != 2 }, false,
			`[{"predicate":"qty = 2","actionType":"delete"}]`},
		{"matched delete, by-source delete", []string{"--when-matched", "delete", "--when-not-matched-by-source", "delete", "--not-matched-by-source-condition", "grp = 'c'"},
			func(r cliRow, s *cliRow) (cliRow, bool) { return r, s == nil && r.grp != "c" }, true,
			`[{"predicate":"grp = 'c'","actionType":"delete"}]`},
	}
	source := []cliRow{{id: 1, grp: "s", qty: 9}, {id: 7, grp: "s", qty: 9}, {id: 20, grp: "s", qty: 9}, {id: 21, grp: "s", qty: 9}, {id: 500, grp: "s", qty: 9}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := dmlCLITable(t, dir, 30)
			var b strings.Builder
			b.WriteString("id,grp,qty\n")
			bySrc := map[int]*cliRow{}
			for i, s := range source {
				b.WriteString(s.String() + "\n")
				bySrc[s.id] = &source[i]
			}
			src := writeText(t, filepath.Join(dir, "src.csv"), b.String())
			res := parseDMLJSON(t, mustCLI(t, append([]string{"merge", tbl, src, "--on", "id", "--format", "json"}, c.flags...)...))

			var want []cliRow
			var deleted int64
			matched := map[int]bool{}
			for _, r := range cliRows(30) {
				s := bySrc[r.id]
				if s != nil {
					matched[r.id] = true
				}
				if n, ok := c.apply(r, s); ok {
					want = append(want, n)
				} else {
					deleted++
				}
			}
			if c.insert {
				for _, s := range source {
					if !matched[s.id] {
						want = append(want, s)
					}
				}
			}
			require.Equal(t, cliRowLines(want), scanCSV(t, tbl))
			require.Equal(t, deleted, res.RowsDeleted)
			ci := cliHistory(t, tbl)[0]
			require.Equal(t, "MERGE", ci.Operation)
			require.Equal(t, c.pred, ci.OperationParameters["notMatchedBySourcePredicates"])
			require.Equal(t, strconv.Itoa(len(source)), ci.OperationMetrics["numSourceRows"])
		})
	}

	// The condition without the clause is a usage error that changes nothing.
	dir := t.TempDir()
	tbl := dmlCLITable(t, dir, 10)
	src := writeText(t, filepath.Join(dir, "src.csv"), "id,grp,qty\n1,s,1\n")
	v := latestVersion(t, tbl)
	code, _, errs := cli(t, "merge", tbl, src, "--on", "id", "--not-matched-by-source-condition", "qty = 1")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--not-matched-by-source-condition needs --when-not-matched-by-source delete")
	code, _, errs = cli(t, "merge", tbl, src, "--on", "id", "--when-not-matched-by-source", "update")
	require.Equal(t, 2, code)
	require.Contains(t, errs, `--when-not-matched-by-source "update": want delete or ignore`)
	require.Equal(t, v, latestVersion(t, tbl))
}

// TestRestoreTimestampCLI: restore --timestamp restores the version current at that
// time (given exactly, or between two commits, in RFC 3339 or as epoch milliseconds):
// the table's rows afterwards equal `scan --version` of that version. A timestamp
// before the first commit fails (exit 1) naming the first commit and commits nothing.
func TestRestoreTimestampCLI(t *testing.T) {
	dir := t.TempDir()
	tbl := dmlCLITable(t, dir, 30)                                        // versions 0, 1
	mustCLI(t, "delete", tbl, "--where", "qty < 2")                       // 2
	mustCLI(t, "update", tbl, "--set", "grp = 'u'", "--where", "id > 20") // 3
	mustCLI(t, "delete", tbl, "--where", "grp = 'a'")                     // 4
	hist := cliHistory(t, tbl)
	require.Len(t, hist, 5)
	at := map[int64]time.Time{}
	rowsAt := map[int64][]string{}
	for _, h := range hist {
		at[h.Version] = h.Timestamp
		rowsAt[h.Version] = scanCSV(t, tbl, "--version", strconv.FormatInt(h.Version, 10))
	}
	for v := int64(1); v < 5; v++ {
		require.True(t, at[v].After(at[v-1]), "commit timestamps increase")
	}
	cases := []struct {
		ts   string
		want int64
	}{
		{at[2].UTC().Format(time.RFC3339Nano), 2},
		{at[2].UTC().Add(-time.Millisecond).Format(time.RFC3339Nano), 1},
		{strconv.FormatInt(at[3].UnixMilli(), 10), 3},
		{at[1].UTC().Format("2006-01-02 15:04:05.000"), 1},
	}
	for _, c := range cases {
		v := latestVersion(t, tbl)
		out := mustCLI(t, "restore", tbl, "--timestamp", c.ts)
		require.Contains(t, out, fmt.Sprintf("restored  version %d as version %d", c.want, v+1), "restore --timestamp %s", c.ts)
		require.Equal(t, rowsAt[c.want], scanCSV(t, tbl), "rows after restore --timestamp %s", c.ts)
		h := cliHistory(t, tbl)[0]
		require.Equal(t, "RESTORE", h.Operation)
		require.Equal(t, "null", h.OperationParameters["version"])
	}

	// --format json and --dry-run with a timestamp.
	v := latestVersion(t, tbl)
	state := dirState(t, tbl)
	var res struct {
		Version         int64 `json:"version"`
		RestoredVersion int64 `json:"restoredVersion"`
		DryRun          bool  `json:"dryRun"`
	}
	out := mustCLI(t, "restore", tbl, "--timestamp", at[4].UTC().Format(time.RFC3339Nano), "--dry-run", "--format", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, int64(4), res.RestoredVersion)
	require.True(t, res.DryRun)
	require.EqualValues(t, -1, res.Version)
	require.Equal(t, state, dirState(t, tbl), "a dry run wrote to the table")

	// Before the first commit: a clear error, nothing committed.
	for _, ts := range []string{"2000-01-01", at[0].UTC().Add(-time.Millisecond).Format(time.RFC3339Nano)} {
		code, stdout, errs := cli(t, "restore", tbl, "--timestamp", ts)
		require.Equal(t, 1, code, "restore --timestamp %s: %s", ts, stdout)
		require.Empty(t, stdout)
		require.Contains(t, errs, "is before the first available commit, version 0 at "+at[0].UTC().Format(time.RFC3339Nano))
		require.Equal(t, v, latestVersion(t, tbl))
	}
	require.Equal(t, state, dirState(t, tbl))
}
