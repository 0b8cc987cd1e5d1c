package s3_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/storage"
)

// faultOnce returns a fault function that applies f to the first n requests match
// accepts, and counts them.
func faultOnce(n int32, f cloudtest.Fault, match func(r *http.Request) bool) (func(r *http.Request) cloudtest.Fault, *atomic.Int32) {
	var hits atomic.Int32
	return func(r *http.Request) cloudtest.Fault {
		if match(r) && hits.Add(1) <= n {
			return f
		}
		return cloudtest.NoFault
	}, &hits
}

func isConditionalPut(key string) func(r *http.Request) bool {
	return func(r *http.Request) bool {
		return (r.Method == http.MethodPut || r.Method == http.MethodPost) && r.Header.Get("If-None-Match") == "*" && strings.Contains(r.URL.Path, key)
	}
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Reads whose response body is cut mid-way are sent again (issue 31 item 6: a commit
// file cut in transit failed the command): Get, ranged reads of an open file, Open's
// tail read and listings.
func TestReadsCutInTransitAreRetried(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "2") // the SDK's retries of the 503s below, kept short
	p := cloudtest.NewProxy(t, cloudtest.S3.Endpoint(t), cloudtest.ProxyOptions{})
	ctx := context.Background()
	st, _ := openVia(t, p, "")
	big := randomBytes(1, 3<<20) // beyond the 1 MiB tail: Open reads the tail, ReadAt ranges
	for _, o := range []struct {
		path string
		data []byte
	}{{"_delta_log/00000000000000000000.json", []byte(`{"commitInfo":{}}` + "\n")}, {"data/big.parquet", big}} {
		if err := st.PutIfAbsent(ctx, o.path, o.data); err != nil {
			t.Fatal(err)
		}
	}
	isGet := func(r *http.Request) bool { return r.Method == http.MethodGet && cloudtest.Kind(r) == "GET" }
	fault, hits := faultOnce(2, cloudtest.FaultCutBody, isGet)
	p.SetFault(fault)
	got, err := st.Get(ctx, "_delta_log/00000000000000000000.json")
	if err != nil || !bytes.Equal(got, []byte(`{"commitInfo":{}}`+"\n")) {
		t.Fatalf("Get with two bodies cut short = %q, %v", got, err)
	}
	if hits.Load() < 3 {
		t.Fatalf("the proxy cut %d bodies: the test did not test the retry", hits.Load())
	}

	fault, hits = faultOnce(2, cloudtest.FaultCutBody, isGet)
	p.SetFault(fault)
	f, err := st.Open(ctx, "data/big.parquet")
	if err != nil {
		t.Fatalf("Open with its tail read cut short: %v", err)
	}
	buf := make([]byte, 2<<20)
	if _, err := f.ReadAt(buf, 1000); err != nil || !bytes.Equal(buf, big[1000:1000+len(buf)]) {
		t.Fatalf("ReadAt with the range cut short: %v", err)
	}
	f.Close()
	if hits.Load() < 3 {
		t.Fatalf("the proxy cut %d bodies", hits.Load())
	}

	fault, hits = faultOnce(1, cloudtest.FaultCutBody, func(r *http.Request) bool { return cloudtest.Kind(r) == "LIST" })
	p.SetFault(fault)
	list, err := st.List(ctx, "", "")
	if err != nil || len(list) != 2 {
		t.Fatalf("List with its body cut short = %v, %v", list, err)
	}
	if hits.Load() < 1 {
		t.Fatal("the proxy cut no listing")
	}

	// A store that keeps failing: a transient error (errors.Is storage.ErrTransient).
	p.SetFault(func(r *http.Request) cloudtest.Fault { return cloudtest.FaultCutBody })
	if _, err := st.Get(ctx, "_delta_log/00000000000000000000.json"); !errors.Is(err, storage.ErrTransient) {
		t.Fatalf("Get with every body cut = %v, want ErrTransient", err)
	}
	p.SetFault(func(r *http.Request) cloudtest.Fault { return cloudtest.Fault503 })
	if _, err := st.Stat(ctx, "data/big.parquet"); !errors.Is(err, storage.ErrTransient) {
		t.Fatalf("Stat with every answer 503 = %v, want ErrTransient", err)
	}
	p.SetFault(nil)
	if _, err := st.Get(ctx, "data/missing"); !errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrTransient) {
		t.Fatalf("Get of a missing object = %v, want ErrNotExist and not transient", err)
	}
}

// A conditional create whose answer is lost after the store applied it (the SDK sends
// it again and hears "exists") recognises its own object outside _delta_log/ — data
// files and deletion vectors, by size and SHA-256 — and reports ErrExist for commit
// files, which the log judges by txnId (issue 31 item 6).
func TestLostCreateAnswers(t *testing.T) {
	p := cloudtest.NewProxy(t, cloudtest.S3.Endpoint(t), cloudtest.ProxyOptions{})
	ctx := context.Background()
	st, _ := openVia(t, p, "")
	if err := st.PutIfAbsent(ctx, "warm-up", []byte("x")); err != nil { // the probe, unhindered
		t.Fatal(err)
	}
	small := randomBytes(2, 1000)
	large := randomBytes(3, cloudtest.LargeSize) // multipart: the completion's answer is lost

	fault, hits := faultOnce(1, cloudtest.FaultLoseResponse, isConditionalPut("data/a.parquet"))
	p.SetFault(fault)
	if err := st.PutIfAbsent(ctx, "data/a.parquet", small); err != nil {
		t.Fatalf("PutIfAbsent of a data file whose answer was lost: %v", err)
	}
	if hits.Load() == 0 {
		t.Fatal("no answer was lost")
	}

	for _, c := range []struct {
		path string
		data []byte
	}{{"data/b.parquet", small}, {"data/c.parquet", large}, {"deletion_vector_x.bin", small}} {
		fault, hits := faultOnce(1, cloudtest.FaultLoseResponse, isConditionalPut(c.path))
		p.SetFault(fault)
		w, err := storage.CreateObject(ctx, st, c.path)
		if err != nil {
			t.Fatal(err)
		}
		for d := c.data; len(d) > 0; {
			n := min(len(d), 1<<20)
			if _, err := w.Write(d[:n]); err != nil {
				t.Fatal(err)
			}
			d = d[n:]
		}
		if err := w.Commit(); err != nil {
			t.Fatalf("streamed create of %s (%d bytes) whose answer was lost: %v", c.path, len(c.data), err)
		}
		if hits.Load() == 0 {
			t.Fatalf("%s: no answer was lost", c.path)
		}
		p.SetFault(nil)
		if got, err := st.Get(ctx, c.path); err != nil || !bytes.Equal(got, c.data) {
			t.Fatalf("%s after the lost answer: %d bytes, %v", c.path, len(got), err)
		}
	}

	// Someone else's bytes are not ours: ErrExist, the object unchanged.
	fault, _ = faultOnce(1, cloudtest.FaultLoseResponse, isConditionalPut("data/a.parquet"))
	p.SetFault(fault)
	if err := st.PutIfAbsent(ctx, "data/a.parquet", randomBytes(9, 1000)); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("create over another object = %v, want ErrExist", err)
	}

	// A commit file: "exists" is never judged here.
	fault, hits = faultOnce(1, cloudtest.FaultLoseResponse, isConditionalPut("_delta_log/00000000000000000000.json"))
	p.SetFault(fault)
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("commit file whose answer was lost = %v, want ErrExist (the log reads it back)", err)
	}
	if hits.Load() == 0 {
		t.Fatal("no answer was lost")
	}
	p.SetFault(nil)
	if got, err := st.Get(ctx, "_delta_log/00000000000000000000.json"); err != nil || string(got) != "v0" {
		t.Fatalf("the commit file holds %q, %v", got, err)
	}
}

// The conditional-write probe decides by reading its unique bytes back when an
// answer is lost: a lost answer to its first create is its own object, and a store
// that honours If-None-Match is not taken for one that ignores it.
func TestProbeSurvivesLostAnswers(t *testing.T) {
	p := cloudtest.NewProxy(t, cloudtest.S3.Endpoint(t), cloudtest.ProxyOptions{})
	ctx := context.Background()
	for _, n := range []int32{1, 2} { // the first create's answer lost; both creates' answers lost
		st, _ := openVia(t, p, "")
		fault, hits := faultOnce(n, cloudtest.FaultLoseResponse, isConditionalPut(".skiplake-conditional-probe-"))
		p.SetFault(fault)
		if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("v0")); err != nil {
			t.Fatalf("first commit after %d lost probe answers: %v", n, err)
		}
		if hits.Load() < n {
			t.Fatalf("%d answers lost, want %d", hits.Load(), n)
		}
		p.SetFault(nil)
		list, err := st.List(ctx, "_delta_log/", "")
		if err != nil || len(list) != 1 {
			t.Fatalf("after the probe the log holds %v, %v; want the commit only", list, err)
		}
	}
}
