package datafile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// stitchFixture is a store with source files written by one Output.
type stitchFixture struct {
	store   *storage.Memory
	spec    Spec
	adds    []*log.Add
	sources []StitchSource
	batches [][]arrow.RecordBatch // per source, what was written
}

// writeSources writes one file per entry of rows through an Output of spec
// (row groups of spec.RowGroupBytes), seeded per file.
func writeSources(t *testing.T, store *storage.Memory, spec Spec, rows []int) *stitchFixture {
	t.Helper()
	out := smallPageOutput(t, store, spec)
	fx := &stitchFixture{store: store, spec: spec}
	for i, n := range rows {
		fx.writeSource(t, out, lineBatches(spec.Allocator, n, 3000, uint64(100+i)))
	}
	return fx
}

// writeSource writes recs into a new file under p=1 through out and records it as a
// source (its add, stats and batches, released when the test ends).
func (fx *stitchFixture) writeSource(t *testing.T, out *Output, recs []arrow.RecordBatch) {
	t.Helper()
	fx.batches = append(fx.batches, recs)
	t.Cleanup(func() { releaseBatches(recs) })
	f, err := out.Create(bg, FileOptions{Dir: "p=1"})
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, f.Write(r))
	}
	add, err := f.Close(bg)
	require.NoError(t, err)
	st, err := stats.NewParser(out.FileSchema(), stats.ParseOptions{}).Parse(add.Stats)
	require.NoError(t, err)
	p, err := add.DecodedPath()
	require.NoError(t, err)
	fx.adds = append(fx.adds, add)
	fx.sources = append(fx.sources, StitchSource{Path: p, Size: add.Size, Stats: st})
}

func (fx *stitchFixture) allRows() []string {
	var rows []string
	for _, b := range fx.batches {
		rows = append(rows, batchRows(b)...)
	}
	return rows
}

// smallPageOutput is NewOutput with 8 KiB data pages, so that the small row groups
// of these tests have several pages to skip between.
func smallPageOutput(t *testing.T, store storage.Storage, spec Spec) *Output {
	t.Helper()
	out, err := NewOutput(store, spec)
	require.NoError(t, err)
	out.opts.DataPageBytes = 8 << 10
	return out
}

// objects lists every object of the store.
func objects(t *testing.T, s storage.Storage) []string {
	t.Helper()
	objs, err := s.List(bg, "", "")
	require.NoError(t, err)
	var out []string
	for _, o := range objs {
		out = append(out, o.Path)
	}
	return out
}

// copyCase is a set of sources of lineSchema for the row-group copy tests.
type copyCase struct {
	name  string
	rows  []int
	bloom []string
	codec Codec
}

// spec is the Spec the case's sources are written with (small row groups, so
// that each source has several).
func (c copyCase) spec(mem memory.Allocator) Spec {
	return Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: mem, BloomColumns: c.bloom, Codec: c.codec, BloomNDV: 8192}
}

// copyCases are the source sets the row-group copies (Stitch, Export) are tested
// on: one or several sources, native Bloom filters, another codec.
var copyCases = []copyCase{
	{"one source", []int{9000}, nil, CodecDefault},
	{"three sources", []int{7000, 5000, 8000}, nil, CodecDefault},
	{"with Bloom columns", []int{6000, 6000}, []string{"id", "comment"}, CodecDefault},
	{"snappy", []int{4000, 4000}, nil, CodecSnappy},
}

// A stitched file holds exactly the sources' rows in order, with their pages
// unchanged (D11), reads back through this package's reader and plain pqarrow,
// keeps page skipping (ReadRanges equals slices of full reads) and the native
// Bloom filters, and its statistics are the merge of the sources'.
func TestStitchCopiesRowGroupsUnchanged(t *testing.T) {
	for _, tc := range copyCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			store := storage.NewMemory()
			spec := tc.spec(mem)
			fx := writeSources(t, store, spec, tc.rows)
			out, err := NewOutput(store, spec)
			require.NoError(t, err)
			var progress []int
			res, err := out.Stitch(bg, FileOptions{Dir: "p=1", Tags: map[string]string{"k": "v"}}, fx.sources,
				StitchOptions{MinRowGroupBytes: 1, BufferBytes: 4096, Progress: func(i int) { progress = append(progress, i) }})
			require.NoError(t, err)
			add := res.Add
			require.Zero(t, res.MergedRowGroups)
			require.Equal(t, "v", add.Tags["k"])
			require.False(t, add.DataChange)
			require.True(t, strings.HasPrefix(add.Path, "p=1/part-"))
			require.Equal(t, []int{0, 1, 2}[:len(tc.rows)], progress)
			require.Equal(t, []*log.Add{add}, out.Adds())

			p, err := add.DecodedPath()
			require.NoError(t, err)
			data, err := store.Get(bg, p)
			require.NoError(t, err)
			require.Equal(t, int64(len(data)), add.Size)
			want := fx.allRows()
			require.Equal(t, want, readRows(t, data, lineSchema, nil), "datafile reader")
			require.Equal(t, want, pqarrowRows(t, data), "plain pqarrow")

			r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 700})
			require.NoError(t, err)
			defer r.Close()
			checkPagesUnchanged(t, store, fx.sources, r, data)
			checkRangesMatchFullReads(t, r)
			if len(tc.bloom) > 0 {
				checkNativeBloom(t, r, data, tc.bloom)
				checkIndexBloom(t, out, add, fx, tc.bloom)
			}
			checkMergedStats(t, out, add, fx)
		})
	}
}

// pqarrowRows reads data with pqarrow alone.
func pqarrowRows(t *testing.T, data []byte) []string {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1000}, memory.DefaultAllocator)
	require.NoError(t, err)
	rr, err := fr.GetRecordReader(bg, nil, nil)
	require.NoError(t, err)
	defer rr.Release()
	var rows []string
	for rr.Next() {
		rows = append(rows, rowStrings(rr.RecordBatch())...)
	}
	require.NoError(t, rr.Err())
	return rows
}

// checkPagesUnchanged compares every column chunk of the stitched file with the
// source chunk it was copied from, byte for byte.
func checkPagesUnchanged(t *testing.T, store storage.Storage, sources []StitchSource, r *Reader, data []byte) {
	t.Helper()
	rg := 0
	for _, src := range sources {
		sdata, err := store.Get(bg, src.Path)
		require.NoError(t, err)
		sr, err := Open(bytes.NewReader(sdata), int64(len(sdata)), ReadOptions{})
		require.NoError(t, err)
		smd := sr.Metadata()
		for i := range smd.NumRowGroups() {
			require.Equal(t, smd.RowGroup(i).NumRows(), r.Metadata().RowGroup(rg).NumRows())
			for c := range smd.Schema.NumColumns() {
				a, err := smd.RowGroup(i).ColumnChunk(c)
				require.NoError(t, err)
				b, err := r.Metadata().RowGroup(rg).ColumnChunk(c)
				require.NoError(t, err)
				require.Equal(t, chunkBytes(a.DictionaryPageOffset(), a.DataPageOffset(), a.TotalCompressedSize(), sdata),
					chunkBytes(b.DictionaryPageOffset(), b.DataPageOffset(), b.TotalCompressedSize(), data),
					"row group %d column %d", rg, c)
			}
			rg++
		}
		sr.Close()
	}
	require.Equal(t, rg, r.NumRowGroups())
}

func chunkBytes(dict, dataOff, n int64, data []byte) []byte {
	start := dataOff
	if dict > 0 && dict < start {
		start = dict
	}
	return data[start : start+n]
}

// checkRangesMatchFullReads: page skipping through the shifted offset indexes reads
// exactly the rows of a full read.
func checkRangesMatchFullReads(t *testing.T, r *Reader) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(3, 9))
	pages := 0
	for rg := range r.NumRowGroups() {
		full := fullRows(t, r, lineSchema, rg)
		bounds := pageStarts(t, r, rg)
		pages += len(bounds)
		for range 4 {
			ranges := randomRanges(rnd, int64(len(full)), bounds)
			got, _ := rowsOf(t, r, lineSchema, rg, ranges)
			var want []string
			for _, rr := range ranges {
				want = append(want, full[rr.Start:rr.End]...)
			}
			require.Equal(t, want, got, "row group %d ranges %v", rg, ranges)
		}
	}
	require.Greater(t, pages, r.NumRowGroups(), "no row group with several pages")
}

// checkNativeBloom probes every row group's Parquet Bloom filter with every value
// the row group holds.
func checkNativeBloom(t *testing.T, r *Reader, data []byte, cols []string) {
	t.Helper()
	md := r.Metadata()
	for rg := range md.NumRowGroups() {
		var recs []arrow.RecordBatch
		require.NoError(t, r.Read(bg, lineSchema, []int{rg}, func(rec arrow.RecordBatch, _ int64) error {
			rec.Retain()
			recs = append(recs, rec)
			return nil
		}))
		for _, col := range cols {
			c := md.Schema.ColumnIndexByName(col)
			require.GreaterOrEqual(t, c, 0)
			for _, rec := range recs {
				arr := rec.Column(lineSchema.FieldIndices(col)[0])
				for i := 0; i < arr.Len(); i += 7 {
					v := arrowValue(arr, i)
					ok, err := bloom.RowGroupMightContain(r.ParquetReader(), rg, c, v, md.Schema.Column(c).PhysicalType())
					require.NoError(t, err)
					require.True(t, ok, "row group %d column %s value %v", rg, col, v)
				}
			}
		}
		for _, rec := range recs {
			rec.Release()
		}
	}
}

func arrowValue(arr arrow.Array, i int) value.Value {
	switch a := arr.(type) {
	case *array.Int64:
		return value.Int64(a.Value(i))
	case *array.String:
		return value.String(a.Value(i))
	case *array.Float64:
		return value.Float64(a.Value(i))
	}
	panic(fmt.Sprintf("arrowValue: %T", arr))
}

// checkIndexBloom: the Output's index filters of the stitched file hold every value.
func checkIndexBloom(t *testing.T, out *Output, add *log.Add, fx *stitchFixture, cols []string) {
	t.Helper()
	require.Len(t, out.filters, len(cols))
	for i, col := range cols {
		f := out.filters[i].Filter
		require.Equal(t, add.Path, out.filters[i].DataPath)
		require.Equal(t, col, f.Column())
		for _, recs := range fx.batches {
			for _, rec := range recs {
				arr := rec.Column(lineSchema.FieldIndices(col)[0])
				for j := range arr.Len() {
					require.True(t, f.MightContain(arrowValue(arr, j)), "column %s", col)
				}
			}
		}
	}
}

// checkMergedStats compares the stitched file's statistics with those a Collector
// computes from all its rows: exact for numbers and dates, sound bounds for
// strings (cut to a prefix, so the merge of cut maxima may be wider).
func checkMergedStats(t *testing.T, out *Output, add *log.Add, fx *stitchFixture) {
	t.Helper()
	coll, err := stats.NewCollector(out.FileSchema(), nil, fx.spec.Stats)
	require.NoError(t, err)
	for _, recs := range fx.batches {
		for _, rec := range recs {
			require.NoError(t, coll.Update(rec))
		}
	}
	parser := stats.NewParser(out.FileSchema(), stats.ParseOptions{})
	brute, err := parser.Parse(mustJSON(t, coll))
	require.NoError(t, err)
	got, err := parser.Parse(add.Stats)
	require.NoError(t, err)
	require.Equal(t, brute.NumRecords, got.NumRecords)
	require.True(t, got.TightBounds)
	for key, b := range brute.Columns {
		g := got.Columns[key]
		require.NotNil(t, g, key)
		require.Equal(t, b.NullCount, g.NullCount, key)
		require.Equal(t, b.HasNullCount, g.HasNullCount, key)
		if b.Min.Kind() == value.KindString {
			c, ok := value.Compare(g.Min, b.Min)
			require.True(t, ok && c <= 0, "%s min %v above %v", key, g.Min, b.Min)
			c, ok = value.Compare(g.Max, b.Max)
			require.True(t, ok && c >= 0, "%s max %v below %v", key, g.Max, b.Max)
			continue
		}
		require.True(t, value.Equal(b.Min, g.Min), "%s min %v, brute force %v", key, g.Min, b.Min)
		require.True(t, value.Equal(b.Max, g.Max), "%s max %v, brute force %v", key, g.Max, b.Max)
	}
}

func mustJSON(t *testing.T, c *stats.Collector) string {
	s, err := c.ToJSON()
	require.NoError(t, err)
	return s
}

// Every rule of Stitch refuses with its name, before anything is stored.
func TestStitchRefusesWhatItCannotCopy(t *testing.T) {
	mem := memory.NewGoAllocator()
	base := Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: mem}
	otherSchema := arrow.NewSchema(append([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, lineSchema.Fields()[1:]...), nil)
	cases := []struct {
		name   string
		target func(Spec) Spec                                  // the stitching Output's spec
		source func(*testing.T, *stitchFixture)                 // damage the sources (nil: none)
		write  func(*testing.T, *storage.Memory) *stitchFixture // other sources (nil: writeSources of base)
		opts   StitchOptions
		rule   StitchRule
	}{
		{name: "other codec", target: func(s Spec) Spec { s.Codec = CodecSnappy; return s }, rule: RuleCodec},
		{name: "other Parquet schema", target: func(s Spec) Spec { s.Schema = otherSchema; return s }, rule: RuleSchema},
		{name: "other key-value metadata", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			return writeWith(t, st, base, WriterOptions{TargetRowGroupBytes: 48 << 10, KeyValueMetadata: map[string]string{"x": "y"}})
		}, rule: RuleSchema},
		{name: "no page index", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			return writeWith(t, st, base, WriterOptions{TargetRowGroupBytes: 48 << 10, DisablePageIndex: true})
		}, rule: RulePageIndex},
		{name: "another writer", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			return writePqarrow(t, st, base)
		}, rule: RuleWriter},
		{name: "small row groups", opts: StitchOptions{MinRowGroupBytes: 1 << 30}, rule: RuleRowGroupSize},
		{name: "default threshold: a quarter of the row-group target", target: func(s Spec) Spec { s.RowGroupBytes = 16 << 20; return s }, rule: RuleRowGroupSize},
		{name: "no native Bloom filter", target: func(s Spec) Spec { s.BloomColumns = []string{"id"}; return s }, rule: RuleBloom},
		{name: "no statistics", source: func(t *testing.T, fx *stitchFixture) { fx.sources[1].Stats = nil }, rule: RuleStats},
		{name: "bounds not tight", source: func(t *testing.T, fx *stitchFixture) { fx.sources[0].Stats.TightBounds = false }, rule: RuleStats},
		{name: "no nullCount", source: func(t *testing.T, fx *stitchFixture) {
			fx.sources[0].Stats.Columns[stats.Key("qty")].HasNullCount = false
		}, rule: RuleStats},
		{name: "no maximum", source: func(t *testing.T, fx *stitchFixture) {
			fx.sources[1].Stats.Columns[stats.Key("price")].Max = value.Null()
		}, rule: RuleStats},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			var fx *stitchFixture
			if tc.write != nil {
				fx = tc.write(t, store)
			} else {
				fx = writeSources(t, store, base, []int{5000, 5000})
			}
			if tc.source != nil {
				tc.source(t, fx)
			}
			spec := base
			if tc.target != nil {
				spec = tc.target(spec)
			}
			out, err := NewOutput(store, spec)
			require.NoError(t, err)
			before := objects(t, store)
			opts := tc.opts
			if opts.MinRowGroupBytes == 0 && !strings.HasPrefix(tc.name, "default threshold") {
				opts.MinRowGroupBytes = 1
			}
			_, err = out.Stitch(bg, FileOptions{}, fx.sources, opts)
			require.ErrorIs(t, err, ErrNotStitchable)
			var ne *NotStitchableError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, tc.rule, ne.Rule, "%v", err)
			require.Equal(t, before, objects(t, store), "stored something")
			require.Empty(t, out.Adds())
		})
	}
}

// writeWith writes two files with a bare Writer of opts (this package's writer, so
// created_by is the same) and log-like statistics from a Collector.
func writeWith(t *testing.T, store *storage.Memory, spec Spec, opts WriterOptions) *stitchFixture {
	t.Helper()
	fx := &stitchFixture{store: store, spec: spec}
	for i := range 2 {
		recs := lineBatches(spec.Allocator, 5000, 2500, uint64(i))
		var buf bytes.Buffer
		w, err := NewWriter(&buf, lineSchema, opts)
		require.NoError(t, err)
		coll, err := stats.NewCollector(lineSchema, nil, stats.Config{})
		require.NoError(t, err)
		for _, r := range recs {
			require.NoError(t, w.Write(r))
			require.NoError(t, coll.Update(r))
		}
		_, err = w.Close()
		require.NoError(t, err)
		fx.addSource(t, fmt.Sprintf("w-%d.parquet", i), buf.Bytes(), coll, recs)
	}
	return fx
}

// writePqarrow writes two files with plain pqarrow (another created_by).
func writePqarrow(t *testing.T, store *storage.Memory, spec Spec) *stitchFixture {
	t.Helper()
	fx := &stitchFixture{store: store, spec: spec}
	props, arrProps := WriterOptions{}.Properties(nil)
	props = parquet.NewWriterProperties(parquet.WithCompression(props.Compression()), parquet.WithPageIndexEnabled(true))
	for i := range 2 {
		recs := lineBatches(spec.Allocator, 5000, 5000, uint64(i))
		var buf bytes.Buffer
		fw, err := pqarrow.NewFileWriter(lineSchema, &buf, props, arrProps)
		require.NoError(t, err)
		coll, err := stats.NewCollector(lineSchema, nil, stats.Config{})
		require.NoError(t, err)
		for _, r := range recs {
			require.NoError(t, fw.Write(r))
			require.NoError(t, coll.Update(r))
		}
		require.NoError(t, fw.Close())
		fx.addSource(t, fmt.Sprintf("pq-%d.parquet", i), buf.Bytes(), coll, recs)
	}
	return fx
}

func (fx *stitchFixture) addSource(t *testing.T, path string, data []byte, coll *stats.Collector, recs []arrow.RecordBatch) {
	t.Helper()
	require.NoError(t, fx.store.Put(bg, path, data))
	st, err := stats.NewParser(lineSchema, stats.ParseOptions{}).Parse(mustJSON(t, coll))
	require.NoError(t, err)
	fx.sources = append(fx.sources, StitchSource{Path: path, Size: int64(len(data)), Stats: st})
	fx.batches = append(fx.batches, recs)
	t.Cleanup(func() { releaseBatches(recs) })
}

// failingCreator is a store whose streaming writers fail after limit bytes.
type failingCreator struct {
	*storage.Memory
	limit int
}

func (s *failingCreator) Create(ctx context.Context, p string) (storage.ObjectWriter, error) {
	w, err := s.Memory.Create(ctx, p)
	if err != nil {
		return nil, err
	}
	return &failingWriter{ObjectWriter: w, left: s.limit}, nil
}

type failingWriter struct {
	storage.ObjectWriter
	left int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errors.New("destination failed")
	}
	w.left -= len(p)
	return w.ObjectWriter.Write(p)
}

// Cancellation, a failing destination and a damaged source leave nothing stored.
func TestStitchLeavesNothingBehindOnFailure(t *testing.T) {
	mem := checkedMem(t)
	spec := Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: mem, BloomColumns: []string{"id"}}
	cases := []struct {
		name string
		run  func(*testing.T, *storage.Memory, *stitchFixture) error
		want error
	}{
		{"cancelled after the first source", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			out, err := NewOutput(st, spec)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			_, err = out.Stitch(ctx, FileOptions{}, fx.sources, StitchOptions{MinRowGroupBytes: 1, Progress: func(int) { cancel() }})
			return err
		}, context.Canceled},
		{"cancelled before", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			out, err := NewOutput(st, spec)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(bg)
			cancel()
			_, err = out.Stitch(ctx, FileOptions{}, fx.sources, StitchOptions{MinRowGroupBytes: 1})
			return err
		}, context.Canceled},
		{"failing destination", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			out, err := NewOutput(&failingCreator{Memory: st, limit: 100 << 10}, spec)
			require.NoError(t, err)
			_, err = out.Stitch(bg, FileOptions{}, fx.sources, StitchOptions{MinRowGroupBytes: 1})
			return err
		}, nil},
		{"source truncated", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			data, err := st.Get(bg, fx.sources[1].Path)
			require.NoError(t, err)
			require.NoError(t, st.Delete(bg, fx.sources[1].Path))
			require.NoError(t, st.Put(bg, fx.sources[1].Path, data[:len(data)/2]))
			out, err := NewOutput(st, spec)
			require.NoError(t, err)
			_, err = out.Stitch(bg, FileOptions{}, fx.sources, StitchOptions{MinRowGroupBytes: 1})
			return err
		}, ErrCorruptData},
		{"source missing", func(t *testing.T, st *storage.Memory, fx *stitchFixture) error {
			require.NoError(t, st.Delete(bg, fx.sources[0].Path))
			out, err := NewOutput(st, spec)
			require.NoError(t, err)
			_, err = out.Stitch(bg, FileOptions{}, fx.sources, StitchOptions{MinRowGroupBytes: 1})
			return err
		}, storage.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			fx := writeSources(t, store, spec, []int{6000, 6000})
			before := objects(t, store)
			err := tc.run(t, store, fx)
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			after := objects(t, store)
			for _, p := range after {
				require.Contains(t, before, p, "left %s behind", p)
			}
		})
	}
}

// A damaged source footer makes Stitch fail cleanly (ErrCorruptData, or
// ErrNotStitchable when the damage changes what the rules look at), never panic,
// and never publish a file that does not read back as the source does.
func TestStitchDamagedFooterFailsCleanly(t *testing.T) {
	mem := memory.NewGoAllocator()
	spec := Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: mem, BloomColumns: []string{"id"}}
	store := storage.NewMemory()
	fx := writeSources(t, store, spec, []int{6000})
	src := fx.sources[0]
	orig, err := store.Get(bg, src.Path)
	require.NoError(t, err)
	footerLen := int(uint32(orig[len(orig)-8]) | uint32(orig[len(orig)-7])<<8 | uint32(orig[len(orig)-6])<<16 | uint32(orig[len(orig)-5])<<24)
	footerStart := len(orig) - 8 - footerLen
	want := readRows(t, orig, lineSchema, nil)
	rnd := rand.New(rand.NewPCG(17, 4))
	iters := 400
	if testing.Short() {
		iters = 100
	}
	outcomes := map[string]int{}
	for i := range iters {
		damaged := slices.Clone(orig)
		for range 1 + rnd.IntN(3) {
			at := footerStart + rnd.IntN(footerLen+4) // the footer and its length
			damaged[at] ^= byte(1 + rnd.IntN(255))
		}
		st := storage.NewMemory()
		require.NoError(t, st.Put(bg, src.Path, damaged))
		out, err := NewOutput(st, spec)
		require.NoError(t, err)
		s := src
		s.Size = 0
		res, err := out.Stitch(bg, FileOptions{}, []StitchSource{s}, StitchOptions{MinRowGroupBytes: 1})
		switch {
		case err == nil:
			outcomes["stitched"]++
			p, _ := res.Add.DecodedPath()
			data, gerr := st.Get(bg, p)
			require.NoError(t, gerr)
			r, oerr := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
			require.NoError(t, oerr, "iteration %d: published a file that does not open", i)
			var got []string
			rerr := r.Read(bg, lineSchema, nil, func(rec arrow.RecordBatch, _ int64) error {
				got = append(got, rowStrings(rec)...)
				return nil
			})
			r.Close()
			require.NoError(t, rerr, "iteration %d: published a file that does not read", i)
			require.Equal(t, want, got, "iteration %d", i)
		case errors.Is(err, ErrCorruptData):
			outcomes["corrupt"]++
		case errors.Is(err, ErrNotStitchable):
			outcomes["not stitchable"]++
		default:
			t.Fatalf("iteration %d: %v", i, err)
		}
		if err != nil {
			require.Equal(t, []string{src.Path}, objects(t, st), "iteration %d stored something", i)
		}
	}
	t.Logf("outcomes: %v", outcomes)
	require.Greater(t, outcomes["corrupt"], 0)
}

var _ = io.EOF

// rangeCopier copies contiguous ranges as one and others one by one, landing each
// at pos.
func TestRangeCopierMergesContiguousRanges(t *testing.T) {
	src := []byte("0123456789abcdefghij")
	var reads int
	f := readerAtFunc(func(p []byte, off int64) (int, error) {
		reads++
		return bytes.NewReader(src).ReadAt(p, off)
	})
	var out bytes.Buffer
	cw := &countingWriter{w: &out}
	cp := &rangeCopier{w: cw, f: f, buf: make([]byte, 64)}
	var at []int64
	for _, r := range [][2]int64{{2, 3}, {5, 2}, {7, 1}, {12, 4}, {0, 2}, {2, 1}} {
		at = append(at, cp.pos())
		require.NoError(t, cp.add(r[0], r[1]))
	}
	require.NoError(t, cp.flush())
	require.Equal(t, "234567"+"cdef"+"012", out.String())
	require.Equal(t, []int64{0, 3, 5, 6, 10, 12}, at)
	require.Equal(t, 3, reads, "one read per contiguous run")
	short := &rangeCopier{w: cw, f: f, buf: make([]byte, 8)}
	require.NoError(t, short.add(18, 5)) // queued, not read yet
	require.ErrorIs(t, short.flush(), ErrCorruptData, "a range past the end of the source")
}

type readerAtFunc func(p []byte, off int64) (int, error)

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }

// Column-mapped files (nested struct included) stitch when the output writes the
// same physical schema, and are refused when the mapping differs (files written
// before a mapping change: other physical names or field ids).
func TestStitchColumnMappedFiles(t *testing.T) {
	ds, err := log.ParseSchema(mappedDelta)
	require.NoError(t, err)
	logical, err := log.ToArrow(ds, log.ArrowOptions{})
	require.NoError(t, err)
	mem := memory.NewGoAllocator()
	// otherIDs is the same schema with other column ids (as after a column was
	// dropped and added again): files written under it have other field ids.
	otherIDs, err := log.ParseSchema(strings.NewReplacer(`"delta.columnMapping.id":4`, `"delta.columnMapping.id":6`,
		`"delta.columnMapping.id":5`, `"delta.columnMapping.id":7`).Replace(mappedDelta))
	require.NoError(t, err)
	specOf := func(mode log.ColumnMapping, delta *log.StructType) Spec {
		return Spec{Schema: logical, FileSchema: mappedFileSchema(t, delta, mode), Allocator: mem, RowGroupBytes: 16 << 10}
	}
	cases := []struct {
		name            string
		sources, target log.ColumnMapping
		sourceDelta     *log.StructType
		rule            StitchRule // "" : stitches
	}{
		{"name into name", log.ColumnMappingName, log.ColumnMappingName, ds, ""},
		{"id into id", log.ColumnMappingID, log.ColumnMappingID, ds, ""},
		// Both modes write the same physical names and field ids.
		{"name into id", log.ColumnMappingName, log.ColumnMappingID, ds, ""},
		{"id into name", log.ColumnMappingID, log.ColumnMappingName, ds, ""},
		{"other field ids", log.ColumnMappingName, log.ColumnMappingName, otherIDs, RuleSchema},
		{"none into name", log.ColumnMappingNone, log.ColumnMappingName, ds, RuleSchema},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			src, err := NewOutput(store, specOf(tc.sources, tc.sourceDelta))
			require.NoError(t, err)
			sources, want := mappedSources(t, mem, logical, src)
			out, err := NewOutput(store, specOf(tc.target, ds))
			require.NoError(t, err)
			res, err := out.Stitch(bg, FileOptions{}, sources, StitchOptions{MinRowGroupBytes: 1})
			if tc.rule != "" {
				var ne *NotStitchableError
				require.ErrorAs(t, err, &ne)
				require.Equal(t, tc.rule, ne.Rule)
				return
			}
			require.NoError(t, err)
			add := res.Add
			p, _ := add.DecodedPath()
			data, err := store.Get(bg, p)
			require.NoError(t, err)
			read, err := log.ToArrow(ds, log.ArrowOptions{FieldIDs: tc.target == log.ColumnMappingID, MappingMetadata: true})
			require.NoError(t, err)
			require.Equal(t, want, readRows(t, data, read, nil))
			got, err := stats.NewParser(src.FileSchema(), stats.ParseOptions{}).Parse(add.Stats)
			require.NoError(t, err)
			require.Equal(t, int64(len(want)), got.NumRecords)
			require.NotNil(t, got.Column("col-c3", "col-d4"), "statistics keyed by physical names")
			require.Equal(t, value.Int64(-2498), got.Column("col-c3", "col-d4").Min) // row 2499 has a null struct
		})
	}
}

// mappedSources writes two files of mappedBatch rows (2,000 and 2,500) through src
// and returns them as stitch sources with their parsed statistics, and their rows.
func mappedSources(t *testing.T, mem memory.Allocator, logical *arrow.Schema, src *Output) ([]StitchSource, []string) {
	t.Helper()
	parser := stats.NewParser(src.FileSchema(), stats.ParseOptions{})
	var sources []StitchSource
	var want []string
	for i := range 2 {
		rec := mappedBatch(t, mem, logical, 2000+500*i)
		f, err := src.Create(bg, FileOptions{})
		require.NoError(t, err)
		require.NoError(t, f.Write(rec))
		add, err := f.Close(bg)
		require.NoError(t, err)
		want = append(want, rowStrings(rec)...)
		rec.Release()
		st, err := parser.Parse(add.Stats)
		require.NoError(t, err)
		p, _ := add.DecodedPath()
		sources = append(sources, StitchSource{Path: p, Size: add.Size, Stats: st})
	}
	return sources, want
}

// A destination that fails while the footer is written (its last bytes) fails the
// stitched and the merged file with that error, and leaves nothing stored.
func TestStitchReturnsFooterWriteErrors(t *testing.T) {
	mem := checkedMem(t)
	spec := Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: mem}
	for _, merge := range []bool{false, true} {
		t.Run(fmt.Sprintf("merge=%v", merge), func(t *testing.T) {
			store := storage.NewMemory()
			fx := writeSources(t, store, spec, []int{6000, 6000})
			opts := StitchOptions{MinRowGroupBytes: 1, MergeRowGroups: merge}
			if merge {
				opts.MinRowGroupBytes = 1 << 40 // every row group merged
			}
			// The file's size, from a stitch that succeeds.
			out, err := NewOutput(storage.NewMemory(), spec)
			require.NoError(t, err)
			for _, s := range fx.sources {
				data, err := store.Get(bg, s.Path)
				require.NoError(t, err)
				require.NoError(t, out.store.Put(bg, s.Path, data))
			}
			res, err := out.Stitch(bg, FileOptions{}, fx.sources, opts)
			require.NoError(t, err)
			size := res.Add.Size

			before := objects(t, store)
			out, err = NewOutput(&failingCreator{Memory: store, limit: int(size) - 4}, spec)
			require.NoError(t, err)
			_, err = out.Stitch(bg, FileOptions{}, fx.sources, opts)
			require.ErrorContains(t, err, "destination failed")
			require.ErrorContains(t, err, "writing the footer")
			require.Equal(t, before, objects(t, store), "a failed stitch left files behind")
		})
	}
}
