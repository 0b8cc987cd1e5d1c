package table

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dml"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/stats"
)

// DML keeps the layout the table paid for (OPTIMIZE's clustering):
//
//   - Copy-on-write rewrites a clustered file (tableview.IsClustered: cube tags, a
//     clusteringProvider, a workload tree's tags) on its own: its surviving rows, in
//     the file's order, go to a new file of their own (several when they outgrow
//     the target size) in the same directory, with the same partition values,
//     clustering tags and clusteringProvider. The new file's rows are a
//     subsequence of the old file's, so they lie inside the range its cube or tree
//     node claims and stay sorted by its key: the tags are true of it, the layout
//     report still counts it clustered, and plain compaction leaves it alone as it
//     left the old file.
//   - An updated row (UPDATE, a MERGE update) whose clustering columns and
//     partition values are unchanged has the key of the row it replaces: under
//     copy-on-write it is written back in that row's place in the rewritten file
//     (within a memory bound, layoutHomeShare of the command's budget; beyond it,
//     and in any other case, it is a new row). The clustering columns are the
//     file's own: those its ZCUBE_ZORDER_BY tag names, else the table's clustering
//     columns for a file with a clusteringProvider, else its workload tree's cut
//     columns; a nested clustering column compares its whole top-level column.
//   - New rows — inserted rows, updated rows that moved, rows of unclustered files
//     rewritten on a clustered table — are written as an optimized write writes
//     them: sorted by the table's clustering key (a clustered table's clustering
//     columns on a Hilbert curve, else the columns and curve of the most recent
//     clustering run the files' tags record) into files of disjoint key ranges
//     (sortBuffers). They are not tagged: OPTIMIZE clusters them with the next
//     new data.
//   - Unclustered files of a table without clustering are rewritten as before,
//     their rows packed into files of the target size.
//
// With deletion vectors nothing is rewritten; updated and inserted rows are new
// rows as above.

// layoutHomeShare is the share of a DML command's memory budget (DMLOptions'
// memoryBudget, else dml.DefaultSourceMemory) that updated rows written back in place
// may hold until their files are rewritten.
const layoutHomeShare = 4

// layoutTagKeys are the add.tags that state how a file is clustered; a rewrite
// that keeps its rows in order keeps them.
var layoutTagKeys = []string{optimize.TagCubeID, optimize.TagCubeColumns, optimize.TagCubeCurve, optimize.TagTargetSize,
	optimize.TagTree, optimize.TagTreeNode}

// layoutTags returns the clustering tags of a (nil when it has none).
func layoutTags(a *log.Add) map[string]string {
	var tags map[string]string
	for _, k := range layoutTagKeys {
		if v, ok := a.Tags[k]; ok {
			if tags == nil {
				tags = map[string]string{}
			}
			tags[k] = v
		}
	}
	return tags
}

// dmlLayout is what a DML attempt needs to keep the layout: which files it
// rewrites on their own, their clustering columns, and the updated rows held to
// be written back in place. It is safe for concurrent use.
type dmlLayout struct {
	view   *tableview.View
	budget int64 // Arrow bytes the held rows may take

	mu   sync.Mutex
	held int64
	cols map[string]*layoutCols // by the file's clustering (see colsKey)
	home map[string]*homeRows   // by add.Key()
	// treeCols returns the cut columns of the workload tree a file names (nil:
	// unknown).
	treeCols func(ctx context.Context, a *log.Add) []string
}

// layoutCols are the columns (logical top-level names) whose values must not
// change for an updated row to keep its place: a file's clustering columns and the
// partition columns. ok is false when the clustering columns are unknown.
type layoutCols struct {
	names []string
	ok    bool
}

// homeRows are updated rows of one file held to be written back in place: row k of
// recs[i] replaces the row at position pos[i][k].
type homeRows struct {
	recs []arrow.RecordBatch
	pos  [][]int64
}

func newDMLLayout(v *tableview.View, budget int64, treeCols func(ctx context.Context, a *log.Add) []string) *dmlLayout {
	if budget <= 0 {
		budget = dml.DefaultSourceMemory
	}
	return &dmlLayout{view: v, budget: budget / layoutHomeShare, cols: map[string]*layoutCols{},
		home: map[string]*homeRows{}, treeCols: treeCols}
}

// keeps reports whether a copy-on-write rewrite writes a's rows to files of their
// own, keeping its clustering.
func (l *dmlLayout) keeps(a *log.Add) bool { return tableview.IsClustered(a) }

// colsKey identifies the clustering a file's columns follow from.
func colsKey(a *log.Add) string {
	switch {
	case a.Tags[optimize.TagCubeColumns] != "":
		return "z\x00" + a.Tags[optimize.TagCubeColumns]
	case a.ClusteringProvider != "":
		return "p\x00"
	case a.Tags[optimize.TagTree] != "":
		return "t\x00" + a.Tags[optimize.TagTree]
	}
	return ""
}

// columnsOf returns the columns an updated row of a must keep to keep its place.
func (l *dmlLayout) columnsOf(ctx context.Context, a *log.Add) *layoutCols {
	k := colsKey(a)
	l.mu.Lock()
	c, ok := l.cols[k]
	l.mu.Unlock()
	if ok {
		return c
	}
	var names []string
	known := true
	switch {
	case a.Tags[optimize.TagCubeColumns] != "":
		if json.Unmarshal([]byte(a.Tags[optimize.TagCubeColumns]), &names) != nil {
			known = false
		}
	case a.ClusteringProvider != "":
		cl, err := l.view.Clustering()
		if err != nil || cl == nil || len(cl.Columns) == 0 {
			known = false
		} else {
			names = cl.Names()
		}
	case a.Tags[optimize.TagTree] != "" && l.treeCols != nil:
		names = l.treeCols(ctx, a)
		known = names != nil
	default:
		known = false
	}
	c = &layoutCols{ok: known}
	if known {
		seen := map[string]bool{}
		add := func(n string) {
			if !seen[strings.ToLower(n)] {
				seen[strings.ToLower(n)] = true
				c.names = append(c.names, n)
			}
		}
		for _, n := range names {
			parts, err := stats.ParseColumnPath(n)
			if err != nil || len(parts) == 0 {
				parts = []string{n}
			}
			// A nested column compares its whole top-level column.
			logical, _, found := l.view.PhysicalPath(parts[:1])
			if !found {
				c.ok = false
				break
			}
			add(logical[0])
		}
		for _, p := range l.view.Partitions() {
			add(p.Name)
		}
	}
	l.mu.Lock()
	l.cols[k] = c
	l.mu.Unlock()
	return c
}

// holdHome keeps the rows of rows (row k replacing the row at pos[k] of the file
// with key fileKey) chosen by home, within the budget; it returns the rows it
// could not hold (false in taken), which are new rows.
func (l *dmlLayout) holdHome(ctx context.Context, fileKey string, rows arrow.RecordBatch, pos []int64, home []bool, mem memory.Allocator) (taken []bool, err error) {
	var idx []int32
	for k, h := range home {
		if h {
			idx = append(idx, int32(k))
		}
	}
	if len(idx) == 0 {
		return home, nil
	}
	held, err := dml.TakeRows(ctx, rows, idx, mem)
	if err != nil {
		return nil, err
	}
	size := datafile.RecordBytes(held)
	l.mu.Lock()
	if l.held+size > l.budget {
		l.mu.Unlock()
		held.Release()
		return make([]bool, len(home)), nil
	}
	l.held += size
	h := l.home[fileKey]
	if h == nil {
		h = &homeRows{}
		l.home[fileKey] = h
	}
	p := make([]int64, len(idx))
	for i, k := range idx {
		p[i] = pos[k]
	}
	h.recs = append(h.recs, held)
	h.pos = append(h.pos, p)
	l.mu.Unlock()
	return home, nil
}

// hasHome reports whether rows are held for the file with key fileKey.
func (l *dmlLayout) hasHome(fileKey string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.home[fileKey] != nil
}

// takeHome hands over the rows held for the file (nil: none).
func (l *dmlLayout) takeHome(fileKey string) *homeRows {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.home[fileKey]
	delete(l.home, fileKey)
	return h
}

func (h *homeRows) release() {
	if h == nil {
		return
	}
	for _, r := range h.recs {
		r.Release()
	}
	h.recs, h.pos = nil, nil
}

// release drops every row still held.
func (l *dmlLayout) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, h := range l.home {
		h.release()
		delete(l.home, k)
	}
	l.held = 0
}

// writeUpdated writes the updated rows rows of file f: row k of rows replaces the
// live row oldIdx[k] of old, at position pos[k] of the file. Under copy-on-write,
// rows of a clustered file whose clustering columns and partition values did not
// change are held to be written back in place (see dmlLayout); the others go to
// the row sink as new rows.
func (a *dmlAttempt) writeUpdated(ctx context.Context, f *touchedFile, old arrow.RecordBatch, oldIdx []int, pos []int64, rows arrow.RecordBatch) error {
	l := a.layout
	if l == nil || a.useDV || a.opts.DryRun || !l.keeps(f.add) || rows.NumRows() == 0 {
		return a.sink.Write(ctx, rows)
	}
	cols := l.columnsOf(ctx, f.add)
	if !cols.ok {
		return a.sink.Write(ctx, rows)
	}
	n := int(rows.NumRows())
	home := make([]bool, n)
	for k := range home {
		home[k] = true
	}
	for _, name := range cols.names {
		oi, ni := fieldIndexFold(old.Schema(), name), fieldIndexFold(rows.Schema(), name)
		if oi < 0 || ni < 0 {
			return a.sink.Write(ctx, rows)
		}
		oc, nc := old.Column(oi), rows.Column(ni)
		if !arrow.TypeEqual(oc.DataType(), nc.DataType()) {
			return a.sink.Write(ctx, rows)
		}
		for k := range home {
			if home[k] && !array.SliceEqual(oc, int64(oldIdx[k]), int64(oldIdx[k])+1, nc, int64(k), int64(k)+1) {
				home[k] = false
			}
		}
	}
	// The rows held for the file's own rewrite (rewriteOwn) do not pass through the
	// row sink, which checks the write rules: they are checked here.
	rules, err := writeRulesOf(a.snap)
	if err != nil {
		return err
	}
	if err := rules.Verify(rows); err != nil {
		return err
	}
	taken, err := l.holdHome(ctx, f.add.Key(), rows, pos, home, a.mem)
	if err != nil {
		return err
	}
	moved := make([]bool, n)
	any := false
	for k, t := range taken {
		moved[k] = !t
		any = any || moved[k]
	}
	if !any {
		return nil
	}
	out, err := dml.FilterRows(ctx, rows, moved, a.mem)
	if err != nil {
		return err
	}
	defer out.Release()
	return a.sink.Write(ctx, out)
}

// ownFileLimit bounds the files a clustered file is rewritten into, in target
// sizes: its rows stay in one file (as the clustering run sized it) unless they
// outgrow twice the target file size and a quarter more than the input's size
// (rows that grew); then the file is cut there and the rows continue in the next,
// in order.
const ownFileLimit = 2

// ownFiles writes one clustered file's rewrite: one file, or the next once the
// current one reaches limit bytes (see ownFileLimit). A Roller would cut at the
// target size, and while a file's first rows wait for its dictionary choice it
// estimates them at half their Arrow size, which on data compressing 6:1 (TPC-H
// lineitem) cut a rewritten 500 KB file into three.
type ownFiles struct {
	o     *datafile.Output
	place datafile.FileOptions
	limit int64
	cur   *datafile.File
}

// endRowGroup ends the current file's row group (rows of the next row group of
// the input follow).
func (w *ownFiles) endRowGroup() error {
	if w.cur == nil {
		return nil
	}
	return w.cur.FlushRowGroup()
}

func (w *ownFiles) write(ctx context.Context, rec arrow.RecordBatch) error {
	if w.cur == nil {
		f, err := w.o.Create(ctx, w.place)
		if err != nil {
			return err
		}
		w.cur = f
	}
	if err := w.cur.Write(rec); err != nil {
		return err
	}
	if w.cur.EstimatedSize() < w.limit {
		return nil
	}
	w.cur.Settle()
	if w.cur.EstimatedSize() < w.limit {
		return nil
	}
	return w.close(ctx)
}

// close closes the current file (its add joins the Output's).
func (w *ownFiles) close(ctx context.Context) error {
	f := w.cur
	w.cur = nil
	if f == nil {
		return nil
	}
	_, err := f.Close(ctx)
	return err
}

func (w *ownFiles) abort() {
	if w.cur != nil {
		w.cur.Abort()
		w.cur = nil
	}
}

// rewriteOwn rewrites one clustered file under copy-on-write into files of its
// own (dmlLayout): its live rows that the command keeps, and the updated rows held
// for it in the places of the rows they replace, in the file's order and in its
// row groups (each ends where the input's did, so row-group skipping stays as
// fine as the clustering run made it), with its directory, partition values,
// clustering tags and clusteringProvider. It returns the rows copied unchanged.
func (a *dmlAttempt) rewriteOwn(ctx context.Context, sc *Scan, task *fileTask, f *touchedFile, old *dv.Deleted) (int64, error) {
	ws, ok := a.sink.(*dml.FileSink)
	if !ok {
		return 0, fmt.Errorf("table: internal error: rewriting %s without a file writer", f.add.Path)
	}
	dec, err := f.add.DecodedPath()
	if err != nil {
		return 0, fmt.Errorf("table: %w", err)
	}
	place := datafile.FileOptions{Dir: pathDir(dec), LogDir: pathDir(f.add.Path), PartitionValues: f.add.PartitionValues,
		Tags: layoutTags(f.add), ClusteringProvider: f.add.ClusteringProvider}
	limit := max(ownFileLimit*ws.Writer().Output().TargetFileSize(), f.add.Size+f.add.Size/4)
	// Row groups end where the input's end (below), never by size.
	place.RowGroupBytes = limit
	out := &ownFiles{o: ws.Writer().Output(), place: place, limit: limit}
	lastRG := -1
	conf := conform.New(a.snap.view.Logical(), a.mem)
	home, err := sortedHome(ctx, a.layout.takeHome(f.add.Key()), conf, a.mem)
	if err != nil {
		return 0, err
	}
	if home != nil {
		defer home.rec.Release()
	}
	var copied int64
	_, err = sc.readLive(ctx, task, old, true, &ScanReport{}, func(b liveBatch) error {
		if b.rg != lastRG && lastRG >= 0 {
			if err := out.endRowGroup(); err != nil {
				return err
			}
		}
		lastRG = b.rg
		if a.changes != nil {
			// The change data feed hears of the rows this rewrite drops, as in the
			// plain copy-on-write path (rewriteFiles).
			keep := make([]bool, len(b.pos))
			for i, p := range b.pos {
				keep[i] = f.deleted == nil || !f.deleted.Contains(uint64(p))
			}
			if err := a.changes.rewritten(ctx, f, b, keep); err != nil {
				return err
			}
		}
		rec, err := conf.Conform(ctx, b.rec)
		if err != nil {
			return err
		}
		defer rec.Release()
		// The output in runs of consecutive rows of one source: the batch's rows
		// the command keeps, and the held rows (sorted by position, consumed in
		// order) in the places of the rows they replace.
		type run struct {
			home   bool
			lo, hi int
		}
		var runs []run
		emit := func(fromHome bool, i int) {
			if n := len(runs); n > 0 && runs[n-1].home == fromHome && runs[n-1].hi == i {
				runs[n-1].hi++
				return
			}
			runs = append(runs, run{fromHome, i, i + 1})
		}
		for i, p := range b.pos {
			switch {
			case f.deleted == nil || !f.deleted.Contains(uint64(p)):
				emit(false, i)
				copied++
			case home != nil && home.next < len(home.pos) && home.pos[home.next] == p:
				emit(true, home.next)
				home.next++
			}
		}
		if len(runs) == 0 {
			return nil
		}
		parts := make([]arrow.RecordBatch, len(runs))
		for k, r := range runs {
			src := rec
			if r.home {
				src = home.rec
			}
			parts[k] = src.NewSlice(int64(r.lo), int64(r.hi))
		}
		rows, err := concatRecords(rec.Schema(), parts, a.mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return err
		}
		defer rows.Release()
		data := ws.Writer().Project(rows)
		defer data.Release()
		return out.write(ctx, data)
	})
	if err == nil && home != nil && home.next != len(home.pos) {
		err = fmt.Errorf("table: internal error: %d updated rows of %s found no place in it", len(home.pos)-home.next, f.add.Path)
	}
	if err == nil {
		err = out.close(ctx)
	}
	if err != nil {
		out.abort()
		return 0, err
	}
	return copied, nil
}

// sortedRows are the rows held for one file, in position order: row i replaces
// the row at pos[i]; next is the first not yet written.
type sortedRows struct {
	rec  arrow.RecordBatch
	pos  []int64
	next int
}

// sortedHome conforms and concatenates the rows held for a file and sorts them by
// position (nil when none are held). It releases h.
func sortedHome(ctx context.Context, h *homeRows, conf *conform.Conformer, mem memory.Allocator) (*sortedRows, error) {
	if h == nil || len(h.recs) == 0 {
		return nil, nil
	}
	defer h.release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var pos []int64
	for i, r := range h.recs {
		c, err := conf.Conform(ctx, r)
		if err != nil {
			return nil, err
		}
		recs = append(recs, c)
		pos = append(pos, h.pos[i]...)
	}
	all, err := concatRecords(recs[0].Schema(), recs, mem)
	if err != nil {
		return nil, err
	}
	order := make([]int32, len(pos))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(x, y int) bool { return pos[order[x]] < pos[order[y]] })
	if slices.IsSortedFunc(order, func(x, y int32) int { return int(x - y) }) {
		return &sortedRows{rec: all, pos: pos}, nil
	}
	defer all.Release()
	sorted, err := dml.TakeRows(ctx, all, order, mem)
	if err != nil {
		return nil, err
	}
	sp := make([]int64, len(pos))
	for i, o := range order {
		sp[i] = pos[o]
	}
	return &sortedRows{rec: sorted, pos: sp}, nil
}

// pathDir returns the directory part of a slash-separated path ("" for the table
// root).
func pathDir(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

// newRowsOrder is the clustering DML sorts its new rows by: a clustered table's
// clustering columns on a Hilbert curve (as OPTIMIZE clusters it), else the
// columns and curve of the most recent clustering run its files' tags record;
// none (nil) on a table without either, or clustered by no columns.
func newRowsOrder(v *tableview.View) ([][]string, optimize.Curve) {
	if c, err := v.Clustering(); err == nil && c != nil {
		if len(c.Columns) == 0 {
			return nil, optimize.CurveNone
		}
		return c.Columns, optimize.CurveHilbert
	}
	names, curve := lastClustering(v.Log().Files())
	if curve == optimize.CurveNone || curve == optimize.CurveWorkload || len(names) == 0 {
		return nil, optimize.CurveNone
	}
	paths := make([][]string, 0, len(names))
	for _, n := range names {
		parts, err := stats.ParseColumnPath(n)
		if err != nil || len(parts) == 0 || v.IsPartition(parts[0]) {
			return nil, optimize.CurveNone
		}
		paths = append(paths, parts)
	}
	return paths, curve
}
