package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/skiplake/skiplake/internal/pqguard"
)

// The page decoder reads a checkpoint's add columns with arrow-go's column chunk
// readers, straight from the decoded pages into the Add actions: no Arrow builders,
// no buffers reserved and cleared per batch. path, stats and clusteringProvider are
// copied into one string per column and row group (per range of rows when a large
// row group's leaf is split over the workers), which the actions' strings alias; partition values and tags are assembled from their key/value leaves by
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
// definition level at or above def marks a row holding that column's action;
// leaves are all the leaves of that column.
type pageProbe struct {
	col    int
	def    int16
	leaves []int
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
	// probes tell which rows hold the actions of the other top-level columns; the
	// leaves of those present in a row group are read by pqarrow, with always (the
	// leaves of the columns that cannot be probed).
	probes []pageProbe
	always []int
	// others reads them: batches of otherBatch rows, so that a row group whose
	// other actions are in its first rows (protocol and metaData) reads little.
	others *pqarrow.FileReader
	// pages reads the add leaves: the file's reader, or, for a file held in memory,
	// one over the same bytes that reads each column chunk through a small reused
	// buffer instead of copying the whole chunk into fresh memory first (the stats
	// chunk of a million adds is tens of megabytes, and on a VM the first touch of
	// fresh memory costs more than the copy).
	pages *file.Reader
}

// otherBatch is the record batch size of pageLayout.others.
const otherBatch = 4096

// newFilePageLayout is newPageLayout for checkpoint file rdr, whose pqarrow reader is
// fr, with the reader of its other columns. mem is the file's bytes when it is held
// in memory (nil: it is read from storage by ranges).
func newFilePageLayout(rdr *file.Reader, fr *pqarrow.FileReader, cols []int, mem *bytes.Reader) *pageLayout {
	l := newPageLayout(rdr.MetaData().Schema, fr.Manifest, cols)
	if l == nil {
		return nil
	}
	var err error
	if l.others, err = checkpointFileReaderBatch(rdr, otherBatch); err != nil {
		return nil
	}
	l.pages = rdr
	if mem != nil {
		if l.pages, err = bufferedPageReader(rdr, mem); err != nil {
			return nil
		}
	}
	return l
}

// pageBufferSize is the read buffer of bufferedPageReader's column chunks.
const pageBufferSize = 64 << 10

// bufferedPageReader is a reader of the same file as rdr, held in memory as mem,
// whose column chunk readers stream the chunk through a pageBufferSize buffer.
func bufferedPageReader(rdr *file.Reader, mem *bytes.Reader) (r *file.Reader, err error) {
	defer checkpointGuard.Contain(&err, "footer")
	md := rdr.MetaData()
	maxCompressed, _, err := pqguard.ValidateFooter(md, mem.Size())
	if err != nil {
		return nil, err
	}
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	pqguard.BoundPages(props, maxCompressed)
	props.BufferedStreamEnabled = true
	props.BufferSize = pageBufferSize
	return file.NewParquetReader(io.NewSectionReader(mem, 0, mem.Size()), file.WithReadProps(props), file.WithMetadata(md))
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
	// The other top-level columns: probed by one leaf each, read by pqarrow.
	leaves := map[string][]int{}
	var tops []string
	for _, c := range cols {
		p := sch.Column(c).ColumnPath()
		if p[0] == "add" {
			continue
		}
		if leaves[p[0]] == nil {
			tops = append(tops, p[0])
		}
		leaves[p[0]] = append(leaves[p[0]], c)
	}
	for _, name := range tops {
		probe := -1
		for _, c := range leaves[name] {
			if sch.Column(c).MaxRepetitionLevel() == 0 && probeKind(sch.Column(c).PhysicalType()) != 0 {
				probe = c
				break
			}
		}
		if probe < 0 {
			l.always = append(l.always, leaves[name]...)
			continue
		}
		_, defs := leafNodes(sch, probe)
		l.probes = append(l.probes, pageProbe{col: probe, def: defs[0], leaves: leaves[name]})
	}
	return l
}

// pageChunk is the number of levels read per call into a column chunk reader.
const pageChunk = 8192

// parallelLeafRows is the smallest row group whose leaves are read on several
// goroutines (a checkpoint written as one large row group, as Spark's often are,
// has no other parallelism). A variable so tests can lower it.
var parallelLeafRows = 1 << 16

// leafData is one leaf of a row group read from its pages: its levels, and its
// present values (strings as end offsets into their bytes).
type leafData struct {
	defs, reps []int16
	ends       []int // string leaves: each value's end in the leaf's bytes
	ints       []int64
	bools      []bool
	bytes      []byte // string values not kept (map keys and values)
	n          int    // levels read
	ba         []parquet.ByteArray
	i32        []int32
}

// leafTask is the read of one leaf of a row group.
type leafTask struct {
	lf   pageLeaf
	reps bool // read repetition levels
	// keep: string values go into one string (str) the actions alias, presized to
	// size bytes; discard: they are not needed; else into d.bytes.
	keep, discard bool
	size          int // the column chunk's uncompressed size (capped)
	levels        int // its number of levels (capped), for presizing
	// r0, r1: the rows read, [r0, r1). With part (a range of a leaf read by
	// several tasks, each with its own column chunk reader), the first r0 rows are
	// skipped, and with stop reading ends after r1-r0 levels; else (the last range,
	// or a whole leaf: r0 = 0, r1 = the row group's rows) at the leaf's end.
	r0, r1     int
	part, stop bool
	str        string
	d          *leafData
}

// maxPresize bounds the levels and bytes a leaf's buffers are presized to from the
// column chunk's metadata (beyond it they grow as read).
const maxPresize = 1 << 26

// pageScratch is a decoding goroutine's reusable state.
type pageScratch struct {
	pv     partitionInterner
	valid  []bool // per row of the row group: add present
	leaves []leafData
	tasks  []leafTask
	others []int // leaves read by pqarrow for a row group
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

// readLeaf reads every level of t's leaf of row group rgr into t.d. Only
// arrow-go's decoding and copying of its values run here, its panics contained.
func readLeaf(rgr *file.RowGroupReader, t *leafTask) (err error) {
	defer checkpointGuard.Contain(&err, "page decode")
	d, lf := t.d, t.lf
	d.n, d.ends, d.ints, d.bools, d.bytes = 0, d.ends[:0], d.ints[:0], d.bools[:0], d.bytes[:0]
	cr, err := rgr.Column(lf.col)
	if err != nil {
		return err
	}
	if c, ok := cr.(io.Closer); ok {
		defer c.Close()
	}
	if h := t.levels; h > 0 {
		if cap(d.defs) < h+pageChunk {
			d.defs = hugeMake[int16](h + pageChunk)
		}
		if t.reps && cap(d.reps) < h+pageChunk {
			d.reps = hugeMake[int16](h + pageChunk)
		}
		switch {
		case lf.kind == leafStr && !t.discard && cap(d.ends) < h:
			d.ends = hugeMake[int](h)[:0]
		case lf.kind == leafInt && cap(d.ints) < h:
			d.ints = hugeMake[int64](h)[:0]
		case lf.kind == leafBool && cap(d.bools) < h:
			d.bools = make([]bool, 0, h)
		}
	}
	want := t.r1 - t.r0 // levels to read with t.part
	if t.part {
		// Only a string leaf without repetition is split; each level is a row.
		r, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok || t.reps || want <= 0 {
			return errPageShape
		}
		if t.r0 > 0 {
			if _, err := r.Skip(int64(t.r0)); err != nil {
				return err
			}
		}
	}
	var kept []byte
	if t.keep {
		kept = hugeMake[byte](t.size)[:0]
		defer func() { t.str = unsafe.String(unsafe.SliceData(kept), len(kept)) }()
	} else if lf.kind == leafStr && !t.discard && cap(d.bytes) < t.size {
		d.bytes = make([]byte, 0, t.size)
	}
	end := 0
	for {
		batch := pageChunk
		if t.stop {
			if d.n == want {
				return nil
			}
			batch = min(batch, want-d.n)
		}
		d.defs = grow(d.defs, d.n, batch)
		var reps []int16
		if t.reps {
			d.reps = grow(d.reps, d.n, batch)
			reps = d.reps[d.n : d.n+batch]
		}
		defs := d.defs[d.n : d.n+batch]
		var lv int64
		var nv int
		switch r := cr.(type) {
		case *file.ByteArrayColumnChunkReader:
			if lf.kind != leafStr {
				return errPageShape
			}
			if len(d.ba) < pageChunk {
				d.ba = make([]parquet.ByteArray, pageChunk)
			}
			lv, nv, err = r.ReadBatchInPage(int64(batch), d.ba, defs, reps)
			if t.discard {
				break
			}
			for _, v := range d.ba[:nv] {
				if t.keep {
					kept = append(kept, v...)
				} else {
					d.bytes = append(d.bytes, v...)
				}
				end += len(v)
				d.ends = append(d.ends, end)
			}
		case *file.Int64ColumnChunkReader:
			if lf.kind != leafInt {
				return errPageShape
			}
			at := len(d.ints)
			d.ints = grow(d.ints, at, batch)
			lv, nv, err = r.ReadBatch(int64(batch), d.ints[at:at+batch], defs, reps)
			d.ints = d.ints[:at+nv]
		case *file.Int32ColumnChunkReader:
			if lf.kind != leafInt {
				return errPageShape
			}
			if len(d.i32) < pageChunk {
				d.i32 = make([]int32, pageChunk)
			}
			lv, nv, err = r.ReadBatch(int64(batch), d.i32[:batch], defs, reps)
			for _, v := range d.i32[:nv] {
				d.ints = append(d.ints, int64(v))
			}
		case *file.BooleanColumnChunkReader:
			if lf.kind != leafBool {
				return errPageShape
			}
			at := len(d.bools)
			d.bools = grow(d.bools, at, batch)
			lv, nv, err = r.ReadBatch(int64(batch), d.bools[at:at+batch], defs, reps)
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

// readTasks reads the leaves of tasks, on several goroutines for a large row group.
func readTasks(ctx context.Context, rgr *file.RowGroupReader, tasks []leafTask, rows int) error {
	workers := decodeWorkers()
	if rows < parallelLeafRows || workers < 2 {
		for i := range tasks {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := readLeaf(rgr, &tasks[i]); err != nil {
				return err
			}
		}
		return nil
	}
	// Largest first, so that no large leaf starts last.
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return tasks[b].size - tasks[a].size })
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		fail atomic.Pointer[error]
	)
	for range min(workers, len(tasks)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= len(order) || fail.Load() != nil {
					return
				}
				i := order[k]
				err := ctx.Err()
				if err == nil {
					err = readLeaf(rgr, &tasks[i])
				}
				if err != nil {
					fail.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e := fail.Load(); e != nil {
		return *e
	}
	return nil
}

// decodePages decodes row group rg of f with the page decoder: its actions in row
// order. Any error means the row group is to be decoded by pqarrow instead.
func decodePages(ctx context.Context, f *cpFile, rg int, s *pageScratch) ([]cpSeg, error) {
	l := f.layout
	rgr := l.pages.RowGroup(rg)
	rows := int(rgr.NumRows())
	if rows < 0 || int64(rows) != rgr.NumRows() {
		return nil, errPageShape
	}
	chunk := func(col int) (size, levels int) {
		cc, err := rgr.MetaData().ColumnChunk(col)
		if err != nil {
			return 0, 0
		}
		return int(min(max(cc.TotalUncompressedSize(), 0), 4*maxPresize)), int(min(max(cc.NumValues(), 0), maxPresize))
	}

	// The leaves to read, each into its own leafData; task indexes by name.
	s.tasks = s.tasks[:0]
	task := func(lf pageLeaf, reps, keep, discard bool) int {
		if lf.col < 0 {
			return -1
		}
		t := leafTask{lf: lf, reps: reps, keep: keep, discard: discard, r1: rows}
		t.size, t.levels = chunk(lf.col)
		s.tasks = append(s.tasks, t)
		return len(s.tasks) - 1
	}
	// The kept strings (path, stats, clusteringProvider) of a large row group: a
	// leaf of at least splitLeafBytes is read as one range of rows per worker, each
	// range by its own task, so that the largest leaf (stats) does not leave the
	// other cores idle. The ranges are the same for every split leaf.
	parts := 1
	if w := decodeWorkers(); rows >= parallelLeafRows && w > 1 {
		parts = max(1, min(w, maxLeafParts, rows)) // no empty range
	}
	bounds := make([]int, parts+1)
	for i := range bounds {
		bounds[i] = int(int64(rows) * int64(i) / int64(parts))
	}
	strTask := func(lf pageLeaf) []int {
		t := task(lf, false, true, false)
		if t < 0 || parts == 1 || s.tasks[t].size < splitLeafBytes {
			return []int{t}
		}
		whole := s.tasks[t]
		ts := []int{t}
		for p := range parts {
			rt := whole
			rt.part, rt.stop, rt.r0, rt.r1 = true, p < parts-1, bounds[p], bounds[p+1]
			n := rt.r1 - rt.r0
			rt.levels = min(whole.levels, n)
			// this range's share of the chunk, with an eighth more for an uneven spread
			rt.size = min(whole.size, int(int64(whole.size)*int64(n)/int64(rows))*9/8+pageBufferSize)
			if p == 0 {
				s.tasks[t] = rt
				continue
			}
			s.tasks = append(s.tasks, rt)
			ts = append(ts, len(s.tasks)-1)
		}
		return ts
	}
	tPath := strTask(l.path)
	tStats := strTask(l.stats)
	tCluster := strTask(l.cluster)
	ints := [4]pageLeaf{l.size, l.mtime, l.baseRowID, l.drcVer}
	var tInts [4]int
	for i, lf := range ints {
		tInts[i] = task(lf, false, false, false)
	}
	tDC := task(l.dataChange, false, false, false)
	var tDV [6]int
	for i, lf := range l.dv {
		tDV[i] = task(lf, false, lf.kind == leafStr, false)
	}
	tMap := [4]int{-1, -1, -1, -1}
	for i, m := range []*pageMap{l.pv, l.tags} {
		if m != nil {
			tMap[2*i] = task(m.key, true, false, false)
			tMap[2*i+1] = task(m.val, true, false, false)
		}
	}
	tProbe := len(s.tasks)
	for _, p := range l.probes {
		task(pageLeaf{col: p.col, kind: probeKind(f.rdr.MetaData().Schema.Column(p.col).PhysicalType())}, false, false, true)
	}
	if len(s.leaves) < len(s.tasks) {
		s.leaves = append(s.leaves, make([]leafData, len(s.tasks)-len(s.leaves))...)
	}
	for i := range s.tasks {
		s.tasks[i].d = &s.leaves[i]
	}
	if err := readTasks(ctx, rgr, s.tasks, rows); err != nil {
		return nil, err
	}
	leaf := func(i int) *leafData { return s.tasks[i].d }

	// path: which rows hold an add (before: the adds in the rows before each bound).
	s.valid = grow(s.valid, 0, rows)[:rows]
	n := 0
	for _, ti := range tPath {
		t := &s.tasks[ti]
		if t.d.n != t.r1-t.r0 {
			return nil, fmt.Errorf("path: %d levels for %d rows: %w", t.d.n, t.r1-t.r0, errPageShape)
		}
		for i, dl := range t.d.defs[:t.d.n] {
			s.valid[t.r0+i] = dl >= l.defAdd
			if s.valid[t.r0+i] {
				n++
			}
		}
	}
	before := make([]int, parts+1)
	for p := range parts {
		before[p+1] = before[p]
		for _, v := range s.valid[bounds[p]:bounds[p+1]] {
			if v {
				before[p+1]++
			}
		}
	}
	adds := hugeMake[Add](n)
	if err := s.assignKept(l, parts, bounds, before, [3][]int{tPath, tStats, tCluster}, adds); err != nil {
		return nil, err
	}
	var ptrs []int64 // baseRowId and defaultRowCommitVersion values, pointed to by the adds
	for i, t := range tInts {
		if t < 0 {
			continue
		}
		d, lf := leaf(t), ints[i]
		if err := checkScalarLevels(d, lf, l.defAdd, s.valid, len(d.ints)); err != nil {
			return nil, err
		}
		if i >= 2 && cap(ptrs)-len(ptrs) < len(d.ints) {
			ptrs = make([]int64, 0, len(d.ints)) // earlier values stay in the old slice
		}
		k, vi := 0, 0
		for r, dl := range d.defs[:rows] {
			if !s.valid[r] {
				continue
			}
			if dl == lf.maxDef {
				v := d.ints[vi]
				switch i {
				case 0:
					adds[k].Size = v
				case 1:
					adds[k].ModificationTime = v
				case 2:
					ptrs = append(ptrs, v)
					adds[k].BaseRowID = &ptrs[len(ptrs)-1]
				case 3:
					ptrs = append(ptrs, v)
					adds[k].DefaultRowCommitVersion = &ptrs[len(ptrs)-1]
				}
				vi++
			}
			k++
		}
	}
	if tDC >= 0 {
		d := leaf(tDC)
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
	if err := s.assignDVs(l, tDV, rows, adds); err != nil {
		return nil, err
	}
	if l.pv != nil {
		if err := s.assignMap(l.pv, leaf(tMap[0]), leaf(tMap[1]), l.defAdd, rows, func(k int, m map[string]*string) { adds[k].PartitionValues = m }, true); err != nil {
			return nil, err
		}
	}
	if l.tags != nil {
		if err := s.assignMap(l.tags, leaf(tMap[2]), leaf(tMap[3]), l.defAdd, rows, func(k int, m map[string]*string) {
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
	others := append(s.others[:0], l.always...)
	last := -1 // the last row holding another action (rows-1 when not known)
	if len(l.always) > 0 {
		last = rows - 1
	}
	for i, p := range l.probes {
		d := leaf(tProbe + i)
		if d.n != rows {
			return nil, fmt.Errorf("column %d: %d levels for %d rows: %w", p.col, d.n, rows, errPageShape)
		}
		present := false
		for r, dl := range d.defs[:rows] {
			if dl >= p.def {
				present = true
				last = max(last, r)
			}
		}
		if present {
			others = append(others, p.leaves...)
		}
	}
	s.others = others
	pre := &pageAdds{adds: adds, valid: s.valid[:rows]}
	if len(others) == 0 {
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
	slices.Sort(others)
	return mergeOtherRows(ctx, f, rg, rows, last, others, pre, &s.pv)
}

// splitLeafBytes is the smallest column chunk (uncompressed) of a kept string leaf
// that is read in row ranges by several tasks (a variable so tests can lower it).
var splitLeafBytes = 4 << 20

// maxLeafParts bounds the row ranges a leaf is read in.
const maxLeafParts = 8

// assignKept sets the adds' path, stats and clusteringProvider from the tasks of
// leaves tk (each either one task of the whole leaf or one per range of rows
// bounds[p], bounds[p+1]; before[p]: the adds in the rows before bounds[p]). The rows
// of each range are assigned on their own goroutine (a range's adds are its own), so
// that the first writes to a large fresh adds slice are spread over the cores.
func (s *pageScratch) assignKept(l *pageLayout, parts int, bounds, before []int, tk [3][]int, adds []Add) error {
	lfs := [3]pageLeaf{l.path, l.stats, l.cluster}
	set := func(j int, adds []Add) func(k int, v string) {
		switch j {
		case 0:
			return func(k int, v string) { adds[k].Path = v }
		case 1:
			return func(k int, v string) { adds[k].Stats = v }
		}
		return func(k int, v string) { adds[k].ClusteringProvider = v }
	}
	// Split leaves: range p of each on goroutine p. Then the others, whole.
	split := false
	for _, ts := range tk {
		split = split || len(ts) > 1
	}
	if !split {
		parts = 0
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for j, ts := range tk {
				if len(ts) == 1 {
					continue
				}
				t := &s.tasks[ts[p]]
				if t.r0 != bounds[p] || t.r1 != bounds[p+1] {
					errs[p] = errPageShape
					return
				}
				if errs[p] = assignStrings(t.d, lfs[j], l.defAdd, s.valid[t.r0:t.r1], t.str, set(j, adds[before[p]:])); errs[p] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for j, ts := range tk {
		if len(ts) != 1 || ts[0] < 0 {
			continue
		}
		t := &s.tasks[ts[0]]
		if err := assignStrings(t.d, lfs[j], l.defAdd, s.valid, t.str, set(j, adds)); err != nil {
			return err
		}
	}
	return nil
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

// mergeOtherRows reads leaves others (columns other than add) of row group rg of f
// with pqarrow, up to the batch holding row last (the last that holds an action of
// theirs), and turns the rows into actions, the adds taken from pre.
func mergeOtherRows(ctx context.Context, f *cpFile, rg, rows, last int, others []int, pre *pageAdds, pv *partitionInterner) (segs []cpSeg, err error) {
	rr, err := checkpointRecords(ctx, f.layout.others, others, rg)
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
		if base > last {
			break
		}
	}
	if base < rows && base > last {
		// The rows after the last other action hold adds only.
		rest := pre.adds[pre.used:]
		for k := range rest {
			a := Action{Add: &rest[k]}
			if err := a.validate(); err != nil {
				return nil, err
			}
		}
		if len(rest) > 0 {
			segs = append(segs, cpSeg{adds: rest})
		}
		pre.used, base = len(pre.adds), rows
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

// assignDVs fills the adds' deletion vectors from the deletionVector leaves read by
// tasks t (-1: absent).
func (s *pageScratch) assignDVs(l *pageLayout, t [6]int, rows int, adds []Add) error {
	var dvValid []bool // per row
	var dvs []DeletionVectorDescriptor
	for j, ti := range t {
		if ti < 0 {
			continue
		}
		d, lf, all := s.tasks[ti].d, s.tasks[ti].lf, s.tasks[ti].str
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
		if lf.kind == leafStr && len(d.ends) > 0 && d.ends[len(d.ends)-1] != len(all) {
			return errPageShape
		}
		if len(dvs) == 0 {
			continue
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

// assignMap assembles the map<string,string> m of every add from its key and value
// leaves kd and vd: set gets nil for a null map, an empty map for an empty one, else the
// entries with a key (a null value as a nil pointer). With intern, equal maps are
// shared through s.pv as on the Arrow path.
func (s *pageScratch) assignMap(m *pageMap, kd, vd *leafData, defAdd int16, rows int, set func(k int, m map[string]*string), intern bool) error {
	if kd.n != vd.n {
		return errPageShape
	}
	kb, vb := kd.bytes, vd.bytes
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
