package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/internal/render"
)

// outputFile is a file the CLI writes for the user (scan --output, bench --svg). It is
// written to a temporary file beside the target and renamed over the target only when
// the command succeeds, so a failed command leaves a previous file as it was. Abort
// after Commit is a no-op, so "defer o.Abort()" is safe.
type outputFile struct {
	f      *os.File
	target string
	mode   os.FileMode
	done   bool
}

// createOutput starts writing target. Targets inside any of the given table roots
// are refused (after resolving symbolic links and ".."): the CLI never writes into a
// table it reads, where the output could replace a live data file.
func createOutput(target string, tableRoots ...string) (*outputFile, error) {
	for _, root := range tableRoots {
		inside, err := insideDir(root, target)
		if err != nil {
			return nil, err
		}
		if inside {
			return nil, usagef("output %s is inside the table %s; write it elsewhere", target, root)
		}
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(target); err == nil {
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("output %s exists and is not a regular file", target)
		}
		mode = st.Mode().Perm()
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", target, err)
	}
	return &outputFile{f: f, target: target, mode: mode}, nil
}

func (o *outputFile) Write(p []byte) (int, error) { return o.f.Write(p) }

// Commit makes the output durable and puts it in place of the target.
func (o *outputFile) Commit() error {
	if o.done {
		return nil
	}
	o.done = true
	tmp := o.f.Name()
	err := errors.Join(o.f.Chmod(o.mode), o.f.Sync(), o.f.Close())
	if err == nil {
		err = os.Rename(tmp, o.target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("output %s: %w", o.target, err)
	}
	if d, err := os.Open(filepath.Dir(o.target)); err == nil {
		d.Sync() // best effort: the rename is in place either way
		d.Close()
	}
	return nil
}

// Abort discards the output; the target is untouched.
func (o *outputFile) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	os.Remove(o.f.Name())
}

// insideDir reports whether path is root or lies under it, comparing real locations:
// symbolic links in either are resolved, and so is "..". A path that does not exist
// yet is resolved through its nearest existing parent. A table given as a URL other
// than file:// has no local root.
func insideDir(root, path string) (bool, error) {
	if strings.Contains(root, "://") {
		r, ok := strings.CutPrefix(root, "file://")
		if !ok {
			return false, nil
		}
		root = r
	}
	realRoot, err := realPath(root)
	if err != nil {
		return false, err
	}
	realTarget, err := realPath(path)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(realRoot, realTarget)
	if err != nil {
		return false, nil // different volumes
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}

// realPath returns the absolute path of p with every symbolic link and ".." resolved
// the way the operating system resolves them (a ".." after a link leads to the
// link target's parent, so nothing is cleaned lexically first); the missing tail of a
// path that does not exist (yet) is kept as written.
func realPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + string(filepath.Separator) + p
	}
	var tail []string
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, tail...)...), nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		i := strings.LastIndexByte(strings.TrimRight(cur, string(filepath.Separator)), filepath.Separator)
		if i <= 0 {
			return filepath.Clean(p), nil
		}
		tail = append([]string{cur[i+1:]}, tail...)
		cur = cur[:i]
	}
}

// requirePositive refuses numeric flags that were given with a value <= 0: zero and
// negative values must never quietly mean "no limit" or "the default".
func requirePositive(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if !flagSet(fs, n) {
			continue
		}
		v, err := strconv.ParseFloat(fs.Lookup(n).Value.String(), 64)
		if err != nil || !(v > 0) {
			return usagef("--%s must be > 0, got %s", n, fs.Lookup(n).Value.String())
		}
	}
	return nil
}

// recordStream is what scan and changes hand to writeRows: the table package's scan
// reader and change reader both satisfy it.
type recordStream interface {
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}

// rowsOutput is where a command that prints rows (scan, changes) sends them: stdout, or
// with --output a temporary file that replaces the target only when every row was
// written. Open it before reading the table, so a target inside the table is refused
// before anything is read.
type rowsOutput struct {
	w    io.Writer
	file *outputFile // nil for stdout
}

// openRowsOutput prepares the output: stdout when target is empty, else a temporary file
// beside target (refused inside tableRoot).
func (e *env) openRowsOutput(target, tableRoot string) (*rowsOutput, error) {
	if target == "" {
		return &rowsOutput{w: e.stdout}, nil
	}
	o, err := createOutput(target, tableRoot)
	if err != nil {
		return nil, err
	}
	return &rowsOutput{w: o, file: o}, nil
}

// abort discards a file output that was not committed; a no-op for stdout or after
// writeRows succeeded, so "defer out.abort()" is safe.
func (o *rowsOutput) abort() {
	if o.file != nil {
		o.file.Abort()
	}
}

// writeRows renders every batch of rd in format (render.Formats) to o and, for a file
// output, renames it into place once the writer has closed. It returns the rows
// written; on any error the writer is aborted and a file output is discarded.
func (o *rowsOutput) writeRows(format string, schema *arrow.Schema, ropts render.Options, rd recordStream) (rows int64, err error) {
	w, err := render.NewWithOptions(format, o.w, schema, ropts)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			w.Abort() // stop the writer's encoders; the output is discarded
			o.abort()
		}
	}()
	for rd.Next() {
		rec := rd.RecordBatch()
		if err = w.Write(rec); err != nil {
			return rows, err
		}
		rows += rec.NumRows()
	}
	if err = rd.Err(); err != nil {
		return rows, err
	}
	if err = w.Close(); err != nil {
		return rows, err
	}
	if o.file != nil {
		err = o.file.Commit()
	}
	return rows, err
}
