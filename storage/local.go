package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// Local is a Storage on the local filesystem, confined to one root directory.
//
// Every access goes through an os.Root, so besides the lexical checks of ValidatePath,
// symbolic links inside the tree cannot lead outside it. Writes are atomic: Put renames
// a fully written, fsynced temporary file over the target and PutIfAbsent hard-links one
// to the target (invariant L2); both fsync the directory afterwards. Create streams an
// object into such a temporary file and publishes it like PutIfAbsent (invariant S1).
//
// Temporary files of in-flight writes are named ".<name>.<16 hex digits>.skiplake-tmp"
// in the target's directory. List never reports them, and paths whose last element has
// that form are rejected with ErrInvalidPath. A crash can leave such files behind; they
// are invisible to readers and safe to delete once no write is in flight.
//
// PutIfAbsent needs a filesystem with hard links (ext4, XFS, APFS, NTFS, ...); where
// link(2) is unsupported it fails with the filesystem's error rather than fall back to
// a racy check-then-write.
//
// Local is safe for concurrent use by multiple goroutines and by multiple processes
// sharing the directory. Close releases the directory handle.
type Local struct {
	root *os.Root
	abs  string
}

// Permissions for created files and directories, before the umask.
const (
	filePerm = 0o644
	dirPerm  = 0o755
)

// tempSuffix ends every temporary file name; see Local.
const tempSuffix = ".skiplake-tmp"

// tempBaseMax bounds how much of the target name goes into a temporary name, so that the
// temporary name stays under common NAME_MAX limits (255 bytes) for any target name.
const tempBaseMax = 128

// NewLocal opens the existing directory root as a Local store. It does not create the
// directory: for a new table, create it first (os.MkdirAll). A missing root yields an
// error wrapping both ErrNotExist and fs.ErrNotExist.
func NewLocal(root string) (*Local, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("storage: local root %q: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("storage: local root %q: %w (%w)", root, ErrNotExist, err)
		}
		return nil, fmt.Errorf("storage: local root %q: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("storage: local root %q is not a directory", root)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("storage: local root %q: %w", root, err)
	}
	return &Local{root: r, abs: abs}, nil
}

// Root returns the absolute path of the store's root directory.
func (l *Local) Root() string { return l.abs }

// Close releases the root directory handle. Files returned by Open stay usable until
// they are closed themselves; every other method fails after Close.
func (l *Local) Close() error {
	if err := l.root.Close(); err != nil {
		return fmt.Errorf("storage: close %q: %w", l.abs, err)
	}
	return nil
}

// String returns a short description naming the root, for logs and error messages.
func (l *Local) String() string { return "local:" + l.abs }

// check validates the context and an object path for operation op.
func (l *Local) check(ctx context.Context, op, p string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: %s %q: %w", op, p, err)
	}
	if err := ValidatePath(p); err != nil {
		return err // names the path and the reason; the sentinel's text carries the prefix
	}
	if isTempName(path.Base(p)) {
		return fmt.Errorf("%w %q: name is reserved for temporary files (%s)", ErrInvalidPath, p, op)
	}
	return nil
}

// Get returns the whole object.
func (l *Local) Get(ctx context.Context, p string) ([]byte, error) {
	if err := l.check(ctx, "get", p); err != nil {
		return nil, err
	}
	f, size, err := l.openRegular("get", p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, size)
	n, err := io.ReadFull(f, buf)
	if err != nil {
		return nil, fmt.Errorf("storage: get %q: read %d of %d bytes: %w", p, n, size, err)
	}
	// The file may have grown since fstat if another process appends to it in place;
	// Put never does that, so a longer file is returned as it was measured.
	return buf, nil
}

// Open returns a random-access view of the object.
func (l *Local) Open(ctx context.Context, p string) (File, error) {
	if err := l.check(ctx, "open", p); err != nil {
		return nil, err
	}
	f, size, err := l.openRegular("open", p)
	if err != nil {
		return nil, err
	}
	return &localFile{f: f, size: size, path: p}, nil
}

// openRegular opens p for reading and returns it with its size. Directories, special
// files and missing paths are reported as ErrNotExist: they are not objects.
func (l *Local) openRegular(op, p string) (*os.File, int64, error) {
	f, err := l.root.Open(p)
	if err != nil {
		return nil, 0, l.mapErr(op, p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("storage: %s %q: %w", op, p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("storage: %s %q: %w (not a regular file)", op, p, ErrNotExist)
	}
	return f, fi.Size(), nil
}

// mapErr wraps a filesystem error, translating "no such file" and "a path element is not
// a directory" into ErrNotExist.
func (l *Local) mapErr(op, p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("storage: %s %q: %w (%w)", op, p, ErrNotExist, err)
	}
	return fmt.Errorf("storage: %s %q: %w", op, p, err)
}

// Put writes the object atomically, replacing any previous one.
func (l *Local) Put(ctx context.Context, p string, data []byte) error {
	if err := l.check(ctx, "put", p); err != nil {
		return err
	}
	tmp, err := l.writeTemp("put", p, data)
	if err != nil {
		return err
	}
	if err := l.root.Rename(tmp, p); err != nil {
		l.root.Remove(tmp)
		return fmt.Errorf("storage: put %q: rename temporary file: %w", p, err)
	}
	if err := l.syncDir(path.Dir(p)); err != nil {
		return fmt.Errorf("storage: put %q: %w", p, err)
	}
	return nil
}

// PutIfAbsent creates the object only if nothing exists at p (invariant L2): the data is
// written and fsynced to a temporary file which is then hard-linked to p. link(2) fails
// with EEXIST when p exists, so of several concurrent callers exactly one succeeds and
// the others get an error wrapping ErrExist; the existing object is never modified.
//
// Errors before the link leave nothing behind. The one error possible after it, a failed
// fsync of the directory, means the object exists but its name may not survive a crash;
// callers that must know (a Delta commit) can Stat or Get the path to tell.
func (l *Local) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if err := l.check(ctx, "put-if-absent", p); err != nil {
		return err
	}
	tmp, err := l.writeTemp("put-if-absent", p, data)
	if err != nil {
		return err
	}
	return l.linkTemp("put-if-absent", tmp, p)
}

// linkTemp publishes the complete, fsynced temporary file tmp at p with put-if-absent
// semantics (invariant L2): link(2) fails with EEXIST when p exists, which is reported
// as ErrExist. The temporary name is removed either way and the directory is fsynced
// after a successful link.
func (l *Local) linkTemp(op, tmp, p string) error {
	linkErr := l.root.Link(tmp, p)
	// Drop the temporary name either way. If this fails after a successful link, the
	// leftover is hidden from List and harmless, so it must not turn a successful create
	// into an error the caller would misread as a failed commit.
	l.root.Remove(tmp)
	if linkErr != nil {
		if errors.Is(linkErr, fs.ErrExist) {
			return fmt.Errorf("storage: %s %q: %w", op, p, ErrExist)
		}
		return fmt.Errorf("storage: %s %q: link temporary file: %w", op, p, linkErr)
	}
	if err := l.syncDir(path.Dir(p)); err != nil {
		return fmt.Errorf("storage: %s %q: %w", op, p, err)
	}
	return nil
}

// writeTemp creates a temporary file beside p (see createTemp), writes data to it and
// fsyncs it. It returns the temporary file's path. On error nothing is left behind.
func (l *Local) writeTemp(op, p string, data []byte) (string, error) {
	f, tmp, err := l.createTemp(op, p)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		l.root.Remove(tmp)
		return "", fmt.Errorf("storage: %s %q: write temporary file: %w", op, p, err)
	}
	return tmp, nil
}

// createTemp creates the parent directories of p, then a new, uniquely named temporary
// file beside p, open for writing. It returns the file and its path.
func (l *Local) createTemp(op, p string) (*os.File, string, error) {
	dir := path.Dir(p)
	if dir != "." {
		if err := l.root.MkdirAll(dir, dirPerm); err != nil {
			return nil, "", fmt.Errorf("storage: %s %q: create directories: %w", op, p, err)
		}
	}
	var (
		f   *os.File
		tmp string
		err error
	)
	// O_EXCL makes a name collision (astronomically unlikely with 64 random bits) an
	// error instead of a shared file; retry with a fresh name a few times.
	for range 4 {
		tmp, err = tempName(p)
		if err != nil {
			return nil, "", fmt.Errorf("storage: %s %q: %w", op, p, err)
		}
		f, err = l.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("storage: %s %q: create temporary file: %w", op, p, err)
	}
	return f, tmp, nil
}

// syncDir fsyncs directory dir so that a rename, link or remove in it is durable.
// Windows cannot fsync directories; there it is a no-op.
func (l *Local) syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := l.root.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %q: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("sync directory %q: %w", dir, err)
	}
	return nil
}

// tempName returns a fresh temporary name in the directory of p.
func tempName(p string) (string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("random temporary name: %w", err)
	}
	base := path.Base(p)
	if len(base) > tempBaseMax {
		base = base[:tempBaseMax]
	}
	name := "." + base + "." + hex.EncodeToString(rnd[:]) + tempSuffix
	if dir := path.Dir(p); dir != "." {
		return dir + "/" + name, nil
	}
	return name, nil
}

// isTempName reports whether the file name (one path element) has the form of a
// temporary name made by tempName.
func isTempName(name string) bool {
	if len(name) < 1+1+16+len(tempSuffix) || name[0] != '.' || !strings.HasSuffix(name, tempSuffix) {
		return false
	}
	rest := strings.TrimSuffix(name, tempSuffix)
	dot := len(rest) - 17
	if rest[dot] != '.' {
		return false
	}
	for _, c := range []byte(rest[dot+1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Delete removes the object. Directories are not objects: deleting one reports
// ErrNotExist. Emptied parent directories are left in place.
func (l *Local) Delete(ctx context.Context, p string) error {
	if err := l.check(ctx, "delete", p); err != nil {
		return err
	}
	fi, err := l.root.Lstat(p)
	if err != nil {
		return l.mapErr("delete", p, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("storage: delete %q: %w (a directory)", p, ErrNotExist)
	}
	if err := l.root.Remove(p); err != nil {
		return l.mapErr("delete", p, err)
	}
	if err := l.syncDir(path.Dir(p)); err != nil {
		return fmt.Errorf("storage: delete %q: %w", p, err)
	}
	return nil
}

// Stat describes the object. Directories and special files report ErrNotExist.
func (l *Local) Stat(ctx context.Context, p string) (ObjectInfo, error) {
	if err := l.check(ctx, "stat", p); err != nil {
		return ObjectInfo{}, err
	}
	fi, err := l.root.Stat(p)
	if err != nil {
		return ObjectInfo{}, l.mapErr("stat", p, err)
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("storage: stat %q: %w (not a regular file)", p, ErrNotExist)
	}
	return ObjectInfo{Path: p, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// List walks the directory part of prefix recursively and returns the regular files
// whose path starts with prefix and sorts after startAfter, in ascending byte order.
// Subtrees that cannot contain a match are not read. A missing prefix directory yields
// an empty result. Symbolic links to regular files inside the root are listed; links to
// directories are not followed; temporary files of in-flight writes are skipped.
// The context is checked between directory entries.
func (l *Local) List(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: list %q: %w", prefix, err)
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	var out []ObjectInfo
	fsys := l.root.FS()
	err := fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if stop, err := walkError(ctx, d, err); stop {
			return err
		}
		if d.IsDir() {
			if p == "." {
				return nil
			}
			if !subtreeMayMatch(p+"/", prefix, startAfter) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(p, prefix) || p <= startAfter || isTempName(d.Name()) {
			return nil
		}
		var fi fs.FileInfo
		switch {
		case d.Type().IsRegular():
			fi, err = d.Info()
		case d.Type()&fs.ModeSymlink != 0:
			fi, err = l.root.Stat(p) // confined: a link leading outside fails here
		default:
			return nil // sockets, devices, pipes: not objects
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil // deleted meanwhile, dangling or escaping link, link to a directory
		}
		out = append(out, ObjectInfo{Path: p, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list %q under %q: %w", prefix, l.abs, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// walkError handles the context and the error a WalkDir callback receives: stop is
// true when the callback must return err at once (nil for an entry to pass over).
// Entries vanishing under a concurrent Delete, or a prefix directory that does not
// exist (or is a file), are simply not there to list.
func walkError(ctx context.Context, d fs.DirEntry, err error) (stop bool, _ error) {
	if cerr := ctx.Err(); cerr != nil {
		return true, cerr
	}
	if err == nil {
		return false, nil
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		if d != nil && d.IsDir() {
			return true, fs.SkipDir
		}
		return true, nil
	}
	return true, err
}

// subtreeMayMatch reports whether a directory whose entries all start with dir (ending
// in '/') can hold a path that starts with prefix and sorts after startAfter.
func subtreeMayMatch(dir, prefix, startAfter string) bool {
	if !strings.HasPrefix(dir, prefix) && !strings.HasPrefix(prefix, dir) {
		return false
	}
	// Every entry e has dir as a prefix. If dir < startAfter and startAfter does not
	// extend dir, then every such e < startAfter as well.
	if dir < startAfter && !strings.HasPrefix(startAfter, dir) {
		return false
	}
	return true
}

// localFile is the File returned by Local.Open.
type localFile struct {
	f    *os.File
	size int64
	path string
}

// ReadAt implements io.ReaderAt; a read that reaches the end of the object returns
// io.EOF together with the bytes it read.
func (f *localFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: read %q: negative offset %d", f.path, off)
	}
	n, err := f.f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("storage: read %q at %d: %w", f.path, off, err)
	}
	return n, err
}

// Close closes the underlying file.
func (f *localFile) Close() error {
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("storage: close %q: %w", f.path, err)
	}
	return nil
}

// Size is the object's length when it was opened.
func (f *localFile) Size() int64 { return f.size }
