package table_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// TestGoldenChangesKernelCDCAndDVs reads the change data feed of delta-kernel-rs's
// cdf-table-with-cdc-and-dvs (26 commits by Spark: inserts, DELETEs with deletion
// vectors, a RESTORE bringing deleted rows back, UPDATEs and MERGEs with cdc files,
// a whole-table DELETE) from version 0 to the latest.
//
// The expected rows are delta-kernel-rs's, verbatim from its test
// kernel/tests/integration/features/cdf.rs, fn cdf_with_cdc_and_dvs (at commit
// b14c3fb84003346db99e4bcc6b473d87b43e034b, lines 222-277; quoted in the golden
// table's EXPECTED_FROM_TESTS.txt), which reads the same range with
// read_cdf_for_table("cdf-table-with-cdc-and-dvs", 0, None, None) and compares the
// columns id, comment, _change_type and _commit_version as a sorted multiset (the
// three rows shown with an empty comment have the empty string there).
func TestGoldenChangesKernelCDCAndDVs(t *testing.T) {
	dir := filepath.Join(goldenDir(t), "delta-kernel-rs", "cdf-table-with-cdc-and-dvs", "delta")
	tb, err := table.OpenURL(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// | id | comment | _change_type | _commit_version | from cdf.rs, as id|comment|type|version.
	kernel := `
| 1  | initial            | insert           | 0               |
| 2  | insert1            | insert           | 1               |
| 3  | insert1-delete1    | insert           | 1               |
| 4  | insert1-delete2    | insert           | 1               |
| 5  | insert1-delete2    | insert           | 1               |
| 3  | insert1-delete1    | delete           | 2               |
| 3  | insert1-delete1    | insert           | 4               |
| 4  | insert1-delete2    | delete           | 5               |
| 5  | insert1-delete2    | delete           | 5               |
| 4  | insert1-delete2    | insert           | 7               |
| 5  | insert2            | insert           | 8               |
| 1  | initial            | update_preimage  | 9               |
| 1  | update1            | update_postimage | 9               |
| 2  | insert1            | update_preimage  | 9               |
| 2  | update1            | update_postimage | 9               |
| 3  | insert1-delete1    | update_preimage  | 9               |
| 3  | update1            | update_postimage | 9               |
| 1  | update1            | delete           | 10              |
| 2  | update1            | update_preimage  | 12              |
| 2  | update2            | update_postimage | 12              |
| 6  | insert3            | insert           | 14              |
| 7  | insert3            | insert           | 14              |
| 8  | insert4            | insert           | 15              |
| 9  | insert4            | insert           | 15              |
| 8  | insert4            | delete           | 16              |
| 7  | insert3            | delete           | 16              |
| 10 | merge1-insert      | insert           | 18              |
| 11 | merge1-insert      | insert           | 18              |
| 9  | merge1-update      | update_postimage | 18              |
| 9  | insert4            | update_preimage  | 18              |
| 11 | merge1-insert      | update_preimage  | 20              |
| 11 |                    | update_postimage | 20              |
| 12 | merge2-insert      | insert           | 22              |
| 11 |                    | delete           | 22              |
| 3  | update1            | delete           | 24              |
| 4  | insert1-delete2    | delete           | 24              |
| 5  | insert2            | delete           | 24              |
| 2  | update2            | delete           | 24              |
| 6  | insert3            | delete           | 24              |
| 9  | merge1-update      | delete           | 24              |
| 0  | new                | insert           | 25              |
| 1  | after-large-delete | insert           | 25              |
| 2  |                    | insert           | 25              |`
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(kernel), "\n") {
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "| "), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		// changeRows renders version|type|id|comment.
		want = append(want, strings.Join([]string{cells[3], cells[2], cells[0], cells[1]}, "|"))
	}
	got := changeRows(t, tb, table.AtVersion(0), table.Latest(), table.WithColumns("id", "comment", "_change_type", "_commit_version"))
	sameStrings(t, "changes of versions 0..25", got, want)

	// The commit timestamp is the commit file's modification time (the table has no
	// in-commit timestamps), as the kernel reads it (scan_file.rs, commit_timestamp).
	rd, err := tb.Changes(context.Background(), table.AtVersion(9), table.AtVersion(9), table.WithColumns("_commit_timestamp"))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	fi, err := os.Stat(filepath.Join(dir, log.CommitPath(9)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rd.Next() {
		rec := rd.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			n++
			if got := rec.Column(0).ValueStr(i); got != fi.ModTime().UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z") {
				t.Fatalf("_commit_timestamp %s, commit file modified %s", got, fi.ModTime().UTC())
			}
		}
	}
	if rd.Err() != nil || n != 6 {
		t.Fatalf("version 9: %d rows, %v", n, rd.Err())
	}
}

// TestGoldenChangesDeltaRsCheckpointCDF reads delta-rs's checkpoint-cdf-table, whose
// log starts at a checkpoint of version 3 (the JSON of versions 0-2 is gone), from
// a timestamp before version 3's commit.
//
// The expected rows are delta-rs's, from its test crates/core/src/operations/
// load_cdf.rs, fn test_load_vacuumed_table (at commit
// 2c996fa9bc1a765f6d829ce3b40008710a4888d7, lines 1492-1530; quoted in the golden
// table's EXPECTED_FROM_TESTS.txt): with_starting_timestamp(2024-01-06T15:44:59.570)
// gives 13 rows of versions 3 (a DELETE with a cdc file), 4 (an append: inserts)
// and 5 (an UPDATE with cdc files). delta-rs prints _commit_timestamp from
// commitInfo.timestamp; skiplake, like Delta Spark and delta-kernel-rs, takes the
// commit file's modification time (PROTOCOL.md "Reader Requirements for
// AddCDCFile"), so that column is compared with the files' times instead.
func TestGoldenChangesDeltaRsCheckpointCDF(t *testing.T) {
	dir := filepath.Join(goldenDir(t), "delta-rs", "checkpoint-cdf-table", "delta")
	tb, err := table.OpenURL(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// | id | name | birthday | _change_type | _commit_version | from load_cdf.rs.
	deltaRs := `
| 11 | Ossama | 2024-12-30 | insert           | 4               |
| 11 | Ossama | 2024-12-30 | update_preimage  | 5               |
| 12 | Nick   | 2023-12-29 | insert           | 4               |
| 12 | Nick   | 2023-12-29 | update_preimage  | 5               |
| 12 | Ossama | 2024-12-30 | update_postimage | 5               |
| 13 | Nick   | 2023-12-29 | update_postimage | 5               |
| 13 | Ryan   | 2023-12-22 | insert           | 4               |
| 13 | Ryan   | 2023-12-22 | update_preimage  | 5               |
| 14 | Ryan   | 2023-12-22 | update_postimage | 5               |
| 14 | Zach   | 2023-12-25 | insert           | 4               |
| 14 | Zach   | 2023-12-25 | update_preimage  | 5               |
| 15 | Zach   | 2023-12-25 | update_postimage | 5               |
| 7  | Dennis | 2023-12-29 | delete           | 3               |`
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(deltaRs), "\n") {
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "| "), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		want = append(want, strings.Join([]string{cells[4], cells[3], cells[0], cells[1], cells[2]}, "|"))
	}
	start := time.Date(2024, 1, 6, 15, 44, 59, 570e6, time.UTC)
	got := changeRows(t, tb, table.AtTimestamp(start), table.Latest(), table.WithColumns("id", "name", "birthday", "_change_type", "_commit_version"))
	sameStrings(t, "changes from 2024-01-06T15:44:59.570", got, want)
	// The same range by version.
	got = changeRows(t, tb, table.AtVersion(3), table.Latest(), table.WithColumns("id", "name", "birthday", "_change_type", "_commit_version"))
	sameStrings(t, "changes from version 3", got, want)

	// Versions before 3 are no longer in the log.
	_, err = tb.Changes(context.Background(), table.AtVersion(2), table.Latest())
	if err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("changes of a cleaned-up version: %v", err)
	}
}
