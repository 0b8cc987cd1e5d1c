package skipping

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

// LeafIndexByPath returns a colIndex function for EvaluateRowGroups and
// EvaluatePages that maps a column path to the Parquet leaf column with the same
// path (exact match first, then case-insensitive), or -1.
func LeafIndexByPath(md *metadata.FileMetaData) func(path []string) int {
	exact := map[string]int{}
	folded := map[string]int{}
	for i := 0; i < md.Schema.NumColumns(); i++ {
		p := md.Schema.Column(i).ColumnPath()
		k := strings.Join(p, "\x00")
		exact[k] = i
		fk := strings.ToLower(k)
		if _, dup := folded[fk]; dup {
			folded[fk] = -1 // ambiguous
		} else {
			folded[fk] = i
		}
	}
	return func(path []string) int {
		k := strings.Join(path, "\x00")
		if i, ok := exact[k]; ok {
			return i
		}
		if i, ok := folded[strings.ToLower(k)]; ok {
			return i
		}
		return -1
	}
}

// decodeBound decodes a plain-encoded Parquet statistic (footer or column index)
// of leaf descr as a value of kind k. upper selects rounding when units are
// converted (nanosecond timestamps round up for an upper bound). ok is false when
// the bytes cannot be trusted as a bound of that kind.
func decodeBound(descr *schema.Column, raw []byte, k value.Kind, upper bool) (value.Value, bool) {
	lt := descr.LogicalType()
	pt := descr.PhysicalType()
	if il, isInt := lt.(schema.IntLogicalType); isInt && !il.IsSigned() {
		return value.Value{}, false // unsigned order differs from ours
	}
	i32 := func() (int64, bool) {
		if pt != parquet.Types.Int32 || len(raw) != 4 {
			return 0, false
		}
		return int64(int32(binary.LittleEndian.Uint32(raw))), true
	}
	i64 := func() (int64, bool) {
		if pt != parquet.Types.Int64 || len(raw) != 8 {
			return 0, false
		}
		return int64(binary.LittleEndian.Uint64(raw)), true
	}
	switch k {
	case value.KindInt64:
		switch lt.(type) {
		case schema.DecimalLogicalType, schema.DateLogicalType, schema.TimestampLogicalType, schema.TimeLogicalType:
			return value.Value{}, false
		}
		if v, ok := i32(); ok {
			return value.Int64(v), true
		}
		if v, ok := i64(); ok {
			return value.Int64(v), true
		}
	case value.KindFloat64:
		switch {
		case pt == parquet.Types.Float && len(raw) == 4:
			return value.Float64(float64(math.Float32frombits(binary.LittleEndian.Uint32(raw)))), true
		case pt == parquet.Types.Double && len(raw) == 8:
			return value.Float64(math.Float64frombits(binary.LittleEndian.Uint64(raw))), true
		}
	case value.KindDecimal:
		dl, ok := lt.(schema.DecimalLogicalType)
		if !ok {
			return value.Value{}, false
		}
		var x *big.Int
		if v, ok := i32(); ok {
			x = big.NewInt(v)
		} else if v, ok := i64(); ok {
			x = big.NewInt(v)
		} else if (pt == parquet.Types.ByteArray || pt == parquet.Types.FixedLenByteArray) && len(raw) > 0 && len(raw) <= 16 {
			x = new(big.Int).SetBytes(raw)
			if raw[0]&0x80 != 0 { // two's complement
				x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
			}
		} else {
			return value.Value{}, false
		}
		if x.CmpAbs(maxDecimal) > 0 {
			return value.Value{}, false
		}
		return value.Decimal(decimal128.FromBigInt(x), dl.Precision(), dl.Scale()), true
	case value.KindString, value.KindBinary:
		if pt != parquet.Types.ByteArray && pt != parquet.Types.FixedLenByteArray {
			return value.Value{}, false
		}
		if _, isDec := lt.(schema.DecimalLogicalType); isDec {
			return value.Value{}, false
		}
		if k == value.KindString {
			return value.String(string(raw)), true
		}
		return value.Binary(raw), true
	case value.KindBool:
		if pt == parquet.Types.Boolean && len(raw) == 1 {
			return value.Bool(raw[0] != 0), true
		}
	case value.KindDate:
		if _, ok := lt.(schema.DateLogicalType); ok {
			if v, ok := i32(); ok {
				return value.Date(v), true
			}
		}
	case value.KindTimestamp, value.KindTimestampNTZ:
		tl, ok := lt.(schema.TimestampLogicalType)
		if !ok {
			return value.Value{}, false
		}
		v, ok := i64()
		if !ok {
			return value.Value{}, false
		}
		var us int64
		switch tl.TimeUnit() {
		case schema.TimeUnitMillis:
			if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
				return value.Value{}, false
			}
			us = v * 1000
		case schema.TimeUnitMicros:
			us = v
		case schema.TimeUnitNanos:
			us = v / 1000
			if r := v % 1000; r != 0 { // round outward
				if upper && r > 0 {
					us++
				} else if !upper && r < 0 {
					us--
				}
			}
		default:
			return value.Value{}, false
		}
		if k == value.KindTimestamp {
			return value.Timestamp(us), true
		}
		return value.TimestampNTZ(us), true
	}
	return value.Value{}, false
}

// boundsFromRaw turns one unit's encoded min/max into rule bounds for kind k,
// applying the footer traps: a float upper bound ignores NaN, so it is replaced by
// NaN (the top of Spark order); a NaN lower bound is dropped; an empty byte-array
// max means the writer dropped it for size (arrow-go G3), so it is unknown, while
// an empty min is still a valid lower bound of strings.
func boundsFromRaw(descr *schema.Column, rawMin, rawMax []byte, haveMin, haveMax bool, k value.Kind) (lo, hi value.Value) {
	if haveMin {
		if v, ok := decodeBound(descr, rawMin, k, false); ok && !isNaN(v) {
			lo = v
		}
	}
	if haveMax {
		if v, ok := decodeBound(descr, rawMax, k, true); ok {
			hi = v
		}
		if (k == value.KindString || k == value.KindBinary) && len(rawMax) == 0 {
			hi = value.Value{}
		}
	}
	if k == value.KindFloat64 && (haveMin || haveMax) {
		hi = value.Float64(math.NaN())
	}
	return lo, hi
}

// EvaluateRowGroups decides pred for every row group of a Parquet file from the
// footer statistics: out[i] is the verdict of row group i. colIndex maps a
// predicate column path (as bound) to the file's leaf column index, -1 if absent
// (LeafIndexByPath does it by name). Columns without usable statistics (INT96,
// unknown sort order, unsigned integers, unreadable metadata) are MightMatch; float
// columns never prove a bound that could hide NaN (arrow-go G4).
func EvaluateRowGroups(pred *expr.Bound, md *metadata.FileMetaData, colIndex func(path []string) int) []Verdict {
	if md == nil {
		return nil
	}
	out := make([]Verdict, md.NumRowGroups())
	if pred == nil || colIndex == nil {
		fill(out, MightMatch)
		return out
	}
	for i := range out {
		rg := md.RowGroup(i)
		n := rg.NumRows()
		lookup := func(c *expr.BoundColumn) (colStats, bool) {
			idx := colIndex(c.Path)
			if idx < 0 || idx >= rg.NumColumns() {
				return colStats{}, false
			}
			cc, err := rg.ColumnChunk(idx)
			if err != nil {
				return colStats{}, false
			}
			st, err := cc.Statistics()
			if err != nil || st == nil {
				return colStats{}, false
			}
			cs := colStats{nulls: nullStateOf(st.HasNullCount(), st.NullCount(), n, true)}
			if st.HasMinMax() {
				cs.lo, cs.hi = boundsFromRaw(st.Descr(), st.EncodeMin(), st.EncodeMax(), true, true, c.Kind)
			}
			return cs, true
		}
		out[i] = evalTree(pred.Root(), lookup, n)
	}
	return out
}

// RowGroupBloomCannotMatch reports whether the Parquet split-block Bloom filters of
// row group rg prove that no row satisfies pred (the proof shape of
// BloomCannotMatch: equality and IN, through AND and OR). A column without a filter,
// a literal the filter cannot be probed with, or an unreadable filter proves
// nothing (S1). colIndex maps a bound column path to the file's leaf column, as for
// EvaluateRowGroups. rdr's Bloom filter reader is used; call from one goroutine.
func RowGroupBloomCannotMatch(pred *expr.Bound, rdr *file.Reader, rg int, colIndex func(path []string) int) bool {
	if pred == nil || rdr == nil || colIndex == nil {
		return false
	}
	md := rdr.MetaData()
	return bloomProof(pred.Root(), func(path []string, vals []value.Value) bool {
		idx := colIndex(path)
		if idx < 0 || idx >= md.Schema.NumColumns() {
			return false
		}
		pt := md.Schema.Column(idx).PhysicalType()
		for _, v := range vals {
			might, err := bloom.RowGroupMightContain(rdr, rg, idx, v, pt)
			if err != nil || might {
				return false
			}
		}
		return true
	})
}

// RowRange is the half-open range [Start, End) of row indices within a row group.
type RowRange struct {
	Start, End int64
}

// RowRanges is a sorted list of disjoint, non-adjacent row ranges.
type RowRanges []RowRange

// Rows returns the number of rows covered.
func (rr RowRanges) Rows() int64 {
	var n int64
	for _, r := range rr {
		n += r.End - r.Start
	}
	return n
}

// Contains reports whether row is in one of the ranges.
func (rr RowRanges) Contains(row int64) bool {
	for _, r := range rr {
		if row < r.Start {
			return false
		}
		if row < r.End {
			return true
		}
	}
	return false
}

// Union returns the rows in rr or o.
func (rr RowRanges) Union(o RowRanges) RowRanges {
	var out RowRanges
	i, j := 0, 0
	for i < len(rr) || j < len(o) {
		var r RowRange
		if j >= len(o) || (i < len(rr) && rr[i].Start <= o[j].Start) {
			r, i = rr[i], i+1
		} else {
			r, j = o[j], j+1
		}
		out = appendRange(out, r)
	}
	return out
}

// Intersect returns the rows in both rr and o.
func (rr RowRanges) Intersect(o RowRanges) RowRanges {
	var out RowRanges
	i, j := 0, 0
	for i < len(rr) && j < len(o) {
		s, e := max(rr[i].Start, o[j].Start), min(rr[i].End, o[j].End)
		if s < e {
			out = appendRange(out, RowRange{s, e})
		}
		if rr[i].End < o[j].End {
			i++
		} else {
			j++
		}
	}
	return out
}

func appendRange(out RowRanges, r RowRange) RowRanges {
	if r.Start >= r.End {
		return out
	}
	if k := len(out); k > 0 && r.Start <= out[k-1].End {
		out[k-1].End = max(out[k-1].End, r.End)
		return out
	}
	return append(out, r)
}

// EvaluatePages returns the rows of row group rowGroup that might match pred,
// from the page index (column index + offset index): pages proven CannotMatch are
// left out; AND intersects and OR unites the per-column page ranges. A column
// without a page index (not written, or discarded by the writer because a page had
// no min/max) keeps all rows. The scan reads the returned ranges (SeekToRow or
// read-and-filter) and rechecks the predicate on them.
//
// An error wrapping ErrPageIndex means a page index exists but is unreadable or
// inconsistent; the caller can fall back to reading the whole row group.
func EvaluatePages(pred *expr.Bound, rdr *file.Reader, rowGroup int, colIndex func(path []string) int) (RowRanges, error) {
	if pred == nil || rdr == nil || colIndex == nil {
		return nil, fmt.Errorf("%w: nil predicate, reader or column mapping", ErrInvalidArgument)
	}
	md := rdr.MetaData()
	if rowGroup < 0 || rowGroup >= md.NumRowGroups() {
		return nil, fmt.Errorf("%w: %d of %d", ErrRowGroupRange, rowGroup, md.NumRowGroups())
	}
	rg := md.RowGroup(rowGroup)
	n := rg.NumRows()
	all := RowRanges{{0, n}}
	if n == 0 {
		return nil, nil
	}
	rgpi, err := pageIndexOf(rdr, rowGroup)
	if err != nil {
		return nil, fmt.Errorf("%w: row group %d: %v", ErrPageIndex, rowGroup, err)
	}
	pe := &pageEval{rgpi: rgpi, n: n, all: all, colIndex: colIndex, rg: rg, cache: map[int]*pageColumn{}}
	return pe.node(pred.Root())
}

type pageColumn struct {
	first, end []int64 // per page row range
	nullPages  []bool
	mins, maxs [][]byte
	nullCounts []int64
	descr      *schema.Column
}

type pageEval struct {
	rgpi     *metadata.RowGroupPageIndexReader
	rg       *metadata.RowGroupMetaData
	n        int64
	all      RowRanges
	colIndex func([]string) int
	cache    map[int]*pageColumn
}

func (pe *pageEval) column(idx int) (*pageColumn, error) {
	if pc, ok := pe.cache[idx]; ok {
		return pc, nil
	}
	pe.cache[idx] = nil
	if pe.rgpi == nil || idx < 0 || idx >= pe.rg.NumColumns() {
		return nil, nil
	}
	ci, oi, err := columnPageIndex(pe.rgpi, idx)
	if err != nil || ci == nil {
		return nil, nil //nolint:nilerr // no column index for this column: keep all rows
	}
	if oi == nil {
		return nil, nil //nolint:nilerr // no offset index: page rows unknown
	}
	locs := oi.GetPageLocations()
	np := ci.GetNullPages()
	mins, maxs := ci.GetMinValues(), ci.GetMaxValues()
	if len(locs) != len(np) || len(mins) != len(np) || len(maxs) != len(np) {
		return nil, fmt.Errorf("%w: column %d has %d pages in the offset index and %d in the column index", ErrPageIndex, idx, len(locs), len(np))
	}
	pc := &pageColumn{nullPages: np, mins: mins, maxs: maxs, descr: pe.rg.Schema.Column(idx)}
	if ci.IsSetNullCounts() && len(ci.GetNullCounts()) == len(np) {
		pc.nullCounts = ci.GetNullCounts()
	}
	for p, l := range locs {
		end := pe.n
		if p+1 < len(locs) {
			end = locs[p+1].FirstRowIndex
		}
		if l.FirstRowIndex < 0 || l.FirstRowIndex > end || end > pe.n {
			return nil, fmt.Errorf("%w: column %d page %d has rows [%d,%d) in a row group of %d", ErrPageIndex, idx, p, l.FirstRowIndex, end, pe.n)
		}
		pc.first = append(pc.first, l.FirstRowIndex)
		pc.end = append(pc.end, end)
	}
	pe.cache[idx] = pc
	return pc, nil
}

func (pe *pageEval) node(p expr.Pred) (RowRanges, error) {
	switch p := p.(type) {
	case *expr.ConstPred:
		if p.Value {
			return pe.all, nil
		}
		return nil, nil
	case *expr.AndPred:
		out := pe.all
		for _, t := range p.Terms {
			r, err := pe.node(t)
			if err != nil {
				return nil, err
			}
			if out = out.Intersect(r); len(out) == 0 {
				break
			}
		}
		return out, nil
	case *expr.OrPred:
		var out RowRanges
		for _, t := range p.Terms {
			r, err := pe.node(t)
			if err != nil {
				return nil, err
			}
			out = out.Union(r)
		}
		return out, nil
	case expr.Leaf:
		pc, err := pe.column(pe.colIndex(p.Column().Path))
		if err != nil || pc == nil {
			return pe.all, err
		}
		k := p.Column().Kind
		var out RowRanges
		for i := range pc.first {
			rows := pc.end[i] - pc.first[i]
			cs := colStats{nulls: nullsUnknown}
			if pc.nullPages[i] {
				cs.nulls = nullsAll
			} else {
				if pc.nullCounts != nil {
					cs.nulls = nullStateOf(true, pc.nullCounts[i], rows, true)
				}
				cs.lo, cs.hi = boundsFromRaw(pc.descr, pc.mins[i], pc.maxs[i], true, true, k)
			}
			if rows == 0 || leafRule(p, cs) == CannotMatch {
				continue
			}
			out = appendRange(out, RowRange{pc.first[i], pc.end[i]})
		}
		return out, nil
	}
	return pe.all, nil
}

// pageIndexOf opens the page index of a row group. arrow-go's decoder panics on some
// damaged page indexes; the panic is contained here, at the call into it, as an
// ErrPageIndex error (the row group is then read whole).
func pageIndexOf(rdr *file.Reader, rowGroup int) (rgpi *metadata.RowGroupPageIndexReader, err error) {
	defer func() {
		if v := recover(); v != nil {
			rgpi, err = nil, fmt.Errorf("%w: row group %d: the Parquet decoder failed: %v", ErrPageIndex, rowGroup, v)
		}
	}()
	return rdr.GetPageIndexReader().RowGroup(rowGroup)
}

// columnPageIndex decodes the column and offset index of leaf idx (nil when absent or
// unreadable), a decoder panic contained as for pageIndexOf.
func columnPageIndex(rgpi *metadata.RowGroupPageIndexReader, idx int) (ci metadata.ColumnIndex, oi metadata.OffsetIndex, err error) {
	defer func() {
		if v := recover(); v != nil {
			ci, oi, err = nil, nil, fmt.Errorf("%w: column %d: the Parquet decoder failed: %v", ErrPageIndex, idx, v)
		}
	}()
	if ci, err = rgpi.GetColumnIndex(idx); err != nil || ci == nil {
		return nil, nil, err
	}
	if oi, err = rgpi.GetOffsetIndex(idx); err != nil {
		return nil, nil, err
	}
	return ci, oi, nil
}
