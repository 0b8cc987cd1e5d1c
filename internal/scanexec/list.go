package scanexec

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

// PlannedFile is a file a scan will read, with why it was kept.
type PlannedFile struct {
	// Path is the file's path relative to the table root (decoded).
	Path string `json:"path"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// NumRecords is the file's row count from its statistics (rows its deletion
	// vector removes included: see DeletedRows); -1 when the statistics do not say.
	NumRecords int64 `json:"numRecords"`
	// DeletedRows is the number of rows the file's deletion vector removes.
	DeletedRows int64 `json:"deletedRows,omitempty"`
	// PartitionValues are the file's partition values as the log stores them.
	PartitionValues map[string]*string `json:"partitionValues,omitempty"`
	// Stats is the file's statistics JSON as the log stores it ("" if none).
	Stats string `json:"stats,omitempty"`
	// FilterColumns holds what the file's statistics (or partition values) say of
	// each column the filter reads, in the filter's column order; nil without a
	// filter.
	FilterColumns []ColumnStats `json:"-"`
	// Verdict is "must-match" (every row matches; no recheck) or "might-match".
	Verdict string `json:"verdict"`
	// Reason explains the verdict in words.
	Reason string `json:"reason"`
}

// ColumnStats is what one file's statistics say of one column.
type ColumnStats struct {
	// Column is the column's logical name (a dotted path for a nested field).
	Column string
	// Min and Max bound the column's non-null values in the file; value.Null() when
	// the statistics do not say. For a partition column both are its value.
	Min, Max value.Value
	// NullCount is the number of nulls, -1 when unknown.
	NullCount int64
}

// ListFiles lists tasks as planned files, one to one and in order, with what the
// statistics (from meta, nil without a filter) say of the filter's columns cols.
// Listing many files parses each one's statistics: ranges of files are listed on
// every core.
func ListFiles(tasks []*Task, meta *Meta, cols []*expr.BoundColumn) []PlannedFile {
	out := make([]PlannedFile, len(tasks))
	parallelRanges(len(tasks), 4096, func(lo, hi int) {
		plannedFiles(out[lo:hi], tasks[lo:hi], meta, cols)
	})
	return out
}

// plannedFiles fills out with tasks, one to one.
func plannedFiles(out []PlannedFile, tasks []*Task, meta *Meta, cols []*expr.BoundColumn) {
	for i, t := range tasks {
		n, ok := t.Add.NumRecords()
		if !ok {
			n = -1
		}
		pf := PlannedFile{Path: t.Path, Size: t.Add.Size, NumRecords: n, PartitionValues: t.Add.PartitionValues,
			Stats: t.Add.Stats, Verdict: t.Verdict.Verdict.String(), Reason: t.Verdict.Reason}
		if dv := t.Add.DeletionVector; dv != nil {
			pf.DeletedRows = dv.Cardinality
		}
		if meta != nil && len(cols) > 0 {
			pf.FilterColumns = columnStats(meta, t, cols)
		}
		out[i] = pf
	}
}

// parallelRanges calls fn over consecutive ranges of [0, n) of at most chunk
// elements, on up to GOMAXPROCS goroutines when there is more than one range, and
// returns when every call has.
func parallelRanges(n, chunk int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if workers <= 1 {
		for lo := 0; lo < n; lo += chunk {
			fn(lo, min(lo+chunk, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				fn(lo, min(lo+chunk, n))
			}
		})
	}
	wg.Wait()
}

// columnStats reads the statistics of cols for one planned file.
func columnStats(meta *Meta, t *Task, cols []*expr.BoundColumn) []ColumnStats {
	fs := meta.Planner.Stats(t.Idx)
	out := make([]ColumnStats, len(cols))
	for k, c := range cols {
		cs := ColumnStats{Column: c.Name(), Min: value.Null(), Max: value.Null(), NullCount: -1}
		phys, ok := MapPath(meta.Mapper, c.Path)
		if ok && len(phys) == 1 && t.PartVals != nil {
			if v, isPart := t.PartVals[phys[0]]; isPart {
				cs.Min, cs.Max, cs.NullCount = v, v, 0
				if v.IsNull() {
					cs.NullCount = -1
					if n, known := t.Add.NumRecords(); known {
						cs.NullCount = n
					}
				}
				out[k] = cs
				continue
			}
		}
		if ok {
			if st := fs.Column(phys...); st != nil {
				cs.Min, cs.Max = st.Min, st.Max
				if st.HasNullCount {
					cs.NullCount = st.NullCount
				}
			}
		}
		out[k] = cs
	}
	return out
}
