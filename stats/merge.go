package stats

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/value"
)

// Merge returns the statistics of one file that holds exactly the rows of files
// (each as Parse or a Collector returned it), without reading a row: what a
// compaction that copies the files' row groups unchanged (package datafile's
// stitching) records for its output. The inputs are not modified.
//
//   - NumRecords is the sum (-1 when any input's is unknown).
//   - TightBounds is true only when every input's is.
//   - Every column that any input has gets an entry. NullCount is the sum, known
//     only when every input with rows knows it.
//   - Min is the least of the inputs' Min and Max the greatest of their Max
//     (value.Compare: NaN greatest, so a NaN Max stays NaN, "may hold NaN"). An
//     input whose column is all null (NullCount = NumRecords) has no bound to give
//     and is passed over; any other input without a bound (NULL, or no entry for
//     the column), or bounds of kinds that do not compare, make the bound NULL. So
//     S1 carries over: the result's bounds hold every row of every input.
//   - Inputs with NumRecords 0 are passed over.
//
// The result shares no mutable state with the inputs.
func Merge(files []*File) *File {
	out := &File{NumRecords: 0, TightBounds: true, Columns: map[string]*Column{}}
	var live []*File
	for _, f := range files {
		if f == nil {
			out.NumRecords = -1
			continue
		}
		if !f.TightBounds {
			out.TightBounds = false
		}
		if f.NumRecords < 0 {
			out.NumRecords = -1
		} else if out.NumRecords >= 0 {
			out.NumRecords += f.NumRecords
		}
		if f.NumRecords != 0 {
			live = append(live, f)
		}
	}
	keys := map[string]bool{}
	for _, f := range live {
		for k := range f.Columns {
			keys[k] = true
		}
	}
	for k := range keys {
		col := &Column{HasNullCount: true}
		var lo, hi value.Value
		bounded, first := true, true
		for _, f := range live {
			c := f.Columns[k]
			if c == nil {
				col.HasNullCount, bounded = false, false
				continue
			}
			if c.HasNullCount {
				col.NullCount += c.NullCount
			} else {
				col.HasNullCount = false
			}
			if c.HasNullCount && f.NumRecords >= 0 && c.NullCount == f.NumRecords {
				continue // all null: nothing to bound
			}
			if !bounded {
				continue
			}
			if c.Min.IsNull() || c.Max.IsNull() {
				bounded = false
				continue
			}
			if first {
				lo, hi, first = c.Min, c.Max, false
				continue
			}
			cl, ok1 := value.Compare(c.Min, lo)
			ch, ok2 := value.Compare(c.Max, hi)
			if !ok1 || !ok2 {
				bounded = false
				continue
			}
			if cl < 0 {
				lo = c.Min
			}
			if ch > 0 {
				hi = c.Max
			}
		}
		if !col.HasNullCount {
			col.NullCount = 0
		}
		if bounded && !first {
			col.Min, col.Max = lo, hi
		}
		out.Columns[k] = col
	}
	return out
}

// MergeJSON is ToJSON(Merge(files), schema) for files as Parse returned them,
// written so that merging neither loosens bounds from one compaction to the next
// nor tightens them below what the inputs' writers wrote: Parse widens every
// timestamp maximum by 1 ms (writers cut them down to milliseconds), so a merged
// timestamp Max on a whole millisecond is written 1 ms lower — exactly the text the
// winning input's writer wrote, which Parse reads back as that Max. A timestamp Max
// off a millisecond (an input that wrote microseconds) is written as ToJSON cuts
// it, which reads back above it. Every other bound reads back as it is (a string
// Max that Parse extended with U+10FFFF ends in a tie-breaker and is not extended
// again). So Parse(MergeJSON(files)) has bounds that hold every row of every input
// (S1), and a reader that does not widen timestamps sees no maximum below an
// input's.
//
// Do not pass a Collector's Result: its timestamp maxima are exact, not widened,
// and would be written 1 ms low.
func MergeJSON(files []*File, schema *arrow.Schema) (string, error) {
	m := Merge(files)
	for _, c := range m.Columns {
		switch c.Max.Kind() {
		case value.KindTimestamp, value.KindTimestampNTZ:
			us := c.Max.AsInt64()
			if us%1000 != 0 {
				continue
			}
			if c.Max.Kind() == value.KindTimestamp {
				c.Max = value.Timestamp(us - 1000)
			} else {
				c.Max = value.TimestampNTZ(us - 1000)
			}
		}
	}
	s, err := ToJSON(m, schema)
	if err != nil {
		return "", fmt.Errorf("stats: merged statistics: %w", err)
	}
	return s, nil
}
