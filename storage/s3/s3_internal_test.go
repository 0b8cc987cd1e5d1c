package s3_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/storage/internal/blobstore"
)

// openVia opens a fresh prefix on the S3 test server through proxy p, with extra
// query parameters.
func openVia(t *testing.T, p *cloudtest.Proxy, extra string) (storage.Storage, string) {
	t.Helper()
	loc := cloudtest.S3.Location(t) // creates the bucket, gives a fresh prefix
	prefix := strings.TrimPrefix(loc[:strings.IndexByte(loc, '?')], "s3://"+cloudtest.Bucket+"/")
	u := cloudtest.S3URL(p.URL, cloudtest.Bucket, prefix) + extra
	st, err := storage.OpenURL(context.Background(), u)
	if err != nil {
		t.Fatalf("OpenURL: %v", err)
	}
	return st, prefix
}

// TestIgnoredConditionIsDetected: behind a proxy that drops If-None-Match (as
// versitygw before 1.8 and some S3-compatible stores do), the first conditional write
// fails with ErrConditionalWritesIgnored and writes nothing; single_writer=true
// accepts the store with a warning and falls back to a HEAD before each create.
func TestIgnoredConditionIsDetected(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	p := cloudtest.NewProxy(t, ep, cloudtest.ProxyOptions{StripHeaders: []string{"If-None-Match"}})
	ctx := context.Background()

	st, _ := openVia(t, p, "")
	err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0"))
	if !errors.Is(err, blobstore.ErrConditionalWritesIgnored) {
		t.Fatalf("PutIfAbsent through a condition-stripping proxy = %v, want ErrConditionalWritesIgnored", err)
	}
	if _, err := storage.CreateObject(ctx, st, "data/x.parquet"); !errors.Is(err, blobstore.ErrConditionalWritesIgnored) {
		t.Fatalf("Create = %v, want ErrConditionalWritesIgnored", err)
	}
	if list, err := st.List(ctx, "", ""); err != nil || len(list) != 0 {
		t.Fatalf("after refused commits List = %v, %v; want empty (probe object removed)", list, err)
	}

	sw, _ := openVia(t, p, "&single_writer=true")
	if err := sw.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); err != nil {
		t.Fatalf("single-writer PutIfAbsent: %v", err)
	}
	if err := sw.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0'")); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("single-writer second PutIfAbsent = %v, want ErrExist (from the HEAD check)", err)
	}
}

// TestConditionalConflictIsRetried: S3 answers 409 ConditionalRequestConflict when
// another conditional write to the key is in flight; gocloud maps it to Unknown. The
// store sends the same request again, and the retry's answer decides.
func TestConditionalConflictIsRetried(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	p := cloudtest.NewProxy(t, ep, cloudtest.ProxyOptions{})
	ctx := context.Background()
	st, _ := openVia(t, p, "")
	if err := st.PutIfAbsent(ctx, "warm-up", []byte("x")); err != nil { // runs the probe unhindered
		t.Fatal(err)
	}
	var conflicts atomic.Int32
	p.SetInject(func(r *http.Request) (int, string, bool) {
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" && conflicts.Load() < 2 {
			conflicts.Add(1)
			return http.StatusConflict, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict</Code><Message>A conflicting conditional operation is currently in progress against this resource.</Message></Error>`, true
		}
		return 0, "", false
	})
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); err != nil {
		t.Fatalf("PutIfAbsent after two 409 ConditionalRequestConflict answers: %v", err)
	}
	if conflicts.Load() != 2 {
		t.Fatalf("the proxy answered %d conflicts, want 2", conflicts.Load())
	}
	// A retried request that finds the object (its own first attempt, or another
	// writer's) reports ErrExist: the log decides by comparing txnId.
	conflicts.Store(1)
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("PutIfAbsent of an existing key after a conflict = %v, want ErrExist", err)
	}
}

// TestNoDanglingMultipartUploads: after the large-object checks (a losing multipart
// create, an aborted and a cancelled one) the bucket prefix has no incomplete
// multipart upload left.
func TestNoDanglingMultipartUploads(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	var prefixes []string
	cloudtest.RunExtras(t, func(t *testing.T) storage.Storage {
		loc := cloudtest.S3.Location(t)
		prefixes = append(prefixes, strings.TrimPrefix(loc[:strings.IndexByte(loc, '?')], "s3://"+cloudtest.Bucket+"/"))
		st, err := storage.OpenURL(context.Background(), loc)
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
	c, err := cloudtest.S3Client(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range prefixes {
		out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
			Bucket: aws.String(cloudtest.Bucket), Prefix: aws.String(prefix + "/"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Uploads) != 0 {
			t.Errorf("%d incomplete multipart uploads left under %s, first %s", len(out.Uploads), prefix, aws.ToString(out.Uploads[0].Key))
		}
	}
}

// TestRequestCountsMatchTheWire: the store's own request counts equal what a proxy
// in front of the server saw, and Open of a small object is one GET (the suffix read
// returns the size and the whole object), after which ReadAt costs nothing.
func TestRequestCountsMatchTheWire(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	p := cloudtest.NewProxy(t, ep, cloudtest.ProxyOptions{})
	ctx := context.Background()
	st, _ := openVia(t, p, "")
	rc := st.(storage.RequestCounter)
	if err := st.PutIfAbsent(ctx, "warm-up", []byte("x")); err != nil { // probe + put
		t.Fatal(err)
	}
	for i := range 5 {
		if err := st.Put(ctx, "_delta_log/0000000000000000000"+string(rune('0'+i))+".json", make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	p.Reset()
	before := rc.Requests()
	f, err := st.Open(ctx, "_delta_log/00000000000000000003.json")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	for _, off := range []int64{92, 0, 50} {
		if _, err := f.ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if _, err := st.List(ctx, "_delta_log/", "_delta_log/00000000000000000002.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "warm-up"); err != nil {
		t.Fatal(err)
	}
	got := rc.Requests().Sub(before)
	wire, _ := p.Counts()
	if got.GET != 1 || got.LIST != 1 || got.HEAD != 1 || got.Total() != 3 {
		t.Fatalf("store counted %v, want 1 GET (Open of a small object), 1 LIST, 1 HEAD", got)
	}
	if wire["GET"] != got.GET || wire["LIST"] != got.LIST || wire["HEAD"] != got.HEAD || p.Total() != got.Total() {
		t.Fatalf("store counted %v but the proxy saw %v", got, wire)
	}
}

// TestAbortStaleUploads: an incomplete multipart upload left under the table's prefix
// (a killed writer) is aborted by AbortUploadsBefore once it is older than the cutoff,
// and one started after the cutoff (a writer still at work) is kept.
func TestAbortStaleUploads(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	ctx := context.Background()
	loc := cloudtest.S3.Location(t)
	prefix := strings.TrimPrefix(loc[:strings.IndexByte(loc, '?')], "s3://"+cloudtest.Bucket+"/")
	st, err := storage.OpenURL(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudtest.S3Client(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	key := prefix + "/part=1/part-00000-killed.parquet"
	if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(cloudtest.Bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	uploads := func() int {
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(cloudtest.Bucket), Prefix: aws.String(prefix + "/")})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	if n, err := storage.AbortUploadsBefore(ctx, st, time.Now().Add(-time.Hour)); err != nil || n != 0 || uploads() != 1 {
		t.Fatalf("cutoff an hour ago: aborted %d (%v), %d uploads left; want 0 aborted, 1 left", n, err, uploads())
	}
	if n, err := storage.AbortUploadsBefore(ctx, st, time.Now().Add(time.Hour)); err != nil || n != 1 || uploads() != 0 {
		t.Fatalf("cutoff in an hour: aborted %d (%v), %d uploads left; want 1 aborted, none left", n, err, uploads())
	}
}

// TestCreateFailedInTransitOverAnExistingObject: a store may answer a failed
// If-None-Match and close the connection before reading the body, which the client sees
// as a transport error, not a 412 (versitygw does so for bodies of a few MiB). A
// conditional create that fails without a usable answer reports ErrExist when the
// object exists — the log then reads it back — and the transport error when it does not.
// The proxy stands in for the reset with a 501 (gocloud's code Unknown, as for a reset;
// not retried by the SDK, which keeps the test quick).
func TestCreateFailedInTransitOverAnExistingObject(t *testing.T) {
	ep := cloudtest.S3.Endpoint(t)
	p := cloudtest.NewProxy(t, ep, cloudtest.ProxyOptions{})
	ctx := context.Background()
	st, _ := openVia(t, p, "")
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); err != nil { // also runs the probe
		t.Fatal(err)
	}
	var failed atomic.Int32
	p.SetInject(func(r *http.Request) (int, string, bool) {
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" {
			failed.Add(1)
			return http.StatusNotImplemented, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>injected</Message></Error>`, true
		}
		return 0, "", false
	})
	err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0 again"))
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("PutIfAbsent over an existing object, failing in transit = %v, want ErrExist", err)
	}
	if failed.Load() == 0 {
		t.Fatal("the proxy failed no conditional PUT: the test did not test the transit failure")
	}
	w, err := storage.CreateObject(ctx, st, "_delta_log/00000000000000000000.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("v0 streamed")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("streamed create over an existing object, failing in transit = %v, want ErrExist", err)
	}
	got, err := st.Get(ctx, "_delta_log/00000000000000000000.json")
	if err != nil || string(got) != "v0" {
		t.Fatalf("the existing object is %q, %v; want it unchanged (v0)", got, err)
	}
	err = st.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json", []byte("v1"))
	if err == nil || errors.Is(err, storage.ErrExist) {
		t.Fatalf("PutIfAbsent of a new key failing in transit = %v, want the transport error, not ErrExist", err)
	}
	p.SetInject(nil)
	if _, err := st.Get(ctx, "_delta_log/00000000000000000001.json"); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("after a failed create of a new key Get = %v, want ErrNotExist", err)
	}
}
