package azure_test

import (
	"testing"

	"github.com/skiplake/skiplake/internal/cloudtest"
	_ "github.com/skiplake/skiplake/storage/azure"
	"github.com/skiplake/skiplake/storage/storagetest"
)

// TestConformance runs the storage conformance suite, unchanged, against the Azure test
// server: among others the put-if-absent race (16 goroutines x 200 rounds, exactly
// one winner) and the streamed-create race. It skips without Azure's endpoint variable.
func TestConformance(t *testing.T) {
	storagetest.Run(t, cloudtest.Azure.Open)
}

// TestExtras runs the large-object checks (multipart conditional create, abort,
// cancellation) and DeleteMany against the server.
func TestExtras(t *testing.T) {
	cloudtest.RunExtras(t, cloudtest.Azure.Open)
}
