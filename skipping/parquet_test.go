package skipping

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
)

// parquetSchema is propSchema plus a string column whose values can exceed the
// writer's 4096-byte statistics limit (arrow-go G3).
func parquetSchema() *arrow.Schema {
	fs := propSchema().Fields()
	fs = append(fs, arrow.Field{Name: "big", Type: arrow.BinaryTypes.String, Nullable: true})
	return arrow.NewSchema(fs, nil)
}

var bigStrings = []string{"a", "m", strings.Repeat("z", 5000), strings.Repeat("b", 4097), "c", strings.Repeat("a", 6000) + "b"}

// genClusteredRows draws rows in chunks whose values come from a small per-chunk
// pool, so row groups and pages have narrow ranges and skipping happens.
func genClusteredRows(r *rand.Rand, sc *arrow.Schema, n, chunk int) []row {
	var out []row
	ls := leaves(sc)
	for len(out) < n {
		pools := map[string][]value.Value{}
		for _, l := range ls {
			k := strings.Join(l.path, "\x00")
			nullPct := []int{0, 0, 20, 100}[r.IntN(4)]
			for j := 0; j < 2; j++ {
				if k == "big" {
					v := value.String(bigStrings[r.IntN(len(bigStrings))])
					if r.IntN(100) < nullPct {
						v = value.Null()
					}
					pools[k] = append(pools[k], v)
					continue
				}
				pools[k] = append(pools[k], genValue(r, l.dt, nullPct))
			}
		}
		for i := 0; i < chunk && len(out) < n; i++ {
			rw := row{"st": value.Bool(true)}
			for k, pool := range pools {
				rw[k] = pool[r.IntN(len(pool))]
			}
			if r.IntN(12) == 0 {
				rw["st"], rw["st\x00x"] = value.Bool(false), value.Null()
			}
			out = append(out, rw)
		}
	}
	return out
}

func writeParquet(t testing.TB, rec arrow.RecordBatch, rgRows int64, decimalsAsInt bool) []byte {
	return writeParquetWith(t, rec,
		parquet.WithMaxRowGroupLength(rgRows),
		parquet.WithDataPageSize(1), // a page per write batch
		parquet.WithBatchSize(8),
		parquet.WithDictionaryDefault(false),
		parquet.WithPageIndexEnabled(true),
		parquet.WithStoreDecimalAsInteger(decimalsAsInt),
	)
}

// writeParquetWith writes rec as one Parquet file with the given writer properties.
func writeParquetWith(t testing.TB, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRowGroupAndPageVerdictsAreSound writes random clustered data to Parquet
// (small row groups, small pages, page index on, strings over 4096 bytes, NaN) and
// checks S1/S2 for row groups and S1 for pages against the exact evaluator.
func TestRowGroupAndPageVerdictsAreSound(t *testing.T) {
	sc := parquetSchema()
	ls := leaves(sc)
	r := rand.New(rand.NewPCG(7, 11))
	mem := memory.NewGoAllocator()
	nFiles, nPreds := 6, propertyN(t, 150)
	var rgChecks, rgSkipped, rgMust, pageRowsKept, pageRowsTotal, pages int64
	for fi := 0; fi < nFiles; fi++ {
		rows := genClusteredRows(r, sc, 300+r.IntN(200), 8)
		rec := buildRecord(mem, sc, rows)
		data := writeParquet(t, rec, int64(24+8*r.IntN(4)), fi%2 == 0)
		rdr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		md := rdr.MetaData()
		colIndex := LeafIndexByPath(md)
		starts := make([]int64, md.NumRowGroups()+1)
		for i := 0; i < md.NumRowGroups(); i++ {
			starts[i+1] = starts[i] + md.RowGroup(i).NumRows()
		}
		for k := 0; k < nPreds; k++ {
			e := genPredicate(r, ls, 2)
			b, err := expr.Bind(e, sc)
			if err != nil {
				t.Fatalf("Bind(%s): %v", e, err)
			}
			sel, err := b.Evaluate(rec)
			if err != nil {
				t.Fatal(err)
			}
			vs := EvaluateRowGroups(b, md, colIndex)
			for g, v := range vs {
				lo, hi := starts[g], starts[g+1]
				matched := int64(0)
				for i := lo; i < hi; i++ {
					if sel.Contains(int(i)) {
						matched++
					}
				}
				switch {
				case v == CannotMatch && matched > 0:
					t.Fatalf("S1 violated: row group %d of file %d skipped for %s but %d rows match", g, fi, b, matched)
				case v == MustMatch && matched != hi-lo:
					t.Fatalf("S2 violated: row group %d of file %d must-match for %s but %d of %d rows match", g, fi, b, matched, hi-lo)
				}
				rgChecks++
				if v == CannotMatch {
					rgSkipped++
				}
				if v == MustMatch {
					rgMust++
				}
				rr, err := EvaluatePages(b, rdr, g, colIndex)
				if err != nil {
					t.Fatal(err)
				}
				for i := lo; i < hi; i++ {
					if sel.Contains(int(i)) && !rr.Contains(i-lo) {
						t.Fatalf("S1 violated: row %d of row group %d (file %d) matches %s but pages keep only %v", i-lo, g, fi, b, rr)
					}
				}
				pageRowsKept += rr.Rows()
				pageRowsTotal += hi - lo
				pages++
			}
		}
		rec.Release()
		_ = rdr.Close()
	}
	t.Logf("%d row-group checks: %d cannot-match, %d must-match; pages kept %d of %d rows", rgChecks, rgSkipped, rgMust, pageRowsKept, pageRowsTotal)
	if rgSkipped == 0 || rgMust == 0 || pageRowsKept == pageRowsTotal {
		t.Fatalf("generator too weak: %d row groups skipped, %d must, page rows kept %d/%d", rgSkipped, rgMust, pageRowsKept, pageRowsTotal)
	}
}

func singleColumnFile(t *testing.T, field arrow.Field, fill func(b array.Builder)) *file.Reader {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{field}, nil)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer rb.Release()
	fill(rb.Field(0))
	rec := rb.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec, 1000, false)
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

func TestRowGroupFooterTraps(t *testing.T) {
	cases := []struct {
		name  string
		field arrow.Field
		fill  func(array.Builder)
		pred  string
		want  Verdict
	}{
		{"G3: a max dropped for size is unknown, not empty", arrow.Field{Name: "s", Type: arrow.BinaryTypes.String},
			func(b array.Builder) {
				b.(*array.StringBuilder).AppendValues([]string{"a", strings.Repeat("z", 5000), "b"}, nil)
			}, "s > 'c'", MightMatch},
		{"G3: the kept min still skips", arrow.Field{Name: "s", Type: arrow.BinaryTypes.String},
			func(b array.Builder) {
				b.(*array.StringBuilder).AppendValues([]string{"b", strings.Repeat("z", 5000)}, nil)
			}, "s < 'a'", CannotMatch},
		{"G4: float max ignores NaN, so > v might match", arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64},
			func(b array.Builder) {
				b.(*array.Float64Builder).AppendValues([]float64{-2.5, math.NaN(), 1.5}, nil)
			}, "f > 100", MightMatch},
		{"G4: = NaN might match", arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64},
			func(b array.Builder) {
				b.(*array.Float64Builder).AppendValues([]float64{-2.5, math.NaN(), 1.5}, nil)
			}, "f = DOUBLE 'NaN'", MightMatch},
		{"G4: float min is still a lower bound", arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64},
			func(b array.Builder) {
				b.(*array.Float64Builder).AppendValues([]float64{-2.5, math.NaN(), 1.5}, nil)
			}, "f < -3", CannotMatch},
		{"G4: float < v is never must (NaN may hide)", arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64},
			func(b array.Builder) {
				b.(*array.Float64Builder).AppendValues([]float64{-2.5, 1.5}, nil)
			}, "f < 100", MightMatch},
		{"all-null chunk cannot match a comparison", arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.AppendNull(); b.AppendNull() }, "x = 1", CannotMatch},
		{"all-null chunk must match IS NULL", arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.AppendNull(); b.AppendNull() }, "x IS NULL", MustMatch},
		{"decimal FLBA bounds skip", arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}},
			func(b array.Builder) {
				b.(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(-150), decimal128.FromI64(250)}, nil)
			}, "d > 2.5", CannotMatch},
		{"decimal FLBA negative min is two's complement", arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}},
			func(b array.Builder) {
				b.(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(-150), decimal128.FromI64(250)}, nil)
			}, "d >= -1.5", MustMatch},
		{"date bounds skip", arrow.Field{Name: "dt", Type: arrow.FixedWidthTypes.Date32},
			func(b array.Builder) { b.(*array.Date32Builder).AppendValues([]arrow.Date32{100, 200}, nil) },
			"dt < DATE '1970-04-10'", CannotMatch},
		{"int8 bounds must match", arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int8},
			func(b array.Builder) { b.(*array.Int8Builder).AppendValues([]int8{-5, 7}, nil) }, "b BETWEEN -5 AND 7", MustMatch},
		{"int bounds must match", arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			func(b array.Builder) { b.(*array.Int64Builder).AppendValues([]int64{5, 9}, nil) }, "x BETWEEN 5 AND 9", MustMatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdr := singleColumnFile(t, tc.field, tc.fill)
			defer rdr.Close()
			b, err := expr.Bind(expr.MustParse(tc.pred), arrow.NewSchema([]arrow.Field{tc.field}, nil))
			if err != nil {
				t.Fatal(err)
			}
			got := EvaluateRowGroups(b, rdr.MetaData(), LeafIndexByPath(rdr.MetaData()))
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("EvaluateRowGroups(%s) = %v, want [%v]", b, got, tc.want)
			}
		})
	}
}

func TestRowRangesAlgebra(t *testing.T) {
	a := RowRanges{{0, 10}, {20, 30}}
	b := RowRanges{{5, 25}, {30, 40}}
	if got := a.Union(b); len(got) != 1 || got[0] != (RowRange{0, 40}) {
		t.Fatalf("union = %v", got)
	}
	if got := a.Intersect(b); len(got) != 2 || got[0] != (RowRange{5, 10}) || got[1] != (RowRange{20, 25}) {
		t.Fatalf("intersect = %v", got)
	}
	if a.Rows() != 20 || !a.Contains(25) || a.Contains(15) || a.Contains(30) {
		t.Fatalf("Rows/Contains wrong for %v", a)
	}
}

func TestEvaluatePagesWithoutPageIndexKeepsEverything(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer rb.Release()
	for i := 0; i < 100; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(parquet.WithBatchSize(10), parquet.WithDataPageSize(1)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	b, err := expr.Bind(expr.MustParse("x > 1000"), sc)
	if err != nil {
		t.Fatal(err)
	}
	ci := LeafIndexByPath(rdr.MetaData())
	rr, err := EvaluatePages(b, rdr, 0, ci)
	if err != nil || rr.Rows() != 100 {
		t.Fatalf("without a page index: %v, %v; want all 100 rows", rr, err)
	}
	if v := EvaluateRowGroups(b, rdr.MetaData(), ci); v[0] != CannotMatch {
		t.Fatalf("row group verdict %v, want CannotMatch from footer stats", v[0])
	}
	if _, err := EvaluatePages(b, rdr, 3, ci); !errors.Is(err, ErrRowGroupRange) {
		t.Fatalf("row group 3 of 1: err = %v", err)
	}
}

func TestEvaluatePagesSkipsPages(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "y", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer rb.Release()
	for i := 0; i < 64; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.Int64Builder).Append(int64(63 - i))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	rdr, err := file.NewParquetReader(bytes.NewReader(writeParquet(t, rec, 1000, false)))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	ci := LeafIndexByPath(rdr.MetaData())
	cases := []struct {
		filter string
		want   RowRanges
	}{
		{"x >= 20 AND x < 30", RowRanges{{16, 32}}},
		{"x < 8 OR y < 8", RowRanges{{0, 8}, {56, 64}}},
		{"x < 8 AND y < 8", nil},
		{"x = 100", nil},
		{"x IS NOT NULL", RowRanges{{0, 64}}},
		{"NOT (x >= 8)", RowRanges{{0, 8}}},
	}
	for _, tc := range cases {
		b, err := expr.Bind(expr.MustParse(tc.filter), sc)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := EvaluatePages(b, rdr, 0, ci)
		if err != nil {
			t.Fatal(err)
		}
		if len(rr) != len(tc.want) || (len(rr) > 0 && !slices.Equal(rr, tc.want)) {
			t.Errorf("%s: pages keep %v, want %v", tc.filter, rr, tc.want)
		}
	}
}

func TestRowGroupTimestampUnitsRoundOutward(t *testing.T) {
	for _, unit := range []arrow.TimeUnit{arrow.Nanosecond, arrow.Millisecond} {
		phys := arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}}
		// 1.5 and 2.5 micro-units: ns values 1500/2500; ms values 1/2 (1000/2000 us)
		vals := []arrow.Timestamp{1500, 2500}
		if unit == arrow.Millisecond {
			vals = []arrow.Timestamp{1, 2}
		}
		rdr := singleColumnFile(t, phys, func(b array.Builder) { b.(*array.TimestampBuilder).AppendValues(vals, nil) })
		logical := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}}, nil)
		cases := []struct {
			filter string
			ns, ms Verdict
		}{
			{"ts < TIMESTAMP '1970-01-01 00:00:00.000001Z'", CannotMatch, CannotMatch},
			{"ts <= TIMESTAMP '1970-01-01 00:00:00.000001Z'", MightMatch, CannotMatch},
			{"ts > TIMESTAMP '1970-01-01 00:00:00.000003Z'", CannotMatch, MustMatch},
			{"ts > TIMESTAMP '1970-01-01 00:00:00.002Z'", CannotMatch, CannotMatch},
			{"ts >= TIMESTAMP '1970-01-01 00:00:00.000001Z'", MustMatch, MustMatch},
		}
		for _, tc := range cases {
			b, err := expr.Bind(expr.MustParse(tc.filter), logical)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.ns
			if unit == arrow.Millisecond {
				want = tc.ms
			}
			if got := EvaluateRowGroups(b, rdr.MetaData(), LeafIndexByPath(rdr.MetaData())); got[0] != want {
				t.Errorf("unit %s, %s: got %v, want %v", unit, tc.filter, got[0], want)
			}
		}
		_ = rdr.Close()
	}
}

func TestLevelStatsCounts(t *testing.T) {
	var s LevelStats
	s.Level = "file"
	s.Add(CannotMatch, 100)
	s.Add(MightMatch, 10)
	s.Add(MustMatch, 1)
	o := LevelStats{Level: "file"}
	o.Add(CannotMatch, 5)
	s.Merge(o)
	want := LevelStats{Level: "file", Total: 4, Skipped: 2, Kept: 2, MustMatch: 1, BytesTotal: 116, BytesSkipped: 105}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	if Combine(CannotMatch, MightMatch) != CannotMatch || Combine(MustMatch, CannotMatch) != MightMatch || Combine(MightMatch, MustMatch) != MustMatch {
		t.Fatal("Combine")
	}
}

// TestRowGroupBloomVerdictsAreSound writes random rows with Parquet Bloom filters on
// id, i, s and d and checks, against the exact evaluator, that a row group the
// filters reject for an equality or IN predicate (alone, under AND, or OR'ed) holds
// no matching row (S1), and that rejections happen.
func TestRowGroupBloomVerdictsAreSound(t *testing.T) {
	sc := parquetSchema()
	ls := leaves(sc)
	r := rand.New(rand.NewPCG(31, 37))
	mem := memory.NewGoAllocator()
	var checks, skipped int
	for fi := 0; fi < 4; fi++ {
		rows := genClusteredRows(r, sc, 400+r.IntN(200), 16)
		rec := buildRecord(mem, sc, rows)
		opts := []parquet.WriterProperty{parquet.WithMaxRowGroupLength(int64(32 + 16*r.IntN(3))), parquet.WithStoreDecimalAsInteger(fi%2 == 0)}
		for _, c := range []string{"id", "i", "s", "d"} {
			opts = append(opts, parquet.WithBloomFilterEnabledFor(c, true), parquet.WithBloomFilterNDVFor(c, 64))
		}
		rdr, err := file.NewParquetReader(bytes.NewReader(writeParquetWith(t, rec, opts...)))
		if err != nil {
			t.Fatal(err)
		}
		md := rdr.MetaData()
		colIndex := LeafIndexByPath(md)
		lit := func(col string) expr.Expr {
			if r.IntN(2) == 0 {
				return expr.Lit(rows[r.IntN(len(rows))][col])
			}
			return expr.Lit(genLiteral(r, sc.Field(sc.FieldIndices(col)[0]).Type))
		}
		for k := 0; k < propertyN(t, 300); k++ {
			col := []string{"id", "i", "s", "d"}[r.IntN(4)]
			var e expr.Expr = expr.Compare(expr.OpEq, expr.Col(col), lit(col))
			switch r.IntN(4) {
			case 0:
				e = expr.In(expr.Col(col), lit(col), lit(col))
			case 1:
				e = expr.And(e, genPredicate(r, ls, 1))
			case 2:
				e = expr.Or(e, expr.Compare(expr.OpEq, expr.Col(col), lit(col)))
			}
			b, err := expr.Bind(e, sc)
			if err != nil {
				t.Fatalf("Bind(%s): %v", e, err)
			}
			sel, err := b.Evaluate(rec)
			if err != nil {
				t.Fatal(err)
			}
			var start int64
			for g := 0; g < md.NumRowGroups(); g++ {
				n := md.RowGroup(g).NumRows()
				cannot := RowGroupBloomCannotMatch(b, rdr, g, colIndex)
				for i := start; i < start+n; i++ {
					if cannot && sel.Contains(int(i)) {
						t.Fatalf("S1 violated: Bloom filters of row group %d (file %d) reject %s but row %d matches", g, fi, b, i)
					}
				}
				checks++
				if cannot {
					skipped++
				}
				start += n
			}
		}
		rec.Release()
		_ = rdr.Close()
	}
	t.Logf("%d row-group Bloom checks, %d rejected", checks, skipped)
	if skipped == 0 || skipped == checks {
		t.Fatalf("Bloom filters rejected %d of %d row groups: the test proves nothing", skipped, checks)
	}
}
