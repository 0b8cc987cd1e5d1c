package datafile

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/value"
)

// bloomRows is a batch of n rows: id = start..start+n-1 (distinct), cat one of
// ncat strings, payload pseudo-random text (so row groups are not all Bloom filter).
func bloomRows(start, n, ncat int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cat", Type: arrow.BinaryTypes.String},
		{Name: "payload", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	state := uint64(start) + 7
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(start + i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("cat-%d", (start+i)%ncat))
		state = state*6364136223846793005 + 1442695040888963407
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%016x%016x", state, state*31))
	}
	return b.NewRecordBatch()
}

// bloomChunk is one column chunk's Parquet Bloom filter: its size and rows.
type bloomChunk struct {
	rg, col int
	rows    int64
	bytes   int64
}

// bloomChunks lists the filters of columns cols (leaf indexes) in every row group;
// a chunk without a filter fails the test.
func bloomChunks(t *testing.T, rdr *file.Reader, cols ...int) []bloomChunk {
	t.Helper()
	var out []bloomChunk
	for rg := 0; rg < rdr.NumRowGroups(); rg++ {
		bfr, err := rdr.GetBloomFilterReader().RowGroup(rg)
		require.NoError(t, err)
		for _, c := range cols {
			bf, err := bfr.GetColumnBloomFilter(c)
			require.NoError(t, err)
			require.NotNil(t, bf, "row group %d column %d has no Bloom filter", rg, c)
			out = append(out, bloomChunk{rg: rg, col: c, rows: rdr.MetaData().RowGroup(rg).NumRows(), bytes: bf.Size()})
		}
	}
	return out
}

// falsePositives probes the id filter of row group rg with probes ids that are
// not in the file (ids from absentFrom on) and returns the share that hit. It also
// checks that every id of the row group (first..first+rows-1) is found.
func falsePositives(t *testing.T, rdr *file.Reader, rg int, first, rows, absentFrom, probes int64) float64 {
	t.Helper()
	for id := first; id < first+rows; id++ {
		ok, err := bloom.RowGroupMightContain(rdr, rg, 0, value.Int64(id), parquet.Types.Int64)
		require.NoError(t, err)
		require.True(t, ok, "row group %d: false negative for id %d", rg, id)
	}
	hits := 0
	for id := absentFrom; id < absentFrom+probes; id++ {
		ok, err := bloom.RowGroupMightContain(rdr, rg, 0, value.Int64(id), parquet.Types.Int64)
		require.NoError(t, err)
		if ok {
			hits++
		}
	}
	return float64(hits) / float64(probes)
}

func openBloomTest(t *testing.T, data []byte) *file.Reader {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdr.Close() })
	return rdr
}

// TestBloomSizedToSmallFile: a file written whole (fewer rows than the dictionary
// sample) gets filters sized for its exact distinct values at the fpp — a 34-row
// file's id filter is 64 bytes, not the fixed 128 KiB (1<<16 values) of before —
// and the fpp still holds.
func TestBloomSizedToSmallFile(t *testing.T) {
	for _, tc := range []struct {
		rows int
		fpp  float64
	}{{34, 0.01}, {2000, 0.01}, {2000, 0.001}, {8000, 0.05}} {
		t.Run(fmt.Sprintf("%d rows fpp %g", tc.rows, tc.fpp), func(t *testing.T) {
			rec := bloomRows(0, tc.rows, 5)
			defer rec.Release()
			data, res := writeFile(t, WriterOptions{BloomColumns: map[string]int64{"id": 0, "cat": 0}, BloomFPP: tc.fpp}, rec)
			require.Equal(t, 1, res.RowGroups)
			rdr := openBloomTest(t, data)
			chunks := bloomChunks(t, rdr, 0, 1)
			// id: exactly the filter for tc.rows values; cat: for its 5 values.
			require.Equal(t, bloomFilterBytes(int64(tc.rows), tc.fpp)-16, chunks[0].bytes, "id filter")
			require.Equal(t, bloomFilterBytes(5, tc.fpp)-16, chunks[1].bytes, "cat filter")
			require.Less(t, chunks[0].bytes, int64(128<<10)/4)
			probes := int64(max(20_000, int(30/tc.fpp)))
			rate := falsePositives(t, rdr, 0, 0, int64(tc.rows), 1<<40, probes)
			t.Logf("id filter %d B for %d values: false-positive rate %.4f (fpp %g, %d probes)", chunks[0].bytes, tc.rows, rate, tc.fpp, probes)
			require.LessOrEqual(t, rate, 1.5*tc.fpp, "false-positive rate above the fpp")
			// The size estimate used to roll files counts the same filters.
			require.Equal(t, bloomFilterBytes(int64(tc.rows), tc.fpp)+bloomFilterBytes(5, tc.fpp), (&Writer{opts: WriterOptions{BloomColumns: map[string]int64{"id": 0, "cat": 0}, BloomFPP: tc.fpp}, exactNDV: map[string]int64{"id": int64(tc.rows), "cat": 5}}).bloomBytes(int64(tc.rows)))
		})
	}
}

// TestBloomSizedPerRowGroup: a file written in many batches gets, in every row
// group, the smallest adaptive filter that holds that row group's distinct values
// at the fpp: a low-cardinality column's filter stays at the minimum candidate,
// the key column's grows with its row group, and the measured false-positive rate
// of every row group stays within the fpp.
func TestBloomSizedPerRowGroup(t *testing.T) {
	const fpp = 0.01
	var recs []arrow.RecordBatch
	n := 0
	for _, size := range []int{5000, 5000, 5000, 5000, 30_000, 30_000} {
		recs = append(recs, bloomRows(n, size, 3))
		n += size
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, recs[0].Schema(), WriterOptions{BloomColumns: map[string]int64{"id": 0, "cat": 0}, BloomFPP: fpp})
	require.NoError(t, err)
	// Row groups of 10,000, 10,000 and 60,000 rows.
	for i, r := range recs {
		require.NoError(t, w.Write(r))
		if i == 1 || i == 3 {
			require.NoError(t, w.FlushRowGroup())
		}
	}
	res, err := w.Close()
	require.NoError(t, err)
	require.Equal(t, 3, res.RowGroups)
	rdr := openBloomTest(t, buf.Bytes())
	chunks := bloomChunks(t, rdr, 0, 1)
	first := int64(0)
	var catBytes []int64
	for rg := 0; rg < 3; rg++ {
		id, cat := chunks[2*rg], chunks[2*rg+1]
		// Not larger than twice the optimal filter for the row group's values
		// (arrow-go credits a candidate with up to 500 values fewer than it holds).
		require.LessOrEqual(t, id.bytes, 2*(bloomFilterBytes(id.rows, fpp)-16), "row group %d id filter", rg)
		require.GreaterOrEqual(t, id.bytes, bloomFilterBytes(id.rows, fpp)-16, "row group %d id filter", rg)
		catBytes = append(catBytes, cat.bytes)
		rate := falsePositives(t, rdr, rg, first, id.rows, 1<<40, 20_000)
		t.Logf("row group %d: %d rows, id filter %d B, cat filter %d B, false-positive rate %.4f", rg, id.rows, id.bytes, cat.bytes, rate)
		require.LessOrEqual(t, rate, 1.5*fpp, "row group %d", rg)
		first += id.rows
	}
	require.Greater(t, chunks[4].bytes, chunks[0].bytes, "a larger row group of distinct keys gets a larger filter")
	for _, b := range catBytes {
		require.LessOrEqual(t, b, int64(4<<10), "3 distinct values: the smallest candidate")
	}
}

// TestBloomRowGroupCap: when the largest data-sized filter cannot hold a row
// group's rows at the fpp, row groups end at its capacity, so the fpp still holds.
func TestBloomRowGroupCap(t *testing.T) {
	const fpp = 1e-9 // the 1 MiB filter holds about 81,000 values
	capRows := bloomCapacity(bloomMaxFilterBytes, fpp)
	require.Greater(t, capRows, int64(50_000))
	require.Less(t, capRows, int64(100_000))
	// Check the capacity against arrow-go's sizing: capRows values need at most
	// bloomMaxFilterBytes, one more value than twice that needs more.
	require.Equal(t, int64(bloomMaxFilterBytes+16), bloomFilterBytes(capRows, fpp))
	n := int(capRows)*2 + 1000
	if testing.Short() {
		n = int(capRows) + 1000
	}
	rec := bloomRows(0, n, 3)
	defer rec.Release()
	_, res := writeFile(t, WriterOptions{BloomColumns: map[string]int64{"id": 0}, BloomFPP: fpp, TargetRowGroupBytes: 1 << 30}, rec)
	require.Greater(t, res.RowGroups, 1, "one 1 GiB row group would exceed the filter's capacity")
	for i := 0; i < res.RowGroups; i++ {
		require.LessOrEqual(t, res.Metadata.RowGroup(i).NumRows(), capRows, "row group %d", i)
	}
	// A configured NDV keeps the row groups the size target makes.
	_, res = writeFile(t, WriterOptions{BloomColumns: map[string]int64{"id": 1000}, BloomFPP: fpp, TargetRowGroupBytes: 1 << 30}, rec)
	require.Equal(t, 1, res.RowGroups)
}
