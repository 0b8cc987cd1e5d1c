package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// tempFiles returns the names of temporary files in dir (one directory level).
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".skiplake-tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestLocalCreateTempFile: an open stream is a hidden temporary file beside its target,
// named like Put's temporary files, skipped by List and removed by Commit and by Abort.
func TestLocalCreateTempFile(t *testing.T) {
	ctx := context.Background()
	l := newLocal(t)
	for _, end := range []string{"Commit", "Abort"} {
		t.Run(end, func(t *testing.T) {
			dir := filepath.Join(l.Root(), "part="+end)
			p := "part=" + end + "/" + end + ".parquet"
			w, err := l.Create(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if _, err := w.Write(bytes.Repeat([]byte{'x'}, 3<<20)); err != nil {
				t.Fatal(err)
			}
			tmps := tempFiles(t, dir)
			if len(tmps) != 1 || !strings.HasPrefix(tmps[0], "."+end+".parquet.") {
				t.Fatalf("temporary files in %s while writing = %q, want one named after %q", dir, tmps, p)
			}
			fi, err := os.Stat(filepath.Join(dir, tmps[0]))
			if err != nil || fi.Size() < 2<<20 {
				t.Fatalf("temporary file holds %v bytes (%v); want the full buffers written through", fi, err)
			}
			list, err := l.List(ctx, "part="+end+"/", "")
			if err != nil || len(list) != 0 {
				t.Fatalf("List while writing = %v, %v; want nothing", list, err)
			}
			if _, err := l.Get(ctx, "part="+end+"/"+tmps[0]); !errors.Is(err, storage.ErrInvalidPath) {
				t.Fatalf("Get of the temporary name = %v, want ErrInvalidPath", err)
			}
			if _, err := l.Create(ctx, "part="+end+"/"+tmps[0]); !errors.Is(err, storage.ErrInvalidPath) {
				t.Fatalf("Create of a temporary name = %v, want ErrInvalidPath", err)
			}
			if end == "Commit" {
				err = w.Commit()
			} else {
				err = w.Abort()
			}
			if err != nil {
				t.Fatalf("%s: %v", end, err)
			}
			if tmps := tempFiles(t, dir); len(tmps) != 0 {
				t.Fatalf("temporary files after %s: %q", end, tmps)
			}
		})
	}
}

// TestLocalCreateCancelMidStream: Local checks the context whenever its buffer is written
// out, so a cancelled stream stops early; the error is sticky and Commit removes the
// temporary file.
func TestLocalCreateCancelMidStream(t *testing.T) {
	l := newLocal(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := l.Create(ctx, "big.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	chunk := make([]byte, 64<<10)
	if _, err := w.Write(chunk); err != nil {
		t.Fatal(err)
	}
	cancel()
	var werr error
	for i := 0; i < 64 && werr == nil; i++ { // 4 MiB: several buffer flushes
		_, werr = w.Write(chunk)
	}
	if !errors.Is(werr, context.Canceled) || !strings.HasPrefix(werr.Error(), `storage: write "big.parquet"`) {
		t.Fatalf("Write after cancel = %v, want a storage error wrapping context.Canceled", werr)
	}
	if _, err := w.Write([]byte("more")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write after a failed Write = %v, want the same error again", err)
	}
	if err := w.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit after a failed Write = %v, want context.Canceled", err)
	}
	if tmps := tempFiles(t, l.Root()); len(tmps) != 0 {
		t.Fatalf("temporary files after a failed Commit: %q", tmps)
	}
	if _, err := l.Stat(context.Background(), "big.parquet"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Stat = %v, want ErrNotExist", err)
	}
}

// TestLocalCreateAfterClose: a closed store creates nothing.
func TestLocalCreateAfterClose(t *testing.T) {
	root := t.TempDir()
	l, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err := l.Create(context.Background(), "x"); err == nil {
		w.Abort()
		t.Fatal("Create on a closed store succeeded")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("Create on a closed store left %v", entries)
	}
}

func TestCreateObjectNilStore(t *testing.T) {
	w, err := storage.CreateObject(context.Background(), nil, "x")
	if err == nil || w != nil || !strings.HasPrefix(err.Error(), "storage: ") {
		t.Fatalf("CreateObject(nil store) = %v, %v; want a storage error", w, err)
	}
}

// ExampleCreateObject streams a data file into a store, then shows that a second writer
// for the same path loses on Commit, as with PutIfAbsent.
func ExampleCreateObject() {
	ctx := context.Background()
	s := storage.NewMemory()

	w, err := storage.CreateObject(ctx, s, "part-00000.parquet")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Abort() // a no-op once Commit has been called
	for i := range 3 {
		fmt.Fprintf(w, "row group %d\n", i)
	}
	_, err = s.Stat(ctx, "part-00000.parquet")
	fmt.Println("visible before Commit:", !errors.Is(err, storage.ErrNotExist))
	fmt.Println("commit:", w.Commit())

	w2, _ := storage.CreateObject(ctx, s, "part-00000.parquet")
	fmt.Fprint(w2, "other")
	fmt.Println("second commit lost:", errors.Is(w2.Commit(), storage.ErrExist))

	data, _ := s.Get(ctx, "part-00000.parquet")
	fmt.Print(string(data))
	// Output:
	// visible before Commit: false
	// commit: <nil>
	// second commit lost: true
	// row group 0
	// row group 1
	// row group 2
}

// BenchmarkCreate streams an object in 64 KiB writes and commits it, natively and
// through CreateObject's buffering fallback. Reports MB/s (SetBytes) and objects/s.
func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	chunk := bytes.Repeat([]byte{0x5a}, 64<<10)
	for _, store := range []string{"local", "memory"} {
		for _, mode := range []string{"native", "fallback"} {
			for _, size := range []int{1 << 20, 8 << 20} {
				b.Run(fmt.Sprintf("store=%s/mode=%s/size=%dMiB", store, mode, size>>20), func(b *testing.B) {
					s := benchStores(b)[store](b)
					if mode == "fallback" {
						s = storagetest.WithoutCreator(s)
					}
					b.SetBytes(int64(size))
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						w, err := storage.CreateObject(ctx, s, fmt.Sprintf("data/part-%05d.parquet", i))
						if err != nil {
							b.Fatal(err)
						}
						for off := 0; off < size; off += len(chunk) {
							if _, err := w.Write(chunk); err != nil {
								b.Fatal(err)
							}
						}
						if err := w.Commit(); err != nil {
							b.Fatal(err)
						}
						i++
					}
					b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "objects/s")
				})
			}
		}
	}
}
