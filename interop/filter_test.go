package interop

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
)

// filterSchema is the table the random predicates run against; p is a partition
// column so that partition and data predicates mix.
func filterSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// Value domains of the filter table (small, so that random literals hit rows).
var (
	filterStrings = []string{"", "apple", "apricot", "banana", "band", "b", "cherry", "ü-umlaut", "日本", "zeta",
		"quote's", strings.Repeat("long", 12), strings.Repeat("long", 12) + "er"}
	filterParts = []string{"east", "west", "a b", "x/y"}
	tsBase      = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	tsSpan      = int64(30 * 24 * time.Hour / time.Microsecond)
	dtBase      = int32(19700)
	floatPool   = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1.5, -2.25, 3, 100.125}
)

// filterBatch builds n rows with k sorted (so files and row groups cluster on k).
func filterBatch(rng *rand.Rand, mem memory.Allocator, n int, kStart int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, filterSchema())
	defer b.Release()
	null := func() bool { return rng.IntN(12) == 0 }
	for i := range n {
		if null() {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(kStart + int64(i))
		}
		if null() {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(200001) - 100000))
		}
		if null() {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(filterStrings[rng.IntN(len(filterStrings))])
		}
		if null() {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Date32Builder).Append(arrow.Date32(dtBase + int32(rng.IntN(60))))
		}
		if null() {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(tsBase + rng.Int64N(tsSpan)))
		}
		switch {
		case null():
			b.Field(5).AppendNull()
		case rng.IntN(4) == 0:
			b.Field(5).(*array.Float64Builder).Append(floatPool[rng.IntN(len(floatPool))])
		default:
			b.Field(5).(*array.Float64Builder).Append(math.Round((rng.Float64()*200-100)*4) / 4)
		}
		if rng.IntN(10) == 0 {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.StringBuilder).Append(filterParts[rng.IntN(len(filterParts))])
		}
	}
	return b.NewRecordBatch()
}

// pred is one predicate rendered for both engines. The texts differ only in typed
// literals: skiplake's TIMESTAMP '...Z' / DOUBLE 'NaN' are DuckDB's
// TIMESTAMPTZ '...+00' / CAST('NaN' AS DOUBLE).
type pred struct{ ours, duck string }

func same(s string) pred { return pred{s, s} }

type predGen struct{ rng *rand.Rand }

func (g *predGen) lit(col string) pred {
	r := g.rng
	switch col {
	case "k":
		if r.IntN(5) == 0 {
			return same(fmt.Sprintf("%d.5", r.IntN(1400)-50)) // exact: k < 10.5 is k <= 10
		}
		return same(strconv.Itoa(r.IntN(1400) - 50))
	case "d":
		switch r.IntN(5) {
		case 0:
			return same(strconv.Itoa(r.IntN(200) - 100))
		case 1:
			return same(fmt.Sprintf("%.4f", float64(r.IntN(2000000)-1000000)/10000)) // finer than the scale
		}
		return same(fmt.Sprintf("%.3f", float64(r.IntN(200001)-100000)/1000))
	case "s":
		v := filterStrings[r.IntN(len(filterStrings))]
		if r.IntN(4) == 0 && v != "" { // a string between the stored ones
			rs := []rune(v)
			v = string(rs[:len(rs)-1]) + "~"
		}
		return same(sqlString(v))
	case "p":
		return same(sqlString(filterParts[r.IntN(len(filterParts))]))
	case "dt":
		d := time.Unix(int64(dtBase+int32(r.IntN(70)-5))*86400, 0).UTC().Format("2006-01-02")
		return same("DATE '" + d + "'")
	case "ts":
		us := tsBase + r.Int64N(tsSpan+2*86400e6) - 86400e6
		if r.IntN(3) == 0 {
			us -= us % 1e6 // whole seconds
		}
		wall := time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
		return pred{"TIMESTAMP '" + wall + "Z'", "TIMESTAMPTZ '" + wall + "+00'"}
	case "f":
		if r.IntN(3) == 0 {
			f := floatPool[r.IntN(len(floatPool))]
			switch {
			case math.IsNaN(f):
				return pred{"DOUBLE 'NaN'", "CAST('NaN' AS DOUBLE)"}
			case math.IsInf(f, 1):
				return pred{"DOUBLE 'Infinity'", "CAST('Infinity' AS DOUBLE)"}
			case math.IsInf(f, -1):
				return pred{"DOUBLE '-Infinity'", "CAST('-Infinity' AS DOUBLE)"}
			}
			return floatLit(f)
		}
		if r.IntN(4) == 0 {
			// Full-precision doubles: 17 significant digits, where a decimal literal
			// converted through DECIMAL may land one ulp off.
			return floatLit((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(6)-3)))
		}
		return floatLit(math.Round((r.Float64()*220-110)*4) / 4)
	}
	panic("interop: no literal generator for column " + col)
}

// floatLit renders a double literal for both engines. DuckDB gets it quoted and cast
// (CAST('…' AS DOUBLE) parses the text as a double, correctly rounded); unquoted, DuckDB
// reads it as a DECIMAL and converts that, which can land one ulp off (v1.5.6 turns
// -0.009999999999999787 into the neighbouring double), failing a comparison for
// DuckDB's reason, not skiplake's.
func floatLit(f float64) pred {
	text := strconv.FormatFloat(f, 'g', -1, 64)
	return pred{text, "CAST('" + text + "' AS DOUBLE)"}
}

// duckFilterQuery selects the rows of view t matching a predicate with DuckDB's float
// comparisons taken out of the picture: the predicate sees every float column as
// (c + 0.0), which turns -0.0 into 0.0 (v1.5.6 returns no rows for "f = 0" over its
// own -0.0 values), and the rows come back with the stored values, bit for bit.
func duckFilterQuery(schema *arrow.Schema, where string) string {
	var replace, out []string
	for i, f := range schema.Fields() {
		out = append(out, sqlIdent(f.Name))
		switch f.Type.ID() {
		case arrow.FLOAT32, arrow.FLOAT64:
			hidden := fmt.Sprintf("__bits%d", i)
			replace = append(replace, fmt.Sprintf("(%s + CAST(0 AS DOUBLE)) AS %s", sqlIdent(f.Name), sqlIdent(f.Name)))
			out[i] = fmt.Sprintf("%s AS %s", hidden, sqlIdent(f.Name))
		}
	}
	if len(replace) == 0 {
		return "SELECT * FROM t WHERE " + where
	}
	var keep []string
	for i, f := range schema.Fields() {
		if id := f.Type.ID(); id == arrow.FLOAT32 || id == arrow.FLOAT64 {
			keep = append(keep, fmt.Sprintf("%s AS __bits%d", sqlIdent(f.Name), i))
		}
	}
	return fmt.Sprintf("SELECT %s FROM (SELECT * REPLACE (%s), %s FROM t) WHERE %s",
		strings.Join(out, ", "), strings.Join(replace, ", "), strings.Join(keep, ", "), where)
}

// likePrefix returns a LIKE prefix drawn from the stored strings (without LIKE
// metacharacters) or a random one.
func (g *predGen) likePrefix(col string) string {
	pool := filterStrings
	if col == "p" {
		pool = filterParts
	}
	v := pool[g.rng.IntN(len(pool))]
	if g.rng.IntN(5) == 0 {
		v = "ba"
	}
	rs := []rune(v)
	n := g.rng.IntN(min(len(rs), 4) + 1)
	p := string(rs[:n])
	if strings.ContainsAny(p, `%_\`) {
		p = ""
	}
	return p
}

var (
	filterCols  = []string{"k", "d", "s", "dt", "ts", "f", "p"}
	comparisons = []string{"=", "<>", "<", "<=", ">", ">="}
)

// atom returns one column-literal predicate.
func (g *predGen) atom() pred {
	r := g.rng
	col := filterCols[r.IntN(len(filterCols))]
	not := ""
	if r.IntN(3) == 0 {
		not = "NOT "
	}
	switch k := r.IntN(10); {
	case k < 4:
		op := comparisons[r.IntN(len(comparisons))]
		l := g.lit(col)
		return pred{col + " " + op + " " + l.ours, col + " " + op + " " + l.duck}
	case k < 5:
		lo, hi := g.lit(col), g.lit(col)
		return pred{col + " " + not + "BETWEEN " + lo.ours + " AND " + hi.ours,
			col + " " + not + "BETWEEN " + lo.duck + " AND " + hi.duck}
	case k < 7:
		var o, d []string
		for range 1 + r.IntN(4) {
			l := g.lit(col)
			o, d = append(o, l.ours), append(d, l.duck)
		}
		if r.IntN(6) == 0 {
			o, d = append(o, "NULL"), append(d, "NULL")
		}
		return pred{col + " " + not + "IN (" + strings.Join(o, ", ") + ")",
			col + " " + not + "IN (" + strings.Join(d, ", ") + ")"}
	case k < 8:
		if not != "" {
			return same(col + " IS NOT NULL")
		}
		return same(col + " IS NULL")
	default:
		if col != "s" && col != "p" {
			col = "s"
		}
		return same(col + " " + not + "LIKE " + sqlString(g.likePrefix(col)+"%"))
	}
}

// expr returns a predicate of AND/OR/NOT nesting up to depth.
func (g *predGen) expr(depth int) pred {
	if depth == 0 || g.rng.IntN(3) == 0 {
		return g.atom()
	}
	switch g.rng.IntN(5) {
	case 0:
		e := g.expr(depth - 1)
		return pred{"NOT (" + e.ours + ")", "NOT (" + e.duck + ")"}
	case 1, 2:
		a, b := g.expr(depth-1), g.expr(depth-1)
		return pred{"(" + a.ours + ") AND (" + b.ours + ")", "(" + a.duck + ") AND (" + b.duck + ")"}
	default:
		a, b := g.expr(depth-1), g.expr(depth-1)
		return pred{"(" + a.ours + ") OR (" + b.ours + ")", "(" + a.duck + ") OR (" + b.duck + ")"}
	}
}

// writeFilterTable writes three commits of clustered rows in small files,
// partitioned by p.
func writeFilterTable(t *testing.T, dir string, seed uint64, rows int) (*table.Table, *arrow.Schema) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := filterSchema()
	tbl, err := table.CreateURL(bg, dir, schema, table.CreateOptions{PartitionColumns: []string{"p"}})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 7))
	for c := range 3 {
		rec := filterBatch(rng, mem, rows, int64(c*rows))
		_, err := tbl.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{TargetFileSize: 8 << 10, Allocator: mem})
		rec.Release()
		require.NoError(t, err, "commit %d", c)
	}
	return tbl, schema
}

// TestFiltersMatchDuckDB runs seeded random predicates (comparisons, BETWEEN, IN,
// NOT IN, IS [NOT] NULL, LIKE 'prefix%', AND/OR/NOT nesting; literals of every
// column type incl. NaN, infinities, decimals finer than the column scale and NULL
// in IN lists) through skiplake's Scan and through DuckDB over the same live files;
// the selected rows must be the same multiset.
func TestFiltersMatchDuckDB(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 60
	}
	rows := rowsKnob(t, 1500)
	dir := t.TempDir()
	tbl, schema := writeFilterTable(t, dir, seedKnob(t, 42), rows/3+1)
	db := openDuck(t)
	files := duckReplay(t, db, dir, -1)
	require.Greater(t, len(files), 4, "want several files so that skipping has something to do")
	_, err := db.Exec("CREATE VIEW t AS " + duckTableSQL(t, dir, schema, []string{"p"}, files))
	require.NoError(t, err)

	g := &predGen{rng: rand.New(rand.NewPCG(seedKnob(t, 2026), 11))}
	nonEmpty, total := 0, 0
	for i := range n {
		p := g.expr(3)
		sc, err := tbl.Scan(bg, table.WithFilter(p.ours))
		if err != nil {
			t.Errorf("predicate %d: skiplake rejected %q: %v", i, p.ours, err)
			continue
		}
		rd, err := sc.Read(bg)
		require.NoError(t, err)
		ours := scanRows(t, rd.RecordReader())
		rd.Release()
		theirs := duckRows(t, db, duckFilterQuery(schema, p.duck), schema)
		if err := sameMultiset(ours, theirs, 3); err != nil {
			t.Errorf("predicate %d:\n  skiplake: %s\n  duckdb:   %s\n  %v", i, p.ours, p.duck, err)
		}
		if len(theirs) > 0 {
			nonEmpty++
		}
		total++
	}
	// Guard against a generator that only produces empty (or only full) results.
	require.Greater(t, nonEmpty, total/4, "too few predicates select any row")
	var all int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM t").Scan(&all))
	t.Logf("%d predicates over %d rows in %d files; %d selected at least one row", total, all, len(files), nonEmpty)
}

// TestFloatComparisonsIndependentOfDuckDB pins the two DuckDB quirks that made the
// differential tests raise false alarms (issue #10, item 16) against the harness: with
// -0.0 and 0.0 stored, "f = 0" selects both rows on both sides and the rows keep their
// sign bit; a 17-digit literal selects exactly its row. Whether this DuckDB still has
// the quirks when queried naively is only logged.
func TestFloatComparisonsIndependentOfDuckDB(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	vals := []float64{math.Copysign(0, -1), 0, -0.009999999999999787, math.Nextafter(-0.009999999999999787, 0), 1.5}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i, v := range vals {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(v)
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	dir := t.TempDir()
	tbl, err := table.CreateURL(bg, dir, schema, table.CreateOptions{})
	require.NoError(t, err)
	_, err = tbl.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	db := openDuck(t)
	files := duckReplay(t, db, dir, -1)
	_, err = db.Exec("CREATE VIEW t AS " + duckTableSQL(t, dir, schema, nil, files))
	require.NoError(t, err)
	for _, c := range []struct {
		pred pred
		want []string
	}{
		{same("f = 0"), []string{"0 | -0", "1 | 0"}},
		{floatLit(-0.009999999999999787), []string{"2 | -0.009999999999999787"}},
	} {
		p := c.pred
		if !strings.HasPrefix(p.ours, "f") {
			p = pred{"f = " + p.ours, "f = " + p.duck}
		}
		sc, err := tbl.Scan(bg, table.WithFilter(p.ours))
		require.NoError(t, err)
		rd, err := sc.Read(bg)
		require.NoError(t, err)
		ours := scanRows(t, rd.RecordReader())
		rd.Release()
		theirs := duckRows(t, db, duckFilterQuery(schema, p.duck), schema)
		require.NoError(t, sameMultiset(ours, c.want, 5), "skiplake, %s", p.ours)
		require.NoError(t, sameMultiset(theirs, c.want, 5), "duckdb, %s", p.duck)
		naive := duckRows(t, db, "SELECT * FROM t WHERE "+strings.ReplaceAll(p.duck, "CAST('-0.009999999999999787' AS DOUBLE)", "-0.009999999999999787"), schema)
		if err := sameMultiset(c.want, naive, 5); err != nil {
			t.Logf("DuckDB queried naively (unquoted literal, raw column) still has the quirk for %s (\"skiplake\" = expected rows): %v", p.duck, err)
		}
	}
}
