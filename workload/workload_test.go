package workload

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
)

func TestParse(t *testing.T) {
	in := "\ufeff# dashboards\n" +
		"\n" +
		"l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'\n" +
		"  25: l_partkey BETWEEN 1000 AND 2000\n" +
		"-- comment\n" +
		"0.5 :x = 'a:b'\n" +
		"2.5e1: y IN (1, 2)\n" +
		"5 > z\n"
	w, err := Parse(strings.NewReader(in), "w.sql")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		filter string
		weight float64
		line   int
	}{
		{"l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'", 1, 3},
		{"l_partkey BETWEEN 1000 AND 2000", 25, 4},
		{"x = 'a:b'", 0.5, 6},
		{"y IN (1, 2)", 25, 7},
		{"5 > z", 1, 8},
	}
	if w.Len() != len(want) {
		t.Fatalf("%d queries, want %d: %+v", w.Len(), len(want), w.Queries)
	}
	for i, q := range w.Queries {
		if q.Filter != want[i].filter || q.Weight != want[i].weight || q.Line != want[i].line {
			t.Errorf("query %d = %q w=%v line %d, want %q w=%v line %d", i, q.Filter, q.Weight, q.Line, want[i].filter, want[i].weight, want[i].line)
		}
	}
	if got := w.TotalWeight(); got != 52.5 {
		t.Errorf("total weight %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in   string
		line, col  int
		wantInMsg  string
		parseError bool
		empty      bool
	}{
		{name: "bad filter names column of the line", in: "a = 1\nb >\n", line: 2, col: 4, parseError: true},
		{name: "offset past the weight", in: "3: a = = 1", line: 1, col: 8, parseError: true, wantInMsg: "1:8: expected column or literal"},
		{name: "zero weight", in: "0: a = 1", line: 1, col: 1, wantInMsg: "positive"},
		{name: "weight without filter", in: "4:   ", line: 1, col: 3, wantInMsg: "without a filter"},
		{name: "bad number", in: "1.2.3: a = 1", line: 1, col: 1, wantInMsg: "positive finite"},
		{name: "only comments", in: "# x\n\n-- y\n", empty: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.in), "f.txt")
			if c.empty {
				if !errors.Is(err, ErrEmpty) {
					t.Fatalf("err = %v, want ErrEmpty", err)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("err = %v, want a SyntaxError", err)
			}
			if se.Line != c.line || se.Column != c.col || se.Source != "f.txt" {
				t.Errorf("at %s:%d:%d, want f.txt:%d:%d (%v)", se.Source, se.Line, se.Column, c.line, c.col, err)
			}
			var pe *expr.ParseError
			if errors.As(err, &pe) != c.parseError {
				t.Errorf("wraps expr.ParseError = %v, want %v", !c.parseError, c.parseError)
			}
			if c.wantInMsg != "" && !strings.Contains(err.Error(), c.wantInMsg) {
				t.Errorf("message %q lacks %q", err, c.wantInMsg)
			}
			if !strings.HasPrefix(err.Error(), "workload: f.txt:") {
				t.Errorf("message %q does not start with the location", err)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	in := "a >= 1 AND b < 'x'\n3: c IS NULL OR d LIKE 'ab%'\n0.25: NOT (e IN (1, 2, 3))\n"
	w, err := Parse(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := w.Format(&sb); err != nil {
		t.Fatal(err)
	}
	w2, err := Parse(strings.NewReader(sb.String()), "")
	if err != nil {
		t.Fatalf("reparse %q: %v", sb.String(), err)
	}
	if w.Fingerprint() != w2.Fingerprint() || w.Len() != w2.Len() {
		t.Fatalf("round trip changed the workload:\n%s", sb.String())
	}
	for i := range w.Queries {
		if !expr.Equal(w.Queries[i].Expr(), w2.Queries[i].Expr()) || w.Queries[i].Weight != w2.Queries[i].Weight {
			t.Errorf("query %d: %q/%v vs %q/%v", i, w.Queries[i].Filter, w.Queries[i].Weight, w2.Queries[i].Filter, w2.Queries[i].Weight)
		}
	}
	other := New(w.Queries[1:]...)
	if other.Fingerprint() == w.Fingerprint() {
		t.Error("different workloads share a fingerprint")
	}
}

func TestBindAndColumns(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "B", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	w, err := Parse(strings.NewReader("a > 1\n4: b = 'x' AND a < 9\n2: B LIKE 'q%'\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := w.Bind(sch)
	if err != nil || len(bs) != 3 {
		t.Fatalf("bind: %v", err)
	}
	cols := w.Columns()
	if len(cols) != 2 || !strings.EqualFold(cols[0].Column, "b") || cols[0].Weight != 6 || cols[1].Column != "a" || cols[1].Weight != 5 || cols[1].Queries != 2 {
		t.Fatalf("columns %+v", cols)
	}
	bad, _ := Parse(strings.NewReader("a > 1\nzz = 2\n"), "")
	if _, err := bad.Bind(sch); !errors.Is(err, ErrBind) || !errors.Is(err, expr.ErrUnknownColumn) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bind unknown column: %v", err)
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder(RecorderOptions{MaxDistinct: 2})
	if r.Workload() != nil {
		t.Fatal("empty recorder has a workload")
	}
	e1, _ := expr.Parse("a = 1")
	e2, _ := expr.Parse("a  =  1") // same canonical text
	e3, _ := expr.Parse("b > 2")
	e4, _ := expr.Parse("c < 3")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r.Observe(e1)
				r.Observe(e2)
			}
		}()
	}
	wg.Wait()
	r.Observe(e3)
	r.Observe(e4)
	r.Observe(nil)
	w := r.Workload()
	if w.Len() != 2 || w.Queries[0].Filter != "a = 1" || w.Queries[0].Weight != 1600 || w.Queries[1].Weight != 1 {
		t.Fatalf("recorded %+v", w.Queries)
	}
	if r.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", r.Dropped())
	}
	var sb strings.Builder
	if err := w.Format(&sb); err != nil || sb.String() != "1600: a = 1\nb > 2\n" {
		t.Fatalf("format %q %v", sb.String(), err)
	}
	r.Reset()
	if r.Workload() != nil || r.Dropped() != 0 {
		t.Fatal("reset kept data")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a = 1", "3: a > 2\n# c\nb IS NULL", "1e3 : x LIKE 'a%'", "0:", ": x", "\ufeffx=1", "-1: a=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		w, err := Parse(strings.NewReader(in), "fuzz")
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrEmpty) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		for _, q := range w.Queries {
			if !(q.Weight > 0) {
				t.Fatalf("W2: weight %v", q.Weight)
			}
		}
		var sb strings.Builder
		if err := w.Format(&sb); err != nil {
			t.Fatal(err)
		}
		w2, err := Parse(strings.NewReader(sb.String()), "")
		if err != nil {
			t.Fatalf("W1: formatted workload %q does not parse: %v", sb.String(), err)
		}
		if w2.Fingerprint() != w.Fingerprint() {
			t.Fatalf("W1: round trip changed %q into %q", in, sb.String())
		}
	})
}
