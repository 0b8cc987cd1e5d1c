package gcs_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/skiplake/skiplake/storage"

	"github.com/skiplake/skiplake/internal/cloudtest"
	_ "github.com/skiplake/skiplake/storage/gcs"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// TestConformance runs the storage conformance suite, unchanged, against the GCS test
// server: among others the put-if-absent race (16 goroutines x 200 rounds, exactly
// one winner) and the streamed-create race. It skips without GCS's endpoint variable.
func TestConformance(t *testing.T) {
	storagetest.Run(t, cloudtest.GCS.Open)
}

// TestExtras runs the large-object checks (multipart conditional create, abort,
// cancellation) and DeleteMany against the server.
func TestExtras(t *testing.T) {
	cloudtest.RunExtras(t, cloudtest.GCS.Open)
}

// TestOpenIsOneRequest: Open reads the object's tail with one negative-offset range
// request (no metadata request), and ReadAt inside it costs nothing more.
func TestOpenIsOneRequest(t *testing.T) {
	st := cloudtest.GCS.Open(t)
	ctx := context.Background()
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := st.Put(ctx, "part-0.parquet", data); err != nil {
		t.Fatal(err)
	}
	rc := st.(storage.RequestCounter)
	before := rc.Requests()
	f, err := st.Open(ctx, "part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8)
	if n, err := f.ReadAt(buf, 4992); n != 8 || err != nil || !bytes.Equal(buf, data[4992:]) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if f.Size() != 5000 {
		t.Fatalf("Size = %d", f.Size())
	}
	if got := rc.Requests().Sub(before); got.GET != 1 || got.HEAD != 0 {
		t.Fatalf("Open + ReadAt of the tail = %v, want exactly 1 GET", got)
	}
}
