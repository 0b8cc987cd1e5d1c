package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

func TestParseRendersCanonically(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"comparison with integer", "a >= 10", "a >= 10"},
		{"keywords are case-insensitive", "a is not null and B like 'x%'", "a IS NOT NULL AND B LIKE 'x%'"},
		{"AND binds tighter than OR", "a = 1 OR b = 2 AND c = 3", "a = 1 OR (b = 2 AND c = 3)"},
		{"parentheses override precedence", "(a = 1 OR b = 2) AND c = 3", "(a = 1 OR b = 2) AND c = 3"},
		{"nested ANDs flatten", "a = 1 AND (b = 2 AND c = 3)", "a = 1 AND b = 2 AND c = 3"},
		{"TRUE in AND is dropped", "TRUE AND a = 1", "a = 1"},
		{"FALSE absorbs AND", "a = 1 AND FALSE", "FALSE"},
		{"double NOT cancels", "NOT NOT a = 1", "a = 1"},
		{"NOT renders with parentheses", "NOT a = 1", "NOT (a = 1)"},
		{"!= is <>", "a != 1", "a <> 1"},
		{"== is =", "a == 1", "a = 1"},
		{"null-safe equality", "a <=> NULL", "a <=> NULL"},
		{"literal on the left stays", "5 < a", "5 < a"},
		{"decimal literal keeps scale", "d = 1.50", "d = 1.50"},
		{"negative numbers", "a > -5 AND d < -0.25", "a > -5 AND d < -0.25"},
		{"exponent makes a double, echoed as written", "f < 1e3", "f < 1e3"},
		{"numbers echo as written", "amount > 500 AND x < -0.50 AND y = +7 AND z >= 2.5E-3", "amount > 500 AND x < -0.50 AND y = +7 AND z >= 2.5E-3"},
		{"DOUBLE NaN literal", "f = DOUBLE 'NaN'", "f = DOUBLE 'NaN'"},
		{"DOUBLE -Infinity literal", "f > DOUBLE '-Infinity'", "f > DOUBLE '-Inf'"},
		{"string with doubled quote", "s = 'it''s'", "s = 'it''s'"},
		{"date literal", "d = DATE '2024-02-29'", "d = DATE '2024-02-29'"},
		{"timestamp without zone", "t < TIMESTAMP '2024-01-02 03:04:05.123456'", "t < TIMESTAMP '2024-01-02 03:04:05.123456'"},
		{"timestamp with zone converts to UTC", "t < TIMESTAMP '2024-01-02 03:04:05+02:00'", "t < TIMESTAMP '2024-01-02 01:04:05+00:00'"},
		{"timestamp Z", "t = TIMESTAMP '2024-01-02T00:00:00Z'", "t = TIMESTAMP '2024-01-02 00:00:00+00:00'"},
		{"BETWEEN", "a BETWEEN 1 AND 5", "a BETWEEN 1 AND 5"},
		{"NOT BETWEEN", "a NOT BETWEEN 1 AND 5 AND b = 1", "a NOT BETWEEN 1 AND 5 AND b = 1"},
		{"IN list", "a IN (1, 2, NULL)", "a IN (1, 2, NULL)"},
		{"NOT IN list", "s NOT IN ('x','y')", "s NOT IN ('x', 'y')"},
		{"LIKE escapes", `s LIKE 'a\%b_%'`, `s LIKE 'a\%b_%'`},
		{"NOT LIKE", "s NOT LIKE '%x'", "s NOT LIKE '%x'"},
		{"nested column", "a.b.c = 1", "a.b.c = 1"},
		{"back-quoted name with back-quote and dot", "`we``ird.name` = 1", "`we``ird.name` = 1"},
		{"keyword as column name is quoted", "`and` = 1", "`and` = 1"},
		{"double quotes delimit names as in SQL", `"order id" = 1 AND "x""y" = 2 AND a."b" = 3`, "`order id` = 1 AND `x\"y` = 2 AND a.b = 3"},
		{"column vs column", "a < b", "a < b"},
		{"boolean literal in comparison", "flag = TRUE", "flag = TRUE"},
		{"binary literal", "bin = X'00FF'", "bin = X'00FF'"},
		{"big integer becomes decimal", "d = 123456789012345678901234", "d = 123456789012345678901234"},
		{"constant TRUE", "TRUE", "TRUE"},
		{"NOT over OR", "NOT (a = 1 OR b = 2)", "NOT (a = 1 OR b = 2)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := e.String(); got != tc.want {
				t.Fatalf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
			}
			again, err := Parse(e.String())
			if err != nil || !Equal(e, again) {
				t.Fatalf("round trip of %q failed: %v (%v)", e.String(), again, err)
			}
		})
	}
}

func TestParseLiteralsAreTyped(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want value.Value
	}{
		{"integer", "a = 42", value.Int64(42)},
		{"decimal", "a = 1.50", value.Decimal(decimal128.FromI64(150), 3, 2)},
		{"leading dot decimal", "a = .5", value.Decimal(decimal128.FromI64(5), 1, 1)},
		{"double", "a = 2.5e-1", value.Float64(0.25)},
		{"string", "a = 'x'", value.String("x")},
		{"date", "a = DATE '1970-01-02'", value.Date(1)},
		{"timestamp no zone is NTZ-flavoured", "a = TIMESTAMP '1970-01-01 00:00:01'", value.TimestampNTZ(1000000)},
		{"timestamp with zone", "a = TIMESTAMP '1970-01-01 01:00:00+01:00'", value.Timestamp(0)},
		{"timestamp_ntz keyword", "a = TIMESTAMP_NTZ '1970-01-01 00:00:00.5'", value.TimestampNTZ(500000)},
		{"null", "a = NULL", value.Null()},
		{"false", "a = FALSE", value.Bool(false)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := e.(*Comparison).Right.(*Literal).Value
			if got.Kind() != tc.want.Kind() || !value.Equal(got, tc.want) {
				t.Fatalf("literal = %v (%v), want %v (%v)", got, got.Kind(), tc.want, tc.want.Kind())
			}
		})
	}
}

func TestParseErrorsSayWhereAndWhat(t *testing.T) {
	cases := []struct {
		name, in string
		pos      int
		msg      string
	}{
		{"missing close paren", "(a = 1 AND b = 2", 17, "expr: at 17: expected ')' but found end of input"},
		{"stray AND after operand", "a = (1 AND", 5, "expr: at 5: expected column or literal but found '('"},
		{"missing operator", "a 1", 3, "expr: at 3: expected comparison operator, IS, IN, BETWEEN or LIKE but found '1'"},
		{"unterminated string", "s = 'abc", 5, "expr: at 5: unterminated string"},
		{"bad date", "d = DATE '2024-02-30'", 10, "expr: at 10: expected 'YYYY-MM-DD' but found invalid date '2024-02-30'"},
		{"LIKE needs a string", "s LIKE 5", 8, "expr: at 8: expected pattern string but found '5'"},
		{"trailing garbage", "a = 1 b", 7, "expr: at 7: expected AND, OR or end of input but found 'b'"},
		{"IS without NULL", "a IS 5", 6, "expr: at 6: expected NOT or NULL but found '5'"},
		{"unknown character", "a = 1 ; b", 7, "expr: at 7: unexpected character ';'"},
		{"dangling escape in LIKE", `s LIKE 'ab\'`, 8, `expr: at 8: LIKE pattern ends with an escape character '\'`},
		{"empty input", "", 1, "expr: at 1: expected column or literal but found end of input"},
		{"IN list missing comma", "a IN (1 2)", 9, "expr: at 9: expected ',' or ')' but found '2'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error = %v, want *ParseError", tc.in, err)
			}
			if pe.Pos != tc.pos || err.Error() != tc.msg {
				t.Fatalf("Parse(%q) = %q (pos %d), want %q (pos %d)", tc.in, err.Error(), pe.Pos, tc.msg, tc.pos)
			}
		})
	}
}

func TestParseRejectsDeepNesting(t *testing.T) {
	s := strings.Repeat("(", 10000) + "a = 1" + strings.Repeat(")", 10000)
	if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("deep nesting: err = %v", err)
	}
}

func TestBuilderSimplifies(t *testing.T) {
	a := Eq(Col("a"), Lit(value.Int64(1)))
	cases := []struct {
		name string
		got  Expr
		want string
	}{
		{"And(AlwaysTrue, x) = x", And(AlwaysTrue, a), "a = 1"},
		{"And() = TRUE", And(), "TRUE"},
		{"Or() = FALSE", Or(), "FALSE"},
		{"Or(x, AlwaysTrue) = TRUE", Or(a, AlwaysTrue), "TRUE"},
		{"Or(AlwaysFalse, x) = x", Or(AlwaysFalse, a), "a = 1"},
		{"Not(Not(x)) = x", Not(Not(a)), "a = 1"},
		{"Not(TRUE) = FALSE", Not(AlwaysTrue), "FALSE"},
		{"StartsWith escapes wildcards", StartsWith(Col("s"), "a%_\\"), `s LIKE 'a\%\_\\%'`},
		{"In builder", In(Col("a"), Lit(value.Int64(1)), Lit(value.Int64(2))), "a IN (1, 2)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if s := tc.got.String(); s != tc.want {
				t.Fatalf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a >= 10 AND s LIKE 'ab%'", "NOT (a = 1 OR b IS NULL)", "x IN (1, 2.5, 'a', NULL)",
		"t BETWEEN TIMESTAMP '2020-01-01 00:00:00' AND TIMESTAMP '2021-01-01 00:00:00+05:30'",
		"`a``b`.c <=> DATE '2000-01-01'", "f = DOUBLE 'NaN' OR f < -1e300", "s NOT LIKE '%\\_x_'",
		"b = X'DEADBEEF'", "TRUE", "((a))", "a = -.5", "d = 99999999999999999999999999999999999999.5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) returned %T, want *ParseError", s, err)
			}
			return
		}
		text := e.String()
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q does not re-parse: %v", s, text, err)
		}
		if !Equal(e, again) {
			t.Fatalf("round trip changed the AST: %q -> %q -> %q", s, text, again.String())
		}
	})
}
