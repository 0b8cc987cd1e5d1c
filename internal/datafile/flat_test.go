package datafile

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"
)

// flatSchema has every kind of column the flat path decodes, required and optional,
// and a few it leaves to pqarrow.
func flatSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "i32n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i64n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f32n", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "f64n", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: tsUTC, Nullable: true},
		{Name: "ts_ntz", Type: tsNTZ},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "sn", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lowcard", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "allnull", Type: arrow.BinaryTypes.String, Nullable: true},
		// not flat-decoded: pqarrow's
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, nil)
}

// flatColsBatch makes n rows of flatSchema; nullEvery 0 means no nulls, else about one
// row in nullEvery is null in each nullable column (in runs, sometimes).
func flatColsBatch(n int, seed uint64, nullEvery int) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := array.NewRecordBuilder(memory.DefaultAllocator, flatSchema())
	defer b.Release()
	null := func() bool { return nullEvery > 0 && rng.IntN(nullEvery) == 0 }
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(rng.Uint32()))
		if null() {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(i))
		}
		b.Field(2).(*array.Int64Builder).Append(int64(rng.Uint64()))
		if null() {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int64Builder).Append(int64(i) * -7)
		}
		if null() {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.Float32Builder).Append(rng.Float32())
		}
		b.Field(5).(*array.Float64Builder).Append(float64(rng.IntN(1000)) / 8)
		if null() {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.Float64Builder).Append(rng.NormFloat64())
		}
		if null() {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.Date32Builder).Append(arrow.Date32(rng.IntN(2*maxDays) - maxDays))
		}
		if null() {
			b.Field(8).AppendNull()
		} else {
			b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64N(maxMicros)))
		}
		b.Field(9).(*array.TimestampBuilder).Append(arrow.Timestamp(-rng.Int64N(maxMicros)))
		b.Field(10).(*array.StringBuilder).Append(strings.Repeat("x", rng.IntN(40)) + fmt.Sprint(i))
		if null() {
			b.Field(11).AppendNull()
		} else {
			b.Field(11).(*array.StringBuilder).Append(fmt.Sprintf("é%d", rng.IntN(1<<30)))
		}
		if null() {
			b.Field(12).AppendNull()
		} else {
			b.Field(12).(*array.StringBuilder).Append([]string{"", "a", "bb", "ccc"}[rng.IntN(4)])
		}
		if null() {
			b.Field(13).AppendNull()
		} else {
			v := make([]byte, rng.IntN(5))
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			b.Field(13).(*array.BinaryBuilder).Append(v)
		}
		b.Field(14).AppendNull()
		if null() {
			b.Field(15).AppendNull()
		} else {
			b.Field(15).(*array.Int8Builder).Append(int8(i))
		}
		if null() {
			b.Field(16).AppendNull()
		} else {
			b.Field(16).(*array.BooleanBuilder).Append(i%3 == 0)
		}
		sb := b.Field(17).(*array.StructBuilder)
		if null() {
			sb.AppendNull()
		} else {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
		}
	}
	return b.NewRecordBatch()
}

// readBoth reads data with want through Read with and without the flat path, with a
// poisoned BufferPool (so a value the flat path fails to write shows as garbage), and
// returns both batch lists (retained) and first rows.
func readBoth(t *testing.T, data []byte, want *arrow.Schema, batch int64) (flat, plain []arrow.RecordBatch) {
	t.Helper()
	read := func(enabled bool) []arrow.RecordBatch {
		prev := flatColumnsEnabled
		flatColumnsEnabled = enabled
		defer func() { flatColumnsEnabled = prev }()
		pool := NewBufferPool(PoolOptions{MaxIdleBytes: 64 << 20, Poison: true})
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: batch, Allocator: pool})
		require.NoError(t, err)
		defer r.Close()
		var out []arrow.RecordBatch
		var next int64
		require.NoError(t, r.Read(context.Background(), want, nil, func(rec arrow.RecordBatch, first int64) error {
			require.Equal(t, next, first)
			next += rec.NumRows()
			// Copy out of the pool's buffers, then let the pool recycle (and poison) them.
			cols := make([]arrow.Array, rec.NumCols())
			for i := range cols {
				c, err := array.Concatenate([]arrow.Array{rec.Column(i)}, memory.DefaultAllocator)
				require.NoError(t, err)
				cols[i] = c
			}
			out = append(out, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
			releaseAll(cols)
			return nil
		}))
		return out
	}
	return read(true), read(false)
}

// TestFlatColumnsMatchPqarrow: the flat path builds the same batches as pqarrow's
// record reader, value by value and null by null, for files of skiplake's writer and
// of pqarrow with other settings (data page v1 and v2, dictionary on and off, tiny
// pages, other codecs), with and without nulls, at several batch sizes and projections.
func TestFlatColumnsMatchPqarrow(t *testing.T) {
	sc := flatSchema()
	type variant struct {
		name  string
		write parquetWriteFunc
	}
	variants := []variant{
		{"skiplake", skiplakeSmallPagesWrite},
		{"pqarrow v1 dictionary snappy", pqarrowWrite(parquet.WithDataPageVersion(parquet.DataPageV1), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDataPageSize(1<<10))},
		{"pqarrow v2 plain uncompressed", pqarrowWrite(parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(3<<10))},
		{"pqarrow v2 dictionary zstd", pqarrowWrite(parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryPageSizeLimit(512))},
	}
	projections := []*arrow.Schema{sc, arrow.NewSchema([]arrow.Field{sc.Field(12), sc.Field(6), sc.Field(17), sc.Field(1)}, nil),
		arrow.NewSchema([]arrow.Field{sc.Field(5)}, nil)}
	nulls, batches := []int{0, 3, 50}, []int64{1, 999, 4096}
	if raceEnabled {
		// Under -race (the decoders are single-goroutine; concurrent reads have a
		// test of their own): skiplake's files and pqarrow's dictionary pages, with
		// nulls, one batch size.
		variants, nulls, batches = []variant{variants[0], variants[3]}, []int{3}, []int64{999}
	}
	for _, v := range variants {
		for _, nullEvery := range nulls {
			rec := flatColsBatch(7777, uint64(nullEvery)+1, nullEvery)
			data := v.write(t, rec)
			rec.Release()
			for _, batch := range batches {
				for pi, want := range projections {
					name := fmt.Sprintf("%s/nulls 1 in %d/batch %d/projection %d", v.name, nullEvery, batch, pi)
					if batch == 1 && (pi != 1 || nullEvery != 3) {
						continue // one row per batch: one case is enough (and slow)
					}
					flat, plain := readBoth(t, data, want, batch)
					require.Equal(t, len(plain), len(flat), name)
					for i := range plain {
						require.True(t, array.RecordEqual(plain[i], flat[i]), "%s: batch %d differs", name, i)
						for c := 0; c < int(plain[i].NumCols()); c++ {
							require.Equal(t, plain[i].Column(c).NullN(), flat[i].Column(c).NullN(), "%s: batch %d column %d nulls", name, i, c)
						}
						plain[i].Release()
						flat[i].Release()
					}
				}
			}
		}
	}
}

// TestFlatColumnsChosen: the columns the flat path takes, and those it leaves to
// pqarrow (types whose Parquet values are not the Arrow values, nested columns).
func TestFlatColumnsChosen(t *testing.T) {
	rec := flatColsBatch(10, 1, 3)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	p := r.withFlat(r.plan(flatSchema()))
	var flat, other []string
	for _, fc := range p.flat {
		flat = append(flat, r.schema.Field(fc.idx).Name)
	}
	for _, idx := range p.regular {
		other = append(other, r.schema.Field(idx).Name)
	}
	require.Equal(t, []string{"i32", "i32n", "i64", "i64n", "f32n", "f64", "f64n", "date", "ts", "ts_ntz", "s", "sn", "lowcard", "bin", "allnull"}, flat)
	require.Equal(t, []string{"i8", "b", "st"}, other)
	require.Equal(t, []int{15, 16, 17}, p.leaves)
}

// limitAllocator refuses (panics on) allocations above limit bytes.
type limitAllocator struct {
	memory.Allocator
	limit int
}

func (a limitAllocator) Allocate(n int) []byte {
	if n > a.limit {
		panic(fmt.Sprintf("allocation of %d bytes", n))
	}
	return a.Allocator.Allocate(n)
}

func (a limitAllocator) Reallocate(n int, b []byte) []byte {
	if n > a.limit {
		panic(fmt.Sprintf("allocation of %d bytes", n))
	}
	return a.Allocator.Reallocate(n, b)
}

// TestFlatStringReservationBounded: the first reservation of a batch's string data
// comes from the footer's uncompressed size, which nothing checks; a footer claiming
// a huge size (damaged) reserves at most the bound, and the batch still reads right.
func TestFlatStringReservationBounded(t *testing.T) {
	rec := flatColsBatch(3000, 7, 5)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	pr, _, err := r.streamReaders(r.buffer)
	require.NoError(t, err)
	defer pr.Close()
	p := r.withFlat(r.plan(flatSchema()))
	var fc flatColumn
	for _, c := range p.flat {
		if r.schema.Field(c.idx).Name == "sn" {
			fc = c
		}
	}
	require.Equal(t, "sn", r.schema.Field(fc.idx).Name)
	f, err := newFlatReader(pr, 0, fc, "sn", 1<<20)
	require.NoError(t, err)
	defer f.close()
	f.perRow = 1 << 40 // what a damaged footer may claim
	got, err := f.read(limitAllocator{memory.DefaultAllocator, 8 << 20}, 3000)
	require.NoError(t, err)
	defer got.Release()
	require.True(t, array.Equal(rec.Column(11), got), "column sn read back differently")
}

// TestFlatStringsPastChunk: batches and pages of many more string values than
// binaryChunkRows (one value slice reused for every call of the column reader) read
// exactly as pqarrow reads them, with and without nulls, dictionary and plain.
func TestFlatStringsPastChunk(t *testing.T) {
	rows := 3*binaryChunkRows + 1234
	for _, nullEvery := range []int{0, 3} {
		for _, dict := range []Dictionary{DictionaryAll, DictionaryNone} {
			rec := flatColsBatch(rows, uint64(nullEvery)+7, nullEvery)
			data, _ := writeFile(t, WriterOptions{TargetRowGroupBytes: 1 << 30, DataPageBytes: 4 << 20, Dictionary: dict}, rec)
			rec.Release()
			pr, err := file.NewParquetReader(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, 1, pr.NumRowGroups())
			require.NoError(t, pr.Close())
			for _, batch := range []int64{int64(rows), 2*binaryChunkRows + 1} {
				flat, plain := readBoth(t, data, flatSchema(), batch)
				require.Equal(t, len(plain), len(flat))
				for i := range plain {
					require.True(t, array.RecordEqual(plain[i], flat[i]), "nulls 1 in %d, dictionary %d, batch %d: batch %d differs", nullEvery, dict, batch, i)
					plain[i].Release()
					flat[i].Release()
				}
			}
		}
	}
}
