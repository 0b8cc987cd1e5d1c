package dml

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// readRows is the row count of the file the ReadLive tests read: row i has id i, so
// a row's id is its file position.
const readRows = 200

// writeReadFile stores a Parquet file of ids 0..readRows-1 in row groups of 30 rows
// and pages of 4, with statistics and page indexes, and returns its task.
func writeReadFile(t *testing.T, store storage.Storage, schema *arrow.Schema) *scanexec.Task {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range readRows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", i%3))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(30), parquet.WithBatchSize(4),
		parquet.WithDataPageSize(1), parquet.WithDictionaryDefault(false), parquet.WithStats(true), parquet.WithPageIndexEnabled(true))
	w, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	const path = "part-0.parquet"
	require.NoError(t, store.Put(context.Background(), path, buf.Bytes()))
	return &scanexec.Task{Idx: -1, Add: &log.Add{Path: path, Size: int64(buf.Len())}, Path: path, Recheck: true}
}

// ReadLive hands every live row of a file the filter might select to fn once, in
// file order, with its position, and Matching keeps exactly the rows the filter
// selects: checked against a brute-force oracle over filters, deletion vectors and
// both needValues settings. Row groups proved to match entirely come without values
// when values are not needed.
func TestReadLiveOracle(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	v := sinkView(t, store, nil)
	cols := scanexec.TableColumns(v)
	task := writeReadFile(t, store, v.Logical())
	rng := rand.New(rand.NewPCG(7, 24))

	filters := []struct {
		text  string
		match func(id int64) bool
	}{
		{"", func(int64) bool { return true }},
		{"id >= 45 AND id < 130", func(id int64) bool { return id >= 45 && id < 130 }},
		{"id = 77", func(id int64) bool { return id == 77 }},
		{"id > 1000", func(int64) bool { return false }},
		{"p = 'p1'", func(id int64) bool { return id%3 == 1 }},
		{"id < 17 OR id >= 190", func(id int64) bool { return id < 17 || id >= 190 }},
	}
	deletions := map[string]*dv.Deleted{"none": nil, "empty": dv.NewDeleted(roaring64.New())}
	for _, every := range []int{2, 7} {
		bm := roaring64.New()
		for i := range readRows {
			if rng.IntN(every) == 0 {
				bm.Add(uint64(i))
			}
		}
		deletions[fmt.Sprintf("random1in%d", every)] = dv.NewDeleted(bm)
	}
	bm := roaring64.New()
	bm.AddRange(30, 60) // a whole row group
	deletions["rowgroup"] = dv.NewDeleted(bm)

	for _, f := range filters {
		var pred expr.Expr
		var bound *expr.Bound
		if f.text != "" {
			p, err := expr.Parse(f.text)
			require.NoError(t, err)
			bound, err = expr.Bind(p, scanexec.ColumnSchema(cols))
			require.NoError(t, err)
			pred = p
		}
		proj, err := scanexec.Project(cols, nil, false, pred, bound)
		require.NoError(t, err)
		for name, del := range deletions {
			for _, needValues := range []bool{false, true} {
				t.Run(fmt.Sprintf("%q/%s/values=%v", f.text, name, needValues), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
					defer mem.AssertSize(t, 0)
					tg := &Target{Scan: &scanexec.Scan{Store: store, Filter: bound}, Proj: proj, BatchSize: 8, Mem: mem}
					var seen, matched []int64
					n, err := tg.ReadLive(ctx, task, del, needValues, nil, func(b LiveBatch) error {
						if b.Rec == nil {
							require.False(t, needValues, "a batch without values when values were asked for")
							require.False(t, b.Recheck, "a batch without values must not need the recheck")
						} else {
							require.Equal(t, int64(len(b.Pos)), b.Rec.NumRows())
							ids := b.Rec.Column(0).(*array.Int64)
							for i, p := range b.Pos {
								require.Equal(t, p, ids.Value(i), "row %d of the batch is not at its position", i)
							}
						}
						for _, p := range b.Pos {
							require.Equal(t, int(p/30), b.RG, "position %d reported in row group %d", p, b.RG)
						}
						seen = append(seen, b.Pos...)
						pos, _, err := tg.Matching(b)
						if err != nil {
							return err
						}
						matched = append(matched, pos...)
						return nil
					})
					require.NoError(t, err)
					require.Equal(t, int64(readRows), n)
					require.True(t, slices.IsSorted(seen), "positions out of file order")
					require.Equal(t, len(seen), len(slices.Compact(slices.Clone(seen))), "a position reported twice")
					var want []int64
					for p := int64(0); p < readRows; p++ {
						if !del.Contains(uint64(p)) && f.match(p) {
							want = append(want, p)
						}
					}
					for _, p := range seen {
						require.False(t, del.Contains(uint64(p)), "deleted position %d reported", p)
					}
					require.Equal(t, want, matched)
				})
			}
		}
	}
}

// livePositions and positionsIn agree with a brute-force walk over the positions
// for random deletion vectors.
func TestLivePositionsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 300 {
		bm := roaring64.New()
		density := rng.IntN(4)
		for p := range 64 {
			if density > 0 && rng.IntN(density+1) == 0 {
				bm.Add(uint64(p))
			}
		}
		var del *dv.Deleted
		if rng.IntN(5) > 0 {
			del = dv.NewDeleted(bm)
		}
		var live []int64
		for p := int64(0); p < 64; p++ {
			if !del.Contains(uint64(p)) {
				live = append(live, p)
			}
		}
		start := rng.Int64N(64)
		end := start + rng.Int64N(64-start+1)
		var wantIn []int64
		for _, p := range live {
			if p >= start && p < end {
				wantIn = append(wantIn, p)
			}
		}
		require.Equal(t, len(wantIn), len(positionsIn(start, end, del)))
		if len(wantIn) > 0 {
			require.Equal(t, wantIn, positionsIn(start, end, del))
		}
		// A batch read from firstRow holds the next n live rows from there.
		i, _ := slices.BinarySearch(live, start)
		n := rng.IntN(len(live) - i + 1)
		got := livePositions(start, n, del)
		require.Len(t, got, n)
		if n > 0 {
			require.Equal(t, live[i:i+n], got)
		}
	}
}
