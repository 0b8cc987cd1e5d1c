package optimize

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/storage"
)

// exampleTB lets the examples reuse the test table helpers: failures panic.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                           {}
func (exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (exampleTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// NewExampleTable returns an in-memory unpartitioned table of n files of 1000
// generated rows (columns id, x, y, f, s). For examples only.
func NewExampleTable(n int) storage.Storage {
	tb := exampleTB{}
	tt := newTestTable(tb, "", nil)
	var recs []arrow.RecordBatch
	for i := 0; i < n; i++ {
		recs = append(recs, genRecord(1000, int64(i*1000), uint64(i+1)))
	}
	tt.appendFiles(tb, recs, nil)
	for _, r := range recs {
		r.Release()
	}
	return tt.store
}
