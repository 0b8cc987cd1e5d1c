package log

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/storage"
)

// pageTestRequired are the fields an action needs to be valid (non-null, non-empty).
var pageTestRequired = map[string]bool{"add.path": true, "remove.path": true, "txn.appId": true,
	"domainMetadata.domain": true, "sidecar.path": true}

// randPageString is a short random string: empty, ASCII, escapes, multi-byte.
func randPageString(r *rand.Rand, nonEmpty bool) string {
	const alphabet = "ab=/%é\"\\ z0"
	n := r.IntN(6)
	if nonEmpty || r.IntN(20) != 0 {
		n++
	}
	var b strings.Builder
	rs := []rune(alphabet)
	for range n {
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

// randPageFill appends one random value (null with probability nullP, except for the
// fields valid rows need) to b, the builder of field path.
func randPageFill(b array.Builder, r *rand.Rand, path string, nullP float64, valid bool) {
	req := valid && pageTestRequired[path]
	if !req && r.Float64() < nullP {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.StructBuilder:
		bb.Append(true)
		st := bb.Type().(*arrow.StructType)
		for i := 0; i < bb.NumField(); i++ {
			randPageFill(bb.FieldBuilder(i), r, path+"."+st.Field(i).Name, nullP, valid)
		}
	case *array.MapBuilder:
		bb.Append(true)
		for range r.IntN(4) {
			bb.KeyBuilder().(*array.StringBuilder).Append(randPageString(r, false))
			randPageFill(bb.ItemBuilder(), r, path+".value", nullP, valid)
		}
	case *array.ListBuilder:
		bb.Append(true)
		for range r.IntN(3) {
			randPageFill(bb.ValueBuilder(), r, path+".element", nullP, valid)
		}
	case *array.StringBuilder:
		bb.Append(randPageString(r, req))
	case *array.BinaryBuilder:
		bb.Append([]byte(randPageString(r, req)))
	case *array.Int64Builder:
		bb.Append(r.Int64N(1<<40) - 1000)
	case *array.Int32Builder:
		bb.Append(r.Int32N(1<<20) - 100)
	case *array.Int16Builder:
		bb.Append(int16(r.IntN(1000)))
	case *array.BooleanBuilder:
		bb.Append(r.IntN(2) == 0)
	case *array.Float64Builder:
		bb.Append(r.Float64())
	default:
		panic(fmt.Sprintf("randPageFill: %T", b))
	}
}

// randCheckpointParquet writes rows random checkpoint rows of schema sch in row
// groups of rowGroup: each row one action (add with probability addP, else another
// top-level column), some rows with none or two. valid keeps actions valid.
func randCheckpointParquet(t testing.TB, r *rand.Rand, sch *arrow.Schema, rows, rowGroup int, addP, nullP float64, valid bool) []byte {
	t.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer rb.Release()
	addCol := sch.FieldIndices("add")[0]
	for range rows {
		pick := addCol
		if r.Float64() >= addP {
			pick = r.IntN(len(sch.Fields()))
		}
		second := -1
		if !valid && pick != addCol && r.IntN(15) == 0 {
			second = addCol // add takes precedence (two other actions: the Arrow path picks either)
		}
		for i, f := range sch.Fields() {
			if i == pick || i == second {
				randPageFill(rb.Field(i), r, f.Name, nullP, valid)
				continue
			}
			rb.Field(i).AppendNull()
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(int64(rowGroup)), parquet.WithDictionaryDefault(r.IntN(2) == 0),
		parquet.WithDataPageSize(int64(64+r.IntN(4096))))
	fw, err := pqarrow.NewFileWriter(sch, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openTestCheckpoint opens checkpoint bytes as the reader does.
func openTestCheckpoint(t testing.TB, data []byte) *cpFile {
	t.Helper()
	mem := bytes.NewReader(data)
	rdr, fr, cols, err := openCheckpointParquet(io.NewSectionReader(mem, 0, int64(len(data))), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f := &cpFile{path: "test.checkpoint.parquet", rdr: rdr, fr: fr, cols: cols}
	if fr != nil {
		f.layout = newFilePageLayout(rdr, fr, cols, mem)
	}
	return f
}

// segEvents renders decoded actions as JSON, then the error.
func segEvents(t *testing.T, res cpResult) []string {
	t.Helper()
	var out []string
	for _, s := range res.segs {
		if s.adds == nil {
			out = append(out, actionEvent(t, &s.act))
			continue
		}
		for k := range s.adds {
			out = append(out, actionEvent(t, &Action{Add: &s.adds[k]}))
		}
	}
	if res.err != nil {
		out = append(out, "error: "+res.err.Error())
	}
	return out
}

// comparePaths decodes every row group of data through the page decoder (falling
// back as the reader does) and through pqarrow alone, and requires the same actions
// and errors. It returns how many row groups the page decoder took itself.
func comparePaths(t *testing.T, data []byte) (fast, groups int) {
	t.Helper()
	f := openTestCheckpoint(t, data)
	defer f.close()
	ctx := context.Background()
	var sc pageScratch
	var pv partitionInterner
	for rg := 0; rg < f.rdr.NumRowGroups(); rg++ {
		groups++
		want := segEvents(t, decodeRowGroupArrow(ctx, f, rg, &pv))
		got := segEvents(t, decodeRowGroup(ctx, f, rg, &sc))
		if i := firstDifference(want, got); i >= 0 {
			t.Fatalf("row group %d: action %d differs:\n arrow: %s\n pages: %s", rg, i, eventAt(want, i), eventAt(got, i))
		}
		if f.layout != nil {
			if _, err := decodePages(ctx, f, rg, &sc); err == nil {
				fast++
			} else if testing.Verbose() {
				t.Logf("row group %d: %v", rg, err)
			}
		} else if testing.Verbose() {
			t.Logf("no page layout")
		}
	}
	return fast, groups
}

// shuffledCheckpointSchema is checkpointSchema with its top-level columns and add's
// fields in random order, some of add's fields left out, integers narrowed, binary
// in place of string.
func shuffledCheckpointSchema(r *rand.Rand) *arrow.Schema {
	base := checkpointSchema(nil, nil)
	top := base.Fields()
	r.Shuffle(len(top), func(i, j int) { top[i], top[j] = top[j], top[i] })
	for i, f := range top {
		if f.Name != "add" {
			continue
		}
		var fs []arrow.Field
		for _, af := range f.Type.(*arrow.StructType).Fields() {
			if af.Name != "path" && r.IntN(5) == 0 {
				continue
			}
			switch {
			case af.Type.ID() == arrow.INT64 && r.IntN(3) == 0:
				af.Type = arrow.PrimitiveTypes.Int32
			case af.Type.ID() == arrow.STRING && r.IntN(4) == 0:
				af.Type = arrow.BinaryTypes.Binary
			}
			fs = append(fs, af)
		}
		r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		top[i] = nf("add", arrow.StructOf(fs...))
	}
	return arrow.NewSchema(top, nil)
}

// TestCheckpointPagesMatchArrow is the page decoder's differential test: random
// checkpoints (every action kind, nulls at every level, empty and null maps,
// deletion vectors, row tracking fields; the writer's schema, a shuffled and
// narrowed one, one with stats_parsed) decoded row group by row group by the page
// decoder and by pqarrow give the same actions and errors; on valid checkpoints of
// the writer's schema the page decoder takes every row group itself.
func TestCheckpointPagesMatchArrow(t *testing.T) {
	defer func(v, b int) { parallelLeafRows, splitLeafBytes = v, b }(parallelLeafRows, splitLeafBytes)
	statsParsed := arrow.StructOf(nf("numRecords", i64), nf("minValues", arrow.StructOf(nf("id", i64))))
	iters := 30
	if testing.Short() {
		iters = 12
	}
	for it := range iters {
		r := rand.New(rand.NewPCG(uint64(it), 7))
		rows := 1 + r.IntN(400)
		rowGroup := 1 + r.IntN(120)
		if rows/rowGroup > 40 {
			rowGroup = rows / 40 // at most ~40 row groups (each decoded four times)
		}
		nullP := []float64{0, 0.1, 0.4}[r.IntN(3)]
		addP := []float64{1, 0.95, 0.6}[r.IntN(3)]
		// every other seed: leaves read on several goroutines, the kept strings by row ranges
		parallelLeafRows, splitLeafBytes = []int{1 << 16, 1}[it%2], []int{4 << 20, 1}[it%2]
		t.Run(fmt.Sprintf("seed%d", it), func(t *testing.T) {
			// The writer's schema, valid rows: the page decoder takes every row group.
			data := randCheckpointParquet(t, r, checkpointSchema(nil, nil), rows, rowGroup, addP, nullP, true)
			fast, groups := comparePaths(t, data)
			if fast != groups {
				t.Fatalf("page decoder took %d of %d row groups of a valid checkpoint", fast, groups)
			}
			// Anything goes: nulls in required fields, rows with two actions.
			comparePaths(t, randCheckpointParquet(t, r, checkpointSchema(nil, nil), rows, rowGroup, addP, nullP+0.1, false))
			// Reordered, narrowed, binary: the page decoder or the fallback, same actions.
			comparePaths(t, randCheckpointParquet(t, r, shuffledCheckpointSchema(r), rows, rowGroup, addP, nullP, r.IntN(2) == 0))
			// stats_parsed: always the fallback.
			data = randCheckpointParquet(t, r, checkpointSchema(nil, statsParsed), rows, rowGroup, addP, nullP, true)
			if fast, _ := comparePaths(t, data); fast != 0 {
				t.Fatalf("page decoder took %d row groups of a checkpoint with stats_parsed", fast)
			}
		})
	}
}

// TestCheckpointPagesSplitLeaves decodes one large row group whose kept string
// leaves (path, stats, clusteringProvider) are each read as one range of rows per
// worker, the ranges starting inside pages and at page starts, with and without
// dictionaries: random checkpoints (nulls, empty strings, maps, deletion vectors,
// other actions) give the same actions and errors as pqarrow, on 2 to 5 workers, and
// the split actually happens.
func TestCheckpointPagesSplitLeaves(t *testing.T) {
	defer func(v, b int) { parallelLeafRows, splitLeafBytes = v, b }(parallelLeafRows, splitLeafBytes)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	parallelLeafRows, splitLeafBytes = 100, 1
	iters := 8
	if testing.Short() {
		iters = 4
	}
	for it := range iters {
		r := rand.New(rand.NewPCG(uint64(it), 11))
		workers := 2 + it%4
		rows := 1500 + r.IntN(2500)
		nullP := []float64{0, 0.1, 0.4}[it%3]
		addP := []float64{1, 0.95, 0.6}[r.IntN(3)]
		t.Run(fmt.Sprintf("seed%d_workers%d", it, workers), func(t *testing.T) {
			runtime.GOMAXPROCS(workers)
			data := randCheckpointParquet(t, r, checkpointSchema(nil, nil), rows, rows, addP, nullP, true)
			if fast, groups := comparePaths(t, data); groups != 1 || fast != 1 {
				t.Fatalf("page decoder took %d of %d row groups", fast, groups)
			}
			// The path leaf was read as one range per worker, consecutive.
			f := openTestCheckpoint(t, data)
			defer f.close()
			var sc pageScratch
			if _, err := decodePages(context.Background(), f, 0, &sc); err != nil {
				t.Fatal(err)
			}
			var ranges [][2]int
			for _, tk := range sc.tasks {
				if tk.lf.col == f.layout.path.col {
					if !tk.part {
						t.Fatalf("path read whole, not by ranges")
					}
					ranges = append(ranges, [2]int{tk.r0, tk.r1})
				}
			}
			if len(ranges) != workers || ranges[0][0] != 0 || ranges[len(ranges)-1][1] != rows {
				t.Fatalf("path ranges %v for %d rows on %d workers", ranges, rows, workers)
			}
			for i := 1; i < len(ranges); i++ {
				if ranges[i][0] != ranges[i-1][1] {
					t.Fatalf("path ranges %v not consecutive", ranges)
				}
			}
			// Invalid rows and other schemas: the same actions and errors either way.
			comparePaths(t, randCheckpointParquet(t, r, checkpointSchema(nil, nil), rows, rows, addP, nullP+0.1, false))
			comparePaths(t, randCheckpointParquet(t, r, shuffledCheckpointSchema(r), rows, rows, addP, nullP, r.IntN(2) == 0))
		})
	}
}

// pagesSnapshot is a snapshot of n files with partition values (some null), tags,
// deletion vectors and row tracking fields, its stats as JSON only.
func pagesSnapshot(t *testing.T, n int) (*Log, *Snapshot) {
	t.Helper()
	l := New(memStore())
	md := testMetadata()
	md.PartitionColumns = []string{"part"}
	md.Configuration = map[string]string{PropCheckpointInterval: "1000"}
	adds := make([]*Add, n)
	for i := range adds {
		part := fmt.Sprintf("p%02d", i%7)
		a := &Add{Path: fmt.Sprintf("part=%s/f-%08d.parquet", part, i), PartitionValues: map[string]*string{"part": &part},
			Size: 1000 + int64(i), ModificationTime: int64(i), DataChange: i%3 != 0,
			Stats: fmt.Sprintf(`{"numRecords":10,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i*10, i*10+9)}
		switch i % 5 {
		case 0:
			a.PartitionValues = map[string]*string{"part": nil}
			a.Stats = ""
		case 1:
			a.Tags = map[string]string{"k": fmt.Sprint(i), "z": ""}
			a.BaseRowID, a.DefaultRowCommitVersion = ptr(int64(i*10)), ptr(int64(3))
		case 2:
			a.DeletionVector = &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: fmt.Sprintf("ab%05d", i),
				Offset: ptr(int32(i)), SizeInBytes: 40, Cardinality: int64(i % 9)}
			if i%2 == 0 {
				a.DeletionVector.MaxRowIndex = ptr(int64(i))
			}
		case 3:
			a.ClusteringProvider = "liquid"
		}
		adds[i] = a
	}
	return createdSnapshot(t, l, md, adds)
}

// TestCheckpointPagesWrittenCheckpoint decodes checkpoints this package writes by
// both paths: with JSON stats (the page decoder takes every row group) and with
// stats_parsed (the multi-part fixture: pqarrow takes every row group).
func TestCheckpointPagesWrittenCheckpoint(t *testing.T) {
	defer func(rows, par int) { checkpointRowGroupRows, parallelLeafRows = rows, par }(checkpointRowGroupRows, parallelLeafRows)
	parallelLeafRows = 100
	checkpointRowGroupRows = 113
	l, snap := pagesSnapshot(t, 1500)
	data, _, err := l.encodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	// One row group larger than pqarrow's batch, the other actions in its first rows:
	// pqarrow reads only the first batch, the rest are adds.
	checkpointRowGroupRows = 1 << 20
	bl, bsnap := pagesSnapshot(t, 40000)
	big, _, err := bl.encodeCheckpoint(bsnap)
	if err != nil {
		t.Fatal(err)
	}
	checkpointRowGroupRows = 113
	for i, data := range [][]byte{data, writtenCheckpoint(t, ""), big} {
		fast, groups := comparePaths(t, data)
		if fast != groups || groups == 0 {
			t.Fatalf("checkpoint %d: page decoder took %d of %d row groups", i, fast, groups)
		}
	}
	_, _, parts := parallelFixture(t)
	for i, data := range parts {
		if fast, _ := comparePaths(t, data); fast != 0 {
			t.Fatalf("part %d (stats_parsed): page decoder took %d row groups", i, fast)
		}
	}
	// A multi-part checkpoint read through the reader, with and without the page decoder.
	s := memStore()
	ml := New(s)
	cp := checkpointSet{version: 1, kind: cpMultiPart}
	for i, d := range [][]byte{data, parts[1], data} {
		p := fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", logDir, 1, i+1, 3)
		if err := s.Put(context.Background(), p, d); err != nil {
			t.Fatal(err)
		}
		cp.files = append(cp.files, storage.ObjectInfo{Path: p, Size: int64(len(d))})
	}
	want := readAllEvents(t, ml, cp, false)
	got := readAllEvents(t, ml, cp, true)
	if i := firstDifference(want, got); i >= 0 {
		t.Fatalf("action %d differs:\n arrow: %s\n pages: %s", i, eventAt(want, i), eventAt(got, i))
	}
}

func readAllEvents(t *testing.T, l *Log, cp checkpointSet, pages bool) []string {
	t.Helper()
	defer func(v bool) { pageDecoding = v }(pageDecoding)
	pageDecoding = pages
	var out []string
	err := l.readCheckpoint(context.Background(), cp, func(rows int64) { out = append(out, fmt.Sprintf("rows %d", rows)) },
		func(a *Action) error {
			out = append(out, actionEvent(t, a))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzCheckpointPages decodes fuzzed checkpoint bytes by the page decoder and by
// pqarrow: neither panics, and when pqarrow reads a row group without an error the
// reader's actions are pqarrow's.
func FuzzCheckpointPages(f *testing.F) {
	for _, s := range fuzzCheckpointSeeds(f) {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	f.Add(randCheckpointParquet(f, r, checkpointSchema(nil, nil), 50, 17, 0.9, 0.2, true))
	defer func(v, b int) { parallelLeafRows, splitLeafBytes = v, b }(parallelLeafRows, splitLeafBytes)
	f.Fuzz(func(t *testing.T, data []byte) {
		// every other input: leaves on several goroutines, the kept strings by row ranges
		parallelLeafRows, splitLeafBytes = []int{1 << 16, 1}[len(data)%2], []int{4 << 20, 1}[len(data)%2]
		mem := bytes.NewReader(data)
		rdr, fr, cols, err := openCheckpointParquet(io.NewSectionReader(mem, 0, int64(len(data))), int64(len(data)))
		if err != nil || fr == nil {
			if rdr != nil {
				_ = rdr.Close()
			}
			return
		}
		cf := &cpFile{path: "fuzz", rdr: rdr, fr: fr, cols: cols, layout: newFilePageLayout(rdr, fr, cols, mem)}
		defer cf.close()
		ctx := context.Background()
		var sc pageScratch
		var pv partitionInterner
		for rg := 0; rg < min(rdr.NumRowGroups(), 8); rg++ {
			want := decodeRowGroupArrow(ctx, cf, rg, &pv)
			got := decodeRowGroup(ctx, cf, rg, &sc)
			if want.hasPanic || got.hasPanic {
				t.Fatalf("row group %d: panic: %v / %v", rg, want.panicked, got.panicked)
			}
			if want.err != nil {
				continue
			}
			w, g := segEvents(t, want), segEvents(t, got)
			if i := firstDifference(w, g); i >= 0 {
				t.Fatalf("row group %d: action %d differs:\n arrow: %s\n pages: %s", rg, i, eventAt(w, i), eventAt(g, i))
			}
		}
	})
}
