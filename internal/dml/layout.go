package dml

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
//     (internal/writeset). They are not tagged: OPTIMIZE clusters them with the next
//     new data.
//   - Unclustered files of a table without clustering are rewritten as before,
//     their rows packed into files of the target size.
//
// With deletion vectors nothing is rewritten; updated and inserted rows are new
// rows as above.

// layoutHomeShare is the share of a DML command's memory budget (DMLOptions'
// memoryBudget, else DefaultSourceMemory) that updated rows written back in place
// may hold until their files are rewritten.
const layoutHomeShare = 4

// layoutTagKeys are the add.tags that state how a file is clustered; a rewrite
// that keeps its rows in order keeps them.
var layoutTagKeys = []string{optimize.TagCubeID, optimize.TagCubeColumns, optimize.TagCubeCurve, optimize.TagTargetSize,
	optimize.TagTree, optimize.TagTreeNode}

// LayoutTags returns the clustering tags of a (nil when it has none).
func LayoutTags(a *log.Add) map[string]string {
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

// Layout is what a DML attempt needs to keep the layout: which files it
// rewrites on their own, their clustering columns, and the updated rows held to
// be written back in place. It is safe for concurrent use.
type Layout struct {
	view   *tableview.View
	budget int64 // Arrow bytes the held rows may take

	mu   sync.Mutex
	held int64
	cols map[string]*LayoutCols // by the file's clustering (see colsKey)
	home map[string]*HomeRows   // by add.Key()
	// treeCols returns the cut columns of the workload tree a file names (nil:
	// unknown).
	treeCols func(ctx context.Context, a *log.Add) []string
}

// LayoutCols are the columns (logical top-level names) whose values must not
// change for an updated row to keep its place: a file's clustering columns and the
// partition columns. ok is false when the clustering columns are unknown.
type LayoutCols struct {
	Names []string
	OK    bool
}

// HomeRows are updated rows of one file held to be written back in place: row k of
// recs[i] replaces the row at position pos[i][k].
type HomeRows struct {
	recs []arrow.RecordBatch
	pos  [][]int64
}

// NewLayout returns the layout keeper of a command on the table version v resolves:
// held rows take at most budget/layoutHomeShare bytes (budget 0: DefaultSourceMemory);
// treeCols names the cut columns of a file's workload tree (nil: unknown).
func NewLayout(v *tableview.View, budget int64, treeCols func(ctx context.Context, a *log.Add) []string) *Layout {
	if budget <= 0 {
		budget = DefaultSourceMemory
	}
	return &Layout{view: v, budget: budget / layoutHomeShare, cols: map[string]*LayoutCols{},
		home: map[string]*HomeRows{}, treeCols: treeCols}
}

// Keeps reports whether a copy-on-write rewrite writes a's rows to files of their
// own, keeping its clustering.
func (l *Layout) Keeps(a *log.Add) bool { return tableview.IsClustered(a) }

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

// ColumnsOf returns the columns an updated row of a must keep to keep its place.
func (l *Layout) ColumnsOf(ctx context.Context, a *log.Add) *LayoutCols {
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
	c = &LayoutCols{OK: known}
	if known {
		seen := map[string]bool{}
		add := func(n string) {
			if !seen[strings.ToLower(n)] {
				seen[strings.ToLower(n)] = true
				c.Names = append(c.Names, n)
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
				c.OK = false
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

// HoldHome keeps the rows of rows (row k replacing the row at pos[k] of the file
// with key fileKey) chosen by home, within the budget; it returns the rows it
// could not hold (false in taken), which are new rows.
func (l *Layout) HoldHome(ctx context.Context, fileKey string, rows arrow.RecordBatch, pos []int64, home []bool, mem memory.Allocator) (taken []bool, err error) {
	var idx []int32
	for k, h := range home {
		if h {
			idx = append(idx, int32(k))
		}
	}
	if len(idx) == 0 {
		return home, nil
	}
	held, err := TakeRows(ctx, rows, idx, mem)
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
		h = &HomeRows{}
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

// HasHome reports whether rows are held for the file with key fileKey.
func (l *Layout) HasHome(fileKey string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.home[fileKey] != nil
}

// TakeHome hands over the rows held for the file (nil: none).
func (l *Layout) TakeHome(fileKey string) *HomeRows {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.home[fileKey]
	delete(l.home, fileKey)
	return h
}

// Release drops the held rows.
func (h *HomeRows) Release() {
	if h == nil {
		return
	}
	for _, r := range h.recs {
		r.Release()
	}
	h.recs, h.pos = nil, nil
}

// Release drops every row still held.
func (l *Layout) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, h := range l.home {
		h.Release()
		delete(l.home, k)
	}
	l.held = 0
}

// OwnFileLimit bounds the files a clustered file is rewritten into, in target
// sizes: its rows stay in one file (as the clustering run sized it) unless they
// outgrow twice the target file size and a quarter more than the input's size
// (rows that grew); then the file is cut there and the rows continue in the next,
// in order.
const OwnFileLimit = 2

// OwnFiles writes one clustered file's rewrite: one file, or the next once the
// current one reaches limit bytes (see OwnFileLimit). A Roller would cut at the
// target size, and while a file's first rows wait for its dictionary choice it
// estimates them at half their Arrow size, which on data compressing 6:1 (TPC-H
// lineitem) cut a rewritten 500 KB file into three.
type OwnFiles struct {
	o     *datafile.Output
	place datafile.FileOptions
	limit int64
	cur   *datafile.File
}

// NewOwnFiles returns the writer of one clustered file's rewrite into o, with the
// file's place (directory, partition values, tags, clusteringProvider) and a file
// size limit in bytes (see OwnFileLimit).
func NewOwnFiles(o *datafile.Output, place datafile.FileOptions, limit int64) *OwnFiles {
	return &OwnFiles{o: o, place: place, limit: limit}
}

// EndRowGroup ends the current file's row group (rows of the next row group of
// the input follow).
func (w *OwnFiles) EndRowGroup() error {
	if w.cur == nil {
		return nil
	}
	return w.cur.FlushRowGroup()
}

// Write appends rec (the file's columns) to the current file, starting one when
// none is open and closing it once it reaches the limit.
func (w *OwnFiles) Write(ctx context.Context, rec arrow.RecordBatch) error {
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
	return w.Close(ctx)
}

// Close closes the current file (its add joins the Output's).
func (w *OwnFiles) Close(ctx context.Context) error {
	f := w.cur
	w.cur = nil
	if f == nil {
		return nil
	}
	_, err := f.Close(ctx)
	return err
}

// Abort drops the open file, if any.
func (w *OwnFiles) Abort() {
	if w.cur != nil {
		w.cur.Abort()
		w.cur = nil
	}
}

// SortedRows are the rows held for one file, in position order: row i replaces
// the row at pos[i]; next is the first not yet written.
type SortedRows struct {
	Rec  arrow.RecordBatch
	Pos  []int64
	Next int
}

// SortedHome conforms and concatenates the rows held for a file and sorts them by
// position (nil when none are held). It releases h.
func SortedHome(ctx context.Context, h *HomeRows, conf *conform.Conformer, mem memory.Allocator) (*SortedRows, error) {
	if h == nil || len(h.recs) == 0 {
		return nil, nil
	}
	defer h.Release()
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
	all, err := ConcatRecords(recs[0].Schema(), recs, mem)
	if err != nil {
		return nil, err
	}
	order := make([]int32, len(pos))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(x, y int) bool { return pos[order[x]] < pos[order[y]] })
	if slices.IsSortedFunc(order, func(x, y int32) int { return int(x - y) }) {
		return &SortedRows{Rec: all, Pos: pos}, nil
	}
	defer all.Release()
	sorted, err := TakeRows(ctx, all, order, mem)
	if err != nil {
		return nil, err
	}
	sp := make([]int64, len(pos))
	for i, o := range order {
		sp[i] = pos[o]
	}
	return &SortedRows{Rec: sorted, Pos: sp}, nil
}

// PathDir returns the directory part of a slash-separated path ("" for the table
// root).
func PathDir(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

// ConcatRecords concatenates batches of one schema into one (an empty batch for
// none). The caller releases the result.
func ConcatRecords(sch *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, sch.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for k, r := range recs {
			parts[k] = r.Column(i)
		}
		if len(parts) == 0 {
			cols[i] = array.MakeArrayOfNull(mem, sch.Field(i).Type, 0)
			continue
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			releaseArrays(cols)
			return nil, fmt.Errorf("table: MERGE source: %w", err)
		}
		cols[i] = c
	}
	defer releaseArrays(cols)
	return array.NewRecordBatch(sch, cols, n), nil
}
