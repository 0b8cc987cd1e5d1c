package dml

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Touched is a live file some of whose rows a DML command deletes or replaces. Its
// fields are written through its TouchedSet (which holds the lock) while files are
// read, and only read after the reads end.
type Touched struct {
	// Add is the file's live add action.
	Add *log.Add
	// Old is the file's current deletion vector (nil: none).
	Old *dv.Deleted
	// Deleted holds the positions the command deletes (never one Old holds; nil:
	// none).
	Deleted *roaring64.Bitmap
	// Whole: every live row is deleted, known from metadata alone (not read).
	Whole bool
	// NumRecords is the physical row count (-1 until known from stats or footer).
	NumRecords int64
	// Read: the file's rows were read.
	Read bool
}

// LiveRows is the file's live row count before the command (-1: unknown).
func (f *Touched) LiveRows() int64 {
	if f.NumRecords < 0 {
		return -1
	}
	n := f.NumRecords
	if d := f.Add.DeletionVector; d != nil {
		n -= d.Cardinality
	}
	return n
}

// RowsDeleted is the number of live rows the command deletes from the file: every
// live row when Whole (-1 if that count is unknown), else Deleted's cardinality.
func (f *Touched) RowsDeleted() int64 {
	if f.Whole {
		return f.LiveRows()
	}
	if f.Deleted == nil {
		return 0
	}
	return int64(f.Deleted.GetCardinality())
}

// Keeps reports whether the command keeps the live row at position pos (it is not
// among the deleted positions).
func (f *Touched) Keeps(pos int64) bool {
	return f.Deleted == nil || !f.Deleted.Contains(uint64(pos))
}

// Changed reports whether the command deletes any row of the file.
func (f *Touched) Changed() bool {
	return f.Whole || (f.Deleted != nil && !f.Deleted.IsEmpty())
}

// FileFate is what a DML command's commit does with a touched file.
type FileFate int

const (
	// FateRemove removes the file: every live row is deleted.
	FateRemove FileFate = iota + 1
	// FateDeletionVector replaces the file's deletion vector by the union of the
	// old one and the deleted positions.
	FateDeletionVector
	// FateRewrite removes the file and copies its kept live rows to new files
	// (copy-on-write).
	FateRewrite
)

// Fate decides what the commit does with f: remove it when every live row is deleted
// (known from metadata, or counted and the file has no clustering home to keep —
// hasHome, Layout.HasHome), else grow its deletion vector when useDV and the file can
// take one (its physical row count is known and DVCapable), else rewrite it.
func (f *Touched) Fate(useDV, hasHome bool) FileFate {
	live := f.LiveRows()
	switch {
	case f.Whole || (live >= 0 && f.RowsDeleted() == live && !hasHome):
		return FateRemove
	case useDV && f.NumRecords >= 0 && DVCapable(f.Add):
		return FateDeletionVector
	default:
		return FateRewrite
	}
}

// Vector returns f's new deletion vector: the union of its current one and the
// positions the command deletes (for a file whose fate is FateDeletionVector: its
// physical row count is known).
func (f *Touched) Vector() (*roaring64.Bitmap, error) {
	merged, _, err := dv.Union(f.Old, f.Deleted, f.NumRecords)
	if err != nil {
		return nil, fmt.Errorf("table: deletion vector of %s: %w", f.Add.Path, err)
	}
	return merged, nil
}

// WrittenVectors is what WriteVectors stored and the actions that commit it.
type WrittenVectors struct {
	// Removes and Adds replace each file's add action by one naming its new vector
	// (Removes[i] and Adds[i] are the i-th file's).
	Removes []*log.Remove
	Adds    []*log.Add
	// Files are the deletion vector files written, relative to the table root
	// (to delete if the commit fails); Bytes is their total size.
	Files []string
	Bytes int64
}

// WriteVectors stores the new deletion vectors of files (vectors[i] is files[i]'s,
// from Vector) and returns the actions that replace each file's add action, with
// deletionTimestamp now. A file without statistics gets minimal ones holding its
// physical row count (log.ReplaceDeletionVector needs numRecords). When vector
// files were written, the result is returned even with an error, so that the
// caller can delete them.
func WriteVectors(ctx context.Context, st storage.Storage, files []*Touched, vectors []*roaring64.Bitmap, wo dv.WriteOptions, now int64) (*WrittenVectors, error) {
	if len(files) != len(vectors) {
		return nil, fmt.Errorf("table: internal error: %d files, %d deletion vectors", len(files), len(vectors))
	}
	written, err := dv.Write(ctx, st, vectors, wo)
	if err != nil {
		return nil, fmt.Errorf("table: writing deletion vectors: %w", err)
	}
	w := &WrittenVectors{Files: written.Files, Bytes: written.Bytes}
	for i, f := range files {
		live := f.Add
		if live.Stats == "" {
			c := *live
			c.Stats = `{"numRecords":` + strconv.FormatInt(f.NumRecords, 10) + `}`
			live = &c
		}
		rm, add, err := log.ReplaceDeletionVector(live, written.Descriptors[i], now)
		if err != nil {
			return w, err
		}
		w.Removes = append(w.Removes, rm)
		w.Adds = append(w.Adds, add)
	}
	return w, nil
}

// DVCapable reports whether a file can take a deletion vector:
// log.ReplaceDeletionVector needs numRecords in its statistics (a file without
// statistics gets minimal ones).
func DVCapable(add *log.Add) bool {
	if add.Stats == "" {
		return true
	}
	_, ok := add.NumRecords()
	return ok
}

// TouchedSet is the touched files of one DML attempt, by add key; it is safe for
// concurrent use by the goroutines reading the files.
type TouchedSet struct {
	mu    sync.Mutex
	files map[string]*Touched
}

// NewTouchedSet returns an empty set.
func NewTouchedSet() *TouchedSet {
	return &TouchedSet{files: map[string]*Touched{}}
}

// File returns the touched record of add, creating it (its row count from the
// file's statistics when they hold one).
func (s *TouchedSet) File(add *log.Add) *Touched {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := add.Key()
	f := s.files[k]
	if f == nil {
		f = &Touched{Add: add, NumRecords: -1}
		if n, ok := add.NumRecords(); ok {
			f.NumRecords = n
		}
		s.files[k] = f
	}
	return f
}

// RemoveWhole records that every live row of add is deleted without reading it.
func (s *TouchedSet) RemoveWhole(add *log.Add) {
	f := s.File(add)
	s.mu.Lock()
	f.Whole = true
	s.mu.Unlock()
}

// Opened records that f is being read, with its current deletion vector old.
func (s *TouchedSet) Opened(f *Touched, old *dv.Deleted) {
	s.mu.Lock()
	f.Old, f.Read = old, true
	s.mu.Unlock()
}

// Counted records f's physical row count, learnt from reading it.
func (s *TouchedSet) Counted(f *Touched, n int64) {
	s.mu.Lock()
	f.NumRecords = n
	s.mu.Unlock()
}

// Delete records that the command deletes the rows at positions pos of f (rows
// already deleted by its current vector are never passed: Target.ReadLive skips
// them).
func (s *TouchedSet) Delete(f *Touched, pos []int64) {
	if len(pos) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Deleted == nil {
		f.Deleted = roaring64.New()
	}
	for _, p := range pos {
		f.Deleted.Add(uint64(p))
	}
}

// All returns every touched file, changed or not, in add key order.
func (s *TouchedSet) All() []*Touched {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.files))
	for k := range s.files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*Touched, len(keys))
	for i, k := range keys {
		out[i] = s.files[k]
	}
	return out
}

// Changed returns the files the command deletes rows of, in add key order.
func (s *TouchedSet) Changed() []*Touched {
	var out []*Touched
	for _, f := range s.All() {
		if f.Changed() {
			out = append(out, f)
		}
	}
	return out
}
