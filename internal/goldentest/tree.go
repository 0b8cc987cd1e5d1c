package goldentest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TreeState records every file and directory under root: path, mode, size,
// modification time and content hash. Two equal states mean nothing under root was
// written, renamed or deleted in between (tests check that refused commands change
// nothing).
func TreeState(tb testing.TB, root string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", st.Mode(), st.Size(), st.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(h[:])
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// CopyTree copies the directory src to dst, writable (a test works on a copy of a
// shared table, never on the table itself).
func CopyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// RegressionTables returns the regression tables (name → directory): the directories
// of RegressionsDir that hold a _delta_log. It fails the test when there are none.
func RegressionTables(tb testing.TB) map[string]string {
	tb.Helper()
	root := RegressionsDir(tb)
	entries, err := os.ReadDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if st, err := os.Stat(filepath.Join(root, e.Name(), "_delta_log")); err == nil && st.IsDir() {
			out[e.Name()] = filepath.Join(root, e.Name())
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no tables (directories with a _delta_log) in %s", root)
	}
	return out
}
