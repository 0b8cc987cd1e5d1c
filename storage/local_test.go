package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/skiplake/skiplake/internal/goldentest"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// newLocal returns a Local rooted at <tempdir>/root, so that the temp dir itself is the
// root's parent and belongs to this test alone (the conformance suite checks it is left
// untouched by rejected paths).
func newLocal(t *testing.T) *storage.Local {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

func TestLocalConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage { return newLocal(t) })
}

func TestNewLocal(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("missing root wraps both ErrNotExist sentinels", func(t *testing.T) {
		_, err := storage.NewLocal(filepath.Join(dir, "missing"))
		if !errors.Is(err, storage.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("NewLocal(missing) = %v, want ErrNotExist and fs.ErrNotExist", err)
		}
		if _, serr := os.Stat(filepath.Join(dir, "missing")); !errors.Is(serr, fs.ErrNotExist) {
			t.Fatal("NewLocal created the missing root")
		}
	})
	t.Run("a file is not a root", func(t *testing.T) {
		if _, err := storage.NewLocal(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("NewLocal(file) = %v, want a not-a-directory error", err)
		}
	})
	t.Run("relative root becomes absolute", func(t *testing.T) {
		t.Chdir(dir)
		if err := os.Mkdir("rel", 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := storage.NewLocal("rel")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if want := filepath.Join(dir, "rel"); l.Root() != want {
			t.Fatalf("Root() = %q, want %q", l.Root(), want)
		}
	})
	t.Run("methods fail cleanly after Close", func(t *testing.T) {
		l, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Get(context.Background(), "file"); err == nil {
			t.Fatal("Get after Close succeeded")
		}
		if err := l.Put(context.Background(), "other", nil); err == nil {
			t.Fatal("Put after Close succeeded")
		}
	})
}

// TestLocalSymlinks: os.Root keeps symbolic links from leading outside the root, for
// reads, writes and listing, while links that stay inside keep working.
func TestLocalSymlinks(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	outside := filepath.Join(filepath.Dir(l.Root()), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(l.Root(), name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	mustSymlink(outside, "dirlink")         // absolute link to a directory outside
	mustSymlink("../outside/secret", "rel") // relative link escaping
	mustSymlink(secret, "abs")              // absolute link to a file outside
	if err := l.Put(ctx, "real/inside", []byte("inside")); err != nil {
		t.Fatal(err)
	}
	mustSymlink("real/inside", "goodlink") // stays inside

	for _, p := range []string{"dirlink/secret", "rel", "abs"} {
		if b, err := l.Get(ctx, p); err == nil {
			t.Errorf("Get(%q) read %q from outside the root", p, b)
		}
		if _, err := l.Stat(ctx, p); err == nil {
			t.Errorf("Stat(%q) succeeded through an escaping link", p)
		}
	}
	if err := l.Put(ctx, "dirlink/planted", []byte("x")); err == nil {
		t.Error("Put through a link to an outside directory succeeded")
	}
	if err := l.PutIfAbsent(ctx, "dirlink/planted2", []byte("x")); err == nil {
		t.Error("PutIfAbsent through a link to an outside directory succeeded")
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the outside directory now holds %d entries, want only the secret", len(entries))
	}
	if got, err := l.Get(ctx, "goodlink"); err != nil || string(got) != "inside" {
		t.Errorf("Get(goodlink) = %q, %v; want the inside object", got, err)
	}
	list, err := l.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range list {
		got = append(got, o.Path)
	}
	if want := []string{"goodlink", "real/inside"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q (escaping links omitted, directory links not followed)", got, want)
	}
}

// TestLocalTempFiles: temporary files never outlive a write, a crashed writer's leftovers
// are hidden from List, and their names are reserved.
func TestLocalTempFiles(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				p := fmt.Sprintf("_delta_log/%020d.json", i)
				err := l.PutIfAbsent(ctx, p, []byte(fmt.Sprint(g)))
				if err != nil && !errors.Is(err, storage.ErrExist) {
					t.Error(err)
				}
				if err := l.Put(ctx, fmt.Sprintf("data/%d-%d", g, i), []byte("x")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var leftovers []string
	err := filepath.WalkDir(l.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".skiplake-tmp") {
			leftovers = append(leftovers, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(leftovers) > 0 {
		t.Fatalf("temporary files left behind: %q", leftovers)
	}

	crashed := "._last_checkpoint.0123456789abcdef.skiplake-tmp"
	if err := os.WriteFile(filepath.Join(l.Root(), "_delta_log", crashed), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := l.List(ctx, "_delta_log/", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 20 {
		t.Fatalf("List(_delta_log/) has %d entries, want the 20 commits and no temporary file", len(list))
	}
	if _, err := l.Get(ctx, "_delta_log/"+crashed); !errors.Is(err, storage.ErrInvalidPath) {
		t.Fatalf("Get of a temporary name = %v, want ErrInvalidPath", err)
	}
	if err := l.Put(ctx, crashed, nil); !errors.Is(err, storage.ErrInvalidPath) {
		t.Fatalf("Put of a temporary name = %v, want ErrInvalidPath", err)
	}
	// Names that merely resemble temporary names are ordinary objects.
	for _, p := range []string{".x.0123456789abcdeg.skiplake-tmp", "x.0123456789abcdef.skiplake-tmp", ".x.tmp", ".skiplake-tmp"} {
		if err := l.Put(ctx, p, []byte(p)); err != nil {
			t.Errorf("Put(%q) = %v, want an ordinary object", p, err)
		}
		if got, err := l.Get(ctx, p); err != nil || string(got) != p {
			t.Errorf("Get(%q) = %q, %v", p, got, err)
		}
	}
}

// TestLocalLongNames: the temporary name of a target whose name is at the filesystem's
// limit still fits, because only a bounded part of the name goes into it.
func TestLocalLongNames(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	name := "dir/" + strings.Repeat("n", 255)
	if err := l.PutIfAbsent(ctx, name, []byte("long")); err != nil {
		t.Fatalf("PutIfAbsent with a 255-byte name: %v", err)
	}
	if err := l.Put(ctx, name, []byte("longer")); err != nil {
		t.Fatalf("Put with a 255-byte name: %v", err)
	}
	if got, err := l.Get(ctx, name); err != nil || string(got) != "longer" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}

// TestLocalDirectoriesAreNotObjects: a directory, even an empty one, is invisible to
// Get, Stat, Delete and List, and PutIfAbsent over it does not replace it.
func TestLocalDirectoriesAreNotObjects(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	if err := os.MkdirAll(filepath.Join(l.Root(), "empty", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "empty"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Get(dir) = %v, want ErrNotExist", err)
	}
	if err := l.Delete(ctx, "empty/dir"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Delete(dir) = %v, want ErrNotExist", err)
	}
	if list, err := l.List(ctx, "", ""); err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v; want nothing", list, err)
	}
	if err := l.PutIfAbsent(ctx, "empty", []byte("x")); err == nil {
		t.Error("PutIfAbsent over a directory succeeded")
	}
	if fi, err := os.Stat(filepath.Join(l.Root(), "empty")); err != nil || !fi.IsDir() {
		t.Errorf("the directory was replaced: %v, %v", fi, err)
	}
}

// TestLocalGoldenTables lists and reads every file of the golden Delta tables (names with
// spaces, '%', ':', '+', non-ASCII) through Local and compares with the filesystem.
func TestLocalGoldenTables(t *testing.T) {
	dir := goldenDir(t)
	l, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	var want []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		want = append(want, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	list, err := l.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range list {
		got = append(got, o.Path)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List of the golden tree differs from the filesystem: %d vs %d entries", len(got), len(want))
	}
	special := 0
	for _, o := range list {
		data, err := l.Get(ctx, o.Path)
		if err != nil {
			t.Fatalf("Get(%q): %v", o.Path, err)
		}
		disk, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(o.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, disk) || o.Size != int64(len(disk)) {
			t.Fatalf("Get(%q) differs from the file on disk", o.Path)
		}
		if strings.ContainsAny(o.Path, "% :+") {
			special++
		}
	}
	if special == 0 {
		t.Fatal("the golden tree has no paths with special characters; the test lost its point")
	}
	// A log listing from a version, as snapshot loading does it.
	const log = "delta-golden/multi-part-checkpoint/delta/_delta_log/"
	from, err := l.List(ctx, log+"0000000000000000000", log+"00000000000000000001.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range from {
		if !strings.HasPrefix(o.Path, log) || o.Path <= log+"00000000000000000001.json" {
			t.Fatalf("List from version 1 returned %q", o.Path)
		}
	}
}

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t *testing.T) string { return goldentest.Dir(t) }
