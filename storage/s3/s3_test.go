package s3_test

import (
	"context"
	"testing"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/storage"
	_ "github.com/skiplake/skiplake/storage/s3"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// open opens a fresh prefix on the S3 test server (skips without SKIPLAKE_S3_ENDPOINT).
func open(t *testing.T) storage.Storage {
	t.Helper()
	loc := cloudtest.S3.Location(t)
	st, err := storage.OpenURL(context.Background(), loc)
	if err != nil {
		t.Fatalf("OpenURL(%s): %v", loc, err)
	}
	t.Cleanup(func() {
		if c, ok := st.(interface{ Close() error }); ok {
			c.Close()
		}
	})
	return st
}

// TestConformance runs the storage conformance suite, unchanged, against versitygw:
// among others the put-if-absent race (16 goroutines x 200 rounds, exactly one winner)
// and the streamed-create race.
func TestConformance(t *testing.T) {
	storagetest.Run(t, open)
}

// TestExtras runs the large-object checks (multipart conditional create, abort,
// cancellation) and DeleteMany against the server.
func TestExtras(t *testing.T) {
	cloudtest.RunExtras(t, open)
}
