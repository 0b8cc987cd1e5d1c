package storage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/storage"
)

// A write abandoned between Create and Commit (the process was killed) leaves a
// temporary file that List never shows; ListTemp finds it and DeleteTemp removes it.
func TestLocalListAndDeleteAbandonedTemporaries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var _ storage.TempCleaner = st
	w, err := st.Create(ctx, "p=1/part-1.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(strings.Repeat("x", 3<<20))); err != nil { // past the buffer: on disk
		t.Fatal(err)
	}
	// Abandoned: neither Commit nor Abort (as after kill -9).
	if err := st.Put(ctx, "p=1/kept.parquet", []byte("data")); err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, "", "")
	if err != nil || len(objs) != 1 {
		t.Fatalf("List %v %v", objs, err)
	}
	temps, err := st.ListTemp(ctx, "")
	if err != nil || len(temps) != 1 || !strings.HasPrefix(temps[0].Path, "p=1/.part-1.parquet.") || temps[0].Size < 1<<20 {
		t.Fatalf("ListTemp %+v %v", temps, err)
	}
	if got, _ := st.ListTemp(ctx, "q/"); len(got) != 0 {
		t.Fatalf("ListTemp outside the prefix: %v", got)
	}
	if err := st.DeleteTemp(ctx, "p=1/kept.parquet"); !errors.Is(err, storage.ErrInvalidPath) {
		t.Fatalf("DeleteTemp of an object: %v", err)
	}
	if err := st.DeleteTemp(ctx, "../"+filepath.Base(dir)+"/"+temps[0].Path); !errors.Is(err, storage.ErrInvalidPath) {
		t.Fatalf("DeleteTemp escaping the root: %v", err)
	}
	if err := st.DeleteTemp(ctx, temps[0].Path); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.ListTemp(ctx, ""); len(got) != 0 {
		t.Fatalf("after DeleteTemp: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "p=1", "kept.parquet")); err != nil {
		t.Fatal(err)
	}
	_ = w.Abort() // the temporary is gone already; Abort still succeeds
}
