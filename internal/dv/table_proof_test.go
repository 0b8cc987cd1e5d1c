package dv_test

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
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// The writer's end-to-end proof: deletion vectors written by dv.Write (several per file,
// file and inline), merged with dv.Union, committed with log.ReplaceDeletionVector and
// log.Add.RemoveAction, are honoured by the table's existing read paths (Scan, Count
// from the log, filters with row-group skipping, time travel, checkpoints), as the
// Spark-written golden vectors are.

var proofSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "part", Type: arrow.PrimitiveTypes.Int32},
}, nil)

func proofBatch(k0 int64, n int, part int32) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, proofSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(k0 + int64(i))
		if i%5 == 0 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%07d", k0+int64(i)))
		}
		b.Field(2).(*array.Int32Builder).Append(part)
	}
	return b.NewRecordBatch()
}

// fileKeys reads the k column of a data file in file order: position i holds row i.
func fileKeys(t *testing.T, st storage.Storage, path string) []int64 {
	t.Helper()
	raw, err := st.Get(t.Context(), path)
	require.NoError(t, err)
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	require.NoError(t, err)
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(t.Context())
	require.NoError(t, err)
	defer tbl.Release()
	var ks []int64
	for _, ch := range tbl.Column(tbl.Schema().FieldIndices("k")[0]).Data().Chunks() {
		ks = append(ks, ch.(*array.Int64).Int64Values()...)
	}
	return ks
}

func scanKeys(t *testing.T, tb *table.Table, opts ...table.ScanOption) []int64 {
	t.Helper()
	snap, err := tb.Snapshot(t.Context(), table.Latest())
	require.NoError(t, err)
	return scanKeysOf(t, snap, opts...)
}

// snapshotAt loads version v of tb.
func snapshotAt(t *testing.T, tb *table.Table, v int64) *table.Snapshot {
	t.Helper()
	snap, err := tb.Snapshot(t.Context(), table.AtVersion(v))
	require.NoError(t, err)
	return snap
}

// scanKeysOf is scanKeys on one snapshot (time travel).
func scanKeysOf(t *testing.T, snap *table.Snapshot, opts ...table.ScanOption) []int64 {
	t.Helper()
	sc, err := snap.Scan(t.Context(), append(opts, table.WithColumns("k"))...)
	require.NoError(t, err)
	res, err := sc.ReadAll(t.Context())
	require.NoError(t, err)
	defer res.Release()
	var ks []int64
	for _, ch := range res.Column(0).Data().Chunks() {
		ks = append(ks, ch.(*array.Int64).Int64Values()...)
	}
	slices.Sort(ks)
	return ks
}

type proofTable struct {
	t       *testing.T
	tb      *table.Table
	st      storage.Storage
	keys    map[string][]int64 // data file -> k by row position
	deleted map[int64]bool
}

// deleteRows deletes rows (positions per data file) in one commit the way a DML command
// will: load each file's current vector, union, write all vectors with one dv.Write,
// then replace each file's add (or remove it when no row is left).
func (p *proofTable) deleteRows(rows map[string][]uint64, opts dv.WriteOptions) (int64, *dv.Written) {
	t, ctx := p.t, p.t.Context()
	snap, err := p.tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	ls := snap.Log()
	var lives []*log.Add
	var merged []*roaring64.Bitmap
	var removes []*log.Add
	for _, a := range ls.Files() {
		path, err := a.DecodedPath()
		require.NoError(t, err)
		add, ok := rows[path]
		if !ok {
			continue
		}
		n, ok := a.NumRecords()
		require.True(t, ok)
		var old *dv.Deleted
		if a.DeletionVector != nil {
			old, err = dv.LoadRange(ctx, p.st.Open, "", dv.FromLog(a.DeletionVector))
			require.NoError(t, err)
		}
		m, newly, err := dv.Union(old, roaring64.BitmapOf(add...), n)
		require.NoError(t, err)
		require.Positive(t, newly)
		if old != nil {
			require.True(t, roaring64.AndNot(old.Bitmap(), m).IsEmpty(), "D1: the new vector contains the old")
		}
		for _, r := range add {
			p.deleted[p.keys[path][r]] = true
		}
		if int64(m.GetCardinality()) == n {
			removes = append(removes, a)
			continue
		}
		lives, merged = append(lives, a), append(merged, m)
	}
	require.Len(t, append(append([]*log.Add(nil), lives...), removes...), len(rows))
	w, err := dv.Write(ctx, p.st, merged, opts)
	require.NoError(t, err)
	txn := ls.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	if ls.Protocol().MinReaderVersion < 3 {
		txn.SetProtocol(log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{log.FeatureDeletionVectors},
			WriterFeatures: []string{log.FeatureAppendOnly, log.FeatureInvariants, log.FeatureDeletionVectors}})
	}
	now := p.tb.Log().Now().UnixMilli()
	for i, a := range lives {
		rm, add, err := log.ReplaceDeletionVector(a, w.Descriptors[i], now)
		require.NoError(t, err)
		txn.ReadFiles(a.Path)
		txn.Remove(rm)
		txn.Add(add)
	}
	for _, a := range removes {
		txn.ReadFiles(a.Path)
		txn.Remove(a.RemoveAction(now, true))
	}
	v, err := txn.Commit(ctx, log.CommitInfo{Operation: "DELETE"})
	require.NoError(t, err)
	return v, w
}

func (p *proofTable) live() []int64 {
	var out []int64
	for _, ks := range p.keys {
		for _, k := range ks {
			if !p.deleted[k] {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (p *proofTable) check(label string) {
	t, ctx := p.t, p.t.Context()
	want := p.live()
	require.Equal(t, want, scanKeys(t, p.tb), "%s: full scan", label)
	n, _, err := p.tb.Count(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), n, "%s: Count from the log", label)
	for _, f := range []struct {
		sql  string
		pred func(int64) bool
	}{
		{"k BETWEEN 1500 AND 2600", func(k int64) bool { return k >= 1500 && k <= 2600 }},
		{"part = 1", func(k int64) bool { return k >= 100_000 && k < 200_000 }},
		{"v IS NULL", func(k int64) bool { return (k%100_000)%5 == 0 }},
	} {
		var exp []int64
		for _, k := range want {
			if f.pred(k) {
				exp = append(exp, k)
			}
		}
		require.Equal(t, exp, scanKeys(t, p.tb, table.WithFilter(f.sql)), "%s: %s", label, f.sql)
		n, _, err := p.tb.Count(ctx, table.WithFilter(f.sql))
		require.NoError(t, err)
		require.Equal(t, int64(len(exp)), n, "%s: Count %s", label, f.sql)
	}
}

func TestWrittenVectorsReadBackThroughTheTable(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, proofSchema, table.CreateOptions{PartitionColumns: []string{"part"}})
	require.NoError(t, err)
	b0, b1, b2 := proofBatch(0, 6000, 0), proofBatch(100_000, 300, 1), proofBatch(200_000, 40, 2)
	defer b0.Release()
	defer b1.Release()
	defer b2.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{b0, b1, b2}, table.WriteOptions{})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	p := &proofTable{t: t, tb: tb, st: st, keys: map[string][]int64{}, deleted: map[int64]bool{}}
	byPart := map[int64]string{}
	for _, a := range snap.Log().Files() {
		path, err := a.DecodedPath()
		require.NoError(t, err)
		p.keys[path] = fileKeys(t, st, path)
		byPart[p.keys[path][0]/100_000] = path
	}
	require.Len(t, byPart, 3)
	f0, f1, f2 := byPart[0], byPart[1], byPart[2]
	p.check("before any delete")

	// Round 1: two files, one DV file holding both vectors.
	r := rand.New(rand.NewPCG(5, 6))
	round1 := map[string][]uint64{f0: {0, 5999}, f1: {7}}
	for i := uint64(2000); i < 2400; i++ {
		round1[f0] = append(round1[f0], i)
	}
	for range 300 {
		round1[f0] = append(round1[f0], r.Uint64N(6000))
	}
	v1, w1 := p.deleteRows(round1, dv.WriteOptions{})
	require.Len(t, w1.Files, 1)
	require.Equal(t, int32(1), *w1.Descriptors[0].Offset)
	require.Greater(t, *w1.Descriptors[1].Offset, int32(1), "second vector of the same file")
	p.check("round 1")
	afterRound1 := p.live()

	// Round 2: grow f0's vector (union with the one on storage), first vector of f2
	// stored inline, random prefix for the file.
	round2 := map[string][]uint64{f0: {1, 2, 3, 2000, 4000}, f2: {0, 39}}
	for i := uint64(4100); i < 4300; i += 3 {
		round2[f0] = append(round2[f0], i)
	}
	_, w2 := p.deleteRows(round2, dv.WriteOptions{InlineMaxBytes: 40, RandomPrefixLength: 2})
	kinds := map[string]int{}
	for _, d := range w2.Descriptors {
		kinds[d.StorageType]++
	}
	require.Equal(t, map[string]int{"u": 1, "i": 1}, kinds)
	p.check("round 2")

	// Time travel to round 1, then a checkpoint, then every row of f1 deleted (the
	// file is removed instead of getting a full vector).
	require.Equal(t, afterRound1, scanKeysOf(t, snapshotAt(t, tb, v1)))
	_, err = tb.Checkpoint(ctx)
	require.NoError(t, err)
	p.check("after checkpoint")
	var rest []uint64
	for i := uint64(0); i < 300; i++ {
		if i != 7 {
			rest = append(rest, i)
		}
	}
	p.deleteRows(map[string][]uint64{f1: rest}, dv.WriteOptions{})
	p.check("f1 emptied")
	snap, err = tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, 2, snap.Log().NumFiles())
	d, err := tb.Describe(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, int64(len(p.deleted))-300, d.NumDeletedRows, "f1's rows left with the file")
}
