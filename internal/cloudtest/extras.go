package cloudtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/skiplake/skiplake/storage"
)

// LargeSize is the size of the objects RunExtras streams: above S3's 16 MiB multipart
// threshold and GCS's 16 MiB resumable chunk, so the multipart/resumable/staged-block
// upload paths (and their conditional completion) are the ones exercised.
const LargeSize = 20<<20 + 12345

// RunExtras runs the object-store checks that the storagetest suite's small objects do
// not reach: conditional creates of large (multipart) objects, aborting and cancelling
// them, and DeleteMany in batches. open returns an empty store.
func RunExtras(t *testing.T, open func(t *testing.T) storage.Storage) {
	t.Run("LargeCreateIsConditional", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		data := payload(1, LargeSize)
		if err := stream(ctx, s, "data/big.parquet", data); err != nil {
			t.Fatalf("streamed create of %d bytes: %v", len(data), err)
		}
		if got := mustGet(t, s, "data/big.parquet"); !bytes.Equal(got, data) {
			t.Fatalf("Get returned %d bytes that differ from the %d streamed", len(got), len(data))
		}
		// A second large create of the same path loses at completion time and changes nothing.
		err := stream(ctx, s, "data/big.parquet", payload(2, LargeSize))
		if !errors.Is(err, storage.ErrExist) {
			t.Fatalf("second large create = %v, want ErrExist", err)
		}
		if got := mustGet(t, s, "data/big.parquet"); !bytes.Equal(got, data) {
			t.Fatal("the losing large create changed the object")
		}
		// And a large create over a small object made by PutIfAbsent loses too.
		if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if err := stream(ctx, s, "_delta_log/00000000000000000001.json", payload(3, LargeSize)); !errors.Is(err, storage.ErrExist) {
			t.Fatalf("large create over a commit = %v, want ErrExist", err)
		}
		if got := mustGet(t, s, "_delta_log/00000000000000000001.json"); string(got) != "v1" {
			t.Fatalf("commit changed to %d bytes", len(got))
		}
	})
	t.Run("LargeAbortLeavesNothing", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		w, err := storage.CreateObject(ctx, s, "data/aborted.parquet")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(payload(4, LargeSize)); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		mustBeEmpty(t, s)
	})
	t.Run("LargeCancelLeavesNothing", func(t *testing.T) {
		s := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w, err := storage.CreateObject(ctx, s, "data/cancelled.parquet")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		data := payload(5, LargeSize)
		if _, err := w.Write(data[:LargeSize/2]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		cancel()
		w.Write(data[LargeSize/2:]) // may fail with the context's error
		if err := w.Commit(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Commit after cancel = %v, want context.Canceled", err)
		}
		mustBeEmpty(t, s)
	})
	t.Run("DeleteManyInBatches", func(t *testing.T) {
		s := open(t)
		ctx := context.Background()
		const n = 2345 // three S3 DeleteObjects batches
		paths := make([]string, n)
		storage.ForEachLimit(ctx, n, 32, func(ctx context.Context, i int) {
			paths[i] = fmt.Sprintf("part=%d/f-%05d.parquet", i%7, i)
			if err := s.Put(ctx, paths[i], []byte{byte(i)}); err != nil {
				t.Error(err)
			}
		})
		if t.Failed() {
			return
		}
		if err := s.Put(ctx, "keep/me", []byte("k")); err != nil {
			t.Fatal(err)
		}
		for i, err := range storage.DeleteMany(ctx, s, paths) {
			if err != nil {
				t.Fatalf("DeleteMany: %s: %v", paths[i], err)
			}
		}
		list, err := s.List(ctx, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Path != "keep/me" {
			t.Fatalf("after DeleteMany List has %d objects, want only keep/me", len(list))
		}
	})
}

func stream(ctx context.Context, s storage.Storage, p string, data []byte) error {
	w, err := storage.CreateObject(ctx, s, p)
	if err != nil {
		return err
	}
	defer w.Abort()
	for len(data) > 0 {
		n := min(len(data), 1<<20)
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return w.Commit()
}

func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustGet(t *testing.T, s storage.Storage, p string) []byte {
	t.Helper()
	b, err := s.Get(context.Background(), p)
	if err != nil {
		t.Fatalf("Get(%q): %v", p, err)
	}
	return b
}

func mustBeEmpty(t *testing.T, s storage.Storage) {
	t.Helper()
	list, err := s.List(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("store holds %d objects, want none (first %q)", len(list), list[0].Path)
	}
}
