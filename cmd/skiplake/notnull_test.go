package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The schema syntax the README and `help create` show, `--schema "id bigint NOT NULL,
// ..."`, creates a non-nullable column, and a write of a NULL into it is refused
// without a commit (issue 31 item 9).
func TestCreateSchemaNotNull(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	code, _, errs := cli(t, "create", tbl, "--schema", "id bigint NOT NULL, country string, amount double", "--partition-by", "country")
	require.Equal(t, 0, code, errs)
	code, out, errs := cli(t, "describe", tbl)
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `(?m)^\s+id\s+bigint NOT NULL$`, out)
	require.Regexp(t, `(?m)^\s+country\s+string$`, out)

	for name, content := range map[string]string{
		"bad.csv":   "id,country,amount\n1,JP,1\n,DE,2\n",
		"bad.jsonl": `{"id":1,"country":"JP","amount":1}` + "\n" + `{"id":null,"country":"DE","amount":2}` + "\n",
	} {
		in := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(in, []byte(content), 0o644))
		code, _, errs = cli(t, "append", tbl, in)
		require.Equal(t, 1, code, errs)
		require.Contains(t, errs, `"id"`)
		require.Contains(t, errs, "NOT NULL")
	}
	code, out, errs = cli(t, "count", tbl)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "0")
	entries, err := os.ReadDir(filepath.Join(tbl, "_delta_log"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "a refused append committed")

	// ADD COLUMN ... NOT NULL is refused (the table's rows have no value for it).
	code, _, errs = cli(t, "alter", tbl, "--add-column", "c int NOT NULL")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "NOT NULL")
}
