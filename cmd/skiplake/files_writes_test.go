package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/internal/scalegen"
	"github.com/skiplake/skiplake/storage"
)

// countingWriter counts the Write calls it gets and the lines written.
type countingWriter struct{ writes, lines int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.lines += strings.Count(string(p), "\n")
	return len(p), nil
}

// TestFilesOutputIsBuffered lists a table of 3,000 files as a table and as JSONL: the
// output reaches stdout in a handful of writes, not one (or ten) per file — on a
// million-file table the unbuffered writes cost more CPU than planning.
func TestFilesOutputIsBuffered(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := scalegen.Build(ctx, store, scalegen.Options{Files: 3000, Partitioned: true, Commits: 1}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"files", dir},
		{"files", dir, "--format", "jsonl"},
		{"files", dir, "--filter", "day >= DATE '2021-01-01'"},
	} {
		var out countingWriter
		var errb strings.Builder
		if code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		if out.lines < 3000 {
			t.Fatalf("%v: %d lines, want at least 3000", args, out.lines)
		}
		if out.writes > 64 {
			t.Errorf("%v: %d writes for %d lines: the output is not buffered", args, out.writes, out.lines)
		}
	}
}
