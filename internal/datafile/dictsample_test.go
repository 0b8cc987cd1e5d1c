package datafile

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// sampleBatch makes rows [start, start+n) of a table with a key of distinct values
// (id), a low-cardinality string (status) and a nullable int.
func sampleBatch(mem memory.Allocator, schema *arrow.Schema, start, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	statuses := []string{"open", "shipped", "returned", "cancelled"}
	for i := start; i < start+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 7919)
		b.Field(1).(*array.StringBuilder).Append(statuses[i%len(statuses)])
		if i%5 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int32Builder).Append(int32(i % 100))
		}
	}
	return b.NewRecordBatch()
}

// Under DictionaryAuto the dictionary choice is made from the first 8,192 rows
// however they are batched: small first batches (a DML command's updated rows) are
// held until they make the sample, so a column of distinct keys starts plain instead of
// hashing a row group into a dictionary that is thrown away. The rows written are the
// rows read, in order, and nothing held leaks (checked allocator), whether the sample
// fills up, the file closes first, a row group is flushed first, or the write is
// aborted.
func TestWriterSamplesSmallBatchesForDictionary(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	cases := []struct {
		name       string
		batches    []int // batch sizes
		flushAfter int   // FlushRowGroup after this many batches (0: never)
		wantChoice bool  // a choice is made (else too few rows: arrow-go's default)
	}{
		{"small batches", repeat(300, 40), 0, true},
		{"one large batch", []int{20000}, 0, true},
		{"small then large", []int{10, 20, 30000}, 0, true},
		{"closed before the sample fills", repeat(300, 5), 0, true},
		{"flushed before the sample fills", repeat(300, 10), 4, true},
		{"too few rows to tell", []int{100, 200}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			var buf bytes.Buffer
			w, err := NewWriter(&buf, schema, WriterOptions{Allocator: mem, DataPageBytes: 4 << 10})
			require.NoError(t, err)
			var want []string
			start := 0
			for i, n := range tc.batches {
				rec := sampleBatch(mem, schema, start, n)
				want = append(want, rowStrings(rec)...)
				require.NoError(t, w.Write(rec))
				rec.Release()
				start += n
				require.Equal(t, int64(start), w.NumRows())
				require.Greater(t, w.EstimatedSize(), int64(0))
				if tc.flushAfter > 0 && i+1 == tc.flushAfter {
					require.NoError(t, w.FlushRowGroup())
				}
			}
			res, err := w.Close()
			require.NoError(t, err)
			require.Equal(t, int64(start), res.NumRows)
			require.Equal(t, want, readRows(t, buf.Bytes(), schema, nil))
			choice := w.DictionaryChoices()
			if tc.wantChoice {
				require.Equal(t, map[string]bool{"id": false, "status": true, "n": true}, choice)
				for rg := 0; rg < res.Metadata.NumRowGroups(); rg++ {
					id, err := res.Metadata.RowGroup(rg).ColumnChunk(0)
					require.NoError(t, err)
					require.False(t, id.HasDictionaryPage(), "row group %d: id has a dictionary", rg)
					st, err := res.Metadata.RowGroup(rg).ColumnChunk(1)
					require.NoError(t, err)
					require.True(t, st.HasDictionaryPage(), "row group %d: status has no dictionary", rg)
				}
			} else {
				require.Empty(t, choice)
			}
			if tc.flushAfter > 0 {
				require.Equal(t, 2, res.RowGroups)
			}
		})
	}
	t.Run("aborted", func(t *testing.T) {
		mem := checkedMem(t)
		w, err := NewWriter(&bytes.Buffer{}, schema, WriterOptions{Allocator: mem})
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			rec := sampleBatch(mem, schema, i*100, 100)
			require.NoError(t, w.Write(rec))
			rec.Release()
		}
		w.Abort()
	})
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}

// A batch sorted on a column (OPTIMIZE's output, a clustered table's scan) repeats each
// value of a mostly-distinct column a few times in its first rows. The dictionary choice
// samples rows spread over the whole batch, so such a column starts plain (its row
// group would overflow any dictionary), while long sorted runs and a random
// low-cardinality column still start dictionary-encoded.
func TestChooseDictionarySortedBatch(t *testing.T) {
	const rows = 65536
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "triples", Type: arrow.PrimitiveTypes.Int64}, // sorted, each value 3 times
		{Name: "runs", Type: arrow.PrimitiveTypes.Int64},    // sorted, runs of 1,000
		{Name: "status", Type: arrow.BinaryTypes.String},    // 4 values, cycling
	}, nil)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	statuses := []string{"open", "shipped", "returned", "cancelled"}
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i / 3))
		b.Field(1).(*array.Int64Builder).Append(int64(i / 1000))
		b.Field(2).(*array.StringBuilder).Append(statuses[i%4])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	got := chooseDictionary(rec, 16<<20, 1<<20, nil)
	require.Equal(t, map[string]bool{"triples": false, "runs": true, "status": true}, got)
}
