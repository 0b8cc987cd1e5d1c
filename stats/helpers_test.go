package stats

import (
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// goldenDir locates the shared golden tables: $SKIPLAKE_GOLDEN, else ../shared/golden
// relative to the directory holding go.mod. It skips the test when absent.
func goldenDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SKIPLAKE_GOLDEN"); d != "" {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		t.Skipf("SKIPLAKE_GOLDEN=%s does not exist; skipping golden-table test", d)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Skipf("cannot find working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("go.mod not found above the package; cannot locate golden tables")
		}
		dir = parent
	}
	g := filepath.Join(dir, "..", "shared", "golden")
	if _, err := os.Stat(g); err != nil {
		t.Skipf("golden tables not found at %s (set SKIPLAKE_GOLDEN); skipping", g)
	}
	return g
}

// buildRecord builds a one-column-per-field record from JSON rows using arrow's
// JSON reader (handy for nested data).
func buildRecord(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rowsJSON string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, schema, stringsReader(rowsJSON))
	if err != nil {
		t.Fatalf("RecordFromJSON: %v", err)
	}
	return rec
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func fmtSscanf(s string, p, sc *int32) (int, error) { return fmt.Sscanf(s, "decimal(%d,%d)", p, sc) }

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }
