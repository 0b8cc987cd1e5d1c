package blobstore_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/internal/blobstore"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// newMem returns a Store over gocloud's in-memory bucket under a prefix, so the
// generic object-store code runs the conformance suite without a server.
func newMem(t *testing.T) storage.Storage {
	b := memblob.OpenBucket(nil)
	st := blobstore.New(blobstore.Options{Bucket: b, Prefix: "tables/t/", Location: "mem://bucket/tables/t", TailSize: 64})
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformanceOverMemblob(t *testing.T) {
	storagetest.Run(t, newMem)
}

// TestPrefixConfinement: objects of one prefix are invisible to a store on another and
// keys are the prefix plus the path.
func TestPrefixConfinement(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	a := blobstore.New(blobstore.Options{Bucket: b, Prefix: "a/"})
	ab := blobstore.New(blobstore.Options{Bucket: b, Prefix: "ab/"})
	if err := a.Put(ctx, "x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := ab.Put(ctx, "x", []byte("2")); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*blobstore.Store{a, ab} {
		list, err := st.List(ctx, "", "")
		if err != nil || len(list) != 1 || list[0].Path != "x" {
			t.Fatalf("%s: List = %v, %v; want only x", st, list, err)
		}
	}
	if ok, _ := b.Exists(ctx, "a/x"); !ok {
		t.Fatal("key a/x missing")
	}
}

// TestTailReads: reads inside the tail window cost one request in total, reads before
// it one request each, and the counts say so.
func TestTailReads(t *testing.T) {
	ctx := context.Background()
	st := blobstore.New(blobstore.Options{Bucket: memblob.OpenBucket(nil), TailSize: 100})
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i)
	}
	if err := st.Put(ctx, "f", data); err != nil {
		t.Fatal(err)
	}
	before := st.Requests()
	f, err := st.Open(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	for _, off := range []int64{990, 900, 950, 905} { // all inside the last 100 bytes
		if n, err := f.ReadAt(buf, off); n != 10 || err != nil || buf[0] != byte(off) {
			t.Fatalf("ReadAt(%d) = %d, %v, %d", off, n, err, buf[0])
		}
	}
	if n, err := f.ReadAt(buf, 10); n != 10 || err != nil || buf[0] != 10 {
		t.Fatalf("ReadAt(10) = %d, %v", n, err)
	}
	got := st.Requests().Sub(before)
	if got.HEAD != 1 || got.GET != 2 {
		t.Fatalf("requests = %v, want 1 HEAD (Open without suffix reads), 1 GET for the tail, 1 GET for offset 10", got)
	}
	sized, err := st.OpenSized(ctx, "f", 1000)
	if err != nil {
		t.Fatal(err)
	}
	sized.ReadAt(buf, 995)
	if got := st.Requests().Sub(before); got.HEAD != 1 || got.GET != 3 {
		t.Fatalf("after OpenSized and a tail read: %v, want no HEAD and one more GET", got)
	}
}

// TestContextCounters: the store's requests also count into the Counters of the
// context they are made under, a File's reads with the context of its Open.
func TestContextCounters(t *testing.T) {
	bg := context.Background()
	st := blobstore.New(blobstore.Options{Bucket: memblob.OpenBucket(nil), TailSize: 100})
	if err := st.Put(bg, "f", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	var c storage.Counters
	ctx := storage.WithRequestCounters(bg, &c)
	before := st.Requests()
	f, err := st.Open(ctx, "f") // HEAD (no suffix reads here)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	f.ReadAt(buf, 995)                             // the tail: one GET of 100 bytes
	f.ReadAt(buf, 0)                               // one GET of 10 bytes
	if _, err := st.List(bg, "", ""); err != nil { // another context: not counted in c
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "f"); err != nil { // one GET of 1000 bytes
		t.Fatal(err)
	}
	want := storage.RequestCounts{HEAD: 1, GET: 3, BytesRead: 1110}
	if got := c.Snapshot(); got != want {
		t.Fatalf("context counts %+v, want %+v", got, want)
	}
	if got := st.Requests().Sub(before); got != want.Add(storage.RequestCounts{LIST: 1}) {
		t.Fatalf("store counts %+v, want the context's and the LIST", got)
	}
}

func TestCommonParams(t *testing.T) {
	cases := []struct {
		in, prefix, rest, err string
		single                bool
	}{
		{in: "s3://b", prefix: ""},
		{in: "s3://b/", prefix: ""},
		{in: "s3://b/t/x/?region=r", prefix: "t/x/", rest: "region=r"},
		{in: "s3://b/t?single_writer=true&endpoint=e", prefix: "t/", rest: "endpoint=e", single: true},
		{in: "s3://b/t?single_writer=maybe", err: "single_writer"},
		{in: "s3://b/a/../b", err: "invalid path"},
		{in: "s3://b/a//b", err: "invalid path"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		opts, q, err := blobstore.CommonParams(u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one mentioning %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || opts.Prefix != tc.prefix || q.Encode() != tc.rest || opts.SingleWriter != tc.single {
			t.Errorf("%s: prefix %q rest %q single %v err %v; want %q %q %v", tc.in, opts.Prefix, q.Encode(), opts.SingleWriter, err, tc.prefix, tc.rest, tc.single)
		}
	}
}
