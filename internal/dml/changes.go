package dml

import (
	"context"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// ChangeSink records, on a table whose change data feed is on
// (View.WritesChangeData), the rows a DML command changes in change data files
// under _change_data/ (PROTOCOL.md "Change Data Files"), committed as cdc actions
// in the command's commit. The command feeds it as it finds the rows (inserted,
// deleted, update pre- and postimages) and consults it at the points of its finish
// where files are classified, rewritten and closed; it never changes what the
// command writes to the table.
//
// Which commits get change files follows Delta Spark, whose readers (and
// delta-kernel-rs's) read a version with cdc actions from them alone and derive the
// changes of any other version from its add and remove actions (new files: inserts;
// removed files: deletes; a file whose deletion vector grew: the newly deleted rows
// are deletes). A commit needs change files exactly when those derived rows would be
// wrong (Decide):
//
//   - it updates rows (the update is a pre- and a postimage, not a delete and an
//     insert), or
//   - it rewrites a file copy-on-write (the copied rows would read as deleted and
//     inserted again).
//
// Otherwise — rows deleted by deletion vectors or with whole files, rows inserted in
// new files — the commit records no change file, as Spark's DELETE with deletion
// vectors and its inserts-only MERGE do not. When it needs them, every row it
// changed goes into them: inserts and update images as they are produced, deleted
// rows with the values read to find them (Delete), or, for rows found by position
// alone (DeletedAt: a DELETE reads only its predicate's columns; whole files are
// removed unread), read again from their files at finish and handed to
// DeleteSelected (copy-on-write rewrites deliver them on the way: Rewritten).
//
// Rows produced before the command knows whether it needs change files are written
// all the same and discarded (with the files) when it turns out not to.
//
// Files are named by their add's key (log.Add.Key). A ChangeSink is safe for
// concurrent use by the goroutines that read files.
type ChangeSink struct {
	schema *arrow.Schema // the table's logical columns and _change_type
	w      *FileSink     // the change data files (writeset.NewChanges)
	mem    memory.Allocator

	mu      sync.Mutex
	updates int64                        // update images recorded (pairs)
	pending map[string]*roaring64.Bitmap // by add key: deleted rows whose values are not written yet
	decided bool
	needed  bool
	done    map[string]bool // files whose pending rows were written (by add key)
}

// NewChangeSink returns the change sink of a command on the table v describes
// (whose change data feed is on), writing to store with set (the command's file
// settings) and allocating from mem.
func NewChangeSink(store storage.Storage, v *tableview.View, set writeset.Settings, mem memory.Allocator) *ChangeSink {
	return &ChangeSink{schema: writeset.ChangeSchema(v), w: NewChangeFileSink(store, v, set), mem: mem,
		pending: map[string]*roaring64.Bitmap{}, done: map[string]bool{}}
}

// Start starts the change data files' writer.
func (c *ChangeSink) Start(ctx context.Context) error { return c.w.Start(ctx) }

// emit writes rows (the table's logical columns, in any batch the conformer
// accepts) with _change_type kind.
func (c *ChangeSink) emit(ctx context.Context, rows arrow.RecordBatch, kind string) error {
	n := rows.NumRows()
	if n == 0 {
		return nil
	}
	typ, err := datafile.ConstantColumn(value.String(kind), arrow.BinaryTypes.String, int(n), c.mem)
	if err != nil {
		return err
	}
	defer typ.Release()
	fields := append(append([]arrow.Field(nil), rows.Schema().Fields()...), tableview.ChangeTypeField)
	cols := append(append([]arrow.Array(nil), rows.Columns()...), typ)
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	defer rec.Release()
	return c.w.Write(ctx, rec)
}

// Insert records inserted rows.
func (c *ChangeSink) Insert(ctx context.Context, rows arrow.RecordBatch) error {
	return c.emit(ctx, rows, tableview.ChangeInsert)
}

// Update records updated rows: pre holds them as they were, post as they are now
// (row i of one is row i of the other).
func (c *ChangeSink) Update(ctx context.Context, pre, post arrow.RecordBatch) error {
	if pre.NumRows() != post.NumRows() {
		return fmt.Errorf("table: internal error: %d update preimages for %d postimages", pre.NumRows(), post.NumRows())
	}
	if err := c.emit(ctx, pre, tableview.ChangeUpdatePreimage); err != nil {
		return err
	}
	if err := c.emit(ctx, post, tableview.ChangeUpdatePostimage); err != nil {
		return err
	}
	c.mu.Lock()
	c.updates += pre.NumRows()
	c.mu.Unlock()
	return nil
}

// Delete records deleted rows whose values the caller has.
func (c *ChangeSink) Delete(ctx context.Context, rows arrow.RecordBatch) error {
	return c.emit(ctx, rows, tableview.ChangeDelete)
}

// DeletedAt records that the rows at positions pos of the file with add key key are
// deleted, their values to be read at finish if the commit needs change files.
func (c *ChangeSink) DeletedAt(key string, pos []int64) {
	if len(pos) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bm := c.pending[key]
	if bm == nil {
		bm = roaring64.New()
		c.pending[key] = bm
	}
	for _, p := range pos {
		bm.Add(uint64(p))
	}
}

// Decide settles whether the commit needs change files, once the command has
// classified the files it touched: rewrite holds the keys of those it rewrites
// copy-on-write (whose deleted rows then go through Rewritten).
func (c *ChangeSink) Decide(rewrite []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.decided = true
	c.needed = c.updates > 0 || len(rewrite) > 0
	for _, k := range rewrite {
		c.done[k] = true
	}
}

// Needed reports whether the commit needs change files (false before Decide).
func (c *ChangeSink) Needed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.needed
}

// Pending returns the positions recorded by DeletedAt for the file with add key key
// (nil: none), and whether the file's deleted rows were written already (it is
// rewritten copy-on-write).
func (c *ChangeSink) Pending(key string) (*roaring64.Bitmap, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[key], c.done[key]
}

// Rewritten takes a batch of the file with add key key being rewritten
// copy-on-write (keep[i]: row i is copied) and writes the deleted rows among the
// others as deletes; the rest of them were recorded already (update images,
// deletes with values).
func (c *ChangeSink) Rewritten(ctx context.Context, key string, b LiveBatch, keep []bool) error {
	c.mu.Lock()
	needed, bm := c.needed, c.pending[key]
	c.mu.Unlock()
	if !needed || bm == nil {
		return nil
	}
	return c.DeleteSelected(ctx, b, func(i int) bool { return !keep[i] && bm.Contains(uint64(b.Pos[i])) })
}

// DeleteSelected writes the rows i of b that sel selects as deletes.
func (c *ChangeSink) DeleteSelected(ctx context.Context, b LiveBatch, sel func(i int) bool) error {
	mask := make([]bool, len(b.Pos))
	any := false
	for i := range mask {
		mask[i] = sel(i)
		any = any || mask[i]
	}
	if !any {
		return nil
	}
	rows, err := FilterRows(ctx, b.Rec, mask, c.mem)
	if err != nil {
		return err
	}
	defer rows.Release()
	return c.Delete(ctx, rows)
}

// Finish closes the change data files and returns their cdc actions (none when the
// commit does not need them: what was written is discarded). It is an error before
// Decide.
func (c *ChangeSink) Finish(ctx context.Context) ([]*log.CDC, error) {
	c.mu.Lock()
	decided, needed := c.decided, c.needed
	c.mu.Unlock()
	if !decided {
		return nil, fmt.Errorf("table: internal error: change data files closed before the commit's files were classified")
	}
	if !needed {
		c.w.Discard()
		return nil, nil
	}
	adds, err := c.w.Finish(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*log.CDC, len(adds))
	for i, ad := range adds {
		out[i] = &log.CDC{Path: ad.Path, PartitionValues: ad.PartitionValues, Size: ad.Size, Tags: ad.Tags}
	}
	return out, nil
}

// Discard deletes the change data files written (best effort).
func (c *ChangeSink) Discard() { c.w.Discard() }
