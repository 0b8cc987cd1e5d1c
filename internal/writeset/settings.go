package writeset

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/optimize"
)

// Settings are what a Writer is asked to do beyond what the table's view decides
// (codec, statistics, Bloom filters, physical names: tableview.View.FileSpec). Every
// writer of a table's files in package table states them here: Write and
// CreateWrite from their options, DML for its rewritten and change data files. The
// zero value writes with the table's defaults, checks every row against the write
// rules and sorts only an optimized write on a clustered table.
type Settings struct {
	// TargetFileSize overrides the table's delta.targetFileSize when positive.
	TargetFileSize int64
	// Parallelism bounds how many columns of a file are encoded at once (0:
	// GOMAXPROCS).
	Parallelism int
	// Allocator allocates Arrow buffers (nil: memory.DefaultAllocator).
	Allocator memory.Allocator
	// RowGroupBytes, when positive, caps the row groups written (a DML command under
	// a memory budget); else they follow the target file size
	// (datafile.RowGroupTarget).
	RowGroupBytes int64
	// SortBy and SortCurve, when SortBy is set, sort the rows by that clustering
	// before they are written (see sortBuffers): DML's new rows on a clustered
	// table. Without SortBy an optimized write on a clustered table sorts by the
	// clustering columns on a Hilbert curve.
	SortBy    [][]string
	SortCurve optimize.Curve
	// Inserts marks a writer of new rows (Write's input): they are completed
	// (generated and identity columns) before the write rules are checked; the rows
	// DML commands write are checked only.
	Inserts bool
	// Unchanged marks a writer of rows the table already holds, unchanged (the rows
	// DELETE keeps), or of change data files: they are not checked against the
	// write rules again.
	Unchanged bool
	// Progress, if set, is called after each input batch with the rows written so
	// far.
	Progress func(rows int64)
}

func (s Settings) allocator() memory.Allocator {
	if s.Allocator == nil {
		return memory.DefaultAllocator
	}
	return s.Allocator
}
