package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/value"
)

var sizeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// chain returns "v + 1 + 1 ..." with n terms after v (n operators).
func chain(first, op, term string, n int) string {
	return first + strings.Repeat(" "+op+" "+term, n)
}

// Parsing and binding a scalar expression is linear in its size (issue 31 item 8: an
// UPDATE SET of 8,000 terms took 126 s to bind, every node printing its subtree). The
// test counts allocations, which grew quadratically: doubling the expression must
// about double them.
func TestScalarParseAndBindAreLinear(t *testing.T) {
	for _, tc := range []struct{ name, first, op, term string }{
		{"sum", "v", "+", "1"},
		{"mixed types (implicit casts at every level)", "v", "+", "1.5"},
		{"product", "v", "*", "1"},
		{"concat", "s", "||", "'x'"},
		{"negations", "v", "-", "-v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := func(n int) float64 {
				src := chain(tc.first, tc.op, tc.term, n)
				return testing.AllocsPerRun(3, func() {
					e, err := ParseScalar(src)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := BindScalar(e, sizeSchema); err != nil {
						t.Fatal(err)
					}
				})
			}
			const n = MaxScalarOperators / 2 // terms: the negations case has two operators a term
			a, b, c := allocs(n/4), allocs(n/2), allocs(n)
			if b > 2.3*a || c > 2.3*b {
				t.Fatalf("allocations grow faster than the expression: %.0f, %.0f, %.0f for %d, %d, %d terms", a, b, c, n/4, n/2, n)
			}
		})
	}
}

// The largest expression allowed evaluates correctly, and its errors still name the
// failing subexpression.
func TestScalarLargestExpressionEvaluates(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	src := chain("v", "+", "1", MaxScalarOperators)
	e, err := ParseScalar(src)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := BindScalar(e, sizeSchema)
	if err != nil {
		t.Fatal(err)
	}
	rec := buildRecord(mem, sizeSchema, []testRow{
		{"v": value.Int64(5), "s": value.String("a")},
		{"v": value.Int64(1<<63 - 1 - 500), "s": value.Null()},
	})
	defer rec.Release()
	out, err := bs.Evaluate(rec, selOf(2, 0), mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*array.Int64).Value(0); got != 5+MaxScalarOperators {
		t.Fatalf("got %d, want %d", got, 5+MaxScalarOperators)
	}
	out.Release()
	_, err = bs.Evaluate(rec, selOf(2, 1), mem)
	var ee *EvalError
	if !errors.As(err, &ee) || !errors.Is(err, ErrOverflow) || ee.Row != 1 || !strings.HasPrefix(ee.Expr, "v + 1 + 1") {
		t.Fatalf("overflow error %v", err)
	}
}

// Expressions beyond the bounds are refused with a parse error that says so, never a
// stack overflow: 100,000 terms of every operator, 100,000 nested parentheses, unary
// minus, CAST and CASE nesting.
func TestScalarExpressionBounds(t *testing.T) {
	const n = 100_000
	cases := []struct{ name, src, want string }{
		{"100k sum terms", chain("v", "+", "1", n), "more than 1000 operators"},
		{"100k product terms", chain("v", "*", "1", n), "more than 1000 operators"},
		{"100k concat terms", chain("s", "||", "'x'", n), "more than 1000 operators"},
		{"one operator too many", chain("v", "-", "1", MaxScalarOperators+1), "more than 1000 operators"},
		{"100k nested parentheses", strings.Repeat("(", n) + "v" + strings.Repeat(")", n), "nested too deeply"},
		{"100k unary minus", strings.Repeat("- ", n) + "v", "nested too deeply"},
		{"100k nested casts", strings.Repeat("CAST(", n) + "v" + strings.Repeat(" AS BIGINT)", n), "nested too deeply"},
		{"100k nested CASE", strings.Repeat("CASE WHEN v > 0 THEN ", n) + "v" + strings.Repeat(" END", n), "nested too deeply"},
		{"100k parenthesized sums", strings.Repeat("(v + ", n) + "1" + strings.Repeat(")", n), "nested too deeply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScalar(tc.src)
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseScalar: %v, want a ParseError saying %q", err, tc.want)
			}
			_, err = ParseAssignments("v = 1, v = " + tc.src)
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseAssignments: %v, want a ParseError saying %q", err, tc.want)
			}
		})
	}
	// The bound is per assignment: many assignments of large expressions are fine.
	src := "v = " + chain("v", "+", "1", MaxScalarOperators) + ", s = " + chain("s", "||", "'x'", MaxScalarOperators)
	if _, err := ParseAssignments(src); err != nil {
		t.Fatal(err)
	}
}
