package datafile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// flatBatch is allTypesBatch without its nested columns (the column-parallel encoder
// handles flat schemas only).
func flatBatch(t testing.TB, mem memory.Allocator, n, seed int) arrow.RecordBatch {
	full := allTypesBatch(t, mem, n, seed)
	defer full.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range full.Schema().Fields() {
		switch f.Type.ID() {
		case arrow.STRUCT, arrow.LIST, arrow.MAP:
			continue
		}
		fields = append(fields, f)
		cols = append(cols, full.Column(i))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, full.NumRows())
}

// TestSerializeArrowSchemaMatchesPqarrow: the ARROW:schema value the column-parallel
// encoder stores is, byte for byte, the one pqarrow's FileWriter stores (it calls
// flight.SerializeSchema; this package builds it with arrow/ipc so that it does not
// import arrow/flight): for every type the writers handle, with schema and field
// metadata (field ids, as column mapping writes them).
func TestSerializeArrowSchemaMatchesPqarrow(t *testing.T) {
	withMeta := func(sc *arrow.Schema) *arrow.Schema {
		fields := sc.Fields()
		for i := range fields {
			fields[i].Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{fmt.Sprint(i + 1)})
		}
		return arrow.NewSchema(fields, ptr(arrow.NewMetadata([]string{"k", "delta"}, []string{"v", "{}"})))
	}
	for name, sc := range map[string]*arrow.Schema{
		"all types":     allTypesSchema(),
		"with metadata": withMeta(allTypesSchema()),
		"empty":         arrow.NewSchema(nil, nil),
	} {
		got, err := serializeArrowSchema(sc, memory.DefaultAllocator)
		require.NoError(t, err, name)
		require.Equal(t, flight.SerializeSchema(sc, memory.DefaultAllocator), got, name)
	}
}

func ptr[T any](v T) *T { return &v }

// The column-parallel encoder must write exactly the bytes pqarrow's writer writes
// (same pages, dictionaries, statistics, page index, Bloom filters, footer), whatever
// its parallelism and however the input is batched.
func TestParallelEncoderWritesWhatPqarrowWrites(t *testing.T) {
	mem := checkedMem(t)
	var recs []arrow.RecordBatch
	for i := range 6 {
		recs = append(recs, flatBatch(t, mem, 3000+i*517, i*7919))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, dict := range []Dictionary{DictionaryAuto, DictionaryAll, DictionaryNone} {
		for _, par := range []int{1, 2, 8} {
			for _, bloom := range []bool{false, true} {
				if raceEnabled && !(dict == DictionaryAuto && par == 2 && !bloom) && !(dict != DictionaryAll && par == 8 && bloom == (dict == DictionaryAuto)) {
					// Under -race: the column goroutines with and without a
					// dictionary sample, with and without Bloom filters.
					continue
				}
				t.Run(fmt.Sprintf("dict=%d/par=%d/bloom=%v", dict, par, bloom), func(t *testing.T) {
					opts := WriterOptions{Allocator: mem, TargetRowGroupBytes: 1 << 30, DataPageBytes: 2 << 10, Dictionary: dict,
						Parallelism: par, DictionaryColumns: map[string]bool{"long": false}}
					if bloom {
						// arrow-go frees Bloom filter buffers in GC cleanups, which a
						// checked allocator would report as leaks.
						opts.Allocator = memory.DefaultAllocator
						opts.BloomColumns = map[string]int64{"int": 1000, "string": 0}
					}
					got, res := writeCut(t, opts, recs)
					require.Equal(t, len(recs)/2, res.RowGroups)
					opts.serial = true
					want, wres := writeCut(t, opts, recs)
					sameFile(t, want, wres, got, res)
				})
			}
		}
	}
}

// sameFile asserts that two files are the same: every byte before the footer (pages,
// Bloom filters, page index) and, in the footer, everything but the order of the
// encoding statistics (which arrow-go builds from a map).
func sameFile(t *testing.T, want []byte, wres *WriteResult, got []byte, res *WriteResult) {
	t.Helper()
	require.Equal(t, len(want), len(got), "file sizes")
	footer := len(want) - 8 - int(binary.LittleEndian.Uint32(want[len(want)-8:]))
	require.True(t, bytes.Equal(want[:footer], got[:footer]), "data, Bloom filters and page index differ")
	a, b := wres.Metadata, res.Metadata
	require.Equal(t, a.NumRows, b.NumRows)
	require.Equal(t, a.KeyValueMetadata().Keys(), b.KeyValueMetadata().Keys())
	require.Equal(t, a.KeyValueMetadata().Values(), b.KeyValueMetadata().Values())
	require.True(t, a.Schema.Equals(b.Schema), "schemas")
	require.Equal(t, a.NumRowGroups(), b.NumRowGroups())
	for g := 0; g < a.NumRowGroups(); g++ {
		ra, rb := a.RowGroup(g), b.RowGroup(g)
		require.Equal(t, ra.NumRows(), rb.NumRows())
		require.Equal(t, ra.TotalByteSize(), rb.TotalByteSize())
		for c := 0; c < ra.NumColumns(); c++ {
			ca, err := ra.ColumnChunk(c)
			require.NoError(t, err)
			cb, err := rb.ColumnChunk(c)
			require.NoError(t, err)
			require.Equal(t, ca.DataPageOffset(), cb.DataPageOffset())
			require.Equal(t, ca.TotalCompressedSize(), cb.TotalCompressedSize())
			require.Equal(t, ca.TotalUncompressedSize(), cb.TotalUncompressedSize())
			require.Equal(t, ca.NumValues(), cb.NumValues())
			require.ElementsMatch(t, ca.Encodings(), cb.Encodings())
			require.ElementsMatch(t, ca.EncodingStats(), cb.EncodingStats())
			sa, err := ca.Statistics()
			require.NoError(t, err)
			sb, err := cb.Statistics()
			require.NoError(t, err)
			if sa == nil {
				require.Nil(t, sb)
				continue
			}
			require.Equal(t, sa.NullCount(), sb.NullCount())
			require.Equal(t, sa.EncodeMin(), sb.EncodeMin())
			require.Equal(t, sa.EncodeMax(), sb.EncodeMax())
		}
	}
}

// writeCut writes recs, ending a row group after every second batch but the last
// (the same cut points whatever the encoder estimates).
func writeCut(t *testing.T, opts WriterOptions, recs []arrow.RecordBatch) ([]byte, *WriteResult) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, recs[0].Schema(), opts)
	require.NoError(t, err)
	for i, r := range recs {
		require.NoError(t, w.Write(r))
		if i%2 == 1 && i < len(recs)-1 {
			require.NoError(t, w.endRowGroup())
		}
	}
	res, err := w.Close()
	require.NoError(t, err)
	return buf.Bytes(), res
}

// TestWriterPoolRecycledBuffersWriteSameBytes: the Parquet writers' own buffers come
// from writerPool when the caller's allocator is Go's default, and a recycled buffer
// is not zeroed. With the pool poisoned (every recycled buffer filled with 0xA5), files
// of every column type (flat and nested, dictionary and plain, row groups of several
// pages, Bloom filters) are byte for byte those written with a Go allocator that is
// not the default (which the pool leaves alone). The pool zeroes what it recycles:
// arrow-go's Bloom filters set bits in a buffer they assume zero (without the zeroing,
// the Bloom filter bytes differ). The pool must actually have recycled buffers.
func TestWriterPoolRecycledBuffersWriteSameBytes(t *testing.T) {
	writerPool.mu.Lock()
	writerPool.poison = true
	writerPool.mu.Unlock()
	defer func() {
		writerPool.mu.Lock()
		writerPool.poison = false
		writerPool.mu.Unlock()
	}()
	var recs []arrow.RecordBatch
	for i := range 4 {
		recs = append(recs, allTypesBatch(t, memory.DefaultAllocator, 20000+i*997, i*104729))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, dict := range []Dictionary{DictionaryAuto, DictionaryAll, DictionaryNone} {
		opts := WriterOptions{TargetRowGroupBytes: 1 << 30, Dictionary: dict, Parallelism: 2,
			BloomColumns: map[string]int64{"int": 0, "string": 0}}
		opts.Allocator = memory.NewGoAllocator()
		want, wres := writeCut(t, opts, recs)
		opts.Allocator = memory.DefaultAllocator
		before := writerPool.Stats().Reused
		for range 2 { // the second write draws on what the first freed
			got, res := writeCut(t, opts, recs)
			sameFile(t, want, wres, got, res)
		}
		require.Greater(t, writerPool.Stats().Reused, before, "dict=%d: no buffer was recycled", dict)
	}
}
