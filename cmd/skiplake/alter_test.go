package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// alterFixture writes a Parquet input (ids, one country each) and returns the
// table path (not created yet) and the input path.
func alterFixture(t *testing.T, ids ...int64) (tbl, input string) {
	t.Helper()
	dir := t.TempDir()
	input = filepath.Join(dir, "a.parquet")
	countries := make([]string, len(ids))
	for i := range countries {
		countries[i] = "DE"
	}
	writeParquet(t, input, ids, countries)
	return filepath.Join(dir, "t"), input
}

func TestAlterTranscript(t *testing.T) {
	tbl, p := alterFixture(t, 1, 2, 3)
	code, _, errs := cli(t, "append", tbl, p, "--property", "DELTA.TARGETFILESIZE=1mb")
	require.Equal(t, 0, code, errs)

	code, out, errs := cli(t, "alter", tbl, "--set-property", "delta.enableDeletionVectors=true", "--set-property", "delta.appendOnly=TRUE")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "version 1 (SET TBLPROPERTIES)") // the first append created the table at version 0
	require.Contains(t, out, "protocol upgraded to reader 3, writer 7; features reader [deletionVectors], writer [appendOnly, invariants, deletionVectors]")

	code, out, errs = cli(t, "alter", tbl, "--add-column", "price decimal(10,2)", "--add-column", "`the note` string", "--format", "json")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"operation": "ADD COLUMNS"`)

	code, out, errs = cli(t, "alter", tbl, "--unset-property", "delta.appendonly")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "(UNSET TBLPROPERTIES)")

	code, out, errs = cli(t, "describe", tbl)
	require.Equal(t, 0, code, errs)
	for _, want := range []string{
		"property        delta.enableDeletionVectors=true",
		"property        delta.targetFileSize=1048576",
		"setting         delta.targetFileSize = 1048576\n",
		"setting         delta.appendOnly = false (default)",
		"setting         delta.deletedFileRetentionDuration = interval 7 days (default)",
		"  the note      string",
		"  price         decimal(10,2)",
	} {
		require.Contains(t, out, want)
	}
	code, out, errs = cli(t, "history", tbl, "--format", "jsonl")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, `"operation":"UNSET TBLPROPERTIES"`)

	code, out, errs = cli(t, "scan", tbl, "--format", "csv", "--columns", "id,price")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "id,price\n1,\n2,\n3,\n", out)
}

func TestAlterUsageAndRefusals(t *testing.T) {
	tbl, p := alterFixture(t, 1)
	code, _, errs := cli(t, "append", tbl, p)
	require.Equal(t, 0, code, errs)
	usage := [][]string{
		{"alter", tbl},
		{"alter", tbl, "--set-property", "delta.appendOnly=true", "--add-column", "x int"},
		{"alter", tbl, "--add-column", "x"},
		{"alter", tbl, "--add-column", "x notatype"},
		{"alter", tbl, "--set-property", "novalue"},
		{"alter", tbl, "--if-exists", "--set-property", "a=b"},
	}
	for _, args := range usage {
		code, _, errs := cli(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, errs)
	}
	refused := map[string][]string{
		"delta.nosuch":         {"alter", tbl, "--set-property", "delta.nosuch=1"},
		"not set on the table": {"alter", tbl, "--unset-property", "delta.appendOnly"},
		"exists already":       {"alter", tbl, "--add-column", "ID bigint"},
	}
	for msg, args := range refused {
		code, _, errs := cli(t, args...)
		require.Equal(t, 1, code, "%v", args)
		require.Contains(t, errs, msg)
	}
	code, _, errs = cli(t, "alter", tbl, "--unset-property", "delta.appendOnly", "--if-exists")
	require.Equal(t, 0, code, errs)
	// With the change data feed on, its column names are reserved (as in Spark).
	code, _, errs = cli(t, "alter", tbl, "--set-property", "delta.enableChangeDataFeed=true")
	require.Equal(t, 0, code, errs)
	code, _, errs = cli(t, "alter", tbl, "--add-column", "_change_type string")
	require.Equal(t, 1, code, errs)
	require.Contains(t, errs, `"_change_type" has a name the change data feed reserves`)
}

// TestAppendInvalidPropertyLeavesNoTable is issue #10 item 6: an invalid property
// on the append that creates a table commits nothing and leaves no directory.
func TestAppendInvalidPropertyLeavesNoTable(t *testing.T) {
	tbl, p := alterFixture(t, 1)
	for _, prop := range []string{"delta.dataSkippingStatsColumns=nosuch", "delta.deletedFileRetentionDuration=garbage"} {
		code, _, errs := cli(t, "append", tbl, p, "--property", prop)
		require.Equal(t, 1, code, errs)
		_, err := os.Stat(tbl)
		require.True(t, os.IsNotExist(err), "%s left %s behind", prop, tbl)
	}
	code, _, errs := cli(t, "append", tbl, p)
	require.Equal(t, 0, code, errs)
}

// TestAppendPropertyOnExistingTable: --property given again to an existing table is
// accepted when the table has it, refused naming the difference when it does not,
// and refused naming the key when it does not validate; nothing is committed then.
func TestAppendPropertyOnExistingTable(t *testing.T) {
	tbl, p := alterFixture(t, 1)
	code, _, errs := cli(t, "append", tbl, p, "--property", "delta.checkpointInterval=20")
	require.Equal(t, 0, code, errs)
	code, _, errs = cli(t, "append", tbl, p, "--property", "DELTA.CHECKPOINTINTERVAL=20")
	require.Equal(t, 0, code, errs)
	for prop, msg := range map[string]string{
		"delta.checkpointInterval=5":     "delta.checkpointInterval=5 (the table has 20)",
		"delta.appendOnly=true":          "delta.appendOnly=true (the table has no value)",
		"delta.checkpointInterval=often": `--property: log: table property delta.checkpointInterval="often"`,
	} {
		code, _, errs = cli(t, "append", tbl, p, "--property", prop)
		require.Equal(t, 2, code, errs)
		require.Contains(t, errs, msg)
	}
	code, out, errs := cli(t, "history", tbl, "--format", "jsonl")
	require.Equal(t, 0, code, errs)
	require.Equal(t, 2, strings.Count(out, "\n"), "only the two accepted appends committed:\n%s", out)
}
