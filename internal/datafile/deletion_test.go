package datafile

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// inlineDV returns a loaded deletion vector of rows (through the log descriptor, as a
// scan gets it).
func inlineDV(t *testing.T, rows []uint64) *dv.Deleted {
	t.Helper()
	bm := roaring64.New()
	bm.AddMany(rows)
	d, err := dv.EncodeInline(bm)
	require.NoError(t, err)
	desc := &log.DeletionVectorDescriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
	del, err := LoadDeletionVector(context.Background(), storage.NewMemory(), desc)
	require.NoError(t, err)
	return del
}

// multiRowGroupFile writes 6000 rows of every type in several row groups of small
// pages and returns the file and its schema.
func multiRowGroupFile(t *testing.T, mem memory.Allocator) ([]byte, *arrow.Schema) {
	t.Helper()
	src := allTypesBatch(t, mem, 6000, 0)
	defer src.Release()
	data, res := writeFile(t, WriterOptions{TargetRowGroupBytes: 96 << 10, DataPageBytes: 512}, src)
	require.Greater(t, res.RowGroups, 2)
	return data, src.Schema()
}

// TestReadAppliesTheDeletionVector: with ReadOptions.Deleted, Read and ReadRanges emit
// exactly the rows of a plain read whose file position the vector does not hold, and
// never an empty batch (invariant D6).
func TestReadAppliesTheDeletionVector(t *testing.T) {
	mem := checkedMem(t)
	data, want := multiRowGroupFile(t, mem)
	plain, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 300, Allocator: mem})
	require.NoError(t, err)
	defer plain.Close()

	rnd := rand.New(rand.NewPCG(5, 6))
	var deleted []uint64
	for i := uint64(0); i < 6000; i++ {
		// runs of deletions, single rows, and one whole batch (rows 300..599)
		if (i >= 300 && i < 600) || rnd.IntN(7) == 0 {
			deleted = append(deleted, i)
		}
	}
	del := inlineDV(t, deleted)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 300, Allocator: mem, Deleted: del})
	require.NoError(t, err)
	defer r.Close()

	var all []string
	var positions []int64
	require.NoError(t, plain.Read(context.Background(), want, nil, func(rec arrow.RecordBatch, first int64) error {
		for i, s := range rowStrings(rec) {
			all = append(all, s)
			positions = append(positions, first+int64(i))
		}
		return nil
	}))
	var live []string
	for i, s := range all {
		if !del.Contains(uint64(positions[i])) {
			live = append(live, s)
		}
	}
	var got []string
	require.NoError(t, r.Read(context.Background(), want, nil, func(rec arrow.RecordBatch, first int64) error {
		if rec.NumRows() == 0 {
			return errors.New("empty batch emitted")
		}
		got = append(got, rowStrings(rec)...)
		return nil
	}))
	require.Equal(t, live, got, "Read with a deletion vector")

	// ReadRanges: the same rows as the plain read of the range minus the deleted ones.
	base := r.RowGroupFirstRow(1)
	ranges := []RowRange{{10, 200}, {250, 260}}
	var wantRanges []string
	for _, rr := range ranges {
		for p := base + rr.Start; p < base+rr.End; p++ {
			if !del.Contains(uint64(p)) {
				wantRanges = append(wantRanges, all[p])
			}
		}
	}
	got = nil
	require.NoError(t, r.ReadRanges(context.Background(), want, 1, ranges, func(rec arrow.RecordBatch, _ int64) error {
		got = append(got, rowStrings(rec)...)
		return nil
	}))
	require.Equal(t, wantRanges, got, "ReadRanges with a deletion vector")
}

// TestConcurrentReadsOfOneReader: Read and ReadRanges of different row groups from
// several goroutines at once return what sequential reads return (run with -race).
func TestConcurrentReadsOfOneReader(t *testing.T) {
	mem := checkedMem(t)
	data, want := multiRowGroupFile(t, mem)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 256, Allocator: mem})
	require.NoError(t, err)
	defer r.Close()
	n := r.NumRowGroups()
	seq := make([][]string, n)
	for rg := range n {
		seq[rg] = fullRows(t, r, want, rg)
	}
	got := make([][]string, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rg := i % n
			emit := func(rec arrow.RecordBatch, _ int64) error {
				got[i] = append(got[i], rowStrings(rec)...)
				return nil
			}
			if i < n {
				errs[i] = r.Read(context.Background(), want, []int{rg}, emit)
			} else {
				rows := r.Metadata().RowGroup(rg).NumRows()
				errs[i] = r.ReadRanges(context.Background(), want, rg, []RowRange{{0, rows}}, emit)
			}
		}()
	}
	wg.Wait()
	for i := range 2 * n {
		require.NoError(t, errs[i])
		require.Equal(t, seq[i%n], got[i], "reader %d (row group %d)", i, i%n)
	}
}
