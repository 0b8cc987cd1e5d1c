package dml

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

func TestTouchedFate(t *testing.T) {
	withDV := func(n int64) *log.DeletionVectorDescriptor {
		return &log.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab", Cardinality: n}
	}
	cases := []struct {
		name     string
		add      *log.Add
		whole    bool
		deleted  []int64
		counted  int64 // >= 0: the row count learnt from reading
		useDV    bool
		hasHome  bool
		want     FileFate
		live     int64
		nDeleted int64
	}{
		{name: "whole from metadata", add: &log.Add{Path: "a", Stats: `{"numRecords":5}`}, whole: true, counted: -1,
			useDV: true, want: FateRemove, live: 5, nDeleted: 5},
		{name: "every live row deleted", add: &log.Add{Path: "a", Stats: `{"numRecords":3}`}, deleted: []int64{0, 1, 2}, counted: -1,
			useDV: true, want: FateRemove, live: 3, nDeleted: 3},
		{name: "every live row under an old vector", add: &log.Add{Path: "a", Stats: `{"numRecords":4}`, DeletionVector: withDV(2)},
			deleted: []int64{1, 3}, counted: -1, useDV: true, want: FateRemove, live: 2, nDeleted: 2},
		{name: "every row but a clustering home keeps it", add: &log.Add{Path: "a", Stats: `{"numRecords":3}`}, deleted: []int64{0, 1, 2},
			counted: -1, useDV: true, hasHome: true, want: FateDeletionVector, live: 3, nDeleted: 3},
		{name: "some rows, vectors on", add: &log.Add{Path: "a", Stats: `{"numRecords":3}`}, deleted: []int64{1}, counted: -1,
			useDV: true, want: FateDeletionVector, live: 3, nDeleted: 1},
		{name: "some rows, copy-on-write", add: &log.Add{Path: "a", Stats: `{"numRecords":3}`}, deleted: []int64{1}, counted: -1,
			want: FateRewrite, live: 3, nDeleted: 1},
		{name: "no stats, count read from the footer", add: &log.Add{Path: "a"}, deleted: []int64{0}, counted: 2,
			useDV: true, want: FateDeletionVector, live: 2, nDeleted: 1},
		{name: "no stats, count unknown", add: &log.Add{Path: "a"}, deleted: []int64{0}, counted: -1,
			useDV: true, want: FateRewrite, live: -1, nDeleted: 1},
		{name: "stats without numRecords cannot take a vector", add: &log.Add{Path: "a", Stats: `{"minValues":{}}`},
			deleted: []int64{0}, counted: 7, useDV: true, want: FateRewrite, live: 7, nDeleted: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewTouchedSet()
			if c.whole {
				s.RemoveWhole(c.add)
			}
			f := s.File(c.add)
			s.Delete(f, c.deleted)
			if c.counted >= 0 {
				s.Counted(f, c.counted)
			}
			assert.Equal(t, c.live, f.LiveRows())
			assert.Equal(t, c.nDeleted, f.RowsDeleted())
			assert.True(t, f.Changed())
			assert.Equal(t, c.want, f.Fate(c.useDV, c.hasHome))
		})
	}
}

func TestTouchedSetUnchangedFilesLeftOut(t *testing.T) {
	s := NewTouchedSet()
	read := s.File(&log.Add{Path: "b", Stats: `{"numRecords":2}`})
	s.Opened(read, nil)
	s.Delete(read, nil) // nothing matched
	whole := &log.Add{Path: "c"}
	s.RemoveWhole(whole)
	del := s.File(&log.Add{Path: "a", Stats: `{"numRecords":2}`})
	s.Delete(del, []int64{1})
	assert.Same(t, del, s.File(del.Add), "File returns the same record for the same add")
	assert.True(t, read.Read)
	assert.False(t, read.Changed())
	assert.Len(t, s.All(), 3)
	ch := s.Changed()
	require.Len(t, ch, 2)
	assert.Equal(t, "a", ch[0].Add.Path)
	assert.Equal(t, "c", ch[1].Add.Path)
	assert.True(t, ch[0].Keeps(0))
	assert.False(t, ch[0].Keeps(1))
}

// TestTouchedSetConcurrentDeletes records deletes from many goroutines (run with
// -race) and checks the per-file sets against a brute-force oracle.
func TestTouchedSetConcurrentDeletes(t *testing.T) {
	const files, rows, workers = 5, 300, 8
	rng := rand.New(rand.NewPCG(1, 2))
	adds := make([]*log.Add, files)
	for i := range adds {
		adds[i] = &log.Add{Path: fmt.Sprintf("f%d", i), Stats: fmt.Sprintf(`{"numRecords":%d}`, rows)}
	}
	type batch struct {
		file int
		pos  []int64
	}
	want := make([]map[int64]bool, files)
	for i := range want {
		want[i] = map[int64]bool{}
	}
	var batches []batch
	for range 400 {
		b := batch{file: rng.IntN(files)}
		for range rng.IntN(6) {
			p := int64(rng.IntN(rows))
			b.pos = append(b.pos, p)
			want[b.file][p] = true
		}
		batches = append(batches, b)
	}
	s := NewTouchedSet()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(batches); i += workers {
				b := batches[i]
				s.Delete(s.File(adds[b.file]), b.pos)
			}
		})
	}
	wg.Wait()
	for i, add := range adds {
		f := s.File(add)
		assert.Equal(t, int64(len(want[i])), f.RowsDeleted(), "file %d", i)
		for p := range int64(rows) {
			assert.Equal(t, !want[i][p], f.Keeps(p), "file %d position %d", i, p)
		}
		wantFate := FateDeletionVector
		if len(want[i]) == rows {
			wantFate = FateRemove
		}
		if len(want[i]) > 0 {
			assert.Equal(t, wantFate, f.Fate(true, false), "file %d", i)
		}
	}
}

func TestTouchedWriteVectors(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemory()
	// a: statistics with numRecords, an old vector holding row 0; b: no statistics.
	oldA := roaring64.BitmapOf(0)
	s := NewTouchedSet()
	a := s.File(&log.Add{Path: "a.parquet", Size: 10, DataChange: true, Stats: `{"numRecords":6}`})
	s.Opened(a, dv.NewDeleted(oldA))
	s.Delete(a, []int64{2, 5})
	b := s.File(&log.Add{Path: "b.parquet", Size: 20, DataChange: true})
	s.Opened(b, nil)
	s.Counted(b, 4)
	s.Delete(b, []int64{3})
	files := s.Changed()
	require.Len(t, files, 2)
	var vectors []*roaring64.Bitmap
	for _, f := range files {
		require.Equal(t, FateDeletionVector, f.Fate(true, false), f.Add.Path)
		v, err := f.Vector()
		require.NoError(t, err)
		vectors = append(vectors, v)
	}
	assert.Equal(t, []uint64{0, 2, 5}, vectors[0].ToArray())
	assert.Equal(t, []uint64{3}, vectors[1].ToArray())

	_, err := WriteVectors(ctx, store, files, vectors[:1], dv.WriteOptions{}, 7)
	require.Error(t, err, "one vector per file")

	w, err := WriteVectors(ctx, store, files, vectors, dv.WriteOptions{}, 7)
	require.NoError(t, err)
	require.Len(t, w.Removes, 2)
	require.Len(t, w.Adds, 2)
	for i, f := range files {
		assert.Equal(t, f.Add.Path, w.Removes[i].Path)
		require.NotNil(t, w.Removes[i].DeletionTimestamp)
		assert.Equal(t, int64(7), *w.Removes[i].DeletionTimestamp)
		ad := w.Adds[i]
		assert.Equal(t, f.Add.Path, ad.Path)
		n, ok := ad.NumRecords()
		require.True(t, ok, "numRecords kept or added: %s", ad.Stats)
		assert.Equal(t, f.NumRecords, n)
		require.NotNil(t, ad.DeletionVector)
		assert.Equal(t, int64(vectors[i].GetCardinality()), ad.DeletionVector.Cardinality)
		got, err := datafile.LoadDeletionVector(ctx, store, ad.DeletionVector)
		require.NoError(t, err)
		assert.Equal(t, vectors[i].ToArray(), got.Bitmap().ToArray(), f.Add.Path)
	}
	var sum int64
	for _, p := range w.Files {
		info, err := store.Stat(ctx, p)
		require.NoError(t, err)
		sum += info.Size
	}
	assert.Equal(t, sum, w.Bytes)
}

func TestTouchedVectorRowOutOfRange(t *testing.T) {
	s := NewTouchedSet()
	f := s.File(&log.Add{Path: "a.parquet", Stats: `{"numRecords":2}`})
	s.Delete(f, []int64{5})
	_, err := f.Vector()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a.parquet")
}
