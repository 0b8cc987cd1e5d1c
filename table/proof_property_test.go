package table_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/value"
)

// The scan-level proof of invariant S1 (skipping never drops a unit holding a matching
// live row) and of exactness: tables written by the real writer into many small files
// (and a few large multi-row-group files), random predicates over every skippable
// type, and for each predicate
//
//   - the rows Scan(WithFilter) returns equal, as a multiset (by unique id; full rows
//     for small results), the rows a brute-force evaluation of the same predicate
//     selects from ReadAll;
//   - every file holding a matching row is in the scan's file list (checked per
//     (file, predicate) pair against ground truth read straight from the Parquet files);
//   - Count equals the brute-force count.
//
// The S1 check runs on every predicate (planning is cheap); the reading checks (rows,
// row-group skipping, Count) on every fifth (every second with -short).
//
// Knobs: SKIPLAKE_SCAN_PROPERTY_N (predicates per table, default 500; -short 60),
// SKIPLAKE_SCAN_PROPERTY_SEED (default 1), SKIPLAKE_SCAN_PROPERTY_READ_EVERY (default 5;
// 1 reads for every predicate). Two tables (unpartitioned and partitioned
// by p) of ~100 small files plus 3 large ones make the default >= 100,000 checked
// (file, predicate) pairs.

var proofSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}, Nullable: true},
	{Name: "dsm", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "pad", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
}, nil)

const (
	proofMinDay = -719162            // 0001-01-01
	proofMaxDay = 2932896            // 9999-12-31
	proofMinTS  = -62135596800000000 // 0001-01-01 00:00:00 UTC
	proofMaxTS  = 253402300799999999 // 9999-12-31 23:59:59.999999 UTC
)

// proofStringBases are per-file string prefixes: long shared prefixes (past the
// 32-character stats prefix), multi-byte characters straddling the cut, U+10FFFF,
// quotes and LIKE metacharacters.
var proofStringBases = []string{
	strings.Repeat("a", 40),
	strings.Repeat("a", 31) + "é",
	strings.Repeat("a", 32),
	"common/prefix/that/is/longer/than/32/characters/",
	strings.Repeat("\U0010FFFF", 33),
	strings.Repeat("é", 34),
	"it's_100%-",
	"b",
	"zz\u007f",
}

// proofGen generates data and predicates from one seeded source, remembering a sample
// of the values written to each column so literals can be drawn from and near them.
type proofGen struct {
	rng     *rand.Rand
	nextID  int64
	samples map[string][]value.Value
}

func newProofGen(seed uint64) *proofGen {
	return &proofGen{rng: rand.New(rand.NewPCG(seed, 0x5eed)), samples: map[string][]value.Value{}}
}

func (g *proofGen) remember(col string, v value.Value) {
	s := g.samples[col]
	if len(s) < 256 {
		g.samples[col] = append(s, v)
		return
	}
	if g.rng.IntN(8) == 0 {
		s[g.rng.IntN(len(s))] = v
	}
}

// batch builds one batch of n rows. Values cluster around per-batch centres (so file
// statistics differ and skipping has something to do) with NULLs, extremes and special
// floats mixed in; sorted=true makes the numeric and temporal columns ascend with the
// row (so row groups of a large file have disjoint ranges) and fills pad with
// incompressible text. part < -1 draws p per row; -1 makes p NULL; otherwise p = part.
func (g *proofGen) batch(n int, part int, sorted bool) arrow.RecordBatch {
	r := g.rng
	b := array.NewRecordBuilder(memory.DefaultAllocator, proofSchema)
	defer b.Release()
	nullPct := []int{0, 5, 30, 100}[r.IntN(4)]
	if r.IntN(4) != 0 {
		nullPct = []int{0, 5, 10}[r.IntN(3)]
	}
	isNull := func() bool { return r.IntN(100) < nullPct }
	ci := int64(r.IntN(4000) - 2000)
	cl := r.Int64N(2_000_000_000_000) - 1_000_000_000_000
	cdec := r.Int64N(2_000_000_000_000_000) - 1_000_000_000_000_000
	cdsm := r.Int64N(1_800_000_000) - 900_000_000
	cd := r.NormFloat64() * 1e6
	cday := int64(r.IntN(60000) - 30000)
	cts := r.Int64N(4_000_000_000_000_000) - 2_000_000_000_000_000
	base := proofStringBases[r.IntN(len(proofStringBases))]
	cs := r.IntN(1000)
	okMode := r.IntN(4)
	for row := 0; row < n; row++ {
		step := int64(r.IntN(20))
		if sorted {
			step = int64(row)
		}
		b.Field(0).(*array.Int64Builder).Append(g.nextID)
		g.nextID++
		// p
		pb := b.Field(1).(*array.Int32Builder)
		switch {
		case part == -1:
			pb.AppendNull()
		case part < -1:
			if r.IntN(6) == 0 {
				pb.AppendNull()
			} else {
				pb.Append(int32(r.IntN(5)))
			}
		default:
			pb.Append(int32(part))
		}
		// i
		if isNull() {
			b.Field(2).AppendNull()
		} else {
			v := ci + step
			if r.IntN(200) == 0 {
				v = []int64{math.MinInt32, math.MaxInt32}[r.IntN(2)]
			}
			b.Field(2).(*array.Int32Builder).Append(int32(v))
			g.remember("i", value.Int64(v))
		}
		// l
		if isNull() {
			b.Field(3).AppendNull()
		} else {
			v := cl + step*1000
			if r.IntN(200) == 0 {
				v = []int64{math.MinInt64, math.MaxInt64}[r.IntN(2)]
			}
			b.Field(3).(*array.Int64Builder).Append(v)
			g.remember("l", value.Int64(v))
		}
		// dec (38,6), negative values included, a few far beyond int64
		if isNull() {
			b.Field(4).AppendNull()
		} else {
			v := decimal128.FromI64(cdec + step*1_000_003)
			if r.IntN(100) == 0 {
				v = decimal128.New(r.Int64N(1<<40)-1<<39, r.Uint64())
			}
			b.Field(4).(*array.Decimal128Builder).Append(v)
			g.remember("dec", value.Decimal(v, 38, 6))
		}
		// dsm (9,2)
		if isNull() {
			b.Field(5).AppendNull()
		} else {
			v := decimal128.FromI64(cdsm + step*7)
			b.Field(5).(*array.Decimal128Builder).Append(v)
			g.remember("dsm", value.Decimal(v, 9, 2))
		}
		// d float64 with NaN, -0, 0, ±Inf
		if isNull() {
			b.Field(6).AppendNull()
		} else {
			v := cd + float64(step)*0.25
			if r.IntN(12) == 0 {
				v = []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1)}[r.IntN(5)]
			}
			b.Field(6).(*array.Float64Builder).Append(v)
			g.remember("d", value.Float64(v))
		}
		// f float32
		if isNull() {
			b.Field(7).AppendNull()
		} else {
			v := float32(cd/1000) + float32(step)*0.1
			if r.IntN(12) == 0 {
				v = []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1))}[r.IntN(5)]
			}
			b.Field(7).(*array.Float32Builder).Append(v)
			g.remember("f", value.Float64(float64(v)))
		}
		// s
		if isNull() {
			b.Field(8).AppendNull()
		} else {
			v := fmt.Sprintf("%s%04d", base, cs+int(step))
			if r.IntN(50) == 0 {
				v = ""
			}
			b.Field(8).(*array.StringBuilder).Append(v)
			g.remember("s", value.String(v))
		}
		// day
		if isNull() {
			b.Field(9).AppendNull()
		} else {
			v := cday + step
			if r.IntN(100) == 0 {
				v = []int64{proofMinDay, proofMaxDay}[r.IntN(2)]
			}
			b.Field(9).(*array.Date32Builder).Append(arrow.Date32(v))
			g.remember("day", value.Date(v))
		}
		// ts and ntz
		for k, col := range []string{"ts", "ntz"} {
			fb := b.Field(10 + k)
			if isNull() {
				fb.AppendNull()
				continue
			}
			v := cts + step*int64(r.IntN(3_600_000_000)+1)
			if k == 1 {
				v = cts/2 + step*1_000_001
			}
			if r.IntN(100) == 0 {
				v = []int64{proofMinTS, proofMaxTS, 0, -1}[r.IntN(4)]
			}
			fb.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
			if k == 0 {
				g.remember(col, value.Timestamp(v))
			} else {
				g.remember(col, value.TimestampNTZ(v))
			}
		}
		// ok
		if isNull() || okMode == 3 && r.IntN(3) == 0 {
			b.Field(12).AppendNull()
		} else {
			v := okMode == 0 || okMode >= 2 && r.IntN(2) == 0
			b.Field(12).(*array.BooleanBuilder).Append(v)
		}
		// pad: NULL in small files, incompressible text in large ones
		if sorted {
			buf := make([]byte, 192)
			for k := range buf {
				buf[k] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[r.IntN(64)]
			}
			b.Field(13).(*array.StringBuilder).Append(string(buf))
		} else {
			b.Field(13).AppendNull()
		}
		// b int8: the full range, clustered
		if isNull() {
			b.Field(14).AppendNull()
		} else {
			v := min(max(ci/16+step%20, math.MinInt8), math.MaxInt8)
			b.Field(14).(*array.Int8Builder).Append(int8(v))
			g.remember("b", value.Int64(v))
		}
	}
	return b.NewRecordBatch()
}

// literal draws a literal for column col: a value written to it, or one next to such
// a value, or an extreme; rendered in the filter grammar.
func (g *proofGen) literal(col string) string {
	r := g.rng
	s := g.samples[col]
	if len(s) == 0 || r.IntN(25) == 0 {
		return "NULL"
	}
	v := s[r.IntN(len(s))]
	near := r.IntN(3) != 0
	switch v.Kind() {
	case value.KindInt64:
		x := v.AsInt64()
		if near {
			switch r.IntN(4) {
			case 0:
				if x != math.MaxInt64 {
					x++
				}
			case 1:
				if x != math.MinInt64 {
					x--
				}
			case 2:
				if col == "i" && r.IntN(4) == 0 {
					// Outside int32: exact coercion must make it always/never true (E3).
					return []string{"3000000000", "-3000000000", "2147483648"}[r.IntN(3)]
				}
				if col == "b" && r.IntN(4) == 0 {
					return []string{"300", "-129", "128", "-128", "127"}[r.IntN(5)]
				}
				return fmt.Sprintf("%d.5", x) // a decimal literal between two integers
			}
		}
		return fmt.Sprint(x)
	case value.KindDecimal:
		num, prec, scale := v.AsDecimal()
		if near {
			switch r.IntN(3) {
			case 0:
				num = num.Add(decimal128.FromI64(1))
			case 1:
				num = num.Sub(decimal128.FromI64(1))
			case 2:
				// One more fractional digit: between two representable values (E3).
				num = num.Mul(decimal128.FromI64(10)).Add(decimal128.FromI64(5))
				scale++
				prec++
				if prec > 38 {
					return expr.FormatValue(v)
				}
			}
		}
		return expr.FormatValue(value.Decimal(num, prec, scale))
	case value.KindFloat64:
		x := v.AsFloat64()
		if near {
			switch r.IntN(5) {
			case 0:
				x = math.Nextafter(x, math.Inf(1))
			case 1:
				x = math.Nextafter(x, math.Inf(-1))
			case 2:
				x = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}[r.IntN(5)]
			case 3:
				x += 0.125
			}
		}
		return expr.FormatValue(value.Float64(x))
	case value.KindString:
		str := v.AsString()
		if near {
			switch r.IntN(4) {
			case 0:
				str += " "
			case 1:
				str = proofRunePrefix(str, r.IntN(utf8.RuneCountInString(str)+1))
			case 2:
				if str != "" {
					b := []byte(str)
					if b[len(b)-1] < 0x7f {
						b[len(b)-1]++
						str = string(b)
					}
				}
			case 3:
				str = proofRunePrefix(str, 32) + "\U0010FFFF"
			}
		}
		return value.String(str).String()
	case value.KindDate:
		x := v.AsInt64()
		if near {
			x += int64(r.IntN(3) - 1)
		}
		return value.Date(min(max(x, proofMinDay), proofMaxDay)).String()
	case value.KindTimestamp, value.KindTimestampNTZ:
		x := v.AsInt64()
		if near {
			x += []int64{-1, 1, -1000, 1000, 999}[r.IntN(5)]
			x = min(max(x, proofMinTS), proofMaxTS)
		}
		if v.Kind() == value.KindTimestamp {
			return expr.FormatValue(value.Timestamp(x))
		}
		return expr.FormatValue(value.TimestampNTZ(x))
	}
	return expr.FormatValue(v)
}

func proofRunePrefix(s string, n int) string {
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

var proofPredColumns = []string{"id", "p", "b", "i", "l", "dec", "dsm", "d", "f", "s", "day", "ts", "ntz", "ok", "s", "l", "i"}

// leaf draws one leaf predicate.
func (g *proofGen) leaf() string {
	r := g.rng
	col := proofPredColumns[r.IntN(len(proofPredColumns))]
	if col == "ok" {
		return []string{"ok = TRUE", "ok = FALSE", "ok <> TRUE", "ok IS NULL", "ok IS NOT NULL", "NOT (ok = FALSE)"}[r.IntN(6)]
	}
	if col == "id" && len(g.samples["id"]) == 0 {
		g.samples["id"] = []value.Value{value.Int64(0), value.Int64(g.nextID / 2), value.Int64(g.nextID - 1)}
	}
	ops := []string{"=", "<>", "<", "<=", ">", ">="}
	switch k := r.IntN(12); {
	case k < 5:
		op := ops[r.IntN(len(ops))]
		if r.IntN(6) == 0 {
			return g.literal(col) + " " + op + " " + col
		}
		return col + " " + op + " " + g.literal(col)
	case k < 7:
		kw := " BETWEEN "
		if r.IntN(3) == 0 {
			kw = " NOT BETWEEN "
		}
		return col + kw + g.literal(col) + " AND " + g.literal(col)
	case k < 9:
		n := 1 + r.IntN(5)
		lits := make([]string, n)
		for j := range lits {
			lits[j] = g.literal(col)
		}
		kw := " IN ("
		if r.IntN(3) == 0 {
			kw = " NOT IN ("
		}
		return col + kw + strings.Join(lits, ", ") + ")"
	case k < 10:
		if r.IntN(2) == 0 {
			return col + " IS NULL"
		}
		return col + " IS NOT NULL"
	case k < 11 && col == "s":
		return g.like()
	default:
		return col + " <=> " + g.literal(col)
	}
}

// like draws a LIKE predicate on s: a prefix pattern (skippable) or a non-prefix one.
func (g *proofGen) like() string {
	r := g.rng
	src := ""
	if s := g.samples["s"]; len(s) > 0 {
		src = s[r.IntN(len(s))].AsString()
	}
	n := utf8.RuneCountInString(src)
	pre := proofRunePrefix(src, r.IntN(n+1))
	var pat string
	switch r.IntN(5) {
	case 0, 1:
		pat = expr.EscapeLike(pre) + "%" // prefix
	case 2:
		pat = "%" + expr.EscapeLike(strings.TrimPrefix(src, pre)) // suffix
	case 3:
		pat = expr.EscapeLike(pre) + "_%" // prefix then one code point
	default:
		pat = expr.EscapeLike(src) // no wildcard: equality
	}
	kw := " LIKE "
	if r.IntN(4) == 0 {
		kw = " NOT LIKE "
	}
	return "s" + kw + value.String(pat).String()
}

// pred draws a predicate of nesting depth up to depth.
func (g *proofGen) pred(depth int) string {
	r := g.rng
	if depth > 0 && r.IntN(2) == 0 {
		switch r.IntN(5) {
		case 0, 1:
			return "(" + g.pred(depth-1) + ") AND (" + g.pred(depth-1) + ")"
		case 2, 3:
			return "(" + g.pred(depth-1) + ") OR (" + g.pred(depth-1) + ")"
		default:
			return "NOT (" + g.pred(depth-1) + ")"
		}
	}
	return g.leaf()
}

// proofTable is a written table plus the ground truth the checks need.
type proofTable struct {
	st      storage.Storage
	tb      *table.Table
	snap    *table.Snapshot
	all     arrow.Table
	recs    []arrow.RecordBatch // all, as batches (views of all's chunks)
	ids     [][]int64           // ids of recs[k]
	fileOf  map[int64]int       // id -> index into paths
	paths   []string            // live data files
	rowsRGs int64               // row groups over all files
}

func (pt *proofTable) release() {
	for _, r := range pt.recs {
		r.Release()
	}
	pt.all.Release()
}

// buildProofTable writes about files small files, one commit each (one file per
// partition value of the commit), plus, unless short, one commit of large sorted
// batches that the writer cuts into files of several row groups each.
func buildProofTable(t *testing.T, g *proofGen, partitioned bool, files int, short bool) *proofTable {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	var opts table.CreateOptions
	if partitioned {
		opts.PartitionColumns = []string{"p"}
	}
	tb, err := table.Create(ctx, st, proofSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	// One commit per small file (the writer only splits a write at the target file
	// size, default 128 MiB, and by partition): every fifth commit holds two batches,
	// which land in one file with two value clusters.
	for c := 0; c < files; c++ {
		var recs []arrow.RecordBatch
		for k := 0; k < 1+min(1, c%5/4); k++ {
			part := g.rng.IntN(5)
			if g.rng.IntN(8) == 0 {
				part = -1
			}
			if partitioned && g.rng.IntN(10) == 0 {
				part = -2 // mixed partitions: one file per partition value
			}
			recs = append(recs, g.batch(20+g.rng.IntN(120), part, false))
		}
		if _, err := tb.WriteBatches(ctx, recs, table.WriteOptions{}); err != nil {
			t.Fatalf("commit %d: %v", c+1, err)
		}
		for _, r := range recs {
			r.Release()
		}
	}
	if !short {
		// Large files: ~1 MiB of Arrow data per row group (the writer's floor), several
		// row groups per file, with ascending values so row groups can be skipped.
		var recs []arrow.RecordBatch
		for k := 0; k < 3; k++ {
			for j := 0; j < 4; j++ {
				recs = append(recs, g.batch(5000, 2, true))
			}
		}
		if _, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 3 << 20, Parallelism: 1}); err != nil {
			t.Fatalf("large commit: %v", err)
		}
		for _, r := range recs {
			r.Release()
		}
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	all, err := readAllOf(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	pt := &proofTable{st: st, tb: tb, snap: snap, all: all, fileOf: map[int64]int{}}
	tr := array.NewTableReader(all, 1<<20)
	for tr.Next() {
		r := tr.RecordBatch()
		r.Retain()
		pt.recs = append(pt.recs, r)
		pt.ids = append(pt.ids, r.Column(0).(*array.Int64).Int64Values())
	}
	tr.Release()
	byFile := proofFileIDs(t, st, snap, "id")
	for p, ids := range byFile {
		pt.paths = append(pt.paths, p)
		for _, id := range ids {
			if _, dup := pt.fileOf[id]; dup {
				t.Fatalf("id %d in two files", id)
			}
			pt.fileOf[id] = len(pt.paths) - 1
		}
	}
	if len(pt.fileOf) != int(all.NumRows()) || int64(g.nextID) < all.NumRows() {
		t.Fatalf("files hold %d ids, ReadAll returned %d rows", len(pt.fileOf), all.NumRows())
	}
	// Row groups per file: a filter no statistic can decide makes every file a
	// "might match" whose footer is evaluated.
	sc, err := snap.Scan(ctx, table.WithFilter("id <> l"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sc.Explain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pt.rowsRGs = rep.Level("rowgroup").Total
	return pt
}

// bruteForce evaluates sql on every row of the table: the matching ids (sorted) and
// the set of files holding them.
func (pt *proofTable) bruteForce(t *testing.T, sql string) ([]int64, map[int]bool, []*expr.Selection) {
	t.Helper()
	e, err := expr.Parse(sql)
	if err != nil {
		t.Fatalf("generated predicate does not parse: %s: %v", sql, err)
	}
	b, err := expr.Bind(e, pt.all.Schema())
	if err != nil {
		t.Fatalf("generated predicate does not bind: %s: %v", sql, err)
	}
	var ids []int64
	files := map[int]bool{}
	sels := make([]*expr.Selection, len(pt.recs))
	for k, r := range pt.recs {
		sel, err := b.Evaluate(r)
		if err != nil {
			t.Fatalf("evaluate %s: %v", sql, err)
		}
		sels[k] = sel
		for _, i := range sel.Indices(nil) {
			id := pt.ids[k][i]
			ids = append(ids, id)
			files[pt.fileOf[id]] = true
		}
	}
	slices.Sort(ids)
	return ids, files, sels
}

// expected materialises the brute-force rows (for full-row comparisons).
func (pt *proofTable) expected(t *testing.T, sels []*expr.Selection) arrow.Table {
	t.Helper()
	var out []arrow.RecordBatch
	for k, r := range pt.recs {
		bb := array.NewBooleanBuilder(memory.DefaultAllocator)
		for i := 0; i < int(r.NumRows()); i++ {
			bb.Append(sels[k].Contains(i))
		}
		mask := bb.NewBooleanArray()
		bb.Release()
		f, err := compute.FilterRecordBatch(context.Background(), r, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	res := array.NewTableFromRecords(pt.all.Schema(), out)
	for _, r := range out {
		r.Release()
	}
	return res
}

func TestProofScanProperty(t *testing.T) {
	preds := proofEnvInt(t, "SKIPLAKE_SCAN_PROPERTY_N", 500)
	files, readEvery := 100, proofEnvInt(t, "SKIPLAKE_SCAN_PROPERTY_READ_EVERY", 5)
	if testing.Short() {
		preds, files, readEvery = min(preds, 60), 30, min(readEvery, 2)
	}
	seed := uint64(proofEnvInt(t, "SKIPLAKE_SCAN_PROPERTY_SEED", 1))
	var pairs, reads, skippedFiles, fileSlots, rgSkipped, rgTotal, ran int64
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			ran++ // -run may select one of the two
			start := time.Now()
			g := newProofGen(seed*2 + map[bool]uint64{false: 0, true: 1}[partitioned])
			pt := buildProofTable(t, g, partitioned, files, testing.Short())
			defer pt.release()
			nFiles := len(pt.paths)
			t.Logf("seed %d: %d files, %d rows, %d row groups, built in %v", seed, nFiles, pt.all.NumRows(), pt.rowsRGs, time.Since(start).Round(time.Millisecond))
			if !testing.Short() && pt.rowsRGs < int64(nFiles)+6 {
				t.Errorf("large files should have several row groups: %d row groups in %d files", pt.rowsRGs, nFiles)
			}
			pathIdx := map[string]int{}
			for i, p := range pt.paths {
				pathIdx[p] = i
			}
			ctx := context.Background()
			failures, noneMatch, allMatch := 0, 0, 0
			fail := func(format string, args ...any) {
				t.Helper()
				t.Errorf(format, args...)
				failures++
				if failures >= 10 {
					t.Fatalf("stopping after %d failures (seed %d)", failures, seed)
				}
			}
			for q := 0; q < preds; q++ {
				sql := g.pred(3)
				wantIDs, wantFiles, sels := pt.bruteForce(t, sql)
				switch {
				case len(wantIDs) == 0:
					noneMatch++
				case int64(len(wantIDs)) == pt.all.NumRows():
					allMatch++
				}
				if q < 3 {
					t.Logf("sample predicate: %s (%d rows)", sql, len(wantIDs))
				}
				// Planning only (cheap) for every predicate: the S1 check per (file,
				// predicate) pair. Reading (row exactness, row-group skipping, Count)
				// for every readEvery-th predicate.
				read := q%readEvery == 0
				full := read && (q/readEvery)%3 == 0
				opts := []table.ScanOption{table.WithFilter(sql)}
				if !full {
					opts = append(opts, table.WithColumns("id"))
				}
				var (
					gotIDs  []int64
					rep     *table.ScanReport
					planned []table.PlannedFile
					err     error
				)
				if read {
					gotIDs, rep, planned, err = proofScanIDs(t, pt.snap, "id", opts...)
				} else {
					var sc *table.Scan
					if sc, err = pt.snap.Scan(ctx, opts...); err == nil {
						rep, planned = sc.Report(), sc.Files()
					}
				}
				if err != nil {
					fail("scan %q: %v", sql, err)
					continue
				}
				// S1, per (file, predicate): every file holding a match is planned.
				kept := map[int]bool{}
				for _, pf := range planned {
					kept[pathIdx[pf.Path]] = true
				}
				for f := range nFiles {
					pairs++
					if wantFiles[f] && !kept[f] {
						fail("S1 violated: %q skipped file %s which holds matching rows", sql, pt.paths[f])
					}
				}
				if rep.Files.Total != int64(nFiles) || rep.Files.Skipped+rep.Files.Kept != rep.Files.Total || rep.Files.Kept != int64(len(planned)) {
					fail("%q: inconsistent report %+v for %d files, %d planned", sql, rep.Files, nFiles, len(planned))
				}
				if rep.Files.Skipped > int64(nFiles-len(wantFiles)) {
					fail("%q: skipped %d files but only %d hold no match", sql, rep.Files.Skipped, nFiles-len(wantFiles))
				}
				skippedFiles += rep.Files.Skipped
				fileSlots += int64(nFiles)
				rgSkipped += rep.Level("rowgroup").Skipped
				rgTotal += rep.Level("rowgroup").Total
				if !read {
					continue
				}
				reads++
				if !slices.Equal(gotIDs, wantIDs) {
					missing, extra := proofDiffIDs(gotIDs, wantIDs)
					fail("%q: scan returned %d rows, brute force %d (missing ids %v, extra ids %v)", sql, len(gotIDs), len(wantIDs), missing, extra)
					continue
				}
				if full && len(wantIDs) > 0 && len(wantIDs) <= 3000 {
					got, err := readAllOf(ctx, pt.snap, opts...)
					if err != nil {
						fail("ReadAll %q: %v", sql, err)
						continue
					}
					want := pt.expected(t, sels)
					compareMultiset(t, sql, got, want)
					got.Release()
					want.Release()
				}
				n, crep, err := countOf(ctx, pt.snap, table.WithFilter(sql))
				if err != nil {
					fail("count %q: %v", sql, err)
					continue
				}
				if n != int64(len(wantIDs)) {
					fail("%q: Count = %d, brute force %d", sql, n, len(wantIDs))
				}
				if md := crep.Level("metadata"); md.Kept != int64(len(planned)) {
					fail("%q: Count planned %d files, Scan %d", sql, md.Kept, len(planned))
				}
			}
			t.Logf("%d predicates in %v: %d match no row, %d match every row, the rest some", preds, time.Since(start).Round(time.Millisecond), noneMatch, allMatch)
			proofCheckMustMatch(t, pt)
		})
	}
	t.Logf("checked %d (file, predicate) pairs; %d scans read and compared with brute force; files skipped %d of %d (%.1f%%); row groups skipped %d of %d evaluated",
		pairs, reads, skippedFiles, fileSlots, 100*float64(skippedFiles)/float64(max(fileSlots, 1)), rgSkipped, rgTotal)
	if !t.Failed() {
		if skippedFiles == 0 {
			t.Errorf("no file was ever skipped: the test would pass vacuously")
		}
		if !testing.Short() && rgSkipped == 0 {
			t.Errorf("no row group was ever skipped")
		}
		if !testing.Short() && preds >= 500 && pairs < 50_000*ran {
			t.Errorf("only %d (file, predicate) pairs checked in %d tables, want >= %d", pairs, ran, 50_000*ran)
		}
	}
}

// proofCheckMustMatch checks that filters every kept file satisfies in full are
// answered by Count from the log alone (S2): no file is read.
func proofCheckMustMatch(t *testing.T, pt *proofTable) {
	t.Helper()
	ctx := context.Background()
	ids := proofTableIDs(pt.all, "id")
	lo, hi := ids[0], ids[len(ids)-1]
	type mm struct {
		sql  string
		want int64
	}
	cases := []mm{
		{fmt.Sprintf("id >= %d", lo), int64(len(ids))},
		{fmt.Sprintf("id BETWEEN %d AND %d", lo, hi), int64(len(ids))},
		{fmt.Sprintf("id > %d", hi), 0},
	}
	if len(pt.snap.PartitionColumns()) > 0 {
		for _, p := range []int{0, 2} {
			want, _, _ := pt.bruteForce(t, fmt.Sprintf("p = %d", p))
			cases = append(cases, mm{fmt.Sprintf("p = %d", p), int64(len(want))})
		}
		want, _, _ := pt.bruteForce(t, "p IS NULL")
		cases = append(cases, mm{"p IS NULL", int64(len(want))})
	}
	for _, c := range cases {
		n, rep, err := countOf(ctx, pt.snap, table.WithFilter(c.sql))
		if err != nil {
			t.Errorf("count %q: %v", c.sql, err)
			continue
		}
		if n != c.want {
			t.Errorf("count %q = %d, want %d", c.sql, n, c.want)
		}
		md := rep.Level("metadata")
		if md.MustMatch != md.Kept {
			t.Errorf("count %q: %d of %d kept files needed reading; all should be answered from metadata (report %+v)", c.sql, md.Kept-md.MustMatch, md.Kept, rep.Levels)
		}
		if rep.Files.Kept != rep.Files.MustMatch {
			t.Errorf("count %q: files %+v: every kept file should be MustMatch", c.sql, rep.Files)
		}
	}
}
