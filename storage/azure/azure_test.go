package azure_test

import (
	"context"
	"testing"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/storage"
	_ "github.com/skiplake/skiplake/storage/azure"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// open opens a fresh prefix on the Azure test server (skips without its variable).
func open(t *testing.T) storage.Storage {
	t.Helper()
	loc := cloudtest.Azure.Location(t)
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

// TestConformance runs the storage conformance suite, unchanged, against the emulator.
func TestConformance(t *testing.T) {
	storagetest.Run(t, open)
}

// TestExtras runs the large-object checks (multipart conditional create, abort,
// cancellation) and DeleteMany against the server.
func TestExtras(t *testing.T) {
	cloudtest.RunExtras(t, open)
}
