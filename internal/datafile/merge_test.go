package datafile

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// mixedSchema has what the line schema lacks: booleans (never dictionary-encoded),
// an unsigned column (unsigned sort order: values above 2³¹ order after the
// others), floats with -0 and +0 (not NaN: Delta statistics then have no bounds,
// which Stitch refuses), a nullable string with runs of nulls (all
// null in some files), and a column that is always null.
var mixedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "u", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "none", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// mixedBatches returns rows rows of mixedSchema (seeded); with nullS the column s
// is null throughout.
func mixedBatches(mem memory.Allocator, rows, batch int, seed uint64, nullS bool) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 3))
	var out []arrow.RecordBatch
	for start := 0; start < rows; start += batch {
		n := min(batch, rows-start)
		b := array.NewRecordBuilder(mem, mixedSchema)
		for i := range n {
			k := start + i
			b.Field(0).(*array.Int64Builder).Append(int64(seed)*1_000_000 + int64(k))
			if k%11 == 3 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
			}
			if k%13 == 5 {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.Uint32Builder).Append(rng.Uint32())
			}
			switch {
			case k%17 == 2:
				b.Field(3).AppendNull()
			case k%89 == 1:
				b.Field(3).(*array.Float64Builder).Append(math.Copysign(0, -1))
			case k%83 == 4:
				b.Field(3).(*array.Float64Builder).Append(0)
			default:
				b.Field(3).(*array.Float64Builder).Append((rng.Float64() - 0.5) * 2e6)
			}
			if nullS || (k/500)%4 == 1 {
				b.Field(4).AppendNull()
			} else {
				b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("s-%08x", rng.Uint32()))
			}
			if k%19 == 6 {
				b.Field(5).AppendNull()
			} else {
				b.Field(5).(*array.Date32Builder).Append(arrow.Date32(8000 + rng.IntN(300)))
			}
			b.Field(6).AppendNull()
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// mergeFile is one source file of a merge test.
type mergeFile struct {
	rows  int
	nullS bool // mixedSchema: s all null
	// tweak adjusts the Output writing this file (each file has an Output of its
	// own, so each samples its dictionary choice from its own rows).
	tweak func(*Output)
}

// writeMergeSources writes files of schema through Outputs of spec (8 KiB pages).
func writeMergeSources(t *testing.T, store *storage.Memory, spec Spec, schema *arrow.Schema, files []mergeFile, v2 bool) *stitchFixture {
	t.Helper()
	spec.Schema = schema
	fx := &stitchFixture{store: store, spec: spec}
	for i, mf := range files {
		out := smallPageOutput(t, store, spec)
		out.opts.dataPageV2 = v2
		if mf.tweak != nil {
			mf.tweak(out)
		}
		var recs []arrow.RecordBatch
		if schema == mixedSchema {
			recs = mixedBatches(spec.Allocator, mf.rows, 2500, uint64(50+i), mf.nullS)
		} else {
			recs = lineBatches(spec.Allocator, mf.rows, 2500, uint64(200+i))
		}
		fx.writeSource(t, out, recs)
	}
	return fx
}

// A merged file (D12) holds exactly the sources' rows in order and reads back
// through this package's reader and plain pqarrow; its small row groups are
// merged into row groups of at most the target, large ones copied whole; in a
// merged row group the columns without a dictionary (and not Bloom columns) are
// the sources' data pages byte for byte, the others re-encoded; page skipping
// reads what a full read reads; every chunk's footer statistics and column index
// entries are those of its values, computed by brute force; Bloom filters hold
// every value; the Delta statistics are the merge of the sources'.
func TestStitchMergesSmallRowGroups(t *testing.T) {
	line5 := []mergeFile{{rows: 3000}, {rows: 4500}, {rows: 2000}, {rows: 6000}, {rows: 3500}}
	plainS := func(o *Output) { o.dict = map[string]bool{"s": false} }
	cases := []struct {
		name     string
		schema   *arrow.Schema
		files    []mergeFile
		srcRG    int64 // the sources' row-group target
		outRG    int64 // the merged file's
		minBytes int64 // StitchOptions.MinRowGroupBytes (0: above every row group)
		bloom    []string
		codec    Codec
		v2       bool
		dict     Dictionary
		// nullPages: some copied chunk of a merged row group has all-null pages
		// next to others; split: a merged row group came out above the target
		// and was split (more row groups than planned).
		nullPages, split bool
	}{
		{name: "plain columns copied, dictionary columns re-encoded", schema: lineSchema, files: line5, srcRG: 24 << 10, outRG: 160 << 10},
		{name: "Bloom columns re-encoded", schema: lineSchema, files: line5, srcRG: 24 << 10, outRG: 160 << 10, bloom: []string{"id", "comment"}},
		{name: "data page v2", schema: lineSchema, files: line5, srcRG: 24 << 10, outRG: 160 << 10, v2: true},
		{name: "snappy", schema: lineSchema, files: line5, srcRG: 24 << 10, outRG: 160 << 10, codec: CodecSnappy},
		{name: "every column dictionary-encoded", schema: lineSchema, files: line5, srcRG: 24 << 10, outRG: 160 << 10, dict: DictionaryAll},
		{name: "no dictionary", schema: lineSchema, files: line5, srcRG: 24 << 10, outRG: 160 << 10, dict: DictionaryNone},
		{name: "large row groups copied whole between merged ones", schema: lineSchema, srcRG: 24 << 10, outRG: 120 << 10, minBytes: 40 << 10,
			files: []mergeFile{{rows: 3000}, {rows: 9000, tweak: func(o *Output) { o.opts.TargetRowGroupBytes = 64 << 10 }}, {rows: 2500}, {rows: 2500}}},
		{name: "unsigned, floats, booleans, null runs, all-null pages, encoding switching between files", schema: mixedSchema, srcRG: 32 << 10, outRG: 160 << 10, nullPages: true,
			files: []mergeFile{{rows: 4000}, {rows: 3000, nullS: true, tweak: plainS}, {rows: 5000}, {rows: 3000, nullS: true}, {rows: 1500, nullS: true, tweak: plainS}}},
		{name: "re-encoded columns outgrow the sources: split", schema: lineSchema, srcRG: 24 << 10, outRG: 100 << 10, dict: DictionaryNone, split: true,
			bloom: []string{"id", "price", "comment"},
			files: []mergeFile{{rows: 6000, tweak: level(19)}, {rows: 6000, tweak: level(19)}, {rows: 6000, tweak: level(19)}}},
		{name: "mixed, v2", schema: mixedSchema, srcRG: 32 << 10, outRG: 256 << 10, v2: true, nullPages: true,
			files: []mergeFile{{rows: 4000}, {rows: 3000, nullS: true, tweak: plainS}, {rows: 5000}}},
	}
	for i, tc := range cases {
		if raceEnabled && i != 1 && i != 6 && i != 7 {
			// Under -race (the merge re-encodes through the Writer, whose
			// goroutines have tests of their own): Bloom columns re-encoded, whole
			// row groups between merged ones, and the mixed types.
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			store := storage.NewMemory()
			spec := Spec{RowGroupBytes: tc.srcRG, Allocator: mem, BloomColumns: tc.bloom, Codec: tc.codec, BloomNDV: 8192}
			files := tc.files
			if tc.dict != DictionaryAuto {
				files = slices.Clone(files)
				for i := range files {
					tw := files[i].tweak
					files[i].tweak = func(o *Output) {
						o.opts.Dictionary = tc.dict
						if tw != nil {
							tw(o)
						}
					}
				}
			}
			fx := writeMergeSources(t, store, spec, tc.schema, files, tc.v2)
			spec.Schema, spec.RowGroupBytes = tc.schema, tc.outRG
			if tc.split {
				spec.CompressionLevel = 1
			}
			out := smallPageOutput(t, store, spec)
			out.opts.dataPageV2 = tc.v2
			minBytes := tc.minBytes
			if minBytes == 0 {
				minBytes = 1 << 40
			}
			var progress []int
			res, err := out.Stitch(bg, FileOptions{Dir: "p=1"}, fx.sources, StitchOptions{MinRowGroupBytes: minBytes, MergeRowGroups: true,
				BufferBytes: 4096, Progress: func(i int) { progress = append(progress, i) }})
			require.NoError(t, err)
			require.Equal(t, []int{0, 1, 2, 3, 4}[:len(files)], progress)
			require.Positive(t, res.MergedRowGroups)
			add := res.Add
			p, err := add.DecodedPath()
			require.NoError(t, err)
			data, err := store.Get(bg, p)
			require.NoError(t, err)
			require.Equal(t, int64(len(data)), add.Size)
			want := fx.allRows()
			require.Equal(t, want, readRows(t, data, tc.schema, nil), "datafile reader")
			require.Equal(t, want, pqarrowRows(t, data), "plain pqarrow")

			r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 700})
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, res.RowGroups, r.NumRowGroups())
			copied, reencoded, nullPages, planned := checkMergedLayout(t, store, fx.sources, r, data, tc.outRG, minBytes, tc.bloom)
			require.Equal(t, tc.nullPages, nullPages > 0, "copied chunks with null pages: %d", nullPages)
			if tc.split {
				require.Greater(t, res.RowGroups, planned)
			} else {
				require.Equal(t, planned, res.RowGroups)
			}
			if tc.v2 {
				checkPageVersion(t, data, format2)
			}
			if tc.schema == mixedSchema {
				for rg := range r.NumRowGroups() {
					cc, err := r.Metadata().RowGroup(rg).ColumnChunk(1)
					require.NoError(t, err)
					require.False(t, cc.HasDictionaryPage(), "booleans without a dictionary")
				}
			}
			require.Equal(t, copied, res.CopiedChunks, "copied chunks")
			require.Equal(t, reencoded, res.ReencodedChunks, "re-encoded chunks")
			if tc.dict != DictionaryAll {
				require.Positive(t, copied)
			}
			if tc.dict != DictionaryNone {
				require.Positive(t, reencoded)
			}
			checkRangesOf(t, r, tc.schema)
			checkChunkStatistics(t, r, tc.schema)
			if len(tc.bloom) > 0 {
				checkNativeBloom(t, r, data, tc.bloom)
				checkIndexBloom(t, out, add, fx, tc.bloom)
			}
			checkMergedStats(t, out, add, fx)
		})
	}
}

// checkMergedLayout matches each row group of the merged file with the source row
// groups it holds (by rows, in order) and checks: a row group of one source row
// group is its chunks byte for byte; a merged row group is
// at most target compressed bytes, and each of its columns without a dictionary
// page in any source (and not a Bloom column) is the concatenation of the
// sources' chunks byte for byte. It returns the chunks copied and re-encoded.
func checkMergedLayout(t *testing.T, store storage.Storage, sources []StitchSource, r *Reader, data []byte, target, minBytes int64, bloomCols []string) (copied, reencoded, nullPages, planned int) {
	t.Helper()
	type srcRG struct {
		md   *metadata.FileMetaData
		rg   int
		data []byte
	}
	var srcs []srcRG
	for _, src := range sources {
		sdata, err := store.Get(bg, src.Path)
		require.NoError(t, err)
		sr, err := Open(bytes.NewReader(sdata), int64(len(sdata)), ReadOptions{})
		require.NoError(t, err)
		for rg := range sr.NumRowGroups() {
			srcs = append(srcs, srcRG{sr.Metadata(), rg, sdata})
		}
		sr.Close()
	}
	// The groups Stitch plans: large row groups alone, runs of small ones up to
	// the target.
	var run int64
	for i, s := range srcs {
		b := s.md.RowGroup(s.rg).TotalCompressedSize()
		if b >= minBytes || i == 0 || run == 0 || run+b > target {
			planned++
			run = 0
		}
		if b < minBytes {
			run += b
		}
	}
	md := r.Metadata()
	pir := r.ParquetReader().GetPageIndexReader()
	next := 0
	for rg := range md.NumRowGroups() {
		rgm := md.RowGroup(rg)
		var members []srcRG
		var rows int64
		for rows < rgm.NumRows() {
			require.Less(t, next, len(srcs), "row group %d holds more rows than the sources", rg)
			members = append(members, srcs[next])
			rows += srcs[next].md.RowGroup(srcs[next].rg).NumRows()
			next++
		}
		require.Equal(t, rows, rgm.NumRows(), "row group %d does not end where a source row group ends", rg)
		if len(members) == 1 {
			s := members[0]
			t.Logf("row group %d: source row group of %d bytes copied whole", rg, s.md.RowGroup(s.rg).TotalCompressedSize())
			for c := range md.Schema.NumColumns() {
				a, _ := s.md.RowGroup(s.rg).ColumnChunk(c)
				b, _ := rgm.ColumnChunk(c)
				require.Equal(t, chunkBytes(a.DictionaryPageOffset(), a.DataPageOffset(), a.TotalCompressedSize(), s.data),
					chunkBytes(b.DictionaryPageOffset(), b.DataPageOffset(), b.TotalCompressedSize(), data), "row group %d column %d", rg, c)
				copied++
			}
			continue
		}
		var total int64
		for c := range md.Schema.NumColumns() {
			b, err := rgm.ColumnChunk(c)
			require.NoError(t, err)
			total += b.TotalCompressedSize()
			plain := !slices.Contains(bloomCols, md.Schema.Column(c).ColumnPath()[0])
			var concat []byte
			for _, s := range members {
				a, _ := s.md.RowGroup(s.rg).ColumnChunk(c)
				plain = plain && !a.HasDictionaryPage()
				concat = append(concat, chunkBytes(a.DictionaryPageOffset(), a.DataPageOffset(), a.TotalCompressedSize(), s.data)...)
			}
			got := chunkBytes(b.DictionaryPageOffset(), b.DataPageOffset(), b.TotalCompressedSize(), data)
			if plain {
				require.False(t, b.HasDictionaryPage())
				require.True(t, bytes.Equal(concat, got), "row group %d column %d: copied pages differ from the sources'", rg, c)
				copied++
				rgpi, err := pir.RowGroup(rg)
				require.NoError(t, err)
				ci, err := rgpi.GetColumnIndex(c)
				require.NoError(t, err)
				if slices.Contains(ci.GetNullPages(), true) && slices.Contains(ci.GetNullPages(), false) {
					nullPages++
				}
			} else {
				require.False(t, bytes.Equal(concat, got), "row group %d column %d: re-encoded chunk equals the sources'", rg, c)
				reencoded++
			}
		}
		require.LessOrEqual(t, total, target, "row group %d of %d bytes", rg, total)
		t.Logf("row group %d: %d source row groups merged, %d bytes", rg, len(members), total)
		require.Equal(t, total, rgm.TotalCompressedSize())
	}
	require.Equal(t, len(srcs), next, "source row groups left over")
	return copied, reencoded, nullPages, planned
}

func level(l int) func(*Output) { return func(o *Output) { o.opts.CompressionLevel = l } }

// format2 is the page type of data pages v2.
const format2 = "DATA_PAGE_V2"

// checkPageVersion checks that every data page of data has the page type want.
func checkPageVersion(t *testing.T, data []byte, want string) {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	pages := 0
	for rg := range pr.NumRowGroups() {
		for c := range pr.MetaData().Schema.NumColumns() {
			rdr, err := pr.RowGroup(rg).GetColumnPageReader(c)
			require.NoError(t, err)
			for rdr.Next() {
				p := rdr.Page()
				if p.Type().String() == "DICTIONARY_PAGE" {
					continue
				}
				require.Equal(t, want, p.Type().String(), "row group %d column %d", rg, c)
				pages++
			}
			require.NoError(t, rdr.Err())
		}
	}
	require.Positive(t, pages)
}

// checkRangesOf: page skipping through the merged offset indexes reads exactly
// the rows of a full read.
func checkRangesOf(t *testing.T, r *Reader, sc *arrow.Schema) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(5, 8))
	for rg := range r.NumRowGroups() {
		full := fullRows(t, r, sc, rg)
		bounds := pageStarts(t, r, rg)
		for range 4 {
			ranges := randomRanges(rnd, int64(len(full)), bounds)
			got, _ := rowsOf(t, r, sc, rg, ranges)
			var want []string
			for _, rr := range ranges {
				want = append(want, full[rr.Start:rr.End]...)
			}
			require.Equal(t, want, got, "row group %d ranges %v", rg, ranges)
		}
	}
}

// bval is a value in the order Parquet's statistics use for its column: signed
// integers, unsigned integers, floats, unsigned bytes, booleans.
type bval struct {
	kind byte // 'i', 'u', 'f', 's', 'b'
	i    int64
	u    uint64
	f    float64
	s    string
}

func (a bval) cmp(b bval) int {
	switch a.kind {
	case 'i', 'b':
		return compareOrdered(a.i, b.i)
	case 'u':
		return compareOrdered(a.u, b.u)
	case 'f':
		return compareOrdered(a.f, b.f)
	}
	return strings.Compare(a.s, b.s)
}

func compareOrdered[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// arrowBval returns row i of arr as a bval; ok is false for nulls and NaN (which
// statistics leave out).
func arrowBval(arr arrow.Array, i int) (bval, bool) {
	if arr.IsNull(i) {
		return bval{}, false
	}
	switch a := arr.(type) {
	case *array.Int64:
		return bval{kind: 'i', i: a.Value(i)}, true
	case *array.Int32:
		return bval{kind: 'i', i: int64(a.Value(i))}, true
	case *array.Date32:
		return bval{kind: 'i', i: int64(a.Value(i))}, true
	case *array.Uint32:
		return bval{kind: 'u', u: uint64(a.Value(i))}, true
	case *array.Float64:
		v := a.Value(i)
		return bval{kind: 'f', f: v}, !math.IsNaN(v)
	case *array.String:
		return bval{kind: 's', s: a.Value(i)}, true
	case *array.Boolean:
		v := int64(0)
		if a.Value(i) {
			v = 1
		}
		return bval{kind: 'b', i: v}, true
	}
	panic(fmt.Sprintf("arrowBval: %T", arr))
}

// statBvals decodes min and max of typed footer statistics.
func statBvals(st metadata.TypedStatistics, unsigned bool) (lo, hi bval) {
	switch s := st.(type) {
	case *metadata.Int64Statistics:
		return bval{kind: 'i', i: s.Min()}, bval{kind: 'i', i: s.Max()}
	case *metadata.Int32Statistics:
		if unsigned {
			return bval{kind: 'u', u: uint64(uint32(s.Min()))}, bval{kind: 'u', u: uint64(uint32(s.Max()))}
		}
		return bval{kind: 'i', i: int64(s.Min())}, bval{kind: 'i', i: int64(s.Max())}
	case *metadata.Float64Statistics:
		return bval{kind: 'f', f: s.Min()}, bval{kind: 'f', f: s.Max()}
	case *metadata.ByteArrayStatistics:
		return bval{kind: 's', s: string(s.Min())}, bval{kind: 's', s: string(s.Max())}
	case *metadata.BooleanStatistics:
		b := func(v bool) bval {
			if v {
				return bval{kind: 'b', i: 1}
			}
			return bval{kind: 'b'}
		}
		return b(s.Min()), b(s.Max())
	}
	panic(fmt.Sprintf("statBvals: %T", st))
}

// indexBvals decodes page p's min and max of a typed column index.
func indexBvals(ci metadata.ColumnIndex, p int, unsigned bool) (lo, hi bval) {
	switch x := ci.(type) {
	case *metadata.TypedColumnIndex[int64]:
		return bval{kind: 'i', i: x.MinValues()[p]}, bval{kind: 'i', i: x.MaxValues()[p]}
	case *metadata.TypedColumnIndex[int32]:
		if unsigned {
			return bval{kind: 'u', u: uint64(uint32(x.MinValues()[p]))}, bval{kind: 'u', u: uint64(uint32(x.MaxValues()[p]))}
		}
		return bval{kind: 'i', i: int64(x.MinValues()[p])}, bval{kind: 'i', i: int64(x.MaxValues()[p])}
	case *metadata.TypedColumnIndex[float64]:
		return bval{kind: 'f', f: x.MinValues()[p]}, bval{kind: 'f', f: x.MaxValues()[p]}
	case *metadata.TypedColumnIndex[parquet.ByteArray]:
		return bval{kind: 's', s: string(x.MinValues()[p])}, bval{kind: 's', s: string(x.MaxValues()[p])}
	case *metadata.TypedColumnIndex[bool]:
		b := func(v bool) bval {
			if v {
				return bval{kind: 'b', i: 1}
			}
			return bval{kind: 'b'}
		}
		return b(x.MinValues()[p]), b(x.MaxValues()[p])
	}
	panic(fmt.Sprintf("indexBvals: %T", ci))
}

// valueBounds is the exact min, max and null count of values [lo, hi) of arr.
func valueBounds(arr arrow.Array, lo, hi int) (mn, mx bval, nulls int64, have bool) {
	for i := lo; i < hi; i++ {
		if arr.IsNull(i) {
			nulls++
			continue
		}
		v, ok := arrowBval(arr, i)
		if !ok {
			continue
		}
		if !have || v.cmp(mn) < 0 {
			mn = v
		}
		if !have || v.cmp(mx) > 0 {
			mx = v
		}
		have = true
	}
	return mn, mx, nulls, have
}

// checkChunkStatistics compares every chunk's footer statistics and every page's
// column index entry with the values, by brute force: null counts equal, min and
// max equal to the values' (the Writer's statistics are exact, and so are their
// merges), null pages exactly the all-null ones, boundary orders true.
func checkChunkStatistics(t *testing.T, r *Reader, sc *arrow.Schema) {
	t.Helper()
	md := r.Metadata()
	pir := r.ParquetReader().GetPageIndexReader()
	for rg := range md.NumRowGroups() {
		var recs []arrow.RecordBatch
		require.NoError(t, r.Read(bg, sc, []int{rg}, func(rec arrow.RecordBatch, _ int64) error {
			rec.Retain()
			recs = append(recs, rec)
			return nil
		}))
		cols := make([]arrow.Array, sc.NumFields())
		for c := range cols {
			parts := make([]arrow.Array, len(recs))
			for i, rec := range recs {
				parts[i] = rec.Column(c)
			}
			var err error
			cols[c], err = array.Concatenate(parts, memory.DefaultAllocator)
			require.NoError(t, err)
		}
		releaseBatches(recs)
		rgpi, err := pir.RowGroup(rg)
		require.NoError(t, err)
		for c := range sc.NumFields() {
			arr := cols[c]
			unsigned := sc.Field(c).Type.ID() == arrow.UINT32
			where := fmt.Sprintf("row group %d column %s", rg, sc.Field(c).Name)
			cc, err := md.RowGroup(rg).ColumnChunk(c)
			require.NoError(t, err)
			st, err := cc.Statistics()
			require.NoError(t, err)
			require.NotNil(t, st, where)
			mn, mx, nulls, have := valueBounds(arr, 0, arr.Len())
			require.True(t, st.HasNullCount(), where)
			require.Equal(t, nulls, st.NullCount(), where+": null count")
			require.False(t, st.HasDistinctCount(), where)
			require.Equal(t, have, st.HasMinMax(), where+": min/max present")
			if have {
				lo, hi := statBvals(st, unsigned)
				require.Zero(t, lo.cmp(mn), "%s: min %+v, values' %+v", where, lo, mn)
				require.Zero(t, hi.cmp(mx), "%s: max %+v, values' %+v", where, hi, mx)
			}
			ci, err := rgpi.GetColumnIndex(c)
			require.NoError(t, err)
			oi, err := rgpi.GetOffsetIndex(c)
			require.NoError(t, err)
			locs := oi.GetPageLocations()
			require.Len(t, ci.GetNullPages(), len(locs), where)
			var prevLo, prevHi bval
			asc, desc, seen := true, true, false
			for p, loc := range locs {
				end := int64(arr.Len())
				if p+1 < len(locs) {
					end = locs[p+1].FirstRowIndex
				}
				pmn, pmx, pnulls, phave := valueBounds(arr, int(loc.FirstRowIndex), int(end))
				pw := fmt.Sprintf("%s page %d", where, p)
				if ci.IsSetNullCounts() {
					require.Equal(t, pnulls, ci.GetNullCounts()[p], pw+": null count")
				}
				allNull := pnulls == end-loc.FirstRowIndex
				require.Equal(t, allNull, ci.GetNullPages()[p], pw+": null page")
				if allNull || !phave {
					continue
				}
				lo, hi := indexBvals(ci, p, unsigned)
				require.Zero(t, lo.cmp(pmn), "%s: min %+v, values' %+v", pw, lo, pmn)
				require.Zero(t, hi.cmp(pmx), "%s: max %+v, values' %+v", pw, hi, pmx)
				if seen {
					asc = asc && lo.cmp(prevLo) >= 0 && hi.cmp(prevHi) >= 0
					desc = desc && lo.cmp(prevLo) <= 0 && hi.cmp(prevHi) <= 0
				}
				prevLo, prevHi, seen = lo, hi, true
			}
			switch ci.GetBoundaryOrder() {
			case metadata.Ascending:
				require.True(t, asc, where+": not ascending")
			case metadata.Descending:
				require.True(t, desc, where+": not descending")
			}
		}
		for _, c := range cols {
			c.Release()
		}
	}
}

// The merged chunk statistics are exactly those of the merged values for every
// physical type and sort order the Writer produces, checked above; the id column,
// sorted in every source, keeps an ascending column index across the merged
// sources.
func TestStitchMergeKeepsAscendingBoundaryOrder(t *testing.T) {
	mem := checkedMem(t)
	store := storage.NewMemory()
	spec := Spec{RowGroupBytes: 24 << 10, Allocator: mem}
	// lineBatches ids start at 0 in every file: one file only, several row groups.
	fx := writeMergeSources(t, store, spec, lineSchema, []mergeFile{{rows: 12000}}, false)
	spec.Schema, spec.RowGroupBytes = lineSchema, 1<<20
	out := smallPageOutput(t, store, spec)
	res, err := out.Stitch(bg, FileOptions{}, fx.sources, StitchOptions{MinRowGroupBytes: 1 << 40, MergeRowGroups: true})
	require.NoError(t, err)
	require.Equal(t, 1, res.RowGroups)
	p, _ := res.Add.DecodedPath()
	data, err := store.Get(bg, p)
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	rgpi, err := r.ParquetReader().GetPageIndexReader().RowGroup(0)
	require.NoError(t, err)
	ci, err := rgpi.GetColumnIndex(0)
	require.NoError(t, err)
	require.Greater(t, len(ci.GetNullPages()), 4)
	require.Equal(t, metadata.Ascending, ci.GetBoundaryOrder())
}

// Merging fails cleanly: cancelled, a failing destination or a damaged source
// leave nothing stored.
func TestStitchMergeLeavesNothingBehindOnFailure(t *testing.T) {
	mem := checkedMem(t)
	src := Spec{RowGroupBytes: 24 << 10, Allocator: mem, BloomColumns: []string{"id"}}
	opts := StitchOptions{MinRowGroupBytes: 1 << 40, MergeRowGroups: true}
	newOut := func(t *testing.T, st storage.Storage) *Output {
		spec := src
		spec.Schema, spec.RowGroupBytes = lineSchema, 96<<10
		return smallPageOutput(t, st, spec)
	}
	cases := []struct {
		name string
		run  func(*testing.T, *storage.Memory, *stitchFixture) error
		want error
	}{
		{"cancelled after the first source", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			o := opts
			o.Progress = func(int) { cancel() }
			_, err := newOut(t, st).Stitch(ctx, FileOptions{}, fx.sources, o)
			return err
		}, context.Canceled},
		{"cancelled before", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			ctx, cancel := context.WithCancel(bg)
			cancel()
			_, err := newOut(t, st).Stitch(ctx, FileOptions{}, fx.sources, opts)
			return err
		}, context.Canceled},
		{"failing destination", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			_, err := newOut(t, &failingCreator{Memory: st, limit: 100 << 10}).Stitch(bg, FileOptions{}, fx.sources, opts)
			return err
		}, nil},
		{"source page damaged", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			// Damage a dictionary column's pages (re-encoded: decoded) of the second
			// source: the decode fails.
			data, err := st.Get(bg, fx.sources[1].Path)
			require.NoError(t, err)
			r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
			require.NoError(t, err)
			cc, _ := r.Metadata().RowGroup(0).ColumnChunk(1) // qty
			r.Close()
			for i := cc.DataPageOffset(); i < cc.DataPageOffset()+cc.TotalCompressedSize()-(cc.DataPageOffset()-cc.DictionaryPageOffset()); i += 5 {
				data[i] ^= 0xa5
			}
			require.NoError(t, st.Delete(bg, fx.sources[1].Path))
			require.NoError(t, st.Put(bg, fx.sources[1].Path, data))
			_, err = newOut(t, st).Stitch(bg, FileOptions{}, fx.sources, opts)
			return err
		}, ErrCorruptData},
		{"source missing", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			require.NoError(t, st.Delete(bg, fx.sources[2].Path))
			_, err := newOut(t, st).Stitch(bg, FileOptions{}, fx.sources, opts)
			return err
		}, storage.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			fx := writeMergeSources(t, store, src, lineSchema, []mergeFile{{rows: 4000}, {rows: 4000}, {rows: 4000}}, false)
			before := objects(t, store)
			err := tc.run(t, store, fx)
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			for _, p := range objects(t, store) {
				require.Contains(t, before, p, "left %s behind", p)
			}
		})
	}
}

// Column-mapped files with a nested struct merge too: the struct's leaves are
// re-encoded together (a top-level field is re-encoded whole), under the
// output's physical names and field ids.
func TestStitchMergesColumnMappedFiles(t *testing.T) {
	ds := mustParseMapped(t)
	logical := mustArrow(t, ds, false, false)
	mem := checkedMem(t)
	store := storage.NewMemory()
	spec := Spec{Schema: logical, FileSchema: mappedFileSchema(t, ds, log.ColumnMappingID), Allocator: mem, RowGroupBytes: 16 << 10}
	src, err := NewOutput(store, spec)
	require.NoError(t, err)
	sources, want := mappedSources(t, mem, logical, src)
	spec.RowGroupBytes = 1 << 20
	out, err := NewOutput(store, spec)
	require.NoError(t, err)
	res, err := out.Stitch(bg, FileOptions{}, sources, StitchOptions{MinRowGroupBytes: 1 << 40, MergeRowGroups: true})
	require.NoError(t, err)
	require.Equal(t, 1, res.RowGroups)
	require.Equal(t, 1, res.MergedRowGroups)
	p, _ := res.Add.DecodedPath()
	data, err := store.Get(bg, p)
	require.NoError(t, err)
	require.Equal(t, want, readRows(t, data, mustArrow(t, ds, true, true), nil))
	var wantPQ []string // pqarrow reads the physical names
	for _, s := range sources {
		sdata, err := store.Get(bg, s.Path)
		require.NoError(t, err)
		wantPQ = append(wantPQ, pqarrowRows(t, sdata)...)
	}
	require.Equal(t, wantPQ, pqarrowRows(t, data))
}

func mustParseMapped(t *testing.T) *log.StructType {
	t.Helper()
	ds, err := log.ParseSchema(mappedDelta)
	require.NoError(t, err)
	return ds
}

// mustArrow converts ds to Arrow: logical names, or (read) as the files are read
// under id mode.
func mustArrow(t *testing.T, ds *log.StructType, fieldIDs, mapping bool) *arrow.Schema {
	t.Helper()
	sc, err := log.ToArrow(ds, log.ArrowOptions{FieldIDs: fieldIDs, MappingMetadata: mapping})
	require.NoError(t, err)
	return sc
}
