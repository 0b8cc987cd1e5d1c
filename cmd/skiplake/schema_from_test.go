package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateSchemaFromDirectory: --schema-from names a directory. The CLI reads the
// file through package input (not table); the refusal names the path, says what is
// wrong, exits refused (1) and creates nothing.
func TestCreateSchemaFromDirectory(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.parquet")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	tbl := filepath.Join(dir, "t")
	code, _, stderr := cli(t, "create", tbl, "--schema-from", in)
	if code != exitRefused || !strings.Contains(stderr, in+" is a directory, not a Parquet file") {
		t.Fatalf("exit %d, stderr %q; want %d naming %s as a directory", code, stderr, exitRefused, in)
	}
	if _, err := os.Stat(tbl); !os.IsNotExist(err) {
		t.Fatalf("the table directory exists after a refused create: %v", err)
	}
}
