package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The page decoder reads a checkpoint's add columns with arrow-go's column chunk
// readers, straight from the decoded pages into the Add actions: no Arrow builders,
// no buffers reserved and cleared per batch. path, stats and clusteringProvider are
// copied into one string per column and row group, which the actions' strings
// alias; partition values and tags are assembled from their key/value leaves by
// repetition level (partition maps shared through the partitionInterner, as on the
// Arrow path); nullable structs (add, deletionVector) from definition levels.
//
// It accepts only the shapes whose Arrow reading it reproduces exactly (pageLayout):
// anything else — stats_parsed or partitionValues_parsed under add, a column of
// another type or shape, a duplicated name, leaves that disagree about a row, any
// decoding error — makes decodeRowGroup decode the row group with pqarrow instead,
// which also gives the error a damaged checkpoint reports. Columns other than add
// are probed by one definition-level leaf each; when a row group holds such actions
// they are read with pqarrow and merged row by row with the adds.

// errPageShape reports data the page decoder does not take; the row group is then
// decoded by pqarrow.
var errPageShape = errors.New("not decodable from the pages")

// leafKind is what a page leaf holds.
type leafKind uint8

const (
	leafStr leafKind = iota + 1
	leafInt
	leafBool
)

// pageLeaf is one leaf column of add the page decoder reads.
type pageLeaf struct {
	col    int   // the leaf's column index; -1: the column is absent (reads as null)
	maxDef int16 // definition level at which the value is present
	kind   leafKind
}

var noLeaf = pageLeaf{col: -1}

// pageMap is a map<string,string> under add: its key and value leaves, the level at
// which the map is not null (defMap) and at which an entry exists (defEntry).
type pageMap struct {
	key, val         pageLeaf
	defMap, defEntry int16
}

// pageProbe is a leaf of a top-level column other than add, not repeated, whose
// definition level at or above def marks a row holding that column's action.
type pageProbe struct {
	col int
	def int16
}

// pageLayout is how a checkpoint file's add column is read from the pages.
type pageLayout struct {
	defAdd                                     int16 // level at which add is present
	path, stats, cluster                       pageLeaf
	size, mtime, dataChange, baseRowID, drcVer pageLeaf
	pv, tags                                   *pageMap
	// dv: storageType, pathOrInlineDv, offset, sizeInBytes, cardinality, maxRowIndex.
	dv    [6]pageLeaf
	defDV int16
	// others are the leaves read by pqarrow when a row group holds other actions;
	// probes tell whether it does (othersAlways: some column cannot be probed).
	others       []int
	probes       []pageProbe
	othersAlways bool
}

var dvLeafNames = [6]string{"storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality", "maxRowIndex"}

// leafNodes lists the schema nodes from the top-level column down to leaf col, and
// the definition level each of them is present at.
func leafNodes(sch *schema.Schema, col int) ([]schema.Node, []int16) {
	var nodes []schema.Node
	for n := schema.Node(sch.Column(col).SchemaNode()); n != nil && n.Parent() != nil; n = n.Parent() {
		nodes = append(nodes, n)
	}
	for i, j := 0, len(nodes)-1; i < j; i, j = i+1, j-1 {
		nodes[i], nodes[j] = nodes[j], nodes[i]
	}
	defs := make([]int16, len(nodes))
	var d int16
	for i, n := range nodes {
		if n.RepetitionType() != parquet.Repetitions.Required {
			d++
		}
		defs[i] = d
	}
	return nodes, defs
}

func stringType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// newPageLayout recognises the add column of a checkpoint file (nil: the file is
// read with pqarrow only). man is pqarrow's manifest of the file: the Arrow types it
// gives are the ones the Arrow path reads, so a leaf is taken only when that path
// reads its value the way the page decoder does.
func newPageLayout(sch *schema.Schema, man *pqarrow.SchemaManifest, cols []int) *pageLayout {
	var addF *pqarrow.SchemaField
	seen := map[string]bool{}
	for i := range man.Fields {
		f := &man.Fields[i]
		if !checkpointColumns[f.Field.Name] {
			continue
		}
		if seen[f.Field.Name] {
			return nil
		}
		seen[f.Field.Name] = true
		if f.Field.Name == "add" {
			addF = f
		}
	}
	if addF == nil || addF.IsLeaf() {
		return nil
	}
	if _, ok := addF.Field.Type.(*arrow.StructType); !ok {
		return nil
	}
	l := &pageLayout{path: noLeaf, stats: noLeaf, cluster: noLeaf, size: noLeaf, mtime: noLeaf,
		dataChange: noLeaf, baseRowID: noLeaf, drcVer: noLeaf, defAdd: -1}
	for i := range l.dv {
		l.dv[i] = noLeaf
	}
	// scalar checks a leaf directly under add (depth 2) or under deletionVector (3).
	scalar := func(c *pqarrow.SchemaField, depth int, kind leafKind) (pageLeaf, bool) {
		if !c.IsLeaf() {
			return noLeaf, false
		}
		desc := sch.Column(c.ColIndex)
		nodes, defs := leafNodes(sch, c.ColIndex)
		if len(nodes) != depth || desc.MaxRepetitionLevel() != 0 || defs[0] != 1 ||
			nodes[0].RepetitionType() != parquet.Repetitions.Optional {
			return noLeaf, false
		}
		if l.defAdd < 0 {
			l.defAdd = defs[0]
		}
		t := c.Field.Type
		switch kind {
		case leafStr:
			if !stringType(t) || desc.PhysicalType() != parquet.Types.ByteArray {
				return noLeaf, false
			}
		case leafBool:
			if t.ID() != arrow.BOOL || desc.PhysicalType() != parquet.Types.Boolean {
				return noLeaf, false
			}
		case leafInt:
			switch {
			case t.ID() == arrow.INT64 && desc.PhysicalType() == parquet.Types.Int64:
			case (t.ID() == arrow.INT32 || t.ID() == arrow.INT16 || t.ID() == arrow.INT8) &&
				desc.PhysicalType() == parquet.Types.Int32:
			default:
				return noLeaf, false
			}
		}
		return pageLeaf{col: c.ColIndex, maxDef: defs[len(defs)-1], kind: kind}, true
	}
	mapOf := func(c *pqarrow.SchemaField) (*pageMap, bool) {
		mt, ok := c.Field.Type.(*arrow.MapType)
		if !ok || !stringType(mt.KeyType()) || !stringType(mt.ItemType()) ||
			len(c.Children) != 1 || len(c.Children[0].Children) != 2 {
			return nil, false
		}
		k, v := &c.Children[0].Children[0], &c.Children[0].Children[1]
		if !k.IsLeaf() || !v.IsLeaf() {
			return nil, false
		}
		m := &pageMap{}
		for i, x := range []*pqarrow.SchemaField{k, v} {
			desc := sch.Column(x.ColIndex)
			nodes, defs := leafNodes(sch, x.ColIndex)
			if len(nodes) != 4 || desc.PhysicalType() != parquet.Types.ByteArray || desc.MaxRepetitionLevel() != 1 ||
				nodes[0].RepetitionType() != parquet.Repetitions.Optional || defs[0] != 1 ||
				nodes[1].RepetitionType() == parquet.Repetitions.Repeated ||
				nodes[2].RepetitionType() != parquet.Repetitions.Repeated ||
				nodes[3].RepetitionType() == parquet.Repetitions.Repeated {
				return nil, false
			}
			leaf := pageLeaf{col: x.ColIndex, maxDef: defs[3], kind: leafStr}
			if i == 0 {
				m.key, m.defMap, m.defEntry = leaf, defs[1], defs[2]
			} else {
				if defs[1] != m.defMap || defs[2] != m.defEntry {
					return nil, false
				}
				m.val = leaf
			}
		}
		if l.defAdd < 0 {
			l.defAdd = 1
		}
		return m, true
	}
	names := map[string]bool{}
	for i := range addF.Children {
		c := &addF.Children[i]
		name := c.Field.Name
		if names[name] {
			return nil
		}
		names[name] = true
		var ok bool
		switch name {
		case "path":
			l.path, ok = scalar(c, 2, leafStr)
		case "stats":
			l.stats, ok = scalar(c, 2, leafStr)
		case "clusteringProvider":
			l.cluster, ok = scalar(c, 2, leafStr)
		case "size":
			l.size, ok = scalar(c, 2, leafInt)
		case "modificationTime":
			l.mtime, ok = scalar(c, 2, leafInt)
		case "baseRowId":
			l.baseRowID, ok = scalar(c, 2, leafInt)
		case "defaultRowCommitVersion":
			l.drcVer, ok = scalar(c, 2, leafInt)
		case "dataChange":
			l.dataChange, ok = scalar(c, 2, leafBool)
		case "partitionValues":
			l.pv, ok = mapOf(c)
		case "tags":
			l.tags, ok = mapOf(c)
		case "deletionVector":
			if _, isStruct := c.Field.Type.(*arrow.StructType); !isStruct || c.IsLeaf() {
				return nil
			}
			dvNames := map[string]bool{}
			ok = true
			for j := range c.Children {
				g := &c.Children[j]
				if dvNames[g.Field.Name] {
					return nil
				}
				dvNames[g.Field.Name] = true
				for k, n := range dvLeafNames {
					if g.Field.Name != n {
						continue
					}
					kind := leafInt
					if k < 2 {
						kind = leafStr
					}
					var good bool
					if l.dv[k], good = scalar(g, 3, kind); !good {
						return nil
					}
					_, defs := leafNodes(sch, g.ColIndex)
					if l.defDV != 0 && l.defDV != defs[1] {
						return nil
					}
					l.defDV = defs[1]
				}
			}
			if l.defDV == 0 {
				return nil // no leaf tells whether the deletion vector is there
			}
		case "stats_parsed", "partitionValues_parsed":
			return nil
		default:
			ok = true // not read, as on the Arrow path
		}
		if !ok {
			return nil
		}
	}
	if l.path.col < 0 || l.defAdd != 1 {
		return nil
	}
	// The other top-level columns: read by pqarrow, probed by one leaf each.
	probed := map[string]bool{}
	for _, c := range cols {
		p := sch.Column(c).ColumnPath()
		if p[0] == "add" {
			continue
		}
		l.others = append(l.others, c)
		if probed[p[0]] || sch.Column(c).MaxRepetitionLevel() != 0 {
			continue
		}
		probed[p[0]] = true
		_, defs := leafNodes(sch, c)
		l.probes = append(l.probes, pageProbe{col: c, def: defs[0]})
	}
	for name := range seen {
		if name != "add" && !probed[name] {
			l.othersAlways = true
		}
	}
	return l
}

// pageChunk is the number of levels read per call into a column chunk reader.
const pageChunk = 8192

// leafData is one leaf of a row group read from its pages: its levels, and its
// present values (strings as end offsets into a byte sink).
type leafData struct {
	defs, reps []int16
	ends       []int // string leaves: each value's end in the sink
	ints       []int64
	bools      []bool
	n          int // levels read
}

// pageScratch is a decoding goroutine's reusable state.
type pageScratch struct {
	pv    partitionInterner
	ba    []parquet.ByteArray
	i32   []int32
	valid []bool // per row of the row group: add present
	leaf  [3]leafData
	buf   [2][]byte // map key and value bytes
}

// grow returns s (whose first used elements are kept) with length cap and room
// for n more elements after used.
func grow[T any](s []T, used, n int) []T {
	if used+n <= cap(s) {
		return s[:cap(s)]
	}
	ns := make([]T, max(2*cap(s), used+n))
	copy(ns, s[:used])
	return ns
}

// readLeaf reads every level of leaf lf of row group rgr into d (reps when
// withReps), string values appended through put. Only arrow-go's decoding runs
// here, its panics contained.
func (s *pageScratch) readLeaf(rgr *file.RowGroupReader, lf pageLeaf, withReps bool, d *leafData, put func([]byte)) (err error) {
	defer checkpointGuard.Contain(&err, "page decode")
	d.n, d.ends, d.ints, d.bools = 0, d.ends[:0], d.ints[:0], d.bools[:0]
	cr, err := rgr.Column(lf.col)
	if err != nil {
		return err
	}
	if c, ok := cr.(io.Closer); ok {
		defer c.Close()
	}
	end := 0
	for {
		d.defs = grow(d.defs, d.n, pageChunk)
		var reps []int16
		if withReps {
			d.reps = grow(d.reps, d.n, pageChunk)
			reps = d.reps[d.n : d.n+pageChunk]
		}
		defs := d.defs[d.n : d.n+pageChunk]
		var lv int64
		var nv int
		switch r := cr.(type) {
		case *file.ByteArrayColumnChunkReader:
			if lf.kind != leafStr {
				return errPageShape
			}
			if len(s.ba) < pageChunk {
				s.ba = make([]parquet.ByteArray, pageChunk)
			}
			lv, nv, err = r.ReadBatchInPage(pageChunk, s.ba, defs, reps)
			for _, v := range s.ba[:nv] {
				put(v)
				end += len(v)
				d.ends = append(d.ends, end)
			}
		case *file.Int64ColumnChunkReader:
			if lf.kind != leafInt {
				return errPageShape
			}
			at := len(d.ints)
			d.ints = grow(d.ints, at, pageChunk)
			lv, nv, err = r.ReadBatch(pageChunk, d.ints[at:at+pageChunk], defs, reps)
			d.ints = d.ints[:at+nv]
		case *file.Int32ColumnChunkReader:
			if lf.kind != leafInt {
				return errPageShape
			}
			if len(s.i32) < pageChunk {
				s.i32 = make([]int32, pageChunk)
			}
			lv, nv, err = r.ReadBatch(pageChunk, s.i32, defs, reps)
			for _, v := range s.i32[:nv] {
				d.ints = append(d.ints, int64(v))
			}
		case *file.BooleanColumnChunkReader:
			if lf.kind != leafBool {
				return errPageShape
			}
			at := len(d.bools)
			d.bools = grow(d.bools, at, pageChunk)
			lv, nv, err = r.ReadBatch(pageChunk, d.bools[at:at+pageChunk], defs, reps)
			d.bools = d.bools[:at+nv]
		default:
			return errPageShape
		}
		if err != nil {
			return err
		}
		if lv == 0 {
			if !cr.HasNext() {
				return cr.Err()
			}
			return fmt.Errorf("column %d: no levels read", lf.col)
		}
		d.n += int(lv)
	}
}

// decodePages decodes row group rg of f with the page decoder: its actions in row
// order. Any error means the row group is to be decoded by pqarrow instead.
func decodePages(ctx context.Context, f *cpFile, rg int, s *pageScratch) ([]cpSeg, error) {
	l := f.layout
	rgr := f.rdr.RowGroup(rg)
	rows := int(rgr.NumRows())
	if rows < 0 || int64(rows) != rgr.NumRows() {
		return nil, errPageShape
	}
	chunkSize := func(col int) int {
		cc, err := rgr.MetaData().ColumnChunk(col)
		if err != nil {
			return 0
		}
		return int(min(max(cc.TotalUncompressedSize(), 0), 256<<20))
	}

	// path: which rows hold an add.
	d := &s.leaf[0]
	var pathB strings.Builder
	pathB.Grow(chunkSize(l.path.col))
	if err := s.readLeaf(rgr, l.path, false, d, func(b []byte) { pathB.Write(b) }); err != nil {
		return nil, err
	}
	if d.n != rows {
		return nil, fmt.Errorf("path: %d levels for %d rows: %w", d.n, rows, errPageShape)
	}
	s.valid = grow(s.valid, 0, rows)[:rows]
	n := 0
	for i, dl := range d.defs[:rows] {
		s.valid[i] = dl >= l.defAdd
		if s.valid[i] {
			n++
		}
	}
	adds := make([]Add, n)
	paths := pathB.String()
	if err := assignStrings(d, l.path, l.defAdd, s.valid, paths, func(k int, v string) { adds[k].Path = v }); err != nil {
		return nil, err
	}

	// The other string columns, integers and dataChange.
	for _, sl := range []struct {
		lf  pageLeaf
		set func(k int, v string)
	}{
		{l.stats, func(k int, v string) { adds[k].Stats = v }},
		{l.cluster, func(k int, v string) { adds[k].ClusteringProvider = v }},
	} {
		if sl.lf.col < 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.Grow(chunkSize(sl.lf.col))
		if err := s.readLeaf(rgr, sl.lf, false, d, func(v []byte) { b.Write(v) }); err != nil {
			return nil, err
		}
		if err := assignStrings(d, sl.lf, l.defAdd, s.valid, b.String(), sl.set); err != nil {
			return nil, err
		}
	}
	var ptrs []int64 // baseRowId and defaultRowCommitVersion values, pointed to by the adds
	for _, il := range []struct {
		lf  pageLeaf
		set func(k int, v int64)
		ptr func(k int, v *int64)
	}{
		{lf: l.size, set: func(k int, v int64) { adds[k].Size = v }},
		{lf: l.mtime, set: func(k int, v int64) { adds[k].ModificationTime = v }},
		{lf: l.baseRowID, ptr: func(k int, v *int64) { adds[k].BaseRowID = v }},
		{lf: l.drcVer, ptr: func(k int, v *int64) { adds[k].DefaultRowCommitVersion = v }},
	} {
		if il.lf.col < 0 {
			continue
		}
		if err := s.readLeaf(rgr, il.lf, false, d, nil); err != nil {
			return nil, err
		}
		if err := checkScalarLevels(d, il.lf, l.defAdd, s.valid, len(d.ints)); err != nil {
			return nil, err
		}
		if il.ptr != nil && len(d.ints) > 0 {
			if ptrs == nil {
				ptrs = make([]int64, 0, 2*n)
			}
			if cap(ptrs)-len(ptrs) < len(d.ints) {
				ptrs = make([]int64, 0, len(d.ints)) // earlier values stay in the old slice
			}
		}
		k, vi := 0, 0
		for i, dl := range d.defs[:rows] {
			if !s.valid[i] {
				continue
			}
			if dl == il.lf.maxDef {
				if il.ptr != nil {
					ptrs = append(ptrs, d.ints[vi])
					il.ptr(k, &ptrs[len(ptrs)-1])
				} else {
					il.set(k, d.ints[vi])
				}
				vi++
			}
			k++
		}
	}
	if l.dataChange.col >= 0 {
		if err := s.readLeaf(rgr, l.dataChange, false, d, nil); err != nil {
			return nil, err
		}
		if err := checkScalarLevels(d, l.dataChange, l.defAdd, s.valid, len(d.bools)); err != nil {
			return nil, err
		}
		k, vi := 0, 0
		for i, dl := range d.defs[:rows] {
			if !s.valid[i] {
				continue
			}
			if dl == l.dataChange.maxDef {
				adds[k].DataChange = d.bools[vi]
				vi++
			}
			k++
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.readDVs(rgr, l, rows, adds, chunkSize); err != nil {
		return nil, err
	}
	if l.pv != nil {
		if err := s.readMap(rgr, l.pv, l.defAdd, rows, func(k int, m map[string]*string) { adds[k].PartitionValues = m }, true); err != nil {
			return nil, err
		}
	}
	if l.tags != nil {
		if err := s.readMap(rgr, l.tags, l.defAdd, rows, func(k int, m map[string]*string) {
			if m == nil {
				return
			}
			t := make(map[string]string, len(m))
			for key, v := range m {
				if v != nil {
					t[key] = *v
				}
			}
			adds[k].Tags = t
		}, false); err != nil {
			return nil, err
		}
	}

	// Rows holding other actions: merged with the adds row by row.
	others := l.othersAlways
	for _, p := range l.probes {
		if others {
			break
		}
		lf := pageLeaf{col: p.col, kind: probeKind(f.rdr.MetaData().Schema.Column(p.col).PhysicalType())}
		if lf.kind == 0 {
			others = true
			break
		}
		if err := s.readLeaf(rgr, lf, false, d, func([]byte) {}); err != nil {
			return nil, err
		}
		if d.n != rows {
			return nil, fmt.Errorf("column %d: %d levels for %d rows: %w", p.col, d.n, rows, errPageShape)
		}
		for _, dl := range d.defs[:rows] {
			if dl >= p.def {
				others = true
				break
			}
		}
	}
	pre := &pageAdds{adds: adds, valid: s.valid[:rows]}
	if !others {
		for k := range adds {
			a := Action{Add: &adds[k]}
			if err := a.validate(); err != nil {
				return nil, err
			}
		}
		if n == 0 {
			return nil, nil
		}
		return []cpSeg{{adds: adds}}, nil
	}
	return mergeOtherRows(ctx, f, rg, rows, pre, &s.pv)
}

// probeKind is the leaf kind a probe of physical type t is read as (0: not probed).
func probeKind(t parquet.Type) leafKind {
	switch t {
	case parquet.Types.ByteArray:
		return leafStr
	case parquet.Types.Int64, parquet.Types.Int32:
		return leafInt
	case parquet.Types.Boolean:
		return leafBool
	}
	return 0
}

// pageAdds are the adds of a row group decoded from the pages, for the rows whose
// valid is set, in row order; used counts those handed out so far.
type pageAdds struct {
	adds  []Add
	valid []bool
	used  int
}

// mergeOtherRows reads the columns of f other than add in row group rg with pqarrow
// and turns the rows into actions, the adds taken from pre.
func mergeOtherRows(ctx context.Context, f *cpFile, rg, rows int, pre *pageAdds, pv *partitionInterner) (segs []cpSeg, err error) {
	if len(f.layout.others) == 0 {
		return nil, errPageShape
	}
	rr, err := checkpointRecords(ctx, f.fr, f.layout.others, rg)
	if err != nil {
		return nil, err
	}
	defer releaseCheckpointRecords(rr)
	base := 0
	for {
		ok, err := nextCheckpointRecord(rr)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		rec := rr.RecordBatch()
		for _, col := range rec.Columns() {
			if err := checkDecoded(col); err != nil {
				return nil, err
			}
		}
		m := int(rec.NumRows())
		if base+m > rows {
			return nil, errPageShape
		}
		if segs, err = appendRows(segs, rec.Schema().Fields(), rec.Columns(), m, pv, pre, base); err != nil {
			return nil, err
		}
		base += m
	}
	if base != rows || pre.used != len(pre.adds) {
		return nil, errPageShape
	}
	return segs, nil
}

// checkScalarLevels checks that leaf d (one level per row) agrees with valid about
// which rows hold an add and has as many values as levels at lf.maxDef.
func checkScalarLevels(d *leafData, lf pageLeaf, defParent int16, valid []bool, values int) error {
	if d.n != len(valid) {
		return fmt.Errorf("column %d: %d levels for %d rows: %w", lf.col, d.n, len(valid), errPageShape)
	}
	present := 0
	for i, dl := range d.defs[:d.n] {
		if (dl >= defParent) != valid[i] || dl > lf.maxDef {
			return fmt.Errorf("column %d: row %d: %w", lf.col, i, errPageShape)
		}
		if dl == lf.maxDef {
			present++
		}
	}
	if present != values {
		return fmt.Errorf("column %d: %d values for %d present levels: %w", lf.col, values, present, errPageShape)
	}
	return nil
}

// assignStrings hands set the string of each row that holds one (k counts the valid
// rows), cut from all, the concatenated values of leaf d.
func assignStrings(d *leafData, lf pageLeaf, defParent int16, valid []bool, all string, set func(k int, v string)) error {
	if err := checkScalarLevels(d, lf, defParent, valid, len(d.ends)); err != nil {
		return err
	}
	if len(d.ends) > 0 && d.ends[len(d.ends)-1] != len(all) {
		return errPageShape
	}
	k, vi, start := 0, 0, 0
	for i, dl := range d.defs[:d.n] {
		if !valid[i] {
			continue
		}
		if dl == lf.maxDef {
			end := d.ends[vi]
			set(k, all[start:end])
			start = end
			vi++
		}
		k++
	}
	return nil
}

// readDVs fills the adds' deletion vectors from the deletionVector leaves.
func (s *pageScratch) readDVs(rgr *file.RowGroupReader, l *pageLayout, rows int, adds []Add, chunkSize func(int) int) error {
	var dvValid []bool // per row
	var dvs []DeletionVectorDescriptor
	d := &s.leaf[1]
	for j, lf := range l.dv {
		if lf.col < 0 {
			continue
		}
		var b strings.Builder
		var put func([]byte)
		if lf.kind == leafStr {
			b.Grow(min(chunkSize(lf.col), 1<<20))
			put = func(v []byte) { b.Write(v) }
		}
		if err := s.readLeaf(rgr, lf, false, d, put); err != nil {
			return err
		}
		if d.n != rows {
			return fmt.Errorf("column %d: %d levels for %d rows: %w", lf.col, d.n, rows, errPageShape)
		}
		if dvValid == nil {
			dvValid = make([]bool, rows)
			nd := 0
			for i, dl := range d.defs[:rows] {
				if dl >= l.defDV {
					if !s.valid[i] {
						return errPageShape
					}
					dvValid[i] = true
					nd++
				}
			}
			if nd == 0 {
				return s.checkNoDV(rgr, l, rows, j+1)
			}
			dvs = make([]DeletionVectorDescriptor, nd)
			k, di := 0, 0
			for i := range rows {
				if !s.valid[i] {
					continue
				}
				if dvValid[i] {
					adds[k].DeletionVector = &dvs[di]
					di++
				}
				k++
			}
		}
		values := len(d.ints)
		if lf.kind == leafStr {
			values = len(d.ends)
		}
		present := 0
		for i, dl := range d.defs[:rows] {
			if (dl >= l.defAdd) != s.valid[i] || (dl >= l.defDV) != dvValid[i] || dl > lf.maxDef {
				return errPageShape
			}
			if dl == lf.maxDef {
				present++
			}
		}
		if present != values {
			return errPageShape
		}
		all := b.String()
		if lf.kind == leafStr && len(d.ends) > 0 && d.ends[len(d.ends)-1] != len(all) {
			return errPageShape
		}
		di, vi, start := 0, 0, 0
		for i, dl := range d.defs[:rows] {
			if !dvValid[i] {
				continue
			}
			dv := &dvs[di]
			di++
			if dl != lf.maxDef {
				continue
			}
			switch j {
			case 0, 1:
				v := all[start:d.ends[vi]]
				start = d.ends[vi]
				if j == 0 {
					dv.StorageType = v
				} else {
					dv.PathOrInlineDv = v
				}
			case 2:
				o := int32(d.ints[vi])
				dv.Offset = &o
			case 3:
				dv.SizeInBytes = int32(d.ints[vi])
			case 4:
				dv.Cardinality = d.ints[vi]
			case 5:
				v := d.ints[vi]
				dv.MaxRowIndex = &v
			}
			vi++
		}
	}
	return nil
}

// checkNoDV checks that the deletionVector leaves from the from-th on hold no
// deletion vector either (the first one read held none).
func (s *pageScratch) checkNoDV(rgr *file.RowGroupReader, l *pageLayout, rows, from int) error {
	d := &s.leaf[1]
	for _, lf := range l.dv[from:] {
		if lf.col < 0 {
			continue
		}
		if err := s.readLeaf(rgr, lf, false, d, func([]byte) {}); err != nil {
			return err
		}
		if d.n != rows {
			return errPageShape
		}
		for i, dl := range d.defs[:rows] {
			if dl >= l.defDV || (dl >= l.defAdd) != s.valid[i] {
				return errPageShape
			}
		}
	}
	return nil
}

// readMap assembles the map<string,string> m of every add from its key and value
// leaves: set gets nil for a null map, an empty map for an empty one, else the
// entries with a key (a null value as a nil pointer). With intern, equal maps are
// shared through s.pv as on the Arrow path.
func (s *pageScratch) readMap(rgr *file.RowGroupReader, m *pageMap, defAdd int16, rows int, set func(k int, m map[string]*string), intern bool) error {
	kd, vd := &s.leaf[1], &s.leaf[2]
	s.buf[0], s.buf[1] = s.buf[0][:0], s.buf[1][:0]
	if err := s.readLeaf(rgr, m.key, true, kd, func(b []byte) { s.buf[0] = append(s.buf[0], b...) }); err != nil {
		return err
	}
	if err := s.readLeaf(rgr, m.val, true, vd, func(b []byte) { s.buf[1] = append(s.buf[1], b...) }); err != nil {
		return err
	}
	if kd.n != vd.n {
		return errPageShape
	}
	kb, vb := s.buf[0], s.buf[1]
	if (len(kd.ends) > 0 && kd.ends[len(kd.ends)-1] != len(kb)) || (len(vd.ends) > 0 && vd.ends[len(vd.ends)-1] != len(vb)) {
		return errPageShape
	}
	j, k := 0, 0
	ki, vi, kstart, vstart := 0, 0, 0, 0
	type entry struct {
		k, v   []byte
		hasKey bool
		hasVal bool
	}
	var entries []entry
	for i := range rows {
		if j >= kd.n || kd.reps[j] != 0 || vd.reps[j] != 0 {
			return errPageShape
		}
		dl := kd.defs[j]
		if (dl >= defAdd) != s.valid[i] {
			return errPageShape
		}
		if dl < m.defEntry {
			// null add, null map or empty map: one level, the same in both leaves
			if vd.defs[j] != dl {
				return errPageShape
			}
			j++
			if !s.valid[i] {
				continue
			}
			if dl < m.defMap {
				set(k, nil)
				k++
				continue
			}
		}
		entries = entries[:0]
		for first := true; dl >= m.defEntry && j < kd.n && (first || kd.reps[j] == 1); first = false {
			dk, dv := kd.defs[j], vd.defs[j]
			if vd.reps[j] != kd.reps[j] || dk < m.defEntry || dv < m.defEntry || dk > m.key.maxDef || dv > m.val.maxDef {
				return errPageShape
			}
			var e entry
			if dk == m.key.maxDef {
				if ki >= len(kd.ends) {
					return errPageShape
				}
				e.k, e.hasKey = kb[kstart:kd.ends[ki]], true
				kstart = kd.ends[ki]
				ki++
			}
			if dv == m.val.maxDef {
				if vi >= len(vd.ends) {
					return errPageShape
				}
				e.v, e.hasVal = vb[vstart:vd.ends[vi]], true
				vstart = vd.ends[vi]
				vi++
			}
			entries = append(entries, e)
			j++
		}
		// The interner's key: each entry with a key as key, NUL, then 'v' and the
		// value or 'n', NUL (see partitionInterner.mapAt).
		var shared map[string]*string
		if intern {
			p := &s.pv
			p.key = p.key[:0]
			for _, e := range entries {
				if !e.hasKey {
					continue
				}
				p.key = append(append(p.key, e.k...), 0)
				if e.hasVal {
					p.key = append(append(append(p.key, 'v'), e.v...), 0)
				} else {
					p.key = append(p.key, 'n', 0)
				}
			}
			shared = p.maps[string(p.key)]
		}
		if shared == nil {
			shared = make(map[string]*string, len(entries))
			for _, e := range entries {
				if !e.hasKey {
					continue
				}
				if e.hasVal {
					v := string(e.v)
					shared[string(e.k)] = &v
				} else {
					shared[string(e.k)] = nil
				}
			}
			if intern {
				p := &s.pv
				if p.maps == nil {
					p.maps = map[string]map[string]*string{}
				}
				if len(p.maps) < maxInternedPartitions {
					p.maps[string(p.key)] = shared
				}
			}
		}
		set(k, shared)
		k++
	}
	if j != kd.n || ki != len(kd.ends) || vi != len(vd.ends) {
		return errPageShape
	}
	return nil
}
