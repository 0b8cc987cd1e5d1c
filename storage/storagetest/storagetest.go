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
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// Rooted is storage.Rooted, re-exported for the suite's callers. Run uses it on stores
// that live in a local directory (storage.Local) to check that rejected paths create
// nothing next to the root: give each store a root whose parent directory belongs to the
// test alone (for example filepath.Join(t.TempDir(), "root")), since Run compares the
// parent's contents before and after.
type Rooted = storage.Rooted

// Run runs the conformance suite against stores made by newStore. newStore is called
// once per subtest and must return an empty store, cleaned up by the test (t.Cleanup).
// Subtests run sequentially; the concurrency tests start their own goroutines.
func Run(t *testing.T, newStore func(t *testing.T) storage.Storage) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Storage)
	}{
		{"RoundTrip", testRoundTrip},
		{"CopiesInAndOut", testCopies},
		{"Overwrite", testOverwrite},
		{"PutIfAbsent", testPutIfAbsent},
		{"NotExist", testNotExist},
		{"EmptyObject", testEmptyObject},
		{"LargeObject", testLargeObject},
		{"OpenReadAt", testOpenReadAt},
		{"Stat", testStat},
		{"Delete", testDelete},
		{"List", testList},
		{"ListOracle", testListOracle},
		{"Confinement", testConfinement},
		{"ContextCancelled", testContextCancelled},
		{"RacePutIfAbsent", testRacePutIfAbsent},
		{"ConcurrentDistinct", testConcurrentDistinct},
		{"ConcurrentPutAtomic", testConcurrentPutAtomic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
	runCreate(t, newStore)
}

// oddNames are object paths a store must accept and keep byte for byte: the decoded
// forms of paths found in real Delta tables, and literal percent sequences.
var oddNames = []string{
	"f",
	"_delta_log/00000000000000000000.json",
	"_delta_log/_last_checkpoint",
	"part=2021-09-08 11:11:11/part-00000.snappy.parquet",
	"part=2021-09-08 11%3A11%3A11/part-00000.snappy.parquet",
	"x=A%2FA/part-00007.c000.snappy.parquet",
	"x=B B/part-00015.parquet",
	"_2=bar+%22/x.parquet",
	"a+b=c/d=e/f",
	"%2e%2e/literal percent dot dot",
	"%2F",
	"non-ascii/ünïcødé/日本語.json",
	"x/.part-00000.snappy.parquet.crc",
	"deep/a/b/c/d/e/f/g/h/object",
	"trailing.",
	"...",
	".hidden",
	"t/x:y",
	"ab:cd",
}

func payload(name string, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(len(name)), uint64(n)))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func testRoundTrip(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	for i, name := range oddNames {
		data := append([]byte(name+"\n"), payload(name, 100+i)...)
		if err := s.Put(ctx, name, data); err != nil {
			t.Fatalf("Put(%q): %v", name, err)
		}
		got, err := s.Get(ctx, name)
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("Get(%q) = %d bytes, want the %d bytes put", name, len(got), len(data))
		}
		fi, err := s.Stat(ctx, name)
		if err != nil {
			t.Fatalf("Stat(%q): %v", name, err)
		}
		if fi.Path != name || fi.Size != int64(len(data)) {
			t.Fatalf("Stat(%q) = {%q, %d}, want {%q, %d}", name, fi.Path, fi.Size, name, len(data))
		}
	}
	list, err := s.List(ctx, "", "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := append([]string(nil), oddNames...)
	sort.Strings(want)
	if got := paths(list); !slices.Equal(got, want) {
		t.Fatalf("List(\"\", \"\") = %q\nwant %q", got, want)
	}
}

func testCopies(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	data := []byte("original")
	if err := s.Put(ctx, "a", data); err != nil {
		t.Fatal(err)
	}
	data[0] = 'X' // the store must have copied on Put
	got, err := s.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "original" {
		t.Fatalf("after the caller changed its slice, Get = %q, want %q", got, "original")
	}
	got[0] = 'Y' // and must copy out on Get
	again, err := s.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != "original" {
		t.Fatalf("after the caller changed a returned slice, Get = %q, want %q", again, "original")
	}
	pia := []byte("pia")
	if err := s.PutIfAbsent(ctx, "b", pia); err != nil {
		t.Fatal(err)
	}
	pia[0] = 'Z'
	if got := mustGet(t, s, "b"); string(got) != "pia" {
		t.Fatalf("PutIfAbsent did not copy: Get = %q", got)
	}
}

func testOverwrite(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	for i, data := range [][]byte{[]byte("first, long version"), []byte("2nd"), {}, []byte("fourth")} {
		if err := s.Put(ctx, "dir/obj", data); err != nil {
			t.Fatalf("Put #%d: %v", i, err)
		}
		if got := mustGet(t, s, "dir/obj"); !bytes.Equal(got, data) {
			t.Fatalf("after Put #%d, Get = %q, want %q", i, got, data)
		}
		fi, err := s.Stat(ctx, "dir/obj")
		if err != nil || fi.Size != int64(len(data)) {
			t.Fatalf("after Put #%d, Stat = %+v, %v; want size %d", i, fi, err, len(data))
		}
	}
	if list := mustList(t, s, "", ""); len(list) != 1 {
		t.Fatalf("overwriting left %d objects, want 1: %q", len(list), paths(list))
	}
}

func testPutIfAbsent(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	const p = "_delta_log/00000000000000000000.json"
	if err := s.PutIfAbsent(ctx, p, []byte("v0")); err != nil {
		t.Fatalf("first PutIfAbsent: %v", err)
	}
	err := s.PutIfAbsent(ctx, p, []byte("other"))
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("second PutIfAbsent = %v, want ErrExist", err)
	}
	if got := mustGet(t, s, p); string(got) != "v0" {
		t.Fatalf("losing PutIfAbsent changed the object to %q", got)
	}
	// An object written by Put counts as present too.
	if err := s.Put(ctx, "put", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "put", []byte("y")); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("PutIfAbsent over a Put object = %v, want ErrExist", err)
	}
	// After Delete the name is free again.
	if err := s.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, p, []byte("v0 again")); err != nil {
		t.Fatalf("PutIfAbsent after Delete: %v", err)
	}
	if got := mustGet(t, s, p); string(got) != "v0 again" {
		t.Fatalf("Get = %q, want %q", got, "v0 again")
	}
	// Nested, in a directory that does not exist yet.
	if err := s.PutIfAbsent(ctx, "new/dir/tree/obj", []byte("deep")); err != nil {
		t.Fatalf("PutIfAbsent creating parents: %v", err)
	}
	if got := mustGet(t, s, "new/dir/tree/obj"); string(got) != "deep" {
		t.Fatalf("Get = %q, want %q", got, "deep")
	}
}

func testNotExist(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	if err := s.Put(ctx, "dir/sub/obj", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"missing", "dir/missing", "no/such/dir/obj", "dir", "dir/sub", "dir/sub/obj/below"} {
		if _, err := s.Get(ctx, p); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Get(%q) = %v, want ErrNotExist", p, err)
		}
		if f, err := s.Open(ctx, p); !errors.Is(err, storage.ErrNotExist) {
			if err == nil {
				f.Close()
			}
			t.Errorf("Open(%q) = %v, want ErrNotExist", p, err)
		}
		if _, err := s.Stat(ctx, p); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want ErrNotExist", p, err)
		}
		if err := s.Delete(ctx, p); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Delete(%q) = %v, want ErrNotExist", p, err)
		}
	}
	if got := mustGet(t, s, "dir/sub/obj"); string(got) != "x" {
		t.Fatalf("the existing object changed: %q", got)
	}
}

func testEmptyObject(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	if err := s.Put(ctx, "empty", nil); err != nil {
		t.Fatalf("Put(nil): %v", err)
	}
	if err := s.PutIfAbsent(ctx, "empty2", []byte{}); err != nil {
		t.Fatalf("PutIfAbsent(empty): %v", err)
	}
	for _, p := range []string{"empty", "empty2"} {
		got, err := s.Get(ctx, p)
		if err != nil || len(got) != 0 {
			t.Fatalf("Get(%q) = %q, %v; want empty", p, got, err)
		}
		fi, err := s.Stat(ctx, p)
		if err != nil || fi.Size != 0 {
			t.Fatalf("Stat(%q) = %+v, %v; want size 0", p, fi, err)
		}
		f, err := s.Open(ctx, p)
		if err != nil {
			t.Fatalf("Open(%q): %v", p, err)
		}
		if f.Size() != 0 {
			t.Errorf("Open(%q).Size() = %d, want 0", p, f.Size())
		}
		n, err := f.ReadAt(make([]byte, 4), 0)
		if n != 0 || err != io.EOF {
			t.Errorf("ReadAt on empty object = %d, %v; want 0, io.EOF", n, err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	list := mustList(t, s, "", "")
	if len(list) != 2 || list[0].Size != 0 || list[1].Size != 0 {
		t.Fatalf("List = %+v, want two empty objects", list)
	}
}

func testLargeObject(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	const size = 4<<20 + 12345
	data := payload("large", size)
	if err := s.Put(ctx, "big/object.parquet", data); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "big/second.parquet", data); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"big/object.parquet", "big/second.parquet"} {
		if got := mustGet(t, s, p); !bytes.Equal(got, data) {
			t.Fatalf("Get(%q) returned %d bytes that differ from the %d put", p, len(got), size)
		}
		f, err := s.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if f.Size() != size {
			t.Fatalf("Size() = %d, want %d", f.Size(), size)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			off := r.Int64N(size)
			n := r.IntN(1 << 16)
			buf := make([]byte, n)
			got, err := f.ReadAt(buf, off)
			wantN := min(int64(n), size-off)
			if int64(got) != wantN {
				t.Fatalf("ReadAt(%d bytes, %d) = %d, want %d", n, off, got, wantN)
			}
			if int64(n) > size-off && err != io.EOF {
				t.Fatalf("short ReadAt at %d returned err %v, want io.EOF", off, err)
			}
			if int64(n) <= size-off && err != nil && err != io.EOF {
				t.Fatalf("ReadAt(%d bytes, %d): %v", n, off, err)
			}
			if !bytes.Equal(buf[:got], data[off:off+int64(got)]) {
				t.Fatalf("ReadAt(%d bytes, %d) returned the wrong bytes", n, off)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func testOpenReadAt(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	data := payload("readat", 1000)
	if err := s.Put(ctx, "r", data); err != nil {
		t.Fatal(err)
	}
	f, err := s.Open(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != 1000 {
		t.Fatalf("Size() = %d, want 1000", f.Size())
	}
	cases := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantEOF bool // true: err must be io.EOF; false: err must be nil or io.EOF
	}{
		{"full read from the start", 0, 1000, 1000, false},
		{"inner range", 100, 37, 37, false},
		{"range ending exactly at EOF", 990, 10, 10, false},
		{"short read across EOF returns io.EOF", 995, 10, 5, true},
		{"read at EOF returns io.EOF", 1000, 10, 0, true},
		{"read past EOF returns io.EOF", 5000, 1, 0, true},
		{"footer-style last 8 bytes", 992, 8, 8, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, tc.n)
			n, err := f.ReadAt(buf, tc.off)
			if n != tc.wantN {
				t.Fatalf("n = %d, want %d (err %v)", n, tc.wantN, err)
			}
			if tc.wantEOF && err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if !tc.wantEOF && err != nil && err != io.EOF {
				t.Fatalf("err = %v", err)
			}
			if n > 0 && !bytes.Equal(buf[:n], data[tc.off:tc.off+int64(n)]) {
				t.Fatal("wrong bytes")
			}
		})
	}
	if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at offset -1 succeeded, want an error")
	}
	// io.ReaderAt allows parallel ReadAt calls on one source.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				off := int64((g*131 + i*17) % 900)
				buf := make([]byte, 100)
				n, err := f.ReadAt(buf, off)
				if n != 100 || (err != nil && err != io.EOF) || !bytes.Equal(buf, data[off:off+100]) {
					errs <- fmt.Errorf("parallel ReadAt(100, %d) = %d, %v or wrong bytes", off, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testStat(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	before := time.Now().Add(-time.Minute)
	for _, n := range []int{0, 1, 4095, 4096, 70000} {
		p := fmt.Sprintf("sizes/%06d", n)
		if err := s.Put(ctx, p, payload(p, n)); err != nil {
			t.Fatal(err)
		}
		fi, err := s.Stat(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Path != p || fi.Size != int64(n) {
			t.Errorf("Stat(%q) = {%q, %d}, want {%q, %d}", p, fi.Path, fi.Size, p, n)
		}
		if fi.ModTime.Before(before) {
			t.Errorf("Stat(%q).ModTime = %v, before the test started", p, fi.ModTime)
		}
	}
	list := mustList(t, s, "sizes/", "")
	for _, o := range list {
		fi, err := s.Stat(ctx, o.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size != o.Size || !fi.ModTime.Equal(o.ModTime) {
			t.Errorf("List entry %+v disagrees with Stat %+v", o, fi)
		}
	}
}

func testDelete(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	for _, p := range []string{"d/a", "d/b", "d/sub/c", "e"} {
		if err := s.Put(ctx, p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "d/a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, "d/a"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Get after Delete = %v, want ErrNotExist", err)
	}
	if err := s.Delete(ctx, "d/a"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("second Delete = %v, want ErrNotExist", err)
	}
	// A directory-like prefix is not an object: deleting it fails and leaves its children.
	if err := s.Delete(ctx, "d/sub"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Delete of a directory = %v, want ErrNotExist", err)
	}
	if got := paths(mustList(t, s, "", "")); !slices.Equal(got, []string{"d/b", "d/sub/c", "e"}) {
		t.Fatalf("after deletes List = %q", got)
	}
	if err := s.Delete(ctx, "d/sub/c"); err != nil {
		t.Fatal(err)
	}
	if got := paths(mustList(t, s, "d/", "")); !slices.Equal(got, []string{"d/b"}) {
		t.Fatalf("after deleting the only nested object, List(d/) = %q", got)
	}
}

// listNames is the tree testList and testListOracle work on: Delta log names, nested
// directories, and names that sort between a directory and its contents.
var listNames = []string{
	"_delta_log/00000000000000000000.json",
	"_delta_log/00000000000000000001.json",
	"_delta_log/00000000000000000009.json",
	"_delta_log/00000000000000000010.checkpoint.parquet",
	"_delta_log/00000000000000000010.json",
	"_delta_log/00000000000000000011.json",
	"_delta_log/_last_checkpoint",
	"_delta_log/_sidecars/a.parquet",
	"a-b",
	"a/b-c",
	"a/b/c",
	"a/b/d",
	"a/b/e/f",
	"ab",
	"part=1/x.parquet",
	"part=10/x.parquet",
	"part=2/x.parquet",
	"z",
}

func putAll(t *testing.T, s storage.Storage, names []string) {
	t.Helper()
	for _, p := range names {
		if err := s.Put(context.Background(), p, []byte(p)); err != nil {
			t.Fatalf("Put(%q): %v", p, err)
		}
	}
}

func testList(t *testing.T, s storage.Storage) {
	putAll(t, s, listNames)
	cases := []struct {
		name, prefix, startAfter string
		want                     []string
	}{
		{"everything, in byte order", "", "", sorted(listNames)},
		{"log directory", "_delta_log/", "", []string{
			"_delta_log/00000000000000000000.json", "_delta_log/00000000000000000001.json",
			"_delta_log/00000000000000000009.json", "_delta_log/00000000000000000010.checkpoint.parquet",
			"_delta_log/00000000000000000010.json", "_delta_log/00000000000000000011.json",
			"_delta_log/_last_checkpoint", "_delta_log/_sidecars/a.parquet"}},
		{"log from a version: startAfter excludes itself", "_delta_log/", "_delta_log/00000000000000000009.json", []string{
			"_delta_log/00000000000000000010.checkpoint.parquet", "_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json", "_delta_log/_last_checkpoint", "_delta_log/_sidecars/a.parquet"}},
		{"partial-name prefix", "_delta_log/0000000000000000001", "", []string{
			"_delta_log/00000000000000000010.checkpoint.parquet", "_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json"}},
		{"partial-name prefix with startAfter", "_delta_log/0000000000000000001", "_delta_log/00000000000000000010.json",
			[]string{"_delta_log/00000000000000000011.json"}},
		{"startAfter not itself an object", "_delta_log/", "_delta_log/00000000000000000005", []string{
			"_delta_log/00000000000000000009.json", "_delta_log/00000000000000000010.checkpoint.parquet",
			"_delta_log/00000000000000000010.json", "_delta_log/00000000000000000011.json",
			"_delta_log/_last_checkpoint", "_delta_log/_sidecars/a.parquet"}},
		{"nested directories, '-' sorts before '/'", "a/", "", []string{"a/b-c", "a/b/c", "a/b/d", "a/b/e/f"}},
		{"partial prefix spanning a directory and siblings", "a", "", []string{"a-b", "a/b-c", "a/b/c", "a/b/d", "a/b/e/f", "ab"}},
		{"startAfter inside a nested directory", "", "a/b/c", []string{
			"a/b/d", "a/b/e/f", "ab", "part=1/x.parquet", "part=10/x.parquet", "part=2/x.parquet", "z"}},
		{"startAfter is a directory name", "a/", "a/b", []string{"a/b-c", "a/b/c", "a/b/d", "a/b/e/f"}},
		{"partition prefix is a byte prefix, not a directory match", "part=1", "", []string{
			"part=1/x.parquet", "part=10/x.parquet"}},
		{"exact object name as prefix", "z", "", []string{"z"}},
		{"object used as a directory", "z/", "", nil},
		{"missing directory", "nope/", "", nil},
		{"missing nested partial prefix", "nope/deeper/x", "", nil},
		{"startAfter past everything", "", "zz", nil},
		{"startAfter before everything", "", "0", sorted(listNames)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := paths(mustList(t, s, tc.prefix, tc.startAfter))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("List(%q, %q) = %q\nwant %q", tc.prefix, tc.startAfter, got, tc.want)
			}
		})
	}
	for _, o := range mustList(t, s, "", "") {
		if o.Size != int64(len(o.Path)) {
			t.Errorf("List entry %q has size %d, want %d", o.Path, o.Size, len(o.Path))
		}
		if o.ModTime.IsZero() {
			t.Errorf("List entry %q has a zero ModTime", o.Path)
		}
	}
}

// testListOracle compares List with a brute-force filter over every prefix of every
// name (each one a possible partial-name or directory prefix) and a range of startAfter
// keys.
func testListOracle(t *testing.T, s storage.Storage) {
	putAll(t, s, listNames)
	prefixes := map[string]bool{"": true}
	afters := map[string]bool{"": true, "~": true}
	for _, n := range listNames {
		for i := 1; i <= len(n); i++ {
			if storage.ValidatePrefix(n[:i]) == nil {
				prefixes[n[:i]] = true
			}
		}
		afters[n] = true
		afters[n[:len(n)-1]] = true
		afters[n+"\x00"] = true
	}
	if testing.Short() {
		// Keep every prefix but thin the startAfter keys.
		i := 0
		for a := range afters {
			if i%4 != 0 {
				delete(afters, a)
			}
			i++
		}
	}
	for prefix := range prefixes {
		for after := range afters {
			var want []string
			for _, n := range sorted(listNames) {
				if strings.HasPrefix(n, prefix) && n > after {
					want = append(want, n)
				}
			}
			got := paths(mustList(t, s, prefix, after))
			if !slices.Equal(got, want) {
				t.Fatalf("List(%q, %q) = %q\nwant %q", prefix, after, got, want)
			}
		}
	}
}

// badPaths are rejected by every method with ErrInvalidPath.
var badPaths = []struct{ name, path string }{
	{"empty", ""},
	{"absolute", "/etc/passwd"},
	{"root slash", "/"},
	{"dot-dot", ".."},
	{"leading dot-dot", "../outside"},
	{"dot-dot escaping after descent", "a/../../outside"},
	{"inner dot-dot", "a/../b"},
	{"trailing dot-dot", "a/.."},
	{"dot", "."},
	{"leading dot element", "./a"},
	{"inner dot element", "a/./b"},
	{"empty element", "a//b"},
	{"trailing slash", "a/"},
	{"backslash", `a\b`},
	{"backslash dot-dot", `..\outside`},
	{"NUL byte", "a\x00b"},
	{"drive letter", "C:"},
	{"drive letter path", "C:/Windows"},
	{"drive relative", "c:outside"},
}

// badPrefixes are rejected by List with ErrInvalidPath.
var badPrefixes = []struct{ name, prefix string }{
	{"absolute", "/"},
	{"absolute dir", "/etc/"},
	{"dot-dot dir", "../"},
	{"dot-dot", ".."},
	{"escaping dir", "a/../../"},
	{"empty element", "a//"},
	{"double slash only", "//"},
	{"backslash", `a\`},
	{"NUL byte", "a\x00"},
	{"dot dir", "./"},
	{"drive letter", "C:/"},
}

func testConfinement(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	var snapBefore map[string]string
	var parent, root string
	if r, ok := s.(Rooted); ok {
		root = filepath.Clean(r.Root())
		parent = filepath.Dir(root)
		snapBefore = snapshot(t, parent, root)
	}
	for _, bp := range badPaths {
		t.Run(bp.name, func(t *testing.T) {
			p := bp.path
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, storage.ErrInvalidPath) {
					t.Errorf("%s(%q) = %v, want ErrInvalidPath", op, p, err)
				}
			}
			_, err := s.Get(ctx, p)
			check("Get", err)
			f, err := s.Open(ctx, p)
			if err == nil {
				f.Close()
			}
			check("Open", err)
			check("Put", s.Put(ctx, p, []byte("escaped")))
			check("PutIfAbsent", s.PutIfAbsent(ctx, p, []byte("escaped")))
			check("Delete", s.Delete(ctx, p))
			_, err = s.Stat(ctx, p)
			check("Stat", err)
		})
	}
	for _, bp := range badPrefixes {
		t.Run("List/"+bp.name, func(t *testing.T) {
			if _, err := s.List(ctx, bp.prefix, ""); !errors.Is(err, storage.ErrInvalidPath) {
				t.Errorf("List(%q) = %v, want ErrInvalidPath", bp.prefix, err)
			}
		})
	}
	if list := mustList(t, s, "", ""); len(list) != 0 {
		t.Errorf("rejected writes created objects: %q", paths(list))
	}
	if snapBefore != nil {
		after := snapshot(t, parent, root)
		if !maps.Equal(snapBefore, after) {
			t.Errorf("the directory around the root %s changed:\nbefore %v\nafter  %v", root, snapBefore, after)
		}
		if _, err := os.Stat(root); err != nil {
			t.Errorf("root directory: %v", err)
		}
	}
}

// snapshot describes every entry under dir except the subtree at skip, as path → type,
// size and modification time.
func snapshot(t *testing.T, dir, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return fs.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

func testContextCancelled(t *testing.T, s storage.Storage) {
	live := context.Background()
	if err := s.Put(live, "exists", []byte("x")); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline exceeded", expired, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			check := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, c.want) {
					t.Errorf("%s = %v, want %v", op, err, c.want)
				}
			}
			_, err := s.Get(ctx, "exists")
			check("Get", err)
			f, err := s.Open(ctx, "exists")
			if err == nil {
				f.Close()
			}
			check("Open", err)
			check("Put", s.Put(ctx, "new", []byte("y")))
			check("PutIfAbsent", s.PutIfAbsent(ctx, "new2", []byte("y")))
			check("Put over existing", s.Put(ctx, "exists", []byte("changed")))
			_, err = s.List(ctx, "", "")
			check("List", err)
			_, err = s.Stat(ctx, "exists")
			check("Stat", err)
			check("Delete", s.Delete(ctx, "exists"))
		})
	}
	// Nothing happened.
	if got := paths(mustList(t, s, "", "")); !slices.Equal(got, []string{"exists"}) {
		t.Fatalf("after cancelled calls List = %q, want [exists]", got)
	}
	if got := mustGet(t, s, "exists"); string(got) != "x" {
		t.Fatalf("a cancelled Put changed the object to %q", got)
	}
}

// testRacePutIfAbsent: 16 goroutines × 200 rounds, each round a fresh name that every
// goroutine tries to create with its own payload. Exactly one wins (invariant L2), the
// others get ErrExist, and the stored bytes are the winner's.
func testRacePutIfAbsent(t *testing.T, s storage.Storage) {
	raceRounds(t, s, 16, 200, func(round int) string { return fmt.Sprintf("_delta_log/%020d.json", round) },
		func(ctx context.Context, name string, payload []byte) error { return s.PutIfAbsent(ctx, name, payload) })
}

// raceRounds runs rounds of goroutines concurrent attempts to create one fresh object
// per round (each goroutine with its own payload) and checks that exactly one attempt
// succeeds, the others fail with ErrExist, the stored bytes are the winner's, and the
// store ends with one object per round.
func raceRounds(t *testing.T, s storage.Storage, goroutines, rounds int, nameFor func(round int) string,
	attempt func(ctx context.Context, name string, payload []byte) error) {
	t.Helper()
	ctx := context.Background()
	type result struct {
		g   int
		err error
	}
	for round := range rounds {
		name := nameFor(round)
		start := make(chan struct{})
		results := make(chan result, goroutines)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				<-start
				results <- result{g, attempt(ctx, name, racePayload(round, g))}
			})
		}
		close(start)
		wg.Wait()
		close(results)
		winner := -1
		for r := range results {
			switch {
			case r.err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: goroutines %d and %d both created %q", round, winner, r.g, name)
				}
				winner = r.g
			case errors.Is(r.err, storage.ErrExist):
			default:
				t.Fatalf("round %d: goroutine %d: unexpected error %v", round, r.g, r.err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody created %q", round, name)
		}
		if got := mustGet(t, s, name); !bytes.Equal(got, racePayload(round, winner)) {
			t.Fatalf("round %d: stored %q, want the winner's (goroutine %d) payload", round, got, winner)
		}
	}
	if list := mustList(t, s, "", ""); len(list) != rounds {
		t.Fatalf("List after the race has %d objects, want %d", len(list), rounds)
	}
}

func racePayload(round, g int) []byte {
	// Distinct lengths too, so a mix of two payloads would show in the size.
	return []byte(fmt.Sprintf("round %d writer %d %s", round, g, strings.Repeat("#", g)))
}

func testConcurrentDistinct(t *testing.T, s storage.Storage) {
	const goroutines, perG = 8, 40
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				p := fmt.Sprintf("g%02d/obj-%03d", g, i)
				data := payload(p, 64+g*7+i)
				if err := s.Put(ctx, p, data); err != nil {
					errs <- err
					return
				}
				got, err := s.Get(ctx, p)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, data) {
					errs <- fmt.Errorf("Get(%q) returned bytes of another writer", p)
					return
				}
				if _, err := s.List(ctx, fmt.Sprintf("g%02d/", g), ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if list := mustList(t, s, "", ""); len(list) != goroutines*perG {
		t.Fatalf("List has %d objects, want %d", len(list), goroutines*perG)
	}
}

// testConcurrentPutAtomic: readers racing with Puts of two payloads of different sizes
// to one name see one payload or the other, never a mix or a truncated object.
func testConcurrentPutAtomic(t *testing.T, s storage.Storage) {
	ctx := context.Background()
	a := bytes.Repeat([]byte{'a'}, 64<<10)
	b := bytes.Repeat([]byte{'b'}, 3<<10)
	if err := s.Put(ctx, "hot", a); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 8)
	var writers, readers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for i := range 40 {
				data := a
				if (i+w)%2 == 1 {
					data = b
				}
				if err := s.Put(ctx, "hot", data); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.Get(ctx, "hot")
				if err != nil {
					errs <- fmt.Errorf("a Get during a Put: %w", err)
					return
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					errs <- fmt.Errorf("a Get during a Put saw a partial object of %d bytes", len(got))
					return
				}
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, s storage.Storage, p string) []byte {
	t.Helper()
	b, err := s.Get(context.Background(), p)
	if err != nil {
		t.Fatalf("Get(%q): %v", p, err)
	}
	return b
}

func mustList(t *testing.T, s storage.Storage, prefix, startAfter string) []storage.ObjectInfo {
	t.Helper()
	l, err := s.List(context.Background(), prefix, startAfter)
	if err != nil {
		t.Fatalf("List(%q, %q): %v", prefix, startAfter, err)
	}
	for i := 1; i < len(l); i++ {
		if l[i-1].Path >= l[i].Path {
			t.Fatalf("List(%q, %q) not strictly ascending at %d: %q then %q", prefix, startAfter, i, l[i-1].Path, l[i].Path)
		}
	}
	return l
}

func paths(l []storage.ObjectInfo) []string {
	var out []string
	for _, o := range l {
		out = append(out, o.Path)
	}
	return out
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
