package stats

import (
	"fmt"
	"github.com/skiplake/skiplake/internal/goldentest"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t testing.TB) string { return goldentest.Dir(t) }

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
