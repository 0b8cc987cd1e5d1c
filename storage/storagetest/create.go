package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// WithoutCreator returns s with only the methods of storage.Storage, hiding any optional
// capability such as storage.Creator, so that storage.CreateObject takes its buffering
// fallback. Run uses it to check the fallback against every store; tests of callers can
// use it to exercise both paths.
func WithoutCreator(s storage.Storage) storage.Storage { return hiddenCaps{s} }

// hiddenCaps embeds the interface, so only its methods are promoted.
type hiddenCaps struct{ storage.Storage }

// createFunc opens a streaming writer in the store under test, natively or through the
// fallback.
type createFunc func(ctx context.Context, p string) (storage.ObjectWriter, error)

var createTests = []struct {
	name string
	fn   func(t *testing.T, s storage.Storage, create createFunc)
}{
	{"StreamedBytesEqualObject", testCreateRoundTrip},
	{"InvisibleBeforeCommit", testCreateInvisible},
	{"AbortLeavesNothing", testCreateAbort},
	{"CommitOnExistingIsErrExist", testCreateExisting},
	{"EmptyObject", testCreateEmpty},
	{"DoesNotRetainSlices", testCreateNoRetain},
	{"InvalidPath", testCreateInvalidPath},
	{"Context", testCreateContext},
	{"LargeStreamSmallWrites", testCreateLarge},
	{"RaceCommit", testCreateRace},
}

// runCreate runs the streaming-write tests twice: against the store's own Create when it
// implements storage.Creator (skipped otherwise), and against storage.CreateObject's
// fallback on the same kind of store with the capability hidden.
func runCreate(t *testing.T, newStore func(t *testing.T) storage.Storage) {
	t.Helper()
	for _, mode := range []string{"Native", "Fallback"} {
		t.Run("Create/"+mode, func(t *testing.T) {
			for _, tc := range createTests {
				t.Run(tc.name, func(t *testing.T) {
					s := newStore(t)
					var create createFunc
					if mode == "Native" {
						c, ok := s.(storage.Creator)
						if !ok {
							t.Skipf("%T does not implement storage.Creator", s)
						}
						create = c.Create
					} else {
						hidden := WithoutCreator(s)
						if _, ok := hidden.(storage.Creator); ok {
							t.Fatal("WithoutCreator did not hide storage.Creator")
						}
						create = func(ctx context.Context, p string) (storage.ObjectWriter, error) {
							return storage.CreateObject(ctx, hidden, p)
						}
					}
					tc.fn(t, s, create)
				})
			}
		})
	}
}

// streamPayload returns n pseudo-random bytes determined by seed.
func streamPayload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b[:n]
}

// writeChunks writes data to w in pieces of 1..maxChunk bytes (chosen by seed), checking
// that every Write takes the whole piece.
func writeChunks(t *testing.T, w storage.ObjectWriter, data []byte, maxChunk int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	for off := 0; off < len(data); {
		n := min(1+r.IntN(maxChunk), len(data)-off)
		m, err := w.Write(data[off : off+n])
		if err != nil || m != n {
			t.Fatalf("Write of %d bytes at offset %d = %d, %v", n, off, m, err)
		}
		off += n
	}
}

// mustCreate opens a writer or fails the test.
func mustCreate(t *testing.T, create createFunc, p string) storage.ObjectWriter {
	t.Helper()
	w, err := create(context.Background(), p)
	if err != nil {
		t.Fatalf("Create(%q): %v", p, err)
	}
	if w == nil {
		t.Fatalf("Create(%q) returned a nil writer and no error", p)
	}
	return w
}

// mustNotExist checks that p is invisible to Get, Open and Stat.
func mustNotExist(t *testing.T, s storage.Storage, p string) {
	t.Helper()
	ctx := context.Background()
	if b, err := s.Get(ctx, p); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Get(%q) = %d bytes, %v; want ErrNotExist", p, len(b), err)
	}
	if f, err := s.Open(ctx, p); !errors.Is(err, storage.ErrNotExist) {
		if err == nil {
			f.Close()
		}
		t.Fatalf("Open(%q) = %v, want ErrNotExist", p, err)
	}
	if fi, err := s.Stat(ctx, p); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Stat(%q) = %+v, %v; want ErrNotExist", p, fi, err)
	}
}

// checkNoStrays checks, for stores with a root directory, that every file under it is
// an object List reports: no temporary file of a finished write is left behind.
func checkNoStrays(t *testing.T, s storage.Storage) {
	t.Helper()
	r, ok := s.(Rooted)
	if !ok {
		return
	}
	root := r.Root()
	objects := map[string]bool{}
	for _, o := range mustList(t, s, "", "") {
		objects[o.Path] = true
	}
	var strays []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if !objects[filepath.ToSlash(rel)] {
			strays = append(strays, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(strays) > 0 {
		t.Fatalf("files under the root that are not objects (leftover temporary files?): %q", strays)
	}
}

func testCreateRoundTrip(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	sizes := []int{0, 1, 17, 4096, 4097, 100_000, 1<<20 + 3}
	for i, name := range oddNames {
		data := streamPayload(uint64(i), sizes[i%len(sizes)])
		w := mustCreate(t, create, name)
		writeChunks(t, w, data, 3000, uint64(i))
		if err := w.Commit(); err != nil {
			t.Fatalf("Commit(%q): %v", name, err)
		}
		if got := mustGet(t, s, name); !bytes.Equal(got, data) {
			t.Fatalf("Get(%q) after a streamed create = %d bytes, want the %d bytes written", name, len(got), len(data))
		}
		fi, err := s.Stat(ctx, name)
		if err != nil || fi.Path != name || fi.Size != int64(len(data)) {
			t.Fatalf("Stat(%q) = %+v, %v; want size %d", name, fi, err, len(data))
		}
	}
	if got, want := paths(mustList(t, s, "", "")), sorted(oddNames); !slices.Equal(got, want) {
		t.Fatalf("List after streamed creates = %q\nwant %q", got, want)
	}
	checkNoStrays(t, s)
}

func testCreateInvisible(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	const p = "dir/sub/part-00000.snappy.parquet"
	if err := s.Put(ctx, "dir/other", []byte("other")); err != nil {
		t.Fatal(err)
	}
	data := streamPayload(1, 5<<19) // 2.5 MiB: more than a write buffer reaches the medium
	w := mustCreate(t, create, p)
	writeChunks(t, w, data, 64<<10, 1)
	mustNotExist(t, s, p)
	for _, prefix := range []string{"", "dir/", "dir/sub/", "dir/sub/part"} {
		want := []string(nil)
		if prefix == "" || prefix == "dir/" {
			want = []string{"dir/other"}
		}
		if got := paths(mustList(t, s, prefix, "")); !slices.Equal(got, want) {
			t.Fatalf("List(%q) while the writer is open = %q, want %q", prefix, got, want)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := mustGet(t, s, p); !bytes.Equal(got, data) {
		t.Fatalf("Get after Commit = %d bytes, want %d", len(got), len(data))
	}
	if got, want := paths(mustList(t, s, "dir/", "")), []string{"dir/other", p}; !slices.Equal(got, want) {
		t.Fatalf("List(dir/) after Commit = %q, want %q", got, want)
	}
	// The writer has ended: Commit and Abort are no-ops, Write fails with fs.ErrClosed.
	if err := w.Commit(); err != nil {
		t.Fatalf("second Commit = %v, want nil", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after Commit = %v, want nil", err)
	}
	if _, err := w.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Write after Commit = %v, want fs.ErrClosed", err)
	}
	if got := mustGet(t, s, p); !bytes.Equal(got, data) {
		t.Fatalf("Abort after Commit changed the object to %d bytes", len(got))
	}
	checkNoStrays(t, s)
}

func testCreateAbort(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	if err := s.Put(ctx, "keep", []byte("keep")); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 10, 3 << 20} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			p := fmt.Sprintf("_delta_log/aborted-%d.json", size)
			w := mustCreate(t, create, p)
			writeChunks(t, w, streamPayload(2, size), 100_000, 2)
			if err := w.Abort(); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			mustNotExist(t, s, p)
			if got := paths(mustList(t, s, "", "")); !slices.Equal(got, []string{"keep"}) {
				t.Fatalf("List after Abort = %q, want [keep]", got)
			}
			checkNoStrays(t, s)
			if err := w.Abort(); err != nil {
				t.Fatalf("second Abort = %v, want nil", err)
			}
			if err := w.Commit(); err != nil {
				t.Fatalf("Commit after Abort = %v, want nil (a no-op)", err)
			}
			mustNotExist(t, s, p)
			if _, err := w.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
				t.Fatalf("Write after Abort = %v, want fs.ErrClosed", err)
			}
			// The aborted write does not block a later create of the same path.
			w2 := mustCreate(t, create, p)
			if _, err := w2.Write([]byte("second try")); err != nil {
				t.Fatal(err)
			}
			if err := w2.Commit(); err != nil {
				t.Fatalf("Commit after an aborted create of the same path: %v", err)
			}
			if got := mustGet(t, s, p); string(got) != "second try" {
				t.Fatalf("Get = %q, want %q", got, "second try")
			}
			if err := s.Delete(ctx, p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func testCreateExisting(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	setups := []struct {
		name string
		make func(p string) error
	}{
		{"Put", func(p string) error { return s.Put(ctx, p, []byte("v0 by "+p)) }},
		{"PutIfAbsent", func(p string) error { return s.PutIfAbsent(ctx, p, []byte("v0 by "+p)) }},
		{"streamed", func(p string) error {
			w, err := create(ctx, p)
			if err != nil {
				return err
			}
			defer w.Abort()
			if _, err := w.Write([]byte("v0 by " + p)); err != nil {
				return err
			}
			return w.Commit()
		}},
	}
	for _, su := range setups {
		t.Run("existing object made by "+su.name, func(t *testing.T) {
			p := "_delta_log/00000000000000000000.json." + su.name
			if err := su.make(p); err != nil {
				t.Fatalf("making the existing object: %v", err)
			}
			w := mustCreate(t, create, p)
			writeChunks(t, w, streamPayload(3, 3<<19), 50_000, 3)
			err := w.Commit()
			if !errors.Is(err, storage.ErrExist) {
				t.Fatalf("Commit over an existing object = %v, want ErrExist", err)
			}
			if got := mustGet(t, s, p); string(got) != "v0 by "+p {
				t.Fatalf("the losing Commit changed the object to %d bytes %.20q", len(got), got)
			}
			if err := w.Commit(); err != nil {
				t.Fatalf("Commit after a failed Commit = %v, want nil (a no-op)", err)
			}
			checkNoStrays(t, s)
		})
	}
	t.Run("interleaved writers", func(t *testing.T) {
		const p = "data/part-00001.parquet"
		w1 := mustCreate(t, create, p)
		w2 := mustCreate(t, create, p)
		if _, err := w1.Write([]byte("first writer")); err != nil {
			t.Fatal(err)
		}
		if _, err := w2.Write([]byte("second writer, longer")); err != nil {
			t.Fatal(err)
		}
		if err := w2.Commit(); err != nil {
			t.Fatalf("first Commit: %v", err)
		}
		if err := w1.Commit(); !errors.Is(err, storage.ErrExist) {
			t.Fatalf("second Commit = %v, want ErrExist", err)
		}
		if got := mustGet(t, s, p); string(got) != "second writer, longer" {
			t.Fatalf("Get = %q, want the first committer's bytes", got)
		}
		checkNoStrays(t, s)
	})
}

func testCreateEmpty(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	const p = "empty/_SUCCESS"
	w := mustCreate(t, create, p)
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit without Write: %v", err)
	}
	got := mustGet(t, s, p)
	if got == nil || len(got) != 0 {
		t.Fatalf("Get of a streamed empty object = %#v, want a non-nil empty slice", got)
	}
	fi, err := s.Stat(ctx, p)
	if err != nil || fi.Size != 0 {
		t.Fatalf("Stat = %+v, %v; want size 0", fi, err)
	}
	if got := paths(mustList(t, s, "", "")); !slices.Equal(got, []string{p}) {
		t.Fatalf("List = %q, want [%s]", got, p)
	}
}

func testCreateNoRetain(t *testing.T, s storage.Storage, create createFunc) {
	const p = "reuse"
	w := mustCreate(t, create, p)
	buf := []byte("abc")
	for _, c := range []byte("xyz") {
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
		buf[0], buf[1], buf[2] = c, c, c // the writer must have taken the bytes already
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, p); string(got) != "abcxxxyyy" {
		t.Fatalf("Get = %q, want %q: the writer kept a reference to a caller's slice", got, "abcxxxyyy")
	}
}

func testCreateInvalidPath(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	var before map[string]string
	var parent, root string
	if r, ok := s.(Rooted); ok {
		root = filepath.Clean(r.Root())
		parent = filepath.Dir(root)
		before = snapshot(t, parent, "")
	}
	for _, bp := range badPaths {
		w, err := create(ctx, bp.path)
		if !errors.Is(err, storage.ErrInvalidPath) {
			t.Errorf("Create(%q) (%s) = %v, want ErrInvalidPath", bp.path, bp.name, err)
		}
		if w != nil {
			w.Abort()
			t.Errorf("Create(%q) (%s) returned a writer with its error", bp.path, bp.name)
		}
	}
	if list := mustList(t, s, "", ""); len(list) != 0 {
		t.Errorf("rejected creates made objects: %q", paths(list))
	}
	if before != nil {
		// Not even a directory or a temporary file, inside the root or next to it.
		if after := snapshot(t, parent, ""); !maps.Equal(before, after) {
			t.Errorf("rejected creates changed the directory tree around %s:\nbefore %v\nafter  %v", root, before, after)
		}
	}
}

func testCreateContext(t *testing.T, s storage.Storage, create createFunc) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"Create with a cancelled context", cancelled, context.Canceled},
		{"Create with an expired deadline", expired, context.DeadlineExceeded},
	} {
		w, err := create(c.ctx, "never")
		if !errors.Is(err, c.want) {
			t.Errorf("%s = %v, want %v", c.name, err, c.want)
		}
		if w != nil {
			w.Abort()
			t.Errorf("%s returned a writer with its error", c.name)
		}
	}

	// A context cancelled while the writer is open makes Commit fail and publish
	// nothing. Writes after the cancellation may fail early, with the context's error.
	ctx, cancel3 := context.WithCancel(live)
	defer cancel3()
	const p = "data/cancelled.parquet"
	w, err := create(ctx, p)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer w.Abort()
	writeChunks(t, w, streamPayload(4, 1000), 100, 4)
	cancel3()
	if _, err := w.Write(streamPayload(5, 2<<20)); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Write after cancellation = %v, want nil or context.Canceled", err)
	}
	if err := w.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit after cancellation = %v, want context.Canceled", err)
	}
	mustNotExist(t, s, p)
	if list := mustList(t, s, "", ""); len(list) != 0 {
		t.Fatalf("cancelled creates made objects: %q", paths(list))
	}
	checkNoStrays(t, s)
}

func testCreateLarge(t *testing.T, s storage.Storage, create createFunc) {
	ctx := context.Background()
	const p = "data/large.parquet"
	data := streamPayload(6, 8<<20)
	w := mustCreate(t, create, p)
	writeChunks(t, w, data, 8191, 6) // about 2,000 small writes
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := mustGet(t, s, p); !bytes.Equal(got, data) {
		t.Fatalf("Get = %d bytes differing from the 8 MiB streamed", len(got))
	}
	f, err := s.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != int64(len(data)) {
		t.Fatalf("Open: Size = %d, want %d", f.Size(), len(data))
	}
	tail := make([]byte, 8)
	if n, err := f.ReadAt(tail, int64(len(data)-8)); n != 8 || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(tail, data[len(data)-8:]) {
		t.Fatalf("ReadAt of the last 8 bytes = %d, %v, %x; want %x", n, err, tail, data[len(data)-8:])
	}
	checkNoStrays(t, s)
}

// testCreateRace: 8 goroutines × 50 rounds, each round a fresh name that every goroutine
// streams its own payload to and commits. Exactly one commits, the others get ErrExist,
// and the stored bytes are the winner's (invariants L2 and S1).
func testCreateRace(t *testing.T, s storage.Storage, create createFunc) {
	raceRounds(t, s, 8, 50, func(round int) string { return fmt.Sprintf("data/%05d.parquet", round) },
		func(ctx context.Context, name string, data []byte) error {
			w, err := create(ctx, name)
			if err != nil {
				return fmt.Errorf("calling Create: %w", err)
			}
			defer w.Abort()
			for len(data) > 0 {
				n := min(7, len(data))
				if _, err := w.Write(data[:n]); err != nil {
					return fmt.Errorf("calling Write: %w", err)
				}
				data = data[n:]
			}
			return w.Commit()
		})
	checkNoStrays(t, s)
}
