package datafile

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

// readStream reads data whole through a Stream (batches of batch rows) from a
// poisoned BufferPool, with or without the flat path, and returns copies of the
// batches (out of the pool's buffers) and the Stream's schema.
func readStream(t *testing.T, data []byte, batch int64, flat bool) ([]arrow.RecordBatch, *arrow.Schema) {
	t.Helper()
	prev := flatColumnsEnabled
	flatColumnsEnabled = flat
	defer func() { flatColumnsEnabled = prev }()
	pool := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20, Poison: true})
	s, err := OpenStream(context.Background(), bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: batch, Allocator: pool}, nil)
	require.NoError(t, err)
	defer s.Release()
	var out []arrow.RecordBatch
	for s.Next() {
		rec := s.RecordBatch()
		require.True(t, rec.Schema().Equal(s.Schema()), "batch schema %s, stream schema %s", rec.Schema(), s.Schema())
		cols := make([]arrow.Array, rec.NumCols())
		for i := range cols {
			c, err := array.Concatenate([]arrow.Array{rec.Column(i)}, memory.DefaultAllocator)
			require.NoError(t, err)
			cols[i] = c
		}
		out = append(out, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
		releaseAll(cols)
	}
	require.NoError(t, s.Err())
	return out, s.Schema()
}

// TestStreamFlatColumnsMatchPqarrow: a Stream that decodes flat columns itself
// emits the batches (same rows per batch, values, nulls, types, schema) that it
// emits with every column through pqarrow's record reader, for files of skiplake's
// writer and of pqarrow with other settings (dictionary and plain, data page v1 and
// v2, several row groups), with and without nulls, at several batch sizes.
func TestStreamFlatColumnsMatchPqarrow(t *testing.T) {
	variants := []struct {
		name  string
		write parquetWriteFunc
	}{
		{"skiplake", skiplakeSmallPagesWrite},
		{"pqarrow v1 dictionary snappy", pqarrowWrite(parquet.WithDataPageVersion(parquet.DataPageV1), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDataPageSize(1<<10))},
		{"pqarrow v2 plain zstd no arrow schema", func(t *testing.T, rec arrow.RecordBatch) []byte {
			var buf bytes.Buffer
			props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2500), parquet.WithDataPageVersion(parquet.DataPageV2),
				parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageSize(3<<10))
			w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.DefaultWriterProps())
			require.NoError(t, err)
			require.NoError(t, w.Write(rec))
			require.NoError(t, w.Close())
			return buf.Bytes()
		}},
	}
	nulls, batches := []int{0, 3}, []int64{999, 4096}
	if raceEnabled {
		nulls, batches = []int{3}, []int64{999}
	}
	for _, v := range variants {
		for _, nullEvery := range nulls {
			rec := flatColsBatch(7777, uint64(nullEvery)+11, nullEvery)
			data := v.write(t, rec)
			rec.Release()
			for _, batch := range batches {
				name := fmt.Sprintf("%s/nulls 1 in %d/batch %d", v.name, nullEvery, batch)
				flat, flatSchema := readStream(t, data, batch, true)
				plain, plainSchema := readStream(t, data, batch, false)
				require.True(t, flatSchema.Equal(plainSchema), name)
				require.Equal(t, len(plain), len(flat), name)
				rows := int64(0)
				for i := range plain {
					require.Equal(t, plain[i].NumRows(), flat[i].NumRows(), "%s: batch %d rows", name, i)
					require.True(t, array.RecordEqual(plain[i], flat[i]), "%s: batch %d differs", name, i)
					for c := 0; c < int(plain[i].NumCols()); c++ {
						require.True(t, arrow.TypeEqual(plain[i].Column(c).DataType(), flat[i].Column(c).DataType()), "%s: column %d type", name, c)
						require.Equal(t, plain[i].Column(c).NullN(), flat[i].Column(c).NullN(), "%s: batch %d column %d nulls", name, i, c)
					}
					rows += plain[i].NumRows()
					plain[i].Release()
					flat[i].Release()
				}
				require.Equal(t, int64(7777), rows, name)
			}
		}
	}
}

// TestStreamDecodesFlatColumnsItself: a Stream reads flat columns with the flat
// readers (not pqarrow's record reader), and leaves the others to pqarrow.
func TestStreamDecodesFlatColumnsItself(t *testing.T) {
	rec := flatColsBatch(100, 1, 3)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	s, err := OpenStream(context.Background(), bytes.NewReader(data), int64(len(data)), ReadOptions{}, nil)
	require.NoError(t, err)
	defer s.Release()
	var flat, other []string
	for _, fc := range s.plan.flat {
		flat = append(flat, s.Schema().Field(fc.idx).Name)
	}
	for _, idx := range s.plan.regular {
		other = append(other, s.Schema().Field(idx).Name)
	}
	require.Equal(t, []string{"i32", "i32n", "i64", "i64n", "f32n", "f64", "f64n", "date", "ts", "ts_ntz", "s", "sn", "lowcard", "bin", "allnull"}, flat)
	require.Equal(t, []string{"i8", "b", "st"}, other)
}

// growthAllocator counts the reallocations that grow a buffer.
type growthAllocator struct {
	memory.Allocator
	grown atomic.Int64
}

func (a *growthAllocator) Reallocate(n int, b []byte) []byte {
	if n > len(b) {
		a.grown.Add(1)
	}
	return a.Allocator.Reallocate(n, b)
}

// TestFlatStringsReserveWhatTheyHeld: the strings of a dictionary-encoded column
// (whose footer sizes count indices, not strings) are copied into a data buffer
// reserved from what the column's earlier batches held — in later batches of a row
// group, and, carried by a Stream, in the next row groups — so after the first batch
// no batch grows its buffer.
func TestFlatStringsReserveWhatTheyHeld(t *testing.T) {
	const rows, rgRows, batch = 12000, 4000, 1000
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range rows {
		b.Append(strings.Repeat(string(rune('a'+i%7)), 200) + fmt.Sprint(i%7))
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, rows)
	col.Release()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rgRows), parquet.WithDictionaryDefault(true))
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	require.NoError(t, err)
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	data := buf.Bytes()

	mem := &growthAllocator{Allocator: memory.NewGoAllocator()}
	s, err := OpenStream(context.Background(), bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: batch, Allocator: mem}, nil)
	require.NoError(t, err)
	defer s.Release()
	require.Len(t, s.plan.flat, 1)
	var grownAfterFirst int64
	n, off := 0, 0
	for s.Next() {
		got := s.RecordBatch()
		want := rec.NewSlice(int64(off), int64(off)+got.NumRows())
		require.True(t, array.RecordEqual(want, got), "batch %d", n)
		want.Release()
		off += int(got.NumRows())
		if n == 0 {
			mem.grown.Store(0)
		}
		n++
	}
	require.NoError(t, s.Err())
	require.Equal(t, rows, off)
	require.Equal(t, rows/batch, n)
	grownAfterFirst = mem.grown.Load()
	require.Zero(t, grownAfterFirst, "string data buffers grown after the first batch")

	// Reader.Read carries it from one row group to the next as well.
	mem = &growthAllocator{Allocator: memory.NewGoAllocator()}
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: batch, Allocator: mem})
	require.NoError(t, err)
	defer r.Close()
	n, off = 0, 0
	require.NoError(t, r.Read(context.Background(), sc, nil, func(got arrow.RecordBatch, first int64) error {
		want := rec.NewSlice(first, first+got.NumRows())
		defer want.Release()
		require.True(t, array.RecordEqual(want, got), "batch %d", n)
		off += int(got.NumRows())
		if n == 0 {
			mem.grown.Store(0)
		}
		n++
		return nil
	}))
	require.Equal(t, rows, off)
	require.Zero(t, mem.grown.Load(), "Read: string data buffers grown after the first batch")
}
