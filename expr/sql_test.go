package expr

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

func TestParseSQLRendersCanonically(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a + b > 0", "a + b > 0"},
		{"length(name) <= 10 AND name IS NOT NULL", "length(name) <= 10 AND name IS NOT NULL"},
		{"is_active", "is_active"},
		{"NOT is_active OR amount > 0", "NOT (is_active) OR amount > 0"},
		{"(a > 0) = flag", "(a > 0) = flag"},
		{"(a + b) * 2 >= c", "(a + b) * 2 >= c"},
		{"year(ts) BETWEEN 2000 AND 2030", "year(ts) BETWEEN 2000 AND 2030"},
		{"CAST(ts AS DATE) = d", "CAST(ts AS date) = d"},
		{"upper(code) IN ('A', lower(x))", "upper(code) IN ('A', lower(x))"},
		{"CASE WHEN a + 1 > 2 THEN 'x' ELSE 'y' END = 'x'", "CASE WHEN a + 1 > 2 THEN 'x' ELSE 'y' END = 'x'"},
		{"substring(s, 1, 3) LIKE 'ab%'", "substring(s, 1, 3) LIKE 'ab%'"},
		{"coalesce(a, 0) <=> b", "coalesce(a, 0) <=> b"},
		{"birthDate > '1900-01-01'", "birthDate > '1900-01-01'"},
		{"`my col` % 2 = 0", "`my col` % 2 = 0"},
		{"f(g(x), 1)", "f(g(x), 1)"},
	}
	for _, tc := range cases {
		e, err := ParseSQL(tc.in)
		if err != nil {
			t.Fatalf("ParseSQL(%q): %v", tc.in, err)
		}
		if got := e.String(); got != tc.want {
			t.Errorf("ParseSQL(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
		again, err := ParseSQL(e.String())
		if err != nil || !Equal(e, again) {
			t.Errorf("round trip of %q: %v (%v)", tc.in, again, err)
		}
	}
}

func TestParseSQLErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a >", "expr: at 4: expected"},
		{"year(ts", "expr: at 8: expected ',', ')' or operator but found end of input"},
		{"a + + ", "expr: at 7"},
		{"a > 0 b", "expr: at 7: expected operator, AND, OR or end of input but found 'b'"},
	} {
		_, err := ParseSQL(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseSQL(%q) = %v, want a *ParseError starting %q", tc.in, err, tc.want)
		}
	}
}

// Parse (filters) and ParseScalar (SET values) keep their grammars: a scalar
// operand is not a filter, a bare column is not a predicate.
func TestParseKeepsFilterGrammar(t *testing.T) {
	for _, in := range []string{"a + 1 > 2", "flag", "year(ts) = 2020"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted a SQL expression", in)
		}
	}
	if e, err := ParseScalar("year(ts) + 1"); err != nil || e.String() != "year(ts) + 1" {
		t.Errorf("ParseScalar with a call: %v, %v", e, err)
	}
}

func FuzzParseSQL(f *testing.F) {
	for _, s := range []string{
		"a + b > 0", "is_active AND NOT (x IS NULL)", "year(ts) = 2020", "(a > 0) = TRUE",
		"CASE WHEN a > 1 THEN b ELSE c END IN (1, 2)", "substring(s, -3) LIKE '%x'",
		"`a``b` BETWEEN 1 AND x * 2", "coalesce(a, b, c) <=> NULL",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseSQL(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseSQL(%q) returned %T, want *ParseError", s, err)
			}
			return
		}
		text := e.String()
		again, err := ParseSQL(text)
		if err != nil {
			t.Fatalf("ParseSQL(%q).String() = %q does not re-parse: %v", s, text, err)
		}
		if !Equal(e, again) {
			t.Fatalf("round trip changed the AST: %q -> %q -> %q", s, text, again.String())
		}
	})
}

// TestBindCheckFastLeavesMatchScalarPath: the predicates Bind can represent are bound
// by BindCheck with Bind's leaves; the same expressions evaluated as boolean values
// (BindExpression, the general path) and by the independent three-valued oracle select
// exactly the same rows. So whichever path a constraint takes, it means the same.
func TestBindCheckFastLeavesMatchScalarPath(t *testing.T) {
	sc := evalSchema()
	cols := leafColumns(sc)
	r := rand.New(rand.NewPCG(30, 31))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := randomRows(r, sc, 300)
	rec := buildRecord(mem, sc, rows)
	defer rec.Release()
	o := oracle{sc: sc}
	n := propertyRounds(1500, 300)
	for k := 0; k < n; k++ {
		e := randomPredicate(r, cols, 2)
		bc, err := BindCheck(e, sc)
		if err != nil {
			t.Fatalf("BindCheck(%s): %v", e, err)
		}
		if bc.scalar {
			t.Fatalf("BindCheck(%s) = %s took the scalar path for a filter predicate", e, bc)
		}
		sel, err := bc.Evaluate(rec)
		if err != nil {
			t.Fatalf("Evaluate(%s): %v", e, err)
		}
		bv, err := BindExpression(e, sc)
		if err != nil {
			t.Fatalf("BindExpression(%s): %v", e, err)
		}
		arr, err := bv.Evaluate(rec, nil, mem)
		if err != nil {
			t.Fatalf("BindExpression(%s).Evaluate: %v", e, err)
		}
		b := arr.(*array.Boolean)
		for i, row := range rows {
			want := o.eval(e, row) == triT
			if got := sel.Contains(i); got != want {
				t.Fatalf("%s row %d: BindCheck selects %v, oracle %v", e, i, got, want)
			}
			if got := b.IsValid(i) && b.Value(i); got != want {
				t.Fatalf("%s (value %s) row %d: value TRUE %v, oracle %v", e, bv, i, got, want)
			}
			if k%20 == 0 {
				vals, _ := bv.RowValues(rec, i)
				v, err := bv.EvaluateRow(vals)
				if err != nil || (!v.IsNull() && v.AsBool()) != want {
					t.Fatalf("%s row %d: EvaluateRow %v %v, oracle %v", e, i, v, err, want)
				}
			}
		}
		arr.Release()
	}
}

// TestBindCheckScalarLeavesMatchRowOracle: random predicates over scalar operands
// (arithmetic, CAST, CASE, concat) combined with AND, OR and NOT: the vectorised
// Evaluate selects exactly the rows the row oracle finds TRUE, whenever it succeeds.
func TestBindCheckScalarLeavesMatchRowOracle(t *testing.T) {
	sc := evalSchema()
	cols := leafColumns(sc)
	r := rand.New(rand.NewPCG(32, 33))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := randomRows(r, sc, 200)
	rec := buildRecord(mem, sc, rows)
	defer rec.Release()
	var leaf func(depth int) Expr
	leaf = func(depth int) Expr {
		if depth > 0 && r.IntN(3) == 0 {
			a, b := leaf(depth-1), leaf(depth-1)
			switch r.IntN(3) {
			case 0:
				return And(a, b)
			case 1:
				return Or(a, b)
			}
			return Not(a)
		}
		switch r.IntN(4) {
		case 0:
			return IsNull(randomScalar(r, cols, 2))
		case 1:
			return In(randomScalar(r, cols, 1), randomScalar(r, cols, 1), randomScalarLiteral(r))
		}
		return Compare(Op(1+r.IntN(7)), randomScalar(r, cols, 2), randomScalar(r, cols, 2))
	}
	n := propertyRounds(3000, 600)
	bound, evaluated := 0, 0
	for k := 0; k < n; k++ {
		e := leaf(2)
		bc, err := BindCheck(e, sc)
		if err != nil {
			if !errors.Is(err, ErrType) {
				t.Fatalf("BindCheck(%s): unexpected error %v", e, err)
			}
			continue
		}
		bound++
		sel, err := bc.Evaluate(rec)
		if err != nil {
			if sentinelOf(err) == nil {
				t.Fatalf("Evaluate(%s): error without a sentinel: %v", e, err)
			}
			continue
		}
		evaluated++
		for i := range rows {
			vals, err := bc.RowValues(rec, i)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sel.Contains(i), bc.EvaluateRow(vals); got != want {
				t.Fatalf("%s (bound %s) row %d: Evaluate %v, EvaluateRow %v", e, bc, i, got, want)
			}
		}
	}
	if bound < n/10 || evaluated < bound/3 {
		t.Fatalf("too few cases exercised: %d bound, %d evaluated of %d", bound, evaluated, n)
	}
}

// sqlRecord is one row per test of TestSQLSemantics: the columns a..ts with NULLs.
func sqlSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "u", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "f", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "nb", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
}

func sqlRecord(mem memory.Allocator) arrow.RecordBatch {
	ts, _, _ := ParseTimestamp("2015-03-05 09:32:05.359")
	d, _ := ParseDate("2019-08-04")
	row := testRow{
		"a": value.Int64(0), "n": value.Null(), "s": value.String("Spark SQL"), "u": value.String("héllo"),
		"d": value.Date(d), "ts": value.Timestamp(ts), "ntz": value.TimestampNTZ(ts),
		"t": value.Bool(true), "f": value.Bool(false), "nb": value.Null(),
		"dec": value.Decimal(decimal128.FromI64(-1234), 10, 2),
	}
	return buildRecord(mem, sqlSchema(), []testRow{row})
}

// TestSQLSemantics pins the values of SQL expressions on one row, Spark SQL's answers
// (the function examples of Spark's documentation where there is one), in UTC.
func TestSQLSemantics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sqlRecord(mem)
	defer rec.Release()
	cases := []struct{ expr, want string }{
		// Kleene logic and NULL
		{"t AND nb", "NULL"}, {"f AND nb", "FALSE"}, {"t OR nb", "TRUE"}, {"f OR nb", "NULL"},
		{"NOT nb", "NULL"}, {"n = 1", "NULL"}, {"n <=> NULL", "TRUE"}, {"a <=> n", "FALSE"},
		{"1 IN (2, NULL)", "NULL"}, {"1 IN (1, NULL)", "TRUE"}, {"n IN (1)", "NULL"}, {"1 NOT IN (2, NULL)", "NULL"},
		{"n IS NULL", "TRUE"}, {"isnotnull(n)", "FALSE"}, {"a BETWEEN -1 AND n", "NULL"},
		// short circuits: the right operand is not evaluated (no division by zero)
		{"a <> 0 AND 10 / a > 1", "FALSE"}, {"a = 0 OR 10 / a > 1", "TRUE"},
		{"CASE WHEN a = 0 THEN 0 ELSE 10 / a END", "0"}, {"coalesce(a, 10 / a)", "0"},
		// comparisons convert as Spark does
		{"dec < -12.339", "TRUE"}, {"dec = -12.34", "TRUE"}, {"d = TIMESTAMP '2019-08-04 00:00:00'", "TRUE"},
		{"ts > '2015-03-05'", "TRUE"}, {"d >= '2019-08-04'", "TRUE"}, {"ntz = ts", "TRUE"},
		// dates and times
		{"year(d)", "2019"}, {"month(ts)", "3"}, {"day(d)", "4"}, {"dayofmonth(ts)", "5"},
		{"quarter(DATE '2016-08-31')", "3"}, {"dayofweek(DATE '2009-07-30')", "5"},
		{"hour(ts)", "9"}, {"minute(ts)", "32"}, {"second(ts)", "5"}, {"hour(d)", "0"},
		{"year(DATE '0001-01-01')", "1"}, {"month(DATE '2000-02-29')", "2"},
		{"to_date(ts)", "2015-03-05"}, {"to_date('2016-12-31')", "2016-12-31"},
		{"CAST(ts AS DATE)", "2015-03-05"},
		{"date_trunc('YEAR', ts)", "2015-01-01 00:00:00"}, {"date_trunc('MM', ts)", "2015-03-01 00:00:00"},
		{"date_trunc('DD', ts)", "2015-03-05 00:00:00"}, {"date_trunc('HOUR', ts)", "2015-03-05 09:00:00"},
		{"date_trunc('MILLISECOND', ts)", "2015-03-05 09:32:05.359"}, {"date_trunc('WEEK', ts)", "2015-03-02 00:00:00"},
		{"date_trunc('QUARTER', ts)", "2015-01-01 00:00:00"},
		{"trunc(d, 'week')", "2019-07-29"}, {"trunc(d, 'MM')", "2019-08-01"}, {"trunc(d, 'quarter')", "2019-07-01"},
		{"trunc(DATE '2009-02-12', 'YEAR')", "2009-01-01"},
		{"date_format(d, 'yyyy-MM-dd')", `"2019-08-04"`}, {"date_format(ts, 'yyyy-MM')", `"2015-03"`},
		{"date_format(ts, 'yyyy-MM-dd-HH')", `"2015-03-05-09"`}, {"date_format(ts, 'HH:mm:ss')", `"09:32:05"`},
		// strings
		{"length(s)", "9"}, {"length('Spark SQL ')", "10"}, {"char_length(u)", "5"}, {"length(X'0102')", "2"},
		{"substring(s, 5)", `"k SQL"`}, {"substring(s, -3)", `"SQL"`}, {"substring(s, 5, 1)", `"k"`},
		{"substring(s, 0, 2)", `"Sp"`}, {"substr(s, -100, 3)", `""`}, {"substring(u, 2, 2)", `"él"`},
		{"substring(s, 3, -1)", `""`},
		{"upper(s)", `"SPARK SQL"`}, {"lower(s)", `"spark sql"`}, {"trim('    SparkSQL   ')", `"SparkSQL"`},
		{"ltrim('  a ')", `"a "`}, {"rtrim('  a ')", `"  a"`}, {"trim('\tx')", `"\tx"`},
		// numbers
		{"abs(-1)", "1"}, {"abs(dec)", "12.34"}, {"abs(a - 5)", "5"}, {"coalesce(n, NULL, 1)", "1"},
		{"nvl(n, a)", "0"}, {"ifnull(n, 2.5)", "2.5"},
	}
	for _, tc := range cases {
		e, err := ParseSQL(tc.expr)
		if err != nil {
			t.Fatalf("ParseSQL(%q): %v", tc.expr, err)
		}
		bs, err := BindExpression(e, sqlSchema())
		if err != nil {
			t.Fatalf("BindExpression(%q): %v", tc.expr, err)
		}
		arr, err := bs.Evaluate(rec, nil, mem)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		got := show(resultValue(arr, 0, bs.Type()))
		arr.Release()
		if got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
		vals, _ := bs.RowValues(rec, 0)
		if v, err := bs.EvaluateRow(vals); err != nil || show(v) != tc.want {
			t.Errorf("%s: EvaluateRow = %s (%v), want %s", tc.expr, show(v), err, tc.want)
		}
	}
}

// TestSQLRefusals: what skiplake cannot evaluate as Spark would is refused when the
// expression is bound, naming the function or the types, or fails the row naming it.
func TestSQLRefusals(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := sqlRecord(mem)
	defer rec.Release()
	for _, tc := range []struct {
		expr     string
		sentinel error
		want     string
	}{
		{"rand() > 0.5", ErrUnsupportedFunction, "function rand is not supported"},
		{"regexp_like(s, 'a+')", ErrUnsupportedFunction, "function regexp_like is not supported"},
		{"to_date(s, 'yyyy')", ErrUnsupportedFunction, "a format argument"},
		{"date_format(ts, 'EEE')", ErrUnsupportedFunction, `pattern "EEE"`},
		{"date_trunc('DECADE', ts)", ErrUnsupportedFunction, `unit "DECADE"`},
		{"date_format(ts, s) = 'x'", ErrUnsupportedFunction, "the pattern must be a string literal"},
		{"s = 1", ErrType, "cannot compare string with int (use CAST"},
		{"a + 1", ErrType, "is not a boolean"},
		{"year(s) = 1", ErrType, "needs a date or timestamp, not string"},
		{"substring(s, a) = 'x'", ErrType, "must be int, not bigint"},
		{"d > 'not a date'", ErrType, "'not a date'"},
	} {
		e, err := ParseSQL(tc.expr)
		if err != nil {
			t.Fatalf("ParseSQL(%q): %v", tc.expr, err)
		}
		_, err = BindCheck(e, sqlSchema())
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("BindCheck(%q) = %v, want %v containing %q", tc.expr, err, tc.sentinel, tc.want)
		}
	}
	// Non-ASCII case mapping fails the row, naming the function and the value.
	b, err := BindCheck(MustParseSQL(t, "upper(u) = 'X'"), sqlSchema())
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Evaluate(rec)
	var ee *EvalError
	if !errors.As(err, &ee) || !errors.Is(err, ErrUnsupportedFunction) || !strings.Contains(err.Error(), "'héllo'") {
		t.Fatalf("upper of non-ASCII: %v", err)
	}
}

func MustParseSQL(tb testing.TB, s string) Expr {
	tb.Helper()
	e, err := ParseSQL(s)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestCivilMatchesTimePackage: the day-number arithmetic of the date functions agrees
// with Go's proleptic Gregorian calendar over ±10,000 years.
func TestCivilMatchesTimePackage(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for k := 0; k < 20000; k++ {
		days := int64(r.IntN(2*3652425)) - 3652425
		if k < 1000 {
			days = int64(k) - 500
		}
		tm := time.Unix(days*86400, 0).UTC()
		y, m, d := value.CivilFromDays(days)
		if y != int64(tm.Year()) || m != int64(tm.Month()) || d != int64(tm.Day()) {
			t.Fatalf("value.CivilFromDays(%d) = %d-%d-%d, time says %s", days, y, m, d, tm.Format("2006-01-02"))
		}
		if back := value.DaysFromCivil(y, m, d); back != days {
			t.Fatalf("value.DaysFromCivil(value.CivilFromDays(%d)) = %d", days, back)
		}
		wantDow := int64(tm.Weekday()) + 1
		if got := floorMod(days+4, 7) + 1; got != wantDow {
			t.Fatalf("dayofweek(%d) = %d, want %d", days, got, wantDow)
		}
		if got, want := truncDays(days, "week"), days-int64((tm.Weekday()+6)%7); got != want {
			t.Fatalf("week of %d = %d, want %d", days, got, want)
		}
	}
}
