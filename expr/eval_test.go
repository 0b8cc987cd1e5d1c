package expr

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

// evalSchema is the subset of testSchema the random tests populate.
func evalSchema() *arrow.Schema {
	var fs []arrow.Field
	for _, f := range testSchema().Fields() {
		switch f.Name {
		case "mixed", "Mixed", "dup", "DUP", "tsns", "price", "sh":
			continue
		}
		fs = append(fs, f)
	}
	return arrow.NewSchema(fs, nil)
}

// randomLeafValue draws a value (possibly NULL) of a leaf type from a small domain
// so that equalities and duplicates happen often.
func randomLeafValue(r *rand.Rand, dt arrow.DataType) value.Value {
	if r.IntN(6) == 0 {
		return value.Null()
	}
	switch t := dt.(type) {
	case *arrow.Int64Type:
		if r.IntN(20) == 0 {
			return value.Int64([]int64{math.MinInt64, math.MaxInt64}[r.IntN(2)])
		}
		return value.Int64(int64(r.IntN(21) - 10))
	case *arrow.Int32Type:
		return value.Int64(int64(r.IntN(21) - 10))
	case *arrow.Int8Type:
		return value.Int64([]int64{-128, -1, 0, 1, 2, 5, 127}[r.IntN(7)])
	case *arrow.Float32Type:
		return value.Float64(float64(float32([]float64{math.NaN(), math.Inf(-1), -1.5, math.Copysign(0, -1), 0, 0.1, 2, math.Inf(1)}[r.IntN(8)])))
	case *arrow.Float64Type:
		return value.Float64([]float64{math.NaN(), math.Inf(-1), -1.5, math.Copysign(0, -1), 0, 0.1, 2, math.Inf(1), 1e300}[r.IntN(9)])
	case *arrow.Decimal128Type:
		return value.Decimal(decimal128.FromI64(int64(r.IntN(2001)-1000)), t.Precision, t.Scale)
	case *arrow.StringType:
		return value.String([]string{"", "a", "ab", "abc", "abd", "b", "é", "éa", "a_c", "a%c", strings.Repeat("x", 40), "\x7f", "日本"}[r.IntN(13)])
	case *arrow.BinaryType:
		return value.Binary([]byte{byte(r.IntN(3)), byte(r.IntN(256))}[:r.IntN(3)])
	case *arrow.BooleanType:
		return value.Bool(r.IntN(2) == 0)
	case *arrow.Date32Type:
		return value.Date(int64(19000 + r.IntN(5)))
	case *arrow.TimestampType:
		us := int64(19000+r.IntN(3))*microsPerDay + int64(r.IntN(3))*43200*1000000 + int64(r.IntN(2))
		if t.TimeZone != "" {
			return value.Timestamp(us)
		}
		return value.TimestampNTZ(us)
	}
	panic(fmt.Sprintf("no generator for %s", dt))
}

// appendValue appends v (NULL allowed) to a builder of the leaf type.
func appendValue(b array.Builder, v value.Value) {
	if v.IsNull() {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v.AsInt64())
	case *array.Int32Builder:
		b.Append(int32(v.AsInt64()))
	case *array.Int16Builder:
		b.Append(int16(v.AsInt64()))
	case *array.Int8Builder:
		b.Append(int8(v.AsInt64()))
	case *array.Float32Builder:
		b.Append(float32(v.AsFloat64()))
	case *array.Float64Builder:
		b.Append(v.AsFloat64())
	case *array.Decimal128Builder:
		d, _, _ := v.AsDecimal()
		b.Append(d)
	case *array.StringBuilder:
		b.Append(v.AsString())
	case *array.BinaryBuilder:
		b.Append(v.AsBytes())
	case *array.BooleanBuilder:
		b.Append(v.AsBool())
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.AsInt64()))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.AsInt64()))
	default:
		panic(fmt.Sprintf("no appender for %T", b))
	}
}

// testRows is random data: rows[i][field] with struct fields as []value.Value
// (nil for a NULL struct).
type testRow map[string]any

func randomRows(r *rand.Rand, sc *arrow.Schema, n int) []testRow {
	rows := make([]testRow, n)
	for i := range rows {
		row := testRow{}
		for _, f := range sc.Fields() {
			if st, ok := f.Type.(*arrow.StructType); ok {
				if r.IntN(8) == 0 {
					row[f.Name] = []value.Value(nil)
					continue
				}
				var kids []value.Value
				for _, k := range st.Fields() {
					kids = append(kids, randomLeafValue(r, k.Type))
				}
				row[f.Name] = kids
				continue
			}
			row[f.Name] = randomLeafValue(r, f.Type)
		}
		rows[i] = row
	}
	return rows
}

func buildRecord(mem memory.Allocator, sc *arrow.Schema, rows []testRow) arrow.RecordBatch {
	rb := array.NewRecordBuilder(mem, sc)
	defer rb.Release()
	for fi, f := range sc.Fields() {
		fb := rb.Field(fi)
		for _, row := range rows {
			if sb, ok := fb.(*array.StructBuilder); ok {
				kids := row[f.Name].([]value.Value)
				if kids == nil {
					sb.AppendNull()
					continue
				}
				sb.Append(true)
				for k, v := range kids {
					appendValue(sb.FieldBuilder(k), v)
				}
				continue
			}
			appendValue(fb, row[f.Name].(value.Value))
		}
	}
	return rb.NewRecordBatch()
}

// ---- an independent three-valued oracle over the unbound AST ----

type tri int8

const (
	triF tri = 0
	triU tri = 1
	triT tri = 2
)

func triOf(b bool) tri {
	if b {
		return triT
	}
	return triF
}

type oracle struct {
	sc *arrow.Schema
}

func (o oracle) lookup(row testRow, path []string) (value.Value, arrow.DataType) {
	f, _ := o.sc.FieldsByName(path[0])
	v := row[path[0]]
	if len(path) == 1 {
		return v.(value.Value), f[0].Type
	}
	st := f[0].Type.(*arrow.StructType)
	kids := v.([]value.Value)
	idx, _ := st.FieldIdx(path[1])
	if kids == nil {
		return value.Null(), st.Field(idx).Type
	}
	return kids[idx], st.Field(idx).Type
}

// extended real: NaN above +Inf above reals.
func extReal(v value.Value) (r *big.Rat, rank int) {
	switch v.Kind() {
	case value.KindInt64:
		return new(big.Rat).SetInt64(v.AsInt64()), 0
	case value.KindDecimal:
		u, _, s := v.AsDecimal()
		return new(big.Rat).SetFrac(u.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)), 0
	case value.KindFloat64:
		f := v.AsFloat64()
		switch {
		case math.IsNaN(f):
			return nil, 3
		case math.IsInf(f, 1):
			return nil, 2
		case math.IsInf(f, -1):
			return nil, -2
		}
		return new(big.Rat).SetFloat64(f), 0
	}
	panic("not numeric")
}

func cmpExt(a, b value.Value) int {
	ar, ak := extReal(a)
	br, bk := extReal(b)
	if ak != 0 || bk != 0 {
		return cmpInt(ak, bk)
	}
	return ar.Cmp(br)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compare orders a column value against a literal the way Spark would.
func (o oracle) compare(dt arrow.DataType, v, lit value.Value) int {
	switch dt.(type) {
	case *arrow.Float32Type, *arrow.Float64Type:
		l := lit
		if lit.Kind() == value.KindString {
			f, _ := strconv.ParseFloat(lit.AsString(), 64)
			l = value.Float64(f)
		}
		lf, _ := new(big.Float).SetRat(mustRat(l)).Float64()
		if r, k := extReal(l); k != 0 || r == nil {
			lf = l.AsFloat64()
		}
		return value.CompareFloat(v.AsFloat64(), lf)
	case *arrow.Int64Type, *arrow.Int32Type, *arrow.Int8Type, *arrow.Decimal128Type:
		return cmpExt(v, lit)
	case *arrow.Date32Type:
		if lit.Kind() == value.KindDate {
			return cmpInt64(v.AsInt64(), lit.AsInt64())
		}
		return big.NewInt(v.AsInt64() * microsPerDay).Cmp(big.NewInt(lit.AsInt64()))
	case *arrow.TimestampType:
		l := lit.AsInt64()
		if lit.Kind() == value.KindDate {
			l *= microsPerDay
		}
		return cmpInt64(v.AsInt64(), l)
	case *arrow.BinaryType:
		return strings.Compare(v.AsString(), lit.AsString())
	}
	c, ok := value.Compare(v, lit)
	if !ok {
		panic(fmt.Sprintf("oracle cannot compare %v with %v", v, lit))
	}
	return c
}

func mustRat(v value.Value) *big.Rat {
	if r, k := extReal(v); k == 0 {
		return r
	}
	return new(big.Rat)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func likeRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '\\':
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '%':
			b.WriteString(`.*`)
		case '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String())
}

func (o oracle) eval(e Expr, row testRow) tri {
	switch e := e.(type) {
	case Constant:
		return triOf(bool(e))
	case *NotExpr:
		return 2 - o.eval(e.Term, row)
	case *AndExpr:
		r := triT
		for _, t := range e.Terms {
			r = min(r, o.eval(t, row))
		}
		return r
	case *OrExpr:
		r := triF
		for _, t := range e.Terms {
			r = max(r, o.eval(t, row))
		}
		return r
	case *Comparison:
		v, dt := o.lookup(row, e.Left.(*ColumnRef).Path)
		lit := e.Right.(*Literal).Value
		if e.Op == OpNullSafeEq {
			if v.IsNull() || lit.IsNull() {
				return triOf(v.IsNull() && lit.IsNull())
			}
			return triOf(o.compare(dt, v, lit) == 0)
		}
		if v.IsNull() || lit.IsNull() {
			return triU
		}
		return triOf(opHolds(e.Op, o.compare(dt, v, lit)))
	case *BetweenExpr:
		r := o.eval(And(Ge(e.Value, e.Low), Le(e.Value, e.High)), row)
		if e.Negated {
			return 2 - r
		}
		return r
	case *InExpr:
		v, dt := o.lookup(row, e.Value.(*ColumnRef).Path)
		r := triF
		if v.IsNull() {
			r = triU
		} else {
			for _, x := range e.List {
				lit := x.(*Literal).Value
				if lit.IsNull() {
					r = max(r, triU)
				} else if o.compare(dt, v, lit) == 0 {
					r = triT
				}
			}
		}
		if e.Negated {
			return 2 - r
		}
		return r
	case *IsNullExpr:
		v, _ := o.lookup(row, e.Value.(*ColumnRef).Path)
		return triOf(v.IsNull() != e.Negated)
	case *LikeExpr:
		v, _ := o.lookup(row, e.Value.(*ColumnRef).Path)
		if v.IsNull() {
			return triU
		}
		return triOf(likeRegexp(e.Pattern).MatchString(v.AsString()) != e.Negated)
	}
	panic(fmt.Sprintf("oracle: unexpected %T", e))
}

// ---- random predicates ----

type leafCol struct {
	path []string
	dt   arrow.DataType
}

func leafColumns(sc *arrow.Schema) []leafCol {
	var out []leafCol
	for _, f := range sc.Fields() {
		if st, ok := f.Type.(*arrow.StructType); ok {
			for _, k := range st.Fields() {
				out = append(out, leafCol{[]string{f.Name, k.Name}, k.Type})
			}
			continue
		}
		out = append(out, leafCol{[]string{f.Name}, f.Type})
	}
	return out
}

// randomLiteral draws a literal that binds against dt, including the awkward
// ones: out of range, more scale than the column, other literal flavours.
func randomLiteral(r *rand.Rand, dt arrow.DataType) value.Value {
	if r.IntN(25) == 0 {
		return value.Null()
	}
	switch dt.(type) {
	case *arrow.Int64Type, *arrow.Int32Type, *arrow.Int8Type, *arrow.Decimal128Type:
		switch r.IntN(6) {
		case 0:
			return value.Int64([]int64{300, -300, 127, -128, math.MaxInt64, math.MinInt64}[r.IntN(6)])
		case 1:
			return value.Decimal(decimal128.FromI64(int64(r.IntN(4001)-2000)), 6, 3)
		case 2:
			return value.Float64([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 2.5, -0.5, 1e30}[r.IntN(6)])
		case 3:
			return value.Decimal(decimal128.FromI64(int64(r.IntN(2001)-1000)), 5, 2)
		}
		return randomLeafValue(r, dt)
	case *arrow.Float32Type, *arrow.Float64Type:
		switch r.IntN(4) {
		case 0:
			return value.Int64(int64(r.IntN(5) - 2))
		case 1:
			return value.Decimal(decimal128.FromI64(int64(r.IntN(41)-20)), 3, 1)
		}
		if v := randomLeafValue(r, dt); !v.IsNull() {
			return v
		}
		return value.Float64(0)
	case *arrow.Date32Type:
		if r.IntN(3) == 0 {
			return value.Timestamp(int64(19000+r.IntN(5))*microsPerDay + int64(r.IntN(2))*3600000000)
		}
	case *arrow.TimestampType:
		if r.IntN(3) == 0 {
			return value.Date(int64(19000 + r.IntN(4)))
		}
	case *arrow.BinaryType:
		if v := randomLeafValue(r, dt); !v.IsNull() {
			return v
		}
		return value.Binary(nil)
	}
	if v := randomLeafValue(r, dt); !v.IsNull() {
		return v
	}
	return randomLiteral(r, dt)
}

var likePatterns = []string{"a%", "%", "", "ab%", "a_c", "%c", "%b%", `a\_c`, `a\%c`, "é%", "_", "__", "%a%b%", "x%x", "日%"}

func randomPredicate(r *rand.Rand, cols []leafCol, depth int) Expr {
	if depth > 0 && r.IntN(3) > 0 {
		n := 2 + r.IntN(2)
		terms := make([]Expr, n)
		for i := range terms {
			terms[i] = randomPredicate(r, cols, depth-1)
		}
		switch r.IntN(3) {
		case 0:
			return And(terms...)
		case 1:
			return Or(terms...)
		}
		return Not(And(terms...))
	}
	c := cols[r.IntN(len(cols))]
	col := Col(c.path...)
	lit := func() Expr { return Lit(randomLiteral(r, c.dt)) }
	switch r.IntN(9) {
	case 0:
		return IsNull(col)
	case 1:
		return IsNotNull(col)
	case 2:
		k := 1 + r.IntN(4)
		list := make([]Expr, k)
		for i := range list {
			list[i] = lit()
		}
		if r.IntN(2) == 0 {
			return NotIn(col, list...)
		}
		return In(col, list...)
	case 3:
		if r.IntN(2) == 0 {
			return Between(col, lit(), lit())
		}
		return NotBetween(col, lit(), lit())
	case 4:
		if _, ok := c.dt.(*arrow.StringType); ok {
			p := likePatterns[r.IntN(len(likePatterns))]
			if r.IntN(3) == 0 {
				return NotLike(col, p)
			}
			return Like(col, p)
		}
	}
	return Compare(Op(1+r.IntN(7)), col, lit())
}

// propertyRounds is the number of random cases of a property test: def, or short
// with -short, or $SKIPLAKE_PROPERTY_N.
func propertyRounds(def, short int) int {
	if s := os.Getenv("SKIPLAKE_PROPERTY_N"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return short
	}
	return def
}

func TestEvaluateMatchesThreeValuedOracle(t *testing.T) {
	sc := evalSchema()
	cols := leafColumns(sc)
	r := rand.New(rand.NewPCG(1, 2))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := randomRows(r, sc, 300)
	rec := buildRecord(mem, sc, rows)
	defer rec.Release()
	sliced := rec.NewSlice(7, 250)
	defer sliced.Release()
	o := oracle{sc: sc}
	n := propertyRounds(1500, 300)
	for k := 0; k < n; k++ {
		e := randomPredicate(r, cols, 2)
		b, err := Bind(e, sc)
		if err != nil {
			t.Fatalf("Bind(%s): %v", e, err)
		}
		for _, tc := range []struct {
			rec  arrow.RecordBatch
			rows []testRow
		}{{rec, rows}, {sliced, rows[7:250]}} {
			sel, err := b.Evaluate(tc.rec)
			if err != nil {
				t.Fatalf("Evaluate(%s): %v", e, err)
			}
			for i, row := range tc.rows {
				want := o.eval(e, row) == triT
				if got := sel.Contains(i); got != want {
					t.Fatalf("predicate %s (bound %s), row %d %v: Evaluate=%v, oracle=%v", e, b, i, row, got, want)
				}
				if k%10 == 0 {
					vals, err := b.RowValues(tc.rec, i)
					if err != nil {
						t.Fatal(err)
					}
					if got := b.EvaluateRow(vals); got != want {
						t.Fatalf("predicate %s (bound %s), row %d: EvaluateRow=%v, oracle=%v", e, b, i, got, want)
					}
				}
			}
			if sel.Count() != len(sel.Indices(nil)) {
				t.Fatalf("Count and Indices disagree")
			}
		}
	}
}

func TestLikeMatchesRegexpOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "é", "%", "_", "\\", "日", "\xff"}
	for k := 0; k < 20000; k++ {
		var p, s strings.Builder
		for i := r.IntN(6); i > 0; i-- {
			p.WriteString(alphabet[r.IntN(len(alphabet)-1)]) // patterns are valid UTF-8
		}
		for i := r.IntN(7); i > 0; i-- {
			c := alphabet[r.IntN(len(alphabet))]
			if c != "\xff" || r.IntN(2) == 0 {
				s.WriteString(c)
			}
		}
		lp, err := compileLike(p.String())
		if err != nil {
			continue // dangling escape
		}
		want := likeRegexp(p.String()).MatchString(s.String())
		if got := lp.Match(s.String()); got != want {
			t.Fatalf("LIKE %q on %q: got %v, want %v", p.String(), s.String(), got, want)
		}
	}
}

func TestEvaluateRejectsMismatchedRecord(t *testing.T) {
	sc := evalSchema()
	b, err := Bind(MustParse("id = 1"), sc)
	if err != nil {
		t.Fatal(err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), other)
	defer rb.Release()
	rb.Field(0).(*array.Int64Builder).Append(1)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if _, err := b.Evaluate(rec); err == nil || !strings.Contains(err.Error(), "does not match the bound schema") {
		t.Fatalf("err = %v", err)
	}
}
