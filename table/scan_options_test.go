package table

import (
	"runtime"
	"testing"

	"github.com/skiplake/skiplake/internal/scanexec"
)

// TestScanOptionZeroValuesAreDefaults: every option's zero value is its documented
// default.
func TestScanOptionZeroValuesAreDefaults(t *testing.T) {
	c := newScanConfig([]ScanOption{WithParallelism(0), WithBatchSize(0), WithReadAhead(0), WithLimit(0), WithAllocator(nil)})
	if c.Parallelism != runtime.GOMAXPROCS(0) || c.BatchSize != 64<<10 || c.ReadAhead != scanexec.DefaultReadAheadBytes || c.Limit != 0 || c.Mem == nil {
		t.Fatalf("zero options gave %+v", c)
	}
	c = newScanConfig([]ScanOption{WithParallelism(-3), WithLimit(-1), WithReadAhead(-1)})
	if c.Parallelism != runtime.GOMAXPROCS(0) || c.Limit != 0 || c.ReadAhead != scanexec.DefaultReadAheadBytes {
		t.Fatalf("negative options gave %+v", c)
	}
}
