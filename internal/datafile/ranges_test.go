package datafile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// rangeSchemas are the projections the range tests read: flat (seek path), nested without
// repetition (seek path), with lists and maps (slicing fallback), and with missing columns.
func rangeSchemas(full *arrow.Schema) map[string]*arrow.Schema {
	flat := []arrow.Field{}
	for _, f := range full.Fields() {
		switch f.Type.ID() {
		case arrow.LIST, arrow.MAP, arrow.STRUCT:
		default:
			flat = append(flat, f)
		}
	}
	st, _ := full.FieldsByName("st")
	return map[string]*arrow.Schema{
		"every flat column":        arrow.NewSchema(flat, nil),
		"every column incl. lists": full,
		"struct child and missing column": arrow.NewSchema([]arrow.Field{
			{Name: "absent", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "st", Nullable: true, Type: arrow.StructOf(
				arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
				arrow.Field{Name: "gone", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
			st[0],
			{Name: "long", Type: arrow.PrimitiveTypes.Int64},
		}, nil),
		"only missing columns": arrow.NewSchema([]arrow.Field{{Name: "absent", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil),
	}
}

// rowsOf reads the given rows of one row group with ReadRanges, checking schema, that
// positions are file positions inside the ranges, and that batches are contiguous within a
// range; it returns the stringified rows with their file positions.
func rowsOf(t *testing.T, r *Reader, want *arrow.Schema, rg int, ranges []RowRange) (rows []string, pos []int64) {
	t.Helper()
	base := r.RowGroupFirstRow(rg)
	err := r.ReadRanges(context.Background(), want, rg, ranges, func(rec arrow.RecordBatch, first int64) error {
		if !rec.Schema().Equal(want) || !sameMetadata(rec.Schema(), want) {
			return fmt.Errorf("batch schema\n%s\nwant\n%s", rec.Schema(), want)
		}
		if rec.NumRows() == 0 {
			return fmt.Errorf("empty batch at %d", first)
		}
		for i, s := range rowStrings(rec) {
			rows = append(rows, s)
			pos = append(pos, first+int64(i))
		}
		return nil
	})
	require.NoError(t, err)
	for _, p := range pos {
		inside := false
		for _, rr := range ranges {
			inside = inside || (p >= base+rr.Start && p < base+rr.End)
		}
		require.True(t, inside, "position %d outside the ranges %v of row group %d (first row %d)", p, ranges, rg, base)
	}
	return rows, pos
}

// fullRows reads row group rg whole with Read and indexes its rows by file position.
func fullRows(t *testing.T, r *Reader, want *arrow.Schema, rg int) []string {
	t.Helper()
	var rows []string
	require.NoError(t, r.Read(context.Background(), want, []int{rg}, func(rec arrow.RecordBatch, first int64) error {
		if first != r.RowGroupFirstRow(rg)+int64(len(rows)) {
			return fmt.Errorf("batch at %d after %d rows", first, len(rows))
		}
		rows = append(rows, rowStrings(rec)...)
		return nil
	}))
	return rows
}

// pageStarts returns the first rows of the pages of every leaf of row group rg.
func pageStarts(t *testing.T, r *Reader, rg int) []int64 {
	t.Helper()
	rgpi, err := r.ParquetReader().GetPageIndexReader().RowGroup(rg)
	require.NoError(t, err)
	var out []int64
	for c := 0; c < r.Metadata().Schema.NumColumns(); c++ {
		oi, err := rgpi.GetOffsetIndex(c)
		require.NoError(t, err)
		for _, l := range oi.GetPageLocations() {
			out = append(out, l.FirstRowIndex)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// randomRanges draws sorted disjoint ranges in [0,n), ends snapped to page boundaries
// half of the time.
func randomRanges(rnd *rand.Rand, n int64, bounds []int64) []RowRange {
	var cuts []int64
	k := 1 + rnd.IntN(8)
	for range 2 * k {
		if rnd.IntN(2) == 0 && len(bounds) > 0 {
			cuts = append(cuts, bounds[rnd.IntN(len(bounds))])
		} else {
			cuts = append(cuts, rnd.Int64N(n+1))
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var out []RowRange
	for i := 0; i+1 < len(cuts); i += 2 {
		if rnd.IntN(4) == 0 {
			i-- // shift pairing so gaps and ranges alternate differently
			continue
		}
		out = append(out, RowRange{cuts[i], cuts[i+1]})
	}
	return out
}

func TestReadRangesEqualsSlicesOfAFullRead(t *testing.T) {
	mem := checkedMem(t)
	src := allTypesBatch(t, mem, 6000, 0)
	defer src.Release()
	data, res := writeFile(t, WriterOptions{TargetRowGroupBytes: 96 << 10, DataPageBytes: 512}, src)
	require.Greater(t, res.RowGroups, 1)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 300, Allocator: mem})
	require.NoError(t, err)
	defer r.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	iters := 12
	if testing.Short() {
		iters = 4
	}
	for name, want := range rangeSchemas(src.Schema()) {
		t.Run(name, func(t *testing.T) {
			for rg := range r.NumRowGroups() {
				ref := fullRows(t, r, want, rg)
				n := int64(len(ref))
				base := r.RowGroupFirstRow(rg)
				bounds := pageStarts(t, r, rg)
				require.Greater(t, len(bounds), 4, "row group %d must have many pages", rg)
				mid := bounds[len(bounds)/2]
				cases := map[string][]RowRange{
					"whole group":                     {{0, n}},
					"first row":                       {{0, 1}},
					"last row":                        {{n - 1, n}},
					"single row at a page boundary":   {{mid, mid + 1}},
					"range ending at a page boundary": {{mid - 7, mid}},
					"page to page":                    {{bounds[1], bounds[3]}},
					"row before and after a boundary": {{mid - 1, mid}, {mid + 1, mid + 2}},
					"adjacent ranges merge":           {{3, 10}, {10, 40}},
					"empty list":                      nil,
				}
				for i := range iters {
					cases[fmt.Sprintf("random %d", i)] = randomRanges(rnd, n, bounds)
				}
				for cname, ranges := range cases {
					rows, pos := rowsOf(t, r, want, rg, ranges)
					var wantRows []string
					var wantPos []int64
					for _, rr := range ranges {
						wantRows = append(wantRows, ref[rr.Start:rr.End]...)
						for p := rr.Start; p < rr.End; p++ {
							wantPos = append(wantPos, base+p)
						}
					}
					require.Equal(t, wantPos, pos, "row group %d %s %v: positions", rg, cname, ranges)
					require.Equal(t, wantRows, rows, "row group %d %s %v: rows", rg, cname, ranges)
				}
			}
		})
	}
}

func TestReadRangesSeeksOnlyWithoutRepeatedColumns(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 10, 0)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	for name, want := range rangeSchemas(rec.Schema()) {
		hasRepeated := want.HasField("list")
		require.Equal(t, !hasRepeated, r.canSeek(r.plan(want)), name)
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	ra io.ReaderAt
	n  atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.ra.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func TestReadRangesSkipsPagesOutsideTheRanges(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	const n = 200_000
	for i := range n {
		b.Append(int64(i) * 7919 % 1_000_003) // incompressible-ish
	}
	col := b.NewArray()
	defer col.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, n)
	defer rec.Release()
	data, res := writeFile(t, WriterOptions{Codec: CodecUncompressed, DataPageBytes: 8 << 10}, rec)
	require.Equal(t, 1, res.RowGroups)

	read := func(ranges []RowRange) (bytesRead int64, rows int64) {
		cr := &countingReaderAt{ra: bytes.NewReader(data)}
		r, err := Open(cr, int64(len(data)), ReadOptions{BatchSize: 4096})
		require.NoError(t, err)
		defer r.Close()
		before := cr.n.Load()
		require.NoError(t, r.ReadRanges(t.Context(), sc, 0, ranges, func(rec arrow.RecordBatch, first int64) error {
			v := rec.Column(0).(*array.Int64)
			for i := 0; i < v.Len(); i++ {
				if w := (first + int64(i)) * 7919 % 1_000_003; v.Value(i) != w {
					return fmt.Errorf("row %d: got %d want %d", first+int64(i), v.Value(i), w)
				}
			}
			rows += rec.NumRows()
			return nil
		}))
		return cr.n.Load() - before, rows
	}
	whole, rows := read([]RowRange{{0, n}})
	require.Equal(t, int64(n), rows)
	some, rows := read([]RowRange{{150_000, 150_010}, {180_000, 181_000}})
	require.Equal(t, int64(1010), rows)
	t.Logf("bytes read: whole row group %d, two small ranges %d", whole, some)
	require.Less(t, some*10, whole, "reading 0.5%% of the rows must read far less than the whole row group")
}

func TestReadRangesRejectsBadRanges(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 100, 0)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{}, rec)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	noop := func(arrow.RecordBatch, int64) error { return nil }
	cases := map[string]struct {
		rg     int
		ranges []RowRange
	}{
		"negative start":          {0, []RowRange{{-1, 3}}},
		"empty range":             {0, []RowRange{{5, 5}}},
		"end past the row group":  {0, []RowRange{{90, 101}}},
		"overlapping":             {0, []RowRange{{0, 10}, {5, 20}}},
		"unsorted":                {0, []RowRange{{50, 60}, {0, 10}}},
		"row group out of bounds": {1, []RowRange{{0, 1}}},
	}
	for name, tc := range cases {
		err := r.ReadRanges(t.Context(), rec.Schema(), tc.rg, tc.ranges, noop)
		require.ErrorIs(t, err, ErrInvalidArgument, name)
	}
	require.ErrorIs(t, r.ReadRanges(t.Context(), nil, 0, nil, noop), ErrInvalidArgument)
	stop := fmt.Errorf("stop")
	err = r.ReadRanges(t.Context(), rec.Schema(), 0, []RowRange{{0, 100}}, func(arrow.RecordBatch, int64) error { return stop })
	require.ErrorIs(t, err, stop, "emit errors are returned as is")
}

// TestGoldenReadRangesMatchFullReads reads random ranges of every row group of every
// golden data file (Spark, delta-rs and other writers: dictionaries, INT96, nested types)
// and compares them with the same rows of a full read.
func TestGoldenReadRangesMatchFullReads(t *testing.T) {
	g := goldenDir(t)
	var files []string
	require.NoError(t, filepath.WalkDir(g, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return err
	}))
	require.NotEmpty(t, files)
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	int96Want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "time", Type: ts, Nullable: true},
	}, nil)
	rnd := rand.New(rand.NewPCG(3, 4))
	compared := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 7})
		if err != nil {
			continue // unreadable fixtures are covered by the other golden tests
		}
		want := r.Schema()
		if strings.Contains(path, "int96") {
			want = int96Want
		}
		for rg := range r.NumRowGroups() {
			var ref []string
			err := r.Read(t.Context(), want, []int{rg}, func(rec arrow.RecordBatch, _ int64) error {
				ref = append(ref, rowStrings(rec)...)
				return nil
			})
			if err != nil || len(ref) == 0 {
				continue // a schema Read refuses is not a ReadRanges question
			}
			n := int64(len(ref))
			for _, ranges := range [][]RowRange{{{0, n}}, {{n - 1, n}}, randomRanges(rnd, n, nil)} {
				rows, _ := rowsOf(t, r, want, rg, ranges)
				var exp []string
				for _, rr := range ranges {
					exp = append(exp, ref[rr.Start:rr.End]...)
				}
				require.Equal(t, exp, rows, "%s row group %d ranges %v", path, rg, ranges)
				compared++
			}
		}
		require.NoError(t, r.Close())
	}
	require.Greater(t, compared, 100, "most golden files must be compared")
}
