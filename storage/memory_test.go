package storage_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/storagetest"
)

func TestMemoryConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage { return storage.NewMemory() })
}

func TestMemoryClock(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMemory()
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	m.SetClock(func() time.Time { return now })
	if err := m.Put(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(time.Hour)
	if err := m.PutIfAbsent(ctx, "b", []byte("2")); err != nil {
		t.Fatal(err)
	}
	list, err := m.List(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !list[0].ModTime.Equal(t0) || !list[1].ModTime.Equal(t0.Add(time.Hour)) {
		t.Fatalf("ModTimes = %v, %v; want the clock's times", list[0].ModTime, list[1].ModTime)
	}

	t.Run("SetModTime changes an existing object", func(t *testing.T) {
		old := t0.Add(-30 * 24 * time.Hour)
		if err := m.SetModTime("a", old); err != nil {
			t.Fatal(err)
		}
		fi, err := m.Stat(ctx, "a")
		if err != nil || !fi.ModTime.Equal(old) {
			t.Fatalf("Stat = %+v, %v; want ModTime %v", fi, err, old)
		}
	})
	t.Run("SetModTime of a missing object is ErrNotExist", func(t *testing.T) {
		if err := m.SetModTime("missing", t0); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("SetModTime(missing) = %v", err)
		}
	})
	t.Run("SetModTime validates the path", func(t *testing.T) {
		if err := m.SetModTime("../a", t0); !errors.Is(err, storage.ErrInvalidPath) {
			t.Fatalf("SetModTime(../a) = %v", err)
		}
	})
	t.Run("SetClock(nil) restores the wall clock", func(t *testing.T) {
		m.SetClock(nil)
		before := time.Now()
		if err := m.Put(ctx, "c", nil); err != nil {
			t.Fatal(err)
		}
		fi, err := m.Stat(ctx, "c")
		if err != nil || fi.ModTime.Before(before) {
			t.Fatalf("Stat = %+v, %v; want a ModTime from time.Now", fi, err)
		}
	})
}

// TestMemoryOpenIsASnapshot: an open File keeps the bytes it was opened with, like an
// open file descriptor on the local filesystem after an atomic replace.
func TestMemoryOpenIsASnapshot(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMemory()
	if err := m.Put(ctx, "a", []byte("old")); err != nil {
		t.Fatal(err)
	}
	f, err := m.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := m.Put(ctx, "a", []byte("newer")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if n, err := f.ReadAt(buf, 0); n != 3 || string(buf) != "old" || (err != nil && err != io.EOF) {
		t.Fatalf("ReadAt = %d, %q, %v; want the old bytes", n, buf, err)
	}
}
