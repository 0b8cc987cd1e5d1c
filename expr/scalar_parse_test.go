package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/skiplake/skiplake/value"
)

func TestParseScalarRendersCanonically(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a + b * c", "a + b * c"},
		{"(a + b) * c", "(a + b) * c"},
		{"a - (b - c)", "a - (b - c)"},
		{"a - b - c", "a - b - c"},
		{"a / b % c", "a / b % c"},
		{"a*(b/c)", "a * (b / c)"},
		{"-a", "-a"},
		{"-(a + 1)", "-(a + 1)"},
		{"- - a", "-(-a)"},
		{"+a", "a"},
		{"-5 - -3", "-5 - -3"},
		{"a-1", "a - 1"},
		{"a||b||'x'", "a || b || 'x'"},
		{"a || b + c", "a || b + c"},
		{"a + (b || c)", "a + (b || c)"},
		{"concat(a, 1, DATE '2020-01-01')", "concat(a, 1, DATE '2020-01-01')"},
		{"CAST(a AS DECIMAL(12, 2))", "CAST(a AS decimal(12,2))"},
		{"cast(a as decimal)", "CAST(a AS decimal(10,0))"},
		{"CAST(x AS bigint) + CAST(y AS tinyint)", "CAST(x AS bigint) + CAST(y AS tinyint)"},
		{"CAST(x AS long) + CAST(y AS byte)", "CAST(x AS bigint) + CAST(y AS tinyint)"},
		{"CAST(t AS timestamp_ntz)", "CAST(t AS timestamp_ntz)"},
		{"case when a > 1 and b is null then 1 when c = 'x' then a * 2 else null end",
			"CASE WHEN a > 1 AND b IS NULL THEN 1 WHEN c = 'x' THEN a * 2 ELSE NULL END"},
		{"CASE WHEN x IN (1, 2) THEN 'a' END", "CASE WHEN x IN (1, 2) THEN 'a' END"},
		{"case + 1", "`case` + 1"},
		{"cast * 2", "`cast` * 2"},
		{"concat + 1", "`concat` + 1"},
		{"`end` + `when`", "`end` + `when`"},
		{"1.50 * 1e3", "1.50 * 1e3"},
		{"DOUBLE 'NaN' + TIMESTAMP '2024-01-01 00:00:00'", "DOUBLE 'NaN' + TIMESTAMP '2024-01-01 00:00:00'"},
		{"X'0A' || NULL", "X'0A' || NULL"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"st.x * 2", "st.x * 2"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			e, err := ParseScalar(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != c.want {
				t.Fatalf("rendered %q, want %q", got, c.want)
			}
			again, err := ParseScalar(e.String())
			if err != nil || !Equal(e, again) {
				t.Fatalf("E1: ParseScalar(%q) = %v, %v; not equal to %#v", e.String(), again, err, e)
			}
		})
	}
}

func TestParseScalarFoldsSignedLiterals(t *testing.T) {
	e, err := ParseScalar("-9223372036854775808")
	if err != nil {
		t.Fatal(err)
	}
	l, ok := e.(*Literal)
	if !ok || l.Value.Kind() != value.KindInt64 || l.Value.AsInt64() != -9223372036854775808 {
		t.Fatalf("got %#v, want the int64 literal MinInt64", e)
	}
	// The predicate grammar reads signs the same way as before.
	for _, s := range []string{"a > -5", "a>-5", "a < -1.5e3", "a BETWEEN -2 AND +3", "a IN (-1, -2)"} {
		p, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if again, err := Parse(p.String()); err != nil || !Equal(p, again) {
			t.Fatalf("Parse round trip of %q: %v %v", s, again, err)
		}
	}
	if _, err := Parse("a > - b"); err == nil {
		t.Fatal("a predicate operand cannot be a negated column")
	}
}

func TestParseScalarErrorsSayWhereAndWhat(t *testing.T) {
	cases := []struct {
		in   string
		pos  int
		want string
	}{
		{"a +", 4, "expected column, literal, '(', CAST or CASE but found end of input"},
		{"a + * b", 5, "found '*'"},
		{"(a + 1", 7, "expected ')' or operator"},
		{"CAST(a AS)", 10, "expected type name"},
		{"CAST(a AS varchar)", 11, "type name"},
		{"CAST(a AS decimal(40,2))", 11, "invalid decimal(40,2)"},
		{"CAST(a AS decimal(5,6))", 11, "invalid decimal(5,6)"},
		{"CAST(a int)", 8, "expected AS or operator"},
		{"CASE WHEN a THEN 1 END", 13, "comparison operator"},
		{"CASE WHEN a > 1 THEN 1", 23, "expected WHEN, ELSE, END or operator"},
		{"CASE WHEN a > 1 1 END", 17, "expected THEN"},
		{"a | b", 3, "expected '||'"},
		{"concat(a b)", 10, "expected ',', ')' or operator"},
		{"a = 1", 3, "expected operator or end of input"},
		{"end + 1", 1, "found 'end'"},
		{"AND", 1, "found 'AND'"},
		{"a b", 3, "expected operator or end of input"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			_, err := ParseScalar(c.in)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseScalar(%q) = %v, want a *ParseError", c.in, err)
			}
			if pe.Pos != c.pos || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ParseScalar(%q): %v (pos %d), want pos %d and %q", c.in, err, pe.Pos, c.pos, c.want)
			}
		})
	}
}

func TestParseAssignments(t *testing.T) {
	as, err := ParseAssignments("qty = qty + 1, `unit price` = price * 1.1 , note = 'it''s' || note")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 {
		t.Fatalf("%d assignments", len(as))
	}
	wantCols := []string{"qty", "unit price", "note"}
	wantPos := []int{1, 16, 45}
	for i, a := range as {
		if a.Column.Path[0] != wantCols[i] || a.Pos != wantPos[i] {
			t.Fatalf("assignment %d: %s at %d, want %s at %d", i, a.Column, a.Pos, wantCols[i], wantPos[i])
		}
	}
	s := FormatAssignments(as)
	if s != "qty = qty + 1, `unit price` = price * 1.1, note = 'it''s' || note" {
		t.Fatalf("rendered %q", s)
	}
	again, err := ParseAssignments(s)
	if err != nil || len(again) != 3 {
		t.Fatal(err)
	}
	for i := range as {
		if !Equal(as[i].Column, again[i].Column) || !Equal(as[i].Value, again[i].Value) {
			t.Fatalf("round trip changed assignment %d: %s", i, again[i])
		}
	}

	for _, c := range []struct {
		in   string
		pos  int
		want string
	}{
		{"", 1, "expected column name"},
		{"a", 2, "expected '='"},
		{"a == 1", 3, "expected '='"},
		{"a = 1 b = 2", 7, "expected ',', operator or end of input"},
		{"a = 1,", 7, "expected column name"},
		{"1 = a", 1, "expected column name"},
		{"AND = 1", 1, "expected column name"},
		{"a = ", 5, "found end of input"},
	} {
		_, err := ParseAssignments(c.in)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Pos != c.pos || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseAssignments(%q) = %v, want a ParseError at %d with %q", c.in, err, c.pos, c.want)
		}
	}
}

func TestTypeNamesRoundTrip(t *testing.T) {
	for _, dt := range []arrow.DataType{dtBool, dtInt8, dtInt16, dtInt32, dtInt64, dtFloat32, dtFloat64,
		&arrow.Decimal128Type{Precision: 38, Scale: 10}, dtString, dtBinary, dtDate, dtTimestamp, dtTimestampNTZ} {
		e, err := ParseScalar("CAST(x AS " + TypeName(dt) + ")")
		if err != nil {
			t.Fatal(err)
		}
		if got := e.(*CastExpr).Type; !arrow.TypeEqual(got, dt) {
			t.Fatalf("%s parsed as %s", TypeName(dt), got)
		}
	}
}

// FuzzParseScalar: ParseScalar never panics, and whatever it accepts renders to text
// that parses back to an equal expression (E1).
func FuzzParseScalar(f *testing.F) {
	for _, s := range []string{"a + b * c", "-(a + 1)", "a || 'x' || CAST(b AS string)", "CASE WHEN a > 1 AND b IN (1, 2) THEN a % 3 ELSE -a END",
		"concat(`x y`, X'00', DATE '2024-01-01')", "CAST(d AS decimal(38,10)) / 3", "- - -5", "((((a))))", "a - -1e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseScalar(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Pos < 1 || pe.Pos > len(s)+1 {
				t.Fatalf("ParseScalar(%q): %v is not a positioned *ParseError", s, err)
			}
			return
		}
		again, err := ParseScalar(e.String())
		if err != nil {
			t.Fatalf("rendering %q of %q does not parse: %v", e.String(), s, err)
		}
		if !Equal(e, again) {
			t.Fatalf("E1 broken: %q -> %q -> %q", s, e.String(), again.String())
		}
	})
}

// FuzzParseAssignments: ParseAssignments never panics, and its result renders to a SET
// list that parses back to equal assignments.
func FuzzParseAssignments(f *testing.F) {
	for _, s := range []string{"a = 1", "a = a + 1, b = concat(b, 'x')", "`x` = CASE WHEN a > 0 THEN NULL END", "a = -a, b = CAST(c AS int)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		as, err := ParseAssignments(s)
		if err != nil {
			return
		}
		again, err := ParseAssignments(FormatAssignments(as))
		if err != nil || len(again) != len(as) {
			t.Fatalf("%q -> %q: %v", s, FormatAssignments(as), err)
		}
		for i := range as {
			if !Equal(as[i].Column, again[i].Column) || !Equal(as[i].Value, again[i].Value) {
				t.Fatalf("%q -> %q changed assignment %d", s, FormatAssignments(as), i)
			}
		}
	})
}
